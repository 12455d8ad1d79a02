package host

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// ErrOutputTooLarge is raised (as a panic inside a host function, or returned
// by RunABIv1) when a guest produces more output than the session allows.
const ErrOutputTooLarge = sentinel.Error("host: output exceeds max_output_bytes")

// ExitError is raised by proc_exit. Engines surface it from the call that was
// running; package runtime turns code 0 into success and any other code into an
// executor error.
type ExitError struct{ Code uint32 }

func (e *ExitError) Error() string { return fmt.Sprintf("host: guest exited with code %d", e.Code) }

// FixedEpochNanos is the instant every guest clock reports:
// 2000-01-01T00:00:00Z. A fixed value keeps runs reproducible; it is a
// recognizable, plainly artificial date so nobody mistakes it for real time.
const FixedEpochNanos uint64 = 946684800 * 1_000_000_000

// StderrLimit bounds the diagnostic buffer kept for a guest's stderr.
const StderrLimit = 64 << 10

// ProgramName is argv[0] for every WASI guest.
const ProgramName = "executor"

// Session is the per-execution state a guest's imports act on. A new Session
// is made for every execution and never shared between guests.
type Session struct {
	stdin    []byte
	stdinPos int

	stdout    []byte
	maxStdout int

	stderr          []byte
	stderrTruncated bool

	// streamOut and streamErr, when set (SetStreams), receive fd 1 and 2
	// as the guest writes them; streamedErr counts stderr's bytes, which
	// the stdout bound then bounds too.
	streamOut, streamErr io.Writer
	streamedErr          int

	// random is the random_get stream, made on first use: most guests never
	// ask, and a keyed BLAKE3 hasher is not free.
	random      io.Reader
	inputDigest [32]byte

	// elapsed is how far the virtual clocks have advanced past
	// FixedEpochNanos: only the JS engine's timers move them (AdvanceClock).
	elapsed uint64
	// cryptoRandom is the stream behind the JS engine's Node crypto, made
	// on first use like random.
	cryptoRandom io.Reader

	// charge takes fuel from the execution's budget (SetFuelCharge); nil
	// when no budget is attached.
	charge func(n uint64) bool
	// used are the keys FirstUse has seen.
	used map[string]struct{}

	wasi wasiState

	// pause, when set, says at which clock reading the guest stops
	// (SetPause).
	pause func(clock uint32) bool
}

// NewSession returns the state for one execution.
//
// stdin is the canonical input; inputDigest (32 bytes, the BLAKE3 of stdin)
// seeds random_get so that the same input always sees the same random bytes;
// maxOutput bounds stdout.
func NewSession(stdin []byte, inputDigest [32]byte, maxOutput int) *Session {
	return &Session{
		stdin:       stdin,
		maxStdout:   maxOutput,
		inputDigest: inputDigest,
		wasi:        newWASIState(),
	}
}

// ErrPaused is raised (as a panic inside clock_time_get) when the hook
// SetPause gave says so: the guest stops where it is, its memory and
// globals as they were at that call, and the call that was running returns
// it.
const ErrPaused = sentinel.Error("host: the guest stopped at the clock reading its driver waits for")

// SetPause makes clock_time_get stop the guest (ErrPaused) when pause, given
// the id of the clock read, reports true. A driver that snapshots an
// interpreter at a point of its own program sets it (package pyhost): the
// instance's state is then that of a guest inside the call, with the
// interpreter's locks held and its data consistent, as C code called back
// from the host would find it.
func (s *Session) SetPause(pause func(clock uint32) bool) { s.pause = pause }

// SetStreamsArePipes makes the standard streams what they are to a process
// whose stdin and stdout are pipes: of unknown file type, so not terminals
// (isatty is false). CPython reads a program from a terminal line by line,
// as a prompt; the Python kind sets it on every session.
func (s *Session) SetStreamsArePipes() { s.wasi.filetype = filetypeUnknown }

// SetStreams makes what the guest writes to stdout and stderr reach w and
// e as it writes it (nil: discarded), for a program whose caller shows its
// output while it runs. Stdout is kept as before. Stderr is then bounded
// like stdout, by the session's output bound (ErrOutputTooLarge past it),
// rather than cut at StderrLimit: it is the program's own stream, not a
// diagnostic buffer. A writer's failure (a closed pipe) does not stop the
// guest: its bytes count as written.
func (s *Session) SetStreams(w, e io.Writer) {
	if w == nil {
		w = io.Discard
	}
	if e == nil {
		e = io.Discard
	}
	s.streamOut, s.streamErr = w, e
}

// SetFuelCharge attaches the execution's fuel budget: charge takes n units
// from it and reports whether it could. The runtime calls it before the
// guest runs, with its meter.
func (s *Session) SetFuelCharge(charge func(n uint64) bool) { s.charge = charge }

// Charge takes n units of fuel for work the host does for the guest, so
// that the budget bounds it as it bounds the guest's own code and fuel_used
// counts it. n must be a pure function of what the work was (bytes hashed,
// iterations run, candidates tested), never of how long it took: the same
// input must use the same fuel on every engine and machine.
//
// It reports whether the budget paid. When it did not, the budget is spent
// (the guest ends FUEL_EXHAUSTED at its next basic block, its fuel_used the
// whole budget) or the host has stopped the guest; the host function should
// stop its work and return. Without a budget attached it charges nothing
// and reports true.
func (s *Session) Charge(n uint64) bool {
	if s.charge == nil {
		return true
	}
	return s.charge(n)
}

// FirstUse reports whether key is used for the first time in this
// execution: for host work that a host-wide cache may spare, charged at its
// first use in each execution whatever the cache holds.
func (s *Session) FirstUse(key string) bool {
	if _, ok := s.used[key]; ok {
		return false
	}
	if s.used == nil {
		s.used = map[string]struct{}{}
	}
	s.used[key] = struct{}{}
	return true
}

// ReadStdin copies up to len(p) unread bytes of stdin into p.
func (s *Session) ReadStdin(p []byte) int {
	n := copy(p, s.stdin[s.stdinPos:])
	s.stdinPos += n
	return n
}

// unreadStdin is the input not yet read, aliasing the session's copy. It lets
// fd_read hand bytes to Memory.Write directly instead of staging them.
func (s *Session) unreadStdin() []byte { return s.stdin[s.stdinPos:] }

// consumeStdin marks n bytes of unreadStdin as read.
func (s *Session) consumeStdin(n int) { s.stdinPos += n }

// stdoutRoom is how many more bytes stdout accepts.
func (s *Session) stdoutRoom() int { return max(s.maxStdout-len(s.stdout), 0) }

// stderrRoom is how many more bytes stderr keeps before it truncates, or
// accepts when it is streamed.
func (s *Session) stderrRoom() int {
	if s.streamErr != nil {
		return max(s.maxStdout-s.streamedErr, 0)
	}
	return StderrLimit - len(s.stderr)
}

// WriteStdout appends to stdout, failing with ErrOutputTooLarge once the
// bound would be crossed.
func (s *Session) WriteStdout(p []byte) error {
	if len(s.stdout)+len(p) > s.maxStdout {
		return ErrOutputTooLarge
	}
	s.stdout = append(s.stdout, p...)
	if s.streamOut != nil {
		_, _ = s.streamOut.Write(p)
	}
	return nil
}

// streamStderr writes p to the stderr stream SetStreams gave, failing with
// ErrOutputTooLarge once the output bound would be crossed; without a
// stream it does nothing.
func (s *Session) streamStderr(p []byte) error {
	if s.streamErr == nil {
		return nil
	}
	if s.streamedErr+len(p) > s.maxStdout {
		return ErrOutputTooLarge
	}
	s.streamedErr += len(p)
	_, _ = s.streamErr.Write(p)
	return nil
}

// WriteStderr appends to the bounded diagnostic buffer; bytes past
// StderrLimit are dropped, never an error for the guest.
func (s *Session) WriteStderr(p []byte) {
	room := StderrLimit - len(s.stderr)
	if len(p) > room {
		p = p[:room]
		s.stderrTruncated = true
	}
	s.stderr = append(s.stderr, p...)
}

// Random fills p from the deterministic stream.
func (s *Session) Random(p []byte) {
	if s.random == nil {
		h := blake3.NewDeriveKey("wasmgate 2026 random_get v1")
		_, _ = h.Write(s.inputDigest[:])
		s.random = h.Digest()
	}
	_, _ = io.ReadFull(s.random, p)
}

// CryptoRandom fills p from a second deterministic stream seeded from the
// input digest, kept apart from random_get's so that what the engine itself
// draws never shifts what a JS tool's crypto.randomBytes returns.
func (s *Session) CryptoRandom(p []byte) {
	if s.cryptoRandom == nil {
		h := blake3.NewDeriveKey("wasmgate 2026 node crypto v1")
		_, _ = h.Write(s.inputDigest[:])
		s.cryptoRandom = h.Digest()
	}
	_, _ = io.ReadFull(s.cryptoRandom, p)
}

// Now is what the realtime and monotonic clocks read: FixedEpochNanos
// plus how far timers advanced them.
func (s *Session) Now() uint64 { return FixedEpochNanos + s.elapsed }

// AdvanceClock moves the virtual clocks forward to t (nanoseconds since the
// Unix epoch); a t before Now changes nothing: time never runs backwards.
func (s *Session) AdvanceClock(t uint64) {
	if t > s.Now() {
		s.elapsed = t - FixedEpochNanos
	}
}

// Stdout is everything the guest wrote to fd 1.
func (s *Session) Stdout() []byte { return s.stdout }

// Stderr is the bounded diagnostic buffer and whether it was truncated.
func (s *Session) Stderr() ([]byte, bool) { return s.stderr, s.stderrTruncated }

type sessionKey struct{}

// WithSession returns a context carrying s for the host functions.
func WithSession(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, sessionKey{}, s)
}

// SessionFrom returns the Session carried by ctx. Host functions are only ever
// called inside an execution, so a missing session is a wiring bug.
func SessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	if s == nil {
		panic(errors.New("host: no session in context"))
	}
	return s
}
