package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmgate/wasmgate/pipeline"
)

// ErrBusy is matched by the error of a request the actions stream refused
// because it holds as many queued requests as it may: the deployment is
// saturated, and fronts answer so (HTTP 503). It matches pipeline.ErrBusy.
var ErrBusy = fmt.Errorf("%w: the cluster's actions stream is full", pipeline.ErrBusy)

// errCodeStoreFailed is JetStream's error code for a message a stream would
// not store, which a full stream that discards new messages answers.
const errCodeStoreFailed jetstream.ErrorCode = 10077

// Client dispatches actions to the workers of a deployment: it is a
// pipeline.Runner whose results are, field for field, the ones a Pipeline
// in this process would return for the same registry. It is safe for
// concurrent use.
type Client struct {
	conn    *Conn
	results pipeline.Results
	inbox   string
	sub     *nats.Subscription

	mu      sync.Mutex
	waiting map[string]chan *nats.Msg
	actions []string
	stop    context.CancelFunc
}

var _ pipeline.Runner = (*Client)(nil)

// ClientOptions configure a Client.
type ClientOptions struct {
	// Results is what results carry back (pipeline.ResultsFull by default).
	Results pipeline.Results
}

// NewClient returns a client of the deployment c reaches. It follows the
// published registry for Actions.
func NewClient(ctx context.Context, c *Conn, o ClientOptions) (*Client, error) {
	cl := &Client{conn: c, results: o.Results, inbox: c.NC.NewRespInbox(), waiting: map[string]chan *nats.Msg{}}
	actions, _, err := PublishedActions(ctx, c)
	if err != nil {
		return nil, err
	}
	cl.actions = actions
	sub, err := c.NC.Subscribe(cl.inbox+".*", cl.deliver)
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	cl.sub = sub
	wctx, stop := context.WithCancel(context.Background())
	cl.stop = stop
	go func() {
		_ = WatchRegistry(wctx, c, func(Revision) {
			if a, _, err := PublishedActions(wctx, c); err == nil {
				cl.mu.Lock()
				cl.actions = a
				cl.mu.Unlock()
			}
		})
	}()
	return cl, nil
}

// Actions lists the actions of the published registry, sorted.
func (cl *Client) Actions() []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return cl.actions
}

// Close stops the client; requests under way return errors.
func (cl *Client) Close() error {
	cl.stop()
	return cl.sub.Unsubscribe()
}

func (cl *Client) deliver(m *nats.Msg) {
	token := m.Subject[len(cl.inbox)+1:]
	cl.mu.Lock()
	ch := cl.waiting[token]
	cl.mu.Unlock()
	if ch != nil {
		select {
		case ch <- m:
		default: // answered already (the request ran twice)
		}
	}
	// Received: the worker stops sending it (see Worker). A request
	// nobody waits for any more is acknowledged too.
	_ = m.Respond(nil)
}

// Execute publishes req to the actions stream and waits for its result.
// The request's id, its message id, is the one WithRequestID put in ctx, else
// a new random one: JetStream drops a publish of the same id again (a retry)
// and the audit chain keeps one attempt and one verdict per id. It is not
// the trace id, which W3C trace context and the steps of a flow run share
// between many requests. A request without a trace id or timestamp gets
// them here, so that it is the same request wherever it runs. ctx's
// deadline travels with the request: a worker that takes it later refuses
// it unrun, BLOCKED EXECUTOR_TIMEOUT.
//
// An id names one request for ever: a request whose id has a verdict is not
// executed, its result is that verdict as first given (within the
// deduplication window the publish is dropped, and the verdict read from
// the request index).
//
// # Errors
//
// As Pipeline.Execute's, and ErrBusy (wrapped) when the stream is full.
// ErrRequestIDReused (wrapped) when the id was given before to a request
// that differs from req: the result is that request's verdict.
// When ctx ends first, the result is BLOCKED EXECUTOR_TIMEOUT and the
// error wraps ctx.Err(); the request stays queued, and is audited as
// whatever its worker made of it.
func (cl *Client) Execute(ctx context.Context, req pipeline.ActionRequest) (pipeline.ActionResult, error) {
	if err := req.Validate(); err != nil {
		return pipeline.ActionResult{}, err
	}
	if req.TraceID == "" {
		req.TraceID = pipeline.NewTraceID()
	}
	if req.TsUTC == "" {
		req.TsUTC = time.Now().UTC().Format(time.RFC3339Nano)
	}
	ch := make(chan *nats.Msg, 1)
	token := nats.NewInbox()[len(nats.InboxPrefix):]
	cl.mu.Lock()
	cl.waiting[token] = ch
	cl.mu.Unlock()
	defer func() {
		cl.mu.Lock()
		delete(cl.waiting, token)
		cl.mu.Unlock()
	}()

	m := nats.NewMsg(cl.conn.Names.ActionSubject(req.Action))
	m.Data = encodeRequest(req)
	id := RequestID(ctx)
	if id == "" {
		id = pipeline.NewTraceID()
	}
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Header.Set(HeaderReply, cl.inbox+"."+token)
	if dl, ok := ctx.Deadline(); ok {
		m.Header.Set(HeaderDeadline, dl.UTC().Format(time.RFC3339Nano))
	}
	dup, err := cl.publish(ctx, m)
	if err != nil {
		if ctx.Err() != nil {
			return cl.timedOut(req, ctx.Err())
		}
		return pipeline.ActionResult{}, err
	}
	var judged <-chan []byte
	if dup {
		// A message of this id is stored already: one of this request's
		// own publishes, answered on ch, or another request's, whose
		// verdict answers this one once judged.
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		judged = cl.awaitJudged(wctx, id, req)
	}
	select {
	case r := <-ch:
		res, err := decodeReply(r.Data)
		return cl.results.Present(res), err
	case body := <-judged:
		res, err := decodeReply(body)
		return cl.results.Present(res), err
	case <-ctx.Done():
		return cl.timedOut(req, ctx.Err())
	}
}

// awaitJudged sends, once request id has a verdict in the request index,
// the answer to req it makes; nothing if ctx ends first or the index
// cannot be read.
func (cl *Client) awaitJudged(ctx context.Context, id string, req pipeline.ActionRequest) <-chan []byte {
	out := make(chan []byte, 1)
	go func() {
		x, err := openRequestIndex(ctx, cl.conn)
		if err != nil {
			return
		}
		watch, err := x.kv.Watch(ctx, requestKey(id))
		if err != nil {
			return
		}
		defer func() { _ = watch.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case kve, ok := <-watch.Updates():
				if !ok {
					return
				}
				var e indexEntry
				if kve == nil || kve.Operation() != jetstream.KeyValuePut || json.Unmarshal(kve.Value(), &e) != nil || e.State != stateJudged {
					continue
				}
				if body, err := reusedReply(e, req); err == nil {
					out <- body
				}
				return
			}
		}
	}()
	return out
}

// publish publishes m, again while JetStream does not answer (a leader
// election), with the same message id: a publish that was stored after all
// is dropped as a duplicate. dup says the stream held a message of m's id
// already.
func (cl *Client) publish(ctx context.Context, m *nats.Msg) (dup bool, err error) {
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ack, err := cl.conn.JS.PublishMsg(actx, m, jetstream.WithRetryAttempts(0))
		cancel()
		if err == nil {
			return ack.Duplicate, nil
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			switch {
			case apiErr.ErrorCode == errCodeStoreFailed && strings.Contains(apiErr.Description, "maximum"):
				return false, fmt.Errorf("%w (%v)", ErrBusy, err)
			case apiErr.Code != 503:
				return false, fmt.Errorf("nats: publish to %s: %w", m.Subject, err)
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (cl *Client) timedOut(req pipeline.ActionRequest, err error) (pipeline.ActionResult, error) {
	res := pipeline.ActionResult{
		Action: req.Action, Status: pipeline.StatusBlocked, TraceID: req.TraceID, TsUTC: req.TsUTC,
		ReasonCodes: []pipeline.ReasonCode{pipeline.ExecutorTimeout},
		Message:     "no verdict from a worker before the deadline; the request stays queued, and a worker that takes it after its deadline refuses it unrun",
	}
	return res, fmt.Errorf("cluster: waiting for trace id %s: %w", req.TraceID, err)
}
