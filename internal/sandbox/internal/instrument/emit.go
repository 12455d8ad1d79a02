package instrument

import (
	"bytes"
	"fmt"
	"math"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
)

// emit writes the instrumented module into st.out and returns a copy of
// exactly its size: the output's size is only known at the end (it is
// typically 1.4 to 1.9 times the input's), and the copy costs less than
// growing a buffer would.
func (m *module) emit(st *state) ([]byte, error) {
	in := m.in
	out := st.out[:0]
	if want := 2*len(in) + 64; cap(out) < want {
		out = make([]byte, 0, want)
	}
	defer func() { st.out = out[:0] }()
	// The code comes first: the ref.func table and its segment, which
	// precede it in the module, hold what the bodies turn out to name.
	var code []byte
	if m.sec[secCode].present {
		var err error
		if code, err = m.code(st, st.code[:0]); err != nil {
			return nil, err
		}
		defer func() { st.code = code[:0] }()
	}
	out = append(out, magic...)
	for _, id := range sectionOrder {
		s := m.sec[id]
		var err error
		switch id {
		case secType:
			if !s.present {
				continue
			}
			if len(m.newTypes) == 0 {
				out = append(out, in[s.off:s.end]...)
				continue
			}
			var at int
			out, at = beginSection(out, id)
			rest := m.afterCount(s)
			out = leb128.AppendUint32(out, uint32(len(m.types)+len(m.newTypes)))
			out = append(out, rest...)
			for _, ft := range m.newTypes {
				out = append(out, 0x60)
				out = leb128.AppendUint32(out, uint32(len(ft.params)))
				out = append(out, ft.params...)
				out = leb128.AppendUint32(out, uint32(len(ft.results)))
				out = append(out, ft.results...)
			}
			out, err = endSection(out, at)
		case secGlobal:
			var at int
			out, at = beginSection(out, id)
			out = leb128.AppendUint32(out, uint32(len(m.globals)-m.nGlobImps+6))
			if s.present {
				out = append(out, m.afterCount(s)...)
			}
			// wg_fuel: mut i64 = 0; wg_depth: mut i32 = 0; wg_reserve: mut i64 = 0;
			// wg_grow_failed: mut i64 = 0; wg_budget: mut i64 = MaxInt64;
			// wg_over_budget: mut i32 = 0.
			out = append(out, tI64, 1, 0x42, 0, 0x0b, tI32, 1, 0x41, 0, 0x0b, tI64, 1, 0x42, 0, 0x0b, tI64, 1, 0x42, 0, 0x0b)
			out = append(out, tI64, 1, 0x42)
			out = leb128.AppendInt64(out, math.MaxInt64)
			out = append(out, 0x0b, tI32, 1, 0x41, 0, 0x0b)
			out, err = endSection(out, at)
		case secExport:
			var at int
			out, at = beginSection(out, id)
			n := m.nExports + 6
			if m.start >= 0 {
				n++
			}
			if m.hasMemory() {
				n++
			}
			out = leb128.AppendUint32(out, uint32(n))
			if s.present {
				out = append(out, m.afterCount(s)...)
			}
			out = appendExport(out, FuelGlobal, 3, m.fuelGlobal)
			out = appendExport(out, DepthGlobal, 3, m.depthGlobal)
			out = appendExport(out, ReserveGlobal, 3, m.reserveGlobal)
			out = appendExport(out, GrowFailedGlobal, 3, m.growGlobal)
			out = appendExport(out, BudgetGlobal, 3, m.budgetGlobal)
			out = appendExport(out, OverBudgetGlobal, 3, m.overGlobal)
			if m.start >= 0 {
				out = appendExport(out, StartExport, 0, uint32(m.start))
			}
			if m.hasMemory() {
				out = appendExport(out, MemoryExport, 2, 0)
			}
			out, err = endSection(out, at)
		case secFunction:
			if m.nCode == 0 {
				if s.present {
					out = append(out, in[s.off:s.end]...)
				}
				continue
			}
			var at int
			out, at = beginSection(out, id)
			out = leb128.AppendUint32(out, uint32(len(m.funcs)-m.nFuncImps+1))
			out = append(out, m.afterCount(s)...)
			out = leb128.AppendUint32(out, m.refillType)
			out, err = endSection(out, at)
		case secMemory:
			switch {
			case s.present:
				out = append(out, in[s.off:s.end]...)
			case m.nMems == 0 && m.nCode > 0:
				// The refill's memory.grow needs a memory: an empty one
				// that can never grow, which nothing else can name.
				out = append(out, secMemory, 4, 1, 0x01, 0, 0)
			}
		case secTable:
			if len(m.refFuncs) == 0 {
				if s.present {
					out = append(out, in[s.off:s.end]...)
				}
				continue
			}
			var at int
			out, at = beginSection(out, id)
			out = leb128.AppendUint32(out, uint32(len(m.tables)-m.nTableImps+1))
			if s.present {
				out = append(out, m.afterCount(s)...)
			}
			out = append(out, tFuncref, 0x01)
			out = leb128.AppendUint32(out, uint32(len(m.refFuncs)))
			out = leb128.AppendUint32(out, uint32(len(m.refFuncs)))
			out, err = endSection(out, at)
		case secElement:
			if len(m.refFuncs) == 0 {
				if s.present {
					out = append(out, in[s.off:s.end]...)
				}
				continue
			}
			// Active, explicit table, offset 0, function indices.
			var at int
			out, at = beginSection(out, id)
			out = leb128.AppendUint32(out, uint32(len(m.elemTypes)+1))
			if s.present {
				out = append(out, m.afterCount(s)...)
			}
			out = append(out, 0x02)
			out = leb128.AppendUint32(out, m.refTable)
			out = append(out, 0x41, 0, 0x0b, 0x00)
			out = leb128.AppendUint32(out, uint32(len(m.refFuncs)))
			for _, f := range m.refFuncs {
				out = leb128.AppendUint32(out, f)
			}
			out, err = endSection(out, at)
		case secStart:
			// Removed: the host calls StartExport once the fuel budget is set.
		case secCode:
			if !s.present {
				continue
			}
			var at int
			out, at = beginSection(out, id)
			out = append(out, code...)
			out, err = endSection(out, at)
		default:
			if s.present {
				out = append(out, in[s.off:s.end]...)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return bytes.Clone(out), nil
}

// hasMemory reports whether the instrumented module has a memory: its own,
// or the empty one the refill needs.
func (m *module) hasMemory() bool { return m.nMems > 0 || m.nCode > 0 }

// afterCount returns a vector section's payload after its element count.
func (m *module) afterCount(s section) []byte {
	_, n := leb128.Uint32(m.in, s.start)
	return m.in[s.start+n : s.end]
}

func appendExport(out []byte, name string, kind byte, idx uint32) []byte {
	out = leb128.AppendUint32(out, uint32(len(name)))
	out = append(out, name...)
	out = append(out, kind)
	return leb128.AppendUint32(out, idx)
}

// beginSection reserves room for the largest size encoding; endSection
// writes the actual size and closes the gap.
func beginSection(out []byte, id byte) ([]byte, int) {
	out = append(out, id, 0, 0, 0, 0, 0)
	return out, len(out)
}

func endSection(out []byte, at int) ([]byte, error) {
	size := len(out) - at
	if size > math.MaxUint32 {
		return nil, &instrumentError{fn: -1, offset: 0, msg: "instrumented section exceeds 4 GiB"}
	}
	n := leb128.Uint32Len(uint32(size))
	leb128.AppendUint32(out[:at-5], uint32(size))
	copy(out[at-5+n:], out[at:])
	return out[:len(out)-(5-n)], nil
}

// state is the scratch memory of one Instrument call, pooled so that
// instrumenting many modules allocates little.
type state struct {
	out       []byte // the module being written
	code      []byte // the code section's content, written first
	vals      []byte // operand stack types
	ctrls     []ctrl
	charges   []charge
	w         []byte // instructions of the body being rewritten
	locals    []byte // type of every local, parameters first
	newLocals []byte
}

// ctrl is a control frame. It holds no pointers, so that pushing one costs
// no write barrier and the stack of them is no work for the collector.
type ctrl struct {
	bt          uint32 // block type: see blockSig
	height      int    // operand stack height at the start of the frame
	kind        byte
	unreachable bool
	// targeted: a branch goes to the frame's end, which makes the code
	// after it a join point.
	targeted bool
}

// Block types: 0x40 (none), a value type (one result), or typeBase plus a
// type index.
const typeBase = 0x100

// charge is one fuel check in st.w, whose cost is known only when its basic
// block ends; until then its constant is a 5-byte placeholder.
type charge struct {
	at, slot, end int
	cost          int64
	// pred is, for the charge of the fallthrough after a forward br_if,
	// the charge of the block the br_if ends (else -1): a short fallthrough
	// is paid for by that charge instead (see foldShortFallthroughs).
	pred int
}

const (
	kindFunc = 0
	opBlock  = 0x02
	opLoop   = 0x03
	opIf     = 0x04
	opElse   = 0x05
	opEnd    = 0x0b
)

// code rewrites the code section.
func (m *module) code(st *state, out []byte) ([]byte, error) {
	s := m.sec[secCode]
	in := m.in[:s.end]
	count, n := leb128.Uint32(in, s.start)
	if count == 0 {
		return leb128.AppendUint32(out, 0), nil
	}
	out = leb128.AppendUint32(out, count+1)
	pos := s.start + n
	f := &fn{m: m, st: st}
	for i := 0; i < int(count); i++ {
		idx := m.nFuncImps + i
		size, n := leb128.Uint32(in, pos)
		if n == 0 {
			return nil, &instrumentError{fn: idx, offset: pos, msg: "malformed body size"}
		}
		pos += n
		if int64(size) > int64(len(in)-pos) {
			return nil, &instrumentError{fn: idx, offset: pos - n, msg: fmt.Sprintf("body of %d bytes runs past the code section", size)}
		}
		var err error
		if out, err = f.rewrite(out, idx, pos, pos+int(size)); err != nil {
			return nil, err
		}
		pos += int(size)
	}
	if pos != s.end {
		return nil, &instrumentError{fn: -1, offset: pos, msg: fmt.Sprintf("code section has %d bytes left over", s.end-pos)}
	}
	return m.appendRefill(out), nil
}

// Slice is how much fuel the guest spends between two refills.
const Slice = 1 << 20

// appendRefill appends the body of the refill function, which the slow path
// of a fuel charge calls with the slice counter it went negative with:
//
//	(func $refill (param $t i64)
//	  i32.const 0  memory.grow 0  drop      ;; an exit to the engine
//	  global.get $reserve  local.get $t  i64.add  local.set $t
//	  local.get $t  i64.const Slice  i64.gt_s
//	  if
//	    local.get $t  i64.const Slice  i64.sub  global.set $reserve
//	    i64.const Slice  global.set $fuel
//	  else
//	    local.get $t  i64.const 0  i64.lt_s  if unreachable end
//	    i64.const 0  global.set $reserve
//	    local.get $t  global.set $fuel
//	  end)
//
// The memory.grow of zero pages changes nothing, but an engine running
// compiled code handles it outside the guest (wazero: on its Go side), where
// a scheduler can preempt the thread: compiled guest code never yields by
// itself, and without such a point a host timer could not run while every
// thread runs guests. A trap here (unreachable) leaves the fuel global
// negative and the reserve as it was, so their sum is what the budget is
// short by; the host drives the reserve far below zero to stop a guest.
func (m *module) appendRefill(out []byte) []byte {
	var b []byte
	b = append(b, 0) // no locals
	b = append(b, 0x41, 0, 0x40, 0, 0x1a)
	b = append(b, 0x23)
	b = leb128.AppendUint32(b, m.reserveGlobal)
	b = append(b, 0x20, 0, 0x7c, 0x21, 0)
	b = append(b, 0x20, 0, 0x42)
	b = leb128.AppendInt64(b, Slice)
	b = append(b, 0x55, 0x04, 0x40)
	b = append(b, 0x20, 0, 0x42)
	b = leb128.AppendInt64(b, Slice)
	b = append(b, 0x7d, 0x24)
	b = leb128.AppendUint32(b, m.reserveGlobal)
	b = append(b, 0x42)
	b = leb128.AppendInt64(b, Slice)
	b = append(b, 0x24)
	b = leb128.AppendUint32(b, m.fuelGlobal)
	b = append(b, 0x05)
	b = append(b, 0x20, 0, 0x42, 0, 0x53, 0x04, 0x40, 0x00, 0x0b)
	b = append(b, 0x42, 0, 0x24)
	b = leb128.AppendUint32(b, m.reserveGlobal)
	b = append(b, 0x20, 0, 0x24)
	b = leb128.AppendUint32(b, m.fuelGlobal)
	b = append(b, 0x0b, 0x0b)
	out = leb128.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}
