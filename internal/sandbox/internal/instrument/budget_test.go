package instrument

import (
	"context"
	"math"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// growModule exports grow_memory(n) and grow_table(n), each returning what
// the grow returned, for a memory of 1 page (maximum 8) and a table of 2
// elements (maximum 100).
func growModule() []byte {
	i32 := []byte{tI32}
	return buildModule(
		sec(secType, vec(functype(i32, i32))),
		sec(secFunction, vec(u32s(0), u32s(0))),
		sec(secTable, vec([]byte{tFuncref, 0x01, 2, 100})),
		sec(secMemory, vec([]byte{0x01, 1, 8})),
		sec(secExport, vec(export("grow_memory", 0, 0), export("grow_table", 0, 1))),
		sec(secCode, vec(
			body(nil, 0x20, 0, 0x40, 0, 0x0b),
			body(nil, 0xd0, tFuncref, 0x20, 0, 0xfc, 15, 0, 0x0b),
		)),
	)
}

// TestBudget: memory.grow and table.grow share BudgetGlobal. A grow that
// costs more than is left fails (-1) and sets OverBudgetGlobal when the
// memory's or table's own maximum would have allowed it; a grow that
// succeeds is subtracted; without a budget set nothing is refused.
func TestBudget(t *testing.T) {
	type grow struct {
		fn   string
		n    uint64
		want int32
	}
	tests := []struct {
		name   string
		budget int64 // -1: left at its initial value
		grows  []grow
		left   int64
		over   uint64
	}{
		{"no budget set", -1, []grow{{"grow_memory", 7, 1}, {"grow_table", 98, 2}}, math.MaxInt64 - 7*65536 - 98*TableElementBytes, 0},
		{"memory within the budget", 2 * 65536, []grow{{"grow_memory", 2, 1}}, 0, 0},
		{"memory beyond the budget", 2*65536 - 1, []grow{{"grow_memory", 2, -1}}, 2*65536 - 1, 1},
		{"tables take from the same budget", 65536 + 10*TableElementBytes, []grow{{"grow_table", 10, 2}, {"grow_memory", 1, 1}, {"grow_table", 1, -1}}, 0, 1},
		{"a table grow beyond the budget", 10*TableElementBytes - 1, []grow{{"grow_table", 10, -1}, {"grow_table", 9, 2}}, TableElementBytes - 1, 1},
		{"beyond the memory's own maximum is not the budget's doing", 65536, []grow{{"grow_memory", 9, -1}}, 65536, 0},
		{"beyond the table's own maximum is not the budget's doing", 10, []grow{{"grow_table", 99, -1}}, 10, 0},
		{"zero costs nothing", 0, []grow{{"grow_memory", 0, 1}, {"grow_table", 0, 2}}, 0, 0},
	}
	out, err := Instrument(growModule(), Options{MaxCallDepth: 10})
	require.NoError(t, err)
	ctx := context.Background()
	for _, tt := range tests {
		for _, eng := range engines {
			t.Run(tt.name+"/"+eng.name, func(t *testing.T) {
				rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
				defer rt.Close(ctx)
				mod, err := rt.Instantiate(ctx, out)
				require.NoError(t, err)
				mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
				if tt.budget >= 0 {
					mod.ExportedGlobal(BudgetGlobal).(api.MutableGlobal).Set(uint64(tt.budget))
				}
				for _, g := range tt.grows {
					res, err := mod.ExportedFunction(g.fn).Call(ctx, g.n)
					require.NoError(t, err)
					assert.Equal(t, g.want, int32(res[0]), "%s(%d)", g.fn, g.n)
				}
				assert.Equal(t, tt.left, int64(mod.ExportedGlobal(BudgetGlobal).Get()), "budget left")
				assert.Equal(t, tt.over, mod.ExportedGlobal(OverBudgetGlobal).Get(), "over budget")
			})
		}
	}
}

// tableOps exports fill(n), copy(n) and init(n) on a table of 1000
// elements, and a passive segment of 1000 entries.
func tableOps() []byte {
	i32 := []byte{tI32}
	elems := make([]uint32, 1000)
	return buildModule(
		sec(secType, vec(functype(i32, nil))),
		sec(secFunction, vec(u32s(0), u32s(0), u32s(0))),
		sec(secTable, vec([]byte{tFuncref, 0x00, 0xe8, 0x07})),
		sec(secExport, vec(export("fill", 0, 0), export("copy", 0, 1), export("init", 0, 2))),
		sec(secElement, vec(cat([]byte{1, 0}, vec(bytesOf(u32s(elems...))...)))),
		sec(secCode, vec(
			body(nil, 0x41, 0, 0xd0, tFuncref, 0x20, 0, 0xfc, 17, 0, 0x0b),
			body(nil, 0x41, 0, 0x41, 0, 0x20, 0, 0xfc, 14, 0, 0, 0x0b),
			body(nil, 0x41, 0, 0x41, 0, 0x20, 0, 0xfc, 12, 0, 0, 0x0b),
		)),
	)
}

// TestTableOpsPayPerElement: the bulk table instructions cost one unit per
// element (a table.fill of the whole table cost 16 before), identically on
// every engine, whether they succeed or trap.
func TestTableOpsPayPerElement(t *testing.T) {
	tests := []struct {
		fn   string
		n    uint64
		want int64
	}{
		{"fill", 1000, 4 + 1000},
		{"fill", 0, 4},
		{"copy", 1000, 4 + 1000},
		{"init", 1000, 4 + 1000},
		{"fill", 1001, 4 + 1001}, // out of bounds: charged, then traps
	}
	out, err := Instrument(tableOps(), Options{MaxCallDepth: 10})
	require.NoError(t, err)
	ctx := context.Background()
	for _, tt := range tests {
		for _, eng := range engines {
			rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
			mod, err := rt.Instantiate(ctx, out)
			require.NoError(t, err)
			mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
			_, err = mod.ExportedFunction(tt.fn).Call(ctx, tt.n)
			if tt.n > 1000 {
				require.Error(t, err, "%s(%d) on %s", tt.fn, tt.n, eng.name)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, budget-int64(mod.ExportedGlobal(FuelGlobal).Get()), "%s(%d) on %s", tt.fn, tt.n, eng.name)
			require.NoError(t, rt.Close(ctx))
		}
	}
}

// refFuncLoop exports f(n), which executes ref.func n times and then calls
// the last reference through a table: 42.
func refFuncLoop() []byte {
	i32 := []byte{tI32}
	return buildModule(
		sec(secType, vec(functype(i32, i32), functype(nil, i32))),
		sec(secFunction, vec(u32s(0), u32s(1))),
		sec(secTable, vec([]byte{tFuncref, 0x00, 1})),
		sec(secExport, vec(export("f", 0, 0))),
		sec(secElement, vec(cat([]byte{3, 0}, vec(u32s(1))))), // declares function 1
		sec(secCode, vec(
			body([]byte{1, tFuncref},
				0x03, 0x40, // loop
				0xd2, 1, 0x21, 1, // local.set 1 (ref.func 1)
				0x20, 0, 0x41, 1, 0x6b, 0x22, 0, 0x0d, 0, // br_if 0 (n = n - 1)
				0x0b,
				0x41, 0, 0x20, 1, 0x26, 0, // table.set 0 (0, the reference)
				0x41, 0, 0x11, 1, 0, // call_indirect (type 1) 0
				0x0b),
			body(nil, 0x41, 42, 0x0b),
		)),
	)
}

// TestRefFuncAllocatesNothing: wazero's compiler allocates a function
// reference for every ref.func it executes and keeps it until the instance
// closes (46 bytes each: a loop of 10^7 took 439 MB). Instrumented, ref.func
// reads a table filled once per instance: the references work as before,
// and a million of them allocate nothing that grows with the count.
func TestRefFuncAllocatesNothing(t *testing.T) {
	out, err := Instrument(refFuncLoop(), Options{MaxCallDepth: 10})
	require.NoError(t, err)
	ctx := context.Background()
	for _, eng := range engines {
		rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
		mod, err := rt.Instantiate(ctx, out)
		require.NoError(t, err)
		mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		res, err := mod.ExportedFunction("f").Call(ctx, 1_000_000)
		goruntime.ReadMemStats(&after)
		require.NoError(t, err)
		assert.Equal(t, uint64(42), res[0], eng.name)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "%s: bytes allocated by a million ref.func", eng.name)
		require.NoError(t, rt.Close(ctx))
	}
}

// TestLargeFramesCountAsSeveralCalls: a recursion whose frames hold 49,000
// locals stops after 5 calls (each counts as 192 against a limit of 1000),
// where counting calls alone let wazero's interpreter take 2.3 GB of stack
// for 1000 of them.
func TestLargeFramesCountAsSeveralCalls(t *testing.T) {
	i32 := []byte{tI32}
	locals := []byte{}
	for i := 0; i < 49000/125; i++ {
		locals = append(locals, 125, tI64)
	}
	wasm := buildModule(
		sec(secType, vec(functype(i32, i32))),
		sec(secFunction, vec(u32s(0))),
		sec(secExport, vec(export("f", 0, 0))),
		// f(n) = n == 0 ? 0 : 1 + f(n-1)
		sec(secCode, vec(body(locals,
			0x20, 0, 0x45, 0x04, i32[0], 0x41, 0, 0x05,
			0x41, 1, 0x20, 0, 0x41, 1, 0x6b, 0x10, 0, 0x6a, 0x0b, 0x0b))),
	)
	out, err := Instrument(wasm, Options{MaxCallDepth: 1000})
	require.NoError(t, err)
	ctx := context.Background()
	for _, eng := range engines {
		rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
		mod, err := rt.Instantiate(ctx, out)
		require.NoError(t, err)
		mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
		res, err := mod.ExportedFunction("f").Call(ctx, 4)
		require.NoError(t, err, eng.name)
		assert.Equal(t, uint64(4), res[0], "%s: 5 calls fit", eng.name)

		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		_, err = mod.ExportedFunction("f").Call(ctx, 1000)
		goruntime.ReadMemStats(&after)
		require.Error(t, err, eng.name)
		assert.Equal(t, uint64(6*192), mod.ExportedGlobal(DepthGlobal).Get(), "%s: the sixth call trapped", eng.name)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<20), "%s: bytes allocated by the recursion", eng.name)
		require.NoError(t, rt.Close(ctx))
	}
}
