package instrument

import (
	"bytes"
	"fmt"
	"math"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
)

// fn validates and rewrites one function body at a time. Validation is the
// algorithm of the spec's appendix (an operand stack of types and a stack of
// control frames); rewriting copies the input through and inserts code at
// the points the fuel, depth and NaN rules name.
type fn struct {
	m   *module
	st  *state
	in  []byte // the module, cut at the end of the current body
	pos int
	idx int // function index, for errors
	op  int // offset of the current instruction, for errors
	err error

	copied int // input before this offset is already in st.w
	// cur is the charge that pays for the current basic block, -1 in code
	// that cannot run; acc counts the instructions not yet added to it.
	cur int
	acc int64

	depth, canon bool
	scratch      [wasmbin.ReservedLocals]uint32 // local index per scratch type (and a second i32), noLocal until used
	nLocals      uint32

	// frameSlots counts the parameters and locals in 8-byte slots, maxVals
	// the operand stack's greatest height; depthCharge is the placeholder
	// (in st.charges) of the depth entry's increment, which depends on both.
	frameSlots  uint64
	maxVals     int
	depthCharge int
}

const noLocal = math.MaxUint32

func scratchSlot(t byte) int {
	switch t {
	case tI64:
		return 0
	case tI32:
		return 1
	case tF32:
		return 2
	case tF64:
		return 3
	}
	return 4
}

// local returns the scratch local of type t, declaring it on first use.
func (f *fn) local(t byte) uint32 { return f.scratchLocal(scratchSlot(t), t) }

// secondI32 is a second scratch i32, for code that needs two at once.
func (f *fn) secondI32() uint32 { return f.scratchLocal(5, tI32) }

func (f *fn) scratchLocal(s int, t byte) uint32 {
	if f.scratch[s] == noLocal {
		f.scratch[s] = f.nLocals + uint32(len(f.st.newLocals))
		f.st.newLocals = append(f.st.newLocals, t)
	}
	return f.scratch[s]
}

func (f *fn) fail(format string, args ...any) {
	if f.err == nil {
		f.err = &instrumentError{fn: f.idx, offset: f.op, msg: fmt.Sprintf(format, args...)}
	}
}

func (f *fn) u32() uint32 {
	v, n := leb128.Uint32(f.in, f.pos)
	if n == 0 {
		f.fail("malformed or truncated immediate")
		return 0
	}
	f.pos += n
	return v
}

func (f *fn) byte() byte {
	if f.pos >= len(f.in) {
		f.fail("unexpected end of function body")
		return 0
	}
	b := f.in[f.pos]
	f.pos++
	return b
}

func (f *fn) zeroByte(what string) {
	if b := f.byte(); b != 0 && f.err == nil {
		f.fail("%s: expected a zero byte, got 0x%02x (multiple memories are not supported)", what, b)
	}
}

func (f *fn) skip(n int) {
	if n > len(f.in)-f.pos {
		f.fail("unexpected end of function body")
		return
	}
	f.pos += n
}

// --- operand stack -----------------------------------------------------

func (f *fn) push(t byte) {
	f.st.vals = append(f.st.vals, t)
	f.maxVals = max(f.maxVals, len(f.st.vals))
}

func (f *fn) pushVals(ts []byte) {
	f.st.vals = append(f.st.vals, ts...)
	f.maxVals = max(f.maxVals, len(f.st.vals))
}

func (f *fn) pop() byte {
	st := f.st
	c := &st.ctrls[len(st.ctrls)-1]
	if len(st.vals) == c.height {
		if !c.unreachable {
			f.fail("type mismatch: the instruction needs an operand, the stack is empty")
		}
		return tUnknown
	}
	t := st.vals[len(st.vals)-1]
	st.vals = st.vals[:len(st.vals)-1]
	return t
}

func (f *fn) popT(want byte) byte {
	st := f.st
	if n := len(st.vals); n > st.ctrls[len(st.ctrls)-1].height && st.vals[n-1] == want {
		st.vals = st.vals[:n-1]
		return want
	}
	t := f.pop()
	if t != want && t != tUnknown && want != tUnknown {
		f.fail("type mismatch: expected %s, got %s", typeName(want), typeName(t))
	}
	return t
}

func (f *fn) popVals(ts []byte) {
	for i := len(ts) - 1; i >= 0; i-- {
		f.popT(ts[i])
	}
}

// peekVals checks that the stack ends with ts, leaving it unchanged.
func (f *fn) peekVals(ts []byte) {
	st := f.st
	c := &st.ctrls[len(st.ctrls)-1]
	for i := 0; i < len(ts); i++ {
		want := ts[len(ts)-1-i]
		p := len(st.vals) - 1 - i
		if p < c.height {
			if !c.unreachable {
				f.fail("type mismatch: the branch needs %d operands", len(ts))
			}
			return
		}
		if got := st.vals[p]; got != want && got != tUnknown {
			f.fail("type mismatch: expected %s, got %s", typeName(want), typeName(got))
			return
		}
	}
}

// blockSig returns the operand and result types of a block type.
func (f *fn) blockSig(bt uint32) (params, results []byte) {
	switch {
	case bt >= typeBase:
		ft := &f.m.types[bt-typeBase]
		return ft.params, ft.results
	case bt == 0x40:
		return nil, nil
	}
	return nil, single[bt]
}

func (f *fn) pushCtrl(kind byte, bt uint32) {
	st := f.st
	st.ctrls = append(st.ctrls, ctrl{bt: bt, height: len(st.vals), kind: kind})
	params, _ := f.blockSig(bt)
	f.pushVals(params)
}

func (f *fn) popCtrl() ctrl {
	st := f.st
	c := st.ctrls[len(st.ctrls)-1]
	_, results := f.blockSig(c.bt)
	f.popVals(results)
	if len(st.vals) != c.height {
		f.fail("type mismatch: %d values left on the stack at the end of the block", len(st.vals)-c.height)
	}
	st.ctrls = st.ctrls[:len(st.ctrls)-1]
	return c
}

// labelTypes is what a branch to the frame carries: a loop's operands,
// another block's results.
func (f *fn) labelTypes(c *ctrl) []byte {
	params, results := f.blockSig(c.bt)
	if c.kind == opLoop {
		return params
	}
	return results
}

// label reads a label index and returns its frame.
func (f *fn) label() *ctrl {
	l := f.u32()
	n := len(f.st.ctrls)
	if uint64(l) >= uint64(n) {
		f.fail("unknown label %d", l)
		return &f.st.ctrls[n-1]
	}
	return &f.st.ctrls[n-1-int(l)]
}

// unreachable marks the rest of the current block as dead: the stack
// becomes polymorphic and the basic block ends.
func (f *fn) unreachable() {
	st := f.st
	c := &st.ctrls[len(st.ctrls)-1]
	st.vals = st.vals[:c.height]
	c.unreachable = true
	f.closeBlock()
	f.cur = -1
}

func (f *fn) blockType() uint32 {
	if f.pos >= len(f.in) {
		f.fail("unexpected end of function body")
		return 0x40
	}
	b := f.in[f.pos]
	if b == 0x40 || isValType(b) {
		f.pos++
		return uint32(b)
	}
	v, n := leb128.Int(f.in, f.pos, 33)
	if n == 0 || v < 0 {
		f.fail("malformed block type")
		return 0x40
	}
	if v >= int64(len(f.m.types)) {
		f.fail("block type: type %d does not exist", v)
		return 0x40
	}
	f.pos += n
	return typeBase + uint32(v)
}

func (f *fn) memarg(align byte) {
	a := f.u32()
	f.u32() // offset
	if f.m.nMems == 0 {
		f.fail("memory instruction without a memory")
	}
	if a > uint32(align) && f.err == nil {
		f.fail("alignment 2^%d is larger than natural (2^%d)", a, align)
	}
}

func (f *fn) table() uint32 {
	t := f.u32()
	if int(t) >= len(f.m.tables) && f.err == nil {
		f.fail("table %d does not exist", t)
		return 0
	}
	return t
}

func (f *fn) tableType(t uint32) byte {
	if int(t) < len(f.m.tables) {
		return f.m.tables[t]
	}
	return tUnknown
}

// --- output ------------------------------------------------------------

// flush copies the input up to offset to.
func (f *fn) flush(to int) {
	f.st.w = append(f.st.w, f.in[f.copied:to]...)
	f.copied = to
}

func (f *fn) closeBlock() {
	if f.cur >= 0 {
		f.st.charges[f.cur].cost += f.acc
	}
	f.acc = 0
}

// newCharge starts a basic block at the current output position, with a
// fuel charge whose cost is filled in when the function is finished:
//
//	global.get $fuel; i64.const cost; i64.sub; local.tee $t64; global.set $fuel
//	local.get $t64; i64.const 0; i64.lt_s; if; local.get $t64; call $refill; end
func (f *fn) newCharge() {
	f.closeBlock()
	m, st := f.m, f.st
	t64 := f.scratch[0]
	c := charge{at: len(st.w), pred: -1}
	w := append(st.w, 0x23)
	w = leb128.AppendUint32(w, m.fuelGlobal)
	w = append(w, 0x42)
	c.slot = len(w)
	w = append(w, 0, 0, 0, 0, 0, 0x7d, 0x22)
	w = leb128.AppendUint32(w, t64)
	w = append(w, 0x24)
	w = leb128.AppendUint32(w, m.fuelGlobal)
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, t64)
	w = f.appendSlowPath(w, t64)
	c.end = len(w)
	st.w = w
	st.charges = append(st.charges, c)
	f.cur = len(st.charges) - 1
}

// chargeDynamic charges for the i32 operand on top of the stack, shifted
// left (memory.grow: pages) or right (bulk memory instructions: bytes), or
// as it is (shift 0: table elements), before the instruction at f.op runs:
//
//	local.tee $t32; global.get $fuel; local.get $t32; i64.extend_i32_u
//	[i64.const shift; i64.shl|i64.shr_u]; i64.sub; local.tee $t64; global.set $fuel
//	local.get $t64; i64.const 0; i64.lt_s; if; local.get $t64; call $refill; end
func (f *fn) chargeDynamic(shiftOp byte, shift byte) {
	if f.cur < 0 || f.err != nil {
		return
	}
	f.flush(f.op)
	m := f.m
	t32, t64 := f.local(tI32), f.scratch[0]
	w := append(f.st.w, 0x22)
	w = leb128.AppendUint32(w, t32)
	w = append(w, 0x23)
	w = leb128.AppendUint32(w, m.fuelGlobal)
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, t32)
	w = append(w, 0xad)
	if shift != 0 {
		w = append(w, 0x42, shift, shiftOp)
	}
	w = append(w, 0x7d, 0x22)
	w = leb128.AppendUint32(w, t64)
	w = append(w, 0x24)
	w = leb128.AppendUint32(w, m.fuelGlobal)
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, t64)
	f.st.w = f.appendSlowPath(w, t64)
}

// appendSlowPath appends the test after a charge, with the new slice
// counter on the stack: when it went negative, the refill function takes
// the next slice from the reserve or traps (see module.appendRefill).
//
//	i64.const 0; i64.lt_s; if; local.get $t64; call $refill; end
func (f *fn) appendSlowPath(w []byte, t64 uint32) []byte {
	w = append(w, 0x42, 0, 0x53, 0x04, 0x40, 0x20)
	w = leb128.AppendUint32(w, t64)
	w = append(w, 0x10)
	w = leb128.AppendUint32(w, f.m.refillFunc)
	return append(w, 0x0b)
}

// guardGrow wraps the memory.grow or table.grow at f.op, whose operand
// (pages or elements) chargeDynamic left in $t32, in the budget check: a
// grow that costs more than BudgetGlobal holds is given an operand no
// memory or table can grow by (0xffffffff), so that it fails as the spec
// lets any grow fail; one that succeeds is subtracted from the budget. A
// failure is recorded in OverBudgetGlobal when the budget caused it within
// the memory's or table's own maximum, and for memory.grow also in
// GrowFailedGlobal (see there):
//
//	memory.size | table.size $x; i64.extend_i32_u; local.get $t32; i64.extend_i32_u; i64.add; local.set $t64
//	drop; i32.const -1; local.get $t32; <cost>; global.get $budget; i64.gt_u; select
//	memory.grow 0 | table.grow $x
//	local.tee $r32; i32.const -1; i32.eq
//	if
//	  <cost>; global.get $budget; i64.gt_u; local.get $t64; i64.const max; i64.le_u; i32.and
//	  if; i32.const 1; global.set $over; end
//	  [memory.grow: local.get $t64; i64.const memMax; i64.le_u; local.get $t64; global.get $grow; i64.gt_u; i32.and
//	   if; local.get $t64; global.set $grow; end]
//	else
//	  global.get $budget; <cost>; i64.sub; global.set $budget
//	end
//	local.get $r32
//
// where <cost> is local.get $t32; i64.extend_i32_u; i64.const shift; i64.shl:
// the operand in bytes.
func (f *fn) guardGrow(table bool, x uint32) {
	if f.cur < 0 || f.err != nil {
		return
	}
	m := f.m
	t32, t64, r32 := f.local(tI32), f.scratch[0], f.secondI32()
	shift, max := byte(pageShift), uint64(m.memMax)
	if table {
		shift, max = tableShift, m.tableMax[x]
	}
	cost := func(w []byte) []byte {
		w = append(w, 0x20)
		w = leb128.AppendUint32(w, t32)
		return append(w, 0xad, 0x42, shift, 0x86)
	}
	w := f.st.w
	if table {
		w = append(w, 0xfc, 16)
		w = leb128.AppendUint32(w, x)
	} else {
		w = append(w, 0x3f, 0)
	}
	w = append(w, 0xad, 0x20)
	w = leb128.AppendUint32(w, t32)
	w = append(w, 0xad, 0x7c, 0x21)
	w = leb128.AppendUint32(w, t64)
	w = append(w, 0x1a, 0x41, 0x7f, 0x20)
	w = leb128.AppendUint32(w, t32)
	w = cost(w)
	w = append(w, 0x23)
	w = leb128.AppendUint32(w, m.budgetGlobal)
	w = append(w, 0x56, 0x1b)
	f.st.w = w
	f.flush(f.pos) // the grow itself
	w = append(f.st.w, 0x22)
	w = leb128.AppendUint32(w, r32)
	w = append(w, 0x41, 0x7f, 0x46, 0x04, 0x40)
	w = cost(w)
	w = append(w, 0x23)
	w = leb128.AppendUint32(w, m.budgetGlobal)
	w = append(w, 0x56, 0x20)
	w = leb128.AppendUint32(w, t64)
	w = append(w, 0x42)
	w = leb128.AppendInt64(w, int64(max))
	w = append(w, 0x58, 0x71, 0x04, 0x40, 0x41, 1, 0x24)
	w = leb128.AppendUint32(w, m.overGlobal)
	w = append(w, 0x0b)
	if !table {
		w = append(w, 0x20)
		w = leb128.AppendUint32(w, t64)
		w = append(w, 0x42)
		w = leb128.AppendInt64(w, int64(m.memMax))
		w = append(w, 0x58, 0x20)
		w = leb128.AppendUint32(w, t64)
		w = append(w, 0x23)
		w = leb128.AppendUint32(w, m.growGlobal)
		w = append(w, 0x56, 0x71, 0x04, 0x40, 0x20)
		w = leb128.AppendUint32(w, t64)
		w = append(w, 0x24)
		w = leb128.AppendUint32(w, m.growGlobal)
		w = append(w, 0x0b)
	}
	w = append(w, 0x05, 0x23)
	w = leb128.AppendUint32(w, m.budgetGlobal)
	w = cost(w)
	w = append(w, 0x7d, 0x24)
	w = leb128.AppendUint32(w, m.budgetGlobal)
	w = append(w, 0x0b, 0x20)
	w = leb128.AppendUint32(w, r32)
	f.st.w = w
}

// refFunc replaces the ref.func of function x at f.op by a read of its slot
// in the ref.func table (see Instrument):
//
//	i32.const slot; table.get $refs
func (f *fn) refFunc(x uint32) {
	f.flush(f.op)
	w := append(f.st.w, 0x41)
	w = leb128.AppendInt64(w, int64(f.m.refSlotOf(x)))
	w = append(w, 0x25)
	f.st.w = leb128.AppendUint32(w, f.m.refTable)
	f.copied = f.pos
}

func (f *fn) chargeBulk() { f.chargeDynamic(0x88, bulkShift) }

// chargeElements charges a table instruction one unit per element.
func (f *fn) chargeElements() { f.chargeDynamic(0, 0) }

// Canonical NaNs, as they appear in a little-endian constant.
var (
	nanF32 = []byte{0x00, 0x00, 0xc0, 0x7f}
	nanF64 = []byte{0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x7f}
)

// canonScalar replaces a NaN result of type t on top of the stack by the
// canonical NaN, without a branch:
//
//	local.tee $x; f32.const nan; local.get $x; local.get $x; f32.eq; select
func (f *fn) canonScalar(t byte) {
	if f.cur < 0 || f.err != nil {
		return
	}
	f.flush(f.pos)
	x := f.local(t)
	w := append(f.st.w, 0x22)
	w = leb128.AppendUint32(w, x)
	eq := byte(0x5b)
	if t == tF32 {
		w = append(w, 0x43)
		w = append(w, nanF32...)
	} else {
		w = append(w, 0x44)
		w = append(w, nanF64...)
		eq = 0x61
	}
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, x)
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, x)
	f.st.w = append(w, eq, 0x1b)
}

// canonVector does the same lane by lane (lanes of type t):
//
//	local.tee $v; v128.const nan*; local.get $v; local.get $v; f32x4.eq; v128.bitselect
func (f *fn) canonVector(t byte) {
	if f.cur < 0 || f.err != nil {
		return
	}
	f.flush(f.pos)
	x := f.local(tV128)
	w := append(f.st.w, 0x22)
	w = leb128.AppendUint32(w, x)
	w = append(w, 0xfd, 0x0c)
	eq := byte(0x41)
	if t == tF32 {
		for i := 0; i < 4; i++ {
			w = append(w, nanF32...)
		}
	} else {
		w = append(w, nanF64...)
		w = append(w, nanF64...)
		eq = 0x47
	}
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, x)
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, x)
	f.st.w = append(w, 0xfd, eq, 0xfd, 0x52)
}

// --- the body ----------------------------------------------------------

// rewrite validates and instruments the body of function idx, in[start:end],
// and appends it (size first) to out.
func (f *fn) rewrite(out []byte, idx, start, end int) ([]byte, error) {
	m, st := f.m, f.st
	*f = fn{m: m, st: st, in: m.in[:end], pos: start, idx: idx, op: start,
		depth: m.opts.MaxCallDepth > 0, canon: m.opts.CanonicalizeNaN}
	for i := range f.scratch {
		f.scratch[i] = noLocal
	}
	ft := m.types[m.funcs[idx]]

	// Locals.
	st.locals = append(st.locals[:0], ft.params...)
	f.frameSlots = slotsOf(ft.params)
	groups := f.u32()
	groupsAt := f.pos
	declared := 0
	for g := uint32(0); g < groups && f.err == nil; g++ {
		f.op = f.pos
		n := f.u32()
		t := f.byte()
		if f.err != nil {
			break
		}
		if !isValType(t) {
			f.fail("unknown value type 0x%02x", t)
			break
		}
		if uint64(len(ft.params))+uint64(declared)+uint64(n) > wasmbin.MaxLocals-wasmbin.ReservedLocals {
			f.fail("more than %d locals with the parameters (the instrumentation may add %d, and engines allow %d)",
				wasmbin.MaxLocals-wasmbin.ReservedLocals, wasmbin.ReservedLocals, wasmbin.MaxLocals)
			break
		}
		declared += int(n)
		f.frameSlots += uint64(n) * slotsOfType(t)
		for i := uint32(0); i < n; i++ {
			st.locals = append(st.locals, t)
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	groupsEnd := f.pos
	f.nLocals = uint32(len(st.locals))

	st.w, st.charges, st.newLocals = st.w[:0], st.charges[:0], st.newLocals[:0]
	st.vals, st.ctrls = st.vals[:0], st.ctrls[:0]
	f.copied = f.pos
	f.local(tI64)
	f.cur = -1
	if f.depth {
		f.enterDepth()
	}
	f.newCharge()
	if f.depth {
		// The wrapper block takes the function's label, so that every
		// return and branch out of the body passes the depth decrement.
		w := append(st.w, opBlock)
		switch len(ft.results) {
		case 0:
			w = append(w, 0x40)
		case 1:
			w = append(w, ft.results[0])
		default:
			w = leb128.AppendInt64(w, int64(m.wrapperType[m.funcs[idx]]))
		}
		st.w = w
	}
	// The function's frame: only its results matter.
	st.ctrls = append(st.ctrls, ctrl{bt: typeBase + m.funcs[idx], kind: kindFunc})

	if err := f.body(); err != nil {
		return nil, err
	}
	if f.pos != end {
		f.op = f.pos
		f.fail("%d bytes after the end of the function body", end-f.pos)
		return nil, f.err
	}
	return f.finish(out, groups, m.in[groupsAt:groupsEnd]), nil
}

// enterDepth counts the call, as weight calls (see FrameSlots), and traps
// past the limit:
//
//	global.get $depth; i32.const weight; i32.add; local.tee $t32; global.set $depth
//	local.get $t32; i32.const max; i32.gt_u; if; unreachable; end
//
// The weight depends on the operand stack, known at the end of the body: it
// is a placeholder until then, filled in as a charge's cost is (it is never
// zero, so never dropped).
func (f *fn) enterDepth() {
	m := f.m
	t32 := f.local(tI32)
	w := append(f.st.w, 0x23)
	w = leb128.AppendUint32(w, m.depthGlobal)
	w = append(w, 0x41)
	f.st.charges = append(f.st.charges, charge{at: len(w), slot: len(w), end: len(w) + 5, cost: 1, pred: -1})
	f.depthCharge = len(f.st.charges) - 1
	w = append(w, 0, 0, 0, 0, 0, 0x6a, 0x22)
	w = leb128.AppendUint32(w, t32)
	w = append(w, 0x24)
	w = leb128.AppendUint32(w, m.depthGlobal)
	w = append(w, 0x20)
	w = leb128.AppendUint32(w, t32)
	w = append(w, 0x41)
	w = leb128.AppendInt64(w, int64(int32(m.opts.MaxCallDepth)))
	f.st.w = append(w, 0x4b, 0x04, 0x40, 0x00, 0x0b)
}

// leaveDepth: global.get $depth; i32.const weight; i32.sub; global.set $depth
//
// It comes after the body's last instruction, when the weight is known, and
// settles enterDepth's placeholder.
func (f *fn) leaveDepth() {
	weight := f.frameWeight()
	f.st.charges[f.depthCharge].cost = weight
	w := append(f.st.w, 0x23)
	w = leb128.AppendUint32(w, f.m.depthGlobal)
	w = append(w, 0x41)
	w = leb128.AppendInt64(w, weight)
	w = append(w, 0x6b, 0x24)
	f.st.w = leb128.AppendUint32(w, f.m.depthGlobal)
}

// frameWeight is how many calls the function's frame counts as: one per
// FrameSlots slots of parameters, locals and operand stack, at least one.
func (f *fn) frameWeight() int64 {
	slots := f.frameSlots + uint64(f.maxVals)
	return int64(max(1, (slots+FrameSlots-1)/FrameSlots))
}

// slotsOf counts value types in 8-byte slots.
func slotsOf(ts []byte) uint64 {
	var n uint64
	for _, t := range ts {
		n += slotsOfType(t)
	}
	return n
}

func slotsOfType(t byte) uint64 {
	if t == tV128 {
		return 2
	}
	return 1
}

// finish appends the body: its size, the locals (the function's own, then
// the scratch ones) and the instructions, with each charge's placeholder
// replaced by its cost, or the whole charge dropped when the cost is zero.
func (f *fn) finish(out []byte, groups uint32, localGroups []byte) []byte {
	st := f.st
	foldShortFallthroughs(st.charges)
	var hdr [16]byte
	h := leb128.AppendUint32(hdr[:0], groups+uint32(len(st.newLocals)))
	size := len(h) + len(localGroups) + 2*len(st.newLocals) + len(st.w)
	for _, c := range st.charges {
		if c.cost == 0 {
			size -= c.end - c.at
		} else {
			size += leb128.Int64Len(c.cost) - 5
		}
	}
	out = leb128.AppendUint32(out, uint32(size))
	out = append(out, h...)
	out = append(out, localGroups...)
	for _, t := range st.newLocals {
		out = append(out, 1, t)
	}
	prev := 0
	for _, c := range st.charges {
		if c.cost == 0 {
			out = append(out, st.w[prev:c.at]...)
			prev = c.end
			continue
		}
		out = append(out, st.w[prev:c.slot]...)
		out = leb128.AppendInt64(out, c.cost)
		prev = c.slot + 5
	}
	return append(out, st.w[prev:]...)
}

// MaxFoldedCost bounds the fallthrough after a forward br_if that is paid
// for by the charge before the br_if instead of a charge of its own. A loop
// written as "block; loop; ...; br_if 1 (exit); ...; br 0" then pays one
// charge per iteration instead of two — on the tightest loops, a charge
// costs about as much as the loop body. The price is determinism-neutral:
// when the branch is taken, up to MaxFoldedCost units are charged for
// instructions that do not run.
const MaxFoldedCost = 16

// foldShortFallthroughs moves the cost of every short fallthrough charge
// into the charge before its br_if and drops it (a zero-cost charge is not
// emitted). Charges come in code order, so a predecessor is settled before
// the charges that fold into it.
func foldShortFallthroughs(charges []charge) {
	for i := range charges {
		c := &charges[i]
		if c.pred < 0 || c.cost == 0 || c.cost > MaxFoldedCost {
			continue
		}
		into := c.pred
		for charges[into].cost == 0 && charges[into].pred >= 0 {
			// The predecessor was folded itself: pay at its payer.
			into = charges[into].pred
		}
		if charges[into].cost == 0 {
			continue // a dropped charge cannot pay
		}
		charges[into].cost += c.cost
		c.cost = 0
	}
}

// body runs over the instructions up to the function's final end.
func (f *fn) body() error {
	m, st := f.m, f.st
	for f.err == nil {
		if f.pos >= len(f.in) {
			f.op = f.pos
			f.fail("unexpected end of function body (missing end)")
			break
		}
		f.op = f.pos
		op := f.in[f.pos]
		f.pos++
		f.acc++
		switch op {
		case 0x00: // unreachable
			f.unreachable()
		case 0x01: // nop
		case opBlock, opLoop:
			f.acc--
			bt := f.blockType()
			params, _ := f.blockSig(bt)
			f.popVals(params)
			f.pushCtrl(op, bt)
			if op == opLoop {
				f.flush(f.pos)
				f.newCharge()
			}
		case opIf:
			bt := f.blockType()
			params, _ := f.blockSig(bt)
			f.popT(tI32)
			f.popVals(params)
			f.pushCtrl(opIf, bt)
			f.flush(f.pos)
			f.newCharge()
		case opElse:
			f.acc--
			if st.ctrls[len(st.ctrls)-1].kind != opIf {
				f.fail("else without if")
				break
			}
			c := f.popCtrl()
			f.pushCtrl(opElse, c.bt)
			st.ctrls[len(st.ctrls)-1].targeted = c.targeted
			f.flush(f.pos)
			f.newCharge()
		case opEnd:
			f.acc--
			c := f.popCtrl()
			params, results := f.blockSig(c.bt)
			if c.kind == opIf && !bytes.Equal(params, results) {
				f.fail("type mismatch: an if without else must leave its parameters as results")
			}
			if len(st.ctrls) == 0 {
				f.closeBlock()
				if f.depth {
					f.flush(f.op)
					st.w = append(st.w, opEnd)
					f.leaveDepth()
					st.w = append(st.w, opEnd)
					f.copied = f.pos
				} else {
					f.flush(f.pos)
				}
				return f.err
			}
			f.pushVals(results)
			// The code after a loop is reached only by falling out of its
			// last block, and after an untargeted block only by falling
			// through: both continue the current basic block.
			if c.kind == opIf || c.kind == opElse || (c.kind == opBlock && c.targeted) {
				f.flush(f.pos)
				f.newCharge()
			}
		case 0x0c: // br
			c := f.label()
			f.popVals(f.labelTypes(c))
			c.targeted = true
			f.unreachable()
		case 0x0d: // br_if
			c := f.label()
			f.popT(tI32)
			lt := f.labelTypes(c)
			f.popVals(lt)
			f.pushVals(lt)
			c.targeted = true
			f.flush(f.pos)
			pred := f.cur
			f.newCharge()
			if c.kind != opLoop && pred >= 0 {
				// A forward br_if (a break): its fallthrough is the usual
				// path, and may be folded into the charge before it.
				f.st.charges[f.cur].pred = pred
			}
		case 0x0e: // br_table
			f.brTable()
		case 0x0f: // return
			f.popVals(f.labelTypes(&st.ctrls[0]))
			if f.depth {
				f.flush(f.op)
				st.w = append(st.w, 0x0c)
				st.w = leb128.AppendUint32(st.w, uint32(len(st.ctrls)-1))
				f.copied = f.pos
			}
			f.unreachable()
		case 0x10: // call
			x := f.u32()
			if int(x) >= len(m.funcs) {
				f.fail("call: function %d does not exist", x)
				break
			}
			ft := &m.types[m.funcs[x]]
			f.popVals(ft.params)
			f.pushVals(ft.results)
		case 0x11: // call_indirect
			ti := f.u32()
			t := f.table()
			if f.err != nil {
				break
			}
			if int(ti) >= len(m.types) {
				f.fail("call_indirect: type %d does not exist", ti)
				break
			}
			if m.tables[t] != tFuncref {
				f.fail("call_indirect: table %d is not a funcref table", t)
				break
			}
			ft := &m.types[ti]
			f.popT(tI32)
			f.popVals(ft.params)
			f.pushVals(ft.results)
		case 0x1a: // drop
			f.pop()
		case 0x1b: // select
			f.popT(tI32)
			t1, t2 := f.pop(), f.pop()
			if isRefType(t1) || isRefType(t2) {
				f.fail("type mismatch: select without a type needs numeric or vector operands")
				break
			}
			if t1 != t2 && t1 != tUnknown && t2 != tUnknown {
				f.fail("type mismatch: select of %s and %s", typeName(t2), typeName(t1))
				break
			}
			if t1 == tUnknown {
				t1 = t2
			}
			f.push(t1)
		case 0x1c: // select t
			if n := f.u32(); n != 1 && f.err == nil {
				f.fail("select: %d types, want 1", n)
				break
			}
			t := f.byte()
			if f.err == nil && !isValType(t) {
				f.fail("select: unknown value type 0x%02x", t)
				break
			}
			f.popT(tI32)
			f.popT(t)
			f.popT(t)
			f.push(t)
		case 0x20: // local.get
			x := f.u32()
			if int64(x) >= int64(f.nLocals) {
				f.fail("local %d does not exist", x)
				break
			}
			f.push(st.locals[x])
		case 0x21, 0x22: // local.set, local.tee
			x := f.u32()
			if int64(x) >= int64(f.nLocals) {
				f.fail("local %d does not exist", x)
				break
			}
			f.popT(st.locals[x])
			if op == 0x22 {
				f.push(st.locals[x])
			}
		case 0x23, 0x24: // global.get, global.set
			x := f.u32()
			if int(x) >= len(m.globals) {
				f.fail("global %d does not exist", x)
				break
			}
			g := m.globals[x]
			if op == 0x23 {
				f.push(g.t)
				break
			}
			if !g.mut {
				f.fail("global.set: global %d is immutable", x)
				break
			}
			f.popT(g.t)
		case 0x25: // table.get
			t := f.table()
			f.popT(tI32)
			f.push(f.tableType(t))
		case 0x26: // table.set
			f.m.changesSegments = true
			t := f.table()
			f.popT(f.tableType(t))
			f.popT(tI32)
		case 0x3f: // memory.size
			f.zeroByte("memory.size")
			if m.nMems == 0 {
				f.fail("memory.size without a memory")
			}
			f.push(tI32)
		case 0x40: // memory.grow
			f.zeroByte("memory.grow")
			if m.nMems == 0 {
				f.fail("memory.grow without a memory")
			}
			f.popT(tI32)
			f.push(tI32)
			f.chargeDynamic(0x86, growShift)
			f.guardGrow(false, 0)
		case 0x41:
			f.signed(32)
			f.push(tI32)
		case 0x42:
			f.signed(64)
			f.push(tI64)
		case 0x43:
			f.skip(4)
			f.push(tF32)
		case 0x44:
			f.skip(8)
			f.push(tF64)
		case 0xd0: // ref.null
			t := f.byte()
			if f.err == nil && !isRefType(t) {
				f.fail("ref.null: 0x%02x is not a reference type", t)
				break
			}
			f.push(t)
		case 0xd1: // ref.is_null
			if t := f.pop(); t != tUnknown && !isRefType(t) {
				f.fail("type mismatch: ref.is_null of %s", typeName(t))
				break
			}
			f.push(tI32)
		case 0xd2: // ref.func
			x := f.u32()
			if int(x) >= len(m.funcs) {
				f.fail("ref.func: function %d does not exist", x)
				break
			}
			if !m.declared(x) {
				f.fail("ref.func: undeclared function reference %d", x)
				break
			}
			f.push(tFuncref)
			f.refFunc(x)
		case 0xfc:
			f.prefixFC()
		case 0xfd:
			f.prefixFD()
		case 0xfe:
			sub := f.u32()
			f.fail("opcode 0xfe 0x%x (threads) is not supported", sub)
		default:
			switch {
			case op >= 0x28 && op <= 0x3e:
				mo := &memOps[op-0x28]
				f.memarg(mo.align)
				if mo.store {
					f.popT(mo.t)
					f.popT(tI32)
				} else {
					f.popT(tI32)
					f.push(mo.t)
				}
			case op >= 0x45 && op <= 0xc4:
				no := &numeric[op]
				if no.n == 2 {
					f.popT(no.b)
				}
				f.popT(no.a)
				f.push(no.out)
				if no.nan != 0 && f.canon {
					f.canonScalar(no.nan)
				}
			default:
				if name, ok := unsupported[op]; ok {
					f.fail("opcode 0x%02x %s is not supported", op, name)
				} else {
					f.fail("unknown opcode 0x%02x", op)
				}
			}
		}
	}
	return f.err
}

func (f *fn) signed(bits uint) {
	_, n := leb128.Int(f.in, f.pos, bits)
	if n == 0 {
		f.fail("malformed or truncated integer constant")
		return
	}
	f.pos += n
}

func (f *fn) brTable() {
	n := f.u32()
	if f.err != nil {
		return
	}
	if uint64(n) > uint64(len(f.in)-f.pos) {
		f.fail("br_table of %d labels does not fit in the body", n)
		return
	}
	// The default label comes last but decides the arity every other label
	// must have, so the labels are read twice.
	labels := f.pos
	for i := uint32(0); i < n && f.err == nil; i++ {
		f.u32()
	}
	def := f.label()
	if f.err != nil {
		return
	}
	end := f.pos
	f.popT(tI32)
	arity := len(f.labelTypes(def))
	f.pos = labels
	for i := uint32(0); i < n && f.err == nil; i++ {
		c := f.label()
		lt := f.labelTypes(c)
		if len(lt) != arity {
			f.fail("type mismatch: br_table labels of different arities (%d and %d)", len(lt), arity)
			return
		}
		f.peekVals(lt)
		c.targeted = true
	}
	f.pos = end
	f.popVals(f.labelTypes(def))
	def.targeted = true
	f.unreachable()
}

// prefixFC: saturating truncation, bulk memory and table instructions.
func (f *fn) prefixFC() {
	m := f.m
	sub := f.u32()
	if f.err != nil {
		return
	}
	switch sub {
	case 0, 1, 2, 3, 4, 5, 6, 7:
		o := &satTrunc[sub]
		f.popT(o.a)
		f.push(o.out)
	case 8: // memory.init
		d := f.u32()
		f.zeroByte("memory.init")
		f.dataIndex(d)
		if m.nMems == 0 {
			f.fail("memory.init without a memory")
		}
		f.pop3I32()
		f.chargeBulk()
	case 9: // data.drop
		f.m.changesSegments = true
		f.dataIndex(f.u32())
	case 10: // memory.copy
		f.zeroByte("memory.copy")
		f.zeroByte("memory.copy")
		if m.nMems == 0 {
			f.fail("memory.copy without a memory")
		}
		f.pop3I32()
		f.chargeBulk()
	case 11: // memory.fill
		f.zeroByte("memory.fill")
		if m.nMems == 0 {
			f.fail("memory.fill without a memory")
		}
		f.pop3I32()
		f.chargeBulk()
	case 12: // table.init
		f.m.changesSegments = true
		e := f.u32()
		t := f.table()
		if f.err != nil {
			return
		}
		if int(e) >= len(m.elemTypes) {
			f.fail("table.init: element segment %d does not exist", e)
			return
		}
		if m.elemTypes[e] != m.tables[t] {
			f.fail("type mismatch: table.init of %s elements into a %s table", typeName(m.elemTypes[e]), typeName(m.tables[t]))
			return
		}
		f.pop3I32()
		f.chargeElements()
	case 13: // elem.drop
		f.m.changesSegments = true
		if e := f.u32(); int(e) >= len(m.elemTypes) && f.err == nil {
			f.fail("elem.drop: element segment %d does not exist", e)
		}
	case 14: // table.copy
		f.m.changesSegments = true
		dst := f.table()
		src := f.table()
		if f.err != nil {
			return
		}
		if m.tables[dst] != m.tables[src] {
			f.fail("type mismatch: table.copy from a %s table to a %s table", typeName(m.tables[src]), typeName(m.tables[dst]))
			return
		}
		f.pop3I32()
		f.chargeElements()
	case 15: // table.grow
		f.m.changesSegments = true
		t := f.table()
		f.popT(tI32)
		f.popT(f.tableType(t))
		f.push(tI32)
		f.chargeElements()
		f.guardGrow(true, t)
	case 16: // table.size
		f.table()
		f.push(tI32)
	case 17: // table.fill
		f.m.changesSegments = true
		t := f.table()
		f.popT(tI32)
		f.popT(f.tableType(t))
		f.popT(tI32)
		f.chargeElements()
	default:
		f.fail("unknown opcode 0xfc 0x%x", sub)
	}
}

func (f *fn) pop3I32() {
	f.popT(tI32)
	f.popT(tI32)
	f.popT(tI32)
}

func (f *fn) dataIndex(d uint32) {
	if f.err != nil {
		return
	}
	if f.m.dataCount < 0 {
		f.fail("data count section required")
		return
	}
	if int64(d) >= int64(f.m.dataCount) {
		f.fail("data segment %d does not exist", d)
	}
}

// prefixFD: SIMD.
func (f *fn) prefixFD() {
	sub := f.u32()
	if f.err != nil {
		return
	}
	if sub > 0xff {
		if sub <= 0x113 {
			f.fail("opcode 0xfd 0x%x (relaxed SIMD) is not supported", sub)
		} else {
			f.fail("unknown opcode 0xfd 0x%x", sub)
		}
		return
	}
	o := &simdOps[sub]
	switch o.imm {
	case simdNone:
	case simdMem:
		f.memarg(o.align)
	case simdMemLane:
		f.memarg(o.align)
		if l := f.byte(); l >= o.lanes && f.err == nil {
			f.fail("lane index %d out of range (%d lanes)", l, o.lanes)
		}
	case simdLane:
		if l := f.byte(); l >= o.lanes && f.err == nil {
			f.fail("lane index %d out of range (%d lanes)", l, o.lanes)
		}
	case simdConst:
		f.skip(16)
	case simdShuffle:
		for i := 0; i < 16 && f.err == nil; i++ {
			if l := f.byte(); l >= 32 && f.err == nil {
				f.fail("shuffle lane index %d out of range", l)
			}
		}
	default:
		f.fail("unknown opcode 0xfd 0x%x", sub)
		return
	}
	for i := int(o.n) - 1; i >= 0; i-- {
		f.popT(o.in[i])
	}
	if o.out != 0 {
		f.push(o.out)
	}
	if o.nan != 0 && f.canon {
		f.canonVector(o.nan)
	}
}
