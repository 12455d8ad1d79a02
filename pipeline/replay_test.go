package pipeline

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/host"
	"github.com/wasmgate/wasmgate/runtime"
)

// namedEngine is an Engine that only has a name: the replay tests' executors
// are fakes, registered by the Registry function, and load nothing.
type namedEngine runtime.EngineName

func (e namedEngine) Name() runtime.EngineName { return runtime.EngineName(e) }
func (e namedEngine) Load(context.Context, []byte) (runtime.Module, error) {
	return nil, errors.New("namedEngine loads nothing")
}
func (e namedEngine) LoadReactor(context.Context, []byte, host.Glue) (runtime.Reactor, error) {
	return nil, errors.New("namedEngine loads nothing")
}
func (e namedEngine) Close(context.Context) error { return nil }

// scriptedExecutor answers call n (from 1, counted across goroutines) with
// script(n, input).
type scriptedExecutor struct {
	id, digest string
	script     func(n int64, in runtime.Input) (runtime.Outcome, error)
	calls      atomic.Int64
}

func (s *scriptedExecutor) Manifest() runtime.Manifest {
	return runtime.Manifest{ExecutorID: s.id, Version: "1.0.0"}
}
func (s *scriptedExecutor) ModuleDigest() string { return s.digest }
func (s *scriptedExecutor) Execute(_ context.Context, in runtime.Input) (runtime.Outcome, error) {
	return s.script(s.calls.Add(1), in)
}

var (
	digestA = strings.Repeat("aa", 32)
	digestB = strings.Repeat("bb", 32)
)

// echoing returns the input with 7 fuel, every time.
func echoing(_ int64, in runtime.Input) (runtime.Outcome, error) {
	return runtime.Outcome{Kind: runtime.Completed, Output: in.Bytes, FuelUsed: 7}, nil
}

// oneAction is a Registry function serving action "x" with the executor
// that exec returns for the engine.
func oneAction(exec func(runtime.EngineName) Executor) func(context.Context, runtime.Engine) (*Registry, error) {
	return func(_ context.Context, e runtime.Engine) (*Registry, error) {
		reg := NewRegistry()
		if err := reg.AddExecutor("x", exec(e.Name())); err != nil {
			return nil, err
		}
		return reg, reg.AddAction("x", Route{Executor: "x", Version: "*"})
	}
}

func engines(names ...string) []runtime.Engine {
	out := make([]runtime.Engine, len(names))
	for i, n := range names {
		out[i] = namedEngine(n)
	}
	return out
}

func corpusOf(lines ...string) []ReplayRequest {
	var out []ReplayRequest
	for i, l := range lines {
		action, payload, _ := strings.Cut(l, " ")
		out = append(out, ReplayRequest{Line: 2 * (i + 1), Request: ActionRequest{Action: action, Payload: json.RawMessage(payload)}})
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
	rep, err := Replay(context.Background(), ReplayConfig{
		Corpus:   corpusOf(`x {"b":1, "a":2}`, `x [1,2,3]`, `nope {}`, `x {"a":NaN}`),
		Engines:  engines("one", "two"),
		Registry: oneAction(func(runtime.EngineName) Executor { return exec }),
		Progress: func(done, total int) { progress = append(progress, fmt.Sprintf("%d/%d", done, total)) },
	})
	require.NoError(t, err)

	assert.False(t, rep.Diverged())
	assert.Empty(t, rep.Divergences)
	assert.NotNil(t, rep.Divergences, "an empty list, not null, in JSON")
	assert.Equal(t, ReplaySummary{
		Requests: 4, Runs: DefaultReplayRuns, Engines: []runtime.EngineName{"one", "two"}, Executions: 24,
		Agreeing: 4,
	}, rep.Summary)
	assert.Equal(t, int64(2*2*DefaultReplayRuns), exec.calls.Load(), "the executable requests ran 3 times on each engine")
	assert.Equal(t, []string{"1/4", "2/4", "3/4", "4/4"}, progress)

	out := digestOf(t, `{"a":2,"b":1}`)
	assert.Equal(t, ReplayedRequest{
		Line: 2, Action: "x", TraceID: "00000000-0000-4000-8000-000000000002", InputDigest: out,
		Verdict: ReplayAgrees, Status: StatusSuccess, ReasonCodes: []ReasonCode{}, OutputDigest: &out,
		FuelUsed: 7, ModuleDigest: digestA,
	}, rep.Requests[0])
	assert.Equal(t, ReplayedRequest{
		Line: 6, Action: "nope", TraceID: "00000000-0000-4000-8000-000000000006", InputDigest: digestOf(t, `{}`),
		Verdict: ReplayAgrees, Status: StatusBlocked, ReasonCodes: []ReasonCode{ActionUnknown},
	}, rep.Requests[2])
	assert.Equal(t, []ReasonCode{NonJSONPayload}, rep.Requests[3].ReasonCodes)
	assert.Empty(t, rep.Requests[3].InputDigest)
}

func TestReplayNamesTheDivergentField(t *testing.T) {
	tests := []struct {
		name   string
		script func(n int64, in runtime.Input) (runtime.Outcome, error)
		field  string
		values []string
	}{
		{"output changes between calls", func(n int64, _ runtime.Input) (runtime.Outcome, error) {
			return runtime.Outcome{Kind: runtime.Completed, Output: fmt.Appendf(nil, `{"n":%d}`, n)}, nil
		}, "output_digest", nil},
		{"fuel changes between calls", func(n int64, in runtime.Input) (runtime.Outcome, error) {
			return runtime.Outcome{Kind: runtime.Completed, Output: in.Bytes, FuelUsed: uint64(100 + n)}, nil
		}, "fuel_used", []string{"101", "102"}},
		{"only the message changes", func(n int64, _ runtime.Input) (runtime.Outcome, error) {
			return runtime.Outcome{Kind: runtime.Failed, Message: fmt.Sprintf("attempt %d failed", n)}, nil
		}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exec := &scriptedExecutor{id: "x", digest: digestA, script: tt.script}
			rep, err := Replay(context.Background(), ReplayConfig{
				Corpus:   corpusOf(`x {"k":1}`),
				Engines:  engines("one"),
				Registry: oneAction(func(runtime.EngineName) Executor { return exec }),
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
			assert.Equal(t, DivergenceReplay, d.Kind)
			assert.Equal(t, 2, d.Line)
			assert.Equal(t, "x", d.Action)
			assert.Equal(t, ReplayTraceID(2), d.TraceID)
			assert.Equal(t, tt.field, d.Field)
			require.Len(t, d.Values, 2)
			var sources []Source
			var values []string
			for _, v := range d.Values {
				require.Len(t, v.Sources, 1)
				sources = append(sources, v.Sources[0])
				values = append(values, string(v.Value))
			}
			assert.ElementsMatch(t, []Source{{Engine: "one", Run: 1}, {Engine: "one", Run: 2}}, sources)
			if tt.values != nil {
				// Which run made which call depends on scheduling.
				assert.ElementsMatch(t, tt.values, values)
			}
			assert.Equal(t, ReplaySummary{Requests: 1, Runs: 2, Engines: []runtime.EngineName{"one"}, Executions: 2, Divergent: 1}, rep.Summary)
			assert.Equal(t, ReplayDiverges, rep.Requests[0].Verdict)
		})
	}
}

func TestReplayAcrossEngines(t *testing.T) {
	// The executor each engine's registry holds differs in its output.
	rep, err := Replay(context.Background(), ReplayConfig{
		Corpus:  corpusOf(`x {"k":1}`),
		Engines: engines("one", "two"),
		Registry: oneAction(func(e runtime.EngineName) Executor {
			return &scriptedExecutor{id: "x", digest: digestA, script: func(int64, runtime.Input) (runtime.Outcome, error) {
				return runtime.Outcome{Kind: runtime.Completed, Output: []byte(`"` + string(e) + `"`)}, nil
			}}
		}),
	})
	require.NoError(t, err)
	one, two := digestOf(t, `"one"`), digestOf(t, `"two"`)
	assert.Equal(t, []Divergence{{
		Kind: DivergenceReplay, Line: 2, Action: "x", TraceID: ReplayTraceID(2), Field: "output_digest",
		Values: []DivergentValue{
			{Value: json.RawMessage(`"` + one + `"`), Sources: []Source{{Engine: "one", Run: 1}, {Engine: "one", Run: 2}, {Engine: "one", Run: 3}}},
			{Value: json.RawMessage(`"` + two + `"`), Sources: []Source{{Engine: "two", Run: 1}, {Engine: "two", Run: 2}, {Engine: "two", Run: 3}}},
		},
	}}, rep.Divergences)
	assert.Equal(t, fmt.Sprintf(`line 2 (x): output_digest differs: "%s" on one runs 1-3; "%s" on two runs 1-3`, one, two), rep.Divergences[0].String())

	// A module that differs per engine is a divergence of its own.
	rep, err = Replay(context.Background(), ReplayConfig{
		Corpus:  corpusOf(`x {"k":1}`),
		Engines: engines("one", "two"),
		Runs:    1,
		Registry: oneAction(func(e runtime.EngineName) Executor {
			d := map[runtime.EngineName]string{"one": digestA, "two": digestB}[e]
			return &scriptedExecutor{id: "x", digest: d, script: echoing}
		}),
	})
	require.NoError(t, err)
	require.Len(t, rep.Divergences, 1)
	assert.Equal(t, fmt.Sprintf(`line 2 (x): module_digest differs: "%s" on one run 1; "%s" on two run 1`, digestA, digestB), rep.Divergences[0].String())
}

func TestReplayTimeoutsAreTimingDependent(t *testing.T) {
	timeout := func(n int64, _ runtime.Input) (runtime.Outcome, error) {
		return runtime.Outcome{Kind: runtime.Timeout, Message: "timeout_ms elapsed", FuelUsed: uint64(n * 1000)}, nil
	}
	rep, err := Replay(context.Background(), ReplayConfig{
		Corpus:   corpusOf(`x 1`),
		Engines:  engines("one", "two"),
		Registry: oneAction(func(runtime.EngineName) Executor { return &scriptedExecutor{id: "x", digest: digestA, script: timeout} }),
	})
	require.NoError(t, err)
	assert.False(t, rep.Diverged(), "fuel at a timeout is not compared: %v", rep.Divergences)
	assert.Equal(t, 1, rep.Summary.TimingDependent)
	assert.Equal(t, 0, rep.Summary.Agreeing)
	assert.Equal(t, ReplayTimingDependent, rep.Requests[0].Verdict)
	assert.Equal(t, []ReasonCode{ExecutorTimeout}, rep.Requests[0].ReasonCodes)

	// A timeout on one run and not on another is a divergence: status and
	// reasons are compared even for timeouts.
	rep, err = Replay(context.Background(), ReplayConfig{
		Corpus:  corpusOf(`x 1`),
		Engines: engines("one"),
		Runs:    2,
		Registry: oneAction(func(runtime.EngineName) Executor {
			return &scriptedExecutor{id: "x", digest: digestA, script: func(n int64, in runtime.Input) (runtime.Outcome, error) {
				if n == 1 {
					return timeout(n, in)
				}
				return runtime.Outcome{Kind: runtime.Completed, FuelUsed: 5}, nil
			}}
		}),
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
	upper := func(_ int64, in runtime.Input) (runtime.Outcome, error) {
		return runtime.Outcome{Kind: runtime.Completed, Output: []byte(strings.ToUpper(string(in.Bytes))), FuelUsed: 3}, nil
	}
	echo := func(n int64, in runtime.Input) (runtime.Outcome, error) { return echoing(n, in) }

	// What was audited: actions x and y through a registry whose x was
	// "upper" and y "echo".
	audited := NewRegistry()
	require.NoError(t, audited.AddExecutor("x", &scriptedExecutor{id: "x", digest: digestA, script: upper}))
	require.NoError(t, audited.AddExecutor("y", &scriptedExecutor{id: "y", digest: digestA, script: echo}))
	require.NoError(t, audited.AddAction("x", Route{Executor: "x", Version: "*"}))
	require.NoError(t, audited.AddAction("y", Route{Executor: "y", Version: "*"}))
	sink := audit.NewMemorySink()
	p := New(audited, sink)
	for _, req := range []ActionRequest{
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
	replayRegistry := func(_ context.Context, _ runtime.Engine) (*Registry, error) {
		reg := NewRegistry()
		_ = reg.AddExecutor("x", &scriptedExecutor{id: "x", digest: digestB, script: echo})
		_ = reg.AddExecutor("y", &scriptedExecutor{id: "y", digest: digestA, script: echo})
		_ = reg.AddAction("x", Route{Executor: "x", Version: "*"})
		return reg, reg.AddAction("y", Route{Executor: "y", Version: "*"})
	}
	rep, err := Replay(ctx, ReplayConfig{
		Corpus:   corpusOf(`x "a"`, `y "b"`, `y  "b"`, `x {"a":NaN}`),
		Engines:  engines("one"),
		Runs:     2,
		Registry: replayRegistry,
		Audit:    records,
	})
	require.NoError(t, err)

	assert.Equal(t, &AuditCheckSummary{Records: 5, Checked: 2, Matched: 1, Mismatched: 1, NotInCorpus: 3}, rep.Summary.Audit)
	assert.Equal(t, 4, rep.Summary.Agreeing, "the runs agree among themselves")
	assert.True(t, rep.Diverged())
	a, upperA := digestOf(t, `"a"`), digestOf(t, `"A"`)
	// Seq 1 is the attempt of the first request, seq 2 its verdict.
	assert.Equal(t, []Divergence{
		{Kind: DivergenceAudit, Line: 2, Action: "x", TraceID: ReplayTraceID(2), AuditSeq: 2, Field: "output_digest", Values: []DivergentValue{
			{Value: json.RawMessage(`"` + upperA + `"`), Sources: []Source{{AuditSeq: 2}}},
			{Value: json.RawMessage(`"` + a + `"`), Sources: []Source{{Engine: "one", Run: 1}, {Engine: "one", Run: 2}}},
		}},
		{Kind: DivergenceAudit, Line: 2, Action: "x", TraceID: ReplayTraceID(2), AuditSeq: 2, Field: "module_digest", Values: []DivergentValue{
			{Value: json.RawMessage(`"` + digestA + `"`), Sources: []Source{{AuditSeq: 2}}},
			{Value: json.RawMessage(`"` + digestB + `"`), Sources: []Source{{Engine: "one", Run: 1}, {Engine: "one", Run: 2}}},
		}},
	}, rep.Divergences)
	assert.Equal(t, fmt.Sprintf(`line 2 (x) vs audit seq 2: module_digest differs: "%s" in audit seq 2; "%s" on one runs 1-2`, digestA, digestB), rep.Divergences[1].String())
	assert.Equal(t, []AuditRef{
		{Seq: 6, Action: "x", TraceID: verdicts[2].TraceID, InputDigest: digestOf(t, `"not replayed"`)},
		{Seq: 8, Action: "y", TraceID: verdicts[3].TraceID, InputDigest: a},
		{Seq: 9, Action: "x", TraceID: verdicts[4].TraceID, InputDigest: ""},
	}, rep.NotInCorpus, "matched on action and input digest; a payload without canonical form matches nothing")

	// An empty log is checked (and holds nothing); no log is no check.
	rep, err = Replay(ctx, ReplayConfig{Corpus: corpusOf(`y "b"`), Engines: engines("one"), Registry: replayRegistry, Audit: []audit.Record{}})
	require.NoError(t, err)
	assert.Equal(t, &AuditCheckSummary{}, rep.Summary.Audit)
	rep, err = Replay(ctx, ReplayConfig{Corpus: corpusOf(`y "b"`), Engines: engines("one"), Registry: replayRegistry})
	require.NoError(t, err)
	assert.Nil(t, rep.Summary.Audit)
}

// envEcho is a tool that takes an env (as JS factories do) and answers
// with it.
type envEcho struct{ scriptedExecutor }

func (e *envEcho) ExecuteWithEnv(_ context.Context, _ runtime.Input, env []byte) (runtime.Outcome, error) {
	if env == nil {
		env = []byte("null")
	}
	return runtime.Outcome{Kind: runtime.Completed, Output: env, FuelUsed: 1}, nil
}

func TestReplayComparesEnvDigests(t *testing.T) {
	ctx := context.Background()
	registry := func(context.Context, runtime.Engine) (*Registry, error) {
		reg := NewRegistry()
		_ = reg.AddExecutor("x", &envEcho{scriptedExecutor{id: "x", digest: digestA}})
		return reg, reg.AddAction("x", Route{Executor: "x", Version: "*"})
	}
	reg, err := registry(ctx, nil)
	require.NoError(t, err)
	sink := audit.NewMemorySink()
	for _, env := range []string{`{"REGION":"eu"}`, `{"REGION":"us"}`} {
		res, err := New(reg, sink).Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`{}`), Env: json.RawMessage(env)})
		require.NoError(t, err)
		require.Equal(t, env, string(res.Output), "the tool sees the env")
	}
	eu, us := digestOf(t, `{"REGION":"eu"}`), digestOf(t, `{"REGION":"us"}`)

	withEnv := func(env string) []ReplayRequest {
		c := corpusOf(`x {}`)
		c[0].Request.Env = json.RawMessage(env)
		return c
	}
	// The corpus line's env is what the replay runs with, and each audited
	// request is matched to the corpus request with its env.
	rep, err := Replay(ctx, ReplayConfig{Corpus: append(withEnv(` { "REGION" : "eu" } `), withEnv(`{"REGION":"us"}`)...), Engines: engines("one"), Runs: 1, Registry: registry, Audit: sink.Records()})
	require.NoError(t, err)
	assert.Equal(t, &AuditCheckSummary{Records: 2, Checked: 2, Matched: 2}, rep.Summary.Audit)
	assert.Equal(t, &eu, rep.Requests[0].EnvDigest)
	assert.Equal(t, &us, rep.Requests[1].EnvDigest)

	// A corpus that lost the env diverges from the log on env_digest.
	rep, err = Replay(ctx, ReplayConfig{Corpus: corpusOf(`x {}`), Engines: engines("one"), Runs: 1, Registry: registry, Audit: sink.Records()[:2]})
	require.NoError(t, err)
	require.True(t, rep.Diverged())
	var fields []string
	for _, d := range rep.Divergences {
		fields = append(fields, d.Field)
	}
	assert.Equal(t, []string{"output_digest", "env_digest"}, fields)
	assert.Equal(t, `line 2 (x) vs audit seq 2: env_digest differs: "`+eu+`" in audit seq 2; null on one run 1`, rep.Divergences[1].String())

	// An env that is not an object is refused before anything runs.
	_, err = Replay(ctx, ReplayConfig{Corpus: withEnv(`["REGION"]`), Engines: engines("one"), Registry: registry})
	require.ErrorIs(t, err, ErrInvalidRequest)
	assert.ErrorContains(t, err, "corpus line 2")
	assert.ErrorContains(t, err, "env must be a JSON object")
}

func TestReplayErrors(t *testing.T) {
	ctx := context.Background()
	ok := oneAction(func(runtime.EngineName) Executor { return &scriptedExecutor{id: "x", digest: digestA, script: echoing} })
	corpus := corpusOf(`x 1`)

	_, err := Replay(ctx, ReplayConfig{Corpus: corpus, Registry: ok})
	assert.EqualError(t, err, "replay: no engines")
	_, err = Replay(ctx, ReplayConfig{Corpus: corpus, Engines: engines("one", "one"), Registry: ok})
	assert.EqualError(t, err, "replay: engine one is listed twice")
	_, err = Replay(ctx, ReplayConfig{Corpus: corpus, Engines: engines("one")})
	assert.EqualError(t, err, "replay: no Registry function")
	_, err = Replay(ctx, ReplayConfig{Corpus: corpus, Engines: engines("one"), Registry: ok, Runs: -1})
	assert.EqualError(t, err, "replay: runs is -1, want at least 1")

	registryFailed := errors.New("no such file")
	_, err = Replay(ctx, ReplayConfig{Corpus: corpus, Engines: engines("one"), Registry: func(context.Context, runtime.Engine) (*Registry, error) {
		return nil, registryFailed
	}})
	assert.ErrorIs(t, err, registryFailed)
	assert.EqualError(t, err, "replay: registry for engine one: no such file")

	bad := []ReplayRequest{{Line: 1, Request: ActionRequest{Action: "x", Payload: json.RawMessage(`1`)}}, {Line: 7, Request: ActionRequest{Action: "x", Payload: json.RawMessage(`1`), TraceID: "abc"}}}
	exec := &scriptedExecutor{id: "x", digest: digestA, script: echoing}
	_, err = Replay(ctx, ReplayConfig{Corpus: bad, Engines: engines("one"), Registry: oneAction(func(runtime.EngineName) Executor { return exec })})
	assert.ErrorIs(t, err, ErrInvalidRequest)
	assert.EqualError(t, err, `corpus line 7: pipeline: invalid request: trace_id "abc" is not a UUID`)
	assert.Zero(t, exec.calls.Load(), "nothing runs when an envelope is malformed")
	bad[1].Request.TraceID, bad[1].Request.TsUTC = "", "2026-01-01T00:00:00+01:00"
	_, err = Replay(ctx, ReplayConfig{Corpus: bad, Engines: engines("one"), Registry: ok})
	assert.EqualError(t, err, `corpus line 7: pipeline: invalid request: ts_utc "2026-01-01T00:00:00+01:00" is not in UTC`)

	// An engine failure gives no verdict: the replay stops, naming the run.
	broken := oneAction(func(runtime.EngineName) Executor {
		return &scriptedExecutor{id: "x", digest: digestA, script: func(int64, runtime.Input) (runtime.Outcome, error) {
			return runtime.Outcome{}, errors.New("engine exploded")
		}}
	})
	_, err = Replay(ctx, ReplayConfig{Corpus: corpus, Engines: engines("one"), Runs: 1, Registry: broken})
	assert.ErrorIs(t, err, ErrInternal)
	assert.EqualError(t, err, "replay: corpus line 2 (x) on one, run 1: pipeline: internal error: engine exploded")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = Replay(cancelled, ReplayConfig{Corpus: corpus, Engines: engines("one"), Registry: ok})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestCompareRuns(t *testing.T) {
	out := strings.Repeat("cd", 32)
	ok := func(engine string, run int, fuel uint64) replayed {
		return replayed{source: Source{Engine: runtime.EngineName(engine), Run: run}, status: StatusSuccess, reasons: []ReasonCode{},
			outputDigest: &out, fuel: fuel, moduleDigest: digestA}
	}
	timedOut := func(engine string, run int, fuel uint64) replayed {
		return replayed{source: Source{Engine: runtime.EngineName(engine), Run: run}, status: StatusBlocked, reasons: []ReasonCode{ExecutorTimeout},
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
	var engs []runtime.Engine
	for _, name := range runtime.Engines() {
		e, err := runtime.NewEngine(ctx, runtime.NewConfig().WithEngine(name))
		require.NoError(t, err)
		defer e.Close(ctx)
		engs = append(engs, e)
	}
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
	var mu sync.Mutex
	built := map[runtime.EngineName]int{}
	rep, err := Replay(ctx, ReplayConfig{
		Corpus: corpusOf(
			`math.sum {"numbers":[1,2,3]}`,
			`math.sort {"numbers":[3,-1,2]}`,
			`text.upper {"text":"replay"}`,
			`text.upper {"text":7}`,
			`math.sum {"numbers":[1.5]}`,
			`math.mul {"numbers":[2,3]}`,
		),
		Engines: engs,
		Runs:    2,
		Registry: func(ctx context.Context, e runtime.Engine) (*Registry, error) {
			mu.Lock()
			built[e.Name()]++
			mu.Unlock()
			return LoadRegistry(ctx, config, e)
		},
	})
	require.NoError(t, err)
	assert.Empty(t, rep.Divergences)
	assert.Equal(t, 6, rep.Summary.Agreeing)
	want := map[runtime.EngineName]int{}
	for _, name := range runtime.Engines() {
		want[name] = 1
	}
	assert.Equal(t, want, built, "one registry per engine")
	var statuses []Status
	for _, r := range rep.Requests[:5] {
		assert.Regexp(t, "^[0-9a-f]{64}$", r.ModuleDigest)
	}
	for _, r := range rep.Requests {
		statuses = append(statuses, r.Status)
	}
	assert.Empty(t, rep.Requests[5].ModuleDigest, "no executor serves an unknown action")
	assert.Equal(t, []Status{StatusSuccess, StatusSuccess, StatusSuccess, StatusFailed, StatusFailed, StatusBlocked}, statuses)
	assert.Equal(t, digestOf(t, `{"sum":6}`), *rep.Requests[0].OutputDigest)
}
