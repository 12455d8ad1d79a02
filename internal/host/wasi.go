package host

import (
	"context"
	"encoding/binary"
	"math"
)

// WASIModule is the import module of the virtual WASI.
const WASIModule = "wasi_snapshot_preview1"

// WASI returns the virtual, deterministic wasi_snapshot_preview1: all 46
// preview1 functions with their exact signatures, none performing real I/O.
//
// # Notes
//
//   - The slice and its Functions are shared by every caller and must not be
//     modified.
//   - The functions act on the Session in ctx (see WithSession).
//   - The guest sees one argument (ProgramName), no environment, no preopened
//     directories and no sockets. fds 0, 1 and 2 are character devices backed
//     by the session; no other fd ever exists.
//   - Clocks report FixedEpochNanos, so time never passes: a guest that waits
//     for a deadline (a Go time.Sleep, for instance) spins until the timeout.
//     Only the JS engine's virtual timers move them (Session.AdvanceClock).
//   - proc_exit panics with *ExitError, and a write past the stdout bound
//     panics with ErrOutputTooLarge; the engine turns either into the error
//     of the running call.
func WASI() []Function { return wasiFunctions }

var wasiFunctions = func() []Function {
	fns := []Function{
		wasiFunc("args_get", wasiParams(I32, I32), argsGet),
		wasiFunc("args_sizes_get", wasiParams(I32, I32), argsSizesGet),
		wasiFunc("environ_get", wasiParams(I32, I32), environGet),
		wasiFunc("environ_sizes_get", wasiParams(I32, I32), environSizesGet),
		wasiFunc("clock_res_get", wasiParams(I32, I32), clockResGet),
		wasiFunc("clock_time_get", wasiParams(I32, I64, I32), clockTimeGet),
		wasiFunc("fd_advise", wasiParams(I32, I64, I64, I32), fdUnseekable),
		wasiFunc("fd_allocate", wasiParams(I32, I64, I64), fdUnseekable),
		wasiFunc("fd_close", wasiParams(I32), fdClose),
		wasiFunc("fd_datasync", wasiParams(I32), fdSync),
		wasiFunc("fd_fdstat_get", wasiParams(I32, I32), fdFdstatGet),
		wasiFunc("fd_fdstat_set_flags", wasiParams(I32, I32), fdFdstatSetFlags),
		wasiFunc("fd_fdstat_set_rights", wasiParams(I32, I64, I64), fdFdstatSetRights),
		wasiFunc("fd_filestat_get", wasiParams(I32, I32), fdFilestatGet),
		wasiFunc("fd_filestat_set_size", wasiParams(I32, I64), fdNotCapable),
		wasiFunc("fd_filestat_set_times", wasiParams(I32, I64, I64, I32), fdNotCapable),
		wasiFunc("fd_pread", wasiParams(I32, I32, I32, I64, I32), fdUnseekable),
		wasiFunc("fd_prestat_get", wasiParams(I32, I32), fdNoPrestat),
		wasiFunc("fd_prestat_dir_name", wasiParams(I32, I32, I32), fdNoPrestat),
		wasiFunc("fd_pwrite", wasiParams(I32, I32, I32, I64, I32), fdUnseekable),
		wasiFunc("fd_read", wasiParams(I32, I32, I32, I32), fdRead),
		wasiFunc("fd_readdir", wasiParams(I32, I32, I32, I64, I32), fdNotCapable),
		wasiFunc("fd_renumber", wasiParams(I32, I32), fdRenumber),
		wasiFunc("fd_seek", wasiParams(I32, I64, I32, I32), fdUnseekable),
		wasiFunc("fd_sync", wasiParams(I32), fdSync),
		wasiFunc("fd_tell", wasiParams(I32, I32), fdUnseekable),
		wasiFunc("fd_write", wasiParams(I32, I32, I32, I32), fdWrite),
		wasiFunc("path_create_directory", wasiParams(I32, I32, I32), onDir(0)),
		wasiFunc("path_filestat_get", wasiParams(I32, I32, I32, I32, I32), onDir(0)),
		wasiFunc("path_filestat_set_times", wasiParams(I32, I32, I32, I32, I64, I64, I32), onDir(0)),
		wasiFunc("path_link", wasiParams(I32, I32, I32, I32, I32, I32, I32), onDirs(0, 4)),
		wasiFunc("path_open", wasiParams(I32, I32, I32, I32, I32, I64, I64, I32, I32), onDir(0)),
		wasiFunc("path_readlink", wasiParams(I32, I32, I32, I32, I32, I32), onDir(0)),
		wasiFunc("path_remove_directory", wasiParams(I32, I32, I32), onDir(0)),
		wasiFunc("path_rename", wasiParams(I32, I32, I32, I32, I32, I32), onDirs(0, 3)),
		wasiFunc("path_symlink", wasiParams(I32, I32, I32, I32, I32), onDir(2)),
		wasiFunc("path_unlink_file", wasiParams(I32, I32, I32), onDir(0)),
		wasiFunc("poll_oneoff", wasiParams(I32, I32, I32, I32), pollOneoff),
		{Module: WASIModule, Name: "proc_exit", Params: wasiParams(I32), Results: []ValueType{}, Call: procExit},
		wasiFunc("proc_raise", wasiParams(I32), procRaise),
		wasiFunc("sched_yield", wasiParams(), schedYield),
		wasiFunc("random_get", wasiParams(I32, I32), randomGet),
		wasiFunc("sock_accept", wasiParams(I32, I32, I32), onSocket),
		wasiFunc("sock_recv", wasiParams(I32, I32, I32, I32, I32, I32), onSocket),
		wasiFunc("sock_send", wasiParams(I32, I32, I32, I32, I32), onSocket),
		wasiFunc("sock_shutdown", wasiParams(I32, I32), onSocket),
	}
	// A full slice expression keeps a caller's append from writing into the
	// shared backing array.
	return fns[:len(fns):len(fns)]
}()

func wasiParams(ts ...ValueType) []ValueType { return append([]ValueType{}, ts...) }

// wasiFunc declares a function returning a WASI errno, which every preview1
// function but proc_exit does.
func wasiFunc(name string, params []ValueType, impl func(ctx context.Context, mem Memory, stack []uint64) errno) Function {
	return Function{
		Module:  WASIModule,
		Name:    name,
		Params:  params,
		Results: []ValueType{I32},
		Call: func(ctx context.Context, mem Memory, stack []uint64) {
			stack[0] = uint64(impl(ctx, mem, stack))
		},
	}
}

// errno is a preview1 error code (witx type errno).
type errno uint32

const (
	errnoSuccess    errno = 0
	errnoBadf       errno = 8
	errnoFault      errno = 21
	errnoInval      errno = 28
	errnoNotsup     errno = 58
	errnoSpipe      errno = 70
	errnoNotcapable errno = 76
)

// Preview1 clock ids.
const (
	clockRealtime uint32 = iota
	clockMonotonic
	clockProcessCPUTime
	clockThreadCPUTime
)

const (
	// clockResolution is what clock_res_get reports for every clock. The
	// clocks never tick, so any value is as true as another; 1ns promises the
	// least.
	clockResolution uint64 = 1
	// cpuTimeNanos is what the CPU-time clocks report: no CPU time is
	// observable, as no time is.
	cpuTimeNanos uint64 = 0
)

// wasiState is the per-session state only the WASI functions use.
type wasiState struct {
	// fds maps the guest fds 0..2 to the stream each refers to; fd_close
	// and fd_renumber change it, so it is not fixed by the fd number.
	fds [3]fdEntry
	// scratch stages what a function writes to guest memory. Memory is an
	// interface, so a stack buffer handed to Write escapes and costs an
	// allocation per call on the fd_write/fd_read path; the session is on
	// the heap already. A guest is single-threaded, so one buffer suffices.
	scratch [64]byte
	// filetype is what fd_fdstat_get and fd_filestat_get say the streams
	// are: a character device without seek or tell, which is a terminal to
	// wasi-libc's isatty, unless SetStreamsArePipes made it unknown.
	filetype byte
}

func newWASIState() wasiState {
	return wasiState{fds: [3]fdEntry{{stream: streamStdin}, {stream: streamStdout}, {stream: streamStderr}}, filetype: filetypeCharacterDevice}
}

// stream is what an open fd refers to: one of the three standard streams.
type stream uint8

const (
	streamClosed stream = iota
	streamStdin
	streamStdout
	streamStderr
)

type fdEntry struct {
	stream stream
	// flags are the fdflags last set by fd_fdstat_set_flags; they change
	// nothing (reads never block, writes always append) but read back.
	flags uint16
}

// open returns the entry of an open fd, or nil.
func (w *wasiState) open(fd uint32) *fdEntry {
	if fd >= uint32(len(w.fds)) || w.fds[fd].stream == streamClosed {
		return nil
	}
	return &w.fds[fd]
}

// memSpan returns the n bytes of guest memory at off, or false when any of them
// lies outside memory (all do when the guest exports none). An empty span
// accesses nothing, so it is valid anywhere.
func memSpan(mem Memory, off uint32, n uint64) ([]byte, bool) {
	if n == 0 {
		return nil, true
	}
	if mem == nil || n > math.MaxUint32 {
		return nil, false
	}
	return mem.Read(off, uint32(n))
}

// memSpans reports whether every (offset, length) pair is in memory, so that a
// function can fail with EFAULT before it has written anything.
func memSpans(mem Memory, pairs ...uint32) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		if _, ok := memSpan(mem, pairs[i], uint64(pairs[i+1])); !ok {
			return false
		}
	}
	return true
}

// memPut writes b, which must be a slice of w.scratch or of immutable data.
func memPut(mem Memory, off uint32, b []byte) errno {
	if len(b) == 0 {
		return errnoSuccess
	}
	if mem == nil || !mem.Write(off, b) {
		return errnoFault
	}
	return errnoSuccess
}

func (w *wasiState) put32(mem Memory, off, v uint32) errno {
	binary.LittleEndian.PutUint32(w.scratch[:4], v)
	return memPut(mem, off, w.scratch[:4])
}

func (w *wasiState) put64(mem Memory, off uint32, v uint64) errno {
	binary.LittleEndian.PutUint64(w.scratch[:8], v)
	return memPut(mem, off, w.scratch[:8])
}

// programArg is argv as args_get lays it out: NUL-terminated.
var programArg = []byte(ProgramName + "\x00")

func argsSizesGet(ctx context.Context, mem Memory, stack []uint64) errno {
	argc, bufSize := uint32(stack[0]), uint32(stack[1])
	if !memSpans(mem, argc, 4, bufSize, 4) {
		return errnoFault
	}
	w := &SessionFrom(ctx).wasi
	if e := w.put32(mem, argc, 1); e != errnoSuccess {
		return e
	}
	return w.put32(mem, bufSize, uint32(len(programArg)))
}

func argsGet(ctx context.Context, mem Memory, stack []uint64) errno {
	argv, argvBuf := uint32(stack[0]), uint32(stack[1])
	if !memSpans(mem, argv, 4, argvBuf, uint32(len(programArg))) {
		return errnoFault
	}
	if e := memPut(mem, argvBuf, programArg); e != errnoSuccess {
		return e
	}
	return SessionFrom(ctx).wasi.put32(mem, argv, argvBuf)
}

func environSizesGet(ctx context.Context, mem Memory, stack []uint64) errno {
	count, bufSize := uint32(stack[0]), uint32(stack[1])
	if !memSpans(mem, count, 4, bufSize, 4) {
		return errnoFault
	}
	w := &SessionFrom(ctx).wasi
	if e := w.put32(mem, count, 0); e != errnoSuccess {
		return e
	}
	return w.put32(mem, bufSize, 0)
}

// environGet has no variable to write, so it touches no memory and succeeds
// whatever the pointers.
func environGet(context.Context, Memory, []uint64) errno { return errnoSuccess }

func clockResGet(ctx context.Context, mem Memory, stack []uint64) errno {
	if uint32(stack[0]) > clockThreadCPUTime {
		return errnoInval
	}
	return SessionFrom(ctx).wasi.put64(mem, uint32(stack[1]), clockResolution)
}

func clockTimeGet(ctx context.Context, mem Memory, stack []uint64) errno {
	s := SessionFrom(ctx)
	if s.pause != nil && s.pause(uint32(stack[0])) {
		panic(ErrPaused)
	}
	now, ok := clockNow(s, uint32(stack[0]))
	if !ok {
		return errnoInval
	}
	return s.wasi.put64(mem, uint32(stack[2]), now)
}

// clockNow is the reading of a clock, false for an unknown clock id.
func clockNow(s *Session, id uint32) (uint64, bool) {
	switch id {
	case clockRealtime, clockMonotonic:
		return s.Now(), true
	case clockProcessCPUTime, clockThreadCPUTime:
		return cpuTimeNanos, true
	}
	return 0, false
}

func randomGet(ctx context.Context, mem Memory, stack []uint64) errno {
	buf, n := uint32(stack[0]), uint32(stack[1])
	if !memSpans(mem, buf, n) {
		return errnoFault
	}
	s := SessionFrom(ctx)
	// Chunks through scratch rather than into a Read view: a view is only
	// documented to alias memory for reading.
	for done := uint32(0); done < n; {
		chunk := s.wasi.scratch[:min(n-done, uint32(len(s.wasi.scratch)))]
		s.Random(chunk)
		if e := memPut(mem, buf+done, chunk); e != errnoSuccess {
			return e
		}
		done += uint32(len(chunk))
	}
	return errnoSuccess
}

func procExit(_ context.Context, _ Memory, stack []uint64) {
	panic(&ExitError{Code: uint32(stack[0])})
}

// procRaise: there are no signals to deliver.
func procRaise(context.Context, Memory, []uint64) errno { return errnoNotsup }

// schedYield: there is no other thread to yield to.
func schedYield(context.Context, Memory, []uint64) errno { return errnoSuccess }
