package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// followed runs FollowAudit from have in a goroutine until the test ends,
// and returns a channel of what it copied, a snapshot at each call of
// written (taken in FollowAudit's goroutine, so the test reads no buffer
// it writes), and a function that stops it and returns its error.
func followed(ctx context.Context, t *testing.T, c *Conn, have uint64) (<-chan []byte, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	copies := make(chan []byte, 1000)
	done := make(chan error, 1)
	var buf bytes.Buffer
	var last uint64 = have
	go func() {
		done <- FollowAudit(ctx, c, have, &buf, func(n uint64) error {
			if n <= last {
				return fmt.Errorf("written(%d) after written(%d): the count must grow", n, last)
			}
			last = n
			copies <- bytes.Clone(buf.Bytes())
			return nil
		})
	}()
	stop := sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() { _ = stop() })
	return copies, stop
}

// copiedUpTo waits for a copy holding n lines, failing when the bound
// passes first.
func copiedUpTo(t *testing.T, copies <-chan []byte, n int) []byte {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case b := <-copies:
			if bytes.Count(b, []byte("\n")) >= n {
				return b
			}
		case <-timeout:
			t.Fatalf("FollowAudit did not copy %d records within 60 s", n)
		}
	}
}

// TestFollowAudit: FollowAudit copies the records stored after it started,
// the few read one by one and the many through a consumer, as the same
// bytes ExportAudit writes; started again from a prefix it copies the
// rest, nothing twice. CheckAuditCopy accepts a prefix and refuses a copy
// that is not one, naming the record.
func TestFollowAudit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, sink := openSink(ctx, t, AuditOptions{})
	t.Cleanup(func() { sink.Close() })
	appendVerdicts := func(from, n int) {
		for i := range n {
			_, err := sink.Append(ctx, verdict(fmt.Sprintf("trace-%d", from+i)))
			require.NoError(t, err)
		}
	}
	appendVerdicts(0, 2)

	copies, stop := followed(ctx, t, c, 0)
	copiedUpTo(t, copies, 2)
	appendVerdicts(2, 1)
	copiedUpTo(t, copies, 3)
	appendVerdicts(3, 3*fewRecords)
	got := copiedUpTo(t, copies, 3+3*fewRecords)
	require.NoError(t, stop(), "FollowAudit ends without an error when its context does")

	var export bytes.Buffer
	n, err := ExportAudit(ctx, c, &export)
	require.NoError(t, err)
	require.EqualValues(t, 3+3*fewRecords, n)
	assert.Equal(t, export.String(), string(got), "the copy is the chain as ExportAudit writes it")
	rep, err := audit.Verify(bytes.NewReader(got))
	require.NoError(t, err)
	assert.EqualValues(t, n, rep.Records)

	// From a prefix of 10 records: the 11th on.
	lines := bytes.SplitAfter(export.Bytes(), []byte("\n"))
	require.NoError(t, CheckAuditCopy(ctx, c, 10, lines[9]))
	copies, stop = followed(ctx, t, c, 10)
	rest := copiedUpTo(t, copies, int(n)-10)
	require.NoError(t, stop())
	assert.Equal(t, string(bytes.Join(lines[10:], nil)), string(rest))

	require.NoError(t, CheckAuditCopy(ctx, c, 0, nil), "an empty copy is a prefix of any chain")
	err = CheckAuditCopy(ctx, c, 10, lines[8])
	require.Error(t, err)
	assert.Equal(t, "audit stream WASMGATE_AUDIT: record 10 differs from the copy's last line: the copy is not of this deployment's chain (another deployment or --nats-prefix, or a chain laid out again)", err.Error())
	err = CheckAuditCopy(ctx, c, n+1, lines[8])
	require.Error(t, err)
	assert.Equal(t, fmt.Sprintf("audit stream WASMGATE_AUDIT holds %d records, fewer than the %d of the copy: the copy is not of this deployment's chain (another deployment or --nats-prefix, or a chain laid out again)", n, n+1), err.Error())

	// A copy longer than the chain is refused by FollowAudit too.
	err = FollowAudit(ctx, c, n+1, &bytes.Buffer{}, func(uint64) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf("audit stream WASMGATE_AUDIT holds %d records, fewer than the %d copied", n, n+1))
}

// TestFollowAuditAcrossARestart: the server goes away and comes back on
// the same store while FollowAudit waits for records; the records stored
// after it came back are copied, each once.
func TestFollowAuditAcrossARestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	start := func() *server.Server {
		s, err := server.NewServer(&opts)
		require.NoError(t, err)
		go s.Start()
		require.True(t, s.ReadyForConnections(60*time.Second), "nats server ready within 60 s")
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		return s
	}
	s := start()
	opts.Port = s.Addr().(*net.TCPAddr).Port // the same address once restarted
	c, err := Connect(Options{URL: s.ClientURL(), Name: t.Name()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, c.Setup(ctx, Layout{}))
	appendVerdicts := func(from, n int) {
		sink, err := OpenAuditSink(ctx, c, AuditOptions{})
		require.NoError(t, err)
		defer sink.Close()
		for i := range n {
			_, err := sink.Append(ctx, verdict(fmt.Sprintf("trace-%d", from+i)))
			require.NoError(t, err)
		}
	}
	appendVerdicts(0, 2)
	copies, stop := followed(ctx, t, c, 0)
	copiedUpTo(t, copies, 2)

	s.Shutdown()
	s.WaitForShutdown()
	start()
	appendVerdicts(2, 3)
	got := copiedUpTo(t, copies, 5)
	require.NoError(t, stop())

	var export bytes.Buffer
	_, err = ExportAudit(ctx, c, &export)
	require.NoError(t, err)
	assert.Equal(t, export.String(), string(got))
}
