package pyhost

import (
	"context"
	"testing"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
)

// loopTool is a CPU-bound Python executor: n rounds of integer arithmetic
// in the interpreter's loop, with no allocation beyond small ints.
const loopTool = `def execute(x):
    s = 0
    for i in range(x["n"]):
        s = (s * 31 + i) % 1000003
    return {"s": s}
`

// BenchmarkPythonLoop is what deterministic fuel costs CPython: a call of
// loopTool (10^5 rounds) from its snapshot, on the instrumented interpreter
// (what wasmgate runs: fuel per basic block, call depth, NaN
// canonicalization) against the plain one (as admitted: no fuel, no depth
// limit, no deadline). bench/fuelratio -set python runs the two in
// interleaved processes and reports their CPU ratio.
func BenchmarkPythonLoop(b *testing.B) {
	for _, v := range []struct {
		name string
		cfg  sandbox.Config
	}{
		{"plain", sandbox.NewConfig().WithoutInstrumentationForBenchmarks()},
		{"instrumented", sandbox.NewConfig()},
	} {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			eng, err := sandbox.NewEngine(ctx, v.cfg.WithCompilationCacheDir(testenv.CacheDir()))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = eng.Close(context.Background()) })
			tool, err := Load(ctx, eng, Code{
				Files: map[string][]byte{"/app/loop.py": []byte(loopTool)},
				Roots: []string{"/app"}, Mode: ModeExecutor, Module: "loop",
			}, sandbox.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			payload := []byte(`{"n":100000}`)
			// The limits leave the call far from every bound (it takes
			// the fuel/op reported).
			in := sandbox.Input{Bytes: payload, Digest: audit.DigestBytes(payload), Limits: sandbox.Limits{TimeoutMs: 600_000, Fuel: 1 << 50, MemoryPages: 2048, MaxOutputBytes: 1 << 20}}
			var fuel uint64
			for b.Loop() {
				out, err := tool.Run(ctx, in, sandbox.Request{})
				if err != nil || out.Kind != sandbox.Completed || string(out.Output) != `{"s":933429}` {
					b.Fatalf("%v %s %s %q", err, out.Kind, out.Message, out.Output)
				}
				fuel = out.FuelUsed
			}
			b.ReportMetric(float64(fuel), "fuel/op")
		})
	}
}
