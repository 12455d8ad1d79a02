package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ExportAudit writes the deployment's audit chain to w as JSON Lines, the
// bytes a FileSink writes for the same records (audit.Verify checks them),
// and returns how many records it wrote: every record stored when it
// started.
func ExportAudit(ctx context.Context, c *Conn, w io.Writer) (uint64, error) {
	last, err := auditLastSeq(ctx, c)
	if err != nil {
		return 0, err
	}
	var n uint64
	if last == 0 {
		return 0, nil
	}
	err = readRecords(ctx, c, 1, last, func(_ uint64, line []byte, _ nats.Header) error {
		if _, err := w.Write(line); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// auditLastSeq is the seq of the last record stored in the audit stream (0
// for none). It fails when the stream does not start at record 1: a chain
// whose first records were removed cannot be checked, nor copied whole.
func auditLastSeq(ctx context.Context, c *Conn) (uint64, error) {
	var info *jetstream.StreamInfo
	err := retryCall(ctx, func(ctx context.Context) error {
		st, err := c.JS.Stream(ctx, c.Names.AuditStream())
		if err == nil {
			info, err = st.Info(ctx)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
	}
	last := info.State.LastSeq
	if info.State.FirstSeq > 1 && last > 0 {
		return 0, fmt.Errorf("audit stream %s starts at message %d: records 1 to %d were removed, so the chain cannot be checked from its start", c.Names.AuditStream(), info.State.FirstSeq, info.State.FirstSeq-1)
	}
	return last, nil
}

// unavailableFor is how long a request to the JetStream API is retried while
// nothing answers it: a leader election takes seconds.
const unavailableFor = 15 * time.Second

// retryUnavailable calls fn until it returns something else than "no
// responders" or a timeout, for at most unavailableFor.
func retryUnavailable(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(unavailableFor)
	for {
		err := fn()
		if err == nil || !unavailable(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unavailable reports an error that says JetStream did not answer (yet).
func unavailable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.Code == 503 {
		return true
	}
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// callTimeout bounds one request to the JetStream API inside retryCall: a
// request sent as the connection moves to another server may never be
// answered.
const callTimeout = 5 * time.Second

// retryCall is retryUnavailable for one API request, each attempt bounded
// by callTimeout.
func retryCall(ctx context.Context, fn func(ctx context.Context) error) error {
	return retryUnavailable(ctx, func() error {
		actx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return fn(actx)
	})
}
