package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
)

// TestRedeliveredAfterWorkerDied: a worker that stored the verdict but died
// before indexing it, answering and acknowledging leaves the request to be
// delivered again after the ack wait; the next worker finds the verdict on
// the chain after the dead worker's claim, runs the same message again only
// to recover its output (its records resolve to the stored ones), answers
// the requester with the stored verdict and that output, and the chain
// still holds one attempt and one verdict.
func TestRedeliveredAfterWorkerDied(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	// The worker that will die: it joins the consumer but never runs.
	dying, _ := newWorker(t, d.conn(t, Layout{}), WorkerOptions{AckWait: time.Second}, AuditOptions{})

	cl := d.client(t, ClientOptions{})
	type answer struct {
		res pipeline.ActionResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cl.Execute(ctx, pipeline.ActionRequest{Action: "math.sort", Payload: json.RawMessage(`{"numbers":[3,1,2]}`)})
		answered <- answer{res, err}
	}()

	batch, err := dying.cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	require.NoError(t, err)
	var m jetstream.Msg
	for m = range batch.Messages() {
	}
	require.NotNil(t, m, "the dying worker took the request")
	// It claims the request and executes it, as a worker does ...
	taken, run := dying.take(m)
	require.True(t, run)
	first, err := dying.execute(taken)
	require.NoError(t, err)
	require.Equal(t, pipeline.StatusSuccess, first.Status)
	// ... and dies here: no index, no answer, no ack.

	d.startWorker(t, WorkerOptions{AckWait: time.Second})
	var a answer
	select {
	case a = <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("no answer after the request was delivered again")
	}
	require.NoError(t, a.err)
	assert.Equal(t, `{"count":3,"max":3,"min":1,"sorted":[1,2,3]}`, string(a.res.Output))
	assert.Equal(t, first.OutputDigest, a.res.OutputDigest)
	assert.Equal(t, first.FuelUsed, a.res.FuelUsed)

	recs, rep := d.exportAudit(t)
	require.Len(t, recs, 2, "one attempt and one verdict, though it ran twice")
	assert.Empty(t, rep.Unanswered)
	assert.Equal(t, first.TraceID, recs[1].TraceID)
}

// verdictLost stores attempts and loses verdicts: a worker that died while
// the executor ran.
type verdictLost struct{ audit.Sink }

func (v verdictLost) Append(ctx context.Context, r audit.Record) (audit.Record, error) {
	if r.EventType == audit.EventActionAttempt {
		return v.Sink.Append(ctx, r)
	}
	return audit.Record{}, errors.New("the worker died")
}

// TestRedeliveredAfterAttemptOnly: a worker that stored the attempt and died
// while the executor ran leaves an attempt the next worker's verdict
// answers: the re-run gets the stored attempt back rather than a second one.
func TestRedeliveredAfterAttemptOnly(t *testing.T) {
	d := newDeployment(t, runServer(t), Layout{Memory: true})
	dying, _ := newWorker(t, d.conn(t, Layout{}), WorkerOptions{AckWait: time.Second}, AuditOptions{})

	cl := d.client(t, ClientOptions{})
	answered := make(chan pipeline.ActionResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, _ := cl.Execute(ctx, pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[4,5]}`)})
		answered <- res
	}()
	batch, err := dying.cons.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
	require.NoError(t, err)
	var m jetstream.Msg
	for m = range batch.Messages() {
	}
	require.NotNil(t, m)
	req, _, err := decodeRequest(&nats.Msg{Data: m.Data(), Header: m.Headers()})
	require.NoError(t, err)
	// The dying worker's run, on the registry it runs, through its sink.
	reg, _, err := LoadPublished(context.Background(), d.conn(t, Layout{}), registryEngine(t), "")
	require.NoError(t, err)
	lost := pipeline.New(reg, verdictLost{dying.Sink()})
	res, err := lost.Execute(WithRequestID(context.Background(), m.Headers().Get(jetstream.MsgIDHeader)), req)
	require.NoError(t, err)
	require.Contains(t, res.ReasonCodes, pipeline.AuditLogFailed)
	_, rep := d.exportAudit(t)
	require.Len(t, rep.Unanswered, 1, "the dying worker's attempt")

	d.startWorker(t, WorkerOptions{AckWait: time.Second})
	select {
	case res = <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("no answer after the request was delivered again")
	}
	assert.Equal(t, `{"sum":9}`, string(res.Output))
	recs, rep := d.exportAudit(t)
	require.Len(t, recs, 2, "the one attempt, and the verdict answering it")
	assert.Empty(t, rep.Unanswered)
	require.NotNil(t, recs[1].AttemptHash)
	assert.Equal(t, recs[0].Hash, *recs[1].AttemptHash)
}
