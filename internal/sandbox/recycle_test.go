package sandbox

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
	"github.com/wasmgate/wasmgate/internal/testenv"
)

// recycleCase is one kind of execution of the differential test: a module,
// and inputs and limits that reach each of its outcomes.
type recycleCase struct {
	module string
	inputs []string
	limits []Limits
}

var recycleCases = []recycleCase{
	// Keeps state in a private global, in memory and in its heap pointer,
	// and says whether it found a fresh instance.
	{"stash.wasm", []string{`{}`, `{"a":[1,2,3]}`, `"x"`}, []Limits{{}, {Fuel: 30}}},
	{"echo.wasm", []string{`{}`, `{"s":"hello"}`, `[1,2,3]`, `{"big":"` + fmt.Sprintf("%0200d", 7) + `"}`}, []Limits{{}, {MaxOutputBytes: 8}}},
	{"sum.wasm", []string{`{"numbers":[1,2,3]}`, `{"numbers":[]}`, `{"numbers":"no"}`, `{}`}, []Limits{{}, {Fuel: 200}}},
	{"upper.wasm", []string{`{"text":"abc"}`, `{"text":""}`, `{"nope":1}`}, []Limits{{}}},
	{"fail.wasm", []string{`{}`}, []Limits{{}}},
	{"trap.wasm", []string{`{}`}, []Limits{{}}},
	{"loop.wasm", []string{`{}`}, []Limits{{Fuel: 5000}, {Fuel: 100_000}}},
	{"grow.wasm", []string{`{}`, `{"pages":3}`}, []Limits{{}, {MemoryPages: 2}}},
	{"recurse.wasm", []string{`{}`, `{"depth":10}`}, []Limits{{}}},
	{"noout.wasm", []string{`{}`}, []Limits{{}}},
	{"notjson.wasm", []string{`{}`}, []Limits{{}}},
	{"bigout.wasm", []string{`{}`}, []Limits{{}, {MaxOutputBytes: 16}}},
	{"sort.wasm", []string{`{"numbers":[3,1,2]}`, `{"numbers":[]}`}, []Limits{{}}},
	{"textstats.wasm", []string{`{"text":"a b c"}`}, []Limits{{}}},
	{"tablegrow.wasm", []string{`{}`}, []Limits{{}, {MemoryPages: 4}}},
	// Writes a mutable global of every value type (a v128 whose high half
	// is not zero, a funcref that is not null) and memory, and outputs
	// them as it found them: always stateFresh.
	{"state.wasm", []string{`{}`, `[1,2,3]`}, []Limits{{}, {Fuel: 300}}},
}

// stateFresh is what state.wasm answers on a fresh instance (see
// guests/wat/state.wat).
const stateFresh = `{"state":"443322110807060504030201` + `0000c03f` + `00000000000002c0` +
	`0100f0debc9a7856` + `3412f0debc9a7856` + `00` + `01` + `00000000` + `00"}`

func recycleFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	require.NoError(t, err, "fixtures are built by `make guests`")
	return b
}

func recycleInput(s string) Input {
	c, err := audit.Canonicalize([]byte(s))
	if err != nil {
		// Not canonical JSON: run the bytes as they are, as a module may be
		// given anything.
		return Input{Bytes: []byte(s), Digest: audit.DigestBytes([]byte(s))}
	}
	return Input{Bytes: c.Bytes, Digest: audit.DigestBytes(c.Bytes)}
}

// TestRecycledSameAsFresh runs random sequences of executions on an engine
// that recycles instances and on one that gives every execution a fresh
// instance, and requires the same outcome, output, message and fuel every
// time; stash.wasm and state.wasm must always find a fresh instance.
func TestRecycledSameAsFresh(t *testing.T) {
	ctx := context.Background()
	// Both compile into the tests' shared cache: the 3 MB Go guest takes
	// most of this test's time to compile under the race detector.
	recycled, err := NewEngine(ctx, NewConfig().WithCompilationCacheDir(testenv.CacheDir()))
	require.NoError(t, err)
	defer recycled.Close(ctx)
	fresh, err := NewEngine(ctx, NewConfig().WithoutRecycling().WithCompilationCacheDir(testenv.CacheDir()))
	require.NoError(t, err)
	defer fresh.Close(ctx)

	type pair struct{ r, f Module }
	mods := map[string]pair{}
	for _, c := range recycleCases {
		wasm := recycleFixture(t, c.module)
		r, err := recycled.Load(ctx, wasm)
		require.NoError(t, err, c.module)
		f, err := fresh.Load(ctx, wasm)
		require.NoError(t, err, c.module)
		mods[c.module] = pair{r, f}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 600
	if testenv.Race {
		n = 150 // the race detector makes each execution ~20x slower
	}
	for i := range n {
		c := recycleCases[rng.IntN(len(recycleCases))]
		in := recycleInput(c.inputs[rng.IntN(len(c.inputs))])
		in.Limits = c.limits[rng.IntN(len(c.limits))]
		if in.Limits.TimeoutMs == 0 {
			// The default fuel, and a clock far beyond what it lasts: at
			// the default 1 s clock a loaded machine could stop the two
			// runs of a case at different points (issue 25), and the
			// outcomes compared here must be fuel's alone.
			in.Limits.TimeoutMs = 600_000
			if in.Limits.Fuel == 0 {
				in.Limits.Fuel = DefaultLimits().Fuel
			}
		}
		p := mods[c.module]
		got, err := p.r.Run(ctx, in)
		require.NoError(t, err)
		want, err := p.f.Run(ctx, in)
		require.NoError(t, err)
		what := fmt.Sprintf("execution %d: %s %s %+v", i, c.module, in.Bytes, in.Limits)
		require.Equal(t, want.Kind, got.Kind, what)
		require.Equal(t, string(want.Output), string(got.Output), what)
		require.Equal(t, want.Message, got.Message, what)
		require.Equal(t, want.FuelUsed, got.FuelUsed, what)
		require.Equal(t, string(want.Stderr), string(got.Stderr), what)
		if c.module == "stash.wasm" && got.Kind == Completed {
			require.Equal(t, `{"fresh":true}`, string(got.Output), what)
		}
		if c.module == "state.wasm" && got.Kind == Completed {
			require.Equal(t, stateFresh, string(got.Output), what)
		}
	}

	// Recycling happened: the modules that can be recycled were (sort.wasm,
	// from C, has a private stack pointer global), and those that cannot (a
	// table, which table.grow changes) were not.
	for _, name := range []string{"stash.wasm", "echo.wasm", "sum.wasm", "sort.wasm", "state.wasm"} {
		rec := mods[name].r.(*wazeroModule).recycle
		require.NotNil(t, rec, name)
		assert.Positive(t, rec.reuses.Load(), "%s: no instance was reused", name)
	}
	assert.Nil(t, mods["tablegrow.wasm"].r.(*wazeroModule).recycle, "tablegrow.wasm has a table: never recycled")
}

// TestResetStateIsFresh: an instance returned to the pool holds, in memory
// and in every global, exactly what a freshly instantiated one holds.
func TestResetStateIsFresh(t *testing.T) {
	ctx := context.Background()
	e, err := NewEngine(ctx, NewConfig())
	require.NoError(t, err)
	defer e.Close(ctx)
	for _, name := range []string{"stash.wasm", "echo.wasm", "sum.wasm", "upper.wasm"} {
		t.Run(name, func(t *testing.T) {
			mod, err := e.Load(ctx, recycleFixture(t, name))
			require.NoError(t, err)
			m := mod.(*wazeroModule)
			require.NotNil(t, m.recycle)
			for _, in := range []string{`{}`, `{"numbers":[4,5],"text":"state"}`, `[1,2,3,4,5,6,7,8,9]`} {
				_, err := mod.Run(ctx, recycleInput(in))
				require.NoError(t, err)
			}
			key := poolKey{limit: uint64(DefaultLimits().MemoryPages) * pageSize}
			before := m.recycle.reuses.Load()
			used, err := m.recycle.take(ctx, m, key)
			require.NoError(t, err)
			require.Equal(t, before+1, m.recycle.reuses.Load(), "the instance came from the pool")
			newOne, err := m.recycle.instantiate(ctx, m, key)
			require.NoError(t, err)
			assert.Equal(t, stateDigest(t, newOne), stateDigest(t, used))
			used.close(ctx)
			newOne.close(ctx)
		})
	}
}

// stateDigest digests an instance's memory and the value of every mutable
// global.
func stateDigest(t *testing.T, p *pooledInstance) string {
	t.Helper()
	var b []byte
	if mem := p.mod.Memory(); mem != nil {
		m, ok := mem.Read(0, mem.Size())
		require.True(t, ok)
		b = append(b, m...)
	}
	for _, g := range p.globals {
		b = binary.LittleEndian.AppendUint64(b, g.Get())
	}
	return audit.Digest(b)
}

// recycleJSSource is one JS tool whose operations reach every outcome and
// stash state every way a tool can: module variables, a closure,
// globalThis, prototypes. A fresh instance always answers fresh:true and
// leak:1.
const recycleJSSource = `let calls = 0;
const seen = [];
globalThis.stash = globalThis.stash || { n: 0 };
const counter = (() => { let k = 0; return () => ++k; })();
export function execute(p) {
  calls++; seen.push(p.op); globalThis.stash.n++; const k = counter();
  const fresh = calls === 1 && seen.length === 1 && globalThis.stash.n === 1 && k === 1;
  switch (p.op) {
    case "stash":
      globalThis.leak = (globalThis.leak || 0) + 1;
      Object.prototype.polluted = (Object.prototype.polluted || 0) + 1;
      return { fresh, leak: globalThis.leak, polluted: ({}).polluted };
    case "throw": throw new Error("boom " + calls);
    case "loop": for (;;) {}
    case "alloc": { const a = []; for (;;) a.push(new Array(100000).fill(calls)); }
    case "deep": { const f = (n) => n === 0 ? 0 : 1 + f(n - 1); return { d: f(p.n), fresh }; }
    case "random": return { r: Math.random(), t: Date.now(), fresh };
    case "bigint": return { b: 1n };
    case "reject": return Promise.reject(new Error("no " + calls));
    case "log": console.log("hello", { calls }); return { fresh };
    default: return { fresh, echo: p };
  }
}`

// TestRecycledJSSameAsFresh is TestRecycledSameAsFresh for a JS tool run
// from its snapshot: random sequences on recycled and on fresh instances
// give the same outcome, output, message, log and fuel, and the tool never
// finds state an earlier execution left.
func TestRecycledJSSameAsFresh(t *testing.T) {
	if testenv.Race {
		t.Skip("QuickJS under the race detector is too slow; `make test-wasmtime` runs this without it")
	}
	ctx := context.Background()
	recycled := loadJSTool(t, NewConfig(), recycleJSSource)
	fresh := loadJSTool(t, NewConfig().WithoutRecycling(), recycleJSSource)
	type op struct {
		input string
		lim   Limits
	}
	ops := []op{
		{`{"op":"stash"}`, Limits{}},
		{`{"op":"echo","x":[1,2,3]}`, Limits{}},
		{`{"op":"throw"}`, Limits{}},
		{`{"op":"loop"}`, Limits{Fuel: 20_000_000}},
		{`{"op":"alloc"}`, Limits{MemoryPages: 64}},
		{`{"op":"deep","n":50}`, Limits{}},
		{`{"op":"deep","n":100000}`, Limits{}},
		{`{"op":"random"}`, Limits{}},
		{`{"op":"bigint"}`, Limits{}},
		{`{"op":"reject"}`, Limits{}},
		{`{"op":"log"}`, Limits{}},
		{`{"op":"echo"}`, Limits{MaxOutputBytes: 4}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 120 {
		o := ops[rng.IntN(len(ops))]
		got, err := recycled.run(ctx, o.input, o.lim)
		require.NoError(t, err)
		want, err := fresh.run(ctx, o.input, o.lim)
		require.NoError(t, err)
		what := fmt.Sprintf("execution %d: %s %+v", i, o.input, o.lim)
		require.Equal(t, want.Kind, got.Kind, what)
		require.Equal(t, string(want.Output), string(got.Output), what)
		require.Equal(t, want.Message, got.Message, what)
		require.Equal(t, want.FuelUsed, got.FuelUsed, what)
		require.Equal(t, string(want.Stderr), string(got.Stderr), what)
		if got.Kind == Completed && o.input != `{"op":"bigint"}` {
			assert.Contains(t, string(got.Output), `"fresh":true`, what)
		}
		if o.input == `{"op":"stash"}` {
			assert.Equal(t, `{"fresh":true,"leak":1,"polluted":1}`, string(got.Output), what)
		}
	}
	rec := recycled.r.(wazeroReactor).m.recycle
	require.NotNil(t, rec)
	assert.Positive(t, rec.reuses.Load(), "no instance was reused")

	// An instance returned to the pool holds what a fresh one holds.
	key := poolKey{snap: recycled.snap, limit: uint64(DefaultLimits().MemoryPages) * pageSize}
	m := recycled.r.(wazeroReactor).m
	before := rec.reuses.Load()
	used, err := rec.take(ctx, m, key)
	require.NoError(t, err)
	require.Equal(t, before+1, rec.reuses.Load(), "the instance came from the pool")
	newOne, err := rec.instantiate(ctx, m, key)
	require.NoError(t, err)
	assert.Equal(t, stateDigest(t, newOne), stateDigest(t, used))
	used.close(ctx)
	newOne.close(ctx)
}

// TestSnapshotableRefusesInexactGlobals: a reactor's snapshot keeps 64 bits
// of each global, exact for numbers only; a mutable v128 or reference
// global is refused at admission, saying what to do instead, as is one
// that is not exported.
func TestSnapshotableRefusesInexactGlobals(t *testing.T) {
	v128 := append(append([]byte{0xfd, 12}, make([]byte, 16)...), 0x0b)
	tests := []struct {
		valType  byte
		init     []byte
		exported bool
		want     string
	}{
		{valI32, []byte{0x41, 0, 0x0b}, true, ""},
		{valI64, []byte{0x42, 0, 0x0b}, true, ""},
		{valF32, []byte{0x43, 0, 0, 0, 0, 0x0b}, true, ""},
		{valF64, []byte{0x44, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b}, true, ""},
		{valV128, v128, true, "module not admitted: mutable global 0 has type v128, which a snapshot cannot capture exactly; keep such state in memory or in an i32, i64, f32 or f64 global"},
		{valFuncref, []byte{0xd0, valFuncref, 0x0b}, true, "module not admitted: mutable global 0 has type funcref, which a snapshot cannot capture exactly; keep such state in memory or in an i32, i64, f32 or f64 global"},
		{valExternref, []byte{0xd0, valExternref, 0x0b}, true, "module not admitted: mutable global 0 has type externref, which a snapshot cannot capture exactly; keep such state in memory or in an i32, i64, f32 or f64 global"},
		{valI32, []byte{0x41, 0, 0x0b}, false, "module not admitted: mutable global 0 is not exported, so a snapshot could not capture it"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s exported=%t", valTypeName(tt.valType), tt.exported), func(t *testing.T) {
			global := append([]byte{1, tt.valType, 1}, tt.init...)
			b := append([]byte("\x00asm\x01\x00\x00\x00"), 6, byte(len(global)))
			b = append(b, global...)
			if tt.exported {
				b = append(b, 7, 5, 1, 1, 'g', 3, 0) // export "g" (global 0)
			}
			m, err := wasmbin.Decode(b)
			require.NoError(t, err)
			names, err := snapshotable(m)
			if tt.want == "" {
				require.NoError(t, err)
				assert.Equal(t, []string{"g"}, names)
				return
			}
			require.ErrorIs(t, err, ErrNotAdmitted)
			assert.EqualError(t, err, tt.want)
		})
	}
}

// TestV128ResetBody: the reset function sets each v128 global from its
// initializer's constant; a global whose initializer is anything else
// makes the module not recyclable.
func TestV128ResetBody(t *testing.T) {
	c := append([]byte{0xfd, 12}, make([]byte, 16)...)
	c[2], c[17] = 1, 2
	m := &wasmbin.Module{Globals: []wasmbin.Global{
		{ValType: valI32, Mutable: true, Init: []byte{0x41, 0, 0x0b}},
		{ValType: valV128, Mutable: true, Init: append(c, 0x0b)},
		{ValType: valV128, Mutable: true, Init: []byte{0x23, 0, 0x0b}}, // global.get
	}}
	body, ok := v128ResetBody(m, []uint32{1})
	require.True(t, ok)
	assert.Equal(t, append(append([]byte{0}, c...), 0x24, 1, 0x0b), body, "no locals; v128.const, global.set 1; end")
	_, ok = v128ResetBody(m, []uint32{1, 2})
	assert.False(t, ok)
}
