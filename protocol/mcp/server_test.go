package mcp_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/protocol/mcp"
)

// fakeExecutor is an executor written in Go, with the manifest a test gives.
type fakeExecutor struct {
	m   sandbox.Manifest
	run func(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error)
}

func (f fakeExecutor) Manifest() sandbox.Manifest { return f.m }
func (f fakeExecutor) ModuleDigest() string       { return strings.Repeat("0", 64) }
func (f fakeExecutor) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	return f.run(ctx, in)
}

// sum adds {"numbers":[...]} up, as the sum guest does.
func sum(_ context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	var p struct{ Numbers []float64 }
	if err := json.Unmarshal(in.Bytes, &p); err != nil {
		return sandbox.Outcome{Kind: sandbox.Failed, Message: err.Error()}, nil
	}
	total := 0.0
	for _, n := range p.Numbers {
		total += n
	}
	out, _ := json.Marshal(map[string]float64{"sum": total})
	return sandbox.Outcome{Kind: sandbox.Completed, Output: out, FuelUsed: 42}, nil
}

const sumInput = `{"type":"object","properties":{"numbers":{"type":"array","items":{"type":"number"}}},"required":["numbers"]}`
const sumOutput = `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`

type fixture struct {
	p       *pipeline.Pipeline
	sink    *audit.MemorySink
	server  *mcp.Server
	release chan struct{} // closing it ends every "wait" call
	started chan struct{} // a "wait" call started
}

func newFixture(t *testing.T, cfg mcp.Config) *fixture {
	return newFixtureWith(t, cfg, nil)
}

// newFixtureWith takes the catalog from catalog(f) when it is not nil.
func newFixtureWith(t *testing.T, cfg mcp.Config, catalog func(f *fixture) mcp.Catalog) *fixture {
	t.Helper()
	f := &fixture{sink: audit.NewMemorySink(), release: make(chan struct{}), started: make(chan struct{}, 16)}
	reg := pipeline.NewRegistry()
	add := func(id string, m sandbox.Manifest, run func(context.Context, sandbox.Input) (sandbox.Outcome, error)) {
		m.ExecutorID, m.Version, m.Limits = id, "1.2.3", sandbox.DefaultLimits()
		require.NoError(t, reg.AddExecutor(id, fakeExecutor{m: m, run: run}))
	}
	add("sum", sandbox.Manifest{Title: "Sum", Description: "Adds numbers up.",
		InputSchema: json.RawMessage(sumInput), OutputSchema: json.RawMessage(sumOutput)}, sum)
	add("fuel", sandbox.Manifest{}, func(context.Context, sandbox.Input) (sandbox.Outcome, error) {
		return sandbox.Outcome{Kind: sandbox.FuelExhausted, Message: "fuel exhausted after 1000 units", FuelUsed: 1000}, nil
	})
	add("wait", sandbox.Manifest{}, func(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
		f.started <- struct{}{}
		select {
		case <-ctx.Done():
			return sandbox.Outcome{}, ctx.Err()
		case <-f.release:
			return sandbox.Outcome{Kind: sandbox.Completed, Output: in.Bytes}, nil
		}
	})
	require.NoError(t, reg.AddAction("math.sum", pipeline.Route{Executor: "sum", Version: "^1.0.0"}))
	require.NoError(t, reg.AddAction("spin", pipeline.Route{Executor: "fuel", Version: "*"}))
	require.NoError(t, reg.AddAction("slow.echo", pipeline.Route{Executor: "wait", Version: "*"}))
	f.p = pipeline.New(reg, f.sink)
	cfg.Catalog = mcp.RegistryTools(f.p)
	if catalog != nil {
		cfg.Catalog = catalog(f)
	}
	var err error
	f.server, err = mcp.New(context.Background(), cfg)
	require.NoError(t, err)
	return f
}

// connect opens a session of the SDK's own client with the server, in
// process.
func (f *fixture) connect(t *testing.T, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ss, err := f.server.SDK().Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestListTools(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	cs := f.connect(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	got, err := json.Marshal(res.Tools)
	require.NoError(t, err)
	assert.JSONEq(t, `[
	  {"name":"math.sum","title":"Sum","description":"Adds numbers up.",
	   "inputSchema":`+sumInput+`,"outputSchema":`+sumOutput+`,
	   "annotations":{"title":"Sum","readOnlyHint":true,"idempotentHint":true,"destructiveHint":false,"openWorldHint":false}},
	  {"name":"slow.echo","description":"Runs action slow.echo (executor wait 1.2.3) in wasmgate's sandbox.",
	   "inputSchema":{"type":"object"},
	   "annotations":{"readOnlyHint":true,"idempotentHint":true,"destructiveHint":false,"openWorldHint":false}},
	  {"name":"spin","description":"Runs action spin (executor fuel 1.2.3) in wasmgate's sandbox.",
	   "inputSchema":{"type":"object"},
	   "annotations":{"readOnlyHint":true,"idempotentHint":true,"destructiveHint":false,"openWorldHint":false}}
	]`, string(got))
}

func TestCallSuccess(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	cs := f.connect(t, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{
		Meta:      sdk.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		Name:      "math.sum",
		Arguments: map[string]any{"numbers": []int{1, 2, 3}},
	})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	require.Len(t, res.Content, 1)
	assert.Equal(t, `{"sum":6}`, res.Content[0].(*sdk.TextContent).Text)
	assert.Equal(t, map[string]any{"sum": 6.0}, res.StructuredContent)
	verdict := res.Meta["wasmgate/result"].(map[string]any)
	assert.Equal(t, "SUCCESS", verdict["status"])
	assert.Equal(t, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", verdict["trace_id"])
	assert.EqualValues(t, 42, verdict["fuel_used"])
	assert.NotContains(t, verdict, "output")
	assert.EqualValues(t, 1, verdict["audit_index"], "the verdict is the log's second record: leaf 1")

	recs := f.sink.Records()
	require.Len(t, recs, 2, "an attempt and a verdict")
	assert.Equal(t, audit.EventActionAudit, recs[1].EventType)
	assert.Equal(t, "math.sum", recs[1].Action)
	assert.Equal(t, "SUCCESS", recs[1].Status)
	assert.Equal(t, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", recs[1].TraceID)
	assert.Equal(t, audit.Digest([]byte(`{"numbers":[1,2,3]}`)), recs[1].InputDigest)
}

func TestCallInvalidInput(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	cs := f.connect(t, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{
		Name: "math.sum", Arguments: map[string]any{"numbers": []any{1, "two"}},
	})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	text := res.Content[0].(*sdk.TextContent).Text
	assert.True(t, strings.HasPrefix(text, "BLOCKED INPUT_SCHEMA_INVALID: "), text)
	assert.Contains(t, text, "/numbers/1")
	assert.Nil(t, res.StructuredContent)
	recs := f.sink.Records()
	require.Len(t, recs, 1, "a verdict and no attempt: nothing ran")
	assert.Equal(t, "BLOCKED", recs[0].Status)
	assert.Equal(t, []string{"INPUT_SCHEMA_INVALID"}, recs[0].ReasonCodes)
}

func TestCallLimitHit(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	cs := f.connect(t, nil)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "spin", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "BLOCKED LIMIT_EXCEEDED, FUEL_EXHAUSTED: fuel exhausted after 1000 units", res.Content[0].(*sdk.TextContent).Text)
	verdict := res.Meta["wasmgate/result"].(map[string]any)
	assert.Equal(t, []any{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}, verdict["reason_codes"])
}

func TestCallUnknownTool(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	cs := f.connect(t, nil)
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown tool "nope"`)
	assert.Empty(t, f.sink.Records())
}

// A client that cancels a call (notifications/cancelled) stops the
// execution; the action is audited as cancelled.
func TestCallCancelled(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	cs := f.connect(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow.echo", Arguments: map[string]any{"x": 1}})
		errc <- err
	}()
	<-f.started
	cancel()
	require.Error(t, <-errc)
	require.Eventually(t, func() bool { return len(f.sink.Records()) == 2 }, 10*time.Second, 10*time.Millisecond)
	v := f.sink.Records()[1]
	assert.Equal(t, "BLOCKED", v.Status)
	assert.Equal(t, []string{"EXECUTOR_TIMEOUT"}, v.ReasonCodes)
}

// A call that runs past ProgressAfter sends progress notifications to a
// client that gave a progress token.
func TestProgress(t *testing.T) {
	f := newFixture(t, mcp.Config{ProgressAfter: 50 * time.Millisecond, ProgressEvery: 50 * time.Millisecond})
	var mu sync.Mutex
	var got []*sdk.ProgressNotificationParams
	cs := f.connect(t, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Params)
	}})
	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{
			Meta: sdk.Meta{"progressToken": "tok-1"}, Name: "slow.echo", Arguments: map[string]any{"x": 1},
		})
		assert.NoError(t, err)
		done <- res
	}()
	<-f.started
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) >= 2 }, 10*time.Second, 10*time.Millisecond)
	close(f.release)
	res := <-done
	assert.False(t, res.IsError)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "tok-1", got[0].ProgressToken)
	assert.Less(t, got[0].Progress, got[1].Progress, "progress increases")
	assert.Contains(t, got[0].Message, "slow.echo: running for")
}

// A tool added to the catalog is announced with tools/list_changed, and
// listed.
func TestListChanged(t *testing.T) {
	var extra atomic.Bool
	f := newFixtureWith(t, mcp.Config{}, func(f *fixture) mcp.Catalog {
		return func(ctx context.Context) ([]mcp.Tool, error) {
			tools, err := mcp.RegistryTools(f.p)(ctx)
			if extra.Load() {
				m := sandbox.Manifest{ExecutorID: "sum", Version: "1.2.3", Description: "The same, again."}
				tools = append(tools, mcp.Tool{Name: "math.sum2", Action: "math.sum", Runner: f.p, Manifest: m})
			}
			return tools, err
		}
	})
	changed := make(chan struct{}, 4)
	cs := f.connect(t, &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	require.NoError(t, f.server.Refresh(context.Background()))
	select {
	case <-changed:
		t.Fatal("a refresh that changed nothing announced a change")
	case <-time.After(200 * time.Millisecond):
	}
	extra.Store(true)
	require.NoError(t, f.server.Refresh(context.Background()))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed")
	}
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"math.sum", "math.sum2", "slow.echo", "spin"}, names)
	assert.Equal(t, []string{"math.sum", "math.sum2", "slow.echo", "spin"}, f.server.Names())
}

// Over streamable HTTP, with the SDK's client transport.
func TestStreamableHTTP(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	srv := httptest.NewServer(f.server.HTTPHandler(mcp.HTTPConfig{}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "math.sum", Arguments: map[string]any{"numbers": []float64{0.5, 2}}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, map[string]any{"sum": 2.5}, res.StructuredContent)
}

func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"math.sum":               "math.sum",
		"@tpmjs/hello/greet":     "tpmjs_hello_greet",
		"a b//c":                 "a_b_c",
		strings.Repeat("x", 200): strings.Repeat("x", 128),
	} {
		assert.Equal(t, want, mcp.ToolName(in), in)
	}
}
