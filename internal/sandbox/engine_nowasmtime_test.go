//go:build !wasmtime

package sandbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Without the wasmtime build tag, asking for wasmtime says how to get it.
func TestWasmtimeNotInThisBuild(t *testing.T) {
	assert.NotContains(t, sandbox.Engines(), sandbox.EngineWasmtime)
	_, err := sandbox.NewEngine(context.Background(), sandbox.NewConfig().WithEngine(sandbox.EngineWasmtime))
	require.ErrorIs(t, err, sandbox.ErrEngineNotBuilt)
	require.ErrorIs(t, err, sandbox.ErrUnknownEngine)
	assert.EqualError(t, err, `engine "wasmtime" is not in this build: rebuild with -tags wasmtime (cgo; see README)`)
}
