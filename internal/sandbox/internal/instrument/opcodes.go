package instrument

// The typing of the instructions whose operands and result depend only on
// the opcode, as tables: the single-byte numeric instructions, the
// saturating truncations (0xfc 0-7) and SIMD (0xfd).

// numOp types a numeric instruction: n operands of types a (and b), one
// result. nan is the result's float type when it can be a NaN whose bits an
// engine chooses (arithmetic, rounding, min/max, demotion, promotion).
type numOp struct {
	n        uint8
	a, b     byte
	out, nan byte
}

// numeric covers 0x45..0xc4.
var numeric [256]numOp

// satTrunc covers 0xfc 0..7, i32/i64.trunc_sat_f32/f64_s/u.
var satTrunc = [8]numOp{
	{n: 1, a: tF32, out: tI32}, {n: 1, a: tF32, out: tI32},
	{n: 1, a: tF64, out: tI32}, {n: 1, a: tF64, out: tI32},
	{n: 1, a: tF32, out: tI64}, {n: 1, a: tF32, out: tI64},
	{n: 1, a: tF64, out: tI64}, {n: 1, a: tF64, out: tI64},
}

// memOp types a load or store: its natural alignment (log2) and value type.
type memOp struct {
	align byte
	t     byte
	store bool
}

// memOps covers 0x28..0x3e.
var memOps = [...]memOp{
	{2, tI32, false}, {3, tI64, false}, {2, tF32, false}, {3, tF64, false},
	{0, tI32, false}, {0, tI32, false}, {1, tI32, false}, {1, tI32, false},
	{0, tI64, false}, {0, tI64, false}, {1, tI64, false}, {1, tI64, false}, {2, tI64, false}, {2, tI64, false},
	{2, tI32, true}, {3, tI64, true}, {2, tF32, true}, {3, tF64, true},
	{0, tI32, true}, {1, tI32, true}, {0, tI64, true}, {1, tI64, true}, {2, tI64, true},
}

func init() {
	set := func(lo, hi int, op numOp) {
		for i := lo; i <= hi; i++ {
			numeric[i] = op
		}
	}
	un := func(a, out byte) numOp { return numOp{n: 1, a: a, out: out} }
	bin := func(a, out byte) numOp { return numOp{n: 2, a: a, b: a, out: out} }
	nanOf := func(op numOp) numOp { op.nan = op.out; return op }

	set(0x45, 0x45, un(tI32, tI32))
	set(0x46, 0x4f, bin(tI32, tI32))
	set(0x50, 0x50, un(tI64, tI32))
	set(0x51, 0x5a, bin(tI64, tI32))
	set(0x5b, 0x60, bin(tF32, tI32))
	set(0x61, 0x66, bin(tF64, tI32))
	set(0x67, 0x69, un(tI32, tI32))
	set(0x6a, 0x78, bin(tI32, tI32))
	set(0x79, 0x7b, un(tI64, tI64))
	set(0x7c, 0x8a, bin(tI64, tI64))
	set(0x8b, 0x8c, un(tF32, tF32))         // abs neg: bit operations
	set(0x8d, 0x91, nanOf(un(tF32, tF32)))  // ceil floor trunc nearest sqrt
	set(0x92, 0x97, nanOf(bin(tF32, tF32))) // add sub mul div min max
	set(0x98, 0x98, bin(tF32, tF32))        // copysign
	set(0x99, 0x9a, un(tF64, tF64))
	set(0x9b, 0x9f, nanOf(un(tF64, tF64)))
	set(0xa0, 0xa5, nanOf(bin(tF64, tF64)))
	set(0xa6, 0xa6, bin(tF64, tF64))
	set(0xa7, 0xa7, un(tI64, tI32))
	set(0xa8, 0xa9, un(tF32, tI32))
	set(0xaa, 0xab, un(tF64, tI32))
	set(0xac, 0xad, un(tI32, tI64))
	set(0xae, 0xaf, un(tF32, tI64))
	set(0xb0, 0xb1, un(tF64, tI64))
	set(0xb2, 0xb3, un(tI32, tF32))
	set(0xb4, 0xb5, un(tI64, tF32))
	set(0xb6, 0xb6, nanOf(un(tF64, tF32))) // demote
	set(0xb7, 0xb8, un(tI32, tF64))
	set(0xb9, 0xba, un(tI64, tF64))
	set(0xbb, 0xbb, nanOf(un(tF32, tF64))) // promote
	set(0xbc, 0xbc, un(tF32, tI32))
	set(0xbd, 0xbd, un(tF64, tI64))
	set(0xbe, 0xbe, un(tI32, tF32))
	set(0xbf, 0xbf, un(tI64, tF64))
	set(0xc0, 0xc1, un(tI32, tI32))
	set(0xc2, 0xc4, un(tI64, tI64))
}

// Immediate kinds of SIMD instructions.
const (
	simdNone    = iota + 1
	simdMem     // memarg
	simdMemLane // memarg, lane index
	simdLane    // lane index
	simdConst   // 16 bytes
	simdShuffle // 16 lane indices < 32
)

// simdOp types a SIMD instruction. Up to three operands, in order; nan is
// tF32 or tF64 when the result's lanes are f32x4 or f64x2 that can be
// engine-chosen NaNs.
type simdOp struct {
	imm   uint8
	align uint8 // natural alignment (log2), memory instructions
	lanes uint8 // lane count, lane immediates
	n     uint8
	in    [3]byte
	out   byte // 0: no result
	nan   byte
}

// simdOps covers 0xfd 0x00..0xff; relaxed SIMD (0x100 and up) is refused.
var simdOps [256]simdOp

func init() {
	v := tV128
	op := func(code int, imm uint8, out byte, in ...byte) *simdOp {
		o := &simdOps[code]
		*o = simdOp{imm: imm, out: out, n: uint8(len(in))}
		copy(o.in[:], in)
		return o
	}
	rng := func(lo, hi int, out byte, in ...byte) {
		for c := lo; c <= hi; c++ {
			op(c, simdNone, out, in...)
		}
	}
	nanRng := func(lo, hi int, nan byte, in ...byte) {
		for c := lo; c <= hi; c++ {
			op(c, simdNone, v, in...).nan = nan
		}
	}
	// Loads and stores.
	for c, a := range []uint8{4, 3, 3, 3, 3, 3, 3, 0, 1, 2, 3} { // v128.load .. load64_splat
		op(c, simdMem, v, tI32).align = a
	}
	op(0x0b, simdMem, 0, tI32, v).align = 4
	op(0x5c, simdMem, v, tI32).align = 2 // load32_zero
	op(0x5d, simdMem, v, tI32).align = 3 // load64_zero
	for i := 0; i < 4; i++ {
		l := op(0x54+i, simdMemLane, v, tI32, v) // load8..64_lane
		l.align, l.lanes = uint8(i), uint8(16>>i)
		s := op(0x58+i, simdMemLane, 0, tI32, v) // store8..64_lane
		s.align, s.lanes = uint8(i), uint8(16>>i)
	}
	op(0x0c, simdConst, v)
	op(0x0d, simdShuffle, v, v, v)
	op(0x0e, simdNone, v, v, v) // swizzle
	// Splats.
	for c, t := range []byte{tI32, tI32, tI32, tI64, tF32, tF64} {
		op(0x0f+c, simdNone, v, t)
	}
	// Lanes: extract_lane(s/u), replace_lane.
	lane := func(code int, lanes uint8, out byte, in ...byte) { op(code, simdLane, out, in...).lanes = lanes }
	lane(0x15, 16, tI32, v)
	lane(0x16, 16, tI32, v)
	lane(0x17, 16, v, v, tI32)
	lane(0x18, 8, tI32, v)
	lane(0x19, 8, tI32, v)
	lane(0x1a, 8, v, v, tI32)
	lane(0x1b, 4, tI32, v)
	lane(0x1c, 4, v, v, tI32)
	lane(0x1d, 2, tI64, v)
	lane(0x1e, 2, v, v, tI64)
	lane(0x1f, 4, tF32, v)
	lane(0x20, 4, v, v, tF32)
	lane(0x21, 2, tF64, v)
	lane(0x22, 2, v, v, tF64)
	// Comparisons give lane masks, never NaNs.
	rng(0x23, 0x4c, v, v, v)
	op(0x4d, simdNone, v, v) // not
	rng(0x4e, 0x51, v, v, v) // and andnot or xor
	op(0x52, simdNone, v, v, v, v)
	op(0x53, simdNone, tI32, v) // any_true
	nanRng(0x5e, 0x5e, tF32, v) // f32x4.demote_f64x2_zero
	nanRng(0x5f, 0x5f, tF64, v) // f64x2.promote_low_f32x4
	// i8x16.
	rng(0x60, 0x62, v, v) // abs neg popcnt
	rng(0x63, 0x64, tI32, v)
	rng(0x65, 0x66, v, v, v)
	nanRng(0x67, 0x6a, tF32, v) // f32x4 ceil floor trunc nearest
	rng(0x6b, 0x6d, v, v, tI32)
	rng(0x6e, 0x73, v, v, v)
	nanRng(0x74, 0x75, tF64, v) // f64x2 ceil floor
	rng(0x76, 0x79, v, v, v)
	nanRng(0x7a, 0x7a, tF64, v) // f64x2 trunc
	op(0x7b, simdNone, v, v, v)
	rng(0x7c, 0x7f, v, v) // extadd_pairwise
	// i16x8.
	rng(0x80, 0x81, v, v)
	op(0x82, simdNone, v, v, v) // q15mulr_sat_s
	rng(0x83, 0x84, tI32, v)
	rng(0x85, 0x86, v, v, v)
	rng(0x87, 0x8a, v, v)
	rng(0x8b, 0x8d, v, v, tI32)
	rng(0x8e, 0x93, v, v, v)
	nanRng(0x94, 0x94, tF64, v) // f64x2 nearest
	rng(0x95, 0x99, v, v, v)
	rng(0x9b, 0x9f, v, v, v)
	// i32x4.
	rng(0xa0, 0xa1, v, v)
	rng(0xa3, 0xa4, tI32, v)
	rng(0xa7, 0xaa, v, v)
	rng(0xab, 0xad, v, v, tI32)
	op(0xae, simdNone, v, v, v)
	op(0xb1, simdNone, v, v, v)
	rng(0xb5, 0xba, v, v, v)
	rng(0xbc, 0xbf, v, v, v)
	// i64x2.
	rng(0xc0, 0xc1, v, v)
	rng(0xc3, 0xc4, tI32, v)
	rng(0xc7, 0xca, v, v)
	rng(0xcb, 0xcd, v, v, tI32)
	op(0xce, simdNone, v, v, v)
	op(0xd1, simdNone, v, v, v)
	rng(0xd5, 0xdf, v, v, v)
	// f32x4, f64x2: abs and neg are bit operations.
	rng(0xe0, 0xe1, v, v)
	nanRng(0xe3, 0xe3, tF32, v)
	nanRng(0xe4, 0xeb, tF32, v, v) // add sub mul div min max pmin pmax
	rng(0xec, 0xed, v, v)
	nanRng(0xef, 0xef, tF64, v)
	nanRng(0xf0, 0xf7, tF64, v, v)
	// Conversions to and from integers are exact or saturating.
	rng(0xf8, 0xff, v, v)
}

// unsupported names the opcodes of proposals beyond WebAssembly 2.0 that a
// toolchain may emit, so that a refusal says what to turn off.
var unsupported = map[byte]string{
	0x06: "try (exception handling)",
	0x07: "catch (exception handling)",
	0x08: "throw (exception handling)",
	0x09: "rethrow (exception handling)",
	0x0a: "throw_ref (exception handling)",
	0x18: "delegate (exception handling)",
	0x19: "catch_all (exception handling)",
	0x1f: "try_table (exception handling)",
	0x12: "return_call (tail calls)",
	0x13: "return_call_indirect (tail calls)",
	0x14: "call_ref (typed function references)",
	0x15: "return_call_ref (tail calls)",
	0xd3: "ref.eq (garbage collection)",
	0xd4: "ref.as_non_null (typed function references)",
	0xd5: "br_on_null (typed function references)",
	0xd6: "br_on_non_null (typed function references)",
}
