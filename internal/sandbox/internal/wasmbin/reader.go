package wasmbin

import (
	"fmt"
	"unicode/utf8"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/leb128"
)

// Reader reads the entries of a section, bounds-checked. Its error is
// sticky, so that a sequence of reads needs one check: every read after a
// failure returns zero values. Offsets, in errors and from Pos, count from
// the start of the module, so that an error names the byte a tool shows.
//
// Decode reads every section with one; the instrumenter, which validates
// what Decode leaves to the engine, reads them again with another.
type Reader struct {
	b   []byte // the module, up to the end of what may be read
	pos int
	err error
}

// NewReader reads b[pos:end].
func NewReader(b []byte, pos, end int) *Reader {
	return &Reader{b: b[:end], pos: pos}
}

// Pos is the offset of the next byte to read.
func (r *Reader) Pos() int { return r.pos }

// Left is how many bytes are left to read.
func (r *Reader) Left() int { return len(r.b) - r.pos }

// Err is the first failure, a *DecodeError, or nil.
func (r *Reader) Err() error { return r.err }

// Failf records a failure at offset off, unless one is recorded already.
func (r *Reader) Failf(off int, format string, args ...any) {
	if r.err == nil {
		r.err = &DecodeError{Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
}

func (r *Reader) fail(msg string) { r.Failf(r.pos, "%s", msg) }

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail("unexpected end of section")
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

// U32 reads an unsigned 32-bit LEB128.
func (r *Reader) U32() uint32 {
	if r.err != nil {
		return 0
	}
	v, n := leb128.Uint32(r.b, r.pos)
	if n == 0 {
		r.fail("malformed or truncated unsigned LEB128 integer")
		return 0
	}
	r.pos += n
	return v
}

// U64 reads an unsigned 64-bit LEB128.
func (r *Reader) U64() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := leb128.Uint64(r.b, r.pos)
	if n == 0 {
		r.fail("malformed or truncated unsigned LEB128 integer")
		return 0
	}
	r.pos += n
	return v
}

// Int reads a signed LEB128 of at most bits bits (32, 33 or 64).
func (r *Reader) Int(bits uint) int64 {
	if r.err != nil {
		return 0
	}
	v, n := leb128.Int(r.b, r.pos, bits)
	if n == 0 {
		r.fail("malformed or truncated signed LEB128 integer")
		return 0
	}
	r.pos += n
	return v
}

// Bytes reads n bytes, without copying them: the slice's capacity ends with
// it, so that an append to it cannot write over the module.
func (r *Reader) Bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.pos {
		r.fail("unexpected end of section")
		return nil
	}
	s := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return s
}

// Skip skips n bytes.
func (r *Reader) Skip(n int) { r.Bytes(n) }

// SkipToEnd skips what is left.
func (r *Reader) SkipToEnd() {
	if r.err == nil {
		r.pos = len(r.b)
	}
}

// VecLen reads a vector length and checks it against the bytes left, given
// the smallest encoding of one element, so that a hostile count can make
// the decoder neither allocate nor loop beyond the input's size.
func (r *Reader) VecLen(minElem int) uint32 {
	off := r.pos
	n := r.U32()
	if r.err == nil && uint64(n)*uint64(minElem) > uint64(len(r.b)-r.pos) {
		r.Failf(off, "vector of %d elements does not fit in the section", n)
		return 0
	}
	return n
}

// Name reads a name, which must be valid UTF-8, without copying it.
func (r *Reader) Name() []byte {
	off := r.pos
	n := r.U32()
	if r.err != nil {
		return nil
	}
	if int64(n) > int64(len(r.b)-r.pos) {
		r.Failf(off, "name runs past the end of the section")
		return nil
	}
	s := r.b[r.pos : r.pos+int(n) : r.pos+int(n)]
	if !utf8.Valid(s) {
		r.Failf(off, "name is not valid UTF-8")
		return nil
	}
	r.pos += int(n)
	return s
}
