package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/admission"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Concurrency is how many requests the worker executes at once
	// (GOMAXPROCS when zero).
	Concurrency int
	// AckWait is how long a request may go without a sign of life from
	// its worker before JetStream delivers it again, to another worker (30
	// s when zero). A running execution signals every third of it.
	AckWait time.Duration
	// MaxAckPending bounds the requests taken and not yet acknowledged,
	// across every worker (1000 when zero). It is a property of the shared
	// consumer: the last worker to start sets it.
	MaxAckPending int
	// CacheDir keeps fetched modules and tools across restarts ("" for
	// none); compiled code is cached by the engine.
	CacheDir string
	// Logger receives a line per reload and per failure (default: discard).
	Logger *slog.Logger
}

// Host is what a worker executes on: *wasmgate.Runtime, opened with the
// worker's audit sink (wasmgate.WithAuditSink), so that every verdict goes
// to the deployment's one chain. The worker replaces its registry whole
// with each revision published.
type Host interface {
	Execute(ctx context.Context, req pipeline.ActionRequest) (pipeline.ActionResult, error)
	ReplaceRegistry(ctx context.Context, build func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error)) error
}

// Worker executes the requests of the actions stream on its Host, audited
// to the deployment's one chain. A request id names one
// request for ever: one that has a verdict is not executed again but
// answered with that verdict, as the request index keeps it (see
// requestIndex). Requests are acknowledged only once their verdict is stored
// and indexed; a worker that dies leaves its requests to be delivered again
// after AckWait, and the next one finds on the chain what the dead one
// stored of them (the chain keeps one attempt and one verdict per request).
type Worker struct {
	conn *Conn
	host Host
	sink *AuditSink
	cons jetstream.Consumer
	// index is the request index; actions the actions stream, asked
	// whether a claim's message is still queued.
	index   *requestIndex
	actions jetstream.Stream
	o       WorkerOptions
	// stopping is set once Run's context ends: results are sent once more,
	// not retried.
	stopping atomic.Bool
	rev      atomic.Pointer[Revision]
	log      *slog.Logger
}

// NewWorker loads the published registry into host, opens the request
// index, indexes the verdicts of the chain that are not (see indexChain),
// and joins the workers' consumer. sink is host's audit sink, which the
// worker reads the chain through; closing host closes it.
//
// # Errors
//
// ErrNoRegistry (wrapped) when nothing has been published yet, host's
// error when it is closed, and the errors of reaching JetStream (a request
// index missing: Setup makes it).
func NewWorker(ctx context.Context, c *Conn, host Host, sink *AuditSink, o WorkerOptions) (*Worker, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = goruntime.GOMAXPROCS(0)
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = 1000
	}
	w := &Worker{conn: c, host: host, sink: sink, o: o, log: o.Logger}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	rev, err := w.loadPublished(ctx)
	if err != nil {
		return nil, err
	}
	if w.index, err = openRequestIndex(ctx, c); err != nil {
		return nil, err
	}
	err = retryCall(ctx, func(ctx context.Context) (err error) {
		w.actions, err = c.JS.Stream(ctx, c.Names.ActionsStream())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("nats: stream %s: %w", c.Names.ActionsStream(), err)
	}
	if err := w.indexChain(ctx); err != nil {
		return nil, err
	}
	w.rev.Store(&rev)
	cons, err := c.JS.CreateOrUpdateConsumer(ctx, c.Names.ActionsStream(), jetstream.ConsumerConfig{
		Durable:     c.Names.Workers(),
		Description: "wasmgate workers",
		// The deployment's own requests, whatever else the stream might
		// be made to hold.
		FilterSubject: c.Names.ActionsSubjects(),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       o.AckWait,
		MaxAckPending: o.MaxAckPending,
		MaxDeliver:    -1,
	})
	if err != nil {
		return nil, fmt.Errorf("nats: consumer %s: %w", c.Names.Workers(), err)
	}
	w.cons = cons
	return w, nil
}

// loadPublished replaces the host's registry with the revision published
// last, and returns that revision.
func (w *Worker) loadPublished(ctx context.Context) (Revision, error) {
	var rev Revision
	err := w.host.ReplaceRegistry(ctx, func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
		reg, got, err := LoadPublished(ctx, w.conn, engine, w.o.CacheDir)
		rev = got
		return reg, err
	})
	return rev, err
}

// Revision is the registry revision the worker runs.
func (w *Worker) Revision() Revision { return *w.rev.Load() }

// Sink is the worker's audit sink.
func (w *Worker) Sink() *AuditSink { return w.sink }

// Run takes and executes requests until ctx is done, then waits for the
// executions under way to end (each within its own limits) and returns.
// The registry is reloaded whenever a new one is published.
func (w *Worker) Run(ctx context.Context) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		err := WatchRegistry(watchCtx, w.conn, func(rev Revision) {
			if rev.KV == w.Revision().KV {
				return
			}
			got, err := w.loadPublished(watchCtx)
			if err != nil {
				w.log.Error("registry reload failed; still running the previous one", "revision", rev.KV, "error", err)
				return
			}
			w.rev.Store(&got)
			w.log.Info("registry reloaded", "revision", got.KV, "digest", got.Digest)
		})
		if err != nil && watchCtx.Err() == nil {
			w.log.Error("registry watch ended", "error", err)
		}
	}()

	// Pull requests that expire within pullWait, rather than one long-lived
	// subscription: a pull parked on a consumer leader that went away costs
	// at most pullWait, and the worker takes only what it has slots for.
	gate := admission.New(w.o.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	defer w.stopping.Store(true) // before the wait: results are not retried then
	for ctx.Err() == nil {
		// At least one slot: the executions under way free theirs without
		// waiting for ctx (they end within their limits).
		first, err := gate.Acquire(context.WithoutCancel(ctx))
		if err != nil {
			return err // not with a context that never ends
		}
		held := []func(){first}
		for len(held) < w.o.Concurrency {
			release, ok := gate.TryAcquire()
			if !ok {
				break
			}
			held = append(held, release)
		}
		free := len(held)
		// The heartbeat ends a pull whose server went away (nothing else
		// would: the pull would wait forever).
		batch, err := w.cons.Fetch(free, jetstream.FetchMaxWait(pullWait), jetstream.FetchHeartbeat(pullWait/4))
		if err != nil {
			for _, release := range held {
				release()
			}
			if ctx.Err() != nil {
				break
			}
			// A leader election, a server gone: pull again shortly.
			w.log.Warn("pulling requests; trying again", "consumer", w.conn.Names.Workers(), "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		taken := 0
		// A pull request whose consumer leader went away may be answered
		// by neither messages nor its expiry: give up on it after a while
		// (a message it delivers after that is delivered again after the
		// ack wait).
		abandon := time.NewTimer(pullWait + 2*time.Second)
	take:
		for {
			select {
			case m, ok := <-batch.Messages():
				if !ok {
					break take
				}
				release := held[taken]
				taken++
				running.Go(func() {
					defer release()
					w.handle(m)
				})
			case <-abandon.C:
				w.log.Warn("pull request unanswered; pulling again", "consumer", w.conn.Names.Workers())
				break take
			}
		}
		abandon.Stop()
		for _, release := range held[taken:] {
			release()
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && ctx.Err() == nil {
			w.log.Warn("pulling requests; trying again", "consumer", w.conn.Names.Workers(), "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// maxAuditRetries is how many times a request whose verdict could not be
// stored is delivered before its requester is answered so.
const maxAuditRetries = 5

// pullWait is how long one pull request waits for requests.
const pullWait = 2 * time.Second

// handle executes one request message and answers it, unless its id has a
// verdict already: then it answers that (see requestIndex).
func (w *Worker) handle(m jetstream.Msg) {
	// A sign of life while the message is settled and executed.
	alive := time.NewTicker(w.o.AckWait / 3)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-alive.C:
				_ = m.InProgress()
			case <-done:
				return
			}
		}
	}()
	t, run := w.take(m)
	var res pipeline.ActionResult
	var err error
	if run {
		res, err = w.execute(t)
	}
	alive.Stop()
	close(done)
	if run {
		w.conclude(t, res, err)
	}
}

// taken is a request message a worker took to execute.
type taken struct {
	m        jetstream.Msg
	req      pipeline.ActionRequest
	deadline time.Time
	reply    string
	id, key  string // the request id, and its key in the request index
	seq      uint64 // the message's stream sequence
	entry    indexEntry
	rev      uint64 // the revision of entry, the worker's claim
	claim    *claim
}

// settleFor bounds what a worker does to settle a request message before
// executing it (reading the request index, and the chain when the index
// says a worker stopped).
const settleFor = time.Minute

// take decodes m and settles it with the request index. It reports whether
// the request is to be executed: when not, the message is answered and
// acknowledged (or delivered again later) here.
func (w *Worker) take(m jetstream.Msg) (*taken, bool) {
	msg := &nats.Msg{Data: m.Data(), Header: m.Headers()}
	t := &taken{m: m, reply: m.Headers().Get(HeaderReply), id: m.Headers().Get(jetstream.MsgIDHeader)}
	var err error
	t.req, t.deadline, err = decodeRequest(msg)
	if err == nil && t.id == "" {
		err = fmt.Errorf("request message: no %s header: a request needs an id, which names it in the audit chain and the request index (a Client gives each request one)", jetstream.MsgIDHeader)
	}
	if err != nil {
		// Not a request any front sends: it would fail every time.
		w.log.Error("request message refused", "subject", m.Subject(), "error", err)
		w.answer(t.reply, time.Time{}, encodeReply(pipeline.ActionResult{}, fmt.Errorf("%w: %v", pipeline.ErrInvalidRequest, err)))
		_ = m.TermWithReason(err.Error())
		return nil, false
	}
	md, err := m.Metadata()
	if err != nil {
		w.log.Error("request message without metadata; delivering it again", "trace_id", t.req.TraceID, "error", err)
		_ = m.NakWithDelay(time.Second)
		return nil, false
	}
	t.seq, t.key = md.Sequence.Stream, requestKey(t.id)

	ctx, cancel := context.WithTimeout(context.Background(), settleFor)
	defer cancel()
	outcome, err := w.settle(ctx, t)
	switch {
	case err != nil:
		if md.NumDelivered < maxAuditRetries {
			w.log.Error("request index unavailable; the request will be taken again", "trace_id", t.req.TraceID, "delivery", md.NumDelivered, "error", err)
			_ = m.NakWithDelay(time.Second)
			return nil, false
		}
		// Running it unindexed could run an id that has a verdict: the
		// requester learns it, rather than wait for nothing.
		res := pipeline.ActionResult{Action: t.req.Action, TraceID: t.req.TraceID, TsUTC: t.req.TsUTC, Status: pipeline.StatusBlocked,
			ReasonCodes: []pipeline.ReasonCode{pipeline.AuditLogFailed},
			Message:     fmt.Sprintf("the request index could not be read or written, so nothing was executed: %v", err)}
		w.answer(t.reply, t.deadline, encodeReply(res, nil))
		w.ack(t)
		return nil, false
	case outcome == settledWait:
		// Another message of the id holds the claim and is queued: its
		// verdict will answer this one.
		_ = m.NakWithDelay(time.Second)
		return nil, false
	case outcome == settledJudged:
		body, err := reusedReply(t.entry, t.req)
		if err != nil {
			w.log.Error("the answer stored for the request id cannot be read", "trace_id", t.req.TraceID, "error", err)
			body = encodeReply(pipeline.ActionResult{}, fmt.Errorf("%w: request id %q: %v", pipeline.ErrInternal, t.id, err))
		}
		w.answer(t.reply, t.deadline, body)
		w.ack(t)
		return nil, false
	}
	return t, true
}

// settle outcomes.
const (
	settledRun    = iota // execute the request, under t.claim
	settledJudged        // the id has a verdict: t.entry
	settledWait          // another message of the id is to be executed first
)

// settle finds what the request index says of t's id, and claims it for t
// when t is to be executed (see requestIndex).
func (w *Worker) settle(ctx context.Context, t *taken) (int, error) {
	for {
		mine := indexEntry{State: stateClaimed, After: w.sink.Seq(), Message: t.seq}
		rev, err := w.index.put(ctx, t.key, mine, 0)
		if err == nil {
			t.entry, t.rev, t.claim = mine, rev, &claim{}
			return settledRun, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, err
		}
		e, rev, err := w.index.get(ctx, t.key)
		switch {
		case err != nil:
			return 0, err
		case rev == 0:
			continue // deleted meanwhile: claim it
		case e.State == stateJudged:
			t.entry = e
			return settledJudged, nil
		}
		if e.Message != 0 && e.Message != t.seq {
			queued, err := w.queued(ctx, e.Message)
			if err != nil {
				return 0, err
			}
			if queued {
				return settledWait, nil
			}
		}
		// This message delivered again (its worker stopped), or one whose
		// claim's message is gone: what was stored of the id is on the
		// chain, after the claim's seq.
		attempt, verdict, err := w.storedRecords(ctx, t.id, e.After)
		if err != nil {
			return 0, err
		}
		if verdict != 0 && e.Message != t.seq {
			// Judged by another message, whose worker did not index it.
			rec, err := w.sink.load(ctx, verdict)
			if err != nil {
				return 0, err
			}
			res, _ := answerOf(rec, nil, nil)
			judged := indexEntry{State: stateJudged, After: e.After, Verdict: verdict, Reply: encodeReply(res, nil)}
			if _, err := w.index.put(ctx, t.key, judged, rev); errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			} else if err != nil {
				w.log.Warn("verdict found on the chain, not indexed", "trace_id", t.req.TraceID, "verdict_seq", verdict, "error", err)
			}
			t.entry = judged
			return settledJudged, nil
		}
		taken := indexEntry{State: stateClaimed, After: e.After, Message: t.seq}
		if e.Message != t.seq {
			rev, err = w.index.put(ctx, t.key, taken, rev)
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
			if err != nil {
				return 0, err
			}
		}
		t.entry, t.rev = taken, rev
		t.claim = &claim{attemptSeq: attempt, verdictSeq: verdict}
		return settledRun, nil
	}
}

// queued reports whether the actions stream still holds message seq (it is
// acknowledged once answered).
func (w *Worker) queued(ctx context.Context, seq uint64) (bool, error) {
	err := retryCall(ctx, func(ctx context.Context) error {
		_, err := w.actions.GetMsg(ctx, seq)
		return err
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	}
	return false, fmt.Errorf("actions stream %s, message %d: %w", w.conn.Names.ActionsStream(), seq, err)
}

// execute runs t's request on the host, under its claim.
func (w *Worker) execute(t *taken) (pipeline.ActionResult, error) {
	// Shutting down does not cancel what runs: it ends within its limits.
	ctx := withClaim(WithRequestID(context.Background(), t.id), t.claim)
	if !t.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t.deadline)
		defer cancel()
	}
	return w.host.Execute(ctx, t.req)
}

// conclude indexes the verdict t's execution stored (or releases the claim
// when none was), answers the requester and acknowledges the message.
func (w *Worker) conclude(t *taken, res pipeline.ActionResult, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), settleFor)
	defer cancel()
	verdict, existed := t.claim.result()
	if verdict == nil && t.claim.verdictSeq != 0 {
		// Judged before without running, and refused to run now.
		rec, lerr := w.sink.load(ctx, t.claim.verdictSeq)
		if lerr == nil {
			verdict, existed = &rec, true
		}
	}
	if verdict == nil {
		if slices.Contains(res.ReasonCodes, pipeline.AuditLogFailed) && w.sink.Health() == nil && (t.deadline.IsZero() || time.Now().Before(t.deadline)) {
			if md, merr := t.m.Metadata(); merr == nil && md.NumDelivered < maxAuditRetries {
				// The verdict is not stored: execute it again later, when
				// the audit stream is back, rather than answer an unaudited
				// result. The claim stays this message's.
				w.log.Error("verdict not stored; the request will run again", "trace_id", t.req.TraceID, "delivery", md.NumDelivered, "message", res.Message)
				_ = t.m.NakWithDelay(time.Second)
				return
			}
		}
		w.release(ctx, t, errors.Is(err, pipeline.ErrInvalidRequest))
		// A broken chain (nothing more is appended to it), or an audit
		// stream that stayed unavailable: the requester learns it, BLOCKED
		// AUDIT_LOG_FAILED, rather than wait for nothing.
		w.answer(t.reply, t.deadline, encodeReply(res, err))
		w.ack(t)
		return
	}
	if existed {
		// The chain's verdict is the answer, whatever this run made.
		res, err = answerOf(*verdict, &res, err)
	}
	body := encodeReply(res, err)
	judged := indexEntry{State: stateJudged, After: t.entry.After, Verdict: verdict.Seq, Reply: body}
	_, ierr := w.index.put(ctx, t.key, judged, t.rev)
	if errors.Is(ierr, nats.ErrMaxPayload) {
		// An answer too large to keep is kept without its output; the
		// digests still name it.
		res.Output = nil
		judged.Reply = encodeReply(res, err)
		_, ierr = w.index.put(ctx, t.key, judged, t.rev)
	}
	switch {
	case errors.Is(ierr, jetstream.ErrKeyRevisionMismatch):
		// The claim moved on: the same message, run twice at once, was
		// judged by the other run first. Its answer is the one.
		if e, _, gerr := w.index.get(ctx, t.key); gerr == nil && e.State == stateJudged {
			body = e.Reply
		}
	case ierr != nil:
		// The verdict is stored: a delivery again finds it on the chain.
		w.log.Error("verdict stored, not indexed", "trace_id", t.req.TraceID, "verdict_seq", verdict.Seq, "error", ierr)
	}
	w.answer(t.reply, t.deadline, body)
	w.ack(t)
}

// release gives up t's claim when its execution stored no verdict: another
// message of the id may run. A request refused as invalid stored nothing,
// so its claim goes; otherwise a verdict may be stored after all (a write
// that timed out), and the claim stays for the chain to be searched.
func (w *Worker) release(ctx context.Context, t *taken, invalid bool) {
	var err error
	if invalid {
		err = w.index.remove(ctx, t.key, t.rev)
	} else {
		_, err = w.index.put(ctx, t.key, indexEntry{State: stateClaimed, After: t.entry.After}, t.rev)
	}
	if err != nil {
		w.log.Warn("request claim not released", "trace_id", t.req.TraceID, "error", err)
	}
}

// ack acknowledges t's message once it is answered.
func (w *Worker) ack(t *taken) {
	ackCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := t.m.DoubleAck(ackCtx); err != nil {
		// The verdict is stored: a delivery again finds it and answers
		// the same.
		w.log.Error("ack failed; the request will be delivered again", "trace_id", t.req.TraceID, "error", err)
	}
}

// requesterGone is how long nobody may listen on a reply subject before a
// worker stops sending the result there.
const requesterGone = 3 * time.Second

// answerFor bounds how long a worker keeps sending a result nobody
// receives, for a request without a deadline.
const answerFor = 30 * time.Second

// answer sends the result to the requester until the requester confirms
// it (its connection may be moving to another server of the cluster, and a
// plain NATS message is delivered at most once), for as long as the
// request's deadline allows, or answerFor.
func (w *Worker) answer(reply string, deadline time.Time, body []byte) {
	if reply == "" {
		return
	}
	if deadline.IsZero() || time.Until(deadline) > answerFor {
		deadline = time.Now().Add(answerFor)
	}
	var gone time.Time // since when nobody listens on reply
	for {
		_, rerr := w.conn.NC.Request(reply, body, time.Second)
		if rerr == nil {
			return
		}
		if errors.Is(rerr, nats.ErrNoResponders) {
			if gone.IsZero() {
				gone = time.Now()
			}
		} else {
			gone = time.Time{}
		}
		// A requester moving to another server is back within a
		// second; one gone for longer has left (or this worker is
		// stopping): the verdict is stored, nobody waits for it.
		if time.Now().After(deadline) || (!gone.IsZero() && time.Since(gone) > requesterGone) || w.stopping.Load() {
			w.log.Warn("result not confirmed by the requester; giving up", "reply", reply, "error", rerr)
			return
		}
		if errors.Is(rerr, nats.ErrNoResponders) {
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// indexChain indexes the verdicts of the chain that no worker indexed: those
// stored by a wasmgate before the request index, or by one still running
// beside this one, after the index's mark and through the last record the
// sink followed. Then the mark is raised there. A request id judged before
// the index existed is so never executed again either.
func (w *Worker) indexChain(ctx context.Context) error {
	mark, _, err := w.index.mark(ctx)
	if err != nil {
		return err
	}
	last := w.sink.Seq()
	if mark >= last {
		return nil
	}
	indexed := 0
	err = readRecords(ctx, w.conn, mark+1, last, func(seq uint64, line []byte, h nats.Header) error {
		id, ok := strings.CutSuffix(h.Get(jetstream.MsgIDHeader), ":verdict")
		if h.Get(headerIndexed) != "" || !ok || id == "" {
			return nil
		}
		var rec audit.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("audit stream %s, message %d: %w", w.conn.Names.AuditStream(), seq, err)
		}
		res, _ := answerOf(rec, nil, nil)
		_, err := w.index.put(ctx, requestKey(id), indexEntry{State: stateJudged, Verdict: seq, Reply: encodeReply(res, nil)}, 0)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil // the first verdict of the id is its answer
		}
		indexed++
		return err
	})
	if err != nil {
		return fmt.Errorf("indexing the verdicts of records %d to %d: %w", mark+1, last, err)
	}
	if indexed > 0 {
		w.log.Info("verdicts stored without the request index indexed", "count", indexed, "through_seq", last)
	}
	return w.index.raiseMark(ctx, last)
}
