package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// DefaultLockWait is how long OpenFile and Repair wait for a log another
// process holds, unless WithLockWait says otherwise.
const DefaultLockWait = 10 * time.Second

// FileOption configures OpenFile and Repair.
type FileOption func(*fileOptions)

type fileOptions struct {
	lockWait time.Duration
	// retryMin and retryMax bound the pause between two attempts of a
	// failed sink to recover (it doubles from min to max).
	retryMin, retryMax time.Duration
	// maxGather bounds how long an fsync waits for due verdicts.
	maxGather time.Duration
}

func newFileOptions(opts []FileOption) fileOptions {
	o := fileOptions{lockWait: DefaultLockWait, retryMin: 50 * time.Millisecond, retryMax: 2 * time.Second, maxGather: time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithLockWait sets how long to wait for a log another sink holds (another
// process, or another FileSink of this one) before giving up with
// ErrLocked. Zero or less means not to wait.
func WithLockWait(d time.Duration) FileOption {
	return func(o *fileOptions) { o.lockWait = max(d, 0) }
}

// probeBytes is how much room a failed sink must find on the device before
// it accepts records again: more than any ordinary batch needs.
const probeBytes = 64 << 10

// reserveBytes is how far past its end the log's space is allocated ahead
// of its writes (fallocate with FALLOC_FL_KEEP_SIZE, where the platform
// has it): the file's size, which readers and Verify go by, does not
// change, and a commit does not have to allocate blocks.
const reserveBytes = 1 << 20

// FileSink appends records to a JSON Lines file, one canonical record per
// line.
//
// It is safe for concurrent use. A verdict's Append returns once the record
// is durable (written and fsynced); an attempt's once it is written, so in
// the kernel's hands and kept if the process dies, and durable with the next
// fsync, which every verdict waits for. One fsync covers every record
// written before it: concurrent appenders share fsyncs (group commit), and
// an action's attempt and verdict cost one fsync, not two.
//
// # Group commit
//
// One fsync is in flight at a time. The verdicts that arrive meanwhile are
// linked into the chain and wait, unwritten; when it ends, one of them
// writes them all in one write and fsyncs them with one fsync. Before that
// fsync starts it may wait a little for the verdicts of executions under
// way (see gathered), at most half an fsync and never more than 1 ms. An
// attempt does not wait for an fsync in flight: it is written at once,
// with whatever verdicts are pending, since its executor runs only once it
// is in the file.
//
// On Linux the fsync is fdatasync(2) (the data, and the size that reading
// it needs, not the timestamps), and the log's space is allocated 1 MiB
// ahead of its end with FALLOC_FL_KEEP_SIZE, so that a commit does not
// allocate blocks; the file's size stays the end of its last record.
//
// # Errors
//
// When a write or fsync fails (a full disk, a file size limit, an I/O
// error), the sink cuts the log back to the end of its last good record
// (the last one written, or after a failed fsync the last one fsynced), so
// no torn record stays in the chain, and fails: the
// appends waiting for that write or fsync and every later one return an
// error matching ErrSinkFailed (and the cause, e.g. syscall.ENOSPC), and
// Health says why. A failed sink retries by itself, with a pause that grows
// to 2 s: once the device has room again (and the cut-back succeeded) it
// accepts records again, continuing the chain from its last record.
// Nothing it acknowledged is lost or moved.
//
// A verdict whose attempt was cut back by such a failure is refused with
// ErrSinkFailed: the log no longer holds the attempt it would answer.
type FileSink struct {
	path string
	opts fileOptions

	mu    sync.Mutex
	cond  sync.Cond // broadcast whenever a field below changes
	f     logFile
	chain chain

	pending  *batch   // linked, not yet handed to a write
	unsynced []*batch // written, not yet fsynced, in file order
	orphans  []*batch // whose write failed, waiting to be cut back
	written  position // end of the last record written
	durable  position // end of the last record fsynced
	reserved int64    // the file's space is allocated up to here (0: unknown)
	writing  bool
	syncing  bool

	// running holds the attempts this sink linked whose verdicts have not
	// come: executions under way, whose verdicts are due.
	running   map[string]struct{}
	syncTime  time.Duration // moving average of an fsync's duration
	gatherEnd time.Time     // while set, an fsync waits for due verdicts until then

	failed   error     // while set, Append refuses; cleared by heal
	cause    error     // why the sink failed
	failedAt time.Time // when it failed
	cutting  bool      // a failure is being cut back: no write or fsync starts
	syncLost bool      // an fsync failed: what was written since the last good one is suspect
	dirty    bool      // a cut-back failed: the file may hold bytes past durable
	lost     map[string]struct{}
	healing  bool
	closed   bool
	stop     chan struct{} // closed by Close, to end healing
	spare    []byte        // buffer of the last written batch, reused
}

// position is a point of the log: the seq and hash of a record, and the
// file size just after it.
type position struct {
	seq  uint64
	hash string
	size int64
}

// batch is records handed to one write, in seq order.
type batch struct {
	buf     []byte
	end     position     // its last record; size once written
	undo    []openChange // what linking its records did to the open attempts
	written bool
	durable bool
	err     error
}

// logFile is what FileSink needs of its file, so tests can put a failing one
// in its place. Sync makes what was written durable; of the metadata, it
// need only make durable what reading the data back needs (fdatasync).
type logFile interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// dataFile is the log's file, whose Sync is fdatasync where the platform
// has it.
type dataFile struct{ *os.File }

func (f dataFile) Sync() error { return datasync(f.File) }

// OpenFile opens (creating it with mode 0600 if missing) the audit log at
// path for appending. An existing log is verified from its first line, and
// the sink continues its chain from the last record; its unanswered
// attempts stay unanswered.
//
// # Errors
//
// OpenFile refuses, without changing a byte of the file:
//   - a log that does not verify; the error wraps the *ChainError that names
//     the line, and matches ErrTornTail when the log ends in a torn line (an
//     append cut short), which Repair cuts back;
//   - a log another FileSink holds (ErrLocked), on platforms with flock,
//     after waiting DefaultLockWait (WithLockWait) for it to be released;
//   - a path that is not a regular file (a directory, a device, a FIFO).
//
// # Notes
//
// Opening reads the whole log, so it costs time proportional to its size.
func OpenFile(path string, opts ...FileOption) (*FileSink, error) {
	o := newFileOptions(opts)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open log: %w", err)
	}
	s, err := resume(f, path, o)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func resume(f *os.File, path string, o fileOptions) (*FileSink, error) {
	if err := lockRegular(f, o.lockWait); err != nil {
		return nil, fmt.Errorf("audit: open log %s: %w", path, err)
	}
	// The size is taken under the lock: another process may have appended
	// while this one waited.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: open log %s: %w", path, err)
	}
	v := newVerifier()
	if err := v.scan(f); err != nil {
		return nil, fmt.Errorf("audit: open log %s: existing log cannot be extended: %w", path, err)
	}
	if fi.Size() == 0 {
		// The file may have just been created; its directory entry must be
		// as durable as the records that will be fsynced into it.
		if err := syncDir(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("audit: open log %s: sync directory: %w", path, err)
		}
	} else if err := f.Sync(); err != nil {
		// What a process that died before its fsync left is durable from
		// here on, so a cut-back never goes below it.
		return nil, fmt.Errorf("audit: open log %s: fsync: %w", path, err)
	}
	end := position{seq: v.seq, hash: v.prev, size: fi.Size()}
	c := newChain()
	c.seq, c.prev = v.seq, v.prev
	for hash, a := range v.open {
		c.open[hash] = a.attempt
	}
	s := &FileSink{
		path: path, opts: o, f: dataFile{f}, chain: c, pending: &batch{},
		written: end, durable: end, lost: map[string]struct{}{}, running: map[string]struct{}{}, stop: make(chan struct{}),
	}
	s.cond.L = &s.mu
	return s, nil
}

// lockRegular refuses what is not a regular file, then takes the log's
// lock, waiting up to wait for another holder to release it.
func lockRegular(f *os.File, wait time.Duration) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	return lockFile(f, wait)
}

// Append links r into the chain and writes it; a verdict is also fsynced
// before Append returns, an attempt is not (see FileSink).
//
// ctx is consulted only before r is linked. Once r has a seq, Append waits
// until the write (and fsync) that carries it has completed: giving up then
// would leave the caller not knowing whether the action was recorded.
func (s *FileSink) Append(ctx context.Context, r Record) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	r, err := prepare(r)
	if err != nil {
		return Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.AttemptHash != nil {
		// Whatever becomes of this verdict, no other is due for its attempt.
		delete(s.running, *r.AttemptHash)
	}
	switch {
	case s.closed:
		return Record{}, ErrClosed
	case s.failed != nil:
		return Record{}, s.failed
	}
	if r.AttemptHash != nil {
		if _, ok := s.lost[*r.AttemptHash]; ok {
			delete(s.lost, *r.AttemptHash)
			return Record{}, fmt.Errorf("%w: %s: the attempt this verdict answers was cut back when the log failed", ErrSinkFailed, s.path)
		}
	}
	b := s.pending
	rec, buf, change, err := s.chain.link(b.buf, r)
	if err != nil {
		return Record{}, err
	}
	b.buf = buf
	b.end.seq, b.end.hash = rec.Seq, rec.Hash
	if change.hash != "" {
		b.undo = append(b.undo, change)
	}
	needSync := rec.EventType != EventActionAttempt
	if !needSync {
		s.running[rec.Hash] = struct{}{}
	}
	for {
		switch {
		case b.err != nil:
			return Record{}, b.err
		case b.durable, b.written && !needSync:
			return rec, nil
		case s.cutting:
		case !needSync && !b.written && !s.writing:
			// An attempt is written at once, with whatever is pending: its
			// executor runs only once it is in the file, and does not wait
			// for an fsync in flight.
			s.write()
			continue
		case needSync && !s.syncing && !s.writing && s.gathered():
			// One write for every record pending, verdicts that arrived
			// during the last fsync included, then one fsync for every
			// record written so far.
			if len(s.pending.buf) > 0 {
				s.write()
				if s.failed != nil || s.cutting || s.writing || s.syncing {
					continue
				}
			}
			s.sync()
			continue
		}
		s.cond.Wait()
	}
}

// write hands s.pending to the file. It is called with s.mu held and
// releases it for the duration of the I/O, so the next batch can fill.
func (s *FileSink) write() {
	b := s.pending
	s.pending = &batch{buf: s.spare}
	s.spare = nil
	s.writing = true
	f := s.f
	from, end := s.written.size, s.written.size+int64(len(b.buf))
	grow := end > s.reserved
	s.mu.Unlock()
	var reserved int64
	if grow && reserve(f, from, reserveBytes) == nil {
		// Best effort: without the reservation the write allocates, and
		// is the test of whether the device has room.
		reserved = from + reserveBytes
	}
	_, err := f.Write(b.buf)
	s.mu.Lock()
	s.writing = false
	if reserved > 0 {
		s.reserved = reserved
	}
	n := int64(len(b.buf))
	if cap(b.buf) <= maxPooledBytes {
		s.spare = b.buf[:0]
	}
	b.buf = nil
	if err != nil {
		s.fail(ioError("write", err), b, false)
		return
	}
	b.written = true
	b.end.size = s.written.size + n
	s.written = b.end
	s.unsynced = append(s.unsynced, b)
	s.cond.Broadcast()
}

// gathered reports whether a verdict's fsync should start now, or wait for
// the verdicts of the executions under way: those are due, and without the
// wait the first of them takes an fsync of its own and the rest the next
// one. The wait ends when every due verdict has been written, or after half
// an fsync's duration (at most 1 ms); a lone caller never waits. It is
// Postgres's commit_delay with commit_siblings, except that the write-ahead
// attempts say exactly which verdicts are coming. Called with s.mu held.
func (s *FileSink) gathered() bool {
	if s.writing {
		// Let the write in flight land first, so this fsync covers it.
		return false
	}
	if len(s.running) == 0 {
		s.gatherEnd = time.Time{}
		return true
	}
	now := time.Now()
	if s.gatherEnd.IsZero() {
		d := min(s.syncTime/2, s.opts.maxGather)
		if d <= 0 {
			return true
		}
		s.gatherEnd = now.Add(d)
		time.AfterFunc(d, func() {
			s.mu.Lock()
			s.cond.Broadcast()
			s.mu.Unlock()
		})
		return false
	}
	if now.Before(s.gatherEnd) {
		return false
	}
	s.gatherEnd = time.Time{}
	return true
}

// sync fsyncs what has been written. Called with s.mu held, which it
// releases during the I/O: writes go on meanwhile and wait for the next
// fsync.
func (s *FileSink) sync() {
	n, target := len(s.unsynced), s.written
	s.syncing = true
	f := s.f
	s.mu.Unlock()
	start := time.Now()
	err := f.Sync()
	took := time.Since(start)
	s.mu.Lock()
	s.syncing = false
	s.gatherEnd = time.Time{}
	if s.syncTime == 0 {
		s.syncTime = took
	} else {
		s.syncTime += (took - s.syncTime) / 8
	}
	if err != nil {
		s.fail(ioError("fsync", err), nil, true)
		return
	}
	for _, b := range s.unsynced[:n] {
		b.durable = true
	}
	s.unsynced = append(s.unsynced[:0], s.unsynced[n:]...)
	s.durable = target
	s.cond.Broadcast()
}

// fail makes the sink refuse appends, cuts the log back to its last good
// record and starts healing. It is called with s.mu held by the goroutine
// whose write (of orphan) or fsync failed.
func (s *FileSink) fail(cause error, orphan *batch, syncFailed bool) {
	if s.failed == nil {
		s.failed = fmt.Errorf("%w: %s: %w", ErrSinkFailed, s.path, cause)
		s.cause, s.failedAt = cause, time.Now()
	}
	if orphan != nil {
		s.orphans = append(s.orphans, orphan)
	}
	s.syncLost = s.syncLost || syncFailed
	s.cond.Broadcast()
	if s.cutting {
		return // the goroutine cutting back takes this failure into account
	}
	s.cutting = true
	for s.writing || s.syncing {
		s.cond.Wait()
	}
	s.cutBack()
	s.cutting, s.syncLost = false, false
	s.cond.Broadcast()
	if !s.healing && !s.closed {
		s.healing = true
		go s.heal()
	}
}

// cutBack truncates the file after its last good record, fsyncs it, and
// drops every record after that point, failing their appends. Called with
// s.mu held and no I/O in flight; it releases s.mu during its own I/O.
//
// After a failed write, the records written before it are good: the cut
// keeps them, and its fsync makes them durable (an attempt whose verdict
// then fails stays in the log, unanswered, as the trace of an execution).
// After a failed fsync, the kernel may have dropped any page written since
// the last good one, so the cut goes back to that fsync; if the cut's own
// fsync fails, likewise.
func (s *FileSink) cutBack() {
	to, f := s.written, s.f
	if s.syncLost {
		to = s.durable
	}
	s.mu.Unlock()
	err := truncateSync(f, to.size)
	s.mu.Lock()
	if err != nil && to != s.durable {
		to = s.durable
		s.mu.Unlock()
		err = truncateSync(f, to.size)
		s.mu.Lock()
	}
	if err != nil {
		// The torn tail stays until heal manages to cut it; OpenFile and
		// Verify report it if the process stops first.
		s.dirty = true
		s.cause = fmt.Errorf("%w (and cutting the log back failed: %w)", s.cause, err)
	}
	var dropped []*batch
	for _, b := range s.unsynced {
		if b.end.seq <= to.seq {
			b.durable = true // the cut's fsync covered it
		} else {
			dropped = append(dropped, b)
		}
	}
	dropped = append(append(dropped, s.orphans...), s.pending)
	for i := len(dropped) - 1; i >= 0; i-- {
		b := dropped[i]
		for j := len(b.undo) - 1; j >= 0; j-- {
			ch := b.undo[j]
			s.chain.undo(ch)
			if ch.opened {
				delete(s.running, ch.hash)
			}
			if ch.opened && b.written {
				// Its appender was told to go ahead; its verdict will come.
				s.lost[ch.hash] = struct{}{}
			}
		}
		b.err = s.failed
	}
	s.unsynced, s.orphans, s.pending = nil, nil, &batch{}
	s.chain.seq, s.chain.prev = to.seq, to.hash
	s.written, s.durable = to, to
	// A truncation may give back the space reserved past the end.
	s.reserved = 0
}

func truncateSync(f logFile, size int64) error {
	if err := f.Truncate(size); err != nil {
		return ioError("truncate", err)
	}
	if err := f.Sync(); err != nil {
		return ioError("fsync", err)
	}
	return nil
}

// heal retries a failed sink until it works again or is closed: it cuts
// back what an earlier cut-back could not, then checks that the device has
// room for more records. Only then are appends accepted again; the first
// one that fails anyway fails the sink again.
func (s *FileSink) heal() {
	delay := s.opts.retryMin
	for {
		t := time.NewTimer(delay)
		select {
		case <-s.stop:
			t.Stop()
		case <-t.C:
		}
		s.mu.Lock()
		if s.closed {
			s.healing = false
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		f, size, dirty := s.f, s.durable.size, s.dirty
		s.mu.Unlock()
		var err error
		if dirty {
			err = truncateSync(f, size)
		}
		if err == nil {
			err = reserve(f, size, probeBytes)
		}
		s.mu.Lock()
		if err == nil {
			s.failed, s.cause, s.dirty, s.healing = nil, nil, false, false
			s.cond.Broadcast()
			s.mu.Unlock()
			return
		}
		// Still no room (or the cut-back failed again): the cause the
		// sink failed for stands.
		s.mu.Unlock()
		delay = min(2*delay, s.opts.retryMax)
	}
}

// reserve checks that the device has room for n more bytes after size,
// without changing the file's size or content.
func reserve(f logFile, size, n int64) error {
	switch f := f.(type) {
	case interface{ Reserve(off, n int64) error }:
		return f.Reserve(size, n)
	case dataFile:
		return reserveSpace(f.File, size, n)
	case *os.File:
		return reserveSpace(f, size, n)
	}
	return nil
}

// Durable reports how much of the log is durable (written and fsynced):
// the number of records and the file's size just after the last of them.
// A failure cuts the log back no further than this, so a transparency log
// signs checkpoints only over it (package audit/transparency).
func (s *FileSink) Durable() (records uint64, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.durable.seq, s.durable.size
}

// Health is nil while the sink accepts records. While it has failed, Health
// says why and since when; the reason names the cause (e.g. "write: no
// space left on device") and not the file, as it may be shown to anyone who
// asks a server's health. The error matches ErrSinkFailed.
func (s *FileSink) Health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		return nil
	}
	return fmt.Errorf("%w: %s (since %s; retrying)", ErrSinkFailed, withoutPath(s.cause), s.failedAt.UTC().Format(time.RFC3339))
}

// withoutPath is err's message with the file name of an *fs.PathError in
// it taken out.
func withoutPath(err error) string {
	msg := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		msg = strings.Replace(msg, pe.Error(), pe.Op+": "+pe.Err.Error(), 1)
	}
	return msg
}

// ioError names the operation that failed, unless err already does (an
// *fs.PathError says "write /path/to/log: …").
func ioError(op string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Close waits for the records already accepted to be written and fsynced,
// stops a failed sink's retries, then closes the file. Later Appends return
// ErrClosed; Close is idempotent.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.stop)
	for {
		switch {
		case s.cutting || s.writing || s.syncing:
		case len(s.pending.buf) > 0:
			s.write()
			continue
		case len(s.unsynced) > 0:
			s.sync()
			continue
		case !s.healing:
			if err := s.f.Close(); err != nil {
				return fmt.Errorf("audit: close log %s: %w", s.path, err)
			}
			return nil
		}
		s.cond.Wait()
	}
}
