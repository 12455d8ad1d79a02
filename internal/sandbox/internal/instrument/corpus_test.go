package instrument

import (
	"context"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// call is one call of a generated module's export, in a fresh instance.
type call struct {
	Results []uint64
	Trapped bool
	Fuel    int64
	Depth   int32
}

// callAll calls every export of a generated module with a few argument
// sets, each in a fresh instance; fuel is the budget (0: plain).
func callAll(t testing.TB, eng engine, wasm []byte, fuel int64, seed int64) []call {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	require.NoError(t, err)
	r := rand.New(rand.NewSource(seed))
	var calls []call
	for i := 0; ; i++ {
		name := "f" + string(rune('0'+i))
		def, ok := cm.ExportedFunctions()[name]
		if !ok {
			break
		}
		for set := 0; set < 3; set++ {
			var args []uint64
			for _, p := range def.ParamTypes() {
				switch p {
				case api.ValueTypeI32:
					// The API leaves what an engine does with the upper half undefined.
					args = append(args, uint64(uint32(genI64[r.Intn(len(genI64))]+int64(r.Intn(5)))))
				case api.ValueTypeI64:
					args = append(args, uint64(genI64[r.Intn(len(genI64))]+int64(r.Intn(5))))
				case api.ValueTypeF32:
					args = append(args, uint64(genF32[r.Intn(len(genF32))]))
				case api.ValueTypeF64:
					args = append(args, genF64[r.Intn(len(genF64))])
				}
			}
			mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
			require.NoError(t, err)
			if fuel != 0 {
				mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(fuel))
			}
			res, err := mod.ExportedFunction(name).Call(ctx, args...)
			c := call{Trapped: err != nil}
			for k, v := range res {
				if rt := def.ResultTypes()[k]; rt == api.ValueTypeI32 || rt == api.ValueTypeF32 {
					v = uint64(uint32(v)) // the upper half is unspecified
				}
				c.Results = append(c.Results, v)
			}
			if fuel != 0 {
				c.Fuel = int64(mod.ExportedGlobal(FuelGlobal).Get())
				c.Depth = int32(uint32(mod.ExportedGlobal(DepthGlobal).Get()))
			}
			calls = append(calls, c)
			require.NoError(t, mod.Close(ctx))
		}
	}
	return calls
}

// checkGenerated runs a generated module plain and instrumented on both
// engines: without NaN canonicalization the instrumented module must compute
// exactly what the plain one does on the same engine; with it, both engines
// must agree bit for bit; in both cases they must agree on the fuel used.
func checkGenerated(t testing.TB, seed int64) {
	wasm := genModule(seed)
	opts := []Options{{MaxCallDepth: 1000}, {MaxCallDepth: 1000, CanonicalizeNaN: true}}
	var instrumented [2][][]call // by option set, engine
	for k, o := range opts {
		inst, err := Instrument(wasm, o)
		require.NoError(t, err, "seed %d", seed)
		for _, eng := range engines {
			instrumented[k] = append(instrumented[k], callAll(t, eng, inst, budget, seed))
		}
	}
	for e, eng := range engines {
		plain := callAll(t, eng, wasm, 0, seed)
		for i, p := range plain {
			got := instrumented[0][e][i]
			require.Equal(t, p.Trapped, got.Trapped, "seed %d %s call %d: trap", seed, eng.name, i)
			require.Equal(t, p.Results, got.Results, "seed %d %s call %d: results", seed, eng.name, i)
			require.GreaterOrEqual(t, got.Fuel, int64(0), "seed %d %s call %d", seed, eng.name, i)
			if !got.Trapped {
				require.Zero(t, got.Depth, "seed %d %s call %d", seed, eng.name, i)
			}
		}
	}
	for k := range opts {
		for i, c := range instrumented[k][0] {
			i := instrumented[k][1][i]
			require.Equal(t, c.Fuel, i.Fuel, "seed %d %+v: fuel, compiler and interpreter", seed, opts[k])
			require.Equal(t, c.Trapped, i.Trapped, "seed %d %+v", seed, opts[k])
			if opts[k].CanonicalizeNaN {
				require.Equal(t, c.Results, i.Results, "seed %d: canonical NaNs make both engines agree", seed)
			}
		}
	}
}

func TestGeneratedCorpus(t *testing.T) {
	n := 300
	if quick() {
		n = 40
	}
	for seed := int64(0); seed < int64(n); seed++ {
		checkGenerated(t, seed)
	}
}

// FuzzGenerated explores more seeds: go test -fuzz FuzzGenerated.
func FuzzGenerated(f *testing.F) {
	for seed := int64(0); seed < 4; seed++ {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		checkGenerated(t, seed)
	})
}
