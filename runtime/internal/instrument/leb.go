package instrument

import (
	"fmt"
	"unicode/utf8"
)

// readU32 decodes an unsigned LEB128 of at most 32 bits at in[pos:]. It
// refuses what the spec calls malformed: more than 5 bytes, or bits set
// beyond the 32nd. n is 0 when it fails.
func readU32(in []byte, pos int) (v uint32, n int) {
	if pos < len(in) && in[pos] < 0x80 {
		return uint32(in[pos]), 1
	}
	var shift uint
	for i := pos; i < len(in); i++ {
		b := in[i]
		if shift == 28 && b&0xf0 != 0 {
			return 0, 0
		}
		v |= uint32(b&0x7f) << shift
		if b < 0x80 {
			return v, i - pos + 1
		}
		shift += 7
	}
	return 0, 0
}

// readSigned decodes a signed LEB128 of at most bits bits (32, 33 or 64):
// at most ceil(bits/7) bytes, and the unused bits of the last byte must
// repeat the sign bit.
func readSigned(in []byte, pos int, bits uint) (v int64, n int) {
	var shift uint
	for i := pos; i < len(in); i++ {
		b := in[i]
		last := shift+7 >= bits
		if last {
			if b&0x80 != 0 {
				return 0, 0
			}
			// The bits from the sign bit up to bit 6 must be all 0 or all 1.
			mask := byte(0x7f) &^ (byte(1)<<(bits-1-shift) - 1)
			if s := b & mask; s != 0 && s != mask {
				return 0, 0
			}
		}
		v |= int64(b&0x7f) << shift
		shift += 7
		if b < 0x80 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v, i - pos + 1
		}
	}
	return 0, 0
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func s64Len(v int64) int {
	n := 1
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return n
		}
		n++
	}
}

func u32Len(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// reader reads module-level structures. Its error is sticky so that a
// sequence of reads needs one check; every read after a failure returns
// zero values.
type reader struct {
	in  []byte // ends at the end of the current section
	pos int
	err error
}

func (r *reader) failAt(off int, format string, args ...any) {
	if r.err == nil {
		r.err = &instrumentError{fn: -1, offset: off, msg: fmt.Sprintf(format, args...)}
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.in) {
		r.failAt(r.pos, "unexpected end of section")
		return 0
	}
	b := r.in[r.pos]
	r.pos++
	return b
}

func (r *reader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := readU32(r.in, r.pos)
	if n == 0 {
		r.failAt(r.pos, "malformed or truncated unsigned LEB128 integer")
		return 0
	}
	r.pos += n
	return v
}

func (r *reader) signed(bits uint) int64 {
	if r.err != nil {
		return 0
	}
	v, n := readSigned(r.in, r.pos, bits)
	if n == 0 {
		r.failAt(r.pos, "malformed or truncated signed LEB128 integer")
		return 0
	}
	r.pos += n
	return v
}

func (r *reader) skip(n int) {
	if r.err != nil {
		return
	}
	if n > len(r.in)-r.pos {
		r.failAt(r.pos, "unexpected end of section")
		return
	}
	r.pos += n
}

// vecLen reads a vector length and checks it against the bytes left, given
// the smallest encoding of one element, so that a hostile count can make
// the decoder neither allocate nor loop beyond the input's size.
func (r *reader) vecLen(minElem int) uint32 {
	off := r.pos
	n := r.u32()
	if r.err == nil && uint64(n)*uint64(minElem) > uint64(len(r.in)-r.pos) {
		r.failAt(off, "vector of %d elements does not fit in the section", n)
		return 0
	}
	return n
}

// name reads a name, valid UTF-8, and returns it without copying.
func (r *reader) name() []byte {
	off := r.pos
	n := r.u32()
	if r.err != nil {
		return nil
	}
	if int64(n) > int64(len(r.in)-r.pos) {
		r.failAt(off, "name runs past the end of the section")
		return nil
	}
	s := r.in[r.pos : r.pos+int(n)]
	if !utf8.Valid(s) {
		r.failAt(off, "name is not valid UTF-8")
		return nil
	}
	r.pos += int(n)
	return s
}
