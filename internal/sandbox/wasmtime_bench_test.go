//go:build wasmtime

package sandbox

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/wasmgate/wasmgate/internal/host"
)

// The engines side by side (make bench-wasmtime): each group's first
// variant, wazero's compiler as wasmgate runs it, is the baseline of the
// ratios scripts/bench.sh prints. Every variant runs the same instrumented
// module, so their fuel counts are the same.
var engineVariants = []struct {
	name string
	cfg  Config
}{
	{"wazero", Config{engine: EngineWazero}},
	{"wasmtime", Config{engine: EngineWasmtime}},
}

// fuelVariants compare ways of metering the same module on wasmtime: none
// and no deadline either (bare, the floor), the deadline only (plain: epoch
// interruption, which every other variant has too), wasmgate's instrumented
// fuel, and wasmtime's own (Config.SetConsumeFuel with Store.SetFuel, on
// the uninstrumented module).
var fuelVariants = []struct {
	name string
	cfg  Config
}{
	{"bare", Config{engine: EngineWasmtime, uninstrumented: true, noEpoch: true}},
	{"plain", Config{engine: EngineWasmtime, uninstrumented: true}},
	{"instrumented", Config{engine: EngineWasmtime}},
	{"native-fuel", Config{engine: EngineWasmtime, nativeFuel: true}},
}

func sortInput(b *testing.B) Input {
	nums := make([]string, 20000)
	x := uint32(12345)
	for i := range nums {
		x = x*1664525 + 1013904223
		nums[i] = fmt.Sprint(int32(x) >> 8)
	}
	return benchInput(b, `{"numbers":[`+strings.Join(nums, ",")+`]}`)
}

// BenchmarkEngineTightLoop: testdata/spin.wasm's two-instruction loop, one
// million iterations per op.
func BenchmarkEngineTightLoop(b *testing.B) {
	in := benchInput(b, `{"n":1000000}`)
	for _, v := range engineVariants {
		b.Run(v.name, func(b *testing.B) { runBench(b, benchModule(b, v.cfg, "spin.wasm"), in) })
	}
}

// BenchmarkEngineSortC: the C guest sorting 20,000 integers.
func BenchmarkEngineSortC(b *testing.B) {
	in := sortInput(b)
	for _, v := range engineVariants {
		b.Run(v.name, func(b *testing.B) { runBench(b, benchModule(b, v.cfg, "sort.wasm"), in) })
	}
}

// BenchmarkEngineInstantiate: one whole execution of a guest that does
// nothing (testdata/noout.wasm): a fresh instance, the budget, ABI v1's four
// calls, the instance closed. What every execution costs before its guest
// does any work.
func BenchmarkEngineInstantiate(b *testing.B) {
	in := benchInput(b, `{}`)
	for _, v := range engineVariants {
		b.Run(v.name, func(b *testing.B) { runBench(b, benchModule(b, v.cfg, "noout.wasm"), in) })
	}
}

// BenchmarkEngineCall: one call from the host into a live instance
// (wg_output_len of testdata/echo.wasm) through host.Instance, as ABI v1
// and the QuickJS glue make them.
func BenchmarkEngineCall(b *testing.B) {
	for _, v := range engineVariants {
		b.Run(v.name, func(b *testing.B) {
			mod := benchModule(b, v.cfg, "echo.wasm")
			in := benchInput(b, `{}`)
			drive := func(ctx context.Context, inst host.Instance, _ *host.Session, _ int) ([]byte, error) {
				for b.Loop() {
					if _, err := inst.Call(ctx, host.ExportOutputLen); err != nil {
						return nil, err
					}
				}
				return nil, nil
			}
			var o Outcome
			var err error
			switch m := mod.(type) {
			case *wazeroModule:
				o, _, err = m.execute(context.Background(), in, nil, drive, false)
			case *wasmtimeModule:
				o, _, err = m.execute(context.Background(), in, nil, drive, false)
			}
			if err != nil || o.Kind != Completed {
				b.Fatal(err, o.Kind, o.Message)
			}
		})
	}
}

// BenchmarkEngineJSTrim: one call of the trim tool from its snapshot.
func BenchmarkEngineJSTrim(b *testing.B) {
	for _, v := range engineVariants {
		b.Run(v.name, func(b *testing.B) {
			t := loadJSTool(b, v.cfg, `export function execute({text}) { return {text: text.trim()}; }`)
			runJSBench(b, t, `{"text":"  hello world  "}`, Limits{}, `{"text":"hello world"}`)
		})
	}
}

// BenchmarkEngineJSLoop: a QuickJS bytecode loop of jsLoopIterations
// iterations (see BenchmarkJSLoop).
func BenchmarkEngineJSLoop(b *testing.B) {
	s := 0
	for i := range jsLoopIterations {
		s = (s + i*7) % 1000003
	}
	want := `{"s":` + strconv.Itoa(s) + `}`
	input := `{"n":` + strconv.Itoa(jsLoopIterations) + `}`
	lim := Limits{Fuel: 1 << 62, TimeoutMs: 600_000}
	for _, v := range engineVariants {
		b.Run(v.name, func(b *testing.B) { runJSBench(b, loadJSTool(b, v.cfg, jsLoopSource), input, lim, want) })
	}
}

// BenchmarkWasmtimeFuelTightLoop: the tight loop on wasmtime without fuel,
// with wasmgate's instrumented fuel and with wasmtime's own.
func BenchmarkWasmtimeFuelTightLoop(b *testing.B) {
	in := benchInput(b, `{"n":1000000}`)
	for _, v := range fuelVariants {
		b.Run(v.name, func(b *testing.B) { runBench(b, benchModule(b, v.cfg, "spin.wasm"), in) })
	}
}

// BenchmarkWasmtimeFuelSortC: the C sort, metered the three ways.
func BenchmarkWasmtimeFuelSortC(b *testing.B) {
	in := sortInput(b)
	for _, v := range fuelVariants {
		b.Run(v.name, func(b *testing.B) { runBench(b, benchModule(b, v.cfg, "sort.wasm"), in) })
	}
}

// BenchmarkWasmtimeFuelJSLoop: the JS loop, metered the three ways.
func BenchmarkWasmtimeFuelJSLoop(b *testing.B) {
	s := 0
	for i := range jsLoopIterations {
		s = (s + i*7) % 1000003
	}
	want := `{"s":` + strconv.Itoa(s) + `}`
	input := `{"n":` + strconv.Itoa(jsLoopIterations) + `}`
	lim := Limits{Fuel: 1 << 62, TimeoutMs: 600_000}
	for _, v := range fuelVariants {
		b.Run(v.name, func(b *testing.B) { runJSBench(b, loadJSTool(b, v.cfg, jsLoopSource), input, lim, want) })
	}
}
