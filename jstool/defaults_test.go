package jstool_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
)

// runAtDefaults executes one request on the tool in file through the
// pipeline with the limits given and nothing else: unlike run, it leaves the
// timeout at its default when limits set none, since what is tested here is
// the defaults themselves.
func runAtDefaults(t *testing.T, file, payload string, limits runtime.Limits) pipeline.ActionResult {
	t.Helper()
	ctx := context.Background()
	reg, err := pipeline.RegistryForSource(ctx, engine(t, runtime.EngineWazero),
		pipeline.ExecutorSource{JS: file}, "act", limits)
	require.NoError(t, err)
	res, err := pipeline.New(reg, audit.NewMemorySink()).Execute(ctx,
		pipeline.ActionRequest{Action: "act", Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return res
}

// TestDefaultFuelCoversTheDefaultTimeout is issue 14: a tool doing ordinary
// heavy work (JSON, regular expressions, a Map, sorting; about 520 million
// fuel units, some 100 ms here) used to be BLOCKED FUEL_EXHAUSTED at the
// old default of 50 million although its time limit was far away. A JS
// tool's default fuel (12 billion) now covers its default timeout_ms (1 s)
// with margin, so ordinary work is stopped by nothing but the clock, and
// runaway code is still stopped.
func TestDefaultFuelCoversTheDefaultTimeout(t *testing.T) {
	t.Run("ordinary heavy work succeeds", func(t *testing.T) {
		res := runAtDefaults(t, filepath.Join("testdata", "bench", "work.js"), `{"n":10}`, runtime.Limits{})
		require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
		assert.Greater(t, res.FuelUsed, uint64(400_000_000), "heavy enough that the old default would have stopped it")
	})

	t.Run("an endless loop is stopped by the clock", func(t *testing.T) {
		// QuickJS burns at most about 6 billion units a second
		// (docs/BENCHMARKS.md, Issue 14), an empty loop about 3 billion:
		// the 1 s timeout comes long before the 12 billion of fuel would
		// run out. (On a machine four times as fast, fuel would come
		// first, and FUEL_EXHAUSTED would be the verdict.)
		res := runAtDefaults(t, filepath.Join(tools, "endless.js"), `{}`, runtime.Limits{})
		assert.Equal(t, pipeline.StatusBlocked, res.Status, res.Message)
		assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorTimeout}, res.ReasonCodes)
		assert.Less(t, res.FuelUsed, uint64(12_000_000_000))
	})

	t.Run("an explicit fuel is the bound", func(t *testing.T) {
		res := runAtDefaults(t, filepath.Join(tools, "endless.js"), `{}`, runtime.Limits{Fuel: 1_000_000_000})
		assert.Equal(t, pipeline.StatusBlocked, res.Status, res.Message)
		assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}, res.ReasonCodes)
		assert.Equal(t, uint64(1_000_000_000), res.FuelUsed)
	})
}

// TestDefaultFuelFollowsTheTimeout: an unset fuel is what the timeout that
// applies covers, so a tool given only a longer time limit gets the fuel
// to use it (12 million units a millisecond in QuickJS).
func TestDefaultFuelFollowsTheTimeout(t *testing.T) {
	b, err := jstool.BundleFile(filepath.Join(tools, "endless.js"))
	require.NoError(t, err)
	tool, err := jstool.Load(context.Background(), engine(t, runtime.EngineWazero), jstool.Spec{Bundle: b, Manifest: runtime.Manifest{ExecutorID: "endless", Version: "1.0.0"}})
	require.NoError(t, err)
	d := tool.DefaultLimits()
	assert.Equal(t, uint64(12_000_000_000), runtime.Limits{}.WithDefaults(d).Fuel)
	assert.Equal(t, uint64(720_000_000_000), runtime.Limits{TimeoutMs: 60_000}.WithDefaults(d).Fuel)
	assert.Equal(t, uint64(5), runtime.Limits{TimeoutMs: 60_000, Fuel: 5}.WithDefaults(d).Fuel)
	assert.Equal(t, d.MemoryPages, runtime.DefaultLimits.MemoryPages, "only fuel differs from a Wasm module's")
}
