package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmgate/wasmgate/audit"
)

// AuditSink appends to the one audit chain of a deployment, kept in the
// audit stream: one record per message, the message's stream sequence equal
// to the record's seq. Every worker has one; they append with optimistic
// concurrency: a record is published with the sequence it expects to
// follow (Nats-Expected-Last-Sequence), and a writer that lost the race
// reads what the others stored, checks it as audit.Verify would, and links
// its records again.
//
// Records are deduplicated by request: an attempt and a verdict are
// published with the message ids "<request id>:attempt" and
// "<request id>:verdict" (the id WithRequestID put in the Append's
// context, else the record's trace id), and a record whose id is already
// in the chain is
// not appended again: Append returns the record stored. So a request that
// runs twice (its worker died after its verdict was stored, and the request
// was delivered again) has one attempt and one verdict. A worker's
// execution also tells the sink, through its claim (see claim), which of
// its request's records are stored already, beyond the sink's memory, and
// learns the verdict stored; its records are marked as indexed
// (headerIndexed).
//
// One writer goroutine links what arrives together and publishes it record
// after record; an Append returns once JetStream has stored its record
// (replicated, for a stream with replicas; on disk as the server's
// sync_interval says).
type AuditSink struct {
	conn   *Conn
	stream jetstream.Stream
	retry  time.Duration

	mu      sync.Mutex
	wake    *sync.Cond
	queue   []*pendingRecord
	closed  bool
	broken  error // the stored chain does not verify: nothing more is appended
	done    chan struct{}
	chain   *audit.Chain
	moved   chan struct{} // closed (and replaced) whenever the chain moves
	tail    jetstream.ConsumeContext
	target  uint64            // the last seq a refused publish said the stream has
	keys    map[string]uint64 // message id → seq, of the records within keyWindow
	keyFIFO []keyAt
	window  time.Duration
}

type keyAt struct {
	key string
	at  time.Time
}

type pendingRecord struct {
	rec   audit.Record
	key   string
	since time.Time
	// indexed: the record's request is claimed in the request index (its
	// message says so, headerIndexed).
	indexed bool
	done    chan struct{}
	out     audit.Record
	// existed: out was stored before, by an earlier run of the request.
	existed bool
	err     error
}

var _ audit.Sink = (*AuditSink)(nil)

// ErrAuditUnavailable is matched by the error of an Append that JetStream did
// not take within the sink's retry time (no server, no stream leader).
var ErrAuditUnavailable = errors.New("audit stream unavailable")

// AuditOptions configure an AuditSink.
type AuditOptions struct {
	// RetryFor is how long an Append keeps trying while JetStream does not
	// answer (a leader election takes seconds); 30 s when zero.
	RetryFor time.Duration
	// KeyWindow is how long the sink remembers a stored record's message
	// id beyond JetStream's own deduplication window (DefaultDedupWindow
	// when zero).
	KeyWindow time.Duration
}

// OpenAuditSink opens the deployment's audit stream and follows the chain
// it holds from its first record, checking every record as audit.Verify
// does; a chain that does not verify is an error (nothing is appended to
// a broken log).
func OpenAuditSink(ctx context.Context, c *Conn, o AuditOptions) (*AuditSink, error) {
	if o.RetryFor <= 0 {
		o.RetryFor = 30 * time.Second
	}
	if o.KeyWindow <= 0 {
		o.KeyWindow = DefaultDedupWindow
	}
	var st jetstream.Stream
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		st, err = c.JS.Stream(ctx, c.Names.AuditStream())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
	}
	s := &AuditSink{
		conn: c, stream: st, retry: o.RetryFor, window: o.KeyWindow,
		chain: audit.NewChain(), keys: map[string]uint64{}, done: make(chan struct{}),
	}
	s.wake = sync.NewCond(&s.mu)
	if err := retryUnavailable(ctx, func() error { return s.catchUp(ctx) }); err != nil {
		return nil, err
	}
	go s.write()
	return s, nil
}

// Append stores r as the next record of the chain, or, when the chain holds
// r's request's record of the same kind already, returns that one. The
// execution of a claimed request (see withClaim) learns the verdict stored
// through its claim.
func (s *AuditSink) Append(ctx context.Context, r audit.Record) (audit.Record, error) {
	id := RequestID(ctx)
	if id == "" {
		id = r.TraceID
	}
	cl := claimOf(ctx)
	if cl != nil {
		if rec, ok, err := cl.resolve(ctx, s, id, &r); ok {
			return rec, err
		}
	}
	p := &pendingRecord{rec: r, key: recordKey(id, &r), since: time.Now(), indexed: cl != nil, done: make(chan struct{})}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return audit.Record{}, audit.ErrClosed
	case s.broken != nil:
		err := s.broken
		s.mu.Unlock()
		return audit.Record{}, err
	}
	s.queue = append(s.queue, p)
	s.wake.Signal()
	s.mu.Unlock()
	select {
	case <-p.done:
		if cl != nil && p.err == nil && r.EventType != audit.EventActionAttempt {
			cl.stored(p.out, p.existed)
		}
		return p.out, p.err
	case <-ctx.Done():
		return audit.Record{}, ctx.Err()
	}
}

// storedSeqs returns the seqs of request id's attempt and verdict records
// after seq after, as far as the sink remembers them (0 for one it does
// not: it may still be stored).
func (s *AuditSink) storedSeqs(id string, after uint64) (attempt, verdict uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq := s.keys[id+":attempt"]; seq > after {
		attempt = seq
	}
	if seq := s.keys[id+":verdict"]; seq > after {
		verdict = seq
	}
	return attempt, verdict
}

// Seq is the seq of the last record the sink has seen stored.
func (s *AuditSink) Seq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chain.Seq()
}

// Health is nil while the sink appends, and why it does not otherwise.
func (s *AuditSink) Health() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// Close stops the sink once the records queued are written.
func (s *AuditSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.wake.Broadcast()
	s.mu.Unlock()
	<-s.done
	return nil
}

// recordKey is the message id of a record of request id.
func recordKey(id string, r *audit.Record) string {
	if r.EventType == audit.EventActionAttempt {
		return id + ":attempt"
	}
	return id + ":verdict"
}

type requestIDKey struct{}

// WithRequestID returns ctx carrying the id of the request being executed:
// an AuditSink keys the request's records by it (see AuditSink).
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx carries, "" for none.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

const maxBatch = 256

// fewRecords is how many records are read one by one rather than through a
// consumer.
const fewRecords = 8

// write is the sink's one writer: it takes what is queued and publishes it
// as one batch.
func (s *AuditSink) write() {
	defer close(s.done)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.wake.Wait()
		}
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		n := min(len(s.queue), maxBatch)
		batch := append([]*pendingRecord(nil), s.queue[:n]...)
		s.queue = s.queue[n:]
		s.mu.Unlock()
		s.commit(batch)
	}
}

// commit stores batch, following what others stored meanwhile, until every
// record of it is stored or has failed.
func (s *AuditSink) commit(batch []*pendingRecord) {
	ctx := context.Background()
	for len(batch) > 0 {
		batch = s.resolveStored(ctx, batch)
		if len(batch) == 0 {
			return
		}
		recs, lines, batch2, err := s.link(batch)
		batch = batch2
		if err != nil {
			continue // the failing record was answered; link the rest again
		}
		stored, perr := s.publish(ctx, batch, recs, lines)
		batch = batch[stored:]
		if len(batch) == 0 {
			return
		}
		// Another writer got there first, or JetStream did not answer:
		// follow what is stored, then try the rest again.
		seen := s.Seq()
		if err := s.catchUp(ctx); err != nil {
			if broken := s.Health(); broken != nil {
				s.failAll(batch, broken)
				return
			}
			perr = err
		}
		if perr == nil && stored == 0 && s.Seq() == seen && !s.knows(batch[0].key) {
			// Refused as a lost race, yet nothing new is stored (a
			// stream whose leader changed can say so for a while):
			// that is waited out like no answer, not tried again at
			// once for ever.
			perr = fmt.Errorf("record %d (message id %s) was refused, but the stream holds nothing after record %d", recs[0].Seq, batch[0].key, seen)
		}
		if perr != nil {
			if time.Since(batch[0].since) > s.retry {
				s.failAll(batch, fmt.Errorf("%w: %v", ErrAuditUnavailable, perr))
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// resolveStored answers the records whose request's record of the same kind
// is stored already, and returns the others.
func (s *AuditSink) resolveStored(ctx context.Context, batch []*pendingRecord) []*pendingRecord {
	rest := batch[:0]
	for _, p := range batch {
		s.mu.Lock()
		seq, ok := s.keys[p.key]
		s.mu.Unlock()
		if !ok {
			rest = append(rest, p)
			continue
		}
		rec, err := s.load(ctx, seq)
		p.existed = true
		p.answer(rec, err)
	}
	return rest
}

// link links batch onto the chain. A record the chain refuses is answered
// with the error and dropped from the batch, which is then returned to be
// linked again (err is non-nil).
func (s *AuditSink) link(batch []*pendingRecord) ([]audit.Record, [][]byte, []*pendingRecord, error) {
	rs := make([]audit.Record, len(batch))
	for i, p := range batch {
		rs[i] = p.rec
	}
	recs, lines, err := s.chain.Link(rs)
	if err == nil {
		return recs, lines, batch, nil
	}
	// Find the first record the chain refuses.
	for i := range batch {
		if _, _, err := s.chain.Link(rs[:i+1]); err != nil {
			batch[i].answer(audit.Record{}, err)
			return nil, nil, append(batch[:i:i], batch[i+1:]...), err
		}
	}
	return nil, nil, batch, err
}

// publish publishes lines one after the other, each expecting the record
// before it (Nats-Expected-Last-Sequence), and follows each once stored. It
// returns how many were, and the error of the first that was not (nil when
// it lost a race: a sequence mismatch or a duplicate).
//
// One at a time, not pipelined: a record published before the one it
// expects to follow is acknowledged could be stored after another
// writer's, linked to a record that never was.
func (s *AuditSink) publish(ctx context.Context, batch []*pendingRecord, recs []audit.Record, lines [][]byte) (int, error) {
	for i, line := range lines {
		m := nats.NewMsg(s.conn.Names.AuditSubject())
		m.Data = line
		m.Header.Set(jetstream.MsgIDHeader, batch[i].key)
		m.Header.Set(jetstream.ExpectedLastSeqHeader, strconv.FormatUint(recs[i].Seq-1, 10))
		if batch[i].indexed {
			m.Header.Set(headerIndexed, "1")
		}
		pctx, cancel := context.WithTimeout(ctx, callTimeout)
		ack, err := s.conn.JS.PublishMsg(pctx, m, jetstream.WithRetryAttempts(0))
		cancel()
		if err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
				apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
				return i, nil // another writer got there first
			}
			return i, err
		}
		if ack.Duplicate {
			// Stored already, at the sequence the ack names: a record
			// followed before is found there (its id may have left the
			// sink's window), a later one by catching up.
			s.mu.Lock()
			if ack.Sequence > 0 && ack.Sequence <= s.chain.Seq() {
				s.remember(batch[i].key, ack.Sequence)
			}
			s.mu.Unlock()
			return i, nil
		}
		if ack.Sequence != recs[i].Seq {
			return i, nil // stored elsewhere, found by catching up
		}
		s.mu.Lock()
		_, err = s.chain.Follow(line)
		if err == nil {
			s.remember(batch[i].key, recs[i].Seq)
		}
		s.mu.Unlock()
		if err != nil {
			s.setBroken(err)
			s.failAll(batch[i:], s.Health())
			return len(batch), nil
		}
		batch[i].answer(recs[i], nil)
	}
	return len(lines), nil
}

// catchUp follows every record stored after the last one followed.
func (s *AuditSink) catchUp(ctx context.Context) error {
	var info *jetstream.StreamInfo
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		info, err = s.stream.Info(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("audit stream %s: %w", s.conn.Names.AuditStream(), err)
	}
	last := info.State.LastSeq
	s.mu.Lock()
	from := s.chain.Seq() + 1
	s.mu.Unlock()
	if from > last {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, s.retry)
	defer cancel()
	return readRecords(rctx, s.conn, from, last, func(seq uint64, line []byte, h nats.Header) error {
		msgID := h.Get(jetstream.MsgIDHeader)
		s.mu.Lock()
		defer s.mu.Unlock()
		rec, err := s.chain.Follow(line)
		if err != nil {
			s.brokenLocked(fmt.Errorf("audit stream %s, message %d: %w", s.conn.Names.AuditStream(), seq, err))
			return s.broken
		}
		if msgID == "" {
			msgID = recordKey(rec.TraceID, &rec)
		}
		s.remember(msgID, seq)
		return nil
	})
}

// knows reports whether the sink knows where the record of message id key
// is stored.
func (s *AuditSink) knows(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[key]
	return ok
}

// remember indexes a stored record's message id. s.mu is held.
func (s *AuditSink) remember(key string, seq uint64) {
	now := time.Now()
	s.keys[key] = seq
	s.keyFIFO = append(s.keyFIFO, keyAt{key, now})
	drop := 0
	for drop < len(s.keyFIFO) && now.Sub(s.keyFIFO[drop].at) > s.window {
		if s.keys[s.keyFIFO[drop].key] <= seq {
			delete(s.keys, s.keyFIFO[drop].key)
		}
		drop++
	}
	if drop > 0 {
		s.keyFIFO = append(s.keyFIFO[:0], s.keyFIFO[drop:]...)
	}
}

func (s *AuditSink) setBroken(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.brokenLocked(err)
}

func (s *AuditSink) brokenLocked(err error) {
	if s.broken == nil {
		s.broken = fmt.Errorf("%w: %v", audit.ErrChainBroken, err)
	}
}

func (s *AuditSink) failAll(batch []*pendingRecord, err error) {
	for _, p := range batch {
		p.answer(audit.Record{}, err)
	}
}

// load reads the record stored at seq.
func (s *AuditSink) load(ctx context.Context, seq uint64) (audit.Record, error) {
	var m *jetstream.RawStreamMsg
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		m, err = s.stream.GetMsg(ctx, seq)
		return err
	})
	if err != nil {
		return audit.Record{}, fmt.Errorf("%w: record %d: %v", ErrAuditUnavailable, seq, err)
	}
	var rec audit.Record
	if err := json.Unmarshal(m.Data, &rec); err != nil {
		return audit.Record{}, fmt.Errorf("audit stream record %d: %w", seq, err)
	}
	return rec, nil
}

func (p *pendingRecord) answer(rec audit.Record, err error) {
	p.out, p.err = rec, err
	close(p.done)
}

// readRecords calls fn with every message of the audit stream from seq
// from to seq to, in order, with its headers: many through an ordered
// consumer, a few (and the rest of a read no consumer could serve) one by
// one. An error of fn ends the read and is returned as it is.
func readRecords(ctx context.Context, c *Conn, from, to uint64, fn func(seq uint64, line []byte, h nats.Header) error) error {
	next := from
	if to-from >= fewRecords {
		// A consumer whose server went away (a leader election) answers
		// "no responders" for a while: read on through a new one from
		// where the last one stopped, for as long as retryUnavailable
		// waits.
		err := retryUnavailable(ctx, func() error {
			return readOrdered(ctx, c, &next, to, fn)
		})
		var ferr callerError
		switch {
		case errors.As(err, &ferr):
			return ferr.err
		case err == nil || ctx.Err() != nil:
			return err
		}
		// No consumer could be made or read: the meta leader may
		// keep placing one on a server of the stream that is gone.
		// The stream's leader still answers for each record.
	}
	return readEach(ctx, c, next, to, fn)
}

// callerError is an error readOrdered's fn returned.
type callerError struct{ err error }

func (e callerError) Error() string { return e.err.Error() }

// readEach is readRecords one message at a time, each read from the
// stream's leader.
func readEach(ctx context.Context, c *Conn, from, to uint64, fn func(seq uint64, line []byte, h nats.Header) error) error {
	var st jetstream.Stream
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		st, err = c.JS.Stream(ctx, c.Names.AuditStream())
		return err
	})
	if err != nil {
		return fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
	}
	for seq := from; seq <= to; seq++ {
		var m *jetstream.RawStreamMsg
		err := retryCall(ctx, func(ctx context.Context) (err error) {
			m, err = st.GetMsg(ctx, seq)
			return err
		})
		if err != nil {
			return fmt.Errorf("audit stream %s: message %d: %w", c.Names.AuditStream(), seq, err)
		}
		line := m.Data
		if len(line) == 0 || line[len(line)-1] != '\n' {
			line = append(append([]byte(nil), line...), '\n')
		}
		if err := fn(seq, line, m.Header); err != nil {
			return err
		}
	}
	return nil
}

// readOrdered is readRecords through one ordered consumer, from *next to
// to; *next is the first record it has not read when it returns.
func readOrdered(ctx context.Context, c *Conn, next *uint64, to uint64, fn func(seq uint64, line []byte, h nats.Header) error) error {
	var cons jetstream.Consumer
	err := retryCall(ctx, func(ctx context.Context) (err error) {
		cons, err = c.JS.OrderedConsumer(ctx, c.Names.AuditStream(), jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: *next,
			// The chain's records, whatever else the stream might be made
			// to hold (a record that is not one would not verify).
			FilterSubjects: []string{c.Names.AuditSubject()},
			// Gone soon after the read: readers do not pile consumers up.
			InactiveThreshold: 5 * time.Second,
			// One attempt to make the consumer of each fetch, not as
			// many as it takes: readRecords reads on without one.
			MaxResetAttempts: 1,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
	}
	for *next <= to {
		want := int(min(to-*next+1, 1000))
		batch, err := cons.FetchNoWait(want)
		if err != nil {
			return fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
		}
		got := 0
		msgs := batch.Messages()
	fetched:
		for {
			var m jetstream.Msg
			var ok bool
			select {
			case m, ok = <-msgs:
			case <-ctx.Done():
				// A fetch whose server went away may never end.
				return fmt.Errorf("audit stream %s: reading records %d to %d: %w", c.Names.AuditStream(), *next, to, ctx.Err())
			}
			if !ok {
				break fetched
			}
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			got++
			if md.Sequence.Stream != *next {
				return fmt.Errorf("audit stream %s: message %d where %d was expected", c.Names.AuditStream(), md.Sequence.Stream, *next)
			}
			line := m.Data()
			if len(line) == 0 || line[len(line)-1] != '\n' {
				line = append(append([]byte(nil), line...), '\n')
			}
			if err := fn(*next, line, m.Headers()); err != nil {
				return callerError{err}
			}
			*next++
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
		}
		if got == 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("audit stream %s: reading records %d to %d: %w", c.Names.AuditStream(), *next, to, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}
