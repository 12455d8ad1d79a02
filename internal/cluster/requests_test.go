package cluster

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
)

// The tests in this file reuse a request id after the deployment's
// deduplication window (a short one) has passed, with the workers'
// memory of message ids as short as it goes: the request index alone
// stands between the reused id and a second execution.

// reuseWindow is the deduplication window of these tests' deployments.
const reuseWindow = time.Second

// forgetful is what these tests' workers remember of message ids.
var forgetful = AuditOptions{KeyWindow: time.Nanosecond}

// sumRequest is a math.sum request of one trace and time, its payload
// numbers.
func sumRequest(trace string, numbers string) pipeline.ActionRequest {
	return pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":` + numbers + `}`),
		TraceID: trace, TsUTC: "2026-11-27T12:00:00Z"}
}

// publishRequest publishes req as a front does, with message id id and
// reply subject reply, and returns whether JetStream dropped it as a
// duplicate.
func publishRequest(t *testing.T, c *Conn, id string, req pipeline.ActionRequest, reply string) bool {
	t.Helper()
	m := nats.NewMsg(c.Names.ActionSubject(req.Action))
	m.Data = encodeRequest(req)
	m.Header.Set(jetstream.MsgIDHeader, id)
	m.Header.Set(HeaderReply, reply)
	ack, err := c.JS.PublishMsg(context.Background(), m)
	require.NoError(t, err)
	return ack.Duplicate
}

// publishOnceForgotten publishes req with id as soon as JetStream no
// longer drops it as a duplicate: once the id's first message has left the
// deduplication window. (Until then each publish is dropped: nothing else
// happens.)
func publishOnceForgotten(t *testing.T, c *Conn, id string, req pipeline.ActionRequest, reply string) {
	t.Helper()
	deadline := time.Now().Add(30 * reuseWindow)
	for publishRequest(t, c, id, req, reply) {
		require.True(t, time.Now().Before(deadline), "JetStream still drops message id %s as a duplicate after %s", id, 30*reuseWindow)
		time.Sleep(100 * time.Millisecond)
	}
}

// receive returns the next result message on sub, confirmed as a Client
// confirms it.
func receive(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(30 * time.Second)
	require.NoError(t, err, "a result on %s", sub.Subject)
	require.NoError(t, m.Respond(nil))
	return m
}

func subscribe(t *testing.T, c *Conn, subject string) *nats.Subscription {
	t.Helper()
	sub, err := c.NC.SubscribeSync(subject)
	require.NoError(t, err)
	return sub
}

// requireReusedAnswer checks the result message m answering a reuse of an
// id judged first: the first result, field for field (nothing ran), and
// the signal that the request judged differs in its payload. (It goes on
// after a failure: the chain is checked next.)
func requireReusedAnswer(t *testing.T, first pipeline.ActionResult, m *nats.Msg) {
	t.Helper()
	res, err := decodeReply(m.Data)
	assert.Equal(t, mustJSON(t, first), mustJSON(t, res), "the first result, field for field")
	assert.Equal(t, first.Message, res.Message)
	assert.ErrorIs(t, err, ErrRequestIDReused)
	assert.EqualError(t, err, "cluster: the request id names an earlier, different request: it differs in payload; "+
		"the result is its verdict (audit record 2), and this request was not executed")
	var w struct {
		Reused *struct {
			VerdictSeq uint64   `json:"verdict_seq"`
			Differs    []string `json:"differs"`
		} `json:"reused"`
	}
	require.NoError(t, json.Unmarshal(m.Data, &w))
	if assert.NotNil(t, w.Reused, "the answer says it is the verdict given before: %s", m.Data) {
		assert.EqualValues(t, 2, w.Reused.VerdictSeq)
		assert.Equal(t, []string{"payload"}, w.Reused.Differs)
	}
}

// requireOnePair checks that the chain holds one attempt and one verdict,
// of trace.
func requireOnePair(t *testing.T, d deployment, trace string) {
	t.Helper()
	recs, rep := d.exportAudit(t)
	require.Len(t, recs, 2, "one attempt and one verdict: the reused id ran once")
	assert.Empty(t, rep.Unanswered)
	assert.Equal(t, audit.EventActionAttempt, recs[0].EventType)
	assert.Equal(t, audit.EventActionAudit, recs[1].EventType)
	assert.Equal(t, trace, recs[1].TraceID)
}

// TestReusedIDAfterWindow: a request id reused after the deduplication
// window, with another payload, is answered with the first request's
// verdict (the same ActionResult, output included), marked as reused with
// the payload named as differing, and not executed: the chain holds one
// attempt and one verdict for it.
func TestReusedIDAfterWindow(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true, DedupWindow: reuseWindow})
	d.startAuditedWorker(t, WorkerOptions{}, forgetful)
	c := d.conn(t, Layout{})
	replies := subscribe(t, c, "test.replies.>")
	trace := pipeline.NewTraceID()

	require.False(t, publishRequest(t, c, "reused-1", sumRequest(trace, `[1,2]`), "test.replies.1"))
	m := receive(t, replies)
	first, err := decodeReply(m.Data)
	require.NoError(t, err)
	require.Equal(t, pipeline.StatusSuccess, first.Status)
	require.Equal(t, `{"sum":3}`, string(first.Output))

	publishOnceForgotten(t, c, "reused-1", sumRequest(trace, `[40,2]`), "test.replies.2")
	m = receive(t, replies)
	assert.Equal(t, "test.replies.2", m.Subject)
	requireReusedAnswer(t, first, m)
	requireOnePair(t, d, trace)
}

// TestReusedIDAfterWorkerRestart: the same, the reuse taken by a new worker
// (an empty memory) after the first one stopped.
func TestReusedIDAfterWorkerRestart(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true, DedupWindow: reuseWindow})
	_, stop := d.startAuditedWorker(t, WorkerOptions{}, forgetful)
	c := d.conn(t, Layout{})
	replies := subscribe(t, c, "test.replies.>")
	trace := pipeline.NewTraceID()

	require.False(t, publishRequest(t, c, "reused-2", sumRequest(trace, `[1,2]`), "test.replies.1"))
	first, err := decodeReply(receive(t, replies).Data)
	require.NoError(t, err)
	require.Equal(t, `{"sum":3}`, string(first.Output))
	stop()

	publishOnceForgotten(t, c, "reused-2", sumRequest(trace, `[40,2]`), "test.replies.2")
	d.startAuditedWorker(t, WorkerOptions{}, forgetful)
	requireReusedAnswer(t, first, receive(t, replies))
	requireOnePair(t, d, trace)
}

// TestReusedIDQueuedTogether: two messages of one id queued at once (the
// second published once the first left the window, before any worker ran)
// and taken by workers that run several requests at once: one is executed,
// the other answered with its verdict, whichever is taken first.
func TestReusedIDQueuedTogether(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true, DedupWindow: reuseWindow})
	c := d.conn(t, Layout{})
	trace := pipeline.NewTraceID()
	first, second := subscribe(t, c, "test.replies.1"), subscribe(t, c, "test.replies.2")
	require.False(t, publishRequest(t, c, "reused-3", sumRequest(trace, `[1,2]`), "test.replies.1"))
	publishOnceForgotten(t, c, "reused-3", sumRequest(trace, `[40,2]`), "test.replies.2")

	o := WorkerOptions{Concurrency: 4}
	d.startAuditedWorker(t, o, forgetful)
	d.startAuditedWorker(t, o, forgetful)
	answers := []*nats.Msg{receive(t, first), receive(t, second)}
	ran, reused := answers[0], answers[1]
	if _, err := decodeReply(ran.Data); err != nil {
		ran, reused = reused, ran
	}
	res, err := decodeReply(ran.Data)
	require.NoError(t, err, "one of the two ran")
	want := map[string]string{"test.replies.1": `{"sum":3}`, "test.replies.2": `{"sum":42}`}[ran.Subject]
	require.Equal(t, want, string(res.Output), "the one that ran has its own payload's output")
	requireReusedAnswer(t, res, reused)
	requireOnePair(t, d, trace)
}

// TestReusedIDVerdictNotIndexed: a worker that stored a verdict and stopped
// before indexing it, its message acknowledged (an index that stayed
// unavailable), leaves the verdict on the chain only: a reuse of the id is
// answered from the chain's record (what the chain keeps: no output, a
// message saying so) and not executed.
func TestReusedIDVerdictNotIndexed(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true, DedupWindow: reuseWindow})
	c := d.conn(t, Layout{})
	replies := subscribe(t, c, "test.replies.>")
	trace := pipeline.NewTraceID()
	require.False(t, publishRequest(t, c, "reused-4", sumRequest(trace, `[1,2]`), "test.replies.1"))

	stopping, _ := newWorker(t, d.conn(t, Layout{}), WorkerOptions{}, forgetful)
	batch, err := stopping.cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	require.NoError(t, err)
	var m jetstream.Msg
	for m = range batch.Messages() {
	}
	require.NotNil(t, m)
	taken, run := stopping.take(m)
	require.True(t, run)
	ran, err := stopping.execute(taken)
	require.NoError(t, err)
	require.Equal(t, `{"sum":3}`, string(ran.Output))
	require.NoError(t, m.DoubleAck(context.Background()))

	publishOnceForgotten(t, c, "reused-4", sumRequest(trace, `[40,2]`), "test.replies.2")
	d.startAuditedWorker(t, WorkerOptions{}, forgetful)
	got := receive(t, replies)
	assert.Equal(t, "test.replies.2", got.Subject)
	res, err := decodeReply(got.Data)
	require.ErrorIs(t, err, ErrRequestIDReused)
	assert.Nil(t, res.Output, "the output was never stored")
	assert.Equal(t, "the verdict of audit record 2, given before to this request id; its output and message are not kept "+
		"(it was judged by a worker that stopped before storing its answer, or before the request index existed): the digests name them", res.Message)
	res.Message, ran.Output = "", nil
	assert.Equal(t, mustJSON(t, ran), mustJSON(t, res), "the stored verdict, field for field")
	requireOnePair(t, d, trace)
}

// TestReusedIDJudgedBeforeTheIndex: a verdict stored without the request
// index (by a wasmgate before it) is indexed when a worker starts, so a
// reuse of its id is answered from its record and not executed.
func TestReusedIDJudgedBeforeTheIndex(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true, DedupWindow: reuseWindow})
	c := d.conn(t, Layout{})
	trace := pipeline.NewTraceID()
	reg, _, err := LoadPublished(context.Background(), c, registryEngine(t), "")
	require.NoError(t, err)
	sink, err := OpenAuditSink(context.Background(), c, AuditOptions{})
	require.NoError(t, err)
	old, err := pipeline.New(reg, sink).Execute(WithRequestID(context.Background(), "reused-5"), sumRequest(trace, `[1,2]`))
	require.NoError(t, err)
	require.NoError(t, sink.Close())
	require.Equal(t, pipeline.StatusSuccess, old.Status)

	replies := subscribe(t, c, "test.replies.>")
	publishOnceForgotten(t, c, "reused-5", sumRequest(trace, `[40,2]`), "test.replies.2")
	d.startAuditedWorker(t, WorkerOptions{}, forgetful)
	res, err := decodeReply(receive(t, replies).Data)
	require.ErrorIs(t, err, ErrRequestIDReused)
	assert.Equal(t, pipeline.StatusSuccess, res.Status)
	assert.Equal(t, old.OutputDigest, res.OutputDigest)
	assert.Equal(t, old.InputDigest, res.InputDigest)
	assert.Nil(t, res.Output)
	requireOnePair(t, d, trace)
}

// TestReusedIDThroughClient: a Client given an id that was used seconds ago
// (JetStream drops its publish as a duplicate) answers with the id's
// verdict: for the same request, as a retry, without error; for another
// payload, with ErrRequestIDReused. Nothing runs again.
func TestReusedIDThroughClient(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	d.startWorker(t, WorkerOptions{})
	cl := d.client(t, ClientOptions{})
	trace := pipeline.NewTraceID()
	execute := func(numbers string) (pipeline.ActionResult, error) {
		ctx, cancel := context.WithTimeout(WithRequestID(context.Background(), "reused-6"), 30*time.Second)
		defer cancel()
		return cl.Execute(ctx, sumRequest(trace, numbers))
	}
	first, err := execute(`[1,2]`)
	require.NoError(t, err)
	require.Equal(t, `{"sum":3}`, string(first.Output))

	again, err := execute(`[1,2]`)
	require.NoError(t, err, "the same request: a retry")
	assert.Equal(t, mustJSON(t, first), mustJSON(t, again))

	other, err := execute(`[40,2]`)
	require.ErrorIs(t, err, ErrRequestIDReused)
	assert.EqualError(t, err, "cluster: the request id names an earlier, different request: it differs in payload; "+
		"the result is its verdict (audit record 2), and this request was not executed")
	assert.Equal(t, mustJSON(t, first), mustJSON(t, other))
	requireOnePair(t, d, trace)
}

// TestRequestWithoutID: a request message without a message id (which no
// front sends) is refused unrun: an id names a request in the chain and the
// index, and there is none to name it by.
func TestRequestWithoutID(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	d.startWorker(t, WorkerOptions{})
	c := d.conn(t, Layout{})
	replies := subscribe(t, c, "test.replies")
	m := nats.NewMsg(c.Names.ActionSubject("math.sum"))
	m.Data = encodeRequest(sumRequest(pipeline.NewTraceID(), `[1]`))
	m.Header.Set(HeaderReply, "test.replies")
	_, err := c.JS.PublishMsg(context.Background(), m)
	require.NoError(t, err)
	res, err := decodeReply(receive(t, replies).Data)
	require.ErrorIs(t, err, pipeline.ErrInvalidRequest)
	assert.EqualError(t, err, "pipeline: invalid request: request message: no Nats-Msg-Id header: a request needs an id, "+
		"which names it in the audit chain and the request index (a Client gives each request one)")
	assert.Empty(t, res.Status)
	recs, _ := d.exportAudit(t)
	assert.Empty(t, recs, "nothing ran")
}

// TestRequestKey: a request id is its own key in the index when the index
// takes it as one, else '=' and its digest; no two ids share a key, and
// none is the index's mark.
func TestRequestKey(t *testing.T) {
	ids := []string{"request-1", "0c6d6e4e-2d4f-4bb4-9a1b-8c6f7e1d2a3b", "a.b", "a b", "=x", "chain.indexed", "", "é"}
	keys := map[string]string{}
	for _, id := range ids {
		k := requestKey(id)
		assert.Regexp(t, `^[-/_=.a-zA-Z0-9]+$`, k, "a KV key for %q", id)
		assert.NotEqual(t, indexMarkKey, k)
		if prev, ok := keys[k]; ok {
			t.Errorf("ids %q and %q share key %s", prev, id, k)
		}
		keys[k] = id
	}
	assert.Equal(t, "request-1", requestKey("request-1"))
	assert.Equal(t, "="+audit.Digest([]byte("a.b")), requestKey("a.b"))
}
