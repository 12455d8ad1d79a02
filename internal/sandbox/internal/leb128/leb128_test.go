package leb128

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUint32(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		v    uint32
		n    int
	}{
		{"one byte", []byte{0x7f}, 127, 1},
		{"two bytes", []byte{0x80, 0x01}, 128, 2},
		{"padded zero", []byte{0x80, 0x80, 0x80, 0x80, 0x00}, 0, 5},
		{"max", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, math.MaxUint32, 5},
		{"bits beyond 32", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 0, 0},
		{"six bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, 0},
		{"truncated", []byte{0x80}, 0, 0},
		{"empty", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, n := Uint32(append([]byte{0xaa}, tt.in...), 1)
			assert.Equal(t, tt.v, v)
			assert.Equal(t, tt.n, n)
		})
	}
}

func TestUint64(t *testing.T) {
	max := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	v, n := Uint64(max, 0)
	assert.Equal(t, uint64(math.MaxUint64), v)
	assert.Equal(t, 10, n)
	_, n = Uint64([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, 0)
	assert.Zero(t, n, "a bit beyond the 64th")
	_, n = Uint64(max[:9], 0)
	assert.Zero(t, n, "truncated")
}

func TestInt(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		bits uint
		v    int64
		n    int
	}{
		{"minus one", []byte{0x7f}, 32, -1, 1},
		{"64", []byte{0xc0, 0x00}, 32, 64, 2},
		{"min i32", []byte{0x80, 0x80, 0x80, 0x80, 0x78}, 32, math.MinInt32, 5},
		{"max i32", []byte{0xff, 0xff, 0xff, 0xff, 0x07}, 32, math.MaxInt32, 5},
		// The unused bits of the last byte must repeat the sign bit.
		{"unsigned form of -1", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 32, 0, 0},
		{"too long for 32", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, 32, 0, 0},
		{"block type index", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 33, math.MaxUint32, 5},
		{"min i64", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, 64, math.MinInt64, 10},
		{"bad i64 padding", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x70}, 64, 0, 0},
		{"truncated", []byte{0xff}, 64, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, n := Int(tt.in, 0, tt.bits)
			assert.Equal(t, tt.v, v)
			assert.Equal(t, tt.n, n)
		})
	}
}

// TestAppendRoundTrips: what the writers write, the readers read back, in
// the length the Len functions say.
func TestAppendRoundTrips(t *testing.T) {
	for _, v := range []uint32{0, 1, 127, 128, 16383, 16384, 1 << 28, math.MaxUint32} {
		b := AppendUint32(nil, v)
		assert.Len(t, b, Uint32Len(v))
		got, n := Uint32(b, 0)
		assert.Equal(t, v, got)
		assert.Equal(t, len(b), n)
	}
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		b := AppendInt64(nil, v)
		assert.Len(t, b, Int64Len(v))
		got, n := Int(b, 0, 64)
		assert.Equal(t, v, got)
		assert.Equal(t, len(b), n)
	}
}
