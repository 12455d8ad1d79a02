package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
)

// followPoll is how often FollowAudit asks the audit stream whether records
// were stored past those it copied. It polls the stream's info rather than
// holding an ordered consumer open, so that the records themselves are read
// by readRecords, the one reader that already survives a leader election
// and a server restart (a new consumer from where the last stopped, or the
// stream's leader record by record); a consumer held open would need that
// recovery a second time. A quarter of a second is a small fraction of the
// second a published log waits between checkpoints, and one stream-info
// request per interval is little load on the stream's leader.
const followPoll = 250 * time.Millisecond

// followBatch bounds the records FollowAudit copies between two calls of
// its written callback: a follower catching up on a long chain makes its
// copy durable as it goes, not only at the end.
const followBatch = 4096

// CheckAuditCopy checks that a copy of the deployment's audit chain holding
// records 1 to have, whose last line (record have, with or without its
// newline) is last, is a prefix of the chain in the audit stream: the
// stream holds at least have records, and record have is byte for byte
// the copy's last line. The copy's earlier records are tied to its last
// one by the hash chain (`wasmgate audit verify` checks the whole copy).
// An empty copy (have 0) is a prefix of any chain.
//
// # Errors
//
// One naming the stream and the record when the copy is not a prefix: the
// stream is shorter, or its record differs (another deployment's chain, or
// one laid out again since the copy was made).
func CheckAuditCopy(ctx context.Context, c *Conn, have uint64, last []byte) error {
	if have == 0 {
		return nil
	}
	stored, err := auditLastSeq(ctx, c)
	if err != nil {
		return err
	}
	if stored < have {
		return fmt.Errorf("audit stream %s holds %d records, fewer than the %d of the copy: the copy is not of this deployment's chain (another deployment or --nats-prefix, or a chain laid out again)", c.Names.AuditStream(), stored, have)
	}
	return readRecords(ctx, c, have, have, func(_ uint64, line []byte, _ nats.Header) error {
		if !bytes.Equal(bytes.TrimSuffix(line, []byte("\n")), bytes.TrimSuffix(last, []byte("\n"))) {
			return fmt.Errorf("audit stream %s: record %d differs from the copy's last line: the copy is not of this deployment's chain (another deployment or --nats-prefix, or a chain laid out again)", c.Names.AuditStream(), have)
		}
		return nil
	})
}

// FollowAudit copies the deployment's audit chain to w as it grows: records
// have+1, have+2, … in order, each as the line ExportAudit writes for it,
// as they are stored, until ctx ends, when it returns nil. After each
// batch of lines, and before it returns if it wrote any since, it calls
// written with the number of records w now holds (have plus those
// written): the caller makes them durable there (a file's fsync), and an
// error of written ends the copy and is returned.
//
// The caller copies from a prefix of the chain: have 0, or a copy
// CheckAuditCopy accepted. FollowAudit survives a leader election or a
// server restart as ExportAudit and the workers do, asking again while
// JetStream does not answer, for as long as a leader election takes.
//
// # Errors
//
// One naming the stream when it does not start at record 1 (records were
// removed), when it holds fewer records than have (it is not the chain the
// copy was made from), or when JetStream stays unavailable; an error of w
// (wrapped, naming the record) or of written (as it is).
func FollowAudit(ctx context.Context, c *Conn, have uint64, w io.Writer, written func(n uint64) error) error {
	n := have
	for {
		stored, err := auditLastSeq(ctx, c)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if stored < n {
			return fmt.Errorf("audit stream %s holds %d records, fewer than the %d copied: the stream was removed and laid out again, or its last records lost (one server without fsync, see docs/CLUSTER.md)", c.Names.AuditStream(), stored, n)
		}
		if stored == n {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(followPoll):
			}
			continue
		}
		to := min(stored, n+followBatch)
		from := n
		err = readRecords(ctx, c, n+1, to, func(seq uint64, line []byte, _ nats.Header) error {
			if _, err := w.Write(line); err != nil {
				return fmt.Errorf("copy record %d: %w", seq, err)
			}
			n = seq
			return nil
		})
		if n > from {
			if werr := written(n); werr != nil {
				return werr
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
