package cluster

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// TestAuditSinkDuplicateBeyondItsWindow: a request's verdict stored so long
// ago that the sink forgot its message id, while JetStream still knows it,
// is stored again as a duplicate: the sink answers the record stored then
// (the sequence the duplicate's ack names) and appends nothing.
func TestAuditSinkDuplicateBeyondItsWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A window of a nanosecond: a record's id is forgotten as soon as
	// another record is stored.
	_, sink := openSink(ctx, t, AuditOptions{KeyWindow: time.Nanosecond, RetryFor: 5 * time.Second})
	t.Cleanup(func() { sink.Close() })

	first, err := sink.Append(WithRequestID(ctx, "a"), verdict("trace-a"))
	require.NoError(t, err)
	_, err = sink.Append(WithRequestID(ctx, "b"), verdict("trace-b"))
	require.NoError(t, err)

	again, err := sink.Append(WithRequestID(ctx, "a"), verdict("trace-a"))
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.EqualValues(t, 1, again.Seq)
	assert.EqualValues(t, 2, sink.Seq(), "nothing appended")
}

// TestAuditReadWithoutConsumers: where no consumer can be made on the audit
// stream (here: the stream allows one, and has it; in a cluster: the meta
// leader places one on a server that is gone), the chain is still read,
// record by record, by an export and by a sink catching up.
func TestAuditReadWithoutConsumers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, sink := openSink(ctx, t, AuditOptions{})
	const n = 3 * fewRecords
	for i := range n {
		_, err := sink.Append(ctx, verdict(fmt.Sprintf("trace-%d", i)))
		require.NoError(t, err)
	}
	require.NoError(t, sink.Close())

	st, err := c.JS.Stream(ctx, c.Names.AuditStream())
	require.NoError(t, err)
	_, err = st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "occupier", AckPolicy: jetstream.AckNonePolicy})
	require.NoError(t, err)
	info, err := st.Info(ctx)
	require.NoError(t, err)
	cfg := info.Config
	cfg.MaxConsumers = 1
	_, err = c.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	_, err = c.JS.OrderedConsumer(ctx, c.Names.AuditStream(), jetstream.OrderedConsumerConfig{})
	require.ErrorIs(t, err, jetstream.ErrMaximumConsumersLimit, "no consumer can be made")

	var buf bytes.Buffer
	got, err := ExportAudit(ctx, c, &buf)
	require.NoError(t, err)
	assert.EqualValues(t, n, got)
	rep, err := audit.Verify(&buf)
	require.NoError(t, err)
	assert.EqualValues(t, n, rep.Records)

	again, err := OpenAuditSink(ctx, c, AuditOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { again.Close() })
	assert.EqualValues(t, n, again.Seq(), "a new sink follows the whole chain")
}

// openSink lays out a deployment on a server of its own and opens an audit
// sink on it.
func openSink(ctx context.Context, t *testing.T, o AuditOptions) (*Conn, *AuditSink) {
	t.Helper()
	c, err := Connect(Options{URL: runServer(t), Name: t.Name()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, c.Setup(ctx, Layout{Memory: true}))
	sink, err := OpenAuditSink(ctx, c, o)
	require.NoError(t, err)
	return c, sink
}

// verdict is a verdict record of a request that was refused unrun.
func verdict(trace string) audit.Record {
	return audit.Record{EventType: audit.EventActionAudit, Action: "math.sum", Status: "BLOCKED",
		ReasonCodes: []string{"EXECUTOR_TIMEOUT"}, TraceID: trace, TsUTC: "2026-11-26T00:00:00Z"}
}
