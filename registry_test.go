package wasmgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Executors and actions added at run time are served from the next
// execution on; a change that would block requests is refused whole.
func TestRuntimeAddsExecutorsAndActions(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, sumRegistry()...)
	require.NoError(t, rt.AddExecutor(ctx, "echo", wasmgate.ExecutorSource{Wasm: "testdata/echo.wasm"}))
	require.NoError(t, rt.AddAction("echo", wasmgate.Route{Executor: "echo", Version: "^1.0.0"}))
	assert.Equal(t, []string{"echo", "math.sum"}, rt.Actions())
	res := execute(t, rt, wasmgate.ActionRequest{Action: "echo", Payload: json.RawMessage(`{"b":1,"a":2}`)})
	assert.Equal(t, wasmgate.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"a":2,"b":1}`, string(res.Output))

	refused := []struct {
		name string
		err  error
		want string
	}{
		{"executor twice", rt.AddExecutor(ctx, "echo", wasmgate.ExecutorSource{Wasm: "testdata/echo.wasm"}), `executor "echo" is registered twice`},
		{"missing code", rt.AddExecutor(ctx, "gone", wasmgate.ExecutorSource{Wasm: "testdata/gone.wasm"}), `executor "gone": `},
		{"refused code", rt.AddExecutor(ctx, "env_import", wasmgate.ExecutorSource{Wasm: "testdata/refused/env_import.wasm"}), `executor "env_import": `},
		{"another executor_id", rt.AddExecutor(ctx, "shout", wasmgate.ExecutorSource{Wasm: "testdata/upper.wasm"}), `declares executor_id "upper", but is registered as "shout"`},
		{"action twice", rt.AddAction("echo", wasmgate.Route{Executor: "echo", Version: "*"}), `action "echo" is registered twice`},
		{"no such executor", rt.AddAction("ghost", wasmgate.Route{Executor: "ghost", Version: "*"}), `ghost: EXECUTOR_NOT_FOUND`},
		{"a version it does not match", rt.AddAction("echo2", wasmgate.Route{Executor: "echo", Version: "^2.0.0"}), `echo2: EXECUTOR_VERSION_INCOMPATIBLE`},
		{"a bad name", rt.AddAction("two words", wasmgate.Route{Executor: "echo", Version: "*"}), `may only hold printable ASCII without spaces`},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.err, wasmgate.ErrInvalidRegistry)
			assert.Contains(t, c.err.Error(), c.want)
		})
	}
	assert.Equal(t, []string{"echo", "math.sum"}, rt.Actions(), "a refused change changes nothing")
	res = execute(t, rt, wasmgate.ActionRequest{Action: "ghost", Payload: json.RawMessage(`{}`)})
	assert.Equal(t, []wasmgate.ReasonCode{"ACTION_UNKNOWN"}, res.ReasonCodes)
}

// A registry replaced whole serves the executions that start afterwards; a
// replacement that fails leaves the registry as it was.
func TestRuntimeReplacesRegistry(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, sumRegistry()...)
	echoOnly := func(ctx context.Context, engine wasmgate.Engine) (*pipeline.Registry, error) {
		reg := pipeline.NewRegistry()
		if err := reg.AddSource(ctx, engine, "echo", wasmgate.ExecutorSource{Wasm: "testdata/echo.wasm"}); err != nil {
			return nil, err
		}
		return reg, reg.AddAction("echo", wasmgate.Route{Executor: "echo", Version: "^1.0.0"})
	}
	require.NoError(t, rt.ReplaceRegistry(ctx, echoOnly))
	assert.Equal(t, []string{"echo"}, rt.Actions())
	res := execute(t, rt, wasmgate.ActionRequest{Action: "echo", Payload: json.RawMessage(`{"b":1,"a":2}`)})
	assert.JSONEq(t, `{"a":2,"b":1}`, string(res.Output))
	res = execute(t, rt, sumRequest(`{"numbers":[1,2]}`))
	assert.Equal(t, []wasmgate.ReasonCode{"ACTION_UNKNOWN"}, res.ReasonCodes, "the old registry is gone whole")

	failing := errors.New("the registry could not be fetched")
	refused := []struct {
		name  string
		build func(context.Context, wasmgate.Engine) (*pipeline.Registry, error)
		want  error
	}{
		{"nil function", nil, wasmgate.ErrInvalidOption},
		{"the function's error", func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) { return nil, failing }, failing},
		{"no registry", func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) { return nil, nil }, wasmgate.ErrInvalidRegistry},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, rt.ReplaceRegistry(ctx, c.build), c.want)
			assert.Equal(t, []string{"echo"}, rt.Actions(), "a refused replacement changes nothing")
		})
	}
	require.NoError(t, rt.Close(ctx))
	require.ErrorIs(t, rt.ReplaceRegistry(ctx, echoOnly), wasmgate.ErrClosed)
}

// Replacing a route or an executor takes effect from the next execution;
// a replacement that would block the routes to it is refused.
func TestRuntimeReplacesExecutorsAndActions(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, sumRegistry()...)
	require.NoError(t, rt.AddExecutor(ctx, "echo", wasmgate.ExecutorSource{Wasm: "testdata/echo.wasm"}))
	require.NoError(t, rt.ReplaceAction("math.sum", wasmgate.Route{Executor: "echo", Version: "*"}))
	res := execute(t, rt, sumRequest(`{"numbers":[1,2]}`))
	assert.Equal(t, "echo", res.ExecutorID)
	assert.JSONEq(t, `{"numbers":[1,2]}`, string(res.Output))

	require.NoError(t, rt.ReplaceAction("math.sum", wasmgate.Route{Executor: "sum", Version: "^1.0.0"}))
	require.NoError(t, rt.ReplaceExecutor(ctx, "sum", wasmgate.ExecutorSource{Wasm: "testdata/sum.wasm"}))
	res = execute(t, rt, sumRequest(`{"numbers":[1,2]}`))
	assert.JSONEq(t, `{"sum":3}`, string(res.Output))

	err := rt.ReplaceExecutor(ctx, "sum", wasmgate.ExecutorSource{Wasm: "testdata/upper.wasm"})
	require.ErrorIs(t, err, wasmgate.ErrInvalidRegistry)
	assert.Contains(t, err.Error(), `declares executor_id "upper", but is registered as "sum"`)
	err = rt.ReplaceAction("math.sum", wasmgate.Route{Executor: "sum", Version: "^3.0.0"})
	require.ErrorIs(t, err, wasmgate.ErrInvalidRegistry)
	res = execute(t, rt, sumRequest(`{"numbers":[1,2]}`))
	assert.JSONEq(t, `{"sum":3}`, string(res.Output), "refused replacements change nothing")
}

// heldExecutor answers with its name once release is closed.
type heldExecutor struct {
	name             string
	started, release chan struct{}
}

func (h *heldExecutor) Manifest() sandbox.Manifest {
	return sandbox.Manifest{ExecutorID: h.name, Version: "1.0.0"}
}
func (h *heldExecutor) ModuleDigest() string { return strings.Repeat("0", 64) }
func (h *heldExecutor) Execute(context.Context, sandbox.Input) (sandbox.Outcome, error) {
	if h.started != nil {
		close(h.started)
		<-h.release
	}
	return sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(`"` + h.name + `"`), FuelUsed: 1}, nil
}

// An execution sees one registry from start to end: a change made while it
// runs does not wait for it, and reaches only the executions after it.
func TestRuntimeChangesDoNotReachExecutionsUnderWay(t *testing.T) {
	ctx := context.Background()
	old := &heldExecutor{name: "old", started: make(chan struct{}), release: make(chan struct{})}
	rt := newRuntime(t, wasmgate.WithRegistry(func(context.Context, sandbox.Engine) (*pipeline.Registry, error) {
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor("old", old); err != nil {
			return nil, err
		}
		return reg, reg.AddAction("a", pipeline.Route{Executor: "old", Version: "*"})
	}))
	running := make(chan wasmgate.ActionResult)
	go func() {
		res, _ := rt.Execute(ctx, wasmgate.ActionRequest{Action: "a", Payload: json.RawMessage(`1`)})
		running <- res
	}()
	<-old.started
	require.NoError(t, rt.ChangeRegistry(ctx, func(_ context.Context, reg *pipeline.Registry, _ sandbox.Engine) error {
		if err := reg.AddExecutor("new", &heldExecutor{name: "new"}); err != nil {
			return err
		}
		reg.RemoveAction("a")
		return reg.AddAction("a", pipeline.Route{Executor: "new", Version: "*"})
	}), "the change is made while an execution runs")
	assert.Equal(t, `"new"`, string(execute(t, rt, wasmgate.ActionRequest{Action: "a", Payload: json.RawMessage(`1`)}).Output))
	close(old.release)
	assert.Equal(t, `"old"`, string((<-running).Output), "the execution under way keeps its registry")
}

// A dry run is an execution on the same registry and engine that records
// nothing: the verdict's record comes back with the result instead.
func TestRuntimeDryRunRecordsNothing(t *testing.T) {
	sink := audit.NewMemorySink()
	rt := newRuntime(t, append(sumRegistry(), wasmgate.WithAuditSink(sink))...)
	res, rec, err := rt.DryRun(context.Background(), sumRequest(`{"numbers":[1,2]}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"sum":3}`, string(res.Output))
	assert.Equal(t, audit.EventActionAudit, rec.EventType)
	assert.Equal(t, string(res.Status), rec.Status)
	assert.Equal(t, res.OutputDigest, rec.OutputDigest)
	assert.Len(t, rec.ModuleDigest, 64)
	assert.Empty(t, sink.Records(), "the runtime's log has nothing of it")
	assert.Nil(t, res.AuditIndex, "no log's tree has the dry run's verdict")
	assert.Equal(t, wasmgate.EngineWazero, rt.Engine())

	res, err = rt.Execute(context.Background(), sumRequest(`{"numbers":[1,2]}`))
	require.NoError(t, err)
	require.NotNil(t, res.AuditIndex, "an execution's verdict is in the log")
	assert.EqualValues(t, 1, *res.AuditIndex)
}

func TestRuntimeChangesAfterClose(t *testing.T) {
	ctx := context.Background()
	rt, err := wasmgate.New(ctx, sumRegistry()...)
	require.NoError(t, err)
	require.NoError(t, rt.Close(ctx))
	assert.ErrorIs(t, rt.AddExecutor(ctx, "echo", wasmgate.ExecutorSource{Wasm: "testdata/echo.wasm"}), wasmgate.ErrClosed)
	assert.ErrorIs(t, rt.AddAction("x", wasmgate.Route{Executor: "sum", Version: "*"}), wasmgate.ErrClosed)
	_, _, err = rt.DryRun(ctx, sumRequest(`{"numbers":[1]}`))
	assert.ErrorIs(t, err, wasmgate.ErrClosed)
	assert.Nil(t, rt.Actions())
	assert.ErrorIs(t, rt.ChangeRegistry(ctx, nil), wasmgate.ErrInvalidOption)
}

func TestRuntimeActionManifest(t *testing.T) {
	rt := newRuntime(t, sumRegistry()...)
	m, ok := rt.ActionManifest("math.sum")
	require.True(t, ok)
	assert.Equal(t, "sum", m.ExecutorID)
	_, ok = rt.ActionManifest("nope")
	assert.False(t, ok)
}

// A refusal run on a one-off registry is audited like any request, and the
// Runtime's registry does not grow by it, however many names are asked.
func TestRuntimeExecuteOnLeavesTheRegistryAlone(t *testing.T) {
	ctx := context.Background()
	sink := audit.NewMemorySink()
	rt := newRuntime(t, append(sumRegistry(), wasmgate.WithAuditSink(sink))...)
	for _, name := range []string{"bogus-a/t", "bogus-b/t", "bogus-c/t"} {
		own := pipeline.NewRegistry()
		require.NoError(t, own.AddMissing("bogus", assert.AnError))
		require.NoError(t, own.AddAction(name, pipeline.Route{Executor: "bogus", Version: "*"}))
		res, err := rt.ExecuteOn(ctx, wasmgate.ActionRequest{Action: name, Payload: json.RawMessage(`{}`)}, own)
		require.NoError(t, err)
		assert.Equal(t, wasmgate.StatusBlocked, res.Status)
		assert.Equal(t, []wasmgate.ReasonCode{"EXECUTOR_NOT_FOUND"}, res.ReasonCodes)
	}
	assert.Equal(t, []string{"math.sum"}, rt.Actions(), "no action per name asked")
	assert.Equal(t, []string{"sum"}, rt.Executors())
	var actions []string
	for _, r := range sink.Verdicts() {
		actions = append(actions, r.Action)
	}
	assert.Equal(t, []string{"bogus-a/t", "bogus-b/t", "bogus-c/t"}, actions, "each refusal is audited")
	_, err := rt.ExecuteOn(ctx, sumRequest(`{"numbers":[1]}`), nil)
	require.ErrorIs(t, err, wasmgate.ErrInvalidOption)
}

// A tool a front shares becomes an action of the Runtime; sharing it again
// (another front) changes nothing; a tool whose name another holds runs on
// a registry of its own, and the one holding the name keeps it.
func TestShareTool(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, sumRegistry()...)
	var echo, upper pipeline.Executor
	require.NoError(t, rt.UseEngine(ctx, func(ctx context.Context, engine sandbox.Engine) (err error) {
		if echo, err = pipeline.LoadExecutor(ctx, engine, wasmgate.ExecutorSource{Wasm: "testdata/echo.wasm"}); err != nil {
			return err
		}
		upper, err = pipeline.LoadExecutor(ctx, engine, wasmgate.ExecutorSource{Wasm: "testdata/upper.wasm"})
		return err
	}))
	route := pipeline.Route{Executor: "echo", Version: "*"}
	own, err := pipeline.ShareTool(ctx, rt, "pkg/echo", route, echo)
	require.NoError(t, err)
	assert.Nil(t, own, "shared")
	own, err = pipeline.ShareTool(ctx, rt, "pkg/echo", route, echo)
	require.NoError(t, err)
	assert.Nil(t, own, "shared already")
	assert.Equal(t, []string{"math.sum", "pkg/echo"}, rt.Actions())
	res := execute(t, rt, wasmgate.ActionRequest{Action: "pkg/echo", Payload: json.RawMessage(`{"a":1}`)})
	assert.JSONEq(t, `{"a":1}`, string(res.Output))

	own, err = pipeline.ShareTool(ctx, rt, "pkg/echo", pipeline.Route{Executor: "upper", Version: "*"}, upper)
	require.NoError(t, err)
	require.NotNil(t, own, "the action is taken")
	res, err = rt.ExecuteOn(ctx, wasmgate.ActionRequest{Action: "pkg/echo", Payload: json.RawMessage(`{"text":"a"}`)}, own)
	require.NoError(t, err)
	assert.JSONEq(t, `{"text":"A"}`, string(res.Output), res.Message)
	assert.Equal(t, []string{"echo", "sum"}, rt.Executors(), "the shared registry is as it was")
}

// An executor added at run time is loaded with the Runtime's kinds, as
// those New loads are: a JS tool added to a Runtime given the JavaScript
// kind runs.
func TestRuntimeAddsExecutorsOfItsKinds(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, append(sumRegistry(), wasmgate.WithKind(js.Kind()))...)
	require.NoError(t, rt.AddExecutor(ctx, "slugify", wasmgate.ExecutorSource{JS: "guests/js/slugify.ts"}))
	require.NoError(t, rt.AddAction("text.slug", wasmgate.Route{Executor: "slugify", Version: "^1.0.0", Capabilities: []string{"TEXT"}}))
	res := execute(t, rt, wasmgate.ActionRequest{Action: "text.slug", Payload: json.RawMessage(`{"title": "A Tool Added Later"}`)})
	assert.Equal(t, wasmgate.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"removed":["a"],"slug":"tool-added-later"}`, string(res.Output))
}
