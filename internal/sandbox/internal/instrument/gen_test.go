package instrument

import (
	"encoding/binary"
	"math"
	"math/rand"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
)

// genModule generates a random valid module that always terminates: a few
// functions that compute a value from their parameters, each calling only
// functions before it, with bounded loops. The generator covers what the
// instrumentation rewrites: nested blocks, loops, if/else, br/br_if/br_table
// to every kind of label (the function's too), return, dead code, multi-value
// blocks and functions, calls and call_indirect, memory, bulk memory,
// tables, saturating and trapping conversions, float and SIMD arithmetic.
//
// Every function is exported as f0, f1, ...
func genModule(seed int64) []byte {
	g := &gen{r: rand.New(rand.NewSource(seed)), typeIndex: map[string]uint32{}}
	nFuncs := 1 + g.r.Intn(6)
	scalars := []byte{tI32, tI64, tF32, tF64}
	for i := 0; i < nFuncs; i++ {
		var params, results []byte
		for n := g.r.Intn(4); n > 0; n-- {
			params = append(params, scalars[g.r.Intn(4)])
		}
		for n := g.r.Intn(3); n > 0; n-- {
			results = append(results, scalars[g.r.Intn(4)])
		}
		g.funcs = append(g.funcs, genFunc{typ: g.typeOf(params, results), params: params, results: results})
	}
	g.pairType = g.typeOf(nil, []byte{tI32, tI64})
	for i := range g.funcs {
		g.body(i)
	}
	return g.encode()
}

type gen struct {
	r         *rand.Rand
	types     [][2][]byte
	typeIndex map[string]uint32
	funcs     []genFunc
	pairType  uint32
}

type genFunc struct {
	typ             uint32
	params, results []byte
	locals          []byte // declared, after the parameters
	code            []byte
}

func (g *gen) typeOf(params, results []byte) uint32 {
	key := string(params) + "\x00" + string(results) // 0 is no value type
	if i, ok := g.typeIndex[key]; ok {
		return i
	}
	g.types = append(g.types, [2][]byte{params, results})
	g.typeIndex[key] = uint32(len(g.types) - 1)
	return uint32(len(g.types) - 1)
}

// genData is the passive data segment memory.init copies from.
var genData = []byte("the quick brown fox jumps over the lazy dog 0123456789")

func (g *gen) encode() []byte {
	section := func(out []byte, id byte, content []byte) []byte {
		out = append(out, id)
		out = leb128.AppendUint32(out, uint32(len(content)))
		return append(out, content...)
	}
	out := append([]byte(nil), magic...)

	var c []byte
	c = leb128.AppendUint32(c, uint32(len(g.types)))
	for _, t := range g.types {
		c = append(c, 0x60)
		c = leb128.AppendUint32(c, uint32(len(t[0])))
		c = append(c, t[0]...)
		c = leb128.AppendUint32(c, uint32(len(t[1])))
		c = append(c, t[1]...)
	}
	out = section(out, secType, c)

	c = leb128.AppendUint32(nil, uint32(len(g.funcs)))
	for _, f := range g.funcs {
		c = leb128.AppendUint32(c, f.typ)
	}
	out = section(out, secFunction, c)

	c = append(leb128.AppendUint32(nil, 1), tFuncref, 0)
	c = leb128.AppendUint32(c, uint32(len(g.funcs)))
	out = section(out, secTable, c)

	out = section(out, secMemory, []byte{1, 1, 1, 4})

	// One mutable global of each scalar type.
	c = []byte{4,
		tI32, 1, 0x41, 7, 0x0b,
		tI64, 1, 0x42, 9, 0x0b,
		tF32, 1, 0x43, 0, 0, 0x80, 0x3f, 0x0b,
		tF64, 1, 0x44, 0, 0, 0, 0, 0, 0, 0xf0, 0xbf, 0x0b}
	out = section(out, secGlobal, c)

	c = leb128.AppendUint32(nil, uint32(len(g.funcs)+1))
	for i := range g.funcs {
		name := "f" + string(rune('0'+i))
		c = leb128.AppendUint32(c, uint32(len(name)))
		c = append(c, name...)
		c = append(c, 0)
		c = leb128.AppendUint32(c, uint32(i))
	}
	c = append(c, 6, 'm', 'e', 'm', 'o', 'r', 'y', 2, 0)
	out = section(out, secExport, c)

	// Every function in the table, from 0.
	c = []byte{1, 0, 0x41, 0, 0x0b}
	c = leb128.AppendUint32(c, uint32(len(g.funcs)))
	for i := range g.funcs {
		c = leb128.AppendUint32(c, uint32(i))
	}
	out = section(out, secElement, c)

	out = section(out, secDataCount, []byte{1})

	c = leb128.AppendUint32(nil, uint32(len(g.funcs)))
	for _, f := range g.funcs {
		var b []byte
		b = leb128.AppendUint32(b, uint32(len(f.locals)))
		for _, t := range f.locals {
			b = append(b, 1, t)
		}
		b = append(b, f.code...)
		c = leb128.AppendUint32(c, uint32(len(b)))
		c = append(c, b...)
	}
	out = section(out, secCode, c)

	c = []byte{1, 1}
	c = leb128.AppendUint32(c, uint32(len(genData)))
	c = append(c, genData...)
	return section(out, secData, c)
}

// fgen generates one function body.
type fgen struct {
	*gen
	f      *genFunc
	idx    int
	code   []byte
	labels []genLabel
	nodes  int // expression nodes left
	depth  int // nesting of expressions
	loops  int // nesting of loops
	// counters are the loops' counters, which nothing else may write, or a
	// loop could run 2^32 times.
	counters map[uint32]bool
}

type genLabel struct {
	types []byte // what a branch to it carries
	loop  bool
}

func (g *gen) body(i int) {
	f := &g.funcs[i]
	fg := &fgen{gen: g, f: f, idx: i, nodes: 20 + g.r.Intn(60), counters: map[uint32]bool{}}
	fg.labels = []genLabel{{types: f.results}}
	for _, t := range f.results {
		fg.expr(t)
	}
	fg.code = append(fg.code, opEnd)
	f.code = fg.code
}

func (g *fgen) emit(b ...byte) { g.code = append(g.code, b...) }

func (g *fgen) u32(v uint32) { g.code = leb128.AppendUint32(g.code, v) }

func (g *fgen) newLocal(t byte) uint32 {
	g.f.locals = append(g.f.locals, t)
	return uint32(len(g.f.params) + len(g.f.locals) - 1)
}

func (g *fgen) localsOf(t byte) []uint32 {
	var out []uint32
	for i, p := range g.f.params {
		if p == t {
			out = append(out, uint32(i))
		}
	}
	for i, l := range g.f.locals {
		if l == t {
			out = append(out, uint32(len(g.f.params)+i))
		}
	}
	return out
}

var globalOf = map[byte]uint32{tI32: 0, tI64: 1, tF32: 2, tF64: 3}

var (
	genF32 = []uint32{0, 0x80000000, 0x3f800000, 0xc0490fdb, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7fa12345, 0x00000001, 0x4b000001}
	genF64 = []uint64{0, 1 << 63, 0x3ff0000000000000, 0xc00921fb54442d18, 0x7ff0000000000000, 0xfff0000000000000,
		0x7ff8000000000000, 0xfff8000000000000, 0x7ff4000000000123, 1, 0x4330000000000001}
	genI64 = []int64{0, 1, -1, 7, math.MaxInt64, math.MinInt64, 0x12345678abcdef, -4096}
)

func (g *fgen) constant(t byte) {
	switch t {
	case tI32:
		g.emit(0x41)
		g.code = leb128.AppendInt64(g.code, int64(int32(genI64[g.r.Intn(len(genI64))])+int32(g.r.Intn(100))))
	case tI64:
		g.emit(0x42)
		g.code = leb128.AppendInt64(g.code, genI64[g.r.Intn(len(genI64))]+int64(g.r.Intn(100)))
	case tF32:
		g.emit(0x43)
		g.code = binary.LittleEndian.AppendUint32(g.code, genF32[g.r.Intn(len(genF32))])
	case tF64:
		g.emit(0x44)
		g.code = binary.LittleEndian.AppendUint64(g.code, genF64[g.r.Intn(len(genF64))])
	}
}

func (g *fgen) leaf(t byte) {
	switch ls := g.localsOf(t); {
	case len(ls) > 0 && g.r.Intn(2) == 0:
		g.emit(0x20)
		g.u32(ls[g.r.Intn(len(ls))])
	case g.r.Intn(4) == 0:
		g.emit(0x23)
		g.u32(globalOf[t])
	default:
		g.constant(t)
	}
}

var (
	genUnary = map[byte][]byte{
		tI32: {0x45, 0x67, 0x68, 0x69, 0xc0, 0xc1},
		tI64: {0x79, 0x7a, 0x7b, 0xc2, 0xc3, 0xc4},
		tF32: {0x8b, 0x8c, 0x8d, 0x8e, 0x8f, 0x90, 0x91},
		tF64: {0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f},
	}
	genBinary = map[byte][]byte{
		tI32: {0x6a, 0x6b, 0x6c, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78},
		tI64: {0x7c, 0x7d, 0x7e, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a},
		tF32: {0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98},
		tF64: {0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6},
	}
	// Division and remainder trap on zero (and on overflow).
	genTrapping = map[byte][]byte{tI32: {0x6d, 0x6e, 0x6f, 0x70}, tI64: {0x7f, 0x80, 0x81, 0x82}}
	genCompare  = map[byte][2]byte{tI32: {0x46, 0x4f}, tI64: {0x51, 0x5a}, tF32: {0x5b, 0x60}, tF64: {0x61, 0x66}}
	// Conversions to a type: opcode bytes and the operand type.
	genConvert = map[byte][]struct {
		op   []byte
		from byte
	}{
		tI32: {{[]byte{0xa7}, tI64}, {[]byte{0xbc}, tF32}, {[]byte{0xfc, 0}, tF32}, {[]byte{0xfc, 1}, tF32},
			{[]byte{0xfc, 2}, tF64}, {[]byte{0xfc, 3}, tF64}, {[]byte{0xa8}, tF32}, {[]byte{0xab}, tF64}},
		tI64: {{[]byte{0xac}, tI32}, {[]byte{0xad}, tI32}, {[]byte{0xbd}, tF64}, {[]byte{0xfc, 4}, tF32},
			{[]byte{0xfc, 5}, tF32}, {[]byte{0xfc, 6}, tF64}, {[]byte{0xfc, 7}, tF64}, {[]byte{0xb0}, tF64}},
		tF32: {{[]byte{0xb2}, tI32}, {[]byte{0xb3}, tI32}, {[]byte{0xb4}, tI64}, {[]byte{0xb5}, tI64},
			{[]byte{0xb6}, tF64}, {[]byte{0xbe}, tI32}},
		tF64: {{[]byte{0xb7}, tI32}, {[]byte{0xb8}, tI32}, {[]byte{0xb9}, tI64}, {[]byte{0xba}, tI64},
			{[]byte{0xbb}, tF32}, {[]byte{0xbf}, tI64}},
	}
	genLoad = map[byte][]byte{
		tI32: {0x28, 0x2c, 0x2d, 0x2e, 0x2f},
		tI64: {0x29, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35},
		tF32: {0x2a},
		tF64: {0x2b},
	}
	genStore = map[byte][]byte{tI32: {0x36, 0x3a, 0x3b}, tI64: {0x37, 0x3c, 0x3d, 0x3e}, tF32: {0x38}, tF64: {0x39}}
	// SIMD: splat, extract_lane, lane count, binary and unary operations.
	genSIMD = map[byte]struct {
		splat, extract uint32
		lanes          int
		binary, unary  []uint32
	}{
		tI32: {0x11, 0x1b, 4, []uint32{0xae, 0xb1, 0xb5, 0xb6, 0xb9, 0x37}, []uint32{0xa0, 0xa1}},
		tI64: {0x12, 0x1d, 2, []uint32{0xce, 0xd1, 0xd5, 0xd6}, []uint32{0xc0, 0xc1}},
		tF32: {0x13, 0x1f, 4, []uint32{0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xeb}, []uint32{0xe0, 0xe1, 0xe3, 0x67, 0x68, 0x69, 0x6a}},
		tF64: {0x14, 0x21, 2, []uint32{0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7}, []uint32{0xec, 0xed, 0xef, 0x74, 0x75, 0x7a, 0x94}},
	}
)

// address leaves an in-bounds address for an access of up to 8 bytes.
func (g *fgen) address() {
	g.expr(tI32)
	g.emit(0x41)
	g.code = leb128.AppendInt64(g.code, 0x7ff8)
	g.emit(0x71)
}

// statement emits code that leaves the stack as it was.
func (g *fgen) statement() {
	switch g.r.Intn(8) {
	case 0:
		t := g.anyScalar()
		g.expr(t)
		g.emit(0x1a) // drop
	case 1:
		t := g.anyScalar()
		g.address()
		g.expr(t)
		st := genStore[t]
		g.emit(st[g.r.Intn(len(st))], 0)
		g.u32(uint32(g.r.Intn(16)))
	case 2:
		t := g.anyScalar()
		g.expr(t)
		g.emit(0x24)
		g.u32(globalOf[t])
	case 3: // memory.fill
		g.i32(int32(g.r.Intn(0x8000)))
		g.expr(tI32)
		g.i32(int32(g.r.Intn(3000)))
		g.emit(0xfc, 11, 0)
	case 4: // memory.copy
		g.i32(int32(g.r.Intn(0x8000)))
		g.i32(int32(g.r.Intn(0x8000)))
		g.i32(int32(g.r.Intn(3000)))
		g.emit(0xfc, 10, 0, 0)
	case 5: // memory.init, and rarely data.drop (later inits of more than 0 bytes trap)
		if g.r.Intn(10) == 0 {
			g.emit(0xfc, 9, 0)
			return
		}
		g.i32(int32(g.r.Intn(0x8000)))
		g.i32(int32(g.r.Intn(8)))
		g.i32(int32(g.r.Intn(len(genData) - 8)))
		g.emit(0xfc, 8, 0, 0)
	case 6: // local.set of a fresh or existing local
		t := g.anyScalar()
		g.expr(t)
		var ls []uint32
		for _, l := range g.localsOf(t) {
			if !g.counters[l] {
				ls = append(ls, l)
			}
		}
		if len(ls) == 0 || g.r.Intn(3) == 0 {
			ls = []uint32{g.newLocal(t)}
		}
		g.emit(0x21)
		g.u32(ls[g.r.Intn(len(ls))])
	case 7: // table.fill with nulls
		g.i32(int32(g.r.Intn(len(g.funcs))))
		g.emit(0xd0, tFuncref)
		g.i32(0)
		g.emit(0xfc, 17, 0)
	}
}

func (g *fgen) i32(v int32) {
	g.emit(0x41)
	g.code = leb128.AppendInt64(g.code, int64(v))
}

func (g *fgen) anyScalar() byte { return []byte{tI32, tI64, tF32, tF64}[g.r.Intn(4)] }

// expr emits code that pushes one value of type t.
func (g *fgen) expr(t byte) {
	g.nodes--
	if g.nodes <= 0 || g.depth > 10 {
		g.leaf(t)
		return
	}
	g.depth++
	defer func() { g.depth-- }()
	switch g.r.Intn(22) {
	case 0, 1:
		g.leaf(t)
	case 2:
		g.expr(t)
		un := genUnary[t]
		g.emit(un[g.r.Intn(len(un))])
	case 3, 4:
		g.expr(t)
		g.expr(t)
		bin := genBinary[t]
		if tr := genTrapping[t]; tr != nil && g.r.Intn(6) == 0 {
			bin = tr
		}
		g.emit(bin[g.r.Intn(len(bin))])
	case 5:
		if t != tI32 {
			g.leaf(t)
			return
		}
		u := g.anyScalar()
		g.expr(u)
		g.expr(u)
		r := genCompare[u]
		g.emit(r[0] + byte(g.r.Intn(int(r[1]-r[0])+1)))
	case 6:
		cs := genConvert[t]
		c := cs[g.r.Intn(len(cs))]
		g.expr(c.from)
		g.emit(c.op...)
	case 7: // select, untyped or typed
		g.expr(t)
		g.expr(t)
		g.expr(tI32)
		if g.r.Intn(2) == 0 {
			g.emit(0x1b)
		} else {
			g.emit(0x1c, 1, t)
		}
	case 8: // block with a conditional branch out, maybe more after it
		g.emit(opBlock, t)
		g.labels = append(g.labels, genLabel{types: []byte{t}})
		g.expr(t)
		g.expr(tI32)
		g.emit(0x0d, 0)
		if g.r.Intn(2) == 0 {
			g.emit(0x1a)
			g.statement()
			g.expr(t)
		}
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd)
	case 9: // if/else
		g.expr(tI32)
		g.emit(opIf, t)
		g.labels = append(g.labels, genLabel{types: []byte{t}})
		g.expr(t)
		if g.r.Intn(4) == 0 { // leave the then arm early
			g.emit(0x0c, 0)
			g.expr(tI64) // dead code
			g.emit(0x1a)
		}
		g.emit(opElse)
		g.expr(t)
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd)
	case 10: // bounded loop
		if g.loops >= 2 {
			g.leaf(t)
			return
		}
		g.loops++
		counter, acc := g.newLocal(tI32), g.newLocal(t)
		g.counters[counter] = true
		g.i32(int32(1 + g.r.Intn(12)))
		g.emit(0x21)
		g.u32(counter)
		g.expr(t)
		g.emit(0x21)
		g.u32(acc)
		g.emit(opLoop, 0x40)
		g.labels = append(g.labels, genLabel{loop: true})
		g.emit(0x20)
		g.u32(acc)
		g.expr(t)
		bin := genBinary[t]
		g.emit(bin[g.r.Intn(len(bin))], 0x21)
		g.u32(acc)
		if g.r.Intn(3) == 0 {
			g.statement()
		}
		g.emit(0x20)
		g.u32(counter)
		g.i32(1)
		g.emit(0x6b, 0x22)
		g.u32(counter)
		g.emit(0x0d, 0) // br_if to the loop
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd, 0x20)
		g.u32(acc)
		g.loops--
	case 11: // br_table over three blocks
		g.emit(opBlock, t, opBlock, t, opBlock, t)
		g.labels = append(g.labels, genLabel{types: []byte{t}}, genLabel{types: []byte{t}}, genLabel{types: []byte{t}})
		g.expr(t)
		g.expr(tI32)
		g.emit(0x0e, 2, 0, 1, 2)
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd)
		g.expr(t)
		bin := genBinary[t]
		g.emit(bin[g.r.Intn(len(bin))])
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd)
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd)
	case 12: // call or call_indirect of an earlier function, outside loops
		if g.idx == 0 || g.loops > 0 {
			g.leaf(t)
			return
		}
		j := g.r.Intn(g.idx)
		callee := &g.funcs[j]
		for _, p := range callee.params {
			g.expr(p)
		}
		if g.r.Intn(2) == 0 {
			g.emit(0x10)
			g.u32(uint32(j))
		} else {
			g.i32(int32(j))
			g.emit(0x11)
			g.u32(callee.typ)
			g.emit(0)
		}
		if len(callee.results) == 1 && callee.results[0] == t {
			return
		}
		for range callee.results {
			g.emit(0x1a)
		}
		g.expr(t)
	case 13: // conditional return
		g.expr(tI32)
		g.emit(opIf, t)
		g.labels = append(g.labels, genLabel{types: []byte{t}})
		for _, r := range g.f.results {
			g.expr(r)
		}
		g.emit(0x0f, opElse)
		g.expr(t)
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd)
	case 14: // conditional branch to an enclosing label, the function's included
		var targets []int
		for i, l := range g.labels {
			if !l.loop {
				targets = append(targets, i)
			}
		}
		l := targets[g.r.Intn(len(targets))]
		for _, lt := range g.labels[l].types {
			g.expr(lt)
		}
		g.expr(tI32)
		g.emit(0x0d)
		g.u32(uint32(len(g.labels) - 1 - l))
		for range g.labels[l].types {
			g.emit(0x1a)
		}
		g.expr(t)
	case 15:
		g.address()
		ld := genLoad[t]
		g.emit(ld[g.r.Intn(len(ld))], 0)
		g.u32(uint32(g.r.Intn(16)))
	case 16:
		g.statement()
		g.expr(t)
	case 17: // a multi-value block
		if t != tI64 {
			g.expr(t)
			return
		}
		tmp := g.newLocal(tI64)
		g.emit(opBlock)
		g.code = leb128.AppendInt64(g.code, int64(g.pairType))
		g.labels = append(g.labels, genLabel{types: []byte{tI32, tI64}})
		g.expr(tI32)
		g.expr(tI64)
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd, 0x21)
		g.u32(tmp)
		g.emit(0xac, 0x20)
		g.u32(tmp)
		g.emit(0x7c)
	case 18: // SIMD
		s := genSIMD[t]
		g.expr(t)
		g.emit(0xfd)
		g.u32(s.splat)
		if g.r.Intn(2) == 0 {
			g.expr(t)
			g.emit(0xfd)
			g.u32(s.splat)
			g.emit(0xfd)
			g.u32(s.binary[g.r.Intn(len(s.binary))])
		} else {
			g.emit(0xfd)
			g.u32(s.unary[g.r.Intn(len(s.unary))])
		}
		g.emit(0xfd)
		g.u32(s.extract)
		g.emit(byte(g.r.Intn(s.lanes)))
	case 19: // memory.grow, memory.size, table.grow, table.size, references
		if t != tI32 {
			g.expr(t)
			return
		}
		switch g.r.Intn(5) {
		case 0:
			g.i32(int32(g.r.Intn(2)))
			g.emit(0x40, 0)
		case 1:
			g.emit(0x3f, 0)
		case 2:
			g.emit(0xd0, tFuncref)
			g.i32(int32(g.r.Intn(100)))
			g.emit(0xfc, 15, 0)
		case 3:
			g.emit(0xfc, 16, 0)
		case 4:
			g.i32(int32(g.r.Intn(len(g.funcs))))
			g.emit(0x25, 0, 0xd1)
		}
	case 20: // unconditional branch out of a block, with dead code after it
		g.emit(opBlock, t)
		g.labels = append(g.labels, genLabel{types: []byte{t}})
		g.expr(t)
		g.emit(0x0c, 0)
		g.expr(t)
		g.emit(0x1a, 0x01)
		g.labels = g.labels[:len(g.labels)-1]
		g.emit(opEnd)
	case 21: // trap, rarely
		if g.r.Intn(8) != 0 {
			g.leaf(t)
			return
		}
		g.expr(tI32)
		g.emit(opIf, 0x40, 0x00, opEnd)
		g.expr(t)
	}
}
