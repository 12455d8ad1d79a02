package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/pipeline"
)

// The tests in this file drive the commands that reach a NATS JetStream
// deployment (publish, worker, run/serve/rep --nats, audit export/verify
// --nats) against a real nats-server embedded in the test process, and
// check that a deployment answers what the same command answers in-process
// on the same registry.

// natsWait bounds every wait in these tests; nothing should come near it
// but a worker or server that compiles a 3 MB Go guest cold in a race build
// on a loaded machine (about 30 s here), hence the room.
const natsWait = 90 * time.Second

// startNATS starts an embedded NATS server with JetStream, storing in a
// directory of t's and shut down when t ends, and returns its client URL.
func startNATS(t *testing.T) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	})
	require.NoError(t, err)
	go s.Start()
	if !s.ReadyForConnections(natsWait) {
		s.Shutdown()
		t.Fatalf("nats server not ready for connections within %s", natsWait)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

// background is a command run in-process in a goroutine until the test
// ends.
type background struct {
	args   []string
	stdout syncBuffer
	stderr syncBuffer
	done   chan int // receives the exit code once
}

// startBackground runs `wasmgate args...` in-process with a context that is
// cancelled when t ends (the command must then exit 0), and returns once
// ready holds of what it wrote to stderr.
func startBackground(t *testing.T, ready func(stderr string) bool, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{args: args, done: make(chan int, 1)}
	go func() { b.done <- run(ctx, args, strings.NewReader(""), &b.stdout, &b.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-b.done:
			assert.Equal(t, exitSuccess, code, "wasmgate %s stopped by its context: stderr:\n%s", args[0], b.stderr.String())
		case <-time.After(natsWait):
			t.Errorf("wasmgate %s did not stop within %s of its context's end", args[0], natsWait)
		}
	})
	deadline := time.After(natsWait)
	for !ready(b.stderr.String()) {
		select {
		case code := <-b.done:
			b.done <- code
			t.Fatalf("wasmgate %s exited %d before it was ready:\n%s", strings.Join(args, " "), code, b.stderr.String())
		case <-deadline:
			t.Fatalf("wasmgate %s not ready within %s:\n%s", strings.Join(args, " "), natsWait, b.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return b
}

// startWorker runs `wasmgate worker --nats url args...` until t ends.
func startWorker(t *testing.T, url string, args ...string) *background {
	t.Helper()
	return startBackground(t, func(s string) bool { return strings.Contains(s, "msg=\"worker ready\"") },
		append([]string{"worker", "--nats", url}, args...)...)
}

// startServeInProcess runs `wasmgate serve --addr 127.0.0.1:0 args...`
// until t ends and returns its URL, from its "listening" log line.
func startServeInProcess(t *testing.T, args ...string) string {
	t.Helper()
	b := startBackground(t, func(s string) bool { return servedURL(s) != "" },
		append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	return servedURL(b.stderr.String())
}

func servedURL(log string) string {
	for line := range strings.Lines(log) {
		if u := listeningURL(strings.TrimSuffix(line, "\n")); u != "" {
			return u
		}
	}
	return ""
}

// publishNATS publishes config to the deployment and requires it to
// succeed.
func publishNATS(t *testing.T, url, config string, args ...string) runResult {
	t.Helper()
	r := wasmgate(t, "", append([]string{"publish", "--nats", url, "--config", config}, args...)...)
	require.Equal(t, exitSuccess, r.code, "publish: stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	return r
}

// withoutKeys decodes a JSON object and drops keys from it (and from
// nested objects under the same names, one level down: the protocol's
// "wasmgate" verdict).
func withoutKeys(t *testing.T, raw string, keys ...string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &m), raw)
	for _, k := range keys {
		delete(m, k)
	}
	return m
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return audit.Digest(b)
}

// TestNATSPublish: publish lists every executor with the digest of its
// module and whether it was uploaded; publishing again uploads nothing and
// puts a new revision. Usage errors name the missing flag, and a worker of
// a deployment nothing was published to says to publish first.
func TestNATSPublish(t *testing.T) {
	t.Parallel()
	url := startNATS(t)

	line := func(id string, size int, digest, state string) string {
		return fmt.Sprintf("  %-24s %-4s %s  %8d bytes  %s", id, "wasm", digest, size, state)
	}
	lines := func(state string) []string {
		var out []string
		for _, id := range []string{"sort", "sum", "textstats", "upper"} {
			path := td(id + ".wasm")
			fi, err := os.Stat(path)
			require.NoError(t, err)
			out = append(out, line(id, int(fi.Size()), fileDigest(t, path), state))
		}
		return out
	}
	summary := regexp.MustCompile(`^published registry revision (\d+) \(digest ([0-9a-f]{64})\) to wasmgate_registry: 4 executors, (\d) uploaded$`)

	first := publishNATS(t, url, td("registry.json"))
	got := strings.Split(strings.TrimSuffix(first.stdout, "\n"), "\n")
	require.Len(t, got, 5, first.stdout)
	assert.Equal(t, lines("uploaded"), got[:4])
	m := summary.FindStringSubmatch(got[4])
	require.NotNil(t, m, got[4])
	assert.Equal(t, "1", m[1], "the first revision")
	assert.Equal(t, "4", m[3], "every module uploaded")
	firstDigest := m[2]
	assert.Empty(t, first.stderr)

	second := publishNATS(t, url, td("registry.json"))
	got = strings.Split(strings.TrimSuffix(second.stdout, "\n"), "\n")
	require.Len(t, got, 5, second.stdout)
	assert.Equal(t, lines("already there"), got[:4])
	m = summary.FindStringSubmatch(got[4])
	require.NotNil(t, m, got[4])
	assert.Equal(t, "2", m[1], "a new revision")
	assert.Equal(t, firstDigest, m[2], "the same registry document")
	assert.Equal(t, "0", m[3], "nothing uploaded again")

	t.Run("usage errors", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args []string
			want string
		}{
			{"publish without --config", []string{"publish", "--nats", url}, "wasmgate publish: --config FILE is required\n"},
			{"publish without --nats", []string{"publish", "--config", td("registry.json")}, "wasmgate publish: --nats URL is required\n"},
			{"worker without --nats", []string{"worker"}, "wasmgate worker: --nats URL is required\n"},
			{"publish with a bad prefix", []string{"publish", "--nats", url, "--config", td("registry.json"), "--nats-prefix", "Bad!"}, "--nats-prefix: nats prefix \"Bad!\""},
			{"publish with no replicas", []string{"publish", "--nats", url, "--config", td("registry.json"), "--nats-replicas", "0"}, "--nats-replicas must be at least 1"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				r := wasmgate(t, "", tt.args...)
				assert.Equal(t, exitUsage, r.code, r.stderr)
				assert.Contains(t, r.stderr, tt.want)
				assert.Empty(t, r.stdout)
			})
		}
	})

	t.Run("worker before any publish", func(t *testing.T) {
		r := wasmgate(t, "", "worker", "--nats", url, "--nats-prefix", "empty")
		assert.Equal(t, exitUsage, r.code, r.stderr)
		assert.Contains(t, r.stderr, "wasmgate worker: cluster: no registry is published")
		assert.Contains(t, r.stderr, "publish one first (wasmgate publish --nats "+url+" --config FILE)")
		assert.NotContains(t, r.stderr, "worker ready")
	})
}

// TestNATSRunSameAsInProcess: `run --nats` prints the ActionResult `run
// --config` prints for the same registry, action, input and trace id (but
// the time it took and its timestamp), with the same exit code.
func TestNATSRunSameAsInProcess(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	publishNATS(t, url, td("registry.json"))
	startWorker(t, url)

	for _, tt := range []struct {
		name, action, input string
		code                int
		status              string
		codes               []string
	}{
		{"success", "math.sum", `{"numbers":[1,2,3]}`, exitSuccess, "SUCCESS", []string{}},
		{"text", "text.upper", `{"text":"governed"}`, exitSuccess, "SUCCESS", []string{}},
		{"failed", "math.sum", `{"numbers":[1.5]}`, exitFailed, "FAILED", []string{"EXECUTOR_EXCEPTION"}},
		{"unknown action", "no.such", `{}`, exitBlocked, "BLOCKED", []string{"ACTION_UNKNOWN"}},
		{"not JSON", "math.sum", `{"numbers":`, exitBlocked, "BLOCKED", []string{"NON_JSON_PAYLOAD"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			trace := pipeline.NewTraceID()
			remote := wasmgate(t, "", "run", "--nats", url, "--action", tt.action, "--input", tt.input, "--trace-id", trace)
			local := wasmgate(t, "", "run", "--config", td("registry.json"), "--action", tt.action, "--input", tt.input, "--trace-id", trace)
			require.Equal(t, tt.code, remote.code, "stdout: %s\nstderr: %s", remote.stdout, remote.stderr)
			require.Equal(t, local.code, remote.code)
			res := parseResult(t, remote)
			assert.Equal(t, tt.status, res.Status)
			assert.Equal(t, tt.codes, res.ReasonCodes, res.Message)
			assert.Equal(t, tt.action, res.Action)

			r := withoutKeys(t, remote.stdout, "duration_ms", "ts_utc")
			assert.Equal(t, trace, r["trace_id"])
			takeChainIndex(t, url, r, "", "audit_index") // the local run keeps no log
			assert.Equal(t, withoutKeys(t, local.stdout, "duration_ms", "ts_utc"), r)
			var ts struct {
				TsUTC string `json:"ts_utc"`
			}
			require.NoError(t, json.Unmarshal([]byte(remote.stdout), &ts))
			_, err := time.Parse(time.RFC3339Nano, ts.TsUTC)
			assert.NoError(t, err, "run --nats stamps the request: %q", ts.TsUTC)
			assert.Empty(t, remote.stderr)
		})
	}

	t.Run("usage errors", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args []string
			want string
		}{
			{"with --wasm", []string{"--wasm", td("sum.wasm")}, "wasmgate run: --wasm does not apply with --nats"},
			{"with --config", []string{"--config", td("registry.json")}, "wasmgate run: --config does not apply with --nats"},
			{"with --audit", []string{"--audit", filepath.Join(t.TempDir(), "a.jsonl")}, "wasmgate run: --audit does not apply with --nats"},
			{"with --fuel", []string{"--fuel", "1000"}, "wasmgate run: --fuel does not apply with --nats"},
			{"without --action", []string{"--action", ""}, "wasmgate run: --nats needs --action NAME"},
			{"non-positive timeout", []string{"--nats-timeout", "0s"}, "wasmgate run: --nats-timeout must be positive"},
			{"bad trace id", []string{"--trace-id", "abc"}, `trace_id "abc" is not a UUID`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				args := append([]string{"run", "--nats", url, "--action", "math.sum", "--input", `{"numbers":[1]}`}, tt.args...)
				r := wasmgate(t, "", args...)
				assert.Equal(t, exitUsage, r.code, r.stderr)
				assert.Contains(t, r.stderr, tt.want)
				assert.Empty(t, r.stdout)
			})
		}
	})
}

// TestNATSRunTimesOutWithoutWorker: with no worker, `run --nats` waits
// --nats-timeout, then prints BLOCKED EXECUTOR_TIMEOUT and fails.
func TestNATSRunTimesOutWithoutWorker(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	publishNATS(t, url, td("registry.json"))
	trace := pipeline.NewTraceID()
	start := time.Now()
	r := wasmgate(t, "", "run", "--nats", url, "--nats-timeout", "300ms", "--action", "math.sum", "--input", `{"numbers":[1]}`, "--trace-id", trace)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Equal(t, exitInternal, r.code, r.stderr)
	res := parseResult(t, r)
	assert.Equal(t, "BLOCKED", res.Status)
	assert.Equal(t, []string{"EXECUTOR_TIMEOUT"}, res.ReasonCodes)
	assert.Equal(t, "math.sum", res.Action)
	assert.Contains(t, r.stderr, "wasmgate run: cluster: waiting for trace id "+trace+": context deadline exceeded")
}

// TestNATSServeSameAsInProcess: `serve --nats` answers a call with the body
// `serve --config` answers for the same registry, request and trace id,
// but the time it took.
func TestNATSServeSameAsInProcess(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	publishNATS(t, url, td("registry.json"))
	startWorker(t, url)
	remote := newProtocolClient(startServeInProcess(t, "--nats", url), "")
	local := newProtocolClient(startServeInProcess(t, "--config", td("registry.json")), "")

	for _, tt := range []struct {
		name, body string
		success    bool
		code       string // the error code when not success
	}{
		{"success", call("math.sum", "", "math.sum", `{"numbers":[1,2]}`), true, ""},
		{"text", call("text.upper", "", "text.upper", `{"text":"governed"}`), true, ""},
		{"failed", call("math.sum", "", "math.sum", `{"numbers":[1.5]}`), false, "TOOL_EXECUTION_ERROR"},
		{"list too long", call("math.sum", "", "math.sum", `{"numbers":[`+strings.Repeat("1,", 2000)+`1]}`), false, "INVALID_REQUEST"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			trace := pipeline.NewTraceID()
			rr := remote.do(t, http.MethodPost, "/execute-tool", tt.body, "X-Trace-Id", trace)
			lr := local.do(t, http.MethodPost, "/execute-tool", tt.body, "X-Trace-Id", trace)
			require.Equal(t, http.StatusOK, rr.status, "%s", rr.body)
			require.Equal(t, lr.status, rr.status)
			assert.Equal(t, trace, rr.header.Get("X-Trace-Id"))
			tr := decodeTool(t, rr)
			assert.Equal(t, tt.success, tr.Success, "%s", rr.body)
			if !tt.success {
				require.NotNil(t, tr.Error, "%s", rr.body)
				assert.Equal(t, tt.code, tr.Error.Code)
			}
			require.NotNil(t, tr.Wasmgate)
			assert.Equal(t, trace, tr.Wasmgate.TraceID)
			rm := withoutKeys(t, string(rr.body), "executionTimeMs")
			takeChainIndex(t, url, rm, "wasmgate", "auditIndex") // the local serve keeps no log
			assert.Equal(t, withoutKeys(t, string(lr.body), "executionTimeMs"), rm)
		})
	}

	t.Run("unknown package", func(t *testing.T) {
		body := call("no.such", "", "tool", `{}`)
		trace := pipeline.NewTraceID()
		rr := remote.do(t, http.MethodPost, "/execute-tool", body, "X-Trace-Id", trace)
		lr := local.do(t, http.MethodPost, "/execute-tool", body, "X-Trace-Id", trace)
		require.Equal(t, lr.status, rr.status, "%s", rr.body)
		rt, lt := decodeTool(t, rr), decodeTool(t, lr)
		require.NotNil(t, rt.Error, "%s", rr.body)
		require.NotNil(t, lt.Error, "%s", lr.body)
		assert.Equal(t, "PACKAGE_NOT_FOUND", rt.Error.Code)
		assert.Equal(t, lt.Error.Code, rt.Error.Code)
		assert.Contains(t, rt.Error.Message, "package no.such is not served here")
		require.NotNil(t, rt.Wasmgate, "refused where it is audited: %s", rr.body)
		require.NotNil(t, lt.Wasmgate)
		assert.Equal(t, *lt.Wasmgate, *rt.Wasmgate)
		assert.Equal(t, "BLOCKED", rt.Wasmgate.Status)
		assert.Equal(t, []string{"ACTION_UNKNOWN"}, rt.Wasmgate.ReasonCodes)
		assert.Equal(t, "no.such/tool", rt.Wasmgate.Action)
	})

	t.Run("usage errors", func(t *testing.T) {
		for _, tt := range []struct {
			flag string
			args []string
		}{
			{"config", []string{"--config", td("registry.json")}},
			{"audit", []string{"--audit", filepath.Join(t.TempDir(), "a.jsonl")}},
			{"npm-allow", []string{"--npm-allow", "*"}},
		} {
			t.Run(tt.flag, func(t *testing.T) {
				r := wasmgate(t, "", append([]string{"serve", "--addr", "127.0.0.1:0", "--nats", url}, tt.args...)...)
				assert.Equal(t, exitUsage, r.code, r.stderr)
				assert.Contains(t, r.stderr, "wasmgate serve: --"+tt.flag+" does not apply with --nats")
				assert.NotContains(t, r.stderr, "listening")
			})
		}
	})
}

// TestNATSServeFullStream: a deployment whose actions stream holds as many
// requests as it may answers further calls 503 SERVICE_UNAVAILABLE with
// Retry-After, and `run --nats` fails saying so.
func TestNATSServeFullStream(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	ctx := context.Background()
	c, err := cluster.Connect(cluster.Options{URL: url})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, c.Setup(ctx, cluster.Layout{MaxQueued: 1}))
	publishNATS(t, url, td("registry.json"))

	// No worker: one request fills the stream and stays queued.
	client, err := cluster.NewClient(ctx, c, cluster.ClientOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	res, err := client.Execute(short, pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1]}`)})
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "queued, no worker")
	assert.Equal(t, pipeline.StatusBlocked, res.Status)

	srv := newProtocolClient(startServeInProcess(t, "--nats", url), "")
	r := srv.do(t, http.MethodPost, "/execute-tool", call("math.sum", "", "math.sum", `{"numbers":[1,2]}`))
	requireRefusal(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "the cluster's actions stream is full")
	assert.Contains(t, string(r.body), "retry later")
	assert.Equal(t, "1", r.header.Get("Retry-After"))

	cli := wasmgate(t, "", "run", "--nats", url, "--action", "math.sum", "--input", `{"numbers":[1]}`)
	assert.Equal(t, exitInternal, cli.code, cli.stderr)
	assert.Contains(t, cli.stderr, "wasmgate run: ")
	assert.Contains(t, cli.stderr, "the cluster's actions stream is full")
	assert.Empty(t, cli.stdout, "no verdict to print")
}

// TestNATSRepSameAsInProcess: `rep --nats` runs a flow to the same step
// events, verdicts and outputs as `rep --config` on the same registry.
func TestNATSRepSameAsInProcess(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	config := publishableRepConfig(t)
	publishNATS(t, url, config)
	startWorker(t, url)
	remote := startRep(t, nil, "--nats", url)
	local := startRep(t, nil, "--config", config)

	type caps struct {
		StepKinds []string `json:"step_kinds"`
	}
	var rc, lc caps
	remote.result("Runtime.Capabilities", map[string]any{}, &rc)
	local.result("Runtime.Capabilities", map[string]any{}, &lc)
	assert.Equal(t, []string{"math.sort", "math.sum", "test.echo", "test.fail", "test.fuel", "test.hang", "text.upper", "switch"}, rc.StepKinds)
	assert.Equal(t, lc.StepKinds, rc.StepKinds)

	flows := []struct {
		name   string
		ir     json.RawMessage
		status string
	}{
		{"completes", repIR(repList(
			repNode("sort", "math.sort", `{"numbers":"$input.numbers"}`),
			repNode("sum", "math.sum", `{"numbers":"$step.sort.sorted"}`),
			repNode("title", "text.upper", `{"text":"$input.title"}`)),
			repList(repEdge("sort", "sum"), repEdge("sum", "title"))), "completed"},
		{"fails", repIR(repList(
			repNode("ok", "math.sum", `{"numbers":[1]}`),
			repNode("boom", "test.fail", `{}`),
			repNode("never", "math.sum", `{"numbers":[1]}`)),
			repList(repEdge("ok", "boom"), repEdge("boom", "never"))), "failed"},
	}
	// stepResults are a run's step events, each with its verdict but the
	// time it took and when.
	stepResults := func(p repPoll) []map[string]any {
		var out []map[string]any
		for _, e := range p.Events {
			if e.Type != "step" {
				continue
			}
			m := map[string]any{"step_id": e.StepID, "state": e.State, "kind": e.Kind, "attempt": *e.Attempt}
			if e.Result != nil {
				m["result"] = withoutKeys(t, string(e.Result), "duration_ms", "ts_utc")
			}
			out = append(out, m)
		}
		return out
	}
	for _, f := range flows {
		t.Run(f.name, func(t *testing.T) {
			trace := pipeline.NewTraceID()
			params := map[string]any{"ir": f.ir, "inputs": map[string]any{"numbers": []int{3, 1, 2}, "title": "governed"},
				"options": map[string]any{"run_id": f.name, "trace_id": trace}}
			rp := remote.finish(remote.startRun(params))
			lp := local.finish(local.startRun(params))
			require.Equal(t, f.status, rp.Status, "%+v", rp.Error)
			assert.Equal(t, lp.Status, rp.Status)
			assert.Equal(t, trace, rp.TraceID)
			assert.Equal(t, stepEvents(lp), stepEvents(rp))
			rs := stepResults(rp)
			require.NotEmpty(t, rs)
			for _, s := range rs {
				if r, ok := s["result"].(map[string]any); ok {
					assert.Equal(t, trace, r["trace_id"], "every step carries the run's trace id")
					takeChainIndex(t, url, r, "", "audit_index") // the local rep keeps no log
				}
			}
			assert.Equal(t, stepResults(lp), rs)
			assert.Equal(t, lp.Summary.Outputs, rp.Summary.Outputs)
			assert.Equal(t, lp.Summary.CompletedSteps, rp.Summary.CompletedSteps)
			assert.Equal(t, lp.Summary.FailedSteps, rp.Summary.FailedSteps)
			assert.Equal(t, lp.Summary.Attempts, rp.Summary.Attempts)
			if f.status == "completed" {
				assert.JSONEq(t, `{"sum":6}`, string(rp.Summary.Outputs["sum"]))
				assert.JSONEq(t, `{"text":"GOVERNED"}`, string(rp.Summary.Outputs["title"]))
				assert.Nil(t, rp.Error)
			} else {
				require.NotNil(t, rp.Error)
				require.NotNil(t, lp.Error)
				assert.Equal(t, 2001, rp.Error.Code)
				assert.Equal(t, lp.Error.Code, rp.Error.Code)
				assert.Equal(t, lp.Error.Message, rp.Error.Message)
				assert.Equal(t, "boom", rp.Error.data(t).StepID)
			}
		})
	}
	assert.Equal(t, 0, remote.close(), remote.stderr.String())
	assert.Equal(t, 0, local.close())
	assert.Contains(t, remote.stderr.String(), "dispatching steps to NATS workers")

	t.Run("usage errors", func(t *testing.T) {
		for _, flag := range []string{"config", "audit"} {
			r := wasmgate(t, "", "rep", "--nats", url, "--"+flag, "x")
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, "wasmgate rep: --"+flag+" does not apply with --nats")
		}
	})
}

// publishableRepConfig is testdata/rep/registry.json with test.hang's fuel
// limit brought under 2^53: publish refuses the fixture's 4e18 (the
// registry document is canonical JSON, which keeps no integer beyond
// 2^53), while --config takes it. The copy names the modules by absolute
// path.
func publishableRepConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(repConfig())
	require.NoError(t, err)
	dir, err := filepath.Abs(td(""))
	require.NoError(t, err)
	s := strings.ReplaceAll(string(b), `"../`, `"`+dir+"/")
	require.Contains(t, s, `"fuel": 4000000000000000000`)
	s = strings.Replace(s, `"fuel": 4000000000000000000`, `"fuel": 4000000000000000`, 1)
	path := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
	return path
}

// TestNATSAuditExport: the deployment's chain, exported, is a log `audit
// verify` accepts, with one verdict per request made; `audit verify
// --nats` checks it in place.
func TestNATSAuditExport(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	publishNATS(t, url, td("registry.json"))
	startWorker(t, url)

	requests := []struct {
		action, input string
		code          int
		ran           bool // the executor ran: an attempt precedes the verdict
	}{
		{"math.sum", `{"numbers":[1,2,3]}`, exitSuccess, true},
		{"text.upper", `{"text":"a"}`, exitSuccess, true},
		{"math.sum", `{"numbers":[1.5]}`, exitFailed, true},
		{"no.such", `{}`, exitBlocked, false},
	}
	traces := map[string]string{}
	attempts := 0
	for _, rq := range requests {
		trace := pipeline.NewTraceID()
		traces[trace] = rq.action
		r := wasmgate(t, "", "run", "--nats", url, "--action", rq.action, "--input", rq.input, "--trace-id", trace)
		require.Equal(t, rq.code, r.code, "%s: %s", r.stdout, r.stderr)
		if rq.ran {
			attempts++
		}
	}
	records := attempts + len(requests)

	ex := wasmgate(t, "", "audit", "export", "--nats", url)
	require.Equal(t, exitSuccess, ex.code, ex.stderr)
	assert.Equal(t, fmt.Sprintf("wasmgate audit export: %d records from WASMGATE_AUDIT\n", records), ex.stderr)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	require.NoError(t, os.WriteFile(log, []byte(ex.stdout), 0o644))

	v := wasmgate(t, "", "audit", "verify", log)
	require.Equal(t, exitSuccess, v.code, v.stderr)
	okLine := fmt.Sprintf("ok, %d records (%d attempts, %d verdicts), hash chain intact\n", records, attempts, len(requests))
	assert.Equal(t, log+": "+okLine, v.stdout)

	verdicts := map[string]int{}
	seq := uint64(0)
	for line := range bytes.Lines([]byte(ex.stdout)) {
		var rec audit.Record
		require.NoError(t, json.Unmarshal(line, &rec), string(line))
		seq++
		assert.Equal(t, seq, rec.Seq)
		require.Contains(t, traces, rec.TraceID, "a record of a request of this test")
		assert.Equal(t, traces[rec.TraceID], rec.Action)
		if rec.EventType == audit.EventActionAudit {
			verdicts[rec.TraceID]++
		}
	}
	require.Len(t, verdicts, len(requests))
	for trace, n := range verdicts {
		assert.Equal(t, 1, n, "verdicts of %s", trace)
	}

	vn := wasmgate(t, "", "audit", "verify", "--nats", url)
	require.Equal(t, exitSuccess, vn.code, vn.stderr)
	assert.Equal(t, "WASMGATE_AUDIT: "+okLine, vn.stdout)

	r := wasmgate(t, "", "audit", "export")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "wasmgate audit export: --nats URL is required")
	r = wasmgate(t, "", "audit", "verify", "--nats", url, log)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--nats verifies the deployment's chain: no file argument")
}

// TestNATSPrefixes: two deployments with different --nats-prefix on one
// server do not see each other's registry.
func TestNATSPrefixes(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	pub := publishNATS(t, url, td("registry.json"), "--nats-prefix", "ta")
	assert.Contains(t, pub.stdout, "to ta_registry: 4 executors, 4 uploaded")
	startWorker(t, url, "--nats-prefix", "ta")

	r := wasmgate(t, "", "run", "--nats", url, "--nats-prefix", "ta", "--action", "math.sum", "--input", `{"numbers":[2,2]}`)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, `{"sum":4}`, string(parseResult(t, r).Output))

	for _, prefix := range []string{"tb", cluster.DefaultPrefix} {
		t.Run(prefix, func(t *testing.T) {
			r := wasmgate(t, "", "run", "--nats", url, "--nats-prefix", prefix, "--action", "math.sum", "--input", `{"numbers":[2,2]}`)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, "wasmgate run: cluster: no registry is published")
			assert.Contains(t, r.stderr, "publish one first")
			assert.Empty(t, r.stdout)
			w := wasmgate(t, "", "worker", "--nats", url, "--nats-prefix", prefix)
			assert.Equal(t, exitUsage, w.code, w.stderr)
			assert.Contains(t, w.stderr, "no registry is published")
		})
	}

	// The deployment under tb gets its own registry, objects and chain.
	pub = publishNATS(t, url, td("registry.json"), "--nats-prefix", "tb")
	assert.Contains(t, pub.stdout, "published registry revision 1 ")
	assert.Contains(t, pub.stdout, "to tb_registry: 4 executors, 4 uploaded")
	ex := wasmgate(t, "", "audit", "export", "--nats", url, "--nats-prefix", "tb")
	require.Equal(t, exitSuccess, ex.code, ex.stderr)
	assert.Empty(t, ex.stdout, "nothing ran under tb")
	assert.Equal(t, "wasmgate audit export: 0 records from TB_AUDIT\n", ex.stderr)
	ex = wasmgate(t, "", "audit", "export", "--nats", url, "--nats-prefix", "ta")
	require.Equal(t, exitSuccess, ex.code, ex.stderr)
	assert.Equal(t, "wasmgate audit export: 2 records from TA_AUDIT\n", ex.stderr)
}

// TestNATSPrefixesDifferingInDash: prefixes that differ only in '-' and
// '_' are two deployments on one server: each has its streams (T-A_… and
// T_A_…), each its worker (both start), each request runs on its own
// tenant's worker, and each chain holds its own tenant's records only.
func TestNATSPrefixesDifferingInDash(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	for _, prefix := range []string{"t-a", "t_a"} {
		publishNATS(t, url, td("registry.json"), "--nats-prefix", prefix)
		startWorker(t, url, "--nats-prefix", prefix)
	}
	traces := map[string]string{}
	for i, prefix := range []string{"t-a", "t_a"} {
		trace := pipeline.NewTraceID()
		traces[prefix] = trace
		r := wasmgate(t, "", "run", "--nats", url, "--nats-prefix", prefix, "--action", "math.sum",
			"--input", fmt.Sprintf(`{"numbers":[%d]}`, i+1), "--trace-id", trace)
		require.Equal(t, exitSuccess, r.code, r.stderr)
		assert.Equal(t, fmt.Sprintf(`{"sum":%d}`, i+1), string(parseResult(t, r).Output))
	}
	for prefix, stream := range map[string]string{"t-a": "T-A_AUDIT", "t_a": "T_A_AUDIT"} {
		ex := wasmgate(t, "", "audit", "export", "--nats", url, "--nats-prefix", prefix)
		require.Equal(t, exitSuccess, ex.code, ex.stderr)
		assert.Equal(t, "wasmgate audit export: 2 records from "+stream+"\n", ex.stderr)
		for line := range strings.Lines(ex.stdout) {
			var rec audit.Record
			require.NoError(t, json.Unmarshal([]byte(line), &rec))
			assert.Equal(t, traces[prefix], rec.TraceID, "record %d of %s's chain", rec.Seq, prefix)
		}
	}
}

// TestNATSCommandErrors: a deployment that cannot be reached is an error of
// every command (exit 4, naming the URL), and flag errors are usage errors
// that name the flag at fault.
func TestNATSCommandErrors(t *testing.T) {
	t.Parallel()
	// Nothing listens there: a closed port of a server that has stopped.
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go s.Start()
	require.True(t, s.ReadyForConnections(natsWait))
	gone := s.ClientURL()
	s.Shutdown()
	s.WaitForShutdown()

	for _, args := range [][]string{
		{"publish", "--nats", gone, "--config", td("registry.json")},
		{"worker", "--nats", gone},
		{"run", "--nats", gone, "--action", "math.sum", "--input", `{"numbers":[1]}`},
		{"serve", "--addr", "127.0.0.1:0", "--nats", gone},
		{"rep", "--nats", gone},
		{"audit", "export", "--nats", gone},
		{"audit", "verify", "--nats", gone},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			r := wasmgate(t, "", args...)
			assert.Equal(t, exitInternal, r.code, r.stderr)
			assert.Contains(t, r.stderr, "nats "+gone+": nats: no servers available for connection")
			assert.Empty(t, r.stdout)
		})
	}

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		// rep's runner released what it had opened through a nil func.
		{"rep with a missing config", []string{"rep", "--config", "nope.json"}, "wasmgate rep: --config: registry: open nope.json: no such file or directory\n"},
		{"rep --nats with no concurrency", []string{"rep", "--nats", gone, "--concurrency", "0"}, "wasmgate rep: --concurrency must be at least 1\n"},
		{"rep --nats with negative concurrency", []string{"rep", "--nats", gone, "--concurrency", "-1"}, "wasmgate rep: --concurrency must be at least 1\n"},
		// The flag at fault, not -nats (a second parse without it).
		{"audit verify --nats with an unknown flag", []string{"audit", "verify", "--nats", gone, "--bogus"}, "wasmgate audit verify: flag provided but not defined: -bogus\n"},
		{"audit verify with no file", []string{"audit", "verify"}, "wasmgate audit verify: want exactly one audit log file, got 0 arguments\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", tt.args...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.True(t, strings.HasSuffix(r.stderr, tt.want), "stderr ends with %q:\n%s", tt.want, r.stderr)
			assert.LessOrEqual(t, strings.Count(r.stderr, "Usage:"), 1, "usage printed once at most:\n%s", r.stderr)
			assert.Empty(t, r.stdout)
		})
	}
}
