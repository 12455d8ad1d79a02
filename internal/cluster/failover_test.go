package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/pipeline"
)

// TestLeaderFailover: the streams are replicated on three servers; the
// server leading the audit stream and the actions stream goes away while
// requests flow. Every request still gets its one verdict, and the chain,
// read from the servers left, verifies.
func TestLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("a leader election takes seconds")
	}
	servers, urls := runCluster(t)
	d := newDeployment(t, urls, Layout{Replicas: 3})
	// Every replica caught up: a leader lost while the others still
	// copy a stream just made is not what this test is about.
	names := d.conn(t, Layout{}).Names
	for _, stream := range []string{names.ActionsStream(), names.AuditStream(), "KV_" + names.RegistryBucket(), "KV_" + names.RequestsBucket(), "OBJ_" + names.ModulesBucket()} {
		require.Eventually(t, func() bool {
			for _, s := range servers {
				if !s.JetStreamIsStreamCurrent("$G", stream) {
					return false
				}
			}
			return true
		}, 30*time.Second, 50*time.Millisecond, "stream %s: replicas not current", stream)
	}
	var logs lockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker logs:\n%s", logs.String())
		}
	})
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	d.startWorker(t, WorkerOptions{Concurrency: 4, AckWait: 2 * time.Second, Logger: logger.With("worker", 1)})
	d.startWorker(t, WorkerOptions{Concurrency: 4, AckWait: 2 * time.Second, Logger: logger.With("worker", 2)})
	cl := d.client(t, ClientOptions{})

	const n = 300
	// Every request is answered within seconds of the election; a
	// deployment that stops answering fails the test in minutes, with
	// the workers' logs, not at the package's timeout.
	all, cancelAll := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelAll()
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	jobs := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				ctx, cancel := context.WithTimeout(all, 90*time.Second)
				res, err := cl.Execute(ctx, pipeline.ActionRequest{Action: "math.sum",
					Payload: json.RawMessage(fmt.Sprintf(`{"numbers":[%d,1]}`, i))})
				cancel()
				if err == nil && string(res.Output) != fmt.Sprintf(`{"sum":%d}`, i+1) {
					err = fmt.Errorf("request %d: %s %v %s", i, res.Status, res.ReasonCodes, res.Message)
				}
				errs <- err
				done.Add(1)
			}
		})
	}
	killed := false
	for i := range n {
		jobs <- i
		if i == n/3 && !killed {
			leader := auditLeader(t, d, servers)
			leader.Shutdown()
			killed = true
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs, rep := d.exportAudit(t)
	assert.Empty(t, rep.Unanswered)
	byTrace := verdictsByTrace(recs)
	assert.Len(t, byTrace, n)
	for trace, k := range byTrace {
		assert.Equal(t, 1, k, trace)
	}
}

// auditLeader is the server leading the audit stream.
func auditLeader(t *testing.T, d deployment, servers []*server.Server) *server.Server {
	t.Helper()
	c := d.conn(t, Layout{})
	st, err := c.JS.Stream(context.Background(), c.Names.AuditStream())
	require.NoError(t, err)
	info, err := st.Info(context.Background())
	require.NoError(t, err)
	require.NotNil(t, info.Cluster)
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			return s
		}
	}
	t.Fatalf("no server named %q", info.Cluster.Leader)
	return nil
}

// lockedBuffer is a strings.Builder that workers may write from several
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
