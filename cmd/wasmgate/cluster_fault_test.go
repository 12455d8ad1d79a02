package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
)

// TestClusterFaultTolerance is the fault test of the NATS scale-out: 1,000
// requests through two worker processes of the built binary, one killed
// with SIGKILL mid-run, then the JetStream leader of the 3-server cluster
// (of the workers' consumer, the actions stream and the audit stream) shut
// down. Every request gets exactly one result, the one a pipeline of this
// process gives; the audit chain holds exactly one verdict per request,
// every attempt answered, and verifies.
func TestClusterFaultTolerance(t *testing.T) {
	n, killWorkerAt, killLeaderAt := 1000, 150, 500
	if testing.Short() {
		n, killWorkerAt, killLeaderAt = 300, 50, 150
	}
	start := time.Now()
	servers, urls := startNATSCluster(t)
	config := faultRegistry(t)
	r := wasmgate(t, "", "publish", "--nats", urls, "--nats-replicas", "3", "--config", config)
	require.Equal(t, 0, r.code, "publish: %s", r.stderr)
	c, err := cluster.Connect(cluster.Options{URL: urls, Name: t.Name()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	// A worker reading the registry before every replica of its bucket is
	// current may find no server to answer (a worker does not retry
	// loading it: it exits, for its supervisor to start it again).
	awaitStreamsCurrent(t, servers, c.Names.ActionsStream(), c.Names.AuditStream(),
		"KV_"+c.Names.RegistryBucket(), "KV_"+c.Names.RequestsBucket(), "OBJ_"+c.Names.ModulesBucket())

	workers := []*faultWorker{startFaultWorker(t, urls, "worker-1"), startFaultWorker(t, urls, "worker-2")}
	for _, w := range workers {
		w.awaitReady(t)
	}
	leader := gatherLeadership(t, c, servers)
	t.Logf("%s: cluster, registry and workers ready; %s leads %s", time.Since(start).Round(time.Millisecond),
		leader.Name(), strings.Join(leadershipOf(leader, c), ", "))

	cl, err := cluster.NewClient(context.Background(), c, cluster.ClientOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })

	requests := faultRequests(n)
	results := make([]pipeline.ActionResult, n)
	errs := make([]error, n)
	answered := make([]atomic.Bool, n)
	var count atomic.Int64
	progress := make(chan struct{}, n)

	root, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	next := make(chan int)
	var senders sync.WaitGroup
	for range 16 {
		senders.Go(func() {
			for i := range next {
				ctx, cancel := context.WithTimeout(root, 2*time.Minute)
				results[i], errs[i] = cl.Execute(ctx, requests[i])
				cancel()
				answered[i].Store(true)
				count.Add(1)
				progress <- struct{}{}
			}
		})
	}
	go func() {
		defer close(next)
		for i := range n {
			select {
			case next <- i:
			case <-root.Done():
				return
			}
		}
	}()
	sent := make(chan struct{})
	go func() { senders.Wait(); close(sent) }()

	// Faults, as the answers come in; a hard bound on the whole run.
	var killedWorkerAt, killedLeaderAt time.Duration
	bound := time.NewTimer(120 * time.Second)
	defer bound.Stop()
	lastProgress := time.Now()
	for done := false; !done; {
		select {
		case <-progress:
			if gap := time.Since(lastProgress); gap > 2*time.Second {
				t.Logf("%s: no answer for %s before answer %d", time.Since(start).Round(time.Millisecond), gap.Round(time.Millisecond), count.Load())
			}
			lastProgress = time.Now()
			k := int(count.Load())
			if killedWorkerAt == 0 && k >= killWorkerAt {
				killedWorkerAt = time.Since(start)
				require.NoError(t, workers[0].cmd.Process.Kill())
				t.Logf("%s: %d answered, SIGKILLed %s", killedWorkerAt.Round(time.Millisecond), k, workers[0].name)
			}
			if killedLeaderAt == 0 && k >= killLeaderAt {
				killedLeaderAt = time.Since(start)
				leads := leadershipOf(leader, c)
				leader.Shutdown()
				t.Logf("%s: %d answered, shut down server %s (leader of %s)", killedLeaderAt.Round(time.Millisecond), k, leader.Name(), strings.Join(leads, ", "))
			}
		case <-sent:
			done = true
		case <-bound.C:
			cancelAll()
			var missing []string
			for i := range n {
				if !answered[i].Load() {
					missing = append(missing, requests[i].TraceID+" "+requests[i].Action)
				}
			}
			t.Logf("consumer: %s", consumerState(c))
			// Goroutine dumps of the workers still running.
			for _, w := range workers {
				_ = w.cmd.Process.Signal(syscall.SIGQUIT)
			}
			time.Sleep(time.Second)
			for _, w := range workers {
				t.Logf("--- %s:\n%s", w.name, w.log.String())
			}
			t.Fatalf("%d of %d requests answered within %s; unanswered (%d, first 20): %v",
				count.Load(), n, time.Since(start).Round(time.Second), len(missing), missing[:min(20, len(missing))])
		}
	}
	t.Logf("%s: all %d answered\n%s", time.Since(start).Round(time.Millisecond), n, faultDiagnostics(workers))
	require.NotZero(t, killedWorkerAt, "the worker was killed")
	require.NotZero(t, killedLeaderAt, "the leader was shut down")

	// Every request got the result a pipeline of this process gives it.
	reg, err := pipeline.LoadRegistry(context.Background(), config, enginetest.Engine(t, sandbox.EngineWazero), js.Kind())
	require.NoError(t, err)
	local := audit.NewMemorySink()
	pipe := pipeline.New(reg, local)
	failures := 0
	for i, req := range requests {
		want, err := pipe.Execute(context.Background(), req)
		require.NoError(t, err)
		got := results[i]
		if !assert.NoError(t, errs[i], "request %d (%s, trace id %s)", i, req.Action, req.TraceID) {
			failures++
		} else {
			got.DurationMs, want.DurationMs = 0, 0
			// The leaf indexes are of two logs: the cluster's is checked
			// against its chain below.
			got.AuditIndex, want.AuditIndex = nil, nil
			if !assert.Equal(t, faultJSON(t, want), faultJSON(t, got), "request %d (%s)", i, req.Action) ||
				!assert.Equal(t, want.Message, got.Message, "request %d (%s)", i, req.Action) {
				failures++
			}
		}
		if failures > 10 {
			t.Fatalf("more than 10 requests without the expected result\n%s", faultDiagnostics(workers))
		}
	}
	if failures > 0 {
		t.Logf("%s", faultDiagnostics(workers))
	}

	// Nothing left to run: every request acknowledged (those the killed
	// worker held were delivered again after --ack-wait).
	stream, err := c.JS.Stream(context.Background(), c.Names.ActionsStream())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		info, err := stream.Info(ctx)
		return err == nil && info.State.Msgs == 0
	}, 30*time.Second, 100*time.Millisecond, "the actions stream empties\n%s", faultDiagnostics(workers))

	// The surviving worker stops on SIGTERM once its executions are done.
	require.NoError(t, workers[1].cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-workers[1].exited:
		require.Equal(t, 0, workers[1].cmd.ProcessState.ExitCode(), "%s", workers[1].log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not stop within 30s of SIGTERM\n%s", workers[1].name, faultDiagnostics(workers))
	}

	// The chain: exported, it verifies, with one verdict per request.
	r = wasmgate(t, "", "audit", "export", "--nats", urls)
	require.Equal(t, 0, r.code, "audit export: %s", r.stderr)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	require.NoError(t, os.WriteFile(log, []byte(r.stdout), 0o600))
	v := wasmgate(t, "", "audit", "verify", log)
	require.Equal(t, 0, v.code, "audit verify: %s", v.stderr)
	assert.NotContains(t, v.stdout, "has no verdict", "every attempt is answered")

	recs := allRecords(t, log)
	verdicts := map[string][]audit.Record{}
	attempts := map[string]int{}
	for _, rec := range recs {
		switch rec.EventType {
		case audit.EventActionAudit:
			verdicts[rec.TraceID] = append(verdicts[rec.TraceID], rec)
		case audit.EventActionAttempt:
			attempts[rec.TraceID]++
		default:
			t.Errorf("record %d: event type %q", rec.Seq, rec.EventType)
		}
	}
	wantVerdicts := map[string]audit.Record{}
	wantAttempts := map[string]int{}
	for _, rec := range local.Records() {
		if rec.EventType == audit.EventActionAttempt {
			wantAttempts[rec.TraceID]++
		} else {
			wantVerdicts[rec.TraceID] = rec
		}
	}
	assert.Len(t, verdicts, n, "a verdict for every request and no other")
	assert.Equal(t, wantAttempts, attempts, "one attempt per request that ran, none for one refused unrun")
	for i, req := range requests {
		got := verdicts[req.TraceID]
		if !assert.Len(t, got, 1, "verdicts of request %d (%s, trace id %s)", i, req.Action, req.TraceID) {
			continue
		}
		want := wantVerdicts[req.TraceID]
		g := got[0]
		assert.Equal(t,
			[]any{want.Action, want.ExecutorID, want.ExecutorVersion, want.ModuleDigest, want.Status, want.ReasonCodes, want.InputDigest, want.OutputDigest, want.FuelUsed, want.TsUTC, want.AttemptHash == nil},
			[]any{g.Action, g.ExecutorID, g.ExecutorVersion, g.ModuleDigest, g.Status, g.ReasonCodes, g.InputDigest, g.OutputDigest, g.FuelUsed, g.TsUTC, g.AttemptHash == nil},
			"verdict of request %d (%s)", i, req.Action)
		if errs[i] == nil && assert.NotNil(t, results[i].AuditIndex, "request %d names its verdict's leaf", i) {
			assert.Equal(t, g.Seq-1, *results[i].AuditIndex, "request %d's leaf index is its verdict's in the chain", i)
		}
	}
	t.Logf("audit: %s", strings.TrimSpace(v.stdout))

	// And verified where it is kept, with a server of the cluster gone.
	v = wasmgate(t, "", "audit", "verify", "--nats", urls)
	require.Equal(t, 0, v.code, "audit verify --nats: %s", v.stderr)
	assert.NotContains(t, v.stdout, "has no verdict")
	t.Logf("%s: done (worker killed at %s, leader at %s)", time.Since(start).Round(time.Millisecond),
		killedWorkerAt.Round(time.Millisecond), killedLeaderAt.Round(time.Millisecond))
}

// faultRegistry writes the registry of the fault test: testdata/registry.json's
// actions, and test.loop, which ends BLOCKED FUEL_EXHAUSTED after a few ms of
// burning fuel (deterministically, and long enough for a worker to be killed
// in the middle of one).
func faultRegistry(t *testing.T) string {
	t.Helper()
	doc := map[string]any{
		"executors": map[string]any{
			"upper":     map[string]string{"wasm": mustAbs(t, td("upper.wasm"))},
			"sum":       map[string]string{"wasm": mustAbs(t, td("sum.wasm"))},
			"sort":      map[string]string{"wasm": mustAbs(t, td("sort.wasm"))},
			"textstats": map[string]string{"wasm": mustAbs(t, td("textstats.wasm"))},
			"loop":      map[string]string{"wasm": mustAbs(t, td("loop.wasm"))},
		},
		"actions": map[string]any{
			"text.upper": map[string]any{"executor": "upper", "version": "^1.0.0", "capabilities": []string{"TEXT"}},
			"text.stats": map[string]any{"executor": "textstats", "version": "~1.0.0", "capabilities": []string{"TEXT"}},
			"math.sum":   map[string]any{"executor": "sum", "version": ">=1.0.0 <2.0.0", "capabilities": []string{"MATH"}},
			"math.sort":  map[string]any{"executor": "sort", "version": "^1.0.0", "capabilities": []string{"MATH"}, "limits": map[string]any{"max_list_items": 10000}},
			"test.loop":  map[string]any{"executor": "loop", "version": "^1.0.0", "capabilities": []string{"TEST"}, "limits": map[string]any{"fuel": 5_000_000, "timeout_ms": 10_000}},
		},
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// faultRequests are n requests, each with a trace id of its own, mixing
// successes, an executor that runs out of fuel, and refusals before and
// after the route (so that some verdicts have no attempt).
func faultRequests(n int) []pipeline.ActionRequest {
	reqs := make([]pipeline.ActionRequest, n)
	for i := range reqs {
		var action, payload string
		switch i % 8 {
		case 0:
			action, payload = "text.upper", fmt.Sprintf(`{"text":"request %d"}`, i)
		case 1:
			action, payload = "math.sum", fmt.Sprintf(`{"numbers":[%d,%d,%d]}`, i, i*7, -i)
		case 2:
			action, payload = "math.sort", fmt.Sprintf(`{"numbers":[%d,3,%d,-1]}`, i%97, i)
		case 3:
			action, payload = "text.stats", fmt.Sprintf(`{"text":"one two %d"}`, i)
		case 4, 5:
			action, payload = "test.loop", fmt.Sprintf(`{"n":%d}`, i)
		case 6:
			action, payload = "math.sum", `{"numbers":[`+strings.Repeat("1,", 1000+i%5)+`1]}` // LIST_TOO_LONG
		case 7:
			if i%16 == 7 {
				action, payload = "no.such", `{}` // ACTION_UNKNOWN
			} else {
				action, payload = "text.upper", `{"text":` // NON_JSON_PAYLOAD
			}
		}
		reqs[i] = pipeline.ActionRequest{Action: action, Payload: json.RawMessage(payload),
			TraceID: pipeline.NewTraceID(), TsUTC: "2026-11-25T12:00:00Z"}
	}
	return reqs
}

func faultJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// startNATSCluster starts a 3-server JetStream cluster in the test process,
// storing on disk in t's directories, and returns the servers (in order)
// and a URL naming all of them. cluster/cluster_test.go's runCluster, which
// a test of another package cannot import.
func startNATSCluster(t *testing.T) ([]*server.Server, string) {
	t.Helper()
	const n = 3
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ports[i] = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	servers := make([]*server.Server, n)
	for i := range servers {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("s%d", i+1), Host: "127.0.0.1", Port: -1,
			JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
			Cluster: server.ClusterOpts{Name: "wasmgate-fault", Host: "127.0.0.1", Port: ports[i]},
			Routes:  routes,
		})
		require.NoError(t, err)
		go s.Start()
		servers[i] = s
		t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	}
	var urls []string
	for i, s := range servers {
		// Generous: the suite runs other packages' tests beside it.
		require.True(t, s.ReadyForConnections(60*time.Second), "server %d not ready", i+1)
		urls = append(urls, s.ClientURL())
	}
	// A stream of 3 replicas can be placed once the meta leader knows every
	// server to be online, with its JetStream stats.
	require.Eventually(t, func() bool {
		l := faultMetaLeader(servers)
		return l != nil && len(l.JetStreamClusterPeers()) == n
	}, 30*time.Second, 50*time.Millisecond, "no JetStream meta leader seeing all %d servers", n)
	return servers, strings.Join(urls, ",")
}

func faultMetaLeader(servers []*server.Server) *server.Server {
	for _, s := range servers {
		if s.Running() && s.JetStreamIsLeader() {
			return s
		}
	}
	return nil
}

const faultAccount = "$G"

// gatherLeadership makes the leader of the workers' consumer the leader
// of the actions and audit streams and of the request index too, and
// returns it: shutting it down
// takes every leader the deployment relies on at once. The consumer's
// leader stays where it is: moving it while workers wait for requests can
// lose their pull requests, a fault of its own this test does not mean to
// add before it starts.
func gatherLeadership(t *testing.T, c *cluster.Conn, servers []*server.Server) *server.Server {
	t.Helper()
	n := c.Names
	var leader *server.Server
	require.Eventually(t, func() bool {
		for _, s := range servers {
			if s.JetStreamIsConsumerLeader(faultAccount, n.ActionsStream(), n.Workers()) {
				leader = s
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "no leader of consumer %s", n.Workers())
	req := []byte(fmt.Sprintf(`{"placement":{"preferred":%q}}`, leader.Name()))
	for _, stream := range []string{n.ActionsStream(), n.AuditStream(), "KV_" + n.RequestsBucket()} {
		deadline := time.Now().Add(30 * time.Second)
		for !leader.JetStreamIsStreamLeader(faultAccount, stream) {
			require.True(t, time.Now().Before(deadline), "stream %s: no leadership on %s within 30s", stream, leader.Name())
			// The stream's leader may still be being elected: ask again.
			if m, err := c.NC.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, req, 5*time.Second); err != nil {
				t.Logf("stream %s: stepdown: %v", stream, err)
			} else if !bytes.Contains(m.Data, []byte(`"success":true`)) {
				t.Logf("stream %s: stepdown: %s", stream, m.Data)
			}
			waitUntil := time.Now().Add(5 * time.Second)
			for !leader.JetStreamIsStreamLeader(faultAccount, stream) && time.Now().Before(waitUntil) {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	return leader
}

// awaitStreamsCurrent waits until every server holds a current replica of
// each stream.
func awaitStreamsCurrent(t *testing.T, servers []*server.Server, streams ...string) {
	t.Helper()
	for _, stream := range streams {
		require.Eventually(t, func() bool {
			for _, s := range servers {
				if !s.JetStreamIsStreamCurrent(faultAccount, stream) {
					return false
				}
			}
			return true
		}, 30*time.Second, 50*time.Millisecond, "stream %s: replicas not current", stream)
	}
}

// consumerState is the workers' consumer's info as JSON, for diagnostics.
func consumerState(c *cluster.Conn) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cons, err := c.JS.Consumer(ctx, c.Names.ActionsStream(), c.Names.Workers())
	if err != nil {
		return err.Error()
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return err.Error()
	}
	b, _ := json.Marshal(info)
	return string(b)
}

// leadershipOf names what s leads, for the log.
func leadershipOf(s *server.Server, c *cluster.Conn) []string {
	n := c.Names
	var leads []string
	if s.JetStreamIsLeader() {
		leads = append(leads, "the meta group")
	}
	for _, st := range []string{n.ActionsStream(), n.AuditStream(), "KV_" + n.RequestsBucket()} {
		if s.JetStreamIsStreamLeader(faultAccount, st) {
			leads = append(leads, "stream "+st)
		}
	}
	if s.JetStreamIsConsumerLeader(faultAccount, n.ActionsStream(), n.Workers()) {
		leads = append(leads, "consumer "+n.Workers())
	}
	if len(leads) == 0 {
		leads = append(leads, "nothing")
	}
	return leads
}

// faultWorker is a `wasmgate worker` process.
type faultWorker struct {
	name   string
	cmd    *exec.Cmd
	log    syncBuffer
	ready  chan struct{}
	exited chan struct{}
}

func startFaultWorker(t *testing.T, urls, name string) *faultWorker {
	t.Helper()
	w := &faultWorker{name: name, ready: make(chan struct{}), exited: make(chan struct{})}
	w.cmd = exec.Command(binary, "worker", "--nats", urls, "--concurrency", "4", "--ack-wait", "2s")
	stderr, err := w.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, w.cmd.Start())
	go func() {
		defer close(w.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var once sync.Once
		for sc.Scan() {
			w.log.Write(append(sc.Bytes(), '\n'))
			if strings.Contains(sc.Text(), `msg="worker ready"`) {
				once.Do(func() { close(w.ready) })
			}
		}
		_ = w.cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-w.exited:
		default:
			_ = w.cmd.Process.Kill()
			<-w.exited
		}
	})
	return w
}

func (w *faultWorker) awaitReady(t *testing.T) {
	t.Helper()
	select {
	case <-w.ready:
	case <-w.exited:
		t.Fatalf("%s exited (%v) before it was ready:\n%s", w.name, w.cmd.ProcessState, w.log.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("%s not ready within a minute:\n%s", w.name, w.log.String())
	}
}

var faultLogLevel = regexp.MustCompile(`level=(WARN|ERROR)`)

// faultDiagnostics is each worker's state and the lines of its log that are
// not routine (the whole log when short).
func faultDiagnostics(workers []*faultWorker) string {
	var b strings.Builder
	for _, w := range workers {
		state := "running"
		select {
		case <-w.exited:
			state = fmt.Sprint(w.cmd.ProcessState)
		default:
		}
		lines := strings.SplitAfter(w.log.String(), "\n")
		fmt.Fprintf(&b, "--- %s (%s), %d log lines:\n", w.name, state, len(lines))
		if len(lines) > 60 {
			lines = slices.DeleteFunc(lines, func(l string) bool { return !faultLogLevel.MatchString(l) })
			if len(lines) > 60 {
				lines = append(lines[:30], append([]string{"...\n"}, lines[len(lines)-30:]...)...)
			}
		}
		b.WriteString(strings.Join(lines, ""))
	}
	return b.String()
}
