//go:build wasmtime

package sandbox_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

func wasmtimeEngine(t *testing.T, cfg sandbox.Config) sandbox.Engine {
	t.Helper()
	e, err := sandbox.NewEngine(context.Background(), cfg.WithEngine(sandbox.EngineWasmtime))
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func TestWasmtimeIsInThisBuild(t *testing.T) {
	assert.Equal(t, []sandbox.EngineName{sandbox.EngineWazero, sandbox.EngineWazeroInterp, sandbox.EngineWasmtime}, sandbox.Engines())
	assert.Equal(t, sandbox.EngineWasmtime, wasmtimeEngine(t, sandbox.NewConfig()).Name())
}

// A WASI command that writes from a memory it does not export: wazero
// hands host functions the module's memory, exported or not, and wasmtime
// sees it through the instrumenter's own export, so both write the same.
func TestUnexportedMemoryOnEveryEngine(t *testing.T) {
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	sec := func(id byte, parts ...[]byte) []byte {
		var c []byte
		for _, p := range parts {
			c = append(c, p...)
		}
		return append([]byte{id, byte(len(c))}, c...)
	}
	body := []byte{0,
		0x41, 0, 0x41, 8, 0x36, 2, 0, // iov.buf = 8
		0x41, 4, 0x41, 2, 0x36, 2, 0, // iov.len = 2
		0x41, 1, 0x41, 0, 0x41, 1, 0x41, 16, 0x10, 0, 0x1a, // fd_write(1, iov, 1, &n)
		0x0b}
	wasm := append([]byte{0, 'a', 's', 'm', 1, 0, 0, 0},
		sec(1, []byte{2, 0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f, 0x60, 0, 0})...)
	wasm = append(wasm, sec(2, []byte{1}, str("wasi_snapshot_preview1"), str("fd_write"), []byte{0, 0})...)
	wasm = append(wasm, sec(3, []byte{1, 1})...)
	wasm = append(wasm, sec(5, []byte{1, 0, 1})...)
	wasm = append(wasm, sec(7, []byte{1}, str("_start"), []byte{0, 1})...)
	wasm = append(wasm, sec(10, []byte{1, byte(len(body))}, body)...)
	wasm = append(wasm, sec(11, []byte{1, 0, 0x41, 8, 0x0b, 2, 'h', 'i'})...)

	var outcomes []sandbox.Outcome
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		mod, err := e.Load(context.Background(), wasm)
		require.NoError(t, err)
		out, err := mod.Run(context.Background(), input(`{}`))
		require.NoError(t, err)
		assert.Equal(t, sandbox.Completed, out.Kind, out.Message)
		assert.Equal(t, "hi", string(out.Output))
		outcomes = append(outcomes, out)
	})
	for _, o := range outcomes[1:] {
		assert.Equal(t, outcomes[0], o)
	}
}

// A caller's cancellation is not a verdict on wasmtime either. A guest that
// calls no host function stops at its deadline at the latest (see
// RATIONALE: wasmtime stops stores by epoch only).
func TestWasmtimeCancellationMidRun(t *testing.T) {
	mod, err := wasmtimeEngine(t, sandbox.NewConfig()).Load(context.Background(), fixture(t, "loop.wasm"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	in := input(`{}`)
	in.Limits = sandbox.Limits{TimeoutMs: 300, Fuel: 1 << 62}
	_, err = mod.Run(ctx, in)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestWasmtimeCompilationCacheDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for i := range 2 {
		e := wasmtimeEngine(t, sandbox.NewConfig().WithCompilationCacheDir(dir))
		mod, err := e.Load(context.Background(), fixture(t, "sort.wasm"))
		require.NoError(t, err, "load %d", i+1)
		out, err := mod.Run(context.Background(), input(`{"numbers":[2,1]}`))
		require.NoError(t, err)
		assert.Equal(t, `{"count":2,"max":2,"min":1,"sorted":[1,2]}`, string(out.Output))
	}
	compiled, err := filepath.Glob(filepath.Join(dir, "wasmgate-v1", "compiled-*"))
	require.NoError(t, err)
	assert.Len(t, compiled, 1, "one serialized module, read back by the second engine")
}

// Closing the engine waits for nothing but running executions' deadlines,
// and a module run afterwards fails with an error, not a crash.
func TestWasmtimeRunAfterClose(t *testing.T) {
	e, err := sandbox.NewEngine(context.Background(), sandbox.NewConfig().WithEngine(sandbox.EngineWasmtime))
	require.NoError(t, err)
	mod, err := e.Load(context.Background(), fixture(t, "echo.wasm"))
	require.NoError(t, err)
	require.NoError(t, e.Close(context.Background()))
	require.NoError(t, e.Close(context.Background()), "closing twice is fine")
	_, err = mod.Run(context.Background(), input(`{}`))
	assert.ErrorContains(t, err, "the engine is closed")
}
