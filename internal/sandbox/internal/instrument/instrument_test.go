package instrument

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
)

// firstBody returns the first function body of a module: local
// declarations and instructions, without its size.
func firstBody(t *testing.T, wasm []byte) []byte {
	pos := 8
	for pos < len(wasm) {
		id := wasm[pos]
		size, n := leb128.Uint32(wasm, pos+1)
		start := pos + 1 + n
		if id == secCode {
			_, n := leb128.Uint32(wasm, start)
			bsize, m := leb128.Uint32(wasm, start+n)
			return wasm[start+n+m : start+n+m+int(bsize)]
		}
		pos = start + int(size)
	}
	t.Fatal("no code section")
	return nil
}

// TestInjectedCode pins the exact code injected, for the documentation.
// In these modules wg_fuel is global 0 and wg_depth global 1.
func TestInjectedCode(t *testing.T) {
	var (
		i32 = []byte{tI32}
		f32 = []byte{tF32}
	)
	tests := []struct {
		name    string
		module  []byte
		opts    Options
		want    []byte
		comment string
	}{
		{
			name:   "depth and entry charge",
			module: oneFunc(nil, i32, nil, 0x41, 0x01, 0x0b),
			opts:   Options{MaxCallDepth: 7},
			want: cat(
				[]byte{0x02, 0x01, tI64, 0x01, tI32}, // $t64 = local 0, $t32 = local 1
				[]byte{0x23, 1, 0x41, 1, 0x6a, 0x22, 1, 0x24, 1, 0x20, 1, 0x41, 7, 0x4b, 0x04, 0x40, 0x00, 0x0b},
				[]byte{0x23, 0, 0x42, 1, 0x7d, 0x22, 0, 0x24, 0, 0x20, 0, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 0, 0x10, 1, 0x0b},
				[]byte{0x02, tI32}, // the wrapper block
				[]byte{0x41, 0x01}, // the body
				[]byte{0x0b},       // the wrapper's end
				[]byte{0x23, 1, 0x41, 1, 0x6b, 0x24, 1},
				[]byte{0x0b},
			),
		},
		{
			name:   "return becomes a branch to the wrapper",
			module: oneFunc(nil, i32, nil, 0x02, 0x40, 0x41, 0x05, 0x0f, 0x0b, 0x41, 0x06, 0x0b),
			opts:   Options{MaxCallDepth: 3},
			want: cat(
				[]byte{0x02, 0x01, tI64, 0x01, tI32},
				[]byte{0x23, 1, 0x41, 1, 0x6a, 0x22, 1, 0x24, 1, 0x20, 1, 0x41, 3, 0x4b, 0x04, 0x40, 0x00, 0x0b},
				[]byte{0x23, 0, 0x42, 2, 0x7d, 0x22, 0, 0x24, 0, 0x20, 0, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 0, 0x10, 1, 0x0b},
				[]byte{0x02, tI32},
				[]byte{0x02, 0x40, 0x41, 0x05, 0x0c, 0x01, 0x0b}, // return → br 1
				[]byte{0x41, 0x06}, // dead: no charge
				[]byte{0x0b},
				[]byte{0x23, 1, 0x41, 1, 0x6b, 0x24, 1},
				[]byte{0x0b},
			),
		},
		{
			name:   "NaN canonicalization",
			module: oneFunc(cat(f32, f32), f32, nil, 0x20, 0, 0x20, 1, 0x92, 0x0b),
			opts:   Options{CanonicalizeNaN: true},
			want: cat(
				[]byte{0x02, 0x01, tI64, 0x01, tF32}, // $t64 = local 2, $f32 = local 3
				[]byte{0x23, 0, 0x42, 3, 0x7d, 0x22, 2, 0x24, 0, 0x20, 2, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 2, 0x10, 1, 0x0b},
				[]byte{0x20, 0, 0x20, 1, 0x92},
				[]byte{0x22, 3, 0x43, 0x00, 0x00, 0xc0, 0x7f, 0x20, 3, 0x20, 3, 0x5b, 0x1b},
				[]byte{0x0b},
			),
		},
		{
			name:   "memory.grow charged per page, checked against the budget",
			module: oneFunc(i32, i32, nil, 0x20, 0, 0x40, 0, 0x0b),
			opts:   Options{},
			want: cat(
				[]byte{0x03, 0x01, tI64, 0x01, tI32, 0x01, tI32}, // $t64 = local 1, $t32 = local 2, $r32 = local 3
				[]byte{0x23, 0, 0x42, 2, 0x7d, 0x22, 1, 0x24, 0, 0x20, 1, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 1, 0x10, 1, 0x0b},
				[]byte{0x20, 0},
				[]byte{0x22, 2, 0x23, 0, 0x20, 2, 0xad, 0x42, growShift, 0x86, 0x7d, 0x22, 1, 0x24, 0, 0x20, 1, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 1, 0x10, 1, 0x0b},
				[]byte{0x3f, 0, 0xad, 0x20, 2, 0xad, 0x7c, 0x21, 1}, // $t64 = the size asked for
				// over the budget (global 4), the operand becomes -1
				[]byte{0x1a, 0x41, 0x7f, 0x20, 2, 0x20, 2, 0xad, 0x42, 16, 0x86, 0x23, 4, 0x56, 0x1b},
				[]byte{0x40, 0},
				[]byte{0x22, 3, 0x41, 0x7f, 0x46, 0x04, 0x40},
				// failed: because of the budget, within the maximum (4)? global 5 says so
				[]byte{0x20, 2, 0xad, 0x42, 16, 0x86, 0x23, 4, 0x56, 0x20, 1, 0x42, 4, 0x58, 0x71, 0x04, 0x40, 0x41, 1, 0x24, 5, 0x0b},
				// a failure within the maximum above the recorded size is recorded in global 3
				[]byte{0x20, 1, 0x42, 4, 0x58, 0x20, 1, 0x23, 3, 0x56, 0x71, 0x04, 0x40, 0x20, 1, 0x24, 3, 0x0b},
				// grown: the pages' bytes leave the budget
				[]byte{0x05, 0x23, 4, 0x20, 2, 0xad, 0x42, 16, 0x86, 0x7d, 0x24, 4, 0x0b, 0x20, 3},
				[]byte{0x0b},
			),
		},
		{
			name: "table.grow charged per element, checked against the budget",
			module: buildModule(
				sec(secType, vec(functype(i32, i32))),
				sec(secFunction, vec(u32s(0))),
				sec(secTable, vec([]byte{tFuncref, 0x01, 0, 10})),
				sec(secCode, vec(body(nil, 0xd0, tFuncref, 0x20, 0, 0xfc, 15, 0, 0x0b))),
			),
			opts: Options{},
			want: cat(
				[]byte{0x03, 0x01, tI64, 0x01, tI32, 0x01, tI32},
				[]byte{0x23, 0, 0x42, 3, 0x7d, 0x22, 1, 0x24, 0, 0x20, 1, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 1, 0x10, 1, 0x0b},
				[]byte{0xd0, tFuncref, 0x20, 0},
				[]byte{0x22, 2, 0x23, 0, 0x20, 2, 0xad, 0x7d, 0x22, 1, 0x24, 0, 0x20, 1, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 1, 0x10, 1, 0x0b},
				[]byte{0xfc, 16, 0, 0xad, 0x20, 2, 0xad, 0x7c, 0x21, 1},
				[]byte{0x1a, 0x41, 0x7f, 0x20, 2, 0x20, 2, 0xad, 0x42, 5, 0x86, 0x23, 4, 0x56, 0x1b},
				[]byte{0xfc, 15, 0},
				[]byte{0x22, 3, 0x41, 0x7f, 0x46, 0x04, 0x40},
				[]byte{0x20, 2, 0xad, 0x42, 5, 0x86, 0x23, 4, 0x56, 0x20, 1, 0x42, 10, 0x58, 0x71, 0x04, 0x40, 0x41, 1, 0x24, 5, 0x0b},
				[]byte{0x05, 0x23, 4, 0x20, 2, 0xad, 0x42, 5, 0x86, 0x7d, 0x24, 4, 0x0b, 0x20, 3},
				[]byte{0x0b},
			),
		},
		{
			name: "ref.func reads the ref.func table",
			module: buildModule(
				sec(secType, vec(functype(nil, i32))),
				sec(secFunction, vec(u32s(0))),
				sec(secTable, vec([]byte{tFuncref, 0x00, 0})),
				sec(secExport, vec(export("f", 0, 0))),
				sec(secCode, vec(body(nil, 0xd2, 0, 0xd1, 0x0b))),
			),
			opts: Options{},
			want: cat(
				[]byte{0x01, 0x01, tI64},
				[]byte{0x23, 0, 0x42, 2, 0x7d, 0x22, 0, 0x24, 0, 0x20, 0, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 0, 0x10, 1, 0x0b},
				[]byte{0x41, 0, 0x25, 1}, // slot 0 of table 1
				[]byte{0xd1, 0x0b},
			),
		},
		{
			name:   "a frame of 300 slots counts as two calls",
			module: oneFunc(nil, nil, []byte{100, tI64, 100, tI64, 100, tI64, 22, tV128}, 0x0b), // 300 i64, 22 v128: 344 slots
			opts:   Options{MaxCallDepth: 7},
			want: cat(
				[]byte{0x06, 100, tI64, 100, tI64, 100, tI64, 22, tV128, 0x01, tI64, 0x01, tI32},
				[]byte{0x23, 1, 0x41, 2, 0x6a, 0x22, 0xc3, 0x02, 0x24, 1, 0x20, 0xc3, 0x02, 0x41, 7, 0x4b, 0x04, 0x40, 0x00, 0x0b},
				[]byte{0x02, 0x40},
				[]byte{0x0b},
				[]byte{0x23, 1, 0x41, 2, 0x6b, 0x24, 1},
				[]byte{0x0b},
			),
		},
		{
			name: "charges at a loop header and after br_if",
			module: oneFunc(nil, nil, nil,
				0x03, 0x40, 0x41, 1, 0x0d, 0, 0x0b, // loop: i32.const 1; br_if 0
				0x01, 0x0b), // nop
			opts: Options{},
			want: cat(
				[]byte{0x01, 0x01, tI64},
				[]byte{0x03, 0x40}, // the entry block is empty: no charge
				[]byte{0x23, 0, 0x42, 2, 0x7d, 0x22, 0, 0x24, 0, 0x20, 0, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 0, 0x10, 1, 0x0b},
				[]byte{0x41, 1, 0x0d, 0},
				[]byte{0x23, 0, 0x42, 1, 0x7d, 0x22, 0, 0x24, 0, 0x20, 0, 0x42, 0, 0x53, 0x04, 0x40, 0x20, 0, 0x10, 1, 0x0b},
				[]byte{0x0b, 0x01, 0x0b}, // a loop's end is no join: the nop is in the br_if's fallthrough block
			),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Instrument(tt.module, tt.opts)
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("% x", tt.want), fmt.Sprintf("% x", firstBody(t, out)))
			compileBoth(t, out)
		})
	}
}

func compileBoth(t *testing.T, wasm []byte) {
	ctx := context.Background()
	for _, eng := range engines {
		rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
		_, err := rt.CompileModule(ctx, wasm)
		require.NoError(t, err, eng.name)
		require.NoError(t, rt.Close(ctx))
	}
}

// fuelUsed runs export "f" of an instrumented module on an engine.
func fuelUsed(t *testing.T, eng engine, wasm []byte, args ...uint64) (int64, []uint64, error) {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasm)
	require.NoError(t, err)
	mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
	res, err := mod.ExportedFunction("f").Call(ctx, args...)
	return budget - int64(mod.ExportedGlobal(FuelGlobal).Get()), res, err
}

// TestCosts pins the cost model on small functions.
func TestCosts(t *testing.T) {
	i32 := []byte{tI32}
	tests := []struct {
		name   string
		module []byte
		args   []uint64
		want   int64
	}{
		{"straight line", oneFunc(nil, i32, nil, 0x41, 1, 0x41, 2, 0x6a, 0x0b), nil, 3},
		{"if then", oneFunc(i32, i32, nil,
			0x20, 0, 0x04, tI32, 0x41, 2, 0x05, 0x41, 3, 0x41, 4, 0x6a, 0x0b, 0x1a, 0x41, 0, 0x0b),
			[]uint64{1}, 2 + 1 + 2},
		{"if else", oneFunc(i32, i32, nil,
			0x20, 0, 0x04, tI32, 0x41, 2, 0x05, 0x41, 3, 0x41, 4, 0x6a, 0x0b, 0x1a, 0x41, 0, 0x0b),
			[]uint64{0}, 2 + 3 + 2},
		{"ten iterations", oneFunc(i32, i32, []byte{1, tI32},
			0x03, 0x40, 0x20, 1, 0x41, 1, 0x6a, 0x22, 1, 0x20, 0, 0x49, 0x0d, 0, 0x0b, 0x20, 1, 0x0b),
			[]uint64{10}, 7*10 + 1},
		// block; loop; (br_if 1 (i32.eqz x)); x = x - 1; br 0: the 5-unit
		// fallthrough after the forward br_if is paid by the loop header's
		// charge, so every iteration costs 3 + 5 — the exit too.
		{"forward br_if folds its fallthrough", oneFunc(i32, nil, nil,
			0x02, 0x40, 0x03, 0x40, 0x20, 0, 0x45, 0x0d, 1, 0x20, 0, 0x41, 1, 0x6b, 0x21, 0, 0x0c, 0, 0x0b, 0x0b, 0x0b),
			[]uint64{3}, 4 * (3 + 5)},
		{"br_table to the outer block", oneFunc(i32, nil, nil,
			0x02, 0x40, 0x02, 0x40, 0x20, 0, 0x0e, 1, 0, 1, 0x0b, 0x41, 9, 0x1a, 0x0b, 0x0b),
			[]uint64{1}, 2},
		{"br_table to the inner block", oneFunc(i32, nil, nil,
			0x02, 0x40, 0x02, 0x40, 0x20, 0, 0x0e, 1, 0, 1, 0x0b, 0x41, 9, 0x1a, 0x0b, 0x0b),
			[]uint64{0}, 4},
		{"memory.grow by 3 pages", oneFunc(nil, i32, nil, 0x41, 3, 0x40, 0, 0x0b), nil, 2 + 3*GrowCostPerPage},
		{"a failing memory.grow costs as much", oneFunc(nil, i32, nil, 0x41, 0xe4, 0x00, 0x40, 0, 0x0b), nil, 2 + 100*GrowCostPerPage},
		{"memory.fill of 640 bytes", oneFunc(nil, nil, nil,
			0x41, 0, 0x41, 0, 0x41, 0x80, 0x05, 0xfc, 11, 0, 0x0b), nil, 4 + 640/BulkBytesPerFuel},
		{"memory.copy of 63 bytes", oneFunc(nil, nil, nil,
			0x41, 0, 0x41, 1, 0x41, 63, 0xfc, 10, 0, 0, 0x0b), nil, 4},
		{"memory.init of 16 bytes", oneFunc(nil, nil, nil,
			0x41, 0, 0x41, 0, 0x41, 16, 0xfc, 8, 0, 0, 0x0b), nil, 4},
		{"return from a block", oneFunc(nil, i32, nil,
			0x02, 0x40, 0x41, 1, 0x0f, 0x0b, 0x41, 2, 0x0b), nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, opts := range optionSets {
				out, err := Instrument(tt.module, opts)
				require.NoError(t, err)
				for _, eng := range engines {
					got, _, err := fuelUsed(t, eng, out, tt.args...)
					require.NoError(t, err)
					assert.Equal(t, tt.want, got, "%s %+v", eng.name, opts)
				}
			}
		})
	}
}

// TestIndices: everything the module had keeps its index; the additions
// come after imported and defined globals and after the existing types.
func TestIndices(t *testing.T) {
	var (
		i32, i64 = []byte{tI32}, []byte{tI64}
	)
	wasm := buildModule(
		sec(secType, vec(
			functype(i32, i32),                // 0: the import
			functype(nil, nil),                // 1: the start function
			functype(i32, cat(i32, i64)),      // 2: two results, no () -> (i32 i64) type yet
			functype(i32, cat(i32, i32, i64)), // 3
		)),
		sec(secImport, vec(
			cat(name("env"), name("f"), []byte{0}, u32s(0)),
			cat(name("env"), name("g"), []byte{3, tI32, 0}),
		)),
		sec(secFunction, vec(u32s(1), u32s(2), u32s(3))),
		sec(secGlobal, vec([]byte{tI64, 1, 0x42, 5, 0x0b})),
		sec(secExport, vec(export("two", 0, 2), export("three", 0, 3), export("g2", 3, 1))),
		sec(secStart, u32s(1)),
		sec(secCode, vec(
			body(nil, 0x01, 0x0b),
			body(nil, 0x20, 0, 0x10, 0, 0x42, 7, 0x0b),       // (call $f x), 7
			body(nil, 0x20, 0, 0x20, 0, 0x10, 2, 0x0f, 0x0b), // x, (call two x): return
		)),
	)
	out, err := Instrument(wasm, Options{MaxCallDepth: 10})
	require.NoError(t, err)
	m, err := wasmbin.Decode(out)
	require.NoError(t, err)

	for _, s := range m.Sections {
		assert.NotEqual(t, wasmbin.SectionStart, s.ID, "the start section is gone")
	}
	require.Len(t, m.Types, 7)
	assert.Equal(t, wasmbin.FuncType{Params: []byte{tI64}, Results: []byte{}}, m.Types[4], "the refill function's type")
	assert.Equal(t, wasmbin.FuncType{Params: []byte{}, Results: cat(i32, i64)}, m.Types[5])
	assert.Equal(t, wasmbin.FuncType{Params: []byte{}, Results: cat(i32, i32, i64)}, m.Types[6])
	want := map[string]wasmbin.Export{
		"two":       {Name: "two", Kind: wasmbin.KindFunc, Index: 2},
		"three":     {Name: "three", Kind: wasmbin.KindFunc, Index: 3},
		"g2":        {Name: "g2", Kind: wasmbin.KindGlobal, Index: 1},
		FuelGlobal:  {Name: FuelGlobal, Kind: wasmbin.KindGlobal, Index: 2},
		DepthGlobal: {Name: DepthGlobal, Kind: wasmbin.KindGlobal, Index: 3},
		StartExport: {Name: StartExport, Kind: wasmbin.KindFunc, Index: 1},
	}
	for n, e := range want {
		got, ok := m.Export(n)
		require.True(t, ok, n)
		assert.Equal(t, e, got)
	}

	// And it runs: env provides f (x -> x*2) and g.
	ctx := context.Background()
	for _, eng := range engines {
		rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
		env := buildModule(
			sec(secType, vec(functype(i32, i32))),
			sec(secFunction, vec(u32s(0))),
			sec(secGlobal, vec([]byte{tI32, 0, 0x41, 3, 0x0b})),
			sec(secExport, vec(export("f", 0, 0), export("g", 3, 0))),
			sec(secCode, vec(body(nil, 0x20, 0, 0x41, 2, 0x6c, 0x0b))),
		)
		_, err := rt.InstantiateWithConfig(ctx, env, wazero.NewModuleConfig().WithName("env"))
		require.NoError(t, err)
		mod, err := rt.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName("m"))
		require.NoError(t, err)
		mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(1000)
		_, err = mod.ExportedFunction(StartExport).Call(ctx)
		require.NoError(t, err)
		res, err := mod.ExportedFunction("three").Call(ctx, 21)
		require.NoError(t, err)
		assert.Equal(t, []uint64{21, 42, 7}, []uint64{uint64(uint32(res[0])), uint64(uint32(res[1])), res[2]}, eng.name)
		assert.Equal(t, uint64(0), mod.ExportedGlobal(DepthGlobal).Get(), eng.name)
		assert.Equal(t, uint64(5), mod.ExportedGlobal("g2").Get(), eng.name)
		require.NoError(t, rt.Close(ctx))
	}
}

// TestErrors: refusals name the function and the offset of the
// instruction, or the offset in the module.
func TestErrors(t *testing.T) {
	i32 := []byte{tI32}
	code := func(c ...byte) []byte { return oneFunc(nil, nil, nil, c...) }
	tests := []struct {
		name   string
		module []byte
		want   string
		// at is the byte sequence the error's offset must point at.
		at []byte
	}{
		{"unknown prefixed opcode", code(0x01, 0xfc, 0x20, 0x0b), "function 0 at offset %#x: unknown opcode 0xfc 0x20", []byte{0xfc, 0x20}},
		{"unknown opcode", code(0x27, 0x0b), "function 0 at offset %#x: unknown opcode 0x27", []byte{0x27, 0x0b}},
		{"threads", code(0x41, 0, 0xfe, 0x10, 2, 0, 0x1a, 0x0b), "function 0 at offset %#x: opcode 0xfe 0x10 (threads) is not supported", []byte{0xfe, 0x10}},
		{"tail calls", code(0x12, 0, 0x0b), "opcode 0x12 return_call (tail calls) is not supported", nil},
		{"exceptions", code(0x06, 0x40, 0x0b, 0x0b), "opcode 0x06 try (exception handling) is not supported", nil},
		{"relaxed SIMD", code(0x41, 0, 0xfd, 0x11, 0xfd, 0x80, 0x02, 0x1a, 0x0b), "function 0 at offset %#x: opcode 0xfd 0x100 (relaxed SIMD) is not supported", []byte{0xfd, 0x80, 0x02}},
		{"reserved SIMD opcode", code(0xfd, 0x9a, 0x01, 0x0b), "unknown opcode 0xfd 0x9a", nil},
		{"truncated immediate", code(0x41), "function 0 at offset %#x: malformed or truncated integer constant", []byte{0x41}},
		{"missing end", code(0x01), "unexpected end of function body (missing end)", nil},
		{"bytes after the end", code(0x0b, 0x01), "1 bytes after the end of the function body", nil},
		{"type mismatch", oneFunc(nil, i32, nil, 0x42, 0, 0x0b), "type mismatch: expected i32, got i64", nil},
		{"lane index", code(0xfd, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfd, 0x15, 16, 0x1a, 0x0b), "lane index 16 out of range", nil},
		{"alignment", code(0x41, 0, 0x28, 3, 0, 0x1a, 0x0b), "alignment 2^3 is larger than natural (2^2)", nil},
		{"unknown label", code(0x0c, 1, 0x0b), "unknown label 1", nil},
		{"undeclared ref.func", buildModule( // ref.func may name only functions exported or in elements or globals
			sec(secType, vec(functype(nil, nil))),
			sec(secFunction, vec(u32s(0))),
			sec(secCode, vec(body(nil, 0xd2, 0, 0x1a, 0x0b))),
		), "undeclared function reference 0", nil},
		{"function index counts imports", buildModule(
			sec(secType, vec(functype(nil, nil))),
			sec(secImport, vec(cat(name("m"), name("f"), []byte{0}, u32s(0)))),
			sec(secFunction, vec(u32s(0))),
			sec(secCode, vec(body(nil, 0x27, 0x0b))),
		), "function 1 at offset", nil},
		{"reserved export", buildModule(
			sec(secGlobal, vec([]byte{tI64, 1, 0x42, 0, 0x0b})),
			sec(secExport, vec(export(FuelGlobal, 3, 0))),
		), `export name "wg_fuel" is reserved`, nil},
		{"duplicate export", buildModule(
			sec(secMemory, vec([]byte{0, 1})),
			sec(secExport, vec(export("m", 2, 0), export("x", 2, 0), export("m", 2, 0))),
		), `duplicate export name "m"`, nil},
		{"shared memory", buildModule(sec(secMemory, vec([]byte{3, 1, 1}))), "shared memory (threads) is not supported", nil},
		{"memory64", buildModule(sec(secMemory, vec([]byte{4, 1}))), "64-bit memory (memory64) is not supported", nil},
		{"two memories", buildModule(sec(secMemory, vec([]byte{0, 1}, []byte{0, 1}))), "multiple memories are not supported", nil},
		{"data.drop without data count", buildModule(
			sec(secType, vec(functype(nil, nil))),
			sec(secFunction, vec(u32s(0))),
			sec(secCode, vec(body(nil, 0xfc, 9, 0, 0x0b))),
			sec(secData, vec(cat([]byte{1}, name("x")))),
		), "data count section required", nil},
		{"unknown section", buildModule(sec(13, []byte{0})), "unknown section id 13", nil},
		{"sections out of order", buildModule(sec(secFunction, vec()), sec(secType, vec())), "type section out of order or repeated", nil},
		{"function without body", buildModule(sec(secType, vec(functype(nil, nil))), sec(secFunction, vec(u32s(0)))),
			"function and code section have inconsistent lengths", nil},
		{"bad magic", []byte("\x00asn\x01\x00\x00\x00"), "offset 0x0: not a wasm binary", nil},
		{"tag import", buildModule(sec(secType, vec(functype(nil, nil))), sec(secImport, vec(cat(name("m"), name("t"), []byte{4, 0}, u32s(0))))),
			"tags (exception handling) are not supported", nil},
		{"extended constant expression", buildModule(sec(secGlobal, vec([]byte{tI32, 0, 0x41, 1, 0x41, 2, 0x6a, 0x0b}))),
			"constant expression required", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Instrument(tt.module, Options{MaxCallDepth: 100, CanonicalizeNaN: true})
			require.Error(t, err)
			want := tt.want
			if tt.at != nil {
				at := bytes.LastIndex(tt.module, tt.at)
				require.GreaterOrEqual(t, at, 0)
				want = fmt.Sprintf(tt.want, at)
			}
			assert.Contains(t, err.Error(), want)
		})
	}
}

// TestNoDepth: MaxCallDepth 0 leaves calls uncounted but keeps the export.
func TestNoDepth(t *testing.T) {
	out := instrumentFixture(t, fixture(t, "recurse.wasm"), Options{})
	m, err := wasmbin.Decode(out)
	require.NoError(t, err)
	_, ok := m.Export(DepthGlobal)
	assert.True(t, ok)
	// The interpreter's own limit stops the recursion; the counter stays 0.
	got := run(t, engines[1], out, runOpts{input: []byte(`{}`), fuel: budget})
	assert.True(t, got.Trapped)
	assert.Zero(t, got.Depth)
	assert.GreaterOrEqual(t, got.Fuel, int64(0))
}

// TestOutputIsDeterministic: the same input gives the same bytes, also when
// Instrument runs concurrently (its scratch memory is pooled).
func TestOutputIsDeterministic(t *testing.T) {
	wasm := forEngine(t, fixture(t, "sort.wasm"))
	want, err := Instrument(wasm, Options{MaxCallDepth: 100, CanonicalizeNaN: true})
	require.NoError(t, err)
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			for j := 0; j < 20; j++ {
				got, err := Instrument(wasm, Options{MaxCallDepth: 100, CanonicalizeNaN: true})
				if err == nil && !bytes.Equal(got, want) {
					err = fmt.Errorf("output differs")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for i := 0; i < 8; i++ {
		require.NoError(t, <-errs)
	}
}

// TestFailedGrowIsRecorded: a memory.grow that fails leaves the size it asked
// for in GrowFailedGlobal when that size is within the memory's own maximum
// (so the host's cap refused it), and the largest such size wins.
func TestFailedGrowIsRecorded(t *testing.T) {
	grow := func(limits []byte) []byte {
		return buildModule(
			sec(secType, vec(functype([]byte{tI32}, []byte{tI32}))),
			sec(secFunction, vec(u32s(0))),
			sec(secMemory, vec(limits)),
			sec(secExport, vec(export("f", 0, 0))),
			sec(secCode, vec(body(nil, 0x20, 0, 0x40, 0, 0x0b))),
		)
	}
	withMax := grow([]byte{1, 1, 4})
	noMax := grow([]byte{0, 1})
	tests := []struct {
		name     string
		module   []byte
		hostCap  uint32 // wazero's memory limit in pages, 0 for none
		deltas   []uint64
		results  []int32
		recorded uint64
	}{
		{"a grow that succeeds", withMax, 0, []uint64{1}, []int32{1}, 0},
		{"beyond the module's maximum", withMax, 0, []uint64{10}, []int32{-1}, 0},
		{"beyond the host's cap", noMax, 2, []uint64{3}, []int32{-1}, 4},
		{"beyond 4 GiB", noMax, 2, []uint64{70000}, []int32{-1}, 0},
		{"the largest refused size", noMax, 2, []uint64{5, 2, 1}, []int32{-1, -1, 1}, 6},
	}
	ctx := context.Background()
	for _, tt := range tests {
		out, err := Instrument(tt.module, Options{MaxCallDepth: 10})
		require.NoError(t, err, tt.name)
		for _, eng := range engines {
			cfg := eng.cfg().WithCoreFeatures(api.CoreFeaturesV2)
			if tt.hostCap > 0 {
				cfg = cfg.WithMemoryLimitPages(tt.hostCap)
			}
			rt := wazero.NewRuntimeWithConfig(ctx, cfg)
			mod, err := rt.Instantiate(ctx, out)
			require.NoError(t, err)
			mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
			for i, d := range tt.deltas {
				res, err := mod.ExportedFunction("f").Call(ctx, d)
				require.NoError(t, err)
				assert.Equal(t, tt.results[i], int32(res[0]), "%s: %s, grow %d", tt.name, eng.name, d)
			}
			assert.Equal(t, tt.recorded, mod.ExportedGlobal(GrowFailedGlobal).Get(), "%s: %s", tt.name, eng.name)
			require.NoError(t, rt.Close(ctx))
		}
	}
}
