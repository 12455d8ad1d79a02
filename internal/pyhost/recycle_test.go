package pyhost

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// recycleSource keeps state where a call could leave it for the next: a
// module global, a class attribute, a cache in a stdlib module, sys.
const recycleSource = `
import sys, random, functools

calls = 0

class Box:
    items = []

@functools.lru_cache(maxsize=None)
def cached(n):
    return n * 2

def execute(x):
    global calls
    calls += 1
    fresh = calls == 1 and not Box.items and cached.cache_info().currsize == 0 and not hasattr(sys, "wg_leak")
    op = x.get("op")
    if op == "stash":
        Box.items.append(1)
        cached(3)
        sys.wg_leak = 1
        return {"fresh": fresh}
    if op == "raise":
        raise KeyError("no " + str(calls))
    if op == "loop":
        while True:
            calls += 1
    if op == "alloc":
        keep = []
        while True:
            keep.append(bytearray(1 << 20))
    if op == "deep":
        def f(n):
            return 0 if n == 0 else 1 + f(n - 1)
        return {"fresh": fresh, "depth": f(x["n"])}
    if op == "random":
        return {"fresh": fresh, "r": random.random()}
    if op == "print":
        print("hello", calls, file=sys.stderr)
        return {"fresh": fresh}
    if op == "big":
        return "x" * 5000
    return {"fresh": fresh, "echo": x}
`

// TestRecycledSameAsFresh is the sandbox's differential recycling test for
// Python: random sequences of calls on recycled instances and on fresh
// ones give the same outcome, output, message, stderr and fuel, and no call
// finds what an earlier one left.
func TestRecycledSameAsFresh(t *testing.T) {
	ctx := context.Background()
	name := enginetest.JSEngines()[0]
	load := func(cfg sandbox.Config) *Tool {
		e, err := sandbox.NewEngine(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { _ = e.Close(ctx) })
		tool, err := Load(ctx, e, Code{Files: map[string][]byte{"/app/rec.py": []byte(recycleSource)},
			Roots: []string{AppRoot}, Mode: ModeExecutor, Module: "rec"}, sandbox.Limits{})
		require.NoError(t, err)
		return tool
	}
	recycled := load(enginetest.Config(name))
	fresh := load(enginetest.Config(name).WithoutRecycling())
	type op struct {
		input string
		lim   sandbox.Limits
	}
	ops := []op{
		{`{"op":"stash"}`, sandbox.Limits{}},
		{`{"op":"echo","x":[1,2,3]}`, sandbox.Limits{}},
		{`{"op":"raise"}`, sandbox.Limits{}},
		{`{"op":"loop"}`, sandbox.Limits{Fuel: 30_000_000}},
		{`{"op":"alloc"}`, sandbox.Limits{MemoryPages: 700}},
		{`{"op":"deep","n":50}`, sandbox.Limits{}},
		{`{"op":"deep","n":5000}`, sandbox.Limits{}},
		{`{"op":"random"}`, sandbox.Limits{}},
		{`{"op":"print"}`, sandbox.Limits{}},
		{`{"op":"big"}`, sandbox.Limits{MaxOutputBytes: 100}},
	}
	run := func(tool *Tool, o op) sandbox.Outcome {
		lim := o.lim.WithDefaults(DefaultLimits())
		// The clock far beyond the fuel: only fuel may stop a run.
		lim.TimeoutMs = 600_000
		in := []byte(o.input)
		out, err := tool.Run(ctx, sandbox.Input{Bytes: in, Digest: blake3.Sum256(in), Limits: lim}, sandbox.Request{})
		require.NoError(t, err)
		return out
	}
	rng := rand.New(rand.NewPCG(5, 6))
	kinds := map[sandbox.OutcomeKind]bool{}
	for i := range 60 {
		o := ops[rng.IntN(len(ops))]
		got, want := run(recycled, o), run(fresh, o)
		what := fmt.Sprintf("call %d: %s %+v", i, o.input, o.lim)
		require.Equal(t, want.Kind, got.Kind, what)
		require.Equal(t, string(want.Output), string(got.Output), what)
		require.Equal(t, want.Message, got.Message, what)
		require.Equal(t, want.FuelUsed, got.FuelUsed, what)
		require.Equal(t, string(want.Stderr), string(got.Stderr), what)
		kinds[got.Kind] = true
		if got.Kind == sandbox.Completed && o.input != `{"op":"big"}` {
			assert.Contains(t, string(got.Output), `"fresh":true`, what)
		}
	}
	for _, k := range []sandbox.OutcomeKind{sandbox.Completed, sandbox.Failed, sandbox.FuelExhausted, sandbox.MemoryExhausted, sandbox.OutputTooLarge} {
		assert.True(t, kinds[k], "no call ended %s", k)
	}
}
