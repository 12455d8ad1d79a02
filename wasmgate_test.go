package wasmgate_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
)

// sumRegistry is a registry given as values: sum.wasm serving math.sum.
func sumRegistry() []wasmgate.Option {
	return []wasmgate.Option{
		wasmgate.WithExecutor("sum", wasmgate.ExecutorSource{Wasm: "testdata/sum.wasm"}),
		wasmgate.WithAction("math.sum", wasmgate.Route{Executor: "sum", Version: "^1.0.0"}),
	}
}

func sumRequest(payload string) wasmgate.ActionRequest {
	return wasmgate.ActionRequest{Action: "math.sum", Payload: json.RawMessage(payload)}
}

// newRuntime is New that must succeed; the runtime is closed when the test
// ends.
// newRuntime is a Runtime of opts that compiles into the tests' shared
// compilation cache, so that the JS engine is compiled once per machine
// rather than once per test (14 s each under the race detector).
func newRuntime(t *testing.T, opts ...wasmgate.Option) *wasmgate.Runtime {
	t.Helper()
	rt, err := wasmgate.New(context.Background(), append([]wasmgate.Option{wasmgate.WithCompilationCacheDir(testenv.CacheDir())}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

func execute(t *testing.T, rt *wasmgate.Runtime, req wasmgate.ActionRequest) wasmgate.ActionResult {
	t.Helper()
	res, err := rt.Execute(context.Background(), req)
	require.NoError(t, err)
	return res
}

func TestNewRefusesOptionsThatCannotWork(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	build := func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) { return pipeline.NewRegistry(), nil }
	tests := []struct {
		name string
		opts []wasmgate.Option
		want string
	}{
		{"no registry", nil, "no registry: give WithRegistryFile, WithExecutor and WithAction, or WithRegistry"},
		{"file and values", append(sumRegistry(), wasmgate.WithRegistryFile("testdata/registry.json")), "WithRegistryFile and WithExecutor or WithAction are exclusive"},
		{"file and function", []wasmgate.Option{wasmgate.WithRegistryFile("testdata/registry.json"), wasmgate.WithRegistry(build)}, "WithRegistryFile and WithRegistry are exclusive"},
		{"function and values", append(sumRegistry(), wasmgate.WithRegistry(build)), "WithRegistry and WithExecutor or WithAction are exclusive"},
		{"empty registry path", []wasmgate.Option{wasmgate.WithRegistryFile("")}, "WithRegistryFile: empty path"},
		{"nil function", []wasmgate.Option{wasmgate.WithRegistry(nil)}, "WithRegistry: nil function"},
		{"two audit sinks", append(sumRegistry(), wasmgate.WithAuditFile(log), wasmgate.WithAuditSink(audit.NewMemorySink())), "WithAuditFile and WithAuditSink are exclusive"},
		{"empty audit path", append(sumRegistry(), wasmgate.WithAuditFile("")), "WithAuditFile: empty path"},
		{"nil sink", append(sumRegistry(), wasmgate.WithAuditSink(nil)), "WithAuditSink: nil sink"},
		{"nil option", append(sumRegistry(), nil), "a nil Option"},
		{"unknown results mode", append(sumRegistry(), wasmgate.WithResults(7)), "WithResults: unknown mode 7"},
		{"unknown engine", append(sumRegistry(), wasmgate.WithEngine("v8"), wasmgate.WithAuditFile(log)), `WithEngine: runtime: unknown engine "v8"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := wasmgate.New(context.Background(), tt.opts...)
			assert.Nil(t, rt)
			require.ErrorIs(t, err, wasmgate.ErrInvalidOption)
			assert.ErrorContains(t, err, "wasmgate: invalid option: "+tt.want)
		})
	}
	_, err := wasmgate.New(context.Background(), append(sumRegistry(), wasmgate.WithEngine("v8"))...)
	assert.ErrorIs(t, err, sandbox.ErrUnknownEngine, "the engine's own sentinel shows through")
	assert.NoFileExists(t, log, "nothing is started, nor the audit log created, when an option cannot work")
}

func TestNewRefusesABrokenRegistryOfValues(t *testing.T) {
	sum := wasmgate.ExecutorSource{Wasm: "testdata/sum.wasm"}
	route := wasmgate.Route{Executor: "sum", Version: "^1.0.0"}
	tests := []struct {
		name string
		opts []wasmgate.Option
		want string
	}{
		{"missing file", []wasmgate.Option{wasmgate.WithExecutor("sum", wasmgate.ExecutorSource{Wasm: "testdata/nope.wasm"}), wasmgate.WithAction("math.sum", route)},
			`math.sum: EXECUTOR_NOT_FOUND (executor "sum": open testdata/nope.wasm: no such file or directory)`},
		{"refused module", []wasmgate.Option{wasmgate.WithExecutor("env_import", wasmgate.ExecutorSource{Wasm: "testdata/refused/env_import.wasm"}), wasmgate.WithAction("x", wasmgate.Route{Executor: "env_import", Version: "*"})},
			"x: EXECUTOR_INVALID"},
		{"module without a manifest", []wasmgate.Option{wasmgate.WithExecutor("nomanifest", wasmgate.ExecutorSource{Wasm: "testdata/nomanifest.wasm"}), wasmgate.WithAction("x", wasmgate.Route{Executor: "nomanifest", Version: "*"})},
			`x: EXECUTOR_VERSION_MISSING (executor "nomanifest" declares no version)`},
		{"manifest of another executor", []wasmgate.Option{wasmgate.WithExecutor("adder", sum), wasmgate.WithAction("math.sum", wasmgate.Route{Executor: "adder", Version: "*"})},
			`math.sum: EXECUTOR_INVALID (executor "adder": module testdata/sum.wasm declares executor_id "sum", but is registered as "adder")`},
		{"route to nothing", []wasmgate.Option{wasmgate.WithExecutor("sum", sum), wasmgate.WithAction("math.sum", wasmgate.Route{Executor: "summ", Version: "*"})},
			`math.sum: EXECUTOR_NOT_FOUND (action "math.sum" routes to executor "summ", which is not registered)`},
		{"version range not matched", []wasmgate.Option{wasmgate.WithExecutor("sum", sum), wasmgate.WithAction("math.sum", wasmgate.Route{Executor: "sum", Version: "^2.0.0"})},
			`math.sum: EXECUTOR_VERSION_INCOMPATIBLE`},
		{"capability lacking", []wasmgate.Option{wasmgate.WithExecutor("sum", sum), wasmgate.WithAction("math.sum", wasmgate.Route{Executor: "sum", Version: "*", Capabilities: []string{"MATH", "NET"}})},
			`math.sum: EXECUTOR_CAPABILITY_MISSING (action "math.sum" requires capability NET`},
		{"package not in the tool store", []wasmgate.Option{wasmgate.WithKind(js.Kind()), wasmgate.WithExecutor("shout", wasmgate.ExecutorSource{Package: "text-tools@1.0.0", Tool: "shout", ToolsDir: t.TempDir()}), wasmgate.WithAction("shout", wasmgate.Route{Executor: "shout", Version: "*"})},
			`shout: EXECUTOR_NOT_FOUND (executor "shout": NOT_INSTALLED: text-tools@1.0.0 is not in the tool store`},
		{"no actions", []wasmgate.Option{wasmgate.WithExecutor("sum", sum)}, "no actions: route one with WithAction"},
		{"executor twice", []wasmgate.Option{wasmgate.WithExecutor("sum", sum), wasmgate.WithExecutor("sum", sum), wasmgate.WithAction("math.sum", route)},
			`executor "sum" is registered twice`},
		{"action twice", []wasmgate.Option{wasmgate.WithExecutor("sum", sum), wasmgate.WithAction("math.sum", route), wasmgate.WithAction("math.sum", route)},
			`action "math.sum" is registered twice`},
		{"action name with a space", []wasmgate.Option{wasmgate.WithExecutor("sum", sum), wasmgate.WithAction("math sum", route)},
			`action name "math sum" may only hold printable ASCII without spaces`},
		{"source naming two codes", []wasmgate.Option{wasmgate.WithExecutor("sum", wasmgate.ExecutorSource{Wasm: "testdata/sum.wasm", JS: "guests/js/slugify.ts"}), wasmgate.WithAction("math.sum", route)},
			`executor "sum" names more than one of "wasm", "js", "package" and "python"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, err := wasmgate.New(context.Background(), tt.opts...)
			assert.Nil(t, rt)
			require.ErrorIs(t, err, wasmgate.ErrInvalidRegistry)
			assert.ErrorContains(t, err, "wasmgate: invalid registry: "+tt.want)
		})
	}
}

// TestRegistryFileKeepsBrokenRoutes: a registry file is held to the rules
// every command applies to it, not to New's for values: a broken route
// blocks its own requests, with its own reason code, and is audited.
func TestRegistryFileKeepsBrokenRoutes(t *testing.T) {
	sink := audit.NewMemorySink()
	rt := newRuntime(t, wasmgate.WithRegistryFile("testdata/registry_problems.json"), wasmgate.WithAuditSink(sink))
	for action, want := range map[string][]wasmgate.ReasonCode{
		"ok":           {},
		"missing.file": {pipeline.ExecutorNotFound},
		"refused":      {pipeline.ExecutorInvalid},
		"unversioned":  {pipeline.ExecutorVersionMissing},
		"too.new":      {pipeline.ExecutorVersionIncompatible},
	} {
		res := execute(t, rt, wasmgate.ActionRequest{Action: action, Payload: json.RawMessage(`{"text":"a"}`)})
		assert.Equal(t, want, res.ReasonCodes, action)
	}
	assert.Len(t, sink.Verdicts(), 5, "every request audited")

	_, err := wasmgate.New(context.Background(), wasmgate.WithRegistryFile("testdata/sort_input.json"))
	assert.ErrorContains(t, err, "registry testdata/sort_input.json: json: unknown field", "a file that is not a registry fails New")
	_, err = wasmgate.New(context.Background(), wasmgate.WithRegistryFile("testdata/nope.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestExecutorFromEverySource(t *testing.T) {
	wasm, err := os.ReadFile("testdata/upper.wasm")
	require.NoError(t, err)
	store := t.TempDir()
	entry := filepath.Join(store, "text-tools@2.1.0")
	require.NoError(t, os.MkdirAll(filepath.Join(entry, "node_modules", "text-tools"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(entry, "bundle.mjs"), []byte(`export const shout = { execute: ({ s }) => ({ s: s.toUpperCase() + "!" }) };`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(entry, "node_modules", "text-tools", "package.json"), []byte(`{"name":"text-tools","version":"2.1.0"}`), 0o644))

	module := wasmgate.ExecutorSource{Module: wasm}
	opt := wasmgate.WithExecutor("upper", module)
	caps := []string{"TEXT"}
	route := wasmgate.WithAction("bytes", wasmgate.Route{Executor: "upper", Version: "^1.0.0", Capabilities: caps})
	clear(wasm)          // the options copied the bytes
	caps[0] = "NET"      // and the capabilities
	module.Module = wasm // and the source itself
	rt := newRuntime(t, opt, route, wasmgate.WithKind(js.Kind()),
		wasmgate.WithExecutor("sum", wasmgate.ExecutorSource{Wasm: "testdata/sum.wasm"}),
		wasmgate.WithAction("file", wasmgate.Route{Executor: "sum", Version: "1.0.0"}),
		wasmgate.WithExecutor("slugify", wasmgate.ExecutorSource{JS: "guests/js/slugify.ts"}),
		wasmgate.WithAction("js", wasmgate.Route{Executor: "slugify", Version: "^1.0.0"}),
		wasmgate.WithExecutor("shout", wasmgate.ExecutorSource{Package: "text-tools@2.1.0", Tool: "shout", ToolsDir: store}),
		wasmgate.WithAction("package", wasmgate.Route{Executor: "shout", Version: "2.1.0"}),
	)
	for _, tt := range []struct{ action, payload, executor, output string }{
		{"bytes", `{"text":"b"}`, "upper", `{"text":"B"}`},
		{"file", `{"numbers":[1,2]}`, "sum", `{"sum":3}`},
		{"js", `{"title":"A JS Tool"}`, "slugify", `{"removed":["a"],"slug":"js-tool"}`},
		{"package", `{"s":"hi"}`, "shout", `{"s":"HI!"}`},
	} {
		res := execute(t, rt, wasmgate.ActionRequest{Action: tt.action, Payload: json.RawMessage(tt.payload)})
		assert.Equal(t, wasmgate.StatusSuccess, res.Status, "%s: %s", tt.action, res.Message)
		assert.Equal(t, tt.executor, res.ExecutorID)
		assert.Equal(t, tt.output, string(res.Output), tt.action)
	}
}

func TestOptionsMakeSeveralRuntimes(t *testing.T) {
	opts := sumRegistry()
	a := newRuntime(t, opts...)
	b := newRuntime(t, append(opts, wasmgate.WithEngine(wasmgate.EngineWazeroInterp))...)
	ra, rb := execute(t, a, sumRequest(`{"numbers":[4,5]}`)), execute(t, b, sumRequest(`{"numbers":[4,5]}`))
	assert.Equal(t, `{"sum":9}`, string(ra.Output))
	assert.Equal(t, *ra.OutputDigest, *rb.OutputDigest)
	assert.Equal(t, ra.FuelUsed, rb.FuelUsed, "the same fuel on the compiler and the interpreter")
}

func TestWithResultsDigestOnly(t *testing.T) {
	full := execute(t, newRuntime(t, sumRegistry()...), sumRequest(`{"numbers":[1]}`))
	digestOnly := execute(t, newRuntime(t, append(sumRegistry(), wasmgate.WithResults(wasmgate.ResultsDigestOnly))...), sumRequest(`{"numbers":[1]}`))
	assert.Equal(t, `{"sum":1}`, string(full.Output))
	assert.Nil(t, digestOnly.Output)
	assert.Equal(t, *full.OutputDigest, *digestOnly.OutputDigest)

	failed := execute(t, newRuntime(t, append(sumRegistry(), wasmgate.WithResults(wasmgate.ResultsDigestOnly))...), sumRequest(`{"numbers":[1.5]}`))
	assert.Equal(t, "the executor's message is withheld: results are digest-only", failed.Message)
}

func TestWithRegistry(t *testing.T) {
	var got wasmgate.EngineName
	rt := newRuntime(t, wasmgate.WithEngine(wasmgate.EngineWazeroInterp), wasmgate.WithRegistry(func(ctx context.Context, e wasmgate.Engine) (*pipeline.Registry, error) {
		got = e.Name()
		return pipeline.RegistryForSource(ctx, e, pipeline.ExecutorSource{Wasm: "testdata/sum.wasm"}, "", wasmgate.Limits{})
	}))
	assert.Equal(t, wasmgate.EngineWazeroInterp, got, "the function gets the runtime's engine")
	assert.Equal(t, `{"sum":2}`, string(execute(t, rt, wasmgate.ActionRequest{Action: "sum", Payload: json.RawMessage(`{"numbers":[2]}`)}).Output))

	failure := errors.New("no registry today")
	_, err := wasmgate.New(context.Background(), wasmgate.WithRegistry(func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) { return nil, failure }))
	assert.Equal(t, failure, err, "the function's error, as it is")
	_, err = wasmgate.New(context.Background(), wasmgate.WithRegistry(func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) { return nil, nil }))
	assert.ErrorIs(t, err, wasmgate.ErrInvalidRegistry)
	assert.EqualError(t, err, "wasmgate: invalid registry: WithRegistry's function returned no registry")
}

func TestAuditToMemoryAndClose(t *testing.T) {
	ctx := context.Background()
	sink := audit.NewMemorySink()
	rt, err := wasmgate.New(ctx, append(sumRegistry(), wasmgate.WithAuditSink(sink))...)
	require.NoError(t, err)
	res := execute(t, rt, wasmgate.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1]}`), TraceID: "4b1c2d3e-5f60-4718-8a9b-0c1d2e3f4a5b", TsUTC: "2026-01-02T03:04:05Z"})
	assert.Equal(t, wasmgate.StatusSuccess, res.Status)

	// A malformed envelope is an error, and nothing is audited.
	_, err = rt.Execute(ctx, wasmgate.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`1`), TraceID: "abc"})
	assert.ErrorIs(t, err, wasmgate.ErrInvalidRequest)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.NoError(t, rt.Close(cancelled), "Close succeeds with a cancelled ctx")
	require.NoError(t, rt.Close(ctx), "a second Close does nothing")
	_, err = rt.Execute(ctx, sumRequest(`{"numbers":[1]}`))
	assert.ErrorIs(t, err, wasmgate.ErrClosed)
	assert.EqualError(t, err, "wasmgate: runtime closed")

	recs := sink.Verdicts()
	require.Len(t, recs, 1, "the sink's records stay readable after Close")
	assert.Equal(t, "4b1c2d3e-5f60-4718-8a9b-0c1d2e3f4a5b", recs[0].TraceID)
	assert.Equal(t, "2026-01-02T03:04:05Z", recs[0].TsUTC)
	assert.Equal(t, res.InputDigest, recs[0].InputDigest)
	assert.Len(t, sink.Records(), 2, "its attempt and its verdict")
	again := recs[0]
	again.Seq, again.Prev, again.Hash, again.AttemptHash = 0, "", "", nil
	_, err = sink.Append(ctx, again)
	assert.ErrorIs(t, err, audit.ErrClosed, "Close closed the sink the runtime was given")
}

func TestRuntimeNotFromNew(t *testing.T) {
	var zero wasmgate.Runtime
	_, err := zero.Execute(context.Background(), sumRequest(`1`))
	assert.ErrorIs(t, err, wasmgate.ErrClosed)
	assert.NoError(t, zero.Close(context.Background()))
	var none *wasmgate.Runtime
	_, err = none.Execute(context.Background(), sumRequest(`1`))
	assert.ErrorIs(t, err, wasmgate.ErrClosed)
	assert.NoError(t, none.Close(context.Background()))
}

func TestAuditFileIsHeldAndContinued(t *testing.T) {
	ctx := context.Background()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	first, err := wasmgate.New(ctx, append(sumRegistry(), wasmgate.WithAuditFile(log))...)
	require.NoError(t, err)
	execute(t, first, sumRequest(`{"numbers":[1]}`))

	// The log is the first runtime's while it is open.
	_, err = wasmgate.New(ctx, append(sumRegistry(), wasmgate.WithAuditFile(log, audit.WithLockWait(0)))...)
	assert.ErrorIs(t, err, audit.ErrLocked)

	require.NoError(t, first.Close(ctx))
	second := newRuntime(t, append(sumRegistry(), wasmgate.WithAuditFile(log, audit.WithLockWait(0)))...)
	execute(t, second, sumRequest(`{"numbers":[2]}`))
	require.NoError(t, second.Close(ctx))

	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	rep, err := audit.Verify(strings.NewReader(string(raw)))
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Records, "the second runtime continued the first's chain")
	assert.Empty(t, rep.Unanswered)

	// A torn log is refused, naming the line.
	require.NoError(t, os.WriteFile(log, raw[:len(raw)-3], 0o600))
	_, err = wasmgate.New(ctx, append(sumRegistry(), wasmgate.WithAuditFile(log))...)
	assert.ErrorIs(t, err, audit.ErrTornTail)
}

// TestCloseWaitsForExecutions closes a runtime while executions hammer it:
// every call either ran to a verdict that is in the log, or was refused
// with ErrClosed before anything was recorded; none lost its record.
func TestCloseWaitsForExecutions(t *testing.T) {
	ctx := context.Background()
	sink := audit.NewMemorySink()
	var running atomic.Int32
	started := make(chan struct{})
	var once sync.Once
	rt, err := wasmgate.New(ctx, wasmgate.WithAuditSink(sink), wasmgate.WithRegistry(func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) {
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor("slow", slowExecutor{running: &running, started: func() { once.Do(func() { close(started) }) }}); err != nil {
			return nil, err
		}
		return reg, reg.AddAction("slow", pipeline.Route{Executor: "slow", Version: "*"})
	}))
	require.NoError(t, err)

	const callers = 16
	var verdicts, refused atomic.Int32
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for {
				res, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "slow", Payload: json.RawMessage(`1`)})
				if errors.Is(err, wasmgate.ErrClosed) {
					refused.Add(1)
					return
				}
				if !assert.NoError(t, err) || !assert.Equal(t, wasmgate.StatusSuccess, res.Status, res.Message) {
					return
				}
				verdicts.Add(1)
			}
		})
	}
	<-started
	require.NoError(t, rt.Close(ctx))
	assert.Zero(t, running.Load(), "Close returned with an execution under way")
	wg.Wait()
	assert.Equal(t, int32(callers), refused.Load())
	assert.Equal(t, int(verdicts.Load()), len(sink.Verdicts()), "every verdict returned is in the log")
	rep, err := audit.Verify(strings.NewReader(logOf(t, sink)))
	require.NoError(t, err)
	assert.Empty(t, rep.Unanswered, "no attempt left without its verdict")
}

// slowExecutor takes a millisecond, counting the calls under way.
type slowExecutor struct {
	running *atomic.Int32
	started func()
}

func (s slowExecutor) Manifest() wasmgate.Manifest {
	return wasmgate.Manifest{ExecutorID: "slow", Version: "1.0.0"}
}
func (s slowExecutor) ModuleDigest() string { return strings.Repeat("ab", 32) }
func (s slowExecutor) Execute(_ context.Context, in wasmgate.Input) (wasmgate.Outcome, error) {
	s.running.Add(1)
	defer s.running.Add(-1)
	s.started()
	time.Sleep(time.Millisecond)
	return wasmgate.Outcome{Kind: wasmgate.OutcomeCompleted, Output: in.Bytes}, nil
}

func logOf(t *testing.T, sink *audit.MemorySink) string {
	t.Helper()
	var b strings.Builder
	_, err := sink.WriteTo(&b)
	require.NoError(t, err)
	return b.String()
}

// callbackExecutor runs, on its first call, call: an executor of one's own
// that calls back into the runtime it runs in.
type callbackExecutor struct {
	call func() error
}

func (c callbackExecutor) Manifest() wasmgate.Manifest {
	return wasmgate.Manifest{ExecutorID: "outer", Version: "1.0.0"}
}
func (c callbackExecutor) ModuleDigest() string { return strings.Repeat("cd", 32) }
func (c callbackExecutor) Execute(_ context.Context, in wasmgate.Input) (wasmgate.Outcome, error) {
	if string(in.Bytes) == `"inner"` {
		return wasmgate.Outcome{Kind: wasmgate.OutcomeCompleted, Output: in.Bytes}, nil
	}
	if err := c.call(); err != nil {
		return wasmgate.Outcome{Kind: wasmgate.OutcomeFailed, Message: err.Error()}, nil
	}
	return wasmgate.Outcome{Kind: wasmgate.OutcomeCompleted, Output: in.Bytes}, nil
}

// TestCloseDuringANestedExecution: an execution that calls back into its
// runtime while Close waits for it gets ErrClosed for the inner call, and
// Close returns once the outer one has its verdict; nothing deadlocks.
func TestCloseDuringANestedExecution(t *testing.T) {
	ctx := context.Background()
	var rt *wasmgate.Runtime
	started, proceed := make(chan struct{}), make(chan struct{})
	exec := callbackExecutor{call: func() error {
		close(started)
		<-proceed
		_, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "x", Payload: json.RawMessage(`"inner"`)})
		return err
	}}
	var err error
	rt, err = wasmgate.New(ctx, wasmgate.WithRegistry(func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) {
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor("outer", exec); err != nil {
			return nil, err
		}
		return reg, reg.AddAction("x", pipeline.Route{Executor: "outer", Version: "*"})
	}))
	require.NoError(t, err)
	// Before Close, calling back works.
	res := execute(t, rt, wasmgate.ActionRequest{Action: "x", Payload: json.RawMessage(`"inner"`)})
	require.Equal(t, wasmgate.StatusSuccess, res.Status)

	outer := make(chan wasmgate.ActionResult, 1)
	go func() {
		res, _ := rt.Execute(ctx, wasmgate.ActionRequest{Action: "x", Payload: json.RawMessage(`"outer"`)})
		outer <- res
	}()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- rt.Close(ctx) }()
	require.Eventually(t, func() bool {
		_, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "x", Payload: json.RawMessage(`"inner"`)})
		return errors.Is(err, wasmgate.ErrClosed)
	}, 5*time.Second, time.Millisecond, "Close has begun")
	close(proceed)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	got := <-outer
	assert.Equal(t, wasmgate.StatusFailed, got.Status)
	assert.Equal(t, "wasmgate: runtime closed", got.Message, "the inner call was refused")
	assert.NoError(t, rt.Close(ctx), "a second Close")
}
