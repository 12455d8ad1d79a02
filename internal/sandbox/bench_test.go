package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmgate/wasmgate/audit"
)

// benchVariants are the ways of running the same module, side by side:
// "plain" has no fuel, no depth limit and no deadline at all (the floor),
// "context-watcher" is plain with wazero's WithCloseOnContextDone (the only
// stop wazero offers without instrumentation), "instrumented" is what
// wasmgate runs: fuel, depth and NaN canonicalization, with the deadline
// enforced through the fuel global.
var benchVariants = []struct {
	name string
	cfg  Config
}{
	{"plain", Config{engine: EngineWazero, uninstrumented: true}},
	{"context-watcher", Config{engine: EngineWazero, uninstrumented: true, watchContext: true}},
	{"instrumented", Config{engine: EngineWazero}},
}

func benchModule(b *testing.B, cfg Config, fixture string) Module {
	b.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", fixture))
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewEngine(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(context.Background()) })
	mod, err := e.Load(context.Background(), wasm)
	if err != nil {
		b.Fatal(err)
	}
	return mod
}

func benchInput(b *testing.B, payload string) Input {
	c, err := audit.Canonicalize([]byte(payload))
	if err != nil {
		b.Fatal(err)
	}
	return Input{Bytes: c.Bytes, Digest: audit.DigestBytes(c.Bytes), Limits: Limits{TimeoutMs: 600_000, Fuel: 1 << 62, MemoryPages: 256, MaxOutputBytes: 1 << 22}}
}

func runBench(b *testing.B, mod Module, in Input) {
	ctx := context.Background()
	for b.Loop() {
		out, err := mod.Run(ctx, in)
		if err != nil || out.Kind != Completed {
			b.Fatal(err, out.Kind, out.Message)
		}
	}
}

// BenchmarkTightLoop: one million iterations of testdata/spin.wasm's
// two-instruction loop per op.
func BenchmarkTightLoop(b *testing.B) {
	in := benchInput(b, `{"n":1000000}`)
	for _, v := range benchVariants {
		b.Run(v.name, func(b *testing.B) { runBench(b, benchModule(b, v.cfg, "spin.wasm"), in) })
	}
}

// BenchmarkSortC: the C guest parsing 20,000 integers, merge-sorting them and
// printing the result — realistic code, with calls, memory traffic and
// branches.
func BenchmarkSortC(b *testing.B) {
	nums := make([]string, 20000)
	x := uint32(12345)
	for i := range nums {
		x = x*1664525 + 1013904223
		nums[i] = fmt.Sprint(int32(x) >> 8)
	}
	in := benchInput(b, `{"numbers":[`+strings.Join(nums, ",")+`]}`)
	for _, v := range benchVariants {
		b.Run(v.name, func(b *testing.B) { runBench(b, benchModule(b, v.cfg, "sort.wasm"), in) })
	}
}
