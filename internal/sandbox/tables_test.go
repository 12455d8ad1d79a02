package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/jshost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// TestTablesShareMemoryPages: tables are charged to memory_pages beside the
// memory, TableElementBytes an element. Tables too large to start are
// MEMORY_EXHAUSTED before anything runs; a table.grow beyond what is left
// fails (-1) as memory.grow does, and the trap it leads to is
// MEMORY_EXHAUSTED; table instructions pay a unit of fuel per element, so
// the fuel limit stops the tables a large budget allows. Every outcome and
// fuel count is the same on every engine.
func TestTablesShareMemoryPages(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		limits  sandbox.Limits
		kind    sandbox.OutcomeKind
		output  string
		message string
		fuel    uint64 // 0: not pinned, but equal on every engine
	}{
		{"a table of one element does not fit beside one page", "tablegrow.wasm", sandbox.Limits{MemoryPages: 1},
			sandbox.MemoryExhausted, "", "memory starts at 1 pages (65536 bytes) and its tables at 1 elements (32 bytes at 32 each); memory_pages allows 1 pages (65536 bytes)", 0},
		{"table.grow stops where memory_pages does", "tablegrow.wasm", sandbox.Limits{MemoryPages: 16},
			sandbox.Completed, `{"elements":30720}`, "", 0},
		{"table.grow stops at the cap when memory_pages allows more", "tablegrow.wasm", sandbox.Limits{MemoryPages: 600},
			sandbox.Completed, `{"elements":1048576}`, "", 0},
		{"a refused table.grow, then a trap", "tablefill.wasm", sandbox.Limits{MemoryPages: 1},
			sandbox.MemoryExhausted, "", "trap (invalid table access) after a memory.grow or table.grow beyond memory_pages was refused", 2097668},
		{"fuel stops what memory_pages allows", "tablefill.wasm", sandbox.Limits{MemoryPages: 65536, Fuel: 5_000_000},
			sandbox.FuelExhausted, "", "fuel exhausted", 5_000_000},
	}
	fuel := map[string]uint64{}
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				mod, err := e.Load(context.Background(), fixture(t, tt.fixture))
				require.NoError(t, err)
				in := input(`{}`)
				in.Limits = tt.limits
				in.Limits.TimeoutMs = 120_000
				out, err := mod.Run(context.Background(), in)
				require.NoError(t, err)
				assert.Equal(t, tt.kind, out.Kind, out.Message)
				assert.Equal(t, tt.output, string(out.Output))
				assert.Contains(t, out.Message, tt.message)
				if tt.fuel != 0 {
					assert.Equal(t, tt.fuel, out.FuelUsed)
				}
				if f, ok := fuel[tt.name]; ok {
					assert.Equal(t, f, out.FuelUsed, "fuel differs between engines")
				}
				fuel[tt.name] = out.FuelUsed
			})
		}
	})
}

// wasmSection assembles a section: id, size, content.
func wasmSection(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
}

// wasmVec assembles a vector of n copies of item.
func wasmVec(n int, item []byte) []byte {
	out := uleb(uint64(n))
	for range n {
		out = append(out, item...)
	}
	return out
}

func uleb(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, c|0x80)
			continue
		}
		return append(out, c)
	}
}

func wasmModule(sections ...[]byte) []byte {
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	for _, s := range sections {
		out = append(out, s...)
	}
	return out
}

// TestAdmissionBoundsGuestCounts: each count an engine allocates for, in
// every instance or when it compiles, is bounded at admission, and the
// refusal names the count and the bound. Each module is the smallest that
// exceeds its bound by one.
func TestAdmissionBoundsGuestCounts(t *testing.T) {
	voidType := wasmSection(1, wasmVec(1, []byte{0x60, 0, 0}))
	tableOf := func(min uint64) []byte { return append([]byte{0x70, 0x00}, uleb(min)...) }
	bodyWithLocals := append(append([]byte{6, 1}, uleb(49_000)...), 0x7f, 0x0b) // size 6: one group of 49,000 i32, end
	tests := []struct {
		name    string
		wasm    []byte
		problem string
	}{
		{"tables", wasmModule(wasmSection(4, wasmVec(101, tableOf(0)))),
			"101 tables; at most 100 are allowed"},
		{"tables' initial sizes together", wasmModule(wasmSection(4, wasmVec(3, tableOf(400_000)))),
			"3 tables start with 1200000 elements in total; at most 1048576 are allowed (33554432 bytes of memory_pages at 32 bytes each)"},
		{"types", wasmModule(wasmSection(1, wasmVec(100_001, []byte{0x60, 0, 0}))),
			"100001 types; at most 100000 are allowed"},
		{"functions", wasmModule(voidType, wasmSection(3, wasmVec(100_001, []byte{0}))),
			"100001 functions; at most 100000 are allowed"},
		{"locals", wasmModule(voidType, wasmSection(3, wasmVec(21, []byte{0})), wasmSection(10, wasmVec(21, bodyWithLocals))),
			"1029000 locals declared by the function bodies together; at most 1000000 are allowed"},
		{"globals", wasmModule(wasmSection(6, wasmVec(10_001, []byte{0x7f, 0, 0x41, 0, 0x0b}))),
			"10001 globals; at most 10000 are allowed"},
		{"element segments", wasmModule(wasmSection(9, wasmVec(10_001, []byte{1, 0, 0}))),
			"10001 element segments; at most 10000 are allowed"},
		{"element entries", wasmModule(wasmSection(9, append([]byte{1, 1, 0}, wasmVec(100_001, []byte{0})...))),
			"100001 entries in the element segments together; at most 100000 are allowed"},
		{"data segments", wasmModule(wasmSection(11, wasmVec(100_001, []byte{1, 0}))),
			"100001 data segments; at most 100000 are allowed"},
		{"the hostile fixture", fixture(t, "refused/big_tables.wasm"),
			"64 tables start with 67108864 elements in total; at most 1048576 are allowed (33554432 bytes of memory_pages at 32 bytes each)"},
	}
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.Load(context.Background(), tt.wasm)
				require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
				assert.Equal(t, "module not admitted: "+tt.problem, err.Error())
			})
		}
	})
}

// TestRealModulesFitTheBounds: the bounds admit what real toolchains emit:
// Go wasip1 (3.3 MB), C with and without SIMD, and QuickJS's engine module
// through its glue; each starts within its own memory_pages, tables
// included. (Admission is the same for every engine; the other tests run
// these modules on each.)
func TestRealModulesFitTheBounds(t *testing.T) {
	for _, name := range []string{"textstats.wasm", "sort.wasm", "floats.wasm"} {
		info, err := sandbox.Inspect(fixture(t, name))
		require.NoError(t, err, name)
		assert.LessOrEqual(t, uint64(info.MemoryMinPages)*65536+info.TableElements*sandbox.TableElementBytes,
			uint64(info.Manifest.Limits.MemoryPages)*65536, "%s starts within its own memory_pages", name)
	}
	r, err := enginetest.Engine(t, sandbox.EngineWazeroInterp).LoadReactor(context.Background(), quickJS(t), jshost.QuickJSGlue())
	require.NoError(t, err)
	assert.Equal(t, uint64(532), r.Info().TableElements, "QuickJS's one table")
}

// ExampleModuleInfo_tables shows what a module's memory and tables take of
// memory_pages before it runs.
func ExampleModuleInfo_tables() {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "testdata", "textstats.wasm"))
	if err != nil {
		panic(err)
	}
	info, err := sandbox.Inspect(wasm)
	if err != nil {
		panic(err)
	}
	fmt.Printf("memory %d pages, tables %d elements: %d bytes of memory_pages\n",
		info.MemoryMinPages, info.TableElements, uint64(info.MemoryMinPages)*65536+info.TableElements*sandbox.TableElementBytes)
	// Output: memory 42 pages, tables 6244 elements: 2952320 bytes of memory_pages
}

// abiModule assembles an ABI v1 module: wg_alloc returns 1024, the output
// is empty, wg_execute runs execute; extra functions (type (i32) -> (i32),
// from index 4) have the given bodies. elemDeclare lists the functions
// ref.func may name.
func abiModule(execute []byte, extra [][]byte, elemDeclare ...byte) []byte {
	types := wasmSection(1, append(uleb(3),
		0x60, 1, 0x7f, 1, 0x7f, // 0: (i32) -> (i32)
		0x60, 2, 0x7f, 0x7f, 1, 0x7f, // 1: (i32 i32) -> (i32)
		0x60, 0, 1, 0x7f)) // 2: () -> (i32)
	funcs := append(uleb(uint64(4+len(extra))), 0, 1, 2, 2)
	for range extra {
		funcs = append(funcs, 0)
	}
	name := func(s string) []byte { return append(uleb(uint64(len(s))), s...) }
	exports := append(uleb(5), name("wg_alloc")...)
	exports = append(exports, 0, 0)
	exports = append(append(exports, name("wg_execute")...), 0, 1)
	exports = append(append(exports, name("wg_output_ptr")...), 0, 2)
	exports = append(append(exports, name("wg_output_len")...), 0, 3)
	exports = append(append(exports, name("memory")...), 2, 0)
	body := func(b []byte) []byte { return append(uleb(uint64(len(b))), b...) }
	code := uleb(uint64(4 + len(extra)))
	code = append(code, body([]byte{0, 0x41, 0x80, 0x08, 0x0b})...)
	code = append(code, body(execute)...)
	code = append(code, body([]byte{0, 0x41, 0, 0x0b})...)
	code = append(code, body([]byte{0, 0x41, 0, 0x0b})...)
	for _, b := range extra {
		code = append(code, body(b)...)
	}
	sections := [][]byte{types, wasmSection(3, funcs), wasmSection(5, []byte{1, 0, 1}), wasmSection(7, exports)}
	if len(elemDeclare) > 0 {
		sections = append(sections, wasmSection(9, append([]byte{1, 3, 0}, append(uleb(uint64(len(elemDeclare))), elemDeclare...)...)))
	}
	return wasmModule(append(sections, wasmSection(10, code))...)
}

// TestGuestCannotAllocateThroughTheEngine: what a guest executes cannot make
// an engine allocate beyond its limits: a million ref.func (46 bytes each
// in wazero's compiler, kept until the instance closes, before they were
// instrumented), or a recursion of frames of 49,000 locals (2.3 GB of
// wazero's interpreter stack for 1000 of them, before large frames counted
// as several calls). Each ends as it does on every engine, with the same
// fuel, and allocates a few MB at most.
func TestGuestCannotAllocateThroughTheEngine(t *testing.T) {
	var locals []byte
	locals = append(locals, uleb(392)...)
	for range 392 {
		locals = append(locals, 125, 0x7e) // 125 i64: 49,000
	}
	recursion := append(locals, // f(n) = n == 0 ? 0 : 1 + f(n-1)
		0x20, 0, 0x45, 0x04, 0x7f, 0x41, 0, 0x05,
		0x41, 1, 0x20, 0, 0x41, 1, 0x6b, 0x10, 4, 0x6a, 0x0b, 0x0b)
	refLoop := []byte{1, 1, 0x7f, // local $n i32
		0x41, 0xc0, 0x84, 0x3d, 0x21, 2, // n = 1,000,000
		0x03, 0x40, 0xd2, 4, 0x1a, // loop: drop (ref.func 4)
		0x20, 2, 0x41, 1, 0x6b, 0x22, 2, 0x0d, 0, 0x0b, // br_if (n = n - 1)
		0x41, 0, 0x0b}
	tests := []struct {
		name    string
		wasm    []byte
		kind    sandbox.OutcomeKind
		message string
	}{
		{"a million ref.func", abiModule(refLoop, [][]byte{{0, 0x41, 0, 0x0b}}, 4), sandbox.Completed, ""},
		{"frames of 49,000 locals", abiModule([]byte{0, 0x41, 0xe8, 0x07, 0x10, 4, 0x1a, 0x41, 0, 0x0b}, [][]byte{recursion}),
			sandbox.StackExhausted, "call depth exceeded 1000"},
	}
	fuel := map[string]uint64{}
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				mod, err := e.Load(context.Background(), tt.wasm)
				require.NoError(t, err)
				in := input(`{}`)
				in.Limits.TimeoutMs = 120_000
				var before, after goruntime.MemStats
				goruntime.ReadMemStats(&before)
				out, err := mod.Run(context.Background(), in)
				goruntime.ReadMemStats(&after)
				require.NoError(t, err)
				assert.Equal(t, tt.kind, out.Kind, out.Message)
				assert.Contains(t, out.Message, tt.message)
				assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes the run allocated")
				if f, ok := fuel[tt.name]; ok {
					assert.Equal(t, f, out.FuelUsed, "fuel differs between engines")
				}
				fuel[tt.name] = out.FuelUsed
			})
		}
	})
}

// TestLocalsLeaveRoomForTheInstrumentation: a function's parameters and
// locals may take 50,000 less the 6 scratch locals the instrumenter may add,
// the limit wasmtime enforces on the function it compiles. At 50,000
// declared locals a module ran on wazero and was refused by wasmtime.
func TestLocalsLeaveRoomForTheInstrumentation(t *testing.T) {
	withLocals := func(n uint64) []byte {
		body := append([]byte{1}, uleb(n)...)
		body = append(body, 0x7e, 0x20, 0, 0x0b) // n i64; local.get 0
		return abiModule([]byte{0, 0x41, 0, 0x10, 4, 0x1a, 0x41, 0, 0x0b}, [][]byte{body})
	}
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		mod, err := e.Load(context.Background(), withLocals(49_993))
		require.NoError(t, err)
		out, err := mod.Run(context.Background(), input(`{}`))
		require.NoError(t, err)
		assert.Equal(t, sandbox.Completed, out.Kind, out.Message)

		_, err = e.Load(context.Background(), withLocals(49_994))
		require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
		assert.Contains(t, err.Error(), "function body 4 declares more than 49993 locals: with its 1 parameters and the 6 the instrumentation may add, engines allow 50000")
	})
}
