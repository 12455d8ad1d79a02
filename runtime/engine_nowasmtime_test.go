//go:build !wasmtime

package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/runtime"
)

// Without the wasmtime build tag, asking for wasmtime says how to get it.
func TestWasmtimeNotInThisBuild(t *testing.T) {
	assert.NotContains(t, runtime.Engines(), runtime.EngineWasmtime)
	_, err := runtime.NewEngine(context.Background(), runtime.NewConfig().WithEngine(runtime.EngineWasmtime))
	require.ErrorIs(t, err, runtime.ErrEngineNotBuilt)
	require.ErrorIs(t, err, runtime.ErrUnknownEngine)
	assert.EqualError(t, err, `engine "wasmtime" is not in this build: rebuild with -tags wasmtime (cgo; see README)`)
}
