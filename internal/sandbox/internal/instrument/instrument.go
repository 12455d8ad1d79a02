// Package instrument rewrites a WebAssembly 2.0 module so that the host can
// meter and bound its execution identically on every engine: an instruction
// budget (fuel), a call-depth limit, a start function the host runs under that
// budget, and optionally canonical NaNs.
//
// Engines differ in how far they let a guest run or recurse and in the NaN
// bits their floating-point units produce; none of that may change an
// executor's outcome, so the limits live in the guest's own code, where
// every engine executes them the same way.
//
// The instrumenter validates the module as the WebAssembly 2.0 spec does
// (every section, and every function body in the same single pass that
// rewrites it), so that what it accepts the engine accepts; where wazero is
// laxer than the spec, the spec wins. The output differs from the input only
// by the injected code.
package instrument

import (
	"fmt"
	"sync"
)

// Version is bumped whenever the output for a given input changes; caches key on it.
const Version = 4

// Exported names the instrumented module gains.
const (
	FuelGlobal  = "wg_fuel"  // mutable i64, initial value 0: the host sets the budget after instantiation and reads what is left
	DepthGlobal = "wg_depth" // mutable i32, initial 0: current call depth
	StartExport = "wg_start" // the module's former start function, if it had one
	// ReserveGlobal: mutable i64, initial 0: the budget beyond the current
	// slice in FuelGlobal; the guest refills the slice from it every Slice
	// units. The budget left is FuelGlobal + ReserveGlobal.
	ReserveGlobal = "wg_reserve"
	// GrowFailedGlobal: mutable i64, initial 0: the largest memory size, in
	// pages, that a failed memory.grow asked for, counting only sizes within
	// the memory's own maximum (65536 pages without one). A host that caps
	// memory below that maximum learns from it, after the run, whether a
	// grow failed because of its cap (the value exceeds the cap) — without a
	// callback from the engine.
	GrowFailedGlobal = "wg_grow_failed"
	// MemoryExport: the module's memory, exported under a name the host
	// knows whatever the module exports: an engine whose host functions see
	// only exported memories (wasmtime) sees what wazero shows them.
	MemoryExport = "wg_memory"
	// BudgetGlobal: mutable i64, initial MaxInt64 (no budget): the bytes the
	// guest may still add to its memory and tables. A memory.grow costs
	// 65536 bytes a page, a table.grow TableElementBytes an element; a grow
	// that costs more than is left fails (returns -1) without reaching the
	// engine, one that succeeds is subtracted. The host sets it after
	// instantiation to its limit less what the instance already holds.
	BudgetGlobal = "wg_budget"
	// OverBudgetGlobal: mutable i32, initial 0: set to 1 by a memory.grow or
	// table.grow that failed because of BudgetGlobal and would have been
	// within the memory's or table's own maximum, so that the host can tell
	// a failure its limit caused from one the module's own declarations did.
	OverBudgetGlobal = "wg_over_budget"
)

// TableElementBytes is what one table element costs of BudgetGlobal.
const TableElementBytes = 1 << tableShift

// FrameSlots is how large a function's frame may be and still count as one
// call against MaxCallDepth: a frame of parameters, locals and operand stack
// (8-byte slots; a v128 local takes two) larger than that counts as
// ceil(slots/FrameSlots) calls, so that the depth limit bounds the stack's
// size and not only its height.
const FrameSlots = 256

// Costs in fuel.
//
// Every instruction of the original module costs 1, except the purely
// structural block, loop, else and end, which cost 0: they compile to no
// machine code, and every loop iteration still pays for the branch that
// repeats it. Instructions the instrumenter adds cost nothing.
//
// Work that scales with an operand is charged by that operand, before the
// instruction runs (so also when it then fails):
//   - memory.grow costs 1 + GrowCostPerPage per page requested: a new page is
//     64 KiB that the engine zeroes, at the same rate as BulkBytesPerFuel;
//   - memory.fill, memory.copy, memory.init cost 1 + n/BulkBytesPerFuel for
//     n bytes: a bulk copy moves about 64 bytes in the time a simple
//     instruction takes, so a byte loop written by hand is never cheaper than
//     the bulk instruction;
//   - table.fill, table.copy, table.init and table.grow cost 1 + n for n
//     elements: engines move a table element in about the time of a simple
//     instruction (0.2-0.3 ns measured on every engine), not 64 of them.
const (
	BulkBytesPerFuel = 1 << bulkShift
	GrowCostPerPage  = 1 << growShift

	bulkShift = 6
	growShift = 10
	// pageShift and tableShift scale a grow's operand to bytes of
	// BudgetGlobal.
	pageShift  = 16
	tableShift = 5
)

// Options select what Instrument injects.
type Options struct {
	// MaxCallDepth: a call that would make the depth exceed it traps.
	// Deterministic across engines. Zero disables depth counting: the
	// DepthGlobal export stays 0 and recursion is bounded by the engine only.
	MaxCallDepth uint32
	// CanonicalizeNaN: every float result that can be NaN becomes the
	// canonical NaN (f32 0x7fc00000, f64 0x7ff8000000000000).
	CanonicalizeNaN bool
}

// Instrument rewrites a module (as produced by wasmbin's ForEngine: custom
// sections, if any, are dropped) and returns the new binary.
//
// # Notes
//
// The output keeps every function, global, type, table, element segment and
// memory index of the input: new globals come after the existing ones, new
// types after the existing ones, new locals after a function's own, the
// ref.func table after the module's tables and its segment after the
// module's segments. The start section is removed; its function is exported
// as StartExport.
//
// A fuel charge subtracts a basic block's static cost from FuelGlobal before
// the block runs and traps with unreachable when the result is negative.
// Charges sit at function entry, at every loop header, at the start of then
// and else arms, after every end that branches join (an if's; a block's that
// a branch targets) and after every br_if. The host tells an out-of-fuel
// trap from the guest's own traps by reading FuelGlobal: it is negative
// after one and never after any other. A host that stops a run by storing a
// negative value into FuelGlobal must keep it above -2^62 so that later
// charges cannot wrap around to positive.
//
// Every memory.grow that fails records the size it asked for in
// GrowFailedGlobal (see there), so that a host whose engine cannot report a
// refused grow learns of it from the guest's own code, like everything else
// here. Every memory.grow and table.grow is checked against BudgetGlobal
// first (see there): memory and tables share one budget, which no engine's
// own limits can express.
//
// ref.func becomes a table.get from a table the instrumenter adds after the
// module's own, which an active element segment fills with every function
// the code names: the same reference, made once per instance (wazero's
// compiler allocates a new one at every ref.func it executes, and keeps it
// until the instance closes).
//
// Every function counts itself into DepthGlobal on entry and out on every
// exit: its body is wrapped in a block whose end all returns and branches
// out reach. A function whose frame exceeds FrameSlots counts as several
// calls. A call that makes the depth exceed MaxCallDepth traps, leaving
// DepthGlobal above it, which no other trap does. A trap (or proc_exit)
// unwinds no counter: an instance used again after one needs DepthGlobal
// reset to 0.
//
// # Errors
//
// A malformed or invalid module, or one that uses a feature outside
// WebAssembly 2.0 (threads, tail calls, exceptions, relaxed SIMD, ...).
// Errors name the function index (in the function index space, imports
// first) and the byte offset in wasm, e.g.
// "function 12 at offset 0x1a2b: unknown opcode 0xfc 0x20".
func Instrument(wasm []byte, opts Options) ([]byte, error) {
	out, _, err := InstrumentFacts(wasm, opts)
	return out, err
}

// Facts are what instrumenting learnt about a module's code.
type Facts struct {
	// StateIsMemoryAndGlobals: no function body holds table.set,
	// table.grow, table.fill, table.copy, table.init, elem.drop or
	// data.drop, so what an execution can change in an instance is its
	// linear memory (and its size) and its globals, nothing else: its
	// tables and segments stay as instantiation left them.
	StateIsMemoryAndGlobals bool
}

// InstrumentFacts is Instrument, with what it learnt of the code.
func InstrumentFacts(wasm []byte, opts Options) ([]byte, Facts, error) {
	st := statePool.Get().(*state)
	defer statePool.Put(st)
	m := &module{in: wasm, opts: opts}
	if err := m.decode(); err != nil {
		return nil, Facts{}, err
	}
	out, err := m.emit(st)
	if err != nil {
		return nil, Facts{}, err
	}
	return out, Facts{StateIsMemoryAndGlobals: !m.changesSegments}, nil
}

var statePool = sync.Pool{New: func() any { return new(state) }}

// instrumentError says why a module was refused, and where.
type instrumentError struct {
	fn     int // function index, or -1 outside function bodies
	offset int
	msg    string
}

func (e *instrumentError) Error() string {
	if e.fn >= 0 {
		return fmt.Sprintf("function %d at offset %#x: %s", e.fn, e.offset, e.msg)
	}
	return fmt.Sprintf("offset %#x: %s", e.offset, e.msg)
}

// Value types; unknown is the bottom type of unreachable code.
const (
	tUnknown   byte = 0
	tI32       byte = 0x7f
	tI64       byte = 0x7e
	tF32       byte = 0x7d
	tF64       byte = 0x7c
	tV128      byte = 0x7b
	tFuncref   byte = 0x70
	tExternref byte = 0x6f
)

func isValType(t byte) bool {
	switch t {
	case tI32, tI64, tF32, tF64, tV128, tFuncref, tExternref:
		return true
	}
	return false
}

func isRefType(t byte) bool { return t == tFuncref || t == tExternref }

func typeName(t byte) string {
	switch t {
	case tUnknown:
		return "unknown"
	case tI32:
		return "i32"
	case tI64:
		return "i64"
	case tF32:
		return "f32"
	case tF64:
		return "f64"
	case tV128:
		return "v128"
	case tFuncref:
		return "funcref"
	case tExternref:
		return "externref"
	}
	return fmt.Sprintf("type 0x%02x", t)
}

// single holds a one-element type list for every value type, so that block
// types need no allocation.
var single [256][]byte

func init() {
	for _, t := range []byte{tI32, tI64, tF32, tF64, tV128, tFuncref, tExternref} {
		single[t] = []byte{t}
	}
}
