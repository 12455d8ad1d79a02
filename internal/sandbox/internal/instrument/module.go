package instrument

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
)

// Section IDs, and below their required order (data count sits between
// element and code).
const (
	secCustom    = wasmbin.SectionCustom
	secType      = wasmbin.SectionType
	secImport    = wasmbin.SectionImport
	secFunction  = wasmbin.SectionFunction
	secTable     = wasmbin.SectionTable
	secMemory    = wasmbin.SectionMemory
	secGlobal    = wasmbin.SectionGlobal
	secExport    = wasmbin.SectionExport
	secStart     = wasmbin.SectionStart
	secElement   = wasmbin.SectionElement
	secCode      = wasmbin.SectionCode
	secData      = wasmbin.SectionData
	secDataCount = wasmbin.SectionDataCount
)

var sectionOrder = [...]byte{secType, secImport, secFunction, secTable, secMemory, secGlobal,
	secExport, secStart, secElement, secDataCount, secCode, secData}

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

var magic = []byte(wasmbin.Header)

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

// decode validates the module-level sections wasmbin.Decode has split the
// module into: what Decode leaves to the engine (types, indices, constant
// expressions, order) is checked here, as the spec says. Function bodies
// are validated when the module is emitted.
func (m *module) decode() error {
	in := m.in
	wm, err := wasmbin.Decode(in)
	if err != nil {
		return asInstrumentError(err, "")
	}
	m.dataCount, m.start = -1, -1
	last := 0
	for _, s := range wm.Sections {
		id, off := s.ID, s.Offset
		if id == secCustom {
			continue
		}
		rank := sectionRank(id)
		if rank == 0 {
			return &instrumentError{fn: -1, offset: off, msg: fmt.Sprintf("unknown section id %d", id)}
		}
		if rank <= last {
			return &instrumentError{fn: -1, offset: off, msg: fmt.Sprintf("%s section out of order or repeated", wasmbin.SectionName(id))}
		}
		last = rank
		// Raw is the section, Payload its end: the payload starts where
		// the id and the size end.
		end := off + len(s.Raw)
		start := end - len(s.Payload)
		m.sec[id] = section{present: true, off: off, start: start, end: end}
		r := wasmbin.NewReader(in, start, end)
		m.decodeSection(id, r)
		if r.Err() == nil && r.Pos() != end {
			r.Failf(r.Pos(), "%d bytes left over", end-r.Pos())
		}
		if err := r.Err(); err != nil {
			return asInstrumentError(err, wasmbin.SectionName(id)+" section: ")
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

// asInstrumentError gives a decoding error the form of the instrumenter's
// own, with prefix before its message.
func asInstrumentError(err error, prefix string) error {
	var de *wasmbin.DecodeError
	if errors.As(err, &de) {
		return &instrumentError{fn: -1, offset: de.Offset, msg: prefix + de.Msg}
	}
	return err
}

func (m *module) decodeSection(id byte, r *wasmbin.Reader) {
	switch id {
	case secType:
		n := r.VecLen(3)
		m.types = make([]funcType, 0, n)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			off := r.Pos()
			if form := r.Byte(); form != 0x60 && r.Err() == nil {
				r.Failf(off, "type %d: unsupported form 0x%02x", i, form)
				return
			}
			ft := funcType{params: m.valTypes(r), results: m.valTypes(r)}
			m.types = append(m.types, ft)
		}
	case secImport:
		n := r.VecLen(4)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			r.Name()
			r.Name()
			off := r.Pos()
			switch kind := r.Byte(); kind {
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
				r.Failf(off, "import %d: tags (exception handling) are not supported", i)
			default:
				r.Failf(off, "import %d: unknown kind 0x%02x", i, kind)
			}
		}
	case secFunction:
		n := r.VecLen(1)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			m.funcs = append(m.funcs, m.typeIndex(r))
		}
	case secTable:
		n := r.VecLen(3)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			m.tables = append(m.tables, m.tableType(r))
		}
	case secMemory:
		n := r.VecLen(2)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			m.memType(r)
		}
	case secGlobal:
		n := r.VecLen(3)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			g := m.globalType(r)
			m.constExpr(r, g.t)
			m.globals = append(m.globals, g)
		}
	case secExport:
		m.exports(r)
	case secStart:
		off := r.Pos()
		idx := r.U32()
		if r.Err() != nil {
			return
		}
		if int(idx) >= len(m.funcs) {
			r.Failf(off, "start function %d does not exist", idx)
			return
		}
		if ft := m.types[m.funcs[idx]]; len(ft.params) != 0 || len(ft.results) != 0 {
			r.Failf(off, "start function %d must take and return nothing", idx)
			return
		}
		m.start = int(idx)
	case secElement:
		n := r.VecLen(2)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			m.elementSegment(r, i)
		}
	case secDataCount:
		m.dataCount = int(r.U32())
	case secCode:
		// Bodies are decoded when the module is emitted; only the count is
		// needed before.
		m.nCode = int(r.VecLen(1))
		r.SkipToEnd()
	case secData:
		n := r.VecLen(2)
		m.nData = int(n)
		for i := uint32(0); i < n && r.Err() == nil; i++ {
			m.dataSegment(r, i)
		}
	}
}

func (m *module) valTypes(r *wasmbin.Reader) []byte {
	n := r.VecLen(1)
	off := r.Pos()
	ts := r.Bytes(int(n))
	for i, t := range ts {
		if !isValType(t) {
			r.Failf(off+i, "unknown value type 0x%02x", t)
			return nil
		}
	}
	return ts
}

func (m *module) typeIndex(r *wasmbin.Reader) uint32 {
	off := r.Pos()
	idx := r.U32()
	if r.Err() == nil && int(idx) >= len(m.types) {
		r.Failf(off, "type %d does not exist", idx)
	}
	return idx
}

// limits reads table or memory limits; only 32-bit, unshared ones are
// WebAssembly 2.0.
func (m *module) limits(r *wasmbin.Reader, what string) (min, max uint32, hasMax bool) {
	off := r.Pos()
	switch flags := r.Byte(); flags {
	case 0:
	case 1:
		hasMax = true
	case 2, 3:
		r.Failf(off, "shared %s (threads) is not supported", what)
		return
	case 4, 5, 6, 7:
		r.Failf(off, "64-bit %s (memory64) is not supported", what)
		return
	default:
		r.Failf(off, "unknown %s limits flags 0x%02x", what, flags)
		return
	}
	min = r.U32()
	if hasMax {
		max = r.U32()
		if r.Err() == nil && min > max {
			r.Failf(off, "%s size minimum %d is greater than maximum %d", what, min, max)
		}
	}
	return
}

func (m *module) tableType(r *wasmbin.Reader) byte {
	off := r.Pos()
	t := r.Byte()
	if r.Err() == nil && !isRefType(t) {
		r.Failf(off, "table element type 0x%02x is not a reference type", t)
	}
	_, max, hasMax := m.limits(r, "table")
	if !hasMax {
		max = math.MaxUint32
	}
	m.tableMax = append(m.tableMax, uint64(max))
	return t
}

func (m *module) memType(r *wasmbin.Reader) {
	off := r.Pos()
	min, max, hasMax := m.limits(r, "memory")
	if r.Err() != nil {
		return
	}
	if min > maxPages || (hasMax && max > maxPages) {
		r.Failf(off, "memory size must be at most %d pages (4 GiB)", maxPages)
		return
	}
	m.nMems++
	m.memMax = maxPages
	if hasMax {
		m.memMax = max
	}
	if m.nMems > 1 {
		r.Failf(off, "multiple memories are not supported")
	}
}

func (m *module) globalType(r *wasmbin.Reader) globalType {
	off := r.Pos()
	t := r.Byte()
	if r.Err() == nil && !isValType(t) {
		r.Failf(off, "unknown value type 0x%02x", t)
	}
	off = r.Pos()
	mut := r.Byte()
	if r.Err() == nil && mut > 1 {
		r.Failf(off, "unknown global mutability 0x%02x", mut)
	}
	return globalType{t: t, mut: mut == 1}
}

// constExpr validates a constant expression of type want. A function it
// names becomes one ref.func may name.
func (m *module) constExpr(r *wasmbin.Reader, want byte) {
	off := r.Pos()
	var got byte
	switch op := r.Byte(); op {
	case 0x41:
		r.Int(32)
		got = tI32
	case 0x42:
		r.Int(64)
		got = tI64
	case 0x43:
		r.Skip(4)
		got = tF32
	case 0x44:
		r.Skip(8)
		got = tF64
	case 0xfd:
		if sub := r.U32(); sub != 12 && r.Err() == nil {
			r.Failf(off, "constant expression required (opcode 0xfd 0x%x)", sub)
			return
		}
		r.Skip(16)
		got = tV128
	case 0xd0:
		got = r.Byte()
		if r.Err() == nil && !isRefType(got) {
			r.Failf(off+1, "ref.null of non-reference type 0x%02x", got)
			return
		}
	case 0xd2:
		idx := r.U32()
		if r.Err() == nil && int(idx) >= len(m.funcs) {
			r.Failf(off, "ref.func: function %d does not exist", idx)
			return
		}
		m.declareRef(idx)
		got = tFuncref
	case 0x23:
		// Only imported globals exist when a constant expression is
		// evaluated, and only immutable ones are constant.
		idx := r.U32()
		if r.Err() != nil {
			return
		}
		if int(idx) >= m.nGlobImps {
			r.Failf(off, "global.get %d in a constant expression: only imported globals may be read", idx)
			return
		}
		if m.globals[idx].mut {
			r.Failf(off, "constant expression required: global %d is mutable", idx)
			return
		}
		got = m.globals[idx].t
	default:
		if r.Err() == nil {
			r.Failf(off, "constant expression required (opcode 0x%02x)", op)
		}
		return
	}
	if r.Err() != nil {
		return
	}
	if got != want {
		r.Failf(off, "type mismatch in constant expression: want %s, got %s", typeName(want), typeName(got))
		return
	}
	if end := r.Byte(); end != 0x0b && r.Err() == nil {
		r.Failf(r.Pos()-1, "constant expression required: more than one instruction")
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

func (m *module) exports(r *wasmbin.Reader) {
	n := r.VecLen(3)
	// The names, as slices of the input, sorted afterwards to find
	// duplicates without a copy of each.
	type export struct {
		name []byte
		off  int
	}
	names := make([]export, 0, n)
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		off := r.Pos()
		name := r.Name()
		kind := r.Byte()
		idxOff := r.Pos()
		idx := r.U32()
		if r.Err() != nil {
			return
		}
		names = append(names, export{name, off})
		switch string(name) {
		case FuelGlobal, DepthGlobal, StartExport, ReserveGlobal, GrowFailedGlobal, MemoryExport, BudgetGlobal, OverBudgetGlobal:
			r.Failf(off, "export name %q is reserved for the instrumentation", name)
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
			r.Failf(idxOff-1, "export %q: unknown kind 0x%02x", name, kind)
			return
		}
		if int(idx) >= count {
			r.Failf(idxOff, "export %q refers to %s %d, which does not exist", name, kindNames[kind], idx)
			return
		}
	}
	slices.SortFunc(names, func(a, b export) int { return bytes.Compare(a.name, b.name) })
	for i := 1; i < len(names); i++ {
		if bytes.Equal(names[i-1].name, names[i].name) {
			r.Failf(max(names[i-1].off, names[i].off), "duplicate export name %q", names[i].name)
			return
		}
	}
	m.nExports = int(n)
}

var kindNames = [...]string{"function", "table", "memory", "global"}

func (m *module) elementSegment(r *wasmbin.Reader, i uint32) {
	off := r.Pos()
	flags := r.U32()
	if r.Err() != nil {
		return
	}
	if flags > 7 {
		r.Failf(off, "element segment %d: unknown flags %d", i, flags)
		return
	}
	passiveOrDeclared := flags&1 != 0
	explicitTable := flags&2 != 0
	exprs := flags&4 != 0
	table := uint32(0)
	if explicitTable && !passiveOrDeclared {
		table = r.U32()
	}
	if !passiveOrDeclared {
		if r.Err() == nil && int(table) >= len(m.tables) {
			r.Failf(off, "element segment %d: table %d does not exist", i, table)
			return
		}
		m.constExpr(r, tI32)
	}
	et := tFuncref
	if flags&3 != 0 {
		typeOff := r.Pos()
		b := r.Byte()
		if r.Err() != nil {
			return
		}
		if exprs {
			if !isRefType(b) {
				r.Failf(typeOff, "element segment %d: 0x%02x is not a reference type", i, b)
				return
			}
			et = b
		} else if b != 0x00 {
			r.Failf(typeOff, "element segment %d: unknown element kind 0x%02x", i, b)
			return
		}
	}
	if !passiveOrDeclared && m.tables[table] != et {
		r.Failf(off, "element segment %d: %s elements for a %s table", i, typeName(et), typeName(m.tables[table]))
		return
	}
	n := r.VecLen(1)
	for j := uint32(0); j < n && r.Err() == nil; j++ {
		if exprs {
			m.constExpr(r, et)
			continue
		}
		idxOff := r.Pos()
		idx := r.U32()
		if r.Err() == nil && int(idx) >= len(m.funcs) {
			r.Failf(idxOff, "element segment %d: function %d does not exist", i, idx)
			return
		}
		m.declareRef(idx)
	}
	m.elemTypes = append(m.elemTypes, et)
}

func (m *module) dataSegment(r *wasmbin.Reader, i uint32) {
	off := r.Pos()
	switch flags := r.U32(); flags {
	case 0, 2:
		if flags == 2 {
			if mem := r.U32(); mem != 0 && r.Err() == nil {
				r.Failf(off, "data segment %d: memory %d does not exist", i, mem)
				return
			}
		}
		if m.nMems == 0 && r.Err() == nil {
			r.Failf(off, "data segment %d: the module has no memory", i)
			return
		}
		m.constExpr(r, tI32)
	case 1:
	default:
		if r.Err() == nil {
			r.Failf(off, "data segment %d: unknown flags %d", i, flags)
		}
		return
	}
	lenOff := r.Pos()
	n := r.U32()
	if r.Err() == nil && int64(n) > int64(r.Left()) {
		r.Failf(lenOff, "data segment %d of %d bytes runs past the section", i, n)
		return
	}
	r.Skip(int(n))
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
