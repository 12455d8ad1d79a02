package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// deployment is a server with a published registry, under prefix
// (DefaultPrefix when empty).
type deployment struct {
	url    string
	config string
	prefix string
}

func newDeployment(t *testing.T, url string, l Layout) deployment {
	t.Helper()
	return newTenant(t, url, "", l)
}

// newTenant is newDeployment under prefix.
func newTenant(t *testing.T, url, prefix string, l Layout) deployment {
	t.Helper()
	d := deployment{url: url, config: mixedConfig(t), prefix: prefix}
	c := d.conn(t, l)
	_, err := Publish(context.Background(), c, d.config, jstool.Store{})
	require.NoError(t, err)
	return d
}

func (d deployment) conn(t *testing.T, l Layout) *Conn {
	t.Helper()
	c, err := Connect(Options{URL: d.url, Prefix: d.prefix, Name: t.Name()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, c.Setup(context.Background(), l))
	return c
}

// newWorker makes a worker on c as `wasmgate worker` does: it runs on a
// Runtime of its own, audited to the deployment's chain through a sink of
// ao. The Runtime is closed when t ends.
func newWorker(t *testing.T, c *Conn, o WorkerOptions, ao AuditOptions) (*Worker, *wasmgate.Runtime) {
	t.Helper()
	ctx := context.Background()
	sink, err := OpenAuditSink(ctx, c, ao)
	require.NoError(t, err)
	rt, err := wasmgate.New(ctx, wasmgate.WithCompilationCacheDir(testenv.CacheDir()), wasmgate.WithAuditSink(sink),
		wasmgate.WithRegistry(func(context.Context, sandbox.Engine) (*pipeline.Registry, error) { return pipeline.NewRegistry(), nil }))
	if err != nil {
		_ = sink.Close()
		require.NoError(t, err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	w, err := NewWorker(ctx, c, rt, sink, o)
	require.NoError(t, err)
	return w, rt
}

// startWorker runs a worker on a connection of its own until t ends (or
// stop is called); stop waits for Run to return.
func (d deployment) startWorker(t *testing.T, o WorkerOptions) (w *Worker, stop func()) {
	t.Helper()
	return d.startAuditedWorker(t, o, AuditOptions{})
}

// startAuditedWorker is startWorker with a sink of ao.
func (d deployment) startAuditedWorker(t *testing.T, o WorkerOptions, ao AuditOptions) (w *Worker, stop func()) {
	t.Helper()
	w, rt := newWorker(t, d.conn(t, Layout{}), o, ao)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
			require.NoError(t, rt.Close(context.Background()))
		})
	}
	t.Cleanup(stop)
	return w, stop
}

func (d deployment) client(t *testing.T, o ClientOptions) *Client {
	t.Helper()
	cl, err := NewClient(context.Background(), d.conn(t, Layout{}), o)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// exportAudit verifies the deployment's chain and returns its records.
func (d deployment) exportAudit(t *testing.T) ([]audit.Record, audit.VerifyReport) {
	t.Helper()
	var buf bytes.Buffer
	n, err := ExportAudit(context.Background(), d.conn(t, Layout{}), &buf)
	require.NoError(t, err)
	rep, err := audit.Verify(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err, "the exported chain verifies")
	require.EqualValues(t, n, rep.Records)
	var recs []audit.Record
	for line := range bytes.Lines(buf.Bytes()) {
		var r audit.Record
		require.NoError(t, json.Unmarshal(line, &r))
		recs = append(recs, r)
	}
	return recs, rep
}

func verdictsByTrace(recs []audit.Record) map[string]int {
	n := map[string]int{}
	for _, r := range recs {
		if r.EventType == audit.EventActionAudit {
			n[r.TraceID]++
		}
	}
	return n
}

// TestDispatchSameAsInProcess: a result through NATS is, field for field,
// the result a pipeline of this process gives for the same registry and
// request (but the time it took), and the chain the workers wrote verifies
// with one verdict per request.
func TestDispatchSameAsInProcess(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	d.startWorker(t, WorkerOptions{})
	cl := d.client(t, ClientOptions{})
	require.Equal(t, []string{"math.sort", "math.sum", "text.stats", "text.trim", "text.upper"}, cl.Actions())

	reg, err := pipeline.LoadRegistry(context.Background(), d.config, registryEngine(t), js.Kind())
	require.NoError(t, err)
	local := pipeline.New(reg, audit.NewMemorySink())

	requests := []struct{ action, payload string }{
		{"text.upper", `{"text":"governed"}`},
		{"math.sum", `{"numbers":[1,2,3]}`},
		{"math.sort", `{"numbers":[5,3,9,-1]}`},
		{"text.trim", `{"text":"  padded  "}`},
		{"text.upper", `{"text":`},                                        // not JSON: NON_JSON_PAYLOAD
		{"no.such", `{}`},                                                 // ACTION_UNKNOWN
		{"math.sum", `{"numbers":[` + strings.Repeat("1,", 2000) + `1]}`}, // LIST_TOO_LONG
	}
	ctx := context.Background()
	for i, r := range requests {
		req := pipeline.ActionRequest{Action: r.action, Payload: json.RawMessage(r.payload),
			TraceID: pipeline.NewTraceID(), TsUTC: "2026-11-25T12:00:00Z"}
		remote, err := cl.Execute(ctx, req)
		require.NoError(t, err, "request %d", i)
		want, err := local.Execute(ctx, req)
		require.NoError(t, err)
		remote.DurationMs, want.DurationMs = 0, 0
		assert.Equal(t, mustJSON(t, want), mustJSON(t, remote), "request %d (%s)", i, r.action)
		assert.Equal(t, want.Message, remote.Message)
	}

	recs, rep := d.exportAudit(t)
	assert.Empty(t, rep.Unanswered)
	byTrace := verdictsByTrace(recs)
	assert.Len(t, byTrace, len(requests))
	for trace, n := range byTrace {
		assert.Equal(t, 1, n, "verdicts of %s", trace)
	}
}

// TestDispatchDigestOnly: the client presents results as its mode says,
// as a pipeline of this process would.
func TestDispatchDigestOnly(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	d.startWorker(t, WorkerOptions{})
	cl := d.client(t, ClientOptions{Results: pipeline.ResultsDigestOnly})
	res, err := cl.Execute(context.Background(), pipeline.ActionRequest{Action: "text.upper", Payload: json.RawMessage(`{"text":"x"}`)})
	require.NoError(t, err)
	assert.Equal(t, pipeline.StatusSuccess, res.Status)
	assert.Nil(t, res.Output)
	require.NotNil(t, res.OutputDigest)
}

// TestRetriedPublishIsDropped: a request published twice with its id (a
// retry after a lost acknowledgement) is executed and audited once.
func TestRetriedPublishIsDropped(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	c := d.conn(t, Layout{})
	req := pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[2,2]}`),
		TraceID: pipeline.NewTraceID(), TsUTC: "2026-11-25T12:00:00Z"}
	replies, err := c.NC.SubscribeSync("test.replies")
	require.NoError(t, err)
	for i := range 2 {
		m := nats.NewMsg(c.Names.ActionSubject(req.Action))
		m.Data = encodeRequest(req)
		m.Header.Set(jetstream.MsgIDHeader, "request-1")
		m.Header.Set(HeaderReply, "test.replies")
		ack, err := c.JS.PublishMsg(context.Background(), m)
		require.NoError(t, err)
		assert.Equal(t, i == 1, ack.Duplicate, "publish %d", i+1)
	}
	d.startWorker(t, WorkerOptions{})
	m, err := replies.NextMsg(10 * time.Second)
	require.NoError(t, err)
	require.NoError(t, m.Respond(nil), "received, as a Client confirms")
	res, err := decodeReply(m.Data)
	require.NoError(t, err)
	assert.Equal(t, `{"sum":4}`, string(res.Output))
	_, err = replies.NextMsg(500 * time.Millisecond)
	assert.ErrorIs(t, err, nats.ErrTimeout, "one execution, one answer")
	recs, _ := d.exportAudit(t)
	assert.Len(t, recs, 2, "one attempt and one verdict")
}

// TestExpiredWhileQueued: a request whose deadline passed while it waited
// for a worker is refused unrun: BLOCKED EXECUTOR_TIMEOUT, a verdict and no
// attempt.
func TestExpiredWhileQueued(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	cl := d.client(t, ClientOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := cl.Execute(ctx, pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1]}`)})
	require.ErrorIs(t, err, context.DeadlineExceeded, "no worker yet")
	assert.Equal(t, pipeline.StatusBlocked, res.Status)
	assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorTimeout}, res.ReasonCodes)

	d.startWorker(t, WorkerOptions{})
	require.Eventually(t, func() bool {
		recs, _ := d.exportAudit(t)
		return len(recs) == 1
	}, 10*time.Second, 50*time.Millisecond)
	recs, _ := d.exportAudit(t)
	assert.Equal(t, audit.EventActionAudit, recs[0].EventType, "refused unrun: no attempt")
	assert.Equal(t, "BLOCKED", recs[0].Status)
	assert.Equal(t, []string{"EXECUTOR_TIMEOUT"}, recs[0].ReasonCodes)
	assert.Equal(t, res.TraceID, recs[0].TraceID)
	assert.Nil(t, recs[0].AttemptHash)
}

// TestBusyWhenQueueFull: a full actions stream refuses more with ErrBusy.
func TestBusyWhenQueueFull(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true, MaxQueued: 2})
	cl := d.client(t, ClientOptions{})
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := cl.Execute(ctx, pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1]}`)})
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "queued, no worker")
	}
	_, err := cl.Execute(context.Background(), pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1]}`)})
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorIs(t, err, pipeline.ErrBusy)
}

// TestWorkersShareOneChain: two workers executing concurrently append to
// one chain that verifies, one attempt and one verdict per request.
func TestWorkersShareOneChain(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	d.startWorker(t, WorkerOptions{Concurrency: 4})
	d.startWorker(t, WorkerOptions{Concurrency: 4})
	cl := d.client(t, ClientOptions{})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			res, err := cl.Execute(context.Background(), pipeline.ActionRequest{Action: "math.sum",
				Payload: json.RawMessage(`{"numbers":[` + strings.Repeat("1,", i) + `1]}`)})
			if err == nil && res.Status != pipeline.StatusSuccess {
				err = errors.New(res.Message)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs, rep := d.exportAudit(t)
	assert.Len(t, recs, 2*n)
	assert.Equal(t, n, rep.Attempts)
	assert.Empty(t, rep.Unanswered)
	for trace, k := range verdictsByTrace(recs) {
		assert.Equal(t, 1, k, trace)
	}
}
