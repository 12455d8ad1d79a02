package instrument

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// budget is more fuel than any fixture needs.
const budget = int64(1) << 40

var optionSets = []Options{
	{MaxCallDepth: 1000, CanonicalizeNaN: true},
	{MaxCallDepth: 1000},
	{},
}

// TestFixtures runs every fixture that ends on its own plain and
// instrumented, on both engines: the outcomes must be the same, and an
// instrumented run must use the same fuel on both engines.
func TestFixtures(t *testing.T) {
	sortInput := string(fixture(t, "sort_input.json"))
	tests := []struct {
		file, input string
	}{
		{"echo.wasm", `{"a":[1,2,3]}`},
		{"nomanifest.wasm", `{"a":1}`},
		{"upper.wasm", `{"text":"hello, world"}`},
		{"upper.wasm", `[]`},
		{"sum.wasm", `{"numbers":[1,-2,3]}`},
		{"sum.wasm", `{"numbers":[1,"x"]}`},
		{"sort.wasm", sortInput},
		{"sort.wasm", bigSortInput(5000)},
		{"sort.wasm", `{"numbers":[1.5]}`},
		{"bigout.wasm", `{}`},
		{"fail.wasm", `{}`},
		{"noout.wasm", `{}`},
		{"notjson.wasm", `{}`},
		{"trap.wasm", `{}`},
		{"grow.wasm", `{}`},
		{"tablegrow.wasm", `{}`},
		{"wasi_abi.wasm", `{}`},
		{"textstats.wasm", `{"text":"héllo wörld, fuel and depth"}`},
		{"textstats.wasm", `{"nope":1}`},
	}
	for _, tt := range tests {
		name := tt.file + " " + tt.input
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			wasm := fixture(t, tt.file)
			plain := forEngine(t, wasm)
			sets, engs := optionSets, engines
			if quick() {
				sets = sets[:1]
				if len(wasm) > 1<<20 {
					engs = engines[1:] // compiling 3 MB takes the compiler long under -race
				}
			}
			for _, opts := range sets {
				inst := instrumentFixture(t, wasm, opts)
				var fuel []int64
				for _, eng := range engs {
					want := run(t, eng, plain, runOpts{input: []byte(tt.input)})
					got := run(t, eng, inst, runOpts{input: []byte(tt.input), fuel: budget})
					require.Equal(t, want.Status, got.Status, "%s %+v: status", eng.name, opts)
					require.Equal(t, want.Trapped, got.Trapped, "%s %+v: trap", eng.name, opts)
					require.Equal(t, want.Output, got.Output, "%s %+v: output", eng.name, opts)
					require.GreaterOrEqual(t, got.Fuel, int64(0), "%s %+v: a guest trap leaves fuel", eng.name, opts)
					require.Less(t, got.Fuel, budget, "%s %+v: some fuel is used", eng.name, opts)
					require.Equal(t, want.Exited, got.Exited, "%s %+v: exit", eng.name, opts)
					if !got.Trapped && !got.Exited {
						require.Zero(t, got.Depth, "%s %+v: every call returned", eng.name, opts)
					}
					fuel = append(fuel, budget-got.Fuel)
				}
				if len(fuel) == 2 {
					require.Equal(t, fuel[0], fuel[1], "%+v: fuel used, compiler and interpreter", opts)
				}
				t.Logf("%+v: fuel used %d", opts, fuel[0])
			}
		})
	}
}

// bigSortInput is {"numbers":[...]} with n integers in a scrambled order.
func bigSortInput(n int) string {
	var b strings.Builder
	b.WriteString(`{"numbers":[`)
	x := uint32(12345)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		x = x*1664525 + 1013904223
		fmt.Fprintf(&b, "%d", int32(x)>>8)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestOutOfFuel: loop.wasm spins until the budget is gone. The trap leaves
// the fuel global negative, at the same value on both engines: the loop's
// only block costs 1 (its br), so the last charge takes the fuel from 0 to
// -1.
func TestOutOfFuel(t *testing.T) {
	for _, opts := range optionSets {
		inst := instrumentFixture(t, fixture(t, "loop.wasm"), opts)
		for _, eng := range engines {
			got := run(t, eng, inst, runOpts{input: []byte(`{}`), fuel: 100_000})
			assert.True(t, got.Trapped, "%s %+v", eng.name, opts)
			assert.Equal(t, int64(-1), got.Fuel, "%s %+v", eng.name, opts)
		}
	}
}

// TestOutOfFuelInStart: startloop.wasm's start function loops; instrumented,
// it is exported rather than run at instantiation, and the budget stops it.
func TestOutOfFuelInStart(t *testing.T) {
	inst := instrumentFixture(t, fixture(t, "startloop.wasm"), Options{MaxCallDepth: 100})
	for _, eng := range engines {
		got := run(t, eng, inst, runOpts{fuel: 1_000_000})
		assert.True(t, got.Trapped, eng.name)
		assert.Equal(t, int64(-1), got.Fuel, eng.name)
		assert.Equal(t, int32(1), got.Depth, eng.name)
	}
}

// TestOutOfFuelGrow: memory.grow is charged per page before it runs, so a
// budget smaller than one page's cost stops the first grow, and the guest's
// memory stays as it was.
func TestOutOfFuelGrow(t *testing.T) {
	inst := instrumentFixture(t, fixture(t, "grow.wasm"), Options{})
	for _, eng := range engines {
		got := run(t, eng, inst, runOpts{input: []byte(`{}`), fuel: 100 * GrowCostPerPage})
		assert.True(t, got.Trapped, eng.name)
		assert.Less(t, got.Fuel, int64(0), eng.name)
		assert.Greater(t, got.Fuel, int64(-GrowCostPerPage-1), eng.name)
	}
}

// TestStackLimit: recurse.wasm recurses without end; the depth counter
// stops it at the same depth on both engines, with fuel left, which is how
// the host tells a stack trap from the others.
func TestStackLimit(t *testing.T) {
	for _, max := range []uint32{1, 10, 500, 1500} {
		inst := instrumentFixture(t, fixture(t, "recurse.wasm"), Options{MaxCallDepth: max, CanonicalizeNaN: true})
		for _, eng := range engines {
			got := run(t, eng, inst, runOpts{input: []byte(`{}`), fuel: budget})
			assert.True(t, got.Trapped, "%s max %d", eng.name, max)
			assert.Equal(t, int32(max+1), got.Depth, "%s max %d", eng.name, max)
			assert.GreaterOrEqual(t, got.Fuel, int64(0), "%s max %d", eng.name, max)
		}
	}
}

// TestGuestTrap: the guest's own unreachable leaves fuel and depth within
// bounds.
func TestGuestTrap(t *testing.T) {
	inst := instrumentFixture(t, fixture(t, "trap.wasm"), Options{MaxCallDepth: 5})
	for _, eng := range engines {
		got := run(t, eng, inst, runOpts{input: []byte(`{}`), fuel: 1000})
		assert.True(t, got.Trapped, eng.name)
		assert.GreaterOrEqual(t, got.Fuel, int64(0), eng.name)
		assert.LessOrEqual(t, got.Depth, int32(5), eng.name)
	}
}

// TestQuickJS: the QuickJS engine module, once fetched, is instrumented and
// compiles on both engines.
func TestQuickJS(t *testing.T) {
	qjs, ok := quickJS(t)
	if !ok {
		t.Skip("QuickJS not fetched (scripts/fetch-quickjs.sh)")
	}
	out := instrumentFixture(t, qjs, optionSets[0])
	compileBoth(t, out)
	t.Logf("quickjs.wasm: %d bytes, instrumented %d", len(qjs), len(out))
}
