// Package wasmbin reads the module-level structure of a Wasm binary: the
// sections, and the imports, exports, memories, types and custom sections that
// admission decides on. Function bodies are left undecoded; the engine
// validates them when it compiles.
//
// Every read is bounds-checked: a malformed module yields an error naming the
// byte offset, never a panic. It is the one decoder of module structure
// here: the instrumenter validates, with its Reader, the sections Decode
// splits a module into, and both read integers with package leb128.
package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
)

// Section IDs of the Wasm 2.0 binary format.
const (
	SectionCustom    byte = 0
	SectionType      byte = 1
	SectionImport    byte = 2
	SectionFunction  byte = 3
	SectionTable     byte = 4
	SectionMemory    byte = 5
	SectionGlobal    byte = 6
	SectionExport    byte = 7
	SectionStart     byte = 8
	SectionElement   byte = 9
	SectionCode      byte = 10
	SectionData      byte = 11
	SectionDataCount byte = 12
)

// External kinds of imports and exports.
const (
	KindFunc   byte = 0
	KindTable  byte = 1
	KindMemory byte = 2
	KindGlobal byte = 3
	KindTag    byte = 4
)

// KindName is the text-format keyword of an external kind.
func KindName(k byte) string {
	switch k {
	case KindFunc:
		return "func"
	case KindTable:
		return "table"
	case KindMemory:
		return "memory"
	case KindGlobal:
		return "global"
	case KindTag:
		return "tag"
	}
	return fmt.Sprintf("kind(0x%02x)", k)
}

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory",
	"global", "export", "start", "element", "code", "data", "data count"}

// SectionName is the spec's name of a section id, for errors.
func SectionName(id byte) string {
	if int(id) < len(sectionNames) {
		return sectionNames[id]
	}
	return fmt.Sprintf("unknown (id %d)", id)
}

// Header is how every module of binary format version 1 begins: the magic
// number and the version.
const Header = "\x00asm\x01\x00\x00\x00"

var magic = []byte(Header)

// Section is one section as it appears in the binary.
type Section struct {
	ID     byte
	Offset int    // offset of the section's id byte
	Name   string // custom sections only
	// Payload is the section content (for custom sections: after the name).
	Payload []byte
	// Raw is the whole section including its id and size, for re-encoding.
	Raw []byte
}

// FuncType is a function signature as value type bytes.
type FuncType struct {
	Params, Results []byte
}

// Limits of a memory or table.
type Limits struct {
	Min    uint64
	Max    uint64
	HasMax bool
	Shared bool
	Is64   bool
}

// Import is one import entry.
type Import struct {
	Module, Name string
	Kind         byte
	TypeIndex    uint32 // functions
	Limits       Limits // memories and tables
}

// Export is one export entry.
type Export struct {
	Name  string
	Kind  byte
	Index uint32
}

// Module is the module-level structure of a binary.
type Module struct {
	Sections []Section
	Types    []FuncType
	Imports  []Import
	// Funcs holds the type index of every function defined in the module
	// (imported functions are not included).
	Funcs    []uint32
	Memories []Limits // defined memories (imported ones are in Imports)
	Tables   []Table  // defined tables
	Globals  []Global // defined globals (imported ones are in Imports)
	Exports  []Export
	Data     []DataSegment
	// ElementSegments and ElementEntries count the element segments and
	// the entries they list, in every mode: engines keep a reference per
	// entry in each instance.
	ElementSegments int
	ElementEntries  uint64
	// Locals is the number of locals the function bodies declare, summed
	// over every body (parameters not included).
	Locals uint64
}

// Global is a defined global's type and initializer.
type Global struct {
	ValType byte
	Mutable bool
	// Init is the constant expression that initializes the global,
	// including its end opcode.
	Init []byte
}

// DataSegment is one data segment.
type DataSegment struct {
	Active bool
	Memory uint32
	// Offset is the constant offset expression of an active segment,
	// including its end opcode.
	Offset []byte
	Init   []byte
}

// Table is a defined table.
type Table struct {
	RefType byte
	Limits  Limits
}

// MaxLocals bounds the locals of one function, its parameters included.
// Engines allocate per local when they compile, so an unbounded count in a
// few bytes of input is a memory bomb; 50,000 is the figure browsers and
// wasmtime enforce, on the function as compiled: with the ReservedLocals
// the instrumenter may add.
const MaxLocals = 50000

// ReservedLocals is how many scratch locals the instrumenter may add to a
// function: a module's own parameters and locals may take MaxLocals less
// that, or an engine that enforces MaxLocals (wasmtime) would refuse what
// another one (wazero) runs.
const ReservedLocals = 6

// ImportedFuncCount is the number of imported functions, which precede the
// module's own functions in the function index space.
func (m *Module) ImportedFuncCount() int {
	n := 0
	for _, im := range m.Imports {
		if im.Kind == KindFunc {
			n++
		}
	}
	return n
}

// FuncTypeOf returns the signature of the function at index idx of the
// function index space.
func (m *Module) FuncTypeOf(idx uint32) (FuncType, bool) {
	var typeIdx uint32
	n := uint32(0)
	found := false
	for _, im := range m.Imports {
		if im.Kind != KindFunc {
			continue
		}
		if n == idx {
			typeIdx, found = im.TypeIndex, true
			break
		}
		n++
	}
	if !found {
		local := idx - n
		if idx < n || int(local) >= len(m.Funcs) {
			return FuncType{}, false
		}
		typeIdx = m.Funcs[local]
	}
	if int(typeIdx) >= len(m.Types) {
		return FuncType{}, false
	}
	return m.Types[typeIdx], true
}

// Export returns the export of the given name.
func (m *Module) Export(name string) (Export, bool) {
	for _, e := range m.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}

// CustomSections returns every custom section with the given name.
func (m *Module) CustomSections(name string) []Section {
	var out []Section
	for _, s := range m.Sections {
		if s.ID == SectionCustom && s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed wasm module")

// DecodeError names the offset where decoding failed.
type DecodeError struct {
	Offset int
	Msg    string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("malformed wasm module at offset %d: %s", e.Offset, e.Msg)
}

func (e *DecodeError) Unwrap() error { return ErrMalformed }

// Decode parses the module-level structure of a binary.
func Decode(b []byte) (*Module, error) {
	if len(b) < len(magic) || !bytes.Equal(b[:4], magic[:4]) {
		return nil, &DecodeError{0, "not a wasm binary (bad magic)"}
	}
	if !bytes.Equal(b[4:8], magic[4:]) {
		return nil, &DecodeError{4, "unsupported binary version (want 1)"}
	}
	m := &Module{}
	r := &Reader{b: b, pos: 8}
	for r.pos < len(b) {
		start := r.pos
		id := r.Byte()
		size := r.U32()
		if r.err != nil {
			return nil, r.err
		}
		if int(size) > len(b)-r.pos {
			return nil, &DecodeError{start, fmt.Sprintf("section %d size %d runs past the end", id, size)}
		}
		payload := b[r.pos : r.pos+int(size)]
		s := Section{ID: id, Offset: start, Payload: payload, Raw: b[start : r.pos+int(size)]}
		sr := &Reader{b: b[:r.pos+int(size)], pos: r.pos}
		if err := m.decodeSection(&s, sr); err != nil {
			var de *DecodeError
			if errors.As(err, &de) {
				de.Msg = SectionName(id) + " section: " + de.Msg
			}
			return nil, err
		}
		if id != SectionCustom && sr.pos != len(sr.b) {
			return nil, &DecodeError{sr.pos, fmt.Sprintf("%s section: %d bytes left over", SectionName(id), len(sr.b)-sr.pos)}
		}
		m.Sections = append(m.Sections, s)
		r.pos += int(size)
	}
	return m, nil
}

func (m *Module) decodeSection(s *Section, r *Reader) error {
	switch s.ID {
	case SectionCustom:
		s.Name = string(r.Name())
		s.Payload = r.b[r.pos:len(r.b)]
		r.pos = len(r.b)
	case SectionType:
		n := r.VecLen(3)
		for i := uint32(0); i < n && r.err == nil; i++ {
			if form := r.Byte(); form != 0x60 && r.err == nil {
				return &DecodeError{r.pos - 1, fmt.Sprintf("type %d: unsupported form 0x%02x", i, form)}
			}
			ft := FuncType{Params: r.valTypes(), Results: r.valTypes()}
			m.Types = append(m.Types, ft)
		}
	case SectionImport:
		n := r.VecLen(4)
		for i := uint32(0); i < n && r.err == nil; i++ {
			im := Import{Module: string(r.Name()), Name: string(r.Name()), Kind: r.Byte()}
			switch im.Kind {
			case KindFunc:
				im.TypeIndex = r.U32()
			case KindTable:
				r.Byte() // reference type
				im.Limits = r.limits()
			case KindMemory:
				im.Limits = r.limits()
			case KindGlobal:
				r.Byte() // value type
				r.Byte() // mutability
			case KindTag:
				r.Byte()
				r.U32()
			default:
				if r.err == nil {
					return &DecodeError{r.pos - 1, fmt.Sprintf("import %d: unknown kind 0x%02x", i, im.Kind)}
				}
			}
			m.Imports = append(m.Imports, im)
		}
	case SectionFunction:
		n := r.VecLen(1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.Funcs = append(m.Funcs, r.U32())
		}
	case SectionMemory:
		n := r.VecLen(1)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.Memories = append(m.Memories, r.limits())
		}
	case SectionExport:
		n := r.VecLen(3)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.Exports = append(m.Exports, Export{Name: string(r.Name()), Kind: r.Byte(), Index: r.U32()})
		}
	case SectionTable:
		n := r.VecLen(3)
		for i := uint32(0); i < n && r.err == nil; i++ {
			t := Table{RefType: r.Byte()}
			t.Limits = r.limits()
			m.Tables = append(m.Tables, t)
		}
	case SectionGlobal:
		n := r.VecLen(4)
		for i := uint32(0); i < n && r.err == nil; i++ {
			g := Global{ValType: r.Byte(), Mutable: r.Byte() == 1}
			start := r.pos
			r.constExpr()
			g.Init = r.b[start:r.pos:r.pos]
			m.Globals = append(m.Globals, g)
		}
	case SectionElement:
		n := r.VecLen(2)
		m.ElementSegments = int(n)
		for i := uint32(0); i < n && r.err == nil; i++ {
			m.ElementEntries += uint64(r.elementSegment())
		}
	case SectionCode:
		n := r.VecLen(2)
		for i := uint32(0); i < n && r.err == nil; i++ {
			params := 0
			if int(i) < len(m.Funcs) && int(m.Funcs[i]) < len(m.Types) {
				params = len(m.Types[m.Funcs[i]].Params)
			}
			m.Locals += r.functionBody(i, params)
		}
	case SectionData:
		n := r.VecLen(2)
		for i := uint32(0); i < n && r.err == nil; i++ {
			if d, ok := r.dataSegment(); ok {
				m.Data = append(m.Data, d)
			}
		}
	case SectionStart, SectionDataCount:
		r.U32()
	default:
		// Unknown section ids are left to the engine, which refuses them.
		r.pos = len(r.b)
	}
	return r.err
}

// elementSegment skips one element segment, checking every vector length,
// and returns the number of entries it lists.
func (r *Reader) elementSegment() uint32 {
	flags := r.U32()
	if flags > 7 {
		r.fail(fmt.Sprintf("unknown element segment flags %d", flags))
		return 0
	}
	if flags&0x02 != 0 && flags&0x01 == 0 {
		r.U32() // table index
	}
	if flags&0x01 == 0 {
		r.constExpr() // offset
	}
	if flags&0x03 != 0 {
		r.Byte() // element kind or reference type
	}
	n := r.VecLen(1)
	for i := uint32(0); i < n && r.err == nil; i++ {
		if flags&0x04 != 0 {
			r.constExpr()
		} else {
			r.U32()
		}
	}
	return n
}

// functionBody checks one code entry, its size and its local declarations
// (beside params parameters), and returns the number of locals it declares.
// The instructions are left to the engine's validator.
func (r *Reader) functionBody(i uint32, params int) uint64 {
	size := r.U32()
	if r.err != nil {
		return 0
	}
	if int(size) > len(r.b)-r.pos {
		r.fail(fmt.Sprintf("function body %d of %d bytes runs past the section", i, size))
		return 0
	}
	end := r.pos + int(size)
	body := &Reader{b: r.b[:end], pos: r.pos}
	groups := body.VecLen(2)
	var locals uint64
	allowed := uint64(MaxLocals - ReservedLocals - min(params, MaxLocals-ReservedLocals))
	for g := uint32(0); g < groups && body.err == nil; g++ {
		locals += uint64(body.U32())
		body.Byte() // value type
		if locals > allowed {
			body.fail(fmt.Sprintf("function body %d declares more than %d locals: with its %d parameters and the %d the instrumentation may add, engines allow %d",
				i, allowed, params, ReservedLocals, MaxLocals))
		}
	}
	if body.err != nil {
		r.err = body.err
		return 0
	}
	r.pos = end
	return locals
}

// dataSegment decodes one data segment, checking its length.
func (r *Reader) dataSegment() (DataSegment, bool) {
	var d DataSegment
	switch flags := r.U32(); flags {
	case 0:
		d.Active = true
		start := r.pos
		r.constExpr()
		d.Offset = r.b[start:r.pos]
	case 1:
	case 2:
		d.Active = true
		d.Memory = r.U32()
		start := r.pos
		r.constExpr()
		d.Offset = r.b[start:r.pos]
	default:
		r.fail(fmt.Sprintf("unknown data segment flags %d", flags))
		return d, false
	}
	n := r.U32()
	if r.err == nil && int64(n) > int64(len(r.b)-r.pos) {
		r.fail(fmt.Sprintf("data segment of %d bytes runs past the section", n))
		return d, false
	}
	if r.err != nil {
		return d, false
	}
	d.Init = r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return d, true
}

// constExpr skips a constant expression up to and including its end opcode.
func (r *Reader) constExpr() {
	for r.err == nil {
		switch op := r.Byte(); op {
		case 0x0b: // end
			return
		case 0x41: // i32.const
			r.Int(32)
		case 0x42: // i64.const
			r.Int(64)
		case 0x43: // f32.const
			r.Skip(4)
		case 0x44: // f64.const
			r.Skip(8)
		case 0x23, 0xd2: // global.get, ref.func
			r.U32()
		case 0xd0: // ref.null
			r.Byte()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended-const arithmetic
		case 0xfd: // v128.const
			if sub := r.U32(); sub != 12 && r.err == nil {
				r.fail(fmt.Sprintf("opcode 0xfd %d is not allowed in a constant expression", sub))
				return
			}
			r.Skip(16)
		default:
			if r.err == nil {
				r.fail(fmt.Sprintf("opcode 0x%02x is not allowed in a constant expression", op))
			}
			return
		}
	}
}

// ForEngine returns the bytes to hand an engine's compiler: the module
// without its custom sections (names and manifests do not change execution,
// and an engine's own decoding of them is attack surface we do not need),
// with every table's maximum capped at maxTableElements so table.grow cannot
// take unbounded host memory.
//
// # Errors
//
// When a table's minimum size already exceeds maxTableElements.
func (m *Module) ForEngine(maxTableElements uint32) ([]byte, error) {
	size := len(magic)
	for _, s := range m.Sections {
		size += len(s.Raw)
	}
	out := make([]byte, 0, size)
	out = append(out, magic...)
	for _, s := range m.Sections {
		switch s.ID {
		case SectionCustom:
			continue
		case SectionTable:
			content := leb128.AppendUint32(nil, uint32(len(m.Tables)))
			for i, t := range m.Tables {
				if t.Limits.Min > uint64(maxTableElements) {
					return nil, fmt.Errorf("table %d starts with %d elements; at most %d are allowed", i, t.Limits.Min, maxTableElements)
				}
				max := uint64(maxTableElements)
				if t.Limits.HasMax && t.Limits.Max < max {
					max = t.Limits.Max
				}
				content = append(content, t.RefType, 0x01)
				content = leb128.AppendUint32(content, uint32(t.Limits.Min))
				content = leb128.AppendUint32(content, uint32(max))
			}
			out = append(out, SectionTable)
			out = leb128.AppendUint32(out, uint32(len(content)))
			out = append(out, content...)
		default:
			out = append(out, s.Raw...)
		}
	}
	return out, nil
}

// WithCustomSection returns a copy of module b in which every custom section
// called name is removed and one with the given payload is appended.
func WithCustomSection(b []byte, name string, payload []byte) ([]byte, error) {
	m, err := Decode(b)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(name)+len(payload)+16)
	out = append(out, magic...)
	for _, s := range m.Sections {
		if s.ID == SectionCustom && s.Name == name {
			continue
		}
		out = append(out, s.Raw...)
	}
	content := leb128.AppendUint32(nil, uint32(len(name)))
	content = append(content, name...)
	content = append(content, payload...)
	out = append(out, SectionCustom)
	out = leb128.AppendUint32(out, uint32(len(content)))
	return append(out, content...), nil
}

func (r *Reader) valTypes() []byte {
	return r.Bytes(int(r.VecLen(1)))
}

func (r *Reader) limits() Limits {
	flags := r.Byte()
	var l Limits
	if flags&^0x07 != 0 {
		r.fail(fmt.Sprintf("unknown limits flags 0x%02x", flags))
		return l
	}
	l.Shared = flags&0x02 != 0
	l.Is64 = flags&0x04 != 0
	l.HasMax = flags&0x01 != 0
	read := func() uint64 { return uint64(r.U32()) }
	if l.Is64 {
		read = r.U64
	}
	l.Min = read()
	if l.HasMax {
		l.Max = read()
	}
	return l
}

// SplitData separates a module's initial memory contents from its code, for
// instances that start from a memory image instead of from instantiation.
// image is memory 0 as the module's active data segments leave it (as long
// as the last byte they write); stripped is the module with every data
// segment made passive and empty, so instantiating it writes nothing.
//
// # Errors
//
// When an active segment's offset is not an i32.const (an imported global
// would make the image depend on the importer) or it targets another memory.
// Overlapping segments are fine: later ones win, as at instantiation.
func (m *Module) SplitData() (image, stripped []byte, err error) {
	var end uint64
	offsets := make([]uint64, len(m.Data))
	for i, d := range m.Data {
		if !d.Active {
			continue
		}
		if d.Memory != 0 {
			return nil, nil, fmt.Errorf("data segment %d initializes memory %d", i, d.Memory)
		}
		off, ok := constI32(d.Offset)
		if !ok {
			return nil, nil, fmt.Errorf("data segment %d: the offset is not an i32.const", i)
		}
		offsets[i] = uint64(off)
		end = max(end, offsets[i]+uint64(len(d.Init)))
	}
	image = make([]byte, end)
	for i, d := range m.Data {
		if d.Active {
			copy(image[offsets[i]:], d.Init)
		}
	}
	stripped = append(make([]byte, 0, len(magic)), magic...)
	for _, s := range m.Sections {
		if s.ID != SectionData {
			stripped = append(stripped, s.Raw...)
			continue
		}
		content := leb128.AppendUint32(nil, uint32(len(m.Data)))
		for range m.Data {
			content = append(content, 0x01, 0x00) // passive, no bytes
		}
		stripped = append(stripped, SectionData)
		stripped = leb128.AppendUint32(stripped, uint32(len(content)))
		stripped = append(stripped, content...)
	}
	return image, stripped, nil
}

// EmptyPassiveData returns the module with every passive data segment made
// empty and the active ones kept. Instantiated, it writes the image
// SplitData returns, while memory.init and data.drop see what they see in
// SplitData's stripped module: an engine that maps a module's initial
// memory copy-on-write (wasmtime) instantiates it instead of the stripped
// one, to the same effect. Call it once SplitData has accepted the module.
func (m *Module) EmptyPassiveData() []byte {
	out := append(make([]byte, 0, len(magic)), magic...)
	for _, s := range m.Sections {
		if s.ID != SectionData {
			out = append(out, s.Raw...)
			continue
		}
		content := leb128.AppendUint32(nil, uint32(len(m.Data)))
		for _, d := range m.Data {
			switch {
			case !d.Active:
				content = append(content, 0x01, 0x00) // passive, no bytes
				continue
			case d.Memory == 0:
				content = append(content, 0x00)
			default:
				content = leb128.AppendUint32(append(content, 0x02), d.Memory)
			}
			content = append(content, d.Offset...)
			content = leb128.AppendUint32(content, uint32(len(d.Init)))
			content = append(content, d.Init...)
		}
		out = append(out, SectionData)
		out = leb128.AppendUint32(out, uint32(len(content)))
		out = append(out, content...)
	}
	return out
}

// constI32 evaluates "i32.const n; end" as an unsigned offset.
func constI32(expr []byte) (uint32, bool) {
	if len(expr) < 3 || expr[0] != 0x41 || expr[len(expr)-1] != 0x0b {
		return 0, false
	}
	v, n := leb128.Int(expr, 1, 32)
	if n == 0 || 1+n != len(expr)-1 {
		return 0, false
	}
	return uint32(int32(v)), true
}

// WithExports returns the module's bytes with extra exports appended to its
// export section (one is added, in its place, when it has none). The
// module's code is unchanged; exports only let the host reach more of an
// instance. Custom sections are kept.
//
// # Errors
//
// When an extra export's name is already exported.
func (m *Module) WithExports(extra []Export) ([]byte, error) {
	names := map[string]bool{}
	for _, e := range m.Exports {
		names[e.Name] = true
	}
	all := append(append([]Export(nil), m.Exports...), extra...)
	for _, e := range extra {
		if names[e.Name] {
			return nil, fmt.Errorf("%q is exported already", e.Name)
		}
		names[e.Name] = true
	}
	content := leb128.AppendUint32(nil, uint32(len(all)))
	for _, e := range all {
		content = leb128.AppendUint32(content, uint32(len(e.Name)))
		content = append(content, e.Name...)
		content = append(content, e.Kind)
		content = leb128.AppendUint32(content, e.Index)
	}
	section := append([]byte{SectionExport}, leb128.AppendUint32(nil, uint32(len(content)))...)
	section = append(section, content...)

	out := append([]byte(nil), magic...)
	placed := false
	for _, s := range m.Sections {
		switch {
		case s.ID == SectionExport:
			out = append(out, section...)
			placed = true
			continue
		case !placed && s.ID != SectionCustom && sectionOrder(s.ID) > sectionOrder(SectionExport):
			out = append(out, section...)
			placed = true
		}
		out = append(out, s.Raw...)
	}
	if !placed {
		out = append(out, section...)
	}
	return out, nil
}

// WithFunction returns the module's bytes with one more function, of type
// typ, whose code entry (its local declarations and expression, without the
// size that precedes them) is body, and the new function's index. The type
// is appended to the type section (a duplicate is valid), the function to
// the end of the function index space, so no existing index moves. The body
// is not validated here: the engine validates it with the rest.
//
// # Errors
//
// When a vector section the function is added to is malformed.
func (m *Module) WithFunction(typ FuncType, body []byte) ([]byte, uint32, error) {
	index := uint32(m.ImportedFuncCount() + len(m.Funcs))
	typeEntry := append([]byte{0x60}, leb128.AppendUint32(nil, uint32(len(typ.Params)))...)
	typeEntry = append(typeEntry, typ.Params...)
	typeEntry = leb128.AppendUint32(typeEntry, uint32(len(typ.Results)))
	typeEntry = append(typeEntry, typ.Results...)
	codeEntry := append(leb128.AppendUint32(nil, uint32(len(body))), body...)
	added := map[byte][]byte{}
	for _, add := range []struct {
		id    byte
		entry []byte
	}{
		{SectionType, typeEntry},
		{SectionFunction, leb128.AppendUint32(nil, uint32(len(m.Types)))},
		{SectionCode, codeEntry},
	} {
		var payload []byte
		for _, s := range m.Sections {
			if s.ID == add.id {
				payload = s.Payload
			}
		}
		content, err := appendToVector(payload, add.entry)
		if err != nil {
			return nil, 0, fmt.Errorf("section %d: %w", add.id, err)
		}
		added[add.id] = content
	}
	return m.withSections(added), index, nil
}

// appendToVector returns a vector section's content (its count, then its
// entries) with entry appended; an empty payload is an empty vector.
func appendToVector(payload, entry []byte) ([]byte, error) {
	n, rest := uint32(0), payload
	if len(payload) > 0 {
		r := &Reader{b: payload}
		n = r.U32()
		if r.err != nil {
			return nil, r.err
		}
		rest = payload[r.pos:]
	}
	out := leb128.AppendUint32(nil, n+1)
	out = append(out, rest...)
	return append(out, entry...), nil
}

// withSections returns the module's bytes with the content of each section
// whose id is in contents replaced, or added in its place when the module
// has none. Custom sections are kept where they are.
func (m *Module) withSections(contents map[byte][]byte) []byte {
	encode := func(id byte) []byte {
		s := append([]byte{id}, leb128.AppendUint32(nil, uint32(len(contents[id])))...)
		return append(s, contents[id]...)
	}
	placed := map[byte]bool{}
	// placeBefore adds the sections still missing that go before a section
	// of order next.
	var missing []byte
	for id := range contents {
		missing = append(missing, id)
	}
	slices.SortFunc(missing, func(a, b byte) int { return sectionOrder(a) - sectionOrder(b) })
	out := append([]byte(nil), magic...)
	placeBefore := func(next int) {
		for _, id := range missing {
			if !placed[id] && sectionOrder(id) < next {
				out = append(out, encode(id)...)
				placed[id] = true
			}
		}
	}
	for _, s := range m.Sections {
		if s.ID != SectionCustom {
			placeBefore(sectionOrder(s.ID))
		}
		if _, ok := contents[s.ID]; ok && s.ID != SectionCustom {
			out = append(out, encode(s.ID)...)
			placed[s.ID] = true
			continue
		}
		out = append(out, s.Raw...)
	}
	placeBefore(math.MaxInt)
	return out
}

// sectionOrder is where a known section goes in a module: the data count
// section (12) comes between the element (9) and code (10) sections.
func sectionOrder(id byte) int {
	if id == 12 {
		return 95 // between 9 and 10
	}
	return int(id) * 10
}
