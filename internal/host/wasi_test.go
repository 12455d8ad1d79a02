package host

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/testenv"
)

// wasiMemory is a bounds-checked, slice-backed guest memory.
type wasiMemory struct{ b []byte }

func (m *wasiMemory) Size() uint32 { return uint32(len(m.b)) }

func (m *wasiMemory) Read(off, n uint32) ([]byte, bool) {
	end := uint64(off) + uint64(n)
	if end > uint64(len(m.b)) {
		return nil, false
	}
	return m.b[off:end:end], true
}

func (m *wasiMemory) Write(off uint32, p []byte) bool {
	end := uint64(off) + uint64(len(p))
	if end > uint64(len(m.b)) {
		return false
	}
	copy(m.b[off:], p)
	return true
}

const wasiMemSize = 2 << 16

// wasiEnv is one guest's view of the virtual WASI: a session and a memory
// that starts filled with 0xAA, so that untouched bytes are recognizable.
type wasiEnv struct {
	t   *testing.T
	s   *Session
	ctx context.Context
	m   *wasiMemory
	// mem is what calls pass; nil simulates a guest exporting no memory.
	mem Memory
}

func newWASIEnv(t *testing.T, stdin string, maxOutput int) *wasiEnv {
	return newWASIEnvDigest(t, stdin, [32]byte{}, maxOutput)
}

func newWASIEnvDigest(t *testing.T, stdin string, digest [32]byte, maxOutput int) *wasiEnv {
	s := NewSession([]byte(stdin), digest, maxOutput)
	m := &wasiMemory{b: bytes.Repeat([]byte{0xAA}, wasiMemSize)}
	return &wasiEnv{t: t, s: s, ctx: WithSession(context.Background(), s), m: m, mem: m}
}

func wasiFunction(t testing.TB, name string) Function {
	for _, f := range WASI() {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no WASI function %q", name)
	return Function{}
}

// call invokes name with params through Function.Call and returns its errno.
func (e *wasiEnv) call(name string, params ...uint64) errno {
	e.t.Helper()
	f := wasiFunction(e.t, name)
	require.Len(e.t, params, len(f.Params), "%s params", name)
	stack := make([]uint64, max(len(f.Params), len(f.Results)))
	copy(stack, params)
	f.Call(e.ctx, e.mem, stack)
	return errno(stack[0])
}

func (e *wasiEnv) bytes(off, n uint32) []byte { return e.m.b[off : off+n] }

func (e *wasiEnv) u32(off uint32) uint32 { return binary.LittleEndian.Uint32(e.m.b[off:]) }

func (e *wasiEnv) u64(off uint32) uint64 { return binary.LittleEndian.Uint64(e.m.b[off:]) }

func (e *wasiEnv) put(off uint32, b []byte) { copy(e.m.b[off:], b) }

// iovecs lays out an iovec array at off pointing at the given (buf, len) pairs.
func (e *wasiEnv) iovecs(off uint32, pairs ...uint32) {
	for i, v := range pairs {
		binary.LittleEndian.PutUint32(e.m.b[off+uint32(i)*4:], v)
	}
}

func untouched(n int) []byte { return bytes.Repeat([]byte{0xAA}, n) }

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestWASIHasEveryPreview1FunctionWithItsSignature(t *testing.T) {
	// i = i32, I = i64; every function but proc_exit returns an i32 errno.
	want := map[string]string{
		"args_get": "ii", "args_sizes_get": "ii", "environ_get": "ii", "environ_sizes_get": "ii",
		"clock_res_get": "ii", "clock_time_get": "iIi",
		"fd_advise": "iIIi", "fd_allocate": "iII", "fd_close": "i", "fd_datasync": "i",
		"fd_fdstat_get": "ii", "fd_fdstat_set_flags": "ii", "fd_fdstat_set_rights": "iII",
		"fd_filestat_get": "ii", "fd_filestat_set_size": "iI", "fd_filestat_set_times": "iIIi",
		"fd_pread": "iiiIi", "fd_prestat_get": "ii", "fd_prestat_dir_name": "iii",
		"fd_pwrite": "iiiIi", "fd_read": "iiii", "fd_readdir": "iiiIi", "fd_renumber": "ii",
		"fd_seek": "iIii", "fd_sync": "i", "fd_tell": "ii", "fd_write": "iiii",
		"path_create_directory": "iii", "path_filestat_get": "iiiii",
		"path_filestat_set_times": "iiiiIIi", "path_link": "iiiiiii", "path_open": "iiiiiIIii",
		"path_readlink": "iiiiii", "path_remove_directory": "iii", "path_rename": "iiiiii",
		"path_symlink": "iiiii", "path_unlink_file": "iii",
		"poll_oneoff": "iiii", "proc_exit": "i", "proc_raise": "i", "sched_yield": "",
		"random_get":  "ii",
		"sock_accept": "iii", "sock_recv": "iiiiii", "sock_send": "iiiii", "sock_shutdown": "ii",
	}
	require.Len(t, want, 46)

	fns := WASI()
	require.Len(t, fns, 46)
	got := map[string]string{}
	for _, f := range fns {
		assert.Equal(t, WASIModule, f.Module, f.Name)
		assert.Equal(t, "wasi_snapshot_preview1", f.Module)
		var sig strings.Builder
		for _, p := range f.Params {
			switch p {
			case I32:
				sig.WriteByte('i')
			case I64:
				sig.WriteByte('I')
			default:
				t.Errorf("%s: param type %#x", f.Name, p)
			}
		}
		got[f.Name] = sig.String()
		if f.Name == "proc_exit" {
			assert.Empty(t, f.Results, f.Name)
		} else {
			assert.Equal(t, []ValueType{I32}, f.Results, f.Name)
		}
		assert.NotNil(t, f.Call, f.Name)
	}
	assert.Equal(t, want, got)

	again := WASI()
	assert.Same(t, &fns[0], &again[0], "WASI builds its slice once")
	assert.Equal(t, len(fns), cap(fns), "an append must not write into the shared array")
}

func TestWASIArgsAndEnviron(t *testing.T) {
	e := newWASIEnv(t, "", 100)

	require.Equal(t, errnoSuccess, e.call("args_sizes_get", 100, 104))
	assert.Equal(t, uint32(1), e.u32(100), "argc")
	assert.Equal(t, uint32(len("executor\x00")), e.u32(104), "argv_buf_size")

	require.Equal(t, errnoSuccess, e.call("args_get", 200, 300))
	assert.Equal(t, uint32(300), e.u32(200), "argv[0] points into argv_buf")
	assert.Equal(t, []byte("executor\x00"), e.bytes(300, 9))
	assert.Equal(t, untouched(4), e.bytes(204, 4), "argv has one entry")
	assert.Equal(t, untouched(1), e.bytes(309, 1))

	require.Equal(t, errnoSuccess, e.call("environ_sizes_get", 400, 404))
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 0}, e.bytes(400, 8))

	require.Equal(t, errnoSuccess, e.call("environ_get", 500, 600))
	assert.Equal(t, untouched(8), e.bytes(500, 8), "no variables, nothing written")
	assert.Equal(t, untouched(8), e.bytes(600, 8))
}

func TestWASIClocks(t *testing.T) {
	tests := []struct {
		id   uint64
		want uint64
	}{
		{id: 0, want: FixedEpochNanos}, // realtime
		{id: 1, want: FixedEpochNanos}, // monotonic
		{id: 2, want: 0},               // process cputime
		{id: 3, want: 0},               // thread cputime
	}
	for _, tc := range tests {
		e := newWASIEnv(t, "", 100)
		require.Equal(t, errnoSuccess, e.call("clock_time_get", tc.id, 1, 64), "clock %d", tc.id)
		assert.Equal(t, le64(tc.want), e.bytes(64, 8), "clock %d", tc.id)
		require.Equal(t, errnoSuccess, e.call("clock_res_get", tc.id, 128), "clock %d", tc.id)
		assert.Equal(t, le64(1), e.bytes(128, 8), "clock %d", tc.id)
	}
	assert.Equal(t, uint64(946684800_000_000_000), FixedEpochNanos, "2000-01-01T00:00:00Z")

	e := newWASIEnv(t, "", 100)
	assert.Equal(t, errnoInval, e.call("clock_time_get", 4, 0, 64))
	assert.Equal(t, errnoInval, e.call("clock_res_get", 4, 64))
	assert.Equal(t, errnoInval, e.call("clock_time_get", 0xFFFFFFFF, 0, 64))
	assert.Equal(t, untouched(8), e.bytes(64, 8))
	assert.Equal(t, errnoFault, e.call("clock_time_get", 0, 0, wasiMemSize-4))
	assert.Equal(t, errnoFault, e.call("clock_res_get", 1, wasiMemSize-7))
	assert.Equal(t, untouched(4), e.bytes(wasiMemSize-4, 4))
}

func TestWASIFdWriteStdoutAndStderr(t *testing.T) {
	e := newWASIEnv(t, "", 100)
	e.put(1000, []byte("hello, "))
	e.put(2000, []byte("world"))
	e.iovecs(16, 1000, 7, 2000, 5, 3000, 0)

	require.Equal(t, errnoSuccess, e.call("fd_write", 1, 16, 3, 8))
	assert.Equal(t, uint32(12), e.u32(8), "nwritten")
	assert.Equal(t, []byte("hello, world"), e.s.Stdout())

	e.iovecs(16, 2000, 5)
	require.Equal(t, errnoSuccess, e.call("fd_write", 2, 16, 1, 8))
	assert.Equal(t, uint32(5), e.u32(8))
	stderr, truncated := e.s.Stderr()
	assert.Equal(t, []byte("world"), stderr)
	assert.False(t, truncated)
	assert.Equal(t, []byte("hello, world"), e.s.Stdout(), "stderr stays apart")

	require.Equal(t, errnoSuccess, e.call("fd_write", 1, 16, 0, 8))
	assert.Equal(t, uint32(0), e.u32(8), "no iovecs, nothing written")
}

func TestWASIFdWriteStdoutBound(t *testing.T) {
	e := newWASIEnv(t, "", 10)
	e.put(1000, []byte("0123456789X"))
	e.iovecs(16, 1000, 10)
	require.Equal(t, errnoSuccess, e.call("fd_write", 1, 16, 1, 8), "exactly the bound fits")
	assert.Equal(t, []byte("0123456789"), e.s.Stdout())

	e.iovecs(16, 1010, 1)
	assert.PanicsWithValue(t, ErrOutputTooLarge, func() { e.call("fd_write", 1, 16, 1, 8) })
	assert.Equal(t, []byte("0123456789"), e.s.Stdout())
}

func TestWASIFdWriteStderrTruncates(t *testing.T) {
	e := newWASIEnv(t, "", 10)
	e.put(0, bytes.Repeat([]byte{'e'}, StderrLimit-3))
	e.put(StderrLimit-3, []byte("ABCDEF"))
	e.iovecs(StderrLimit+100, 0, StderrLimit+3)

	require.Equal(t, errnoSuccess, e.call("fd_write", 2, StderrLimit+100, 1, StderrLimit+200))
	assert.Equal(t, uint32(StderrLimit+3), e.u32(StderrLimit+200), "the guest is told everything was written")
	stderr, truncated := e.s.Stderr()
	assert.True(t, truncated)
	require.Len(t, stderr, StderrLimit)
	assert.Equal(t, []byte("eeeABC"), stderr[StderrLimit-6:])

	require.Equal(t, errnoSuccess, e.call("fd_write", 2, StderrLimit+100, 1, StderrLimit+200))
	stderr, _ = e.s.Stderr()
	assert.Len(t, stderr, StderrLimit)
	assert.Empty(t, e.s.Stdout())
}

// TestWASIFdWriteStreams: with SetStreams, each write reaches its writer
// as it is made; stderr is bounded by the output bound, not StderrLimit,
// and a write past it stops the guest without reaching the writer.
func TestWASIFdWriteStreams(t *testing.T) {
	e := newWASIEnv(t, "", StderrLimit+10)
	var out, errs bytes.Buffer
	e.s.SetStreams(&out, &errs)
	e.put(1000, []byte("out"))
	e.iovecs(16, 1000, 3)
	require.Equal(t, errnoSuccess, e.call("fd_write", 1, 16, 1, 8))
	assert.Equal(t, "out", out.String(), "written through at once")
	assert.Equal(t, []byte("out"), e.s.Stdout(), "and kept")

	e.put(0, bytes.Repeat([]byte{'e'}, StderrLimit+10))
	e.iovecs(StderrLimit+100, 0, StderrLimit+10)
	require.Equal(t, errnoSuccess, e.call("fd_write", 2, StderrLimit+100, 1, StderrLimit+200))
	assert.Equal(t, StderrLimit+10, errs.Len(), "stderr is not cut at StderrLimit")
	e.iovecs(StderrLimit+100, 0, 1)
	assert.PanicsWithValue(t, ErrOutputTooLarge, func() { e.call("fd_write", 2, StderrLimit+100, 1, StderrLimit+200) })
	assert.Equal(t, StderrLimit+10, errs.Len(), "the write past the bound is not passed on")
	assert.Equal(t, "out", out.String(), "the streams stay apart")
}

func TestWASIFdReadStdinToEOF(t *testing.T) {
	e := newWASIEnv(t, "hello, world", 100)

	e.iovecs(16, 1000, 3, 2000, 4)
	require.Equal(t, errnoSuccess, e.call("fd_read", 0, 16, 2, 8))
	assert.Equal(t, uint32(7), e.u32(8), "nread")
	assert.Equal(t, []byte("hel"), e.bytes(1000, 3))
	assert.Equal(t, []byte("lo, "), e.bytes(2000, 4))
	assert.Equal(t, untouched(1), e.bytes(1003, 1))

	e.iovecs(16, 3000, 10, 4000, 10)
	require.Equal(t, errnoSuccess, e.call("fd_read", 0, 16, 2, 8))
	assert.Equal(t, uint32(5), e.u32(8), "only what is left")
	assert.Equal(t, append([]byte("world"), untouched(5)...), e.bytes(3000, 10))
	assert.Equal(t, untouched(10), e.bytes(4000, 10))

	require.Equal(t, errnoSuccess, e.call("fd_read", 0, 16, 2, 8), "EOF is not an error")
	assert.Equal(t, uint32(0), e.u32(8))
	assert.Equal(t, append([]byte("world"), untouched(5)...), e.bytes(3000, 10))
}

func TestWASIStreamsAreOneWayAndOnlyThree(t *testing.T) {
	e := newWASIEnv(t, "in", 100)
	e.put(1000, []byte("out"))
	e.iovecs(16, 1000, 3)
	for _, fd := range []uint64{1, 2} {
		assert.Equal(t, errnoBadf, e.call("fd_read", fd, 16, 1, 8), "fd_read(%d)", fd)
	}
	assert.Equal(t, errnoBadf, e.call("fd_write", 0, 16, 1, 8))
	for _, fd := range []uint64{3, 4, 0xFFFFFFFF} {
		assert.Equal(t, errnoBadf, e.call("fd_read", fd, 16, 1, 8), "fd_read(%d)", fd)
		assert.Equal(t, errnoBadf, e.call("fd_write", fd, 16, 1, 8), "fd_write(%d)", fd)
	}
	assert.Equal(t, untouched(4), e.bytes(8, 4))
	assert.Equal(t, []byte("out"), e.bytes(1000, 3))
	assert.Empty(t, e.s.Stdout())
}

func TestWASIBadPointersAreEFAULT(t *testing.T) {
	const end = wasiMemSize
	t.Run("fd_write iovec array", func(t *testing.T) {
		e := newWASIEnv(t, "", 100)
		assert.Equal(t, errnoFault, e.call("fd_write", 1, end-4, 1, 8))
		assert.Equal(t, errnoFault, e.call("fd_write", 1, 16, 0x20000000, 8), "iovs_len*8 wraps a u32")
		assert.Equal(t, untouched(4), e.bytes(8, 4))
	})
	t.Run("fd_write buffer", func(t *testing.T) {
		e := newWASIEnv(t, "", 100)
		e.put(1000, []byte("ok"))
		e.iovecs(16, 1000, 2, end-1, 2)
		assert.Equal(t, errnoFault, e.call("fd_write", 1, 16, 2, 8))
		assert.Empty(t, e.s.Stdout(), "nothing written before the fault was found")
		assert.Equal(t, untouched(4), e.bytes(8, 4))
	})
	t.Run("fd_write result", func(t *testing.T) {
		e := newWASIEnv(t, "", 100)
		e.put(1000, []byte("ok"))
		e.iovecs(16, 1000, 2)
		assert.Equal(t, errnoFault, e.call("fd_write", 2, 16, 1, end-3))
		stderr, _ := e.s.Stderr()
		assert.Empty(t, stderr)
	})
	t.Run("fd_read buffer", func(t *testing.T) {
		e := newWASIEnv(t, "abc", 100)
		e.iovecs(16, 1000, 1, end, 1)
		assert.Equal(t, errnoFault, e.call("fd_read", 0, 16, 2, 8))
		assert.Equal(t, untouched(1), e.bytes(1000, 1))
		e.iovecs(16, 1000, 3)
		require.Equal(t, errnoSuccess, e.call("fd_read", 0, 16, 1, 8))
		assert.Equal(t, []byte("abc"), e.bytes(1000, 3), "the failed read consumed nothing")
	})
	t.Run("fd_read result", func(t *testing.T) {
		e := newWASIEnv(t, "abc", 100)
		e.iovecs(16, 1000, 3)
		assert.Equal(t, errnoFault, e.call("fd_read", 0, 16, 1, end))
		assert.Equal(t, untouched(3), e.bytes(1000, 3))
	})
	t.Run("args", func(t *testing.T) {
		e := newWASIEnv(t, "", 100)
		assert.Equal(t, errnoFault, e.call("args_get", 0, end-8))
		assert.Equal(t, errnoFault, e.call("args_sizes_get", 0, end-2))
		assert.Equal(t, errnoFault, e.call("environ_sizes_get", end, 0))
		assert.Equal(t, untouched(8), e.bytes(0, 8))
	})
	t.Run("fdstat and filestat", func(t *testing.T) {
		e := newWASIEnv(t, "", 100)
		assert.Equal(t, errnoFault, e.call("fd_fdstat_get", 1, end-23))
		assert.Equal(t, errnoFault, e.call("fd_filestat_get", 1, end-63))
		assert.Equal(t, untouched(63), e.bytes(end-63, 63))
	})
	t.Run("random_get", func(t *testing.T) {
		e := newWASIEnv(t, "", 100)
		assert.Equal(t, errnoFault, e.call("random_get", end-10, 11))
		assert.Equal(t, untouched(10), e.bytes(end-10, 10))
		assert.Equal(t, errnoSuccess, e.call("random_get", end+100, 0), "an empty buffer is never accessed")
	})
}

func TestWASIWithoutMemory(t *testing.T) {
	e := newWASIEnv(t, "abc", 100)
	e.mem = nil
	faults := []struct {
		name   string
		params []uint64
	}{
		{"args_get", []uint64{0, 8}},
		{"args_sizes_get", []uint64{0, 8}},
		{"environ_sizes_get", []uint64{0, 8}},
		{"clock_time_get", []uint64{0, 0, 0}},
		{"clock_res_get", []uint64{0, 0}},
		{"fd_write", []uint64{1, 0, 0, 8}},
		{"fd_read", []uint64{0, 0, 0, 8}},
		{"fd_fdstat_get", []uint64{0, 0}},
		{"fd_filestat_get", []uint64{0, 0}},
		{"random_get", []uint64{0, 1}},
		{"poll_oneoff", []uint64{0, 0, 1, 0}},
	}
	for _, tc := range faults {
		assert.Equal(t, errnoFault, e.call(tc.name, tc.params...), tc.name)
	}
	// Functions that need no memory still answer.
	assert.Equal(t, errnoSuccess, e.call("environ_get", 0, 0))
	assert.Equal(t, errnoSuccess, e.call("random_get", 0, 0))
	assert.Equal(t, errnoSuccess, e.call("sched_yield"))
	assert.Equal(t, errnoBadf, e.call("fd_write", 3, 0, 0, 8), "the fd is checked first")
	assert.Equal(t, errnoNotcapable, e.call("path_open", 0, 0, 0, 0, 0, 0, 0, 0, 0))
	assert.Equal(t, errnoSpipe, e.call("fd_seek", 0, 0, 0, 0))
	assert.Empty(t, e.s.Stdout())
}

func TestWASIRandomIsDeterministic(t *testing.T) {
	read := func(digest [32]byte, sizes ...uint32) []byte {
		e := newWASIEnvDigest(t, "", digest, 100)
		var out []byte
		for _, n := range sizes {
			require.Equal(t, errnoSuccess, e.call("random_get", 1000, uint64(n)))
			out = append(out, e.bytes(1000, n)...)
			assert.Equal(t, untouched(1), e.bytes(1000+n, 1))
		}
		return out
	}
	var d1, d2 [32]byte
	d2[0] = 1

	first := read(d1, 200)
	assert.Equal(t, first, read(d1, 200), "same digest, same bytes")
	assert.Equal(t, first, read(d1, 1, 63, 64, 72), "one stream however it is split")
	assert.NotEqual(t, first, read(d2, 200), "different digest, different bytes")
	assert.NotEqual(t, first[:100], first[100:], "the stream does not repeat")
	// Pinned (the BLAKE3 derive-key XOF of a zero digest): a change to the
	// stream changes every replayed output.
	assert.Equal(t, "f5c0ee562aa2a3bf20897abf4496ec4a", hex.EncodeToString(first[:16]))
}

// wasiSub encodes a 48-byte preview1 subscription.
func wasiSub(userdata uint64, tag byte, arg uint32) []byte {
	b := make([]byte, 48)
	binary.LittleEndian.PutUint64(b[0:], userdata)
	b[8] = tag
	binary.LittleEndian.PutUint32(b[16:], arg)           // clock id or fd
	binary.LittleEndian.PutUint64(b[24:], 1_000_000_000) // clock timeout (relative)
	binary.LittleEndian.PutUint64(b[32:], 1)             // clock precision
	binary.LittleEndian.PutUint16(b[40:], 0)             // clock flags
	return b
}

// wasiEvent encodes a 32-byte preview1 event.
func wasiEvent(userdata uint64, code errno, typ byte, nbytes uint64, flags uint16) []byte {
	b := make([]byte, 32)
	binary.LittleEndian.PutUint64(b[0:], userdata)
	binary.LittleEndian.PutUint16(b[8:], uint16(code))
	b[10] = typ
	binary.LittleEndian.PutUint64(b[16:], nbytes)
	binary.LittleEndian.PutUint16(b[24:], flags)
	return b
}

func TestWASIPollOneoff(t *testing.T) {
	e := newWASIEnv(t, "0123456789", 100)
	e.put(2000, []byte("abc"))
	e.iovecs(16, 2000, 3)
	require.Equal(t, errnoSuccess, e.call("fd_write", 1, 16, 1, 8))
	require.Equal(t, errnoSuccess, e.call("fd_write", 2, 16, 1, 8))

	subs := [][]byte{
		wasiSub(0x1111, 0, 1), // monotonic clock
		wasiSub(0x2222, 1, 0), // read stdin
		wasiSub(0x3333, 2, 1), // write stdout
		wasiSub(0x4444, 2, 2), // write stderr
		wasiSub(0x5555, 1, 3), // no such fd
		wasiSub(0x6666, 1, 1), // read stdout
		wasiSub(0x7777, 2, 0), // write stdin
		wasiSub(0x8888, 0, 9), // no such clock
		wasiSub(0x9999, 0, 0), // realtime clock
	}
	e.put(4096, bytes.Join(subs, nil))
	require.Equal(t, errnoSuccess, e.call("poll_oneoff", 4096, 8192, uint64(len(subs)), 12))
	assert.Equal(t, uint32(len(subs)), e.u32(12), "nevents: every subscription fires")
	want := bytes.Join([][]byte{
		wasiEvent(0x1111, errnoSuccess, 0, 0, 0),
		wasiEvent(0x2222, errnoSuccess, 1, 10, 0),
		wasiEvent(0x3333, errnoSuccess, 2, 97, 0),
		wasiEvent(0x4444, errnoSuccess, 2, StderrLimit-3, 0),
		wasiEvent(0x5555, errnoBadf, 1, 0, 0),
		wasiEvent(0x6666, errnoBadf, 1, 0, 0),
		wasiEvent(0x7777, errnoBadf, 2, 0, 0),
		wasiEvent(0x8888, errnoInval, 0, 0, 0),
		wasiEvent(0x9999, errnoSuccess, 0, 0, 0),
	}, nil)
	assert.Equal(t, want, e.bytes(8192, uint32(len(want))))
	assert.Equal(t, untouched(1), e.bytes(8192+uint32(len(want)), 1))

	// Once stdin is drained its read event reports hangup.
	e.iovecs(16, 3000, 100)
	require.Equal(t, errnoSuccess, e.call("fd_read", 0, 16, 1, 8))
	e.put(4096, wasiSub(0xABCD, 1, 0))
	require.Equal(t, errnoSuccess, e.call("poll_oneoff", 4096, 8192, 1, 12))
	assert.Equal(t, wasiEvent(0xABCD, errnoSuccess, 1, 0, 1), e.bytes(8192, 32))
}

func TestWASIPollOneoffInPlace(t *testing.T) {
	e := newWASIEnv(t, "xy", 100)
	e.put(4096, bytes.Join([][]byte{wasiSub(1, 0, 0), wasiSub(2, 1, 0), wasiSub(3, 1, 7)}, nil))
	require.Equal(t, errnoSuccess, e.call("poll_oneoff", 4096, 4096+16, 3, 12), "events overlap the subscriptions")
	assert.Equal(t, uint32(3), e.u32(12))
	assert.Equal(t, bytes.Join([][]byte{
		wasiEvent(1, errnoSuccess, 0, 0, 0),
		wasiEvent(2, errnoSuccess, 1, 2, 0),
		wasiEvent(3, errnoBadf, 1, 0, 0),
	}, nil), e.bytes(4096+16, 96))
}

func TestWASIPollOneoffErrors(t *testing.T) {
	e := newWASIEnv(t, "", 100)
	e.put(4096, bytes.Join([][]byte{wasiSub(1, 0, 0), wasiSub(2, 3, 0)}, nil))

	assert.Equal(t, errnoInval, e.call("poll_oneoff", 4096, 8192, 0, 12), "no subscriptions")
	assert.Equal(t, errnoInval, e.call("poll_oneoff", 4096, 8192, 2, 12), "unknown event type")
	assert.Equal(t, errnoFault, e.call("poll_oneoff", wasiMemSize-47, 8192, 1, 12))
	assert.Equal(t, errnoFault, e.call("poll_oneoff", 4096, wasiMemSize-31, 1, 12))
	assert.Equal(t, errnoFault, e.call("poll_oneoff", 4096, 8192, 1, wasiMemSize-3))
	assert.Equal(t, errnoFault, e.call("poll_oneoff", 4096, 8192, 0x10000000, 12))
	assert.Equal(t, untouched(64), e.bytes(8192, 64), "no event written on error")
	assert.Equal(t, untouched(4), e.bytes(12, 4))
}

func TestWASIProcExit(t *testing.T) {
	e := newWASIEnv(t, "", 100)
	for _, code := range []uint32{0, 3, 0xFFFFFFFF} {
		// PanicsWithValue compares pointers by identity, so recover by hand.
		got := func() (v any) {
			defer func() { v = recover() }()
			e.call("proc_exit", uint64(code))
			return nil
		}()
		assert.Equal(t, &ExitError{Code: code}, got)
	}
	assert.Equal(t, errnoNotsup, e.call("proc_raise", 6))
	assert.Equal(t, errnoSuccess, e.call("sched_yield"))
}

func TestWASIStdioStat(t *testing.T) {
	const (
		rightsStdin  = 1<<0 | 1<<1 | 1<<3 | 1<<4 | 1<<21 | 1<<27 // datasync read set_flags sync filestat_get poll
		rightsOutput = 1<<0 | 1<<6 | 1<<3 | 1<<4 | 1<<21 | 1<<27 // datasync write set_flags sync filestat_get poll
	)
	for fd, rights := range []uint64{rightsStdin, rightsOutput, rightsOutput} {
		e := newWASIEnv(t, "", 100)
		require.Equal(t, errnoSuccess, e.call("fd_fdstat_get", uint64(fd), 64), "fd %d", fd)
		want := append([]byte{2, 0, 0, 0, 0, 0, 0, 0}, le64(rights)...) // character device, no flags
		want = append(want, le64(0)...)                                 // inheriting
		assert.Equal(t, want, e.bytes(64, 24), "fd %d", fd)

		require.Equal(t, errnoSuccess, e.call("fd_filestat_get", uint64(fd), 128), "fd %d", fd)
		want = append(le64(0), le64(uint64(fd)+1)...) // dev, ino
		want = append(want, 2, 0, 0, 0, 0, 0, 0, 0)   // filetype
		want = append(want, le64(1)...)               // nlink
		want = append(want, le64(0)...)               // size
		for range 3 {
			want = append(want, le64(FixedEpochNanos)...) // atim, mtim, ctim
		}
		assert.Equal(t, want, e.bytes(128, 64), "fd %d", fd)
		assert.Equal(t, untouched(1), e.bytes(192, 1))
	}
	e := newWASIEnv(t, "", 100)
	assert.Equal(t, errnoBadf, e.call("fd_fdstat_get", 3, 64))
	assert.Equal(t, errnoBadf, e.call("fd_filestat_get", 3, 64))
	assert.Equal(t, untouched(64), e.bytes(64, 64))
}

func TestWASIFdstatSetFlags(t *testing.T) {
	e := newWASIEnv(t, "", 100)
	require.Equal(t, errnoSuccess, e.call("fd_fdstat_set_flags", 0, 4)) // nonblock
	require.Equal(t, errnoSuccess, e.call("fd_fdstat_set_flags", 1, 1)) // append
	require.Equal(t, errnoSuccess, e.call("fd_fdstat_get", 0, 64))
	assert.Equal(t, []byte{4, 0}, e.bytes(66, 2))
	require.Equal(t, errnoSuccess, e.call("fd_fdstat_get", 1, 64))
	assert.Equal(t, []byte{1, 0}, e.bytes(66, 2))

	for _, flags := range []uint64{2, 8, 16, 32, 1 << 16} { // dsync, rsync, sync, unknown
		assert.Equal(t, errnoInval, e.call("fd_fdstat_set_flags", 1, flags), "flags %#x", flags)
	}
	require.Equal(t, errnoSuccess, e.call("fd_fdstat_get", 1, 64))
	assert.Equal(t, []byte{1, 0}, e.bytes(66, 2), "a refused change changes nothing")
	assert.Equal(t, errnoBadf, e.call("fd_fdstat_set_flags", 3, 0))
}

func TestWASIFdClose(t *testing.T) {
	e := newWASIEnv(t, "", 100)
	e.put(1000, []byte("x"))
	e.iovecs(16, 1000, 1)
	require.Equal(t, errnoSuccess, e.call("fd_write", 1, 16, 1, 8))
	require.Equal(t, errnoSuccess, e.call("fd_close", 1))

	assert.Equal(t, errnoBadf, e.call("fd_write", 1, 16, 1, 8))
	assert.Equal(t, errnoBadf, e.call("fd_fdstat_get", 1, 64))
	assert.Equal(t, errnoBadf, e.call("fd_close", 1))
	assert.Equal(t, errnoBadf, e.call("fd_close", 3))
	assert.Equal(t, []byte("x"), e.s.Stdout(), "closing keeps what was written")
	require.Equal(t, errnoSuccess, e.call("fd_write", 2, 16, 1, 8), "other fds stay open")
}

func TestWASIFdRenumber(t *testing.T) {
	e := newWASIEnv(t, "", 100)
	e.put(1000, []byte("x"))
	e.iovecs(16, 1000, 1)
	require.Equal(t, errnoSuccess, e.call("fd_fdstat_set_flags", 2, 1))
	require.Equal(t, errnoSuccess, e.call("fd_renumber", 2, 1))

	require.Equal(t, errnoSuccess, e.call("fd_write", 1, 16, 1, 8))
	stderr, _ := e.s.Stderr()
	assert.Equal(t, []byte("x"), stderr, "fd 1 now is stderr")
	assert.Empty(t, e.s.Stdout())
	require.Equal(t, errnoSuccess, e.call("fd_fdstat_get", 1, 64))
	assert.Equal(t, []byte{1, 0}, e.bytes(66, 2), "flags move with the stream")
	assert.Equal(t, errnoBadf, e.call("fd_write", 2, 16, 1, 8), "fd 2 is closed")

	assert.Equal(t, errnoBadf, e.call("fd_renumber", 2, 0), "closed source")
	assert.Equal(t, errnoBadf, e.call("fd_renumber", 0, 2), "closed target")
	assert.Equal(t, errnoBadf, e.call("fd_renumber", 0, 3))
	require.Equal(t, errnoSuccess, e.call("fd_renumber", 0, 0))
	assert.Equal(t, errnoSuccess, e.call("fd_fdstat_get", 0, 64), "renumbering onto itself keeps it open")
}

// TestWASIErrnoFamilies pins the answer of every function that cannot do
// anything here. They are called without memory to show they never touch it.
func TestWASIErrnoFamilies(t *testing.T) {
	type fam struct {
		names []string
		// fdParams are the positions of fd arguments.
		fdParams []int
		onStdio  errno
	}
	families := []fam{
		{[]string{"fd_seek", "fd_tell", "fd_pread", "fd_pwrite", "fd_advise", "fd_allocate"}, []int{0}, errnoSpipe},
		{[]string{"fd_filestat_set_size", "fd_filestat_set_times", "fd_readdir"}, []int{0}, errnoNotcapable},
		{[]string{"fd_fdstat_set_rights"}, []int{0}, errnoNotsup},
		{[]string{"fd_sync", "fd_datasync"}, []int{0}, errnoSuccess},
		{[]string{"fd_prestat_get", "fd_prestat_dir_name"}, []int{0}, errnoBadf},
		{[]string{
			"path_create_directory", "path_filestat_get", "path_filestat_set_times", "path_open",
			"path_readlink", "path_remove_directory", "path_unlink_file",
		}, []int{0}, errnoNotcapable},
		{[]string{"path_symlink"}, []int{2}, errnoNotcapable},
		{[]string{"path_link"}, []int{0, 4}, errnoNotcapable},
		{[]string{"path_rename"}, []int{0, 3}, errnoNotcapable},
		{[]string{"sock_accept", "sock_recv", "sock_send", "sock_shutdown"}, []int{0}, errnoNotcapable},
	}
	seen := 0
	for _, f := range families {
		for _, name := range f.names {
			seen++
			params := make([]uint64, len(wasiFunction(t, name).Params))
			for i := range params {
				params[i] = 0xFFFFFFF0 // every pointer out of range
			}
			with := func(fd uint64) []uint64 {
				p := append([]uint64(nil), params...)
				for _, i := range f.fdParams {
					p[i] = fd
				}
				return p
			}
			e := newWASIEnv(t, "", 100)
			e.mem = nil
			for fd := uint64(0); fd < 3; fd++ {
				assert.Equal(t, f.onStdio, e.call(name, with(fd)...), "%s on fd %d", name, fd)
			}
			for _, fd := range []uint64{3, 4, 1 << 31, 0xFFFFFFFF} {
				assert.Equal(t, errnoBadf, e.call(name, with(fd)...), "%s on fd %d", name, fd)
			}
			for _, i := range f.fdParams[1:] {
				p := with(1)
				p[i] = 3
				assert.Equal(t, errnoBadf, e.call(name, p...), "%s with one bad fd", name)
			}
			require.Equal(t, errnoSuccess, e.call("fd_close", 1))
			assert.Equal(t, errnoBadf, e.call(name, with(1)...), "%s on a closed fd", name)
		}
	}
	assert.Equal(t, 28, seen)
}

func TestWASIStdioHotPathDoesNotAllocate(t *testing.T) {
	if testenv.Race {
		t.Skip("the race detector allocates")
	}
	e := newWASIEnv(t, strings.Repeat("x", 1<<20), 100)
	read, write := wasiFunction(t, "fd_read").Call, wasiFunction(t, "fd_write").Call
	e.iovecs(16, 1000, 64, 2000, 64)
	stack := make([]uint64, 4)
	// Stderr past its limit drops bytes, so writes do not grow a buffer.
	e.s.WriteStderr(make([]byte, StderrLimit))

	allocs := testing.AllocsPerRun(100, func() {
		stack[0], stack[1], stack[2], stack[3] = 0, 16, 2, 8
		read(e.ctx, e.mem, stack)
		stack[0], stack[1], stack[2], stack[3] = 2, 16, 2, 8
		write(e.ctx, e.mem, stack)
	})
	assert.Zero(t, allocs)
	assert.Equal(t, uint32(128), e.u32(8))
}

func BenchmarkWASIFdWrite(b *testing.B) {
	m := &wasiMemory{b: make([]byte, wasiMemSize)}
	binary.LittleEndian.PutUint32(m.b[16:], 1000)
	binary.LittleEndian.PutUint32(m.b[20:], 16)
	write := wasiFunction(b, "fd_write").Call
	const bound = 1 << 20
	s := NewSession(nil, [32]byte{}, bound)
	ctx := WithSession(context.Background(), s)
	stack := make([]uint64, 4)
	b.ReportAllocs()
	for b.Loop() {
		if s.stdoutRoom() < 16 {
			s = NewSession(nil, [32]byte{}, bound)
			ctx = WithSession(context.Background(), s)
		}
		stack[0], stack[1], stack[2], stack[3] = 1, 16, 1, 8
		write(ctx, m, stack)
	}
}

func BenchmarkWASIFdRead(b *testing.B) {
	m := &wasiMemory{b: make([]byte, wasiMemSize)}
	binary.LittleEndian.PutUint32(m.b[16:], 1000)
	binary.LittleEndian.PutUint32(m.b[20:], 512)
	read := wasiFunction(b, "fd_read").Call
	input := make([]byte, 1<<26)
	s := NewSession(input, [32]byte{}, 0)
	ctx := WithSession(context.Background(), s)
	stack := make([]uint64, 4)
	b.ReportAllocs()
	for b.Loop() {
		if len(s.unreadStdin()) < 512 {
			s = NewSession(input, [32]byte{}, 0)
			ctx = WithSession(context.Background(), s)
		}
		stack[0], stack[1], stack[2], stack[3] = 0, 16, 1, 8
		read(ctx, m, stack)
	}
}
