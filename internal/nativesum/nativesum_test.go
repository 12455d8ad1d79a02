package nativesum

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

func TestExecute(t *testing.T) {
	e := New(sandbox.Manifest{})
	out, err := e.Execute(context.Background(), sandbox.Input{Bytes: []byte(`{"numbers":[1,2,-4,10]}`)})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Completed, out.Kind)
	assert.Equal(t, `{"sum":9}`, string(out.Output))

	out, err = e.Execute(context.Background(), sandbox.Input{Bytes: []byte(`{"numbers":["1"]}`)})
	require.NoError(t, err)
	assert.Equal(t, sandbox.Failed, out.Kind)
	assert.Contains(t, out.Message, "cannot unmarshal string")
}
