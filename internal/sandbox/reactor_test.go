package sandbox_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/jshost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// quickJS is the engine module scripts/fetch-quickjs.sh puts next to
// package jstool (make test runs it first).
func quickJS(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "jstool", "engine", "quickjs.wasm"))
	require.NoError(t, err, "the QuickJS engine module is fetched by scripts/fetch-quickjs.sh (make test runs it)")
	return b
}

// The env.host_* imports are the JS engine's alone: as an executor, the
// engine module is refused; loaded for its glue, it is admitted.
func TestQuickJSImportsOnlyForItsGlue(t *testing.T) {
	qjs := quickJS(t)
	_, err := sandbox.Inspect(qjs)
	require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
	assert.EqualError(t, err, "module not admitted: import env.host_get_timezone_offset (func) is outside wasi_snapshot_preview1; only the virtual WASI may be imported")

	e := enginetest.Engine(t, sandbox.EngineWazero)
	r, err := e.LoadReactor(context.Background(), qjs, jshost.QuickJSGlue())
	require.NoError(t, err)
	assert.Equal(t, sandbox.Profile("quickjs"), r.Info().Profile)
	assert.Equal(t, sandbox.Convention("quickjs"), r.Info().Convention)

	// A module without the exports the glue calls is refused.
	_, err = e.LoadReactor(context.Background(), fixture(t, "upper.wasm"), jshost.QuickJSGlue())
	require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
	assert.Contains(t, err.Error(), "missing exports the quickjs glue needs: _initialize, malloc, free, qjs_init")
}

// TestSnapshotRestoresState loads a tool, snapshots it, and checks that runs
// from the snapshot see the loaded state, never each other's, with the same
// output and fuel on every engine compared (enginetest.JSEnginesCompared).
func TestSnapshotRestoresState(t *testing.T) {
	src := `let loaded = 0; loaded++;
export function execute({ add }) { loaded += add; return { loaded }; }`
	var fuel []uint64
	enginetest.EachCompared(t, func(t *testing.T, e sandbox.Engine) {
		ctx := context.Background()
		r, err := e.LoadReactor(ctx, quickJS(t), jshost.QuickJSGlue())
		require.NoError(t, err)
		snap, out, err := r.Snapshot(ctx, nil, sandbox.Input{Limits: sandbox.Limits{Fuel: 1 << 31, TimeoutMs: 60_000}},
			sandbox.Driver(jshost.QuickJSLoad(jshost.JSTool{Name: "t.js", Source: []byte(src)})))
		require.NoError(t, err)
		require.Equal(t, sandbox.Completed, out.Kind, out.Message)
		assert.Greater(t, snap.MemoryBytes(), 1<<20)
		entry, err := jshost.ParseJSLoad(out.Output)
		require.NoError(t, err)
		for range 2 {
			in := input(`{"add":10}`)
			var res jshost.JSResult
			o, err := r.Run(ctx, snap, in, sandbox.Driver(jshost.QuickJSRun(entry, jshost.JSCall{Input: in.Bytes, Seed: in.Digest, MaxOutput: 1000}, &res)))
			require.NoError(t, err)
			require.Equal(t, sandbox.Completed, o.Kind, o.Message)
			assert.Equal(t, `{"loaded":11}`, string(o.Output))
			fuel = append(fuel, o.FuelUsed)
		}
		// The snapshot's memory is larger than the module's minimum: a
		// memory_pages limit below it refuses to start.
		in := input(`{"add":1}`)
		var res jshost.JSResult
		o, err := r.Run(ctx, snap, sandbox.Input{Bytes: in.Bytes, Digest: in.Digest, Limits: sandbox.Limits{MemoryPages: 18}},
			sandbox.Driver(jshost.QuickJSRun(entry, jshost.JSCall{Input: in.Bytes, Seed: in.Digest, MaxOutput: 1000}, &res)))
		require.NoError(t, err)
		assert.Equal(t, sandbox.MemoryExhausted, o.Kind)
		assert.Contains(t, o.Message, "memory_pages allows 18")
	})
	for _, f := range fuel {
		assert.Equal(t, fuel[0], f, "fuel is the same on every run and engine: %v", fuel)
	}
}
