package audit

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Sink is where audit records go. Append links r into the sink's hash chain
// (it sets Seq, Prev and Hash, and fills an empty EventType and DigestAlg),
// stores it, and returns the record as stored.
//
// A verdict (action_audit) whose AttemptHash is set must answer an attempt
// (action_attempt) appended to the same sink and not answered yet, and
// repeat what the attempt recorded of the request and the executor; Append
// refuses it otherwise (ErrInvalidRecord), so that the chain never holds a
// verdict Verify would reject.
type Sink interface {
	Append(ctx context.Context, r Record) (Record, error)
	Close() error
}

// HealthReporter is implemented by sinks that can fail and recover by
// themselves (FileSink). Health is nil while the sink accepts records, and
// otherwise says why it refuses them; it never blocks on I/O.
type HealthReporter interface {
	Health() error
}

var (
	_ Sink           = (*FileSink)(nil)
	_ HealthReporter = (*FileSink)(nil)
	_ Sink           = (*MemorySink)(nil)
	_ Sink           = (*DiscardSink)(nil)
)

// chain is the hash-chain state every sink shares: the seq and hash of the
// last record linked, and the attempts no verdict has answered yet.
type chain struct {
	seq     uint64
	prev    string
	scratch []byte
	line    []byte
	open    map[string]attempt // by the attempt's hash
}

func newChain() chain { return chain{prev: GenesisPrev, open: map[string]attempt{}} }

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
	if r.ReasonCodes == nil && r.EventType != EventActionAttempt {
		r.ReasonCodes = []string{}
	}
	r = cloneRecord(r)
	if err := r.check(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// link makes r, already prepared, the next record of the chain: it sets
// Seq, Prev and Hash, appends the log line and a newline to dst, and
// advances the chain. It returns what linking did to the open attempts. On
// error dst is returned unchanged and the chain does not move.
func (c *chain) link(dst []byte, r Record) (Record, []byte, openChange, error) {
	var change openChange
	if r.AttemptHash != nil {
		a, ok := c.open[*r.AttemptHash]
		if !ok {
			return Record{}, dst, change, fmt.Errorf("%w: attempt_hash names no unanswered %s of this log", ErrInvalidRecord, EventActionAttempt)
		}
		if field := a.differs(attemptOf(&r)); field != "" {
			return Record{}, dst, change, fmt.Errorf("%w: the verdict's %s differs from its attempt's", ErrInvalidRecord, field)
		}
		change = openChange{hash: *r.AttemptHash, was: a}
	}
	// The hash is not known until the line is encoded; encode it with a
	// placeholder of the same length, then write the hash over it.
	r.Seq, r.Prev, r.Hash = c.seq+1, c.prev, GenesisPrev
	line, err := appendRecord(c.line[:0], &r, formOf(&r))
	if err != nil {
		return Record{}, dst, openChange{}, err
	}
	c.line = line // reused by the next record: line is copied into dst
	c.scratch = appendHashed(c.scratch[:0], line)
	r.Hash = Digest(c.scratch)
	start, _ := hashMember(line)
	copy(line[start+len(`,"hash":"`):], r.Hash)
	c.seq, c.prev = r.Seq, r.Hash
	switch {
	case r.EventType == EventActionAttempt:
		c.open[r.Hash] = attemptOf(&r)
		change = openChange{hash: r.Hash, opened: true}
	case change.hash != "":
		delete(c.open, change.hash)
	}
	return r, append(append(dst, line...), '\n'), change, nil
}

// undo reverses what linking a record did to the open attempts.
func (c *chain) undo(ch openChange) {
	switch {
	case ch.hash == "":
	case ch.opened:
		delete(c.open, ch.hash)
	default:
		c.open[ch.hash] = ch.was
	}
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
	return &MemorySink{chain: newChain()}
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
	rec, log, _, err := m.chain.link(m.log, r)
	if err != nil {
		return Record{}, err
	}
	m.log = log
	m.records = append(m.records, rec)
	return cloneRecord(rec), nil
}

// Records returns copies of every record appended so far, attempts and
// verdicts, in seq order.
func (m *MemorySink) Records() []Record {
	return m.matching(func(*Record) bool { return true })
}

// Verdicts returns copies of the verdicts (action_audit records) appended
// so far, in seq order: one per action.
func (m *MemorySink) Verdicts() []Record {
	return m.matching(func(r *Record) bool { return r.EventType == EventActionAudit })
}

func (m *MemorySink) matching(keep func(*Record) bool) []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.records))
	for i := range m.records {
		if keep(&m.records[i]) {
			out = append(out, cloneRecord(m.records[i]))
		}
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
	for _, p := range []**string{&r.EnvDigest, &r.OutputDigest, &r.AttemptHash, &r.SchemaDigest} {
		if *p != nil {
			d := **p
			*p = &d
		}
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
func NewDiscardSink() *DiscardSink { return &DiscardSink{chain: newChain()} }

// Append links r and drops it. Attempts are remembered until their verdict
// arrives, so that verdicts are checked as a FileSink checks them.
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
	rec, log, _, err := d.chain.link(d.log[:0], r)
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
