package cluster

import (
	"context"
	"fmt"
	"io"
)

// ExportAudit writes the deployment's audit chain to w as JSON Lines, the
// bytes a FileSink writes for the same records (audit.Verify checks them),
// and returns how many records it wrote: every record stored when it
// started.
func ExportAudit(ctx context.Context, c *Conn, w io.Writer) (uint64, error) {
	st, err := c.JS.Stream(ctx, c.Names.AuditStream())
	if err != nil {
		return 0, fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("audit stream %s: %w", c.Names.AuditStream(), err)
	}
	last := info.State.LastSeq
	if info.State.FirstSeq > 1 && last > 0 {
		return 0, fmt.Errorf("audit stream %s starts at message %d: records 1 to %d were removed, so the chain cannot be checked from its start", c.Names.AuditStream(), info.State.FirstSeq, info.State.FirstSeq-1)
	}
	var n uint64
	if last == 0 {
		return 0, nil
	}
	err = readRecords(ctx, c, 1, last, func(_ uint64, line []byte, _ string) error {
		if _, err := w.Write(line); err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}
