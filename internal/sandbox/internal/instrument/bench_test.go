package instrument

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// quickJS returns the QuickJS engine module that scripts/fetch-quickjs.sh
// downloads, if it has been.
func quickJS(t testing.TB) ([]byte, bool) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "..", "jstool", "engine", "quickjs.wasm"))
	if len(paths) == 0 {
		return nil, false
	}
	b, err := os.ReadFile(paths[len(paths)-1])
	require.NoError(t, err)
	return b, true
}

// BenchmarkInstrument measures instrumentation speed (MB/s of input), on
// the QuickJS engine too once scripts/fetch-quickjs.sh has fetched it.
func BenchmarkInstrument(b *testing.B) {
	modules := map[string][]byte{}
	for _, file := range []string{"textstats.wasm", "sort.wasm"} {
		modules[file] = fixture(b, file)
	}
	if qjs, ok := quickJS(b); ok {
		modules["quickjs.wasm"] = qjs
	}
	for _, file := range []string{"quickjs.wasm", "textstats.wasm", "sort.wasm"} {
		if modules[file] == nil {
			continue
		}
		wasm := forEngine(b, modules[file])
		for _, o := range []struct {
			name string
			opts Options
		}{
			{"all", Options{MaxCallDepth: 1000, CanonicalizeNaN: true}},
			{"fuel", Options{}},
		} {
			b.Run(file+"/"+o.name, func(b *testing.B) {
				b.SetBytes(int64(len(wasm)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Instrument(wasm, o.opts); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// loopModule exports run(n) -> n, which counts to n in the tightest loop
// there is (loop.wasm's, with an exit):
//
//	(loop $l (br_if $l (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 1))) (local.get $n))))
func loopModule() []byte {
	i32 := []byte{tI32}
	return buildModule(
		sec(secType, vec(functype(i32, i32))),
		sec(secFunction, vec(u32s(0))),
		sec(secExport, vec(export("run", 0, 0))),
		sec(secCode, vec(body([]byte{1, tI32},
			0x03, 0x40, 0x20, 1, 0x41, 1, 0x6a, 0x22, 1, 0x20, 0, 0x49, 0x0d, 0, 0x0b, 0x20, 1, 0x0b))),
	)
}

// instrumentations are what the benchmarks compare with the plain module.
var instrumentations = []struct {
	name string
	opts *Options
}{
	{"plain", nil},
	{"fuel", &Options{}},
	{"fuel+depth+nan", &Options{MaxCallDepth: 1000, CanonicalizeNaN: true}},
}

// BenchmarkLoop: instrumented / plain on a tight loop; ns/iter is the time
// of one iteration.
func BenchmarkLoop(b *testing.B) {
	const n = 10_000_000
	for _, eng := range engines {
		for _, in := range instrumentations {
			wasm := loopModule()
			if in.opts != nil {
				var err error
				wasm, err = Instrument(wasm, *in.opts)
				require.NoError(b, err)
			}
			b.Run(eng.name+"/"+in.name, func(b *testing.B) {
				ctx := context.Background()
				rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
				defer rt.Close(ctx)
				mod, err := rt.Instantiate(ctx, wasm)
				require.NoError(b, err)
				iters := uint64(n)
				if eng.name == "interpreter" {
					iters = n / 20
				}
				f := mod.ExportedFunction("run")
				var calls int
				for b.Loop() {
					if in.opts != nil {
						mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(1 << 40)
					}
					res, err := f.Call(ctx, iters)
					if err != nil || res[0] != iters {
						b.Fatal(err, res)
					}
					calls++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(uint64(calls)*iters), "ns/iter")
			})
		}
	}
}

// BenchmarkSort: instrumented / plain on realistic code, sort.wasm parsing
// and sorting 100,000 integers (wg_execute only; instantiation and the
// input copy are not timed).
func BenchmarkSort(b *testing.B) {
	input := []byte(bigSortInput(100_000))
	for _, eng := range engines {
		for _, in := range instrumentations {
			wasm := forEngine(b, fixture(b, "sort.wasm"))
			if in.opts != nil {
				wasm = instrumentFixture(b, fixture(b, "sort.wasm"), *in.opts)
			}
			b.Run(eng.name+"/"+in.name, func(b *testing.B) {
				ctx := context.Background()
				rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
				defer rt.Close(ctx)
				cm, err := rt.CompileModule(ctx, wasm)
				require.NoError(b, err)
				for b.Loop() {
					b.StopTimer()
					mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
					require.NoError(b, err)
					if in.opts != nil {
						mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(1 << 40)
					}
					res, err := mod.ExportedFunction("wg_alloc").Call(ctx, uint64(len(input)))
					require.NoError(b, err)
					mod.Memory().Write(uint32(res[0]), input)
					b.StartTimer()
					status, err := mod.ExportedFunction("wg_execute").Call(ctx, res[0], uint64(len(input)))
					if err != nil || status[0] != 0 {
						b.Fatal(err, status)
					}
					b.StopTimer()
					require.NoError(b, mod.Close(ctx))
					b.StartTimer()
				}
			})
		}
	}
}
