package instrument

import (
	"bytes"
	"fmt"
	"math"
	"slices"
)

// Section IDs and their required order (data count sits between element and
// code).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
)

var sectionOrder = [...]byte{secType, secImport, secFunction, secTable, secMemory, secGlobal,
	secExport, secStart, secElement, secDataCount, secCode, secData}

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory",
	"global", "export", "start", "element", "code", "data", "data count"}

func sectionRank(id byte) int {
	for i, s := range sectionOrder {
		if s == id {
			return i + 1
		}
	}
	return 0
}

// maxPages is the largest 32-bit memory, in 64 KiB pages.
const maxPages = 65536

var magic = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

type funcType struct {
	params, results []byte
}

type globalType struct {
	t   byte
	mut bool
}

type section struct {
	present    bool
	off        int // of the id byte
	start, end int // payload
}

// module is what the module-level sections say, decoded and validated.
type module struct {
	in   []byte
	opts Options
	sec  [13]section

	types     []funcType
	funcs     []uint32 // type index of every function, imports first
	nFuncImps int
	tables    []byte // reference type of every table, imports first
	// tableMax is every table's own maximum (2^32-1 without one), and
	// nTableImps the number of imported tables.
	tableMax   []uint64
	nTableImps int
	nMems      int
	// memMax is the memory's own maximum in pages (maxPages without one):
	// a memory.grow beyond it fails whatever the host allows.
	memMax    uint32
	globals   []globalType // imports first
	nGlobImps int
	elemTypes []byte // reference type of every element segment
	dataCount int    // -1 without a data count section
	nData     int
	nCode     int
	start     int      // -1 without a start function
	refs      []uint64 // bit set of the functions ref.func may name
	nExports  int
	// changesSegments is set by a body that holds table.set, table.grow,
	// table.fill, table.copy, table.init, elem.drop or data.drop: code
	// that can change an instance's state beyond its memory and globals.
	changesSegments bool

	// wrapperType is, for a type index with several results, the index of a
	// type () -> results, for the block that wraps function bodies.
	wrapperType   map[uint32]uint32
	newTypes      []funcType
	fuelGlobal    uint32
	depthGlobal   uint32
	reserveGlobal uint32
	growGlobal    uint32
	budgetGlobal  uint32
	overGlobal    uint32
	// refillFunc is the function the slow path of a fuel charge calls, and
	// refillType its type, (i64) -> (); both are appended after the module's
	// own when it has code.
	refillFunc uint32
	refillType uint32
	// refTable is the index of the table that replaces ref.func: refFuncs
	// lists the functions it holds, refSlot where each is.
	refTable uint32
	refFuncs []uint32
	refSlot  map[uint32]uint32
}

func (m *module) decode() error {
	in := m.in
	if len(in) < 4 || !bytes.Equal(in[:4], magic[:4]) {
		return &instrumentError{fn: -1, offset: 0, msg: "not a wasm binary (bad magic)"}
	}
	if len(in) < 8 || !bytes.Equal(in[4:8], magic[4:]) {
		return &instrumentError{fn: -1, offset: 4, msg: "unsupported binary version (want 1)"}
	}
	m.dataCount, m.start = -1, -1
	pos := 8
	last := 0
	for pos < len(in) {
		off := pos
		id := in[pos]
		size, n := readU32(in, pos+1)
		if n == 0 {
			return &instrumentError{fn: -1, offset: pos + 1, msg: "malformed section size"}
		}
		pos += 1 + n
		if int64(size) > int64(len(in)-pos) {
			return &instrumentError{fn: -1, offset: off, msg: fmt.Sprintf("section %d of %d bytes runs past the end", id, size)}
		}
		start, end := pos, pos+int(size)
		pos = end
		r := &reader{in: in[:end], pos: start}
		if id == secCustom {
			r.name()
			if r.err != nil {
				return r.err
			}
			continue
		}
		rank := sectionRank(id)
		if rank == 0 {
			return &instrumentError{fn: -1, offset: off, msg: fmt.Sprintf("unknown section id %d", id)}
		}
		if rank <= last {
			return &instrumentError{fn: -1, offset: off, msg: fmt.Sprintf("%s section out of order or repeated", sectionNames[id])}
		}
		last = rank
		m.sec[id] = section{present: true, off: off, start: start, end: end}
		m.decodeSection(id, r)
		if r.err == nil && r.pos != end {
			r.failAt(r.pos, "%d bytes left over", end-r.pos)
		}
		if e, ok := r.err.(*instrumentError); ok {
			e.msg = sectionNames[id] + " section: " + e.msg
			return e
		}
	}
	if n := len(m.funcs) - m.nFuncImps; n != m.nCode {
		return &instrumentError{fn: -1, offset: m.sec[secCode].off,
			msg: fmt.Sprintf("function and code section have inconsistent lengths: %d functions, %d bodies", n, m.nCode)}
	}
	if m.dataCount >= 0 && m.dataCount != m.nData {
		return &instrumentError{fn: -1, offset: m.sec[secDataCount].off,
			msg: fmt.Sprintf("data count %d does not match the %d data segments", m.dataCount, m.nData)}
	}
	m.planAdditions()
	return nil
}

func (m *module) decodeSection(id byte, r *reader) {
	switch id {
	case secType:
		n := r.vecLen(3)
		m.types = make([]funcType, 0, n)
		for i := uint32(0); i < n && r.err == nil; i++ {
			off := r.pos
			if form := r.byte(); form != 0x60 && r.err == nil {
				r.failAt(off, "type %d: unsupported form 0x%02x", i, form)
				return
			}
			ft := funcType{params: m.valTypes(r), results: m.valTypes(r)}
			m.types = append(m.types, ft)
		}
	case secImport:
		n := r.vecLen(4)
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.name()
			r.name()
			off := r.pos
			switch kind := r.byte(); kind {
			case 0:
				m.funcs = append(m.funcs, m.typeIndex(r))
				m.nFuncImps++
			case 1:
				m.tables = append(m.tables, m.tableType(r))
				m.nTableImps++
			case 2:
				m.memType(r)
			case 3:
				m.globals = append(m.globals, m.globalType(r))
				m.nGlobImps++
			case 4:
				r.failAt(off, "import %d: tags (exception handling) are not supported", i)
			default:
				r.failAt(off, "import %d: unknown kind 0x%02x", i, kind)
			}
		}
	case secFunction:
		n := r.vecLen(1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.funcs = append(m.funcs, m.typeIndex(r))
		}
	case secTable:
		n := r.vecLen(3)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.tables = append(m.tables, m.tableType(r))
		}
	case secMemory:
		n := r.vecLen(2)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.memType(r)
		}
	case secGlobal:
		n := r.vecLen(3)
		for i := uint32(0); i < n && r.err == nil; i++ {
			g := m.globalType(r)
			m.constExpr(r, g.t)
			m.globals = append(m.globals, g)
		}
	case secExport:
		m.exports(r)
	case secStart:
		off := r.pos
		idx := r.u32()
		if r.err != nil {
			return
		}
		if int(idx) >= len(m.funcs) {
			r.failAt(off, "start function %d does not exist", idx)
			return
		}
		if ft := m.types[m.funcs[idx]]; len(ft.params) != 0 || len(ft.results) != 0 {
			r.failAt(off, "start function %d must take and return nothing", idx)
			return
		}
		m.start = int(idx)
	case secElement:
		n := r.vecLen(2)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.elementSegment(r, i)
		}
	case secDataCount:
		m.dataCount = int(r.u32())
	case secCode:
		// Bodies are decoded when the module is emitted; only the count is
		// needed before.
		m.nCode = int(r.vecLen(1))
		r.pos = len(r.in)
	case secData:
		n := r.vecLen(2)
		m.nData = int(n)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.dataSegment(r, i)
		}
	}
}

func (m *module) valTypes(r *reader) []byte {
	n := r.vecLen(1)
	if r.err != nil {
		return nil
	}
	ts := r.in[r.pos : r.pos+int(n)]
	for i, t := range ts {
		if !isValType(t) {
			r.failAt(r.pos+i, "unknown value type 0x%02x", t)
			return nil
		}
	}
	r.pos += int(n)
	return ts
}

func (m *module) typeIndex(r *reader) uint32 {
	off := r.pos
	idx := r.u32()
	if r.err == nil && int(idx) >= len(m.types) {
		r.failAt(off, "type %d does not exist", idx)
	}
	return idx
}

// limits reads table or memory limits; only 32-bit, unshared ones are
// WebAssembly 2.0.
func (m *module) limits(r *reader, what string) (min, max uint32, hasMax bool) {
	off := r.pos
	switch flags := r.byte(); flags {
	case 0:
	case 1:
		hasMax = true
	case 2, 3:
		r.failAt(off, "shared %s (threads) is not supported", what)
		return
	case 4, 5, 6, 7:
		r.failAt(off, "64-bit %s (memory64) is not supported", what)
		return
	default:
		r.failAt(off, "unknown %s limits flags 0x%02x", what, flags)
		return
	}
	min = r.u32()
	if hasMax {
		max = r.u32()
		if r.err == nil && min > max {
			r.failAt(off, "%s size minimum %d is greater than maximum %d", what, min, max)
		}
	}
	return
}

func (m *module) tableType(r *reader) byte {
	off := r.pos
	t := r.byte()
	if r.err == nil && !isRefType(t) {
		r.failAt(off, "table element type 0x%02x is not a reference type", t)
	}
	_, max, hasMax := m.limits(r, "table")
	if !hasMax {
		max = math.MaxUint32
	}
	m.tableMax = append(m.tableMax, uint64(max))
	return t
}

func (m *module) memType(r *reader) {
	off := r.pos
	min, max, hasMax := m.limits(r, "memory")
	if r.err != nil {
		return
	}
	if min > maxPages || (hasMax && max > maxPages) {
		r.failAt(off, "memory size must be at most %d pages (4 GiB)", maxPages)
		return
	}
	m.nMems++
	m.memMax = maxPages
	if hasMax {
		m.memMax = max
	}
	if m.nMems > 1 {
		r.failAt(off, "multiple memories are not supported")
	}
}

func (m *module) globalType(r *reader) globalType {
	off := r.pos
	t := r.byte()
	if r.err == nil && !isValType(t) {
		r.failAt(off, "unknown value type 0x%02x", t)
	}
	off = r.pos
	mut := r.byte()
	if r.err == nil && mut > 1 {
		r.failAt(off, "unknown global mutability 0x%02x", mut)
	}
	return globalType{t: t, mut: mut == 1}
}

// constExpr validates a constant expression of type want. A function it
// names becomes one ref.func may name.
func (m *module) constExpr(r *reader, want byte) {
	off := r.pos
	var got byte
	switch op := r.byte(); op {
	case 0x41:
		r.signed(32)
		got = tI32
	case 0x42:
		r.signed(64)
		got = tI64
	case 0x43:
		r.skip(4)
		got = tF32
	case 0x44:
		r.skip(8)
		got = tF64
	case 0xfd:
		if sub := r.u32(); sub != 12 && r.err == nil {
			r.failAt(off, "constant expression required (opcode 0xfd 0x%x)", sub)
			return
		}
		r.skip(16)
		got = tV128
	case 0xd0:
		got = r.byte()
		if r.err == nil && !isRefType(got) {
			r.failAt(off+1, "ref.null of non-reference type 0x%02x", got)
			return
		}
	case 0xd2:
		idx := r.u32()
		if r.err == nil && int(idx) >= len(m.funcs) {
			r.failAt(off, "ref.func: function %d does not exist", idx)
			return
		}
		m.declareRef(idx)
		got = tFuncref
	case 0x23:
		// Only imported globals exist when a constant expression is
		// evaluated, and only immutable ones are constant.
		idx := r.u32()
		if r.err != nil {
			return
		}
		if int(idx) >= m.nGlobImps {
			r.failAt(off, "global.get %d in a constant expression: only imported globals may be read", idx)
			return
		}
		if m.globals[idx].mut {
			r.failAt(off, "constant expression required: global %d is mutable", idx)
			return
		}
		got = m.globals[idx].t
	default:
		if r.err == nil {
			r.failAt(off, "constant expression required (opcode 0x%02x)", op)
		}
		return
	}
	if r.err != nil {
		return
	}
	if got != want {
		r.failAt(off, "type mismatch in constant expression: want %s, got %s", typeName(want), typeName(got))
		return
	}
	if end := r.byte(); end != 0x0b && r.err == nil {
		r.failAt(r.pos-1, "constant expression required: more than one instruction")
	}
}

func (m *module) declareRef(idx uint32) {
	if m.refs == nil {
		m.refs = make([]uint64, (len(m.funcs)+63)/64)
	}
	m.refs[idx/64] |= 1 << (idx % 64)
}

func (m *module) declared(idx uint32) bool {
	return m.refs != nil && m.refs[idx/64]&(1<<(idx%64)) != 0
}

func (m *module) exports(r *reader) {
	n := r.vecLen(3)
	// The names, as slices of the input, sorted afterwards to find
	// duplicates without a copy of each.
	type export struct {
		name []byte
		off  int
	}
	names := make([]export, 0, n)
	for i := uint32(0); i < n && r.err == nil; i++ {
		off := r.pos
		name := r.name()
		kind := r.byte()
		idxOff := r.pos
		idx := r.u32()
		if r.err != nil {
			return
		}
		names = append(names, export{name, off})
		switch string(name) {
		case FuelGlobal, DepthGlobal, StartExport, ReserveGlobal, GrowFailedGlobal, MemoryExport, BudgetGlobal, OverBudgetGlobal:
			r.failAt(off, "export name %q is reserved for the instrumentation", name)
			return
		}
		var count int
		switch kind {
		case 0:
			count = len(m.funcs)
			if int(idx) < count {
				m.declareRef(idx)
			}
		case 1:
			count = len(m.tables)
		case 2:
			count = m.nMems
		case 3:
			count = len(m.globals)
		default:
			r.failAt(idxOff-1, "export %q: unknown kind 0x%02x", name, kind)
			return
		}
		if int(idx) >= count {
			r.failAt(idxOff, "export %q refers to %s %d, which does not exist", name, kindNames[kind], idx)
			return
		}
	}
	slices.SortFunc(names, func(a, b export) int { return bytes.Compare(a.name, b.name) })
	for i := 1; i < len(names); i++ {
		if bytes.Equal(names[i-1].name, names[i].name) {
			r.failAt(max(names[i-1].off, names[i].off), "duplicate export name %q", names[i].name)
			return
		}
	}
	m.nExports = int(n)
}

var kindNames = [...]string{"function", "table", "memory", "global"}

func (m *module) elementSegment(r *reader, i uint32) {
	off := r.pos
	flags := r.u32()
	if r.err != nil {
		return
	}
	if flags > 7 {
		r.failAt(off, "element segment %d: unknown flags %d", i, flags)
		return
	}
	passiveOrDeclared := flags&1 != 0
	explicitTable := flags&2 != 0
	exprs := flags&4 != 0
	table := uint32(0)
	if explicitTable && !passiveOrDeclared {
		table = r.u32()
	}
	if !passiveOrDeclared {
		if r.err == nil && int(table) >= len(m.tables) {
			r.failAt(off, "element segment %d: table %d does not exist", i, table)
			return
		}
		m.constExpr(r, tI32)
	}
	et := tFuncref
	if flags&3 != 0 {
		typeOff := r.pos
		b := r.byte()
		if r.err != nil {
			return
		}
		if exprs {
			if !isRefType(b) {
				r.failAt(typeOff, "element segment %d: 0x%02x is not a reference type", i, b)
				return
			}
			et = b
		} else if b != 0x00 {
			r.failAt(typeOff, "element segment %d: unknown element kind 0x%02x", i, b)
			return
		}
	}
	if !passiveOrDeclared && m.tables[table] != et {
		r.failAt(off, "element segment %d: %s elements for a %s table", i, typeName(et), typeName(m.tables[table]))
		return
	}
	n := r.vecLen(1)
	for j := uint32(0); j < n && r.err == nil; j++ {
		if exprs {
			m.constExpr(r, et)
			continue
		}
		idxOff := r.pos
		idx := r.u32()
		if r.err == nil && int(idx) >= len(m.funcs) {
			r.failAt(idxOff, "element segment %d: function %d does not exist", i, idx)
			return
		}
		m.declareRef(idx)
	}
	m.elemTypes = append(m.elemTypes, et)
}

func (m *module) dataSegment(r *reader, i uint32) {
	off := r.pos
	switch flags := r.u32(); flags {
	case 0, 2:
		if flags == 2 {
			if mem := r.u32(); mem != 0 && r.err == nil {
				r.failAt(off, "data segment %d: memory %d does not exist", i, mem)
				return
			}
		}
		if m.nMems == 0 && r.err == nil {
			r.failAt(off, "data segment %d: the module has no memory", i)
			return
		}
		m.constExpr(r, tI32)
	case 1:
	default:
		if r.err == nil {
			r.failAt(off, "data segment %d: unknown flags %d", i, flags)
		}
		return
	}
	lenOff := r.pos
	n := r.u32()
	if r.err == nil && int64(n) > int64(len(r.in)-r.pos) {
		r.failAt(lenOff, "data segment %d of %d bytes runs past the section", i, n)
		return
	}
	r.skip(int(n))
}

// planAdditions decides the indices of everything the instrumentation adds.
func (m *module) planAdditions() {
	m.fuelGlobal = uint32(len(m.globals))
	m.depthGlobal = m.fuelGlobal + 1
	m.reserveGlobal = m.fuelGlobal + 2
	m.growGlobal = m.fuelGlobal + 3
	m.budgetGlobal = m.fuelGlobal + 4
	m.overGlobal = m.fuelGlobal + 5
	m.refTable = uint32(len(m.tables))
	m.refillFunc = uint32(len(m.funcs))
	if m.nCode > 0 {
		m.refillType = m.funcTypeIndex([]byte{tI64}, nil)
	}
	if m.opts.MaxCallDepth == 0 {
		return
	}
	for _, ti := range m.funcs[m.nFuncImps:] {
		res := m.types[ti].results
		if len(res) < 2 {
			continue
		}
		if _, ok := m.wrapperType[ti]; ok {
			continue
		}
		if m.wrapperType == nil {
			m.wrapperType = make(map[uint32]uint32)
		}
		m.wrapperType[ti] = m.resultsType(res)
	}
}

// refSlotOf returns the slot of function idx in the ref.func table, giving
// it the next one on first use.
func (m *module) refSlotOf(idx uint32) uint32 {
	if slot, ok := m.refSlot[idx]; ok {
		return slot
	}
	if m.refSlot == nil {
		m.refSlot = make(map[uint32]uint32)
	}
	slot := uint32(len(m.refFuncs))
	m.refSlot[idx] = slot
	m.refFuncs = append(m.refFuncs, idx)
	return slot
}

// resultsType returns the index of a type () -> res, appending one if the
// module has none.
func (m *module) resultsType(res []byte) uint32 { return m.funcTypeIndex(nil, res) }

// funcTypeIndex returns the index of a type params -> results, appending one if
// the module has none.
func (m *module) funcTypeIndex(params, results []byte) uint32 {
	for i, ft := range m.types {
		if bytes.Equal(ft.params, params) && bytes.Equal(ft.results, results) {
			return uint32(i)
		}
	}
	for i, ft := range m.newTypes {
		if bytes.Equal(ft.params, params) && bytes.Equal(ft.results, results) {
			return uint32(len(m.types) + i)
		}
	}
	m.newTypes = append(m.newTypes, funcType{params: params, results: results})
	return uint32(len(m.types) + len(m.newTypes) - 1)
}
