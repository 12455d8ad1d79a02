package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
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
	// Audit configures the worker's audit sink.
	Audit AuditOptions
	// Logger receives a line per reload and per failure (default: discard).
	Logger *slog.Logger
}

// Worker executes the requests of the actions stream through a pipeline of
// its own, audited to the deployment's one chain. Requests are acknowledged
// only once their verdict is stored; a worker that dies leaves its requests
// to be delivered again after AckWait, and executed again with the same
// verdict (the chain keeps the first).
type Worker struct {
	conn   *Conn
	engine runtime.Engine
	sink   *AuditSink
	cons   jetstream.Consumer
	o      WorkerOptions
	pipe   atomic.Pointer[pipeline.Pipeline]
	// stopping is set once Run's context ends: results are sent once more,
	// not retried.
	stopping atomic.Bool
	rev      atomic.Pointer[Revision]
	log      *slog.Logger
}

// NewWorker loads the published registry on engine, opens the audit chain
// and joins the workers' consumer.
//
// # Errors
//
// ErrNoRegistry (wrapped) when nothing has been published yet, and the
// errors of reaching JetStream.
func NewWorker(ctx context.Context, c *Conn, engine runtime.Engine, o WorkerOptions) (*Worker, error) {
	if o.Concurrency <= 0 {
		o.Concurrency = goruntime.GOMAXPROCS(0)
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = 1000
	}
	w := &Worker{conn: c, engine: engine, o: o, log: o.Logger}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	reg, rev, err := LoadPublished(ctx, c, engine, o.CacheDir)
	if err != nil {
		return nil, err
	}
	sink, err := OpenAuditSink(ctx, c, o.Audit)
	if err != nil {
		return nil, err
	}
	w.sink = sink
	w.pipe.Store(pipeline.New(reg, sink))
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
		sink.Close()
		return nil, fmt.Errorf("nats: consumer %s: %w", c.Names.Workers(), err)
	}
	w.cons = cons
	return w, nil
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
			reg, got, err := LoadPublished(watchCtx, w.conn, w.engine, w.o.CacheDir)
			if err != nil {
				w.log.Error("registry reload failed; still running the previous one", "revision", rev.KV, "error", err)
				return
			}
			w.pipe.Store(pipeline.New(reg, w.sink))
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
	slots := make(chan struct{}, w.o.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	defer w.stopping.Store(true) // before the wait: results are not retried then
	for ctx.Err() == nil {
		slots <- struct{}{} // at least one free
		free := 1
	fill:
		for free < w.o.Concurrency {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break fill
			}
		}
		// The heartbeat ends a pull whose server went away (nothing else
		// would: the pull would wait forever).
		batch, err := w.cons.Fetch(free, jetstream.FetchMaxWait(pullWait), jetstream.FetchHeartbeat(pullWait/4))
		if err != nil {
			for range free {
				<-slots
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
				taken++
				running.Go(func() {
					defer func() { <-slots }()
					w.handle(m)
				})
			case <-abandon.C:
				w.log.Warn("pull request unanswered; pulling again", "consumer", w.conn.Names.Workers())
				break take
			}
		}
		abandon.Stop()
		for range free - taken {
			<-slots
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

// handle executes one request message and answers it.
func (w *Worker) handle(m jetstream.Msg) {
	msg := &nats.Msg{Data: m.Data(), Header: m.Headers()}
	reply := m.Headers().Get(HeaderReply)
	req, deadline, err := decodeRequest(msg)
	if err != nil {
		// Not a request any front sends: it would fail every time.
		w.log.Error("request message refused", "subject", m.Subject(), "error", err)
		w.answer(reply, time.Time{}, pipeline.ActionResult{}, fmt.Errorf("%w: %v", pipeline.ErrInvalidRequest, err))
		_ = m.TermWithReason(err.Error())
		return
	}
	// Shutting down does not cancel what runs: it ends within its limits.
	ctx := WithRequestID(context.Background(), m.Headers().Get(jetstream.MsgIDHeader))
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
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
	res, err := w.pipe.Load().Execute(ctx, req)
	alive.Stop()
	close(done)
	if slices.Contains(res.ReasonCodes, pipeline.AuditLogFailed) && ctx.Err() == nil && w.sink.Health() == nil {
		if md, merr := m.Metadata(); merr == nil && md.NumDelivered < maxAuditRetries {
			// The verdict is not stored: execute it again later, when
			// the audit stream is back, rather than answer an unaudited
			// result.
			w.log.Error("verdict not stored; the request will run again", "trace_id", req.TraceID, "delivery", md.NumDelivered, "message", res.Message)
			_ = m.NakWithDelay(time.Second)
			return
		}
	}
	// A broken chain (nothing more is appended to it), or an audit stream
	// that stayed unavailable: the requester learns it, BLOCKED
	// AUDIT_LOG_FAILED, rather than wait for nothing.
	w.answer(reply, deadline, res, err)
	ackCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.DoubleAck(ackCtx); err != nil {
		// The verdict is stored: a delivery again finds it and answers
		// the same.
		w.log.Error("ack failed; the request will be delivered again", "trace_id", req.TraceID, "error", err)
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
func (w *Worker) answer(reply string, deadline time.Time, res pipeline.ActionResult, err error) {
	if reply == "" {
		return
	}
	if deadline.IsZero() || time.Until(deadline) > answerFor {
		deadline = time.Now().Add(answerFor)
	}
	body := encodeReply(res, err)
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

// Close closes the worker's audit sink once its records are written. Call
// it after Run has returned.
func (w *Worker) Close() error { return w.sink.Close() }
