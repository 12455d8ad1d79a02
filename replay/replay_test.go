package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// one and two are the engines most tests replay on. Their executors are
// fakes, registered by a WithRegistry function, which load nothing on the
// engine: it only names the runs.
const (
	one = sandbox.EngineWazero
	two = sandbox.EngineWazeroInterp
)

// on returns a runtime on each engine, serving the registry that registry
// builds on it; they are closed when the test ends.
func on(t *testing.T, registry func(context.Context, sandbox.Engine) (*pipeline.Registry, error), engines ...sandbox.EngineName) []*wasmgate.Runtime {
	t.Helper()
	var out []*wasmgate.Runtime
	for _, e := range engines {
		rt, err := wasmgate.New(context.Background(), wasmgate.WithEngine(e), wasmgate.WithRegistry(registry))
		require.NoError(t, err)
		t.Cleanup(func() { _ = rt.Close(context.Background()) })
		out = append(out, rt)
	}
	return out
}

// scriptedExecutor answers call n (from 1, counted across goroutines) with
// script(n, input).
type scriptedExecutor struct {
	id, digest string
	script     func(n int64, in sandbox.Input) (sandbox.Outcome, error)
	calls      atomic.Int64
}

func (s *scriptedExecutor) Manifest() sandbox.Manifest {
	return sandbox.Manifest{ExecutorID: s.id, Version: "1.0.0"}
}
func (s *scriptedExecutor) ModuleDigest() string { return s.digest }
func (s *scriptedExecutor) Execute(_ context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	return s.script(s.calls.Add(1), in)
}

var (
	digestA = strings.Repeat("aa", 32)
	digestB = strings.Repeat("bb", 32)
)

// echoing returns the input with 7 fuel, every time.
func echoing(_ int64, in sandbox.Input) (sandbox.Outcome, error) {
	return sandbox.Outcome{Kind: sandbox.Completed, Output: in.Bytes, FuelUsed: 7}, nil
}

// oneAction is a Registry function serving action "x" with the executor
// that exec returns for the engine.
func oneAction(exec func(sandbox.EngineName) pipeline.Executor) func(context.Context, sandbox.Engine) (*pipeline.Registry, error) {
	return func(_ context.Context, e sandbox.Engine) (*pipeline.Registry, error) {
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor("x", exec(e.Name())); err != nil {
			return nil, err
		}
		return reg, reg.AddAction("x", pipeline.Route{Executor: "x", Version: "*"})
	}
}

func corpusOf(lines ...string) []Request {
	var out []Request
	for i, l := range lines {
		action, payload, _ := strings.Cut(l, " ")
		out = append(out, Request{Line: 2 * (i + 1), Request: pipeline.ActionRequest{Action: action, Payload: json.RawMessage(payload)}})
	}
	return out
}

func digestOf(t *testing.T, payload string) string {
	t.Helper()
	c, err := audit.Canonicalize([]byte(payload))
	require.NoError(t, err)
	return audit.Digest(c.Bytes)
}

func TestReplayDeterministicExecutorAgrees(t *testing.T) {
	exec := &scriptedExecutor{id: "x", digest: digestA, script: echoing}
	var progress []string
	rep, err := Run(context.Background(), Config{
		Corpus:   corpusOf(`x {"b":1, "a":2}`, `x [1,2,3]`, `nope {}`, `x {"a":NaN}`),
		Runtimes: on(t, oneAction(func(sandbox.EngineName) pipeline.Executor { return exec }), one, two),
		Progress: func(done, total int) { progress = append(progress, fmt.Sprintf("%d/%d", done, total)) },
	})
	require.NoError(t, err)

	assert.False(t, rep.Diverged())
	assert.Empty(t, rep.Divergences)
	assert.NotNil(t, rep.Divergences, "an empty list, not null, in JSON")
	assert.Equal(t, Summary{
		Requests: 4, Runs: DefaultRuns, Engines: []sandbox.EngineName{one, two}, Executions: 24,
		Agreeing: 4,
	}, rep.Summary)
	assert.Equal(t, int64(2*2*DefaultRuns), exec.calls.Load(), "the executable requests ran 3 times on each engine")
	assert.Equal(t, []string{"1/4", "2/4", "3/4", "4/4"}, progress)

	out := digestOf(t, `{"a":2,"b":1}`)
	assert.Equal(t, RequestResult{
		Line: 2, Action: "x", TraceID: "00000000-0000-4000-8000-000000000002", InputDigest: out,
		Verdict: Agrees, Status: pipeline.StatusSuccess, ReasonCodes: []pipeline.ReasonCode{}, OutputDigest: &out,
		FuelUsed: 7, ModuleDigest: digestA,
	}, rep.Requests[0])
	assert.Equal(t, RequestResult{
		Line: 6, Action: "nope", TraceID: "00000000-0000-4000-8000-000000000006", InputDigest: digestOf(t, `{}`),
		Verdict: Agrees, Status: pipeline.StatusBlocked, ReasonCodes: []pipeline.ReasonCode{pipeline.ActionUnknown},
	}, rep.Requests[2])
	assert.Equal(t, []pipeline.ReasonCode{pipeline.NonJSONPayload}, rep.Requests[3].ReasonCodes)
	assert.Empty(t, rep.Requests[3].InputDigest)
}

func TestReplayNamesTheDivergentField(t *testing.T) {
	tests := []struct {
		name   string
		script func(n int64, in sandbox.Input) (sandbox.Outcome, error)
		field  string
		values []string
	}{
		{"output changes between calls", func(n int64, _ sandbox.Input) (sandbox.Outcome, error) {
			return sandbox.Outcome{Kind: sandbox.Completed, Output: fmt.Appendf(nil, `{"n":%d}`, n)}, nil
		}, "output_digest", nil},
		{"fuel changes between calls", func(n int64, in sandbox.Input) (sandbox.Outcome, error) {
			return sandbox.Outcome{Kind: sandbox.Completed, Output: in.Bytes, FuelUsed: uint64(100 + n)}, nil
		}, "fuel_used", []string{"101", "102"}},
		{"only the message changes", func(n int64, _ sandbox.Input) (sandbox.Outcome, error) {
			return sandbox.Outcome{Kind: sandbox.Failed, Message: fmt.Sprintf("attempt %d failed", n)}, nil
		}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec := &scriptedExecutor{id: "x", digest: digestA, script: tt.script}
			rep, err := Run(context.Background(), Config{
				Corpus:   corpusOf(`x {"k":1}`),
				Runtimes: on(t, oneAction(func(sandbox.EngineName) pipeline.Executor { return exec }), one),
				Runs:     2,
			})
			require.NoError(t, err)
			if tt.field == "" {
				assert.False(t, rep.Diverged(), "the message is for the caller, never compared: %v", rep.Divergences)
				return
			}
			require.True(t, rep.Diverged())
			require.Len(t, rep.Divergences, 1, "only the field that changed: %v", rep.Divergences)
			d := rep.Divergences[0]
			assert.Equal(t, DivergenceRuns, d.Kind)
			assert.Equal(t, 2, d.Line)
			assert.Equal(t, "x", d.Action)
			assert.Equal(t, TraceID(2), d.TraceID)
			assert.Equal(t, tt.field, d.Field)
			require.Len(t, d.Values, 2)
			var sources []Source
			var values []string
			for _, v := range d.Values {
				require.Len(t, v.Sources, 1)
				sources = append(sources, v.Sources[0])
				values = append(values, string(v.Value))
			}
			assert.ElementsMatch(t, []Source{{Engine: one, Run: 1}, {Engine: one, Run: 2}}, sources)
			if tt.values != nil {
				// Which run made which call depends on scheduling.
				assert.ElementsMatch(t, tt.values, values)
			}
			assert.Equal(t, Summary{Requests: 1, Runs: 2, Engines: []sandbox.EngineName{one}, Executions: 2, Divergent: 1}, rep.Summary)
			assert.Equal(t, Diverges, rep.Requests[0].Verdict)
		})
	}
}

func TestReplayAcrossEngines(t *testing.T) {
	// The executor each engine's registry holds differs in its output.
	rep, err := Run(context.Background(), Config{
		Corpus: corpusOf(`x {"k":1}`),
		Runtimes: on(t, oneAction(func(e sandbox.EngineName) pipeline.Executor {
			return &scriptedExecutor{id: "x", digest: digestA, script: func(int64, sandbox.Input) (sandbox.Outcome, error) {
				return sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(`"` + string(e) + `"`)}, nil
			}}
		}), one, two),
	})
	require.NoError(t, err)
	outOne, outTwo := digestOf(t, `"wazero"`), digestOf(t, `"wazero-interp"`)
	assert.Equal(t, []Divergence{{
		Kind: DivergenceRuns, Line: 2, Action: "x", TraceID: TraceID(2), Field: "output_digest",
		Values: []DivergentValue{
			{Value: json.RawMessage(`"` + outOne + `"`), Sources: []Source{{Engine: one, Run: 1}, {Engine: one, Run: 2}, {Engine: one, Run: 3}}},
			{Value: json.RawMessage(`"` + outTwo + `"`), Sources: []Source{{Engine: two, Run: 1}, {Engine: two, Run: 2}, {Engine: two, Run: 3}}},
		},
	}}, rep.Divergences)
	assert.Equal(t, fmt.Sprintf(`line 2 (x): output_digest differs: "%s" on wazero runs 1-3; "%s" on wazero-interp runs 1-3`, outOne, outTwo), rep.Divergences[0].String())

	// A module that differs per engine is a divergence of its own.
	rep, err = Run(context.Background(), Config{
		Corpus: corpusOf(`x {"k":1}`),
		Runs:   1,
		Runtimes: on(t, oneAction(func(e sandbox.EngineName) pipeline.Executor {
			d := map[sandbox.EngineName]string{one: digestA, two: digestB}[e]
			return &scriptedExecutor{id: "x", digest: d, script: echoing}
		}), one, two),
	})
	require.NoError(t, err)
	require.Len(t, rep.Divergences, 1)
	assert.Equal(t, fmt.Sprintf(`line 2 (x): module_digest differs: "%s" on wazero run 1; "%s" on wazero-interp run 1`, digestA, digestB), rep.Divergences[0].String())
}

func TestReplayTimeoutsAreTimingDependent(t *testing.T) {
	timeout := func(n int64, _ sandbox.Input) (sandbox.Outcome, error) {
		return sandbox.Outcome{Kind: sandbox.Timeout, Message: "timeout_ms elapsed", FuelUsed: uint64(n * 1000)}, nil
	}
	rep, err := Run(context.Background(), Config{
		Corpus: corpusOf(`x 1`),
		Runtimes: on(t, oneAction(func(sandbox.EngineName) pipeline.Executor {
			return &scriptedExecutor{id: "x", digest: digestA, script: timeout}
		}), one, two),
	})
	require.NoError(t, err)
	assert.False(t, rep.Diverged(), "fuel at a timeout is not compared: %v", rep.Divergences)
	assert.Equal(t, 1, rep.Summary.TimingDependent)
	assert.Equal(t, 0, rep.Summary.Agreeing)
	assert.Equal(t, TimingDependent, rep.Requests[0].Verdict)
	assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorTimeout}, rep.Requests[0].ReasonCodes)

	// A timeout on one run and not on another is a divergence: status and
	// reasons are compared even for timeouts.
	rep, err = Run(context.Background(), Config{
		Corpus: corpusOf(`x 1`),
		Runs:   2,
		Runtimes: on(t, oneAction(func(sandbox.EngineName) pipeline.Executor {
			return &scriptedExecutor{id: "x", digest: digestA, script: func(n int64, in sandbox.Input) (sandbox.Outcome, error) {
				if n == 1 {
					return timeout(n, in)
				}
				return sandbox.Outcome{Kind: sandbox.Completed, FuelUsed: 5}, nil
			}}
		}), one),
	})
	require.NoError(t, err)
	var fields []string
	for _, d := range rep.Divergences {
		fields = append(fields, d.Field)
	}
	assert.Equal(t, []string{"status", "reason_codes"}, fields, "no output either way; fuel compared among the runs that did not time out")
	assert.Equal(t, 1, rep.Summary.Divergent)
}

func TestReplayAgainstAuditLog(t *testing.T) {
	ctx := context.Background()
	upper := func(_ int64, in sandbox.Input) (sandbox.Outcome, error) {
		return sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(strings.ToUpper(string(in.Bytes))), FuelUsed: 3}, nil
	}
	echo := func(n int64, in sandbox.Input) (sandbox.Outcome, error) { return echoing(n, in) }

	// What was audited: actions x and y through a registry whose x was
	// "upper" and y "echo".
	audited := pipeline.NewRegistry()
	require.NoError(t, audited.AddExecutor("x", &scriptedExecutor{id: "x", digest: digestA, script: upper}))
	require.NoError(t, audited.AddExecutor("y", &scriptedExecutor{id: "y", digest: digestA, script: echo}))
	require.NoError(t, audited.AddAction("x", pipeline.Route{Executor: "x", Version: "*"}))
	require.NoError(t, audited.AddAction("y", pipeline.Route{Executor: "y", Version: "*"}))
	sink := audit.NewMemorySink()
	p := pipeline.New(audited, sink)
	for _, req := range []pipeline.ActionRequest{
		{Action: "x", Payload: json.RawMessage(`"a"`)},
		{Action: "y", Payload: json.RawMessage(`"b"`)},
		{Action: "x", Payload: json.RawMessage(`"not replayed"`)},
		{Action: "y", Payload: json.RawMessage(`"a"`)}, // same input as seq 1, another action
		{Action: "x", Payload: json.RawMessage(`{"a":NaN}`)},
	} {
		_, err := p.Execute(ctx, req)
		require.NoError(t, err)
	}
	records := sink.Records() // attempts and verdicts, as a log holds them
	verdicts := sink.Verdicts()

	// The replay: x is now served by different code (echo, another module).
	replayRegistry := func(_ context.Context, _ sandbox.Engine) (*pipeline.Registry, error) {
		reg := pipeline.NewRegistry()
		_ = reg.AddExecutor("x", &scriptedExecutor{id: "x", digest: digestB, script: echo})
		_ = reg.AddExecutor("y", &scriptedExecutor{id: "y", digest: digestA, script: echo})
		_ = reg.AddAction("x", pipeline.Route{Executor: "x", Version: "*"})
		return reg, reg.AddAction("y", pipeline.Route{Executor: "y", Version: "*"})
	}
	rep, err := Run(ctx, Config{
		Corpus:   corpusOf(`x "a"`, `y "b"`, `y  "b"`, `x {"a":NaN}`),
		Runtimes: on(t, replayRegistry, one),
		Runs:     2,
		Audit:    records,
	})
	require.NoError(t, err)

	assert.Equal(t, &AuditSummary{Records: 5, Checked: 2, Matched: 1, Mismatched: 1, NotInCorpus: 3}, rep.Summary.Audit)
	assert.Equal(t, 4, rep.Summary.Agreeing, "the runs agree among themselves")
	assert.True(t, rep.Diverged())
	a, upperA := digestOf(t, `"a"`), digestOf(t, `"A"`)
	// Seq 1 is the attempt of the first request, seq 2 its verdict.
	assert.Equal(t, []Divergence{
		{Kind: DivergenceAudit, Line: 2, Action: "x", TraceID: TraceID(2), AuditSeq: 2, Field: "output_digest", Values: []DivergentValue{
			{Value: json.RawMessage(`"` + upperA + `"`), Sources: []Source{{AuditSeq: 2}}},
			{Value: json.RawMessage(`"` + a + `"`), Sources: []Source{{Engine: one, Run: 1}, {Engine: one, Run: 2}}},
		}},
		{Kind: DivergenceAudit, Line: 2, Action: "x", TraceID: TraceID(2), AuditSeq: 2, Field: "module_digest", Values: []DivergentValue{
			{Value: json.RawMessage(`"` + digestA + `"`), Sources: []Source{{AuditSeq: 2}}},
			{Value: json.RawMessage(`"` + digestB + `"`), Sources: []Source{{Engine: one, Run: 1}, {Engine: one, Run: 2}}},
		}},
	}, rep.Divergences)
	assert.Equal(t, fmt.Sprintf(`line 2 (x) vs audit seq 2: module_digest differs: "%s" in audit seq 2; "%s" on wazero runs 1-2`, digestA, digestB), rep.Divergences[1].String())
	assert.Equal(t, []AuditRef{
		{Seq: 6, Action: "x", TraceID: verdicts[2].TraceID, InputDigest: digestOf(t, `"not replayed"`)},
		{Seq: 8, Action: "y", TraceID: verdicts[3].TraceID, InputDigest: a},
		{Seq: 9, Action: "x", TraceID: verdicts[4].TraceID, InputDigest: ""},
	}, rep.NotInCorpus, "matched on action and input digest; a payload without canonical form matches nothing")

	// An empty log is checked (and holds nothing); no log is no check.
	rep, err = Run(ctx, Config{Corpus: corpusOf(`y "b"`), Runtimes: on(t, replayRegistry, one), Audit: []audit.Record{}})
	require.NoError(t, err)
	assert.Equal(t, &AuditSummary{}, rep.Summary.Audit)
	rep, err = Run(ctx, Config{Corpus: corpusOf(`y "b"`), Runtimes: on(t, replayRegistry, one)})
	require.NoError(t, err)
	assert.Nil(t, rep.Summary.Audit)
}

// envEcho is a tool that takes an env (as JS factories do) and answers
// with it.
type envEcho struct{ scriptedExecutor }

func (e *envEcho) ExecuteWithEnv(_ context.Context, _ sandbox.Input, env []byte) (sandbox.Outcome, error) {
	if env == nil {
		env = []byte("null")
	}
	return sandbox.Outcome{Kind: sandbox.Completed, Output: env, FuelUsed: 1}, nil
}

func TestReplayComparesEnvDigests(t *testing.T) {
	ctx := context.Background()
	registry := func(context.Context, sandbox.Engine) (*pipeline.Registry, error) {
		reg := pipeline.NewRegistry()
		_ = reg.AddExecutor("x", &envEcho{scriptedExecutor{id: "x", digest: digestA}})
		return reg, reg.AddAction("x", pipeline.Route{Executor: "x", Version: "*"})
	}
	reg, err := registry(ctx, nil)
	require.NoError(t, err)
	sink := audit.NewMemorySink()
	for _, env := range []string{`{"REGION":"eu"}`, `{"REGION":"us"}`} {
		res, err := pipeline.New(reg, sink).Execute(ctx, pipeline.ActionRequest{Action: "x", Payload: json.RawMessage(`{}`), Env: json.RawMessage(env)})
		require.NoError(t, err)
		require.Equal(t, env, string(res.Output), "the tool sees the env")
	}
	eu, us := digestOf(t, `{"REGION":"eu"}`), digestOf(t, `{"REGION":"us"}`)

	withEnv := func(env string) []Request {
		c := corpusOf(`x {}`)
		c[0].Request.Env = json.RawMessage(env)
		return c
	}
	// The corpus line's env is what the replay runs with, and each audited
	// request is matched to the corpus request with its env.
	rep, err := Run(ctx, Config{Corpus: append(withEnv(` { "REGION" : "eu" } `), withEnv(`{"REGION":"us"}`)...), Runtimes: on(t, registry, one), Runs: 1, Audit: sink.Records()})
	require.NoError(t, err)
	assert.Equal(t, &AuditSummary{Records: 2, Checked: 2, Matched: 2}, rep.Summary.Audit)
	assert.Equal(t, &eu, rep.Requests[0].EnvDigest)
	assert.Equal(t, &us, rep.Requests[1].EnvDigest)

	// A corpus that lost the env diverges from the log on env_digest.
	rep, err = Run(ctx, Config{Corpus: corpusOf(`x {}`), Runtimes: on(t, registry, one), Runs: 1, Audit: sink.Records()[:2]})
	require.NoError(t, err)
	require.True(t, rep.Diverged())
	var fields []string
	for _, d := range rep.Divergences {
		fields = append(fields, d.Field)
	}
	assert.Equal(t, []string{"output_digest", "env_digest"}, fields)
	assert.Equal(t, `line 2 (x) vs audit seq 2: env_digest differs: "`+eu+`" in audit seq 2; null on wazero run 1`, rep.Divergences[1].String())

	// An env that is not an object is refused before anything runs.
	_, err = Run(ctx, Config{Corpus: withEnv(`["REGION"]`), Runtimes: on(t, registry, one)})
	require.ErrorIs(t, err, pipeline.ErrInvalidRequest)
	assert.ErrorContains(t, err, "corpus line 2")
	assert.ErrorContains(t, err, "env must be a JSON object")
}

// requestEcho is an executor given the whole request, as a Python
// executor class is: its output is the request's time, and its fuel the
// length of that time, as an interpreter's parsing of it would be.
type requestEcho struct{ scriptedExecutor }

func (e *requestEcho) ExecuteRequest(_ context.Context, _ sandbox.Input, req sandbox.Request) (sandbox.Outcome, error) {
	out, err := json.Marshal(req.TsUTC)
	return sandbox.Outcome{Kind: sandbox.Completed, Output: out, FuelUsed: uint64(len(req.TsUTC))}, err
}

// TestReplayGivesEveryRunTheSameTime: a request without ts_utc gets
// 2000-01-01T00:00:00Z on every run, not the time each run arrived (which
// an executor given the request would see, in its output and its fuel); a
// request with one keeps it.
func TestReplayGivesEveryRunTheSameTime(t *testing.T) {
	exec := oneAction(func(sandbox.EngineName) pipeline.Executor {
		return &requestEcho{scriptedExecutor{id: "x", digest: digestA}}
	})
	corpus := corpusOf(`x {}`, `x {}`)
	corpus[1].Request.TsUTC = "2026-11-27T10:00:00.5Z"
	rep, err := Run(context.Background(), Config{Corpus: corpus, Runtimes: on(t, exec, one), Runs: 5})
	require.NoError(t, err)
	assert.False(t, rep.Diverged(), "%v", rep.Divergences)
	require.Len(t, rep.Requests, 2)
	assert.Equal(t, digestOf(t, `"2000-01-01T00:00:00Z"`), *rep.Requests[0].OutputDigest)
	assert.Equal(t, digestOf(t, `"2026-11-27T10:00:00.5Z"`), *rep.Requests[1].OutputDigest)
}

func TestReplayErrors(t *testing.T) {
	ctx := context.Background()
	ok := oneAction(func(sandbox.EngineName) pipeline.Executor {
		return &scriptedExecutor{id: "x", digest: digestA, script: echoing}
	})
	corpus := corpusOf(`x 1`)

	_, err := Run(ctx, Config{Corpus: corpus})
	assert.EqualError(t, err, "replay: no runtimes")
	_, err = Run(ctx, Config{Corpus: corpus, Runtimes: on(t, ok, one, one)})
	assert.EqualError(t, err, "replay: engine wazero is listed twice")
	twice := on(t, ok, one)
	_, err = Run(ctx, Config{Corpus: corpus, Runtimes: append(on(t, ok, two), twice[0], twice[0])})
	assert.EqualError(t, err, "replay: runtime 3 is runtime 2 again")
	_, err = Run(ctx, Config{Corpus: corpus, Runtimes: on(t, ok, one), Runs: -1})
	assert.EqualError(t, err, "replay: runs is -1, want at least 1")

	closed := on(t, ok, one)
	require.NoError(t, closed[0].Close(ctx))
	_, err = Run(ctx, Config{Corpus: corpus, Runtimes: append(on(t, ok, two), closed[0])})
	assert.ErrorIs(t, err, wasmgate.ErrClosed)
	assert.EqualError(t, err, "replay: runtime 2: wasmgate: runtime closed")
	_, err = Run(ctx, Config{Corpus: corpus, Runtimes: []*wasmgate.Runtime{{}}})
	assert.ErrorIs(t, err, wasmgate.ErrClosed, "a Runtime that New did not make")

	bad := []Request{{Line: 1, Request: pipeline.ActionRequest{Action: "x", Payload: json.RawMessage(`1`)}}, {Line: 7, Request: pipeline.ActionRequest{Action: "x", Payload: json.RawMessage(`1`), TraceID: "abc"}}}
	exec := &scriptedExecutor{id: "x", digest: digestA, script: echoing}
	_, err = Run(ctx, Config{Corpus: bad, Runtimes: on(t, oneAction(func(sandbox.EngineName) pipeline.Executor { return exec }), one)})
	assert.ErrorIs(t, err, pipeline.ErrInvalidRequest)
	assert.EqualError(t, err, `corpus line 7: pipeline: invalid request: trace_id "abc" is not a UUID`)
	assert.Zero(t, exec.calls.Load(), "nothing runs when an envelope is malformed")
	bad[1].Request.TraceID, bad[1].Request.TsUTC = "", "2026-01-01T00:00:00+01:00"
	_, err = Run(ctx, Config{Corpus: bad, Runtimes: on(t, ok, one)})
	assert.EqualError(t, err, `corpus line 7: pipeline: invalid request: ts_utc "2026-01-01T00:00:00+01:00" is not in UTC`)

	// An engine failure gives no verdict: the replay stops, naming the run.
	broken := oneAction(func(sandbox.EngineName) pipeline.Executor {
		return &scriptedExecutor{id: "x", digest: digestA, script: func(int64, sandbox.Input) (sandbox.Outcome, error) {
			return sandbox.Outcome{}, errors.New("engine exploded")
		}}
	})
	_, err = Run(ctx, Config{Corpus: corpus, Runtimes: on(t, broken, one), Runs: 1})
	assert.ErrorIs(t, err, pipeline.ErrInternal)
	assert.EqualError(t, err, "replay: corpus line 2 (x) on wazero, run 1: pipeline: internal error: engine exploded")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Run(cancelled, Config{Corpus: corpus, Runtimes: on(t, ok, one)})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestCompareRuns(t *testing.T) {
	out := strings.Repeat("cd", 32)
	ok := func(engine string, run int, fuel uint64) replayed {
		return replayed{source: Source{Engine: sandbox.EngineName(engine), Run: run}, status: pipeline.StatusSuccess, reasons: []pipeline.ReasonCode{},
			outputDigest: &out, fuel: fuel, moduleDigest: digestA}
	}
	timedOut := func(engine string, run int, fuel uint64) replayed {
		return replayed{source: Source{Engine: sandbox.EngineName(engine), Run: run}, status: pipeline.StatusBlocked, reasons: []pipeline.ReasonCode{pipeline.ExecutorTimeout},
			fuel: fuel, moduleDigest: digestA}
	}

	assert.Empty(t, compareRuns([]replayed{ok("a", 1, 9), ok("a", 2, 9), ok("b", 1, 9)}, replayFields))

	// The compiler and the interpreter disagree on fuel.
	assert.Equal(t, []Divergence{{Field: "fuel_used", Values: []DivergentValue{
		{Value: json.RawMessage(`9`), Sources: []Source{{Engine: "a", Run: 1}, {Engine: "a", Run: 2}}},
		{Value: json.RawMessage(`10`), Sources: []Source{{Engine: "b", Run: 1}}},
	}}}, compareRuns([]replayed{ok("a", 1, 9), ok("a", 2, 9), ok("b", 1, 10)}, replayFields))

	// Fuel is not compared where a run timed out, nor with an audit record.
	assert.Empty(t, compareRuns([]replayed{timedOut("a", 1, 9), timedOut("b", 1, 10)}, replayFields))
	assert.Empty(t, compareRuns([]replayed{ok("a", 1, 9), ok("b", 1, 10)}, auditFields))

	// Every field that differs, in a fixed order, values in order of first sight.
	divs := compareRuns([]replayed{ok("a", 1, 9), timedOut("b", 1, 10), ok("b", 2, 11)}, replayFields)
	var got []string
	for _, d := range divs {
		got = append(got, d.Field+"="+string(d.Values[0].Value)+"|"+string(d.Values[1].Value))
	}
	assert.Equal(t, []string{
		`status="SUCCESS"|"BLOCKED"`,
		`reason_codes=[]|["EXECUTOR_TIMEOUT"]`,
		`output_digest="` + out + `"|null`,
		`fuel_used=9|11`,
	}, got)
}

func TestDivergenceString(t *testing.T) {
	d := Divergence{Kind: DivergenceAudit, Line: 4, Action: "math.sum", AuditSeq: 9, Field: "status", Values: []DivergentValue{
		{Value: json.RawMessage(`"SUCCESS"`), Sources: []Source{{AuditSeq: 9}, {Engine: "wazero", Run: 2}, {Engine: "wazero-interp", Run: 1}, {Engine: "wazero-interp", Run: 2}}},
		{Value: json.RawMessage(`"FAILED"`), Sources: []Source{{Engine: "wazero", Run: 1}, {Engine: "wazero", Run: 3}, {Engine: "wazero-interp", Run: 4}}},
	}}
	assert.Equal(t, `line 4 (math.sum) vs audit seq 9: status differs: "SUCCESS" in audit seq 9 and on wazero run 2, wazero-interp runs 1-2; "FAILED" on wazero runs 1,3, wazero-interp run 4`, d.String())
	assert.Equal(t, "1-3,5,7-8", runList([]int{8, 1, 2, 3, 5, 7}))
}

// TestReplayRealExecutors replays requests to real modules in WAT and C on
// every engine (the Go guest is replayed by the command's tests): everything
// agrees, and the module digests are the modules'.
func TestReplayRealExecutors(t *testing.T) {
	ctx := context.Background()
	// registry.json without its Go guest, which takes long to compile under
	// the race detector.
	testdata, err := filepath.Abs(filepath.Join("..", "testdata"))
	require.NoError(t, err)
	config := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(config, []byte(`{
		"executors": {"upper": {"wasm": "`+testdata+`/upper.wasm"}, "sum": {"wasm": "`+testdata+`/sum.wasm"}, "sort": {"wasm": "`+testdata+`/sort.wasm"}},
		"actions": {
			"text.upper": {"executor": "upper", "version": "^1.0.0", "capabilities": ["TEXT"]},
			"math.sum": {"executor": "sum", "version": ">=1.0.0 <2.0.0", "capabilities": ["MATH"]},
			"math.sort": {"executor": "sort", "version": "^1.0.0", "capabilities": ["MATH"]}
		}}`), 0o600))
	var rts []*wasmgate.Runtime
	for _, name := range sandbox.Engines() {
		rt, err := wasmgate.New(ctx, wasmgate.WithEngine(name), wasmgate.WithRegistryFile(config))
		require.NoError(t, err)
		defer rt.Close(ctx)
		rts = append(rts, rt)
	}
	rep, err := Run(ctx, Config{
		Corpus: corpusOf(
			`math.sum {"numbers":[1,2,3]}`,
			`math.sort {"numbers":[3,-1,2]}`,
			`text.upper {"text":"replay"}`,
			`text.upper {"nope":7}`,
			`math.sum {"numbers":[1.5]}`,
			`math.mul {"numbers":[2,3]}`,
		),
		Runtimes: rts,
		Runs:     2,
	})
	require.NoError(t, err)
	assert.Empty(t, rep.Divergences)
	assert.Equal(t, 6, rep.Summary.Agreeing)
	assert.Equal(t, sandbox.Engines(), rep.Summary.Engines)
	assert.Equal(t, 6*2*len(sandbox.Engines()), rep.Summary.Executions)
	var statuses []wasmgate.Status
	for _, r := range rep.Requests[:5] {
		assert.Regexp(t, "^[0-9a-f]{64}$", r.ModuleDigest)
	}
	for _, r := range rep.Requests {
		statuses = append(statuses, r.Status)
	}
	assert.Empty(t, rep.Requests[5].ModuleDigest, "no executor serves an unknown action")
	assert.Equal(t, []wasmgate.Status{wasmgate.StatusSuccess, wasmgate.StatusSuccess, wasmgate.StatusSuccess, wasmgate.StatusFailed, wasmgate.StatusFailed, wasmgate.StatusBlocked}, statuses)
	assert.Equal(t, digestOf(t, `{"sum":6}`), *rep.Requests[0].OutputDigest)
}

// TestReplayHoldsItsRuntimesOpen checks that a runtime closed during a
// replay waits for it: the replay finishes, and Close returns after it.
func TestReplayHoldsItsRuntimesOpen(t *testing.T) {
	ctx := context.Background()
	started, finish := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rts := on(t, oneAction(func(sandbox.EngineName) pipeline.Executor {
		return &scriptedExecutor{id: "x", digest: digestA, script: func(_ int64, in sandbox.Input) (sandbox.Outcome, error) {
			once.Do(func() { close(started) })
			<-finish
			return sandbox.Outcome{Kind: sandbox.Completed, Output: in.Bytes}, nil
		}}
	}), one)
	type outcome struct {
		rep Report
		err error
	}
	replayed := make(chan outcome, 1)
	go func() {
		rep, err := Run(ctx, Config{Corpus: corpusOf(`x 1`), Runtimes: rts, Runs: 1})
		replayed <- outcome{rep, err}
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- rts[0].Close(ctx) }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the replay was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(finish)
	got := <-replayed
	require.NoError(t, got.err)
	assert.Equal(t, 1, got.rep.Summary.Agreeing)
	require.NoError(t, <-closed)
	_, err := rts[0].Execute(ctx, wasmgate.ActionRequest{Action: "x", Payload: json.RawMessage(`1`)})
	assert.ErrorIs(t, err, wasmgate.ErrClosed)
}
