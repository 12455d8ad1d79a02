package instrument

//go:generate wat2wasm testdata/nan.wat -o testdata/nan.wasm

import (
	"context"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Operands with every kind of NaN (canonical, negative, quiet with a
// payload, signalling) and the values that make NaNs out of numbers.
var (
	f32Operands = []uint32{
		0x00000000, 0x80000000, 0x3f800000, 0xbf800000, // 0, -0, 1, -1
		0x7f800000, 0xff800000, // inf, -inf
		0x7fc00000, 0xffc00000, 0x7fc12345, 0x7fa00001, 0xff812345,
		0x4b7fffff, 0xcf000000, // a large odd float, -2^31
	}
	f64Operands = []uint64{
		0, 1 << 63, 0x3ff0000000000000, 0xbff0000000000000,
		0x7ff0000000000000, 0xfff0000000000000,
		0x7ff8000000000000, 0xfff8000000000000, 0x7ff8000000012345, 0x7ff4000000000001, 0xfff0000000012345,
		0x4330000000000001, 0xc3e0000000000000,
	}
)

const (
	canonF32 = 0x7fc00000
	canonF64 = 0x7ff8000000000000
)

func isNaN32(b uint32) bool { return b&0x7f800000 == 0x7f800000 && b&0x007fffff != 0 }
func isNaN64(b uint64) bool {
	return b&0x7ff0000000000000 == 0x7ff0000000000000 && b&0x000fffffffffffff != 0
}

// nanResults runs every export of nan.wasm on every operand (pair) and
// returns the results, as lanes of 32 or 64 bits, by export and operands.
func nanResults(t *testing.T, eng engine, wasm []byte) map[string][]uint64 {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasm)
	require.NoError(t, err)
	if g := mod.ExportedGlobal(FuelGlobal); g != nil {
		g.(api.MutableGlobal).Set(uint64(budget))
	}
	results := map[string][]uint64{}
	for name, def := range mod.ExportedFunctionDefinitions() {
		f := mod.ExportedFunction(name)
		var operands []uint64
		if def.ParamTypes()[0] == api.ValueTypeI64 {
			operands = f64Operands
		} else {
			for _, o := range f32Operands {
				operands = append(operands, uint64(o))
			}
		}
		var args [][]uint64
		for _, a := range operands {
			if len(def.ParamTypes()) == 1 {
				args = append(args, []uint64{a})
				continue
			}
			for _, b := range operands {
				args = append(args, []uint64{a, b})
			}
		}
		for _, a := range args {
			res, err := f.Call(ctx, a...)
			require.NoError(t, err, name)
			if len(res) == 1 {
				r := res[0]
				if def.ResultTypes()[0] == api.ValueTypeI32 {
					r = uint64(uint32(r)) // the upper half is unspecified
				}
				results[name] = append(results[name], r)
				continue
			}
			v, ok := mod.Memory().Read(0, 16)
			require.True(t, ok)
			if strings.HasPrefix(name, "f32x4") {
				for i := 0; i < 16; i += 4 {
					results[name] = append(results[name], uint64(binary.LittleEndian.Uint32(v[i:])))
				}
			} else {
				results[name] = append(results[name], binary.LittleEndian.Uint64(v), binary.LittleEndian.Uint64(v[8:]))
			}
		}
	}
	return results
}

// resultIs32 tells whether an export's results are f32 (lanes).
func resultIs32(name string) bool { return strings.HasPrefix(name, "f32") }

// TestCanonicalNaN: instrumented with CanonicalizeNaN, every NaN any of these
// operations produces is the canonical one, on both engines, and every other
// result is unchanged.
func TestCanonicalNaN(t *testing.T) {
	wasm, err := os.ReadFile("testdata/nan.wasm")
	require.NoError(t, err)
	inst := instrumentFixture(t, wasm, Options{CanonicalizeNaN: true, MaxCallDepth: 10})

	var canonical []map[string][]uint64
	nonCanonicalPlain := 0
	for _, eng := range engines {
		plain := nanResults(t, eng, wasm)
		got := nanResults(t, eng, inst)
		require.Len(t, got, len(plain))
		for name, want := range plain {
			for i, w := range want {
				g := got[name][i]
				if resultIs32(name) {
					if isNaN32(uint32(w)) {
						require.Equal(t, uint64(canonF32), g, "%s %s #%d: plain %#x", eng.name, name, i, w)
						if w != canonF32 {
							nonCanonicalPlain++
						}
						continue
					}
				} else if isNaN64(w) {
					require.Equal(t, uint64(canonF64), g, "%s %s #%d: plain %#x", eng.name, name, i, w)
					if w != canonF64 {
						nonCanonicalPlain++
					}
					continue
				}
				require.Equal(t, w, g, "%s %s #%d: a number stays as it is", eng.name, name, i)
			}
		}
		canonical = append(canonical, got)
	}
	require.Equal(t, canonical[0], canonical[1], "compiler and interpreter agree bit for bit")
	t.Logf("%d NaN results of the plain module were not canonical", nonCanonicalPlain)
	require.Positive(t, nonCanonicalPlain, "the operands exercise NaN propagation")
}

// TestCanonicalNaNOff: without the option the float results are untouched
// (the same bits as the plain module on the same engine).
func TestCanonicalNaNOff(t *testing.T) {
	wasm, err := os.ReadFile("testdata/nan.wasm")
	require.NoError(t, err)
	inst := instrumentFixture(t, wasm, Options{MaxCallDepth: 10})
	for _, eng := range engines {
		require.Equal(t, nanResults(t, eng, wasm), nanResults(t, eng, inst), eng.name)
	}
}
