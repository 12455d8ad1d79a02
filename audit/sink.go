package audit

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Sink is where audit records go. Append links r into the sink's hash chain
// (it sets Seq, Prev and Hash, and fills an empty EventType and DigestAlg),
// stores it, and returns the record as stored.
type Sink interface {
	Append(ctx context.Context, r Record) (Record, error)
	Close() error
}

var (
	_ Sink = (*FileSink)(nil)
	_ Sink = (*MemorySink)(nil)
)

// chain is the hash-chain state every sink shares: the seq and hash of the
// last record linked.
type chain struct {
	seq     uint64
	prev    string
	scratch []byte
}

// prepare fills in what a sink fills in and checks r against the schema.
// It needs no chain state, so sinks run it before taking their lock. It
// copies r's slices so a stored record never aliases the caller's memory.
func prepare(r Record) (Record, error) {
	if r.EventType == "" {
		r.EventType = EventActionAudit
	}
	if r.DigestAlg == "" {
		r.DigestAlg = DigestAlg
	}
	if r.ReasonCodes == nil {
		r.ReasonCodes = []string{}
	} else {
		r.ReasonCodes = slices.Clone(r.ReasonCodes)
	}
	if r.OutputDigest != nil {
		d := *r.OutputDigest
		r.OutputDigest = &d
	}
	if err := r.check(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// link makes r, already prepared, the next record of the chain: it sets
// Seq, Prev and Hash, appends the log line and a newline to dst, and
// advances the chain. On error dst is returned unchanged and the chain does
// not move.
func (c *chain) link(dst []byte, r Record) (Record, []byte, error) {
	// The hash is not known until the line is encoded; encode it with a
	// placeholder of the same length, then write the hash over it.
	r.Seq, r.Prev, r.Hash = c.seq+1, c.prev, GenesisPrev
	line, err := encodeRecord(&r)
	if err != nil {
		return Record{}, dst, err
	}
	c.scratch = appendHashed(c.scratch[:0], line)
	r.Hash = Digest(c.scratch)
	start, _ := hashMember(line)
	copy(line[start+len(`,"hash":"`):], r.Hash)
	c.seq, c.prev = r.Seq, r.Hash
	return r, append(append(dst, line...), '\n'), nil
}

// FileSink appends records to a JSON Lines file, one canonical record per
// line, each durable (written and fsynced) before Append returns.
//
// It is safe for concurrent use. Concurrent appenders share writes: while
// one write+fsync is in flight, the records that arrive queue up in file
// order and the next write carries them all, so throughput grows with the
// number of appenders instead of being one fsync per record.
//
// # Errors
//
// When a write or fsync fails, that Append and every later one return an
// error matching ErrSinkFailed (and the cause, e.g. syscall.ENOSPC). The
// sink does not retry: after a failed fsync the kernel may have dropped the
// data, and a retry could leave a hole in the chain. Reopen the file once the
// cause is fixed; OpenFile then refuses a torn last line instead of
// extending it.
type FileSink struct {
	path string

	mu       sync.Mutex
	roundEnd sync.Cond // broadcast when a commit round ends
	f        logFile
	chain    chain
	pending  *batch // linked records not yet handed to a write
	spare    []byte // buffer of the last committed batch, reused
	flushing bool   // a commit round is in flight or handed off
	handoff  *batch // when set, the pending batch whose appenders lead the next round
	failed   error  // sticky: set by the first failed write or fsync
	closed   bool
	size     int64 // bytes of the log known durable: where a failed write is cut back to
}

// logFile is what FileSink needs of its file, so tests can put a failing one
// in its place.
type logFile interface {
	io.Writer
	Sync() error
	Close() error
}

// batch is the records of one commit round, in seq order.
type batch struct {
	buf  []byte
	done bool
	err  error
}

// OpenFile opens (creating it with mode 0600 if missing) the audit log at
// path for appending. An existing log is verified from its first line, and
// the sink continues its chain from the last record.
//
// # Errors
//
// OpenFile refuses, without changing a byte of the file:
//   - a log that does not verify, including a torn last line left by a crash
//     mid-append; the error wraps the *ChainError that names the line;
//   - a log another FileSink holds (ErrLocked), on platforms with flock;
//   - a path that is not a regular file (a directory, a device, a FIFO).
//
// # Notes
//
// Opening reads the whole log, so it costs time proportional to its size.
func OpenFile(path string) (*FileSink, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open log: %w", err)
	}
	s, err := resume(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func resume(f *os.File, path string) (*FileSink, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: open log %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("audit: open log %s: not a regular file", path)
	}
	if err := lockFile(f); err != nil {
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
	}
	s := &FileSink{path: path, f: f, chain: chain{seq: v.seq, prev: v.prev}, pending: &batch{}, size: fi.Size()}
	s.roundEnd.L = &s.mu
	return s, nil
}

// Append links r into the chain, writes it and fsyncs the file.
//
// ctx is consulted only before r is linked. Once r has a seq, Append waits
// until the write that carries it has completed: giving up then would leave
// the caller not knowing whether the action was recorded.
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
	if s.closed {
		return Record{}, ErrClosed
	}
	if s.failed != nil {
		return Record{}, s.failed
	}
	b := s.pending
	rec, buf, err := s.chain.link(b.buf, r)
	if err != nil {
		return Record{}, err
	}
	b.buf = buf
	for !b.done {
		if s.flushing && s.handoff != b {
			s.roundEnd.Wait()
			continue
		}
		// b is s.pending and no write is in flight: this appender writes
		// it, with whatever joined it meanwhile.
		s.commit()
	}
	if b.err != nil {
		return Record{}, b.err
	}
	return rec, nil
}

// commit writes and fsyncs s.pending. It is called with s.mu held and
// releases it for the duration of the I/O, so the next batch can fill.
//
// When a round ends with records already pending, the round is handed to
// their appenders instead of ending: otherwise the first appender to arrive
// afterwards would start a round of one record, and the records that piled
// up during the I/O would wait for a whole extra fsync.
func (s *FileSink) commit() {
	b := s.pending
	s.pending = &batch{buf: s.spare}
	s.spare = nil
	s.flushing = true
	s.handoff = nil
	err := s.failed
	if err == nil {
		f, size := s.f, s.size
		s.mu.Unlock()
		err = writeSync(f, b.buf)
		if err != nil {
			err = rollback(f, size, err)
		}
		s.mu.Lock()
		if err != nil {
			s.failed = fmt.Errorf("%w: %s: %w", ErrSinkFailed, s.path, err)
			err = s.failed
		} else {
			s.size += int64(len(b.buf))
		}
	}
	if cap(b.buf) <= maxPooledBytes {
		s.spare = b.buf[:0]
	}
	b.buf, b.err, b.done = nil, err, true
	if len(s.pending.buf) > 0 {
		s.handoff = s.pending
	} else {
		s.flushing = false
	}
	s.roundEnd.Broadcast()
}

// rollback cuts the log back to size after a failed write or fsync, so a
// half-written batch (a full disk, a file size limit) does not leave a torn
// line behind: those records were never acknowledged. If even that fails,
// the torn tail stays and the next OpenFile or Verify reports it.
func rollback(f logFile, size int64, cause error) error {
	t, ok := f.(interface{ Truncate(int64) error })
	if !ok {
		return cause
	}
	if err := t.Truncate(size); err != nil {
		return fmt.Errorf("%w (and cutting back the partial write failed: %v)", cause, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%w (and syncing the cut-back log failed: %v)", cause, err)
	}
	return cause
}

func writeSync(f logFile, p []byte) error {
	if _, err := f.Write(p); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	return nil
}

// Close waits for the records already accepted to be written, then closes
// the file. Later Appends return ErrClosed; Close is idempotent.
func (s *FileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for s.flushing || len(s.pending.buf) > 0 {
		if s.flushing && s.handoff == nil {
			s.roundEnd.Wait()
			continue
		}
		s.commit()
	}
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("audit: close log %s: %w", s.path, err)
	}
	return nil
}

// MemorySink keeps the chain in memory: for tests, benchmarks, and embedders
// that ship records elsewhere themselves. It links records exactly as
// FileSink does, and WriteTo produces the bytes FileSink would have written.
type MemorySink struct {
	mu      sync.Mutex
	chain   chain
	records []Record
	log     []byte
	closed  bool
}

// NewMemorySink returns an empty MemorySink.
func NewMemorySink() *MemorySink {
	return &MemorySink{chain: chain{prev: GenesisPrev}}
}

// Append links r into the chain and keeps it.
func (m *MemorySink) Append(ctx context.Context, r Record) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	r, err := prepare(r)
	if err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Record{}, ErrClosed
	}
	rec, log, err := m.chain.link(m.log, r)
	if err != nil {
		return Record{}, err
	}
	m.log = log
	m.records = append(m.records, rec)
	return cloneRecord(rec), nil
}

// Records returns copies of the records appended so far, in seq order.
func (m *MemorySink) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, len(m.records))
	for i, r := range m.records {
		out[i] = cloneRecord(r)
	}
	return out
}

// WriteTo writes the log as JSON Lines, as a FileSink would have written it.
func (m *MemorySink) WriteTo(w io.Writer) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := w.Write(m.log)
	return int64(n), err
}

// Close makes later Appends fail with ErrClosed; the records stay readable.
func (m *MemorySink) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

func cloneRecord(r Record) Record {
	r.ReasonCodes = slices.Clone(r.ReasonCodes)
	if r.OutputDigest != nil {
		d := *r.OutputDigest
		r.OutputDigest = &d
	}
	return r
}

// DiscardSink links records into a chain, so that they are validated exactly
// as a FileSink would, and keeps nothing: for a server run without an audit
// log, which must not grow without bound.
type DiscardSink struct {
	mu    sync.Mutex
	chain chain
	log   []byte
	n     uint64
}

// NewDiscardSink returns a DiscardSink.
func NewDiscardSink() *DiscardSink { return &DiscardSink{chain: chain{prev: GenesisPrev}} }

// Append links r and drops it.
func (d *DiscardSink) Append(ctx context.Context, r Record) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	r, err := prepare(r)
	if err != nil {
		return Record{}, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rec, log, err := d.chain.link(d.log[:0], r)
	if err != nil {
		return Record{}, err
	}
	d.log = log
	d.n++
	return cloneRecord(rec), nil
}

// Count is how many records were appended.
func (d *DiscardSink) Count() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// Close implements Sink.
func (d *DiscardSink) Close() error { return nil }
