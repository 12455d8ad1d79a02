package jsonrpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/jsonrpc"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// fakeExecutor is an executor written in Go, so that every outcome is at
// hand without a Wasm module.
type fakeExecutor struct {
	id  string
	run func(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error)
}

func (f fakeExecutor) Manifest() sandbox.Manifest {
	return sandbox.Manifest{ExecutorID: f.id, Version: "1.0.0", Limits: sandbox.DefaultLimits()}
}
func (f fakeExecutor) ModuleDigest() string { return strings.Repeat("0", 64) }
func (f fakeExecutor) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	return f.run(ctx, in)
}

func echo(_ context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	return sandbox.Outcome{Kind: sandbox.Completed, Output: in.Bytes}, nil
}

func hang(ctx context.Context, _ sandbox.Input) (sandbox.Outcome, error) {
	<-ctx.Done()
	return sandbox.Outcome{}, ctx.Err()
}

func outcome(kind sandbox.OutcomeKind) func(context.Context, sandbox.Input) (sandbox.Outcome, error) {
	return func(context.Context, sandbox.Input) (sandbox.Outcome, error) {
		return sandbox.Outcome{Kind: kind, Message: kind.String()}, nil
	}
}

// registry routes "act.NAME" to each executor NAME.
func registry(t *testing.T, execs map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error)) *pipeline.Registry {
	t.Helper()
	reg := pipeline.NewRegistry()
	for name, run := range execs {
		require.NoError(t, reg.AddExecutor(name, fakeExecutor{id: name, run: run}))
		require.NoError(t, reg.AddAction("act."+name, pipeline.Route{Executor: name, Version: "*"}))
	}
	return reg
}

// session is a Server serving over pipes.
type session struct {
	t      *testing.T
	in     *io.PipeWriter
	lines  chan string
	served chan error
	cancel context.CancelFunc
	id     int
}

func serve(t *testing.T, cfg jsonrpc.Config) *session {
	t.Helper()
	srv, err := jsonrpc.NewServer(cfg)
	require.NoError(t, err)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{t: t, in: inW, lines: make(chan string, 16), served: make(chan error, 1), cancel: cancel}
	go func() {
		err := srv.Serve(ctx, inR, outW)
		outW.Close()
		s.served <- err
	}()
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
	})
	return s
}

func (s *session) write(line string) {
	s.t.Helper()
	_, err := io.WriteString(s.in, line+"\n")
	require.NoError(s.t, err)
}

func (s *session) next() map[string]any {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		require.True(s.t, ok, "the server closed its output")
		var m map[string]any
		require.NoError(s.t, json.Unmarshal([]byte(l), &m), l)
		return m
	case <-time.After(10 * time.Second):
		s.t.Fatal("no response")
	}
	return nil
}

// call sends a request and returns its result, or its error object.
func (s *session) call(method string, params any) (result, rpcErr map[string]any) {
	s.t.Helper()
	s.id++
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params})
	require.NoError(s.t, err)
	s.write(string(b))
	m := s.next()
	require.Equal(s.t, float64(s.id), m["id"])
	r, _ := m["result"].(map[string]any)
	e, _ := m["error"].(map[string]any)
	return r, e
}

func (s *session) result(method string, params any) map[string]any {
	s.t.Helper()
	r, e := s.call(method, params)
	require.Nil(s.t, e)
	return r
}

// finish polls a run until it has finished.
func (s *session) finish(id string) map[string]any {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p := s.result("Runtime.Poll", map[string]any{"run_id": id})
		switch p["status"] {
		case "completed", "failed":
			return p
		}
		require.True(s.t, time.Now().Before(deadline), "run %s is still %s", id, p["status"])
		time.Sleep(2 * time.Millisecond)
	}
}

// irDoc is a Flow IR document with these nodes and edges.
func irDoc(nodes, edges string) json.RawMessage {
	return json.RawMessage(`{"version":"1.0.0","flow":{"name":"t","timeout_ms":0},"constants":{"policyRef":"p","policy":{}},` +
		`"inputs_schema":{},"graph":{"nodes":` + nodes + `,"edges":` + edges + `},` +
		`"metadata":{"generated_at":"2026-11-24T00:00:00Z","source_file":"t.wdl"}}`)
}

// oneStep is StartRun's params for a flow of one step of kind, retried
// retries times.
func oneStep(kind string, retries int) map[string]any {
	return map[string]any{"ir": irDoc(fmt.Sprintf(`[{"id":"a","type":%q,"with":{"x":1},"timeout_ms":0,"retry":{"max":%d,"backoff_ms":1}}]`, kind, retries), `[]`)}
}

func TestRetriableVerdicts(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){
		"failed":  outcome(sandbox.Failed),
		"timeout": outcome(sandbox.Timeout),
		"fuel":    outcome(sandbox.FuelExhausted),
		"memory":  outcome(sandbox.MemoryExhausted),
		"notjson": outcome(sandbox.OutputNotJSON),
		"notatool": func(context.Context, sandbox.Input) (sandbox.Outcome, error) {
			return sandbox.Outcome{Kind: sandbox.Failed, Invalid: true, Message: "TOOL_INVALID: the factory returned 3"}, nil
		},
		"engine": func(context.Context, sandbox.Input) (sandbox.Outcome, error) {
			return sandbox.Outcome{}, errors.New("engine broke")
		},
	})
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink())})
	tests := []struct {
		kind      string
		attempt   float64
		retriable bool
		codes     []any
	}{
		{"act.failed", 3, true, []any{"EXECUTOR_EXCEPTION"}},
		{"act.notjson", 3, true, []any{"EXECUTOR_EXCEPTION", "OUTPUT_NOT_JSON"}},
		{"act.timeout", 3, true, []any{"EXECUTOR_TIMEOUT"}},
		{"act.notatool", 3, true, []any{"EXECUTOR_EXCEPTION"}},
		{"act.engine", 3, true, []any{"EXECUTOR_EXCEPTION"}},
		{"act.fuel", 1, false, []any{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}},
		{"act.memory", 1, false, []any{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			r := s.result("Runtime.StartRun", oneStep(tt.kind, 2))
			p := s.finish(r["run_id"].(string))
			require.Equal(t, "failed", p["status"])
			e := p["error"].(map[string]any)
			assert.Equal(t, float64(2001), e["code"])
			data := e["data"].(map[string]any)
			assert.Equal(t, "a", data["step_id"])
			assert.Equal(t, tt.attempt, data["attempt"])
			assert.Equal(t, tt.retriable, data["retriable"])
			details := data["details"].(map[string]any)
			assert.Equal(t, "step_failed", details["reason"])
			assert.Equal(t, tt.codes, details["result"].(map[string]any)["reason_codes"])
		})
	}
}

// brokenSink refuses every record.
type brokenSink struct{}

func (brokenSink) Append(context.Context, audit.Record) (audit.Record, error) {
	return audit.Record{}, errors.New("disk full")
}
func (brokenSink) Close() error { return nil }

func TestAuditFailureIsNotRetried(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo})
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, brokenSink{})})
	r := s.result("Runtime.StartRun", oneStep("act.echo", 2))
	p := s.finish(r["run_id"].(string))
	require.Equal(t, "failed", p["status"])
	data := p["error"].(map[string]any)["data"].(map[string]any)
	assert.Equal(t, float64(1), data["attempt"])
	assert.Equal(t, false, data["retriable"])
	assert.Equal(t, []any{"AUDIT_LOG_FAILED"}, data["details"].(map[string]any)["result"].(map[string]any)["reason_codes"])
	// No output of a step whose record was not written.
	assert.Equal(t, map[string]any{}, p["summary"].(map[string]any)["outputs"])
}

func TestFlakyStepRecovers(t *testing.T) {
	var calls atomic.Int32
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){
		"flaky": func(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
			if calls.Add(1) == 1 {
				return sandbox.Outcome{Kind: sandbox.Failed, Message: "first time"}, nil
			}
			return echo(ctx, in)
		},
	})
	sink := audit.NewMemorySink()
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, sink)})
	r := s.result("Runtime.StartRun", oneStep("act.flaky", 1))
	p := s.finish(r["run_id"].(string))
	require.Equal(t, "completed", p["status"])
	sum := p["summary"].(map[string]any)
	assert.Equal(t, float64(2), sum["attempts"])
	assert.Equal(t, float64(0), sum["failed_steps"])
	assert.Equal(t, float64(1), sum["completed_steps"])
	assert.Equal(t, map[string]any{"a": map[string]any{"x": float64(1)}}, sum["outputs"])
	var statuses []string
	for _, rec := range sink.Verdicts() {
		assert.Equal(t, r["trace_id"], rec.TraceID)
		statuses = append(statuses, rec.Status)
	}
	assert.Equal(t, []string{"FAILED", "SUCCESS"}, statuses)
}

func TestRequestLines(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo})
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink()), MaxRequestBytes: 100})
	s.write(`{"jsonrpc":"2.0","id":1,"method":"Runtime.Health","params":{"pad":"` + strings.Repeat("x", 200) + `"}}`)
	m := s.next()
	assert.Nil(t, m["id"])
	assert.Equal(t, map[string]any{"code": float64(3001), "message": "request line exceeds 100 bytes; it was not read"}, m["error"])
	// The session goes on; CRLF line ends are accepted.
	s.write("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"Runtime.Health\"}\r")
	assert.Equal(t, float64(2), s.next()["id"])
	// A last line without a newline is answered before the end.
	io.WriteString(s.in, `{"jsonrpc":"2.0","id":3,"method":"Runtime.Health"}`)
	s.in.Close()
	assert.Equal(t, float64(3), s.next()["id"])
	require.NoError(t, <-s.served)
}

func TestRetainedRuns(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo})
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink()), RetainedRuns: 2})
	var ids []string
	for range 3 {
		r := s.result("Runtime.StartRun", oneStep("act.echo", 0))
		ids = append(ids, r["run_id"].(string))
		s.finish(ids[len(ids)-1])
	}
	_, e := s.call("Runtime.Poll", map[string]any{"run_id": ids[0]})
	assert.Equal(t, float64(-32602), e["code"])
	assert.Equal(t, "completed", s.finish(ids[1])["status"])
	h := s.result("Runtime.Health", nil)
	assert.Equal(t, float64(2), h["details"].(map[string]any)["runs_retained"])
	// A forgotten run's id may be used again.
	r := s.result("Runtime.StartRun", map[string]any{"ir": oneStep("act.echo", 0)["ir"], "options": map[string]any{"run_id": ids[0]}})
	assert.Equal(t, ids[0], r["run_id"])
}

func TestDefaultRunID(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo})
	t.Run("first run without an id", func(t *testing.T) {
		s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink()), DefaultRunID: "parent-run"})
		assert.Equal(t, "parent-run", s.result("Runtime.StartRun", oneStep("act.echo", 0))["run_id"])
		assert.NotEqual(t, "parent-run", s.result("Runtime.StartRun", oneStep("act.echo", 0))["run_id"])
	})
	t.Run("taken by the client", func(t *testing.T) {
		s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink()), DefaultRunID: "parent-run"})
		params := oneStep("act.echo", 0)
		params["options"] = map[string]any{"run_id": "parent-run"}
		assert.Equal(t, "parent-run", s.result("Runtime.StartRun", params)["run_id"])
		assert.NotEqual(t, "parent-run", s.result("Runtime.StartRun", oneStep("act.echo", 0))["run_id"])
	})
}

func TestNotificationStartsARun(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo})
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink())})
	s.write(`{"jsonrpc":"2.0","method":"Runtime.StartRun","params":{"ir":` + string(oneStep("act.echo", 0)["ir"].(json.RawMessage)) + `,"options":{"run_id":"quiet"}}}`)
	s.write(`{"jsonrpc":"2.0","method":"Runtime.StartRun","params":["wrong"]}`)
	assert.Equal(t, "completed", s.finish("quiet")["status"])
}

func TestServeCancelledStopsRuns(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"hang": hang})
	sink := audit.NewMemorySink()
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, sink)})
	id := s.result("Runtime.StartRun", oneStep("act.hang", 0))["run_id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	// Once its step has started, the step is audited whatever happens.
	for len(s.result("Runtime.Poll", map[string]any{"run_id": id})["events"].([]any)) < 2 {
		require.True(t, time.Now().Before(deadline))
		time.Sleep(2 * time.Millisecond)
	}
	s.cancel()
	select {
	case err := <-s.served:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	// The interrupted step was audited before Serve returned.
	recs := sink.Verdicts()
	require.Len(t, recs, 1)
	assert.Equal(t, "BLOCKED", recs[0].Status)
	assert.Equal(t, []string{"EXECUTOR_TIMEOUT"}, recs[0].ReasonCodes)
}

func TestConcurrencyLimit(t *testing.T) {
	var inFlight, most atomic.Int32
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){
		"busy": func(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
			return echo(ctx, in)
		},
	})
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink()), Concurrency: 3})
	assert.Equal(t, float64(3), s.result("Runtime.Capabilities", nil)["limits"].(map[string]any)["concurrency"])
	var ids []string
	for range 12 {
		ids = append(ids, s.result("Runtime.StartRun", oneStep("act.busy", 0))["run_id"].(string))
	}
	for _, id := range ids {
		assert.Equal(t, "completed", s.finish(id)["status"])
	}
	assert.LessOrEqual(t, most.Load(), int32(3))
}

func TestPollSince(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo})
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink())})
	id := s.result("Runtime.StartRun", oneStep("act.echo", 0))["run_id"].(string)
	all := s.finish(id)
	events := all["events"].([]any)
	last := all["last_seq"].(float64)
	require.Equal(t, float64(len(events)), last)
	tail := s.result("Runtime.Poll", map[string]any{"run_id": id, "since": 2})["events"].([]any)
	assert.Equal(t, events[2:], tail)
	assert.Equal(t, []any{}, s.result("Runtime.Poll", map[string]any{"run_id": id, "since": last + 5})["events"])
	_, e := s.call("Runtime.Poll", map[string]any{"run_id": id, "since": -1})
	assert.Equal(t, float64(-32602), e["code"])
}

func TestNewServerRefuses(t *testing.T) {
	p := pipeline.New(pipeline.NewRegistry(), audit.NewDiscardSink())
	for _, tt := range []struct {
		cfg jsonrpc.Config
		msg string
	}{
		{jsonrpc.Config{}, "Config.Pipeline is required"},
		{jsonrpc.Config{Pipeline: p, Concurrency: -1}, "concurrency must be positive"},
		{jsonrpc.Config{Pipeline: p, DefaultTraceID: "x"}, `default trace id "x" is not a UUID`},
		{jsonrpc.Config{Pipeline: p, DefaultRunID: "a b"}, `default run id "a b" must be`},
		{jsonrpc.Config{Pipeline: p, FlowTimeoutCap: -time.Second}, "the flow timeout cap must not be negative"},
	} {
		_, err := jsonrpc.NewServer(tt.cfg)
		assert.ErrorContains(t, err, tt.msg)
	}
}

// TestHammer interleaves starts, polls and cancels with runs executing and
// waiting at once, for the race detector.
func TestHammer(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo, "hang": hang})
	sink := audit.NewMemorySink()
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, sink), Concurrency: 2})
	var ids []string
	for i := range 20 {
		kind := "act.echo"
		if i%4 == 0 {
			kind = "act.hang"
		}
		ids = append(ids, s.result("Runtime.StartRun", oneStep(kind, 0))["run_id"].(string))
		s.result("Runtime.Health", nil)
	}
	for i, id := range ids {
		if i%4 == 0 {
			r := s.result("Runtime.Cancel", map[string]any{"run_id": id})
			assert.Equal(t, map[string]any{"ok": true, "run_id": id, "status": "failed", "cancelled": true}, r)
		}
	}
	for i, id := range ids {
		p := s.finish(id)
		if i%4 == 0 {
			assert.Equal(t, "failed", p["status"])
			assert.Equal(t, float64(3001), p["error"].(map[string]any)["code"])
		} else {
			assert.Equal(t, "completed", p["status"])
		}
	}
	s.in.Close()
	require.NoError(t, <-s.served)
}

func TestStartRunOptions(t *testing.T) {
	reg := registry(t, map[string]func(context.Context, sandbox.Input) (sandbox.Outcome, error){"echo": echo})
	sink := audit.NewMemorySink()
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, sink)})
	// A trace id without dashes (Python's uuid4().hex) is read as the UUID
	// it is; allow_shell, a permission no step uses, is accepted.
	params := oneStep("act.echo", 0)
	params["options"] = map[string]any{"trace_id": "0B5E7C4E8A434D0C9A556F1E1C2B3A4D", "allow_shell": true}
	r := s.result("Runtime.StartRun", params)
	assert.Equal(t, "0b5e7c4e-8a43-4d0c-9a55-6f1e1c2b3a4d", r["trace_id"])
	assert.Equal(t, "completed", s.finish(r["run_id"].(string))["status"])
	assert.Equal(t, "0b5e7c4e-8a43-4d0c-9a55-6f1e1c2b3a4d", sink.Verdicts()[0].TraceID)
	params["options"] = map[string]any{"trace_id": "0b5e7c4e8a434d0c9a556f1e1c2b3a4"}
	_, e := s.call("Runtime.StartRun", params)
	assert.Equal(t, float64(-32602), e["code"])
}

// typedExecutor declares the sum guest's schemas and answers output.
type typedExecutor struct{ output string }

func (e typedExecutor) Manifest() sandbox.Manifest {
	return sandbox.Manifest{ExecutorID: "typed", Version: "1.0.0", Limits: sandbox.DefaultLimits(),
		InputSchema:  json.RawMessage(`{"type":"object","required":["numbers"],"properties":{"numbers":{"type":"array","items":{"type":"number"}}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["sum"],"properties":{"sum":{"type":"number"}}}`)}
}
func (e typedExecutor) ModuleDigest() string { return strings.Repeat("0", 64) }
func (e typedExecutor) Execute(context.Context, sandbox.Input) (sandbox.Outcome, error) {
	return sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(e.output)}, nil
}

// TestSchemaVerdicts: a step whose payload breaks its executor's input
// schema fails the run with REP's Validation error 1003 (in "payload"); an
// output that breaks the output schema is a step failure (2001). Neither is
// retried.
func TestSchemaVerdicts(t *testing.T) {
	reg := pipeline.NewRegistry()
	require.NoError(t, reg.AddExecutor("typed", typedExecutor{output: `{"sum":"3"}`}))
	require.NoError(t, reg.AddAction("act.typed", pipeline.Route{Executor: "typed", Version: "*"}))
	s := serve(t, jsonrpc.Config{Pipeline: pipeline.New(reg, audit.NewDiscardSink())})
	tests := []struct {
		name, with string
		code       float64
		message    string
		codes      []any
		in         any
	}{
		{"input", `{"numbers":[1,"2"]}`, 1003, `step "a" failed on attempt 1: payload does not match the input schema at /numbers/1: got string, want number`, []any{"INPUT_SCHEMA_INVALID"}, "payload"},
		{"output", `{"numbers":[1,2]}`, 2001, `step "a" failed on attempt 1: output does not match the output schema at /sum: got string, want number`, []any{"OUTPUT_SCHEMA_INVALID"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ir := irDoc(`[{"id":"a","type":"act.typed","with":`+tt.with+`,"timeout_ms":0,"retry":{"max":2,"backoff_ms":1}}]`, `[]`)
			r := s.result("Runtime.StartRun", map[string]any{"ir": ir})
			p := s.finish(r["run_id"].(string))
			require.Equal(t, "failed", p["status"])
			e := p["error"].(map[string]any)
			assert.Equal(t, tt.code, e["code"])
			assert.Equal(t, tt.message, e["message"])
			data := e["data"].(map[string]any)
			assert.Equal(t, "a", data["step_id"])
			assert.Equal(t, float64(1), data["attempt"], "not retried")
			assert.Equal(t, false, data["retriable"])
			details := data["details"].(map[string]any)
			assert.Equal(t, "step_failed", details["reason"])
			assert.Equal(t, tt.in, details["in"])
			assert.Equal(t, tt.codes, details["result"].(map[string]any)["reason_codes"])
		})
	}
}
