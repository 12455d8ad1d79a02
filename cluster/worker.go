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
	rev    atomic.Pointer[Revision]
	log    *slog.Logger
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
		Durable:       c.Names.Workers(),
		Description:   "wasmgate workers",
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

	it, err := w.cons.Messages(jetstream.PullMaxMessages(w.o.Concurrency))
	if err != nil {
		return fmt.Errorf("nats: consumer %s: %w", w.conn.Names.Workers(), err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	slots := make(chan struct{}, w.o.Concurrency)
	var running sync.WaitGroup
	defer running.Wait()
	for {
		m, err := it.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("nats: consumer %s: %w", w.conn.Names.Workers(), err)
		}
		slots <- struct{}{}
		running.Go(func() {
			defer func() { <-slots }()
			w.handle(m)
		})
	}
}

// handle executes one request message and answers it.
func (w *Worker) handle(m jetstream.Msg) {
	msg := &nats.Msg{Data: m.Data(), Header: m.Headers()}
	reply := m.Headers().Get(HeaderReply)
	req, deadline, err := decodeRequest(msg)
	if err != nil {
		// Not a request any front sends: it would fail every time.
		w.log.Error("request message refused", "subject", m.Subject(), "error", err)
		w.answer(reply, pipeline.ActionResult{}, fmt.Errorf("%w: %v", pipeline.ErrInvalidRequest, err))
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
	if slices.Contains(res.ReasonCodes, pipeline.AuditLogFailed) && ctx.Err() == nil {
		// The verdict is not stored: execute it again later, when the
		// audit stream is back, rather than answer an unaudited result.
		w.log.Error("verdict not stored; the request will run again", "trace_id", req.TraceID, "message", res.Message)
		_ = m.NakWithDelay(time.Second)
		return
	}
	w.answer(reply, res, err)
	ackCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.DoubleAck(ackCtx); err != nil {
		// The verdict is stored: a delivery again finds it and answers
		// the same.
		w.log.Error("ack failed; the request will be delivered again", "trace_id", req.TraceID, "error", err)
	}
}

func (w *Worker) answer(reply string, res pipeline.ActionResult, err error) {
	if reply == "" {
		return
	}
	if perr := w.conn.NC.Publish(reply, encodeReply(res, err)); perr != nil {
		w.log.Error("result not sent", "reply", reply, "error", perr)
	}
}

// Close closes the worker's audit sink once its records are written. Call
// it after Run has returned.
func (w *Worker) Close() error { return w.sink.Close() }
