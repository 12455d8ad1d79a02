// Package leb128 reads and writes the LEB128 integers of the WebAssembly
// binary format, for every package here that decodes or encodes a module.
//
// Readers refuse what the spec calls malformed (an encoding longer than the
// type needs, or bits set beyond it), so that a module one decoder accepts
// no other refuses for its integers. They take the input and a position and
// return the value and the bytes read, 0 on failure: the instrumenter calls
// them once per immediate, so they must stay small enough to inline.
package leb128

// Uint32 decodes an unsigned LEB128 of at most 32 bits at in[pos:]: at most
// 5 bytes, with no bit set beyond the 32nd. n is 0 when it is malformed or
// truncated.
func Uint32(in []byte, pos int) (v uint32, n int) {
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

// Uint64 decodes an unsigned LEB128 of at most 64 bits at in[pos:] (the
// limits of a 64-bit memory or table): at most 10 bytes, with no bit set
// beyond the 64th. n is 0 when it is malformed or truncated.
func Uint64(in []byte, pos int) (v uint64, n int) {
	var shift uint
	for i := pos; i < len(in); i++ {
		b := in[i]
		if shift == 63 && b&0xfe != 0 {
			return 0, 0
		}
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, i - pos + 1
		}
		shift += 7
	}
	return 0, 0
}

// Int decodes a signed LEB128 of at most bits bits (32, 33 or 64) at
// in[pos:]: at most ceil(bits/7) bytes, and the unused bits of the last byte
// must repeat the sign bit. n is 0 when it is malformed or truncated.
func Int(in []byte, pos int, bits uint) (v int64, n int) {
	var shift uint
	for i := pos; i < len(in); i++ {
		b := in[i]
		if shift+7 >= bits {
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

// AppendUint32 appends the shortest encoding of v.
func AppendUint32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// AppendInt64 appends the shortest encoding of v.
func AppendInt64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// Uint32Len is the length of AppendUint32's encoding of v.
func Uint32Len(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// Int64Len is the length of AppendInt64's encoding of v.
func Int64Len(v int64) int {
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
