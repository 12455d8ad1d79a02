package httpexec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/admission"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/internal/testenv"
)

// toolBundle is the source of the npm package the tests serve; toolStore
// lays it out as `wasmgate tools add` leaves it, installed and bundled.
const toolBundle = `
export const shout = { execute: ({ s }) => ({ s: s.toUpperCase() + "!" }) };
export const boom = { execute: () => { throw new Error("boom: " + 42); } };
export const spin = { execute: () => { for (;;) {} } };
export const notool = 42;
export const configured = (env) => env && env.REGION ? { execute: () => ({ region: env.REGION }) } : null;
export const needsRegion = (env) => {
  if (!env) throw new Error("REGION is required");
  return { execute: () => ({ region: env.REGION }) };
};
export const fromEnv = { execute: () => ({ region: process.env.REGION ?? null, frozen: Object.isFrozen(process.env) }) };
export const broken = (env) => { throw new TypeError(env ? "still broken" : "broken"); };
export class Klass { execute() { return 1; } }
export const nested = { default: 1 };
`

var testEngine sandbox.Engine

func TestMain(m *testing.M) {
	if _, err := jstool.EngineModule(); err != nil {
		panic(err.Error() + " (make test fetches it)")
	}
	e, err := sandbox.NewEngine(context.Background(), enginetest.Config(sandbox.EngineWazero))
	if err != nil {
		panic(err)
	}
	testEngine = e
	os.Exit(m.Run())
}

// toolStore holds the tools of toolBundle twice: as acme-tools, at the
// default limits, and as acme-slow, whose 300 ms clock (with fuel that
// cannot run out first) stops spin. Only spin is called there: a tool
// that must finish does not share a clock that short with the machine's
// load (the race detector's included).
func toolStore(t *testing.T) jstool.Store {
	t.Helper()
	dir := t.TempDir()
	for name, limits := range map[string]string{
		"acme-tools": "",
		"acme-slow":  `,"wasmgate":{"limits":{"timeout_ms":300,"fuel":4000000000000000000}}`,
	} {
		entry := filepath.Join(dir, name+"@1.0.0")
		pkg := filepath.Join(entry, "node_modules", name)
		require.NoError(t, os.MkdirAll(pkg, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pkg, "index.mjs"), []byte(toolBundle), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(pkg, "package.json"),
			[]byte(`{"name":"`+name+`","version":"1.0.0","type":"module","main":"index.mjs"`+limits+`}`), 0o644))
		// Bundled as the store bundles what npm installed, Node's globals
		// included.
		b, err := jstool.BundlePackage(entry, name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(entry, "bundle.mjs"), b.Source, 0o644))
	}
	return jstool.Store{Dir: dir}
}

type fixture struct {
	srv  *Server
	sink *audit.MemorySink
}

// fixtureConfig is a server's Config and what its Runtime is opened with:
// Registry (nil: none), Sink (a memory sink by default).
type fixtureConfig struct {
	Config
	Registry *pipeline.Registry
	Sink     audit.Sink
}

func newFixture(t *testing.T, mutate func(*fixtureConfig)) fixture {
	t.Helper()
	reg, err := pipeline.LoadRegistry(context.Background(), filepath.Join("..", "..", "testdata", "tools.json"), testEngine, js.Kind())
	require.NoError(t, err)
	sink := audit.NewMemorySink()
	cfg := fixtureConfig{Config: Config{Store: toolStore(t), ImplementationVersion: "9.9.9", NPMAllow: []string{"acme-*"}}, Registry: reg, Sink: sink}
	if mutate != nil {
		mutate(&cfg)
	}
	cfg.Runtime = newRuntime(t, cfg.Registry, cfg.Sink)
	return fixture{srv: NewServer(cfg.Config), sink: sink}
}

// newRuntime opens a Runtime on reg (nil: an empty registry) auditing to
// sink, closed when the test ends. The registry's executors were loaded
// on testEngine, which outlives it.
func newRuntime(t *testing.T, reg *pipeline.Registry, sink audit.Sink, opts ...wg.Option) *wg.Runtime {
	t.Helper()
	if reg == nil {
		reg = pipeline.NewRegistry()
	}
	opts = append([]wg.Option{
		wg.WithCompilationCacheDir(testenv.CacheDir()),
		wg.WithRegistry(func(context.Context, sandbox.Engine) (*pipeline.Registry, error) { return reg, nil }),
		wg.WithAuditSink(sink),
	}, opts...)
	rt, err := wg.New(context.Background(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (f fixture) do(t *testing.T, method, path, body string, headers ...string) reply {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if method == http.MethodPost {
		// The protocol's request type; a test of another sets its own.
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	f.srv.ServeHTTP(w, req)
	raw, _ := io.ReadAll(w.Result().Body)
	r := reply{status: w.Code, header: w.Header(), raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &r.body), string(raw))
	}
	return r
}

func errorCode(r reply) string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func errorMessage(r reply) string {
	e, _ := r.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

func execute(pkg, name, params string) string {
	return `{"packageName":"` + pkg + `","version":"1.0.0","name":"` + name + `","params":` + params + `}`
}

func TestHealthAndInfo(t *testing.T) {
	f := newFixture(t, nil)
	for _, path := range []string{"/health", "/api/health"} {
		r := f.do(t, "GET", path, "")
		require.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, "ok", r.body["status"])
		assert.Equal(t, "1.0", r.body["protocolVersion"])
		assert.Equal(t, "9.9.9", r.body["implementationVersion"])
		assert.NotContains(t, r.body, "runtime", "the spec allows node, deno or bun only")
		_, err := time.Parse(time.RFC3339, r.body["timestamp"].(string))
		assert.NoError(t, err)
	}
	for _, path := range []string{"/info", "/api/info"} {
		r := f.do(t, "GET", path, "")
		require.Equal(t, http.StatusOK, r.status)
		caps := r.body["capabilities"].(map[string]any)
		assert.Equal(t, "vm", caps["isolation"])
		assert.Equal(t, []any{"sync"}, caps["executionModes"])
		assert.Equal(t, float64(60000), caps["maxExecutionTimeMs"])
		assert.Equal(t, float64(DefaultMaxBodyBytes), caps["maxRequestBodyBytes"])
		assert.Equal(t, float64(4*runtime.GOMAXPROCS(0)), caps["maxConcurrency"], "4 calls per CPU by default")
		for _, flag := range []string{"supportsStreaming", "supportsCallbacks", "supportsCaching"} {
			assert.Equal(t, false, caps[flag], flag)
		}
		rt := r.body["runtime"].(map[string]any)
		assert.Contains(t, []string{"linux", "darwin", "win32"}, rt["platform"], "the OpenAPI enum of platforms")
	}
}

func TestCORSAndVersionHeaderOnEveryResponse(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.APIKey = "k" })
	for _, r := range []reply{
		f.do(t, "GET", "/health", "", "Authorization", "Bearer k", VersionHeader, "1.0"),
		f.do(t, "GET", "/nope", "", "Authorization", "Bearer k"),
		f.do(t, "POST", "/execute-tool", "{}"), // 401
		f.do(t, "OPTIONS", "/execute-tool", ""),
	} {
		assert.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"), r.status)
		assert.Equal(t, "GET, POST, OPTIONS", r.header.Get("Access-Control-Allow-Methods"), r.status)
		assert.Contains(t, r.header.Get("Access-Control-Allow-Headers"), "Authorization")
		assert.Equal(t, "1.0", r.header.Get(VersionHeader), r.status)
	}
	for _, path := range []string{"/execute-tool", "/api/execute-tool", "/health", "/info", "/api/info"} {
		pre := f.do(t, "OPTIONS", path, "")
		assert.Equal(t, http.StatusOK, pre.status, "a preflight is answered 200 (the spec's status), without a key: %s", path)
		assert.Empty(t, pre.raw)
	}
}

func TestAuth(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.APIKey = "s3cret" })
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}, {"Authorization", "Bearer s3cret2"}} {
		r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`), h...)
		assert.Equal(t, http.StatusUnauthorized, r.status, h)
		assert.Equal(t, CodeUnauthorized, errorCode(r))
		assert.Equal(t, false, r.body["success"])
	}
	for _, path := range []string{"/api/execute-tool", "/execute-tool"} {
		r := f.do(t, "POST", path, execute("acme-tools", "shout", `{"s":"a"}`))
		assert.Equal(t, http.StatusUnauthorized, r.status, path)
		assert.Equal(t, "AUTHENTICATION_REQUIRED", r.body["errorCode"], path)
		assert.Equal(t, "request", r.body["errorStage"], path)
	}
	// The OpenAPI description secures /execute-tool alone: health, info
	// and metrics answer without the key.
	for _, path := range []string{"/health", "/api/health", "/info", "/api/info", "/metrics"} {
		assert.Equal(t, http.StatusOK, f.do(t, "GET", path, "").status, path)
	}
	r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`), "Authorization", "Bearer s3cret")
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, true, r.body["success"], r.raw)
	assert.Len(t, f.sink.Verdicts(), 1, "only the authorized call ran, and it was audited")
}

func TestAuthAll(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.APIKey, c.AuthAll = "s3cret", true })
	for _, rq := range []struct{ method, path string }{
		{"GET", "/health"}, {"GET", "/api/info"}, {"GET", "/metrics"}, {"POST", "/execute-tool"}, {"GET", "/nope"},
	} {
		r := f.do(t, rq.method, rq.path, "")
		assert.Equal(t, http.StatusUnauthorized, r.status, rq.path)
		assert.Equal(t, CodeUnauthorized, errorCode(r), rq.path)
	}
	assert.Equal(t, http.StatusOK, f.do(t, "GET", "/health", "", "Authorization", "Bearer s3cret").status)
	assert.Equal(t, http.StatusOK, f.do(t, "OPTIONS", "/health", "").status, "preflights stay open")
}

func TestRoutesAndMethods(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do(t, "GET", "/execute", "")
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, CodeNotFound, errorCode(r))
	r = f.do(t, "GET", "/execute-tool", "")
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, CodeMethodNotAllowed, errorCode(r))
	assert.Equal(t, "POST, OPTIONS", r.header.Get("Allow"))
	r = f.do(t, "POST", "/health", "")
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
}

func TestInvalidRequests(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.MaxBodyBytes = 200 })
	cases := []struct{ body, msg string }{
		{``, "the request body is empty"},
		{`{"packageName":`, "the request body is not valid JSON"},
		{`[1]`, "the request body must be a JSON object"},
		{`{"name":"x"}`, "packageName is required"},
		{`{"packageName":"p"}`, "name is required"},
		{`{"packageName":7,"name":"x"}`, "packageName must be a string, not number"},
		{`{"packageName":"p","name":"x","params":[1]}`, "params must be a JSON object"},
		{`{"packageName":"p","name":"x","env":"A=1"}`, "env must be a JSON object"},
		{`{"packageName":"p","name":"x"} {}`, "more than one JSON value"},
		// Strict: exact key case, no key twice (the last would silently win).
		{`{"PackageName":"p","name":"x"}`, `the request body has the key "PackageName"; the protocol's field is "packageName" (keys are case-sensitive)`},
		{`{"packageName":"p","NAME":"x"}`, `the request body has the key "NAME"; the protocol's field is "name"`},
		{`{"packageName":"p","name":"x","name":"y"}`, `the request body has the key "name" twice`},
		{`{"packageName":"p","name":"x","env":{"K":"1","K":"2"}}`, `env has the key "K" twice`},
	}
	for _, c := range cases {
		r := f.do(t, "POST", "/execute-tool", c.body)
		assert.Equal(t, http.StatusBadRequest, r.status, c.body)
		assert.Equal(t, CodeInvalidRequest, errorCode(r), c.body)
		assert.Contains(t, errorMessage(r), c.msg, c.body)
	}
	r := f.do(t, "POST", "/execute-tool", `{"packageName":"p","name":"x","params":{"s":"`+strings.Repeat("a", 300)+`"}}`)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Equal(t, CodePayloadTooLarge, errorCode(r))
	assert.Equal(t, "request body exceeds 200 bytes (maxRequestBodyBytes)", errorMessage(r))
}

// Package names are checked before the store or npm sees them: no path
// traversal, no shell.
func TestPackageNamesAreValidated(t *testing.T) {
	f := newFixture(t, nil)
	for _, name := range []string{"../../etc", "a/b/c", "x; rm -rf /", "$(id)", "UPPER", "@scope/../x"} {
		body, _ := json.Marshal(map[string]any{"packageName": name, "version": "1.0.0", "name": "t"})
		r := f.do(t, "POST", "/execute-tool", string(body))
		assert.Equal(t, http.StatusBadRequest, r.status, name)
		assert.Equal(t, CodeInvalidRequest, errorCode(r), name)
		assert.Contains(t, errorMessage(r), "packageName/version: INVALID_SPEC", name)
	}
}

// Failures also carry the typed classification of the protocol's 1.1
// (errorStage, errorCode, retryable) that the authors' compliance suite
// checks; successes carry none of it.
func TestTypedFailures(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		name, method, path, body string
		stage, code              string
		retryable                bool
	}{
		{"thrown", "POST", "/execute-tool", execute("acme-tools", "boom", `{}`), "execute", "TOOL_EXECUTION_FAILED", false},
		{"wall clock", "POST", "/execute-tool", execute("acme-slow", "spin", `{}`), "execute", "EXECUTION_TIMEOUT", true},
		{"missing export", "POST", "/execute-tool", execute("acme-tools", "nope", `{}`), "load", "TOOL_NOT_FOUND", false},
		{"class", "POST", "/execute-tool", execute("acme-tools", "Klass", `{}`), "load", "INVALID_TOOL", false},
		{"malformed", "POST", "/execute-tool", `{`, "request", "INVALID_REQUEST", false},
		{"unknown route", "GET", "/nope", "", "request", "INVALID_REQUEST", false},
	}
	for _, c := range cases {
		r := f.do(t, c.method, c.path, c.body)
		assert.Equal(t, false, r.body["success"], c.name)
		assert.Equal(t, c.stage, r.body["errorStage"], c.name)
		assert.Equal(t, c.code, r.body["errorCode"], c.name)
		assert.Equal(t, c.retryable, r.body["retryable"], c.name)
	}
	r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`))
	require.Equal(t, true, r.body["success"], r.raw)
	for _, k := range []string{"error", "errorStage", "errorCode", "retryable"} {
		assert.NotContains(t, r.body, k)
	}
}

func TestToolOutcomes(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		name, body, code, msg, output string
	}{
		{"success", execute("acme-tools", "shout", `{"s":"hi"}`), "", "", `{"s":"HI!"}`},
		{"thrown", execute("acme-tools", "boom", `{}`), CodeToolExecutionError, "Error: boom: 42", ""},
		{"timeout", execute("acme-slow", "spin", `{}`), CodeExecutionTimeout, "timeout_ms elapsed (EXECUTOR_TIMEOUT)", ""},
		{"missing export", execute("acme-tools", "nope", `{}`), CodeToolNotFound, `TOOL_NOT_FOUND: acme-tools@1.0.0: the tool exports no "nope"`, ""},
		{"no execute", execute("acme-tools", "notool", `{}`), CodeToolInvalid, "TOOL_INVALID: acme-tools@1.0.0: export \"notool\" is a number with no execute function, not a tool", ""},
		{"an object with a default", execute("acme-tools", "nested", `{}`), CodeToolInvalid, "export \"nested\" is an object with no execute function, not a tool", ""},
		{"class", execute("acme-tools", "Klass", `{}`), CodeToolInvalid, "export \"Klass\" is a class, not a tool", ""},
		{"factory without env", execute("acme-tools", "configured", `{}`), CodeToolInvalid,
			"the factory gave no tool: called with no argument it returned null with no execute function; called with the env it returned null with no execute function", ""},
		{"factory that throws twice", execute("acme-tools", "broken", `{}`), CodeToolInvalid,
			"the factory gave no tool: called with no argument it threw TypeError: broken; called with the env it threw TypeError: still broken", ""},
		{"factory that throws without the env", `{"packageName":"acme-tools","version":"1.0.0","name":"needsRegion","env":{"REGION":"eu"}}`, "", "", `{"region":"eu"}`},
		{"process.env is the request's env", `{"packageName":"acme-tools","version":"1.0.0","name":"fromEnv","env":{"REGION":"eu"}}`, "", "", `{"region":"eu","frozen":true}`},
		{"process.env without env", execute("acme-tools", "fromEnv", `{}`), "", "", `{"region":null,"frozen":true}`},
		{"registry action", `{"packageName":"text.slug","name":"any","params":{"title":"A Tale of Two"}}`, "", "", `{"removed":["a","of"],"slug":"tale-two"}`},
		{"registry executor", `{"packageName":"upper","name":"any","params":{"text":"abc"}}`, "", "", `{"text":"ABC"}`},
		{"a key a later protocol version adds", `{"packageName":"upper","name":"any","params":{"text":"abc"},"importUrl":"https://esm.sh/x"}`, "", "", `{"text":"ABC"}`},
		{"registry action, params against its input schema", `{"packageName":"text.slug","name":"any","params":{"title":1}}`, CodeInvalidRequest,
			"payload does not match the input schema at /title: got number, want string (INPUT_SCHEMA_INVALID)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := f.do(t, "POST", "/execute-tool", c.body)
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.GreaterOrEqual(t, r.body["executionTimeMs"], float64(0))
			if c.code == "" {
				require.Equal(t, true, r.body["success"], r.raw)
				out, _ := json.Marshal(r.body["output"])
				assert.JSONEq(t, c.output, string(out))
				return
			}
			assert.Equal(t, false, r.body["success"])
			assert.Equal(t, c.code, errorCode(r), r.raw)
			assert.Contains(t, errorMessage(r), c.msg)
		})
	}
}

// env reaches a factory as configuration and appears nowhere else: not in
// the audit records (which hold its digest), not in the response.
func TestEnvIsConfigurationOnly(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"packageName":"acme-tools","version":"1.0.0","name":"configured","params":{},"env":{"REGION":"eu-west-9z"}}`
	r := f.do(t, "POST", "/execute-tool", body)
	require.Equal(t, true, r.body["success"], r.raw)
	assert.Equal(t, map[string]any{"region": "eu-west-9z"}, r.body["output"])
	recs := f.sink.Verdicts()
	require.Len(t, recs, 1)
	b, err := json.Marshal(recs[0])
	require.NoError(t, err)
	assert.NotContains(t, string(b), "eu-west-9z")
	assert.NotContains(t, string(b), "REGION")
	require.NotNil(t, recs[0].EnvDigest, "the env is audited, as a digest")
	assert.Equal(t, audit.Digest([]byte(`{"REGION":"eu-west-9z"}`)), *recs[0].EnvDigest)
}

func TestTraceIDs(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`),
		"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	assert.Equal(t, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", r.header.Get("X-Trace-Id"))
	r = f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`),
		"X-Trace-Id", "0F0E0D0C-0B0A-4908-8706-050403020100")
	assert.Equal(t, "0f0e0d0c-0b0a-4908-8706-050403020100", r.header.Get("X-Trace-Id"))
	recs := f.sink.Verdicts()
	require.Len(t, recs, 2)
	assert.Equal(t, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736", recs[0].TraceID)
	assert.Equal(t, "0f0e0d0c-0b0a-4908-8706-050403020100", recs[1].TraceID)

	cases := map[string]http.Header{
		"":                                     {"X-Trace-Id": {"not-a-trace"}},
		"00000000-0000-4000-8000-000000000001": {"X-Trace-Id": {"00000000000040008000000000000001"}},
		"11111111-2222-3333-4444-555555555555": {"Traceparent": {"00-11111111222233334444555555555555-0000000000000001-00"}, "X-Trace-Id": {"ignored"}},
	}
	for want, h := range cases {
		assert.Equal(t, want, traceIDFrom(h), h)
	}
	assert.Equal(t, "", traceIDFrom(http.Header{"Traceparent": {"00-00000000000000000000000000000000-0000000000000001-00"}}), "the all-zero trace id is invalid")
}

// A call the server's gate refuses is labelled by why.
func TestAdmitRefusals(t *testing.T) {
	ctx := context.Background()
	// One slot, held: the next caller waits in the queue, then gives up.
	s := &Server{gate: admission.NewQueued(1, 1, time.Millisecond)}
	release, why := s.admit(ctx)
	require.Equal(t, "", why)
	_, why = s.admit(ctx)
	assert.Equal(t, refusedQueueWait, why, "the wait ran out")
	release()

	// No room to wait: refused at once.
	s = &Server{gate: admission.NewQueued(1, 0, time.Hour)}
	release, why = s.admit(ctx)
	require.Equal(t, "", why)
	_, why = s.admit(ctx)
	assert.Equal(t, refusedQueueFull, why, "the queue is full")
	release()

	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, why = s.admit(gone)
	assert.Equal(t, refusedClientGone, why, "a client that left gets no slot")
	release, why = s.admit(ctx)
	require.Equal(t, "", why, "the refusals held nothing")
	release()
}

func TestSaturationIs503(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.MaxConcurrency = 1; c.QueueLength = 1; c.QueueWait = time.Millisecond })
	// Hold the only slot: the call waits its QueueWait for it in vain,
	// however loaded the machine. (TestAdmitRefusals: a full queue.)
	release, why := f.srv.admit(context.Background())
	require.Equal(t, "", why)
	defer release()
	r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`))
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	assert.Equal(t, CodeServiceUnavailable, errorCode(r))
	assert.Empty(t, f.sink.Verdicts(), "nothing ran, nothing was audited")
	m := f.do(t, "GET", "/metrics", "")
	assert.Contains(t, m.raw, `wasmgate_admission_refusals_total{reason="queue_wait"} 1`)
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, nil)
	f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`))
	f.do(t, "POST", "/execute-tool", execute("acme-tools", "boom", `{}`))
	f.do(t, "POST", "/execute-tool", `{}`)
	r := f.do(t, "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, r.status)
	for _, line := range []string{
		`wasmgate_tool_calls_total{error_code="",status="SUCCESS"} 1`,
		`wasmgate_tool_calls_total{error_code="TOOL_EXECUTION_ERROR",status="FAILED"} 1`,
		`wasmgate_tool_calls_total{error_code="INVALID_REQUEST",status="REFUSED"} 1`,
		`wasmgate_tool_call_reason_codes_total{reason_code="EXECUTOR_EXCEPTION"} 1`,
		`wasmgate_tool_calls_in_flight 0`,
		`wasmgate_http_request_duration_seconds_count{code="200",route="/execute-tool"} 2`,
		`wasmgate_http_request_duration_seconds_count{code="400",route="/execute-tool"} 1`,
	} {
		assert.Contains(t, r.raw, line)
	}
}

// Each verdict maps to the protocol's error from its classification, not
// its message: the messages here say nothing of the kind.
func TestMapResult(t *testing.T) {
	res := func(status pipeline.Status, ran bool, codes ...pipeline.ReasonCode) pipeline.ActionResult {
		r := pipeline.ActionResult{Status: status, Message: "m", ReasonCodes: codes, TraceID: "t"}
		r.Stage, r.Failure = pipeline.Classify(codes, ran)
		return r
	}
	refined := func(r pipeline.ActionResult, kind pipeline.FailureKind) pipeline.ActionResult {
		r.Failure = kind
		return r
	}
	cases := []struct {
		res  pipeline.ActionResult
		code string
		msg  string
	}{
		{res(pipeline.StatusBlocked, true, pipeline.LimitExceeded, pipeline.FuelExhausted), CodeExecutionTimeout, "m (LIMIT_EXCEEDED, FUEL_EXHAUSTED)"},
		{res(pipeline.StatusBlocked, true, pipeline.ExecutorTimeout), CodeExecutionTimeout, "m (EXECUTOR_TIMEOUT)"},
		{res(pipeline.StatusFailed, true, pipeline.ExecutorException), CodeToolExecutionError, "m"},
		{refined(res(pipeline.StatusFailed, true, pipeline.ExecutorException), pipeline.FailureToolInvalid), CodeToolInvalid, "m"},
		{res(pipeline.StatusFailed, true, pipeline.ExecutorException, pipeline.OutputNotJSON), CodeToolExecutionError, "m"},
		{res(pipeline.StatusBlocked, true, pipeline.LimitExceeded, pipeline.MemoryExhausted), CodeToolExecutionError, "m (LIMIT_EXCEEDED, MEMORY_EXHAUSTED)"},
		{res(pipeline.StatusBlocked, false, pipeline.LimitExceeded, pipeline.MemoryExhausted), CodeToolExecutionError, "m (LIMIT_EXCEEDED, MEMORY_EXHAUSTED)"},
		{res(pipeline.StatusBlocked, true, pipeline.LimitExceeded, pipeline.PayloadTooLarge), CodeToolExecutionError, "m (LIMIT_EXCEEDED, PAYLOAD_TOO_LARGE)"},
		{res(pipeline.StatusBlocked, false, pipeline.LimitExceeded, pipeline.DepthExceeded), CodeInvalidRequest, "m (LIMIT_EXCEEDED, DEPTH_EXCEEDED)"},
		{res(pipeline.StatusBlocked, false, pipeline.NonJSONPayload), CodeInvalidRequest, "m (NON_JSON_PAYLOAD)"},
		{res(pipeline.StatusBlocked, false, pipeline.ActionUnknown), CodeToolNotFound, "m (ACTION_UNKNOWN)"},
		{refined(res(pipeline.StatusBlocked, false, pipeline.ExecutorInvalid), pipeline.FailureNotFound), CodeToolNotFound, "m"},
		{res(pipeline.StatusBlocked, false, pipeline.ExecutorInvalid), CodeToolInvalid, "m"},
		{res(pipeline.StatusBlocked, false, pipeline.AuditLogFailed), CodeInternalError, "the call was refused by the server's governance (AUDIT_LOG_FAILED); trace id t"},
		{res(pipeline.StatusBlocked, false, pipeline.ExecutorVersionIncompatible), CodeInternalError, "the call was refused by the server's governance (EXECUTOR_VERSION_INCOMPATIBLE); trace id t"},
		{res(pipeline.StatusBlocked, false, pipeline.InputSchemaInvalid), CodeInvalidRequest, "m (INPUT_SCHEMA_INVALID)"},
		{res(pipeline.StatusFailed, true, pipeline.OutputSchemaInvalid), CodeToolExecutionError, "m (OUTPUT_SCHEMA_INVALID)"},
	}
	for _, c := range cases {
		got := mapResult(c.res)
		assert.Equal(t, c.code, got.Code, c.res.ReasonCodes)
		assert.Equal(t, c.msg, got.Message, c.res.ReasonCodes)
	}
	// A factory that gave no tool: the protocol's code replaces the
	// message's prefix.
	invalid := refined(res(pipeline.StatusFailed, true, pipeline.ExecutorException), pipeline.FailureToolInvalid)
	invalid.Message = "TOOL_INVALID: the factory returned 3"
	assert.Equal(t, errDetail{CodeToolInvalid, "the factory returned 3"}, *mapResult(invalid))
}

func TestBodyWithSurroundingWhitespace(t *testing.T) {
	// A body that is valid JSON after whitespace is accepted.
	f := newFixture(t, nil)
	r := f.do(t, "POST", "/execute-tool", "\n  "+execute("acme-tools", "shout", `{"s":"x"}`)+"\n")
	assert.Equal(t, true, r.body["success"], r.raw)
	assert.True(t, bytes.Contains([]byte(r.raw), []byte(`"executionTimeMs"`)))
}

// A tool that cannot be admitted is still a call: refused by the pipeline,
// and audited.
func TestUnadmittedToolsAreAudited(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "nope", `{}`))
	assert.Equal(t, CodeToolNotFound, errorCode(r))
	verdict := r.body["wasmgate"].(map[string]any)
	assert.Equal(t, "BLOCKED", verdict["status"])
	assert.Equal(t, []any{"EXECUTOR_INVALID"}, verdict["reasonCodes"])
	recs := f.sink.Verdicts()
	require.Len(t, recs, 1)
	assert.EqualValues(t, recs[0].Seq-1, verdict["auditIndex"], "the verdict's leaf index in the log's tree")
	assert.Equal(t, "acme-tools/nope", recs[0].Action)
	assert.Equal(t, "acme_tools__nope", recs[0].ExecutorID)
	assert.Equal(t, "BLOCKED", string(recs[0].Status))
}

// With a registry, the server fetches only the npm packages --npm-allow
// names; every other name is refused as PACKAGE_NOT_FOUND, BLOCKED and
// audited, before the store or npm is asked. Without a registry, any.
func TestNPMAllow(t *testing.T) {
	cases := []struct {
		name  string
		allow []string
		noReg bool
		ok    bool
	}{
		{"a registry and no allow-list: registry only", nil, false, false},
		{"an empty allow-list", []string{}, false, false},
		{"a pattern that matches", []string{"other", "acme-*"}, false, true},
		{"a pattern that does not", []string{"@acme/*"}, false, false},
		{"every package", []string{"*"}, false, true},
		{"no registry: every package", nil, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, func(cfg *fixtureConfig) {
				cfg.NPMAllow = c.allow
				if c.noReg {
					cfg.Registry = nil
				}
			})
			r := f.do(t, "POST", "/execute-tool", execute("acme-tools", "shout", `{"s":"a"}`))
			require.Equal(t, http.StatusOK, r.status, r.raw)
			recs := f.sink.Verdicts()
			require.Len(t, recs, 1, "the call is audited either way")
			if c.ok {
				assert.Equal(t, true, r.body["success"], r.raw)
				assert.Equal(t, "SUCCESS", recs[0].Status)
				return
			}
			assert.Equal(t, CodePackageNotFound, errorCode(r))
			assert.Contains(t, errorMessage(r), "package acme-tools is not served here: it is not in the registry, and this server fetches only npm packages matching")
			assert.Equal(t, "PACKAGE_IMPORT_FAILED", r.body["errorCode"])
			assert.Equal(t, "BLOCKED", recs[0].Status)
			assert.Equal(t, []string{"ACTION_UNKNOWN"}, recs[0].ReasonCodes)
			assert.Equal(t, "acme-tools/shout", recs[0].Action)
			v := r.body["wasmgate"].(map[string]any)
			assert.Equal(t, "BLOCKED", v["status"])
		})
	}
	// Registry actions are served whatever the allow-list.
	f := newFixture(t, func(cfg *fixtureConfig) { cfg.NPMAllow = nil })
	r := f.do(t, "POST", "/execute-tool", `{"packageName":"upper","name":"any","params":{"text":"abc"}}`)
	assert.Equal(t, true, r.body["success"], r.raw)
	info := f.do(t, "GET", "/info", "")
	assert.Equal(t, map[string]any{"npmAllow": []any{}, "results": "full"}, info.body["wasmgate"])
	open := newFixture(t, func(cfg *fixtureConfig) { cfg.Registry, cfg.NPMAllow = nil, nil })
	assert.Equal(t, map[string]any{"npmAllow": []any{"*"}, "results": "full"}, open.do(t, "GET", "/info", "").body["wasmgate"])
}

// A package npm does not have is PACKAGE_NOT_FOUND for the client, and a
// BLOCKED, audited call (EXECUTOR_NOT_FOUND) for the deployment.
func TestPackageNotFoundIsAudited(t *testing.T) {
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"Not found"}`)
	}))
	t.Cleanup(registry.Close)
	t.Setenv("npm_config_registry", registry.URL+"/")
	t.Setenv("npm_config_cache", t.TempDir())
	f := newFixture(t, nil)
	r := f.do(t, "POST", "/execute-tool", execute("acme-gone", "t", `{}`))
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Equal(t, CodePackageNotFound, errorCode(r))
	assert.Contains(t, errorMessage(r), "acme-gone@1.0.0")
	recs := f.sink.Verdicts()
	require.Len(t, recs, 1)
	assert.Equal(t, "BLOCKED", recs[0].Status)
	assert.Equal(t, []string{"EXECUTOR_NOT_FOUND"}, recs[0].ReasonCodes)
	assert.Equal(t, "acme-gone/t", recs[0].Action)
	assert.Equal(t, "acme_gone__t", recs[0].ExecutorID)
}

// schemaTool is an executor with the sum guest's schemas whose output is
// fixed.
type schemaTool struct{ output string }

func (e schemaTool) Manifest() sandbox.Manifest {
	return sandbox.Manifest{ExecutorID: "typed", Version: "1.0.0",
		InputSchema:  json.RawMessage(`{"type":"object","required":["numbers"],"properties":{"numbers":{"type":"array","items":{"type":"number"}}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["sum"],"properties":{"sum":{"type":"number"}}}`)}
}
func (e schemaTool) ModuleDigest() string { return strings.Repeat("cd", 32) }
func (e schemaTool) Execute(context.Context, sandbox.Input) (sandbox.Outcome, error) {
	return sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(e.output)}, nil
}

// TestSchemaFailures: params that break the tool's input schema are the
// caller's INVALID_REQUEST; an output that breaks its output schema is a
// TOOL_EXECUTION_ERROR, with no output.
func TestSchemaFailures(t *testing.T) {
	reg := pipeline.NewRegistry()
	require.NoError(t, reg.AddExecutor("typed", schemaTool{output: `{"sum":"three"}`}))
	require.NoError(t, reg.AddAction("math.typed", pipeline.Route{Executor: "typed", Version: "*"}))
	srv := NewServer(Config{Runtime: newRuntime(t, reg, audit.NewMemorySink())})
	f := fixture{srv: srv}

	r := f.do(t, "POST", "/execute-tool", `{"packageName":"math.typed","name":"any","params":{"numbers":[1,"2"]}}`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Equal(t, false, r.body["success"])
	assert.Equal(t, map[string]any{"code": "INVALID_REQUEST",
		"message": "payload does not match the input schema at /numbers/1: got string, want number (INPUT_SCHEMA_INVALID)"}, r.body["error"])
	assert.Equal(t, "request", r.body["errorStage"])
	assert.Equal(t, "INVALID_REQUEST", r.body["errorCode"])
	assert.Equal(t, false, r.body["retryable"])
	v := r.body["wasmgate"].(map[string]any)
	assert.Equal(t, "BLOCKED", v["status"])
	assert.Equal(t, []any{"INPUT_SCHEMA_INVALID"}, v["reasonCodes"])

	r = f.do(t, "POST", "/execute-tool", `{"packageName":"math.typed","name":"any","params":{"numbers":[1,2]}}`)
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Equal(t, false, r.body["success"])
	assert.NotContains(t, r.body, "output")
	assert.Equal(t, map[string]any{"code": "TOOL_EXECUTION_ERROR",
		"message": "output does not match the output schema at /sum: got string, want number (OUTPUT_SCHEMA_INVALID)"}, r.body["error"])
	assert.Equal(t, "execute", r.body["errorStage"])
	assert.Equal(t, "TOOL_EXECUTION_FAILED", r.body["errorCode"])
	assert.Equal(t, false, r.body["retryable"])
	v = r.body["wasmgate"].(map[string]any)
	assert.Equal(t, "FAILED", v["status"])
	assert.Equal(t, []any{"OUTPUT_SCHEMA_INVALID"}, v["reasonCodes"])
	assert.Nil(t, v["outputDigest"])
}

// TestPackageMemoryReachesLoading is issue 24 through the HTTP front: the
// memory a package's "wasmgate" field gives its tools bounds loading them
// too, and a tool that does not fit is BLOCKED LIMIT_EXCEEDED
// MEMORY_EXHAUSTED, audited, with the setting that raises it.
func TestPackageMemoryReachesLoading(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) {
		dir := c.Store.Dir
		entry := filepath.Join(dir, "acme-big@1.0.0")
		pkg := filepath.Join(entry, "node_modules", "acme-big")
		require.NoError(t, os.MkdirAll(pkg, 0o755))
		var src strings.Builder
		src.WriteString("const parts = [\n")
		for i := range 1500 {
			// Distinct strings: the engine keeps one copy of equal literals.
			fmt.Fprintf(&src, "  %q,\n", fmt.Sprint(i)+strings.Repeat(" wasmgate", 111))
		}
		src.WriteString("];\nexport const count = { execute: () => ({ parts: parts.length }) };\n")
		require.NoError(t, os.WriteFile(filepath.Join(entry, "bundle.mjs"), []byte(src.String()), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(pkg, "package.json"),
			[]byte(`{"name":"acme-big","version":"1.0.0","wasmgate":{"limits":{"memory_pages":64}}}`), 0o644))
	})
	r := f.do(t, "POST", "/execute-tool", execute("acme-big", "count", `{}`))
	verdict := r.body["wasmgate"].(map[string]any)
	assert.Equal(t, "BLOCKED", verdict["status"], r.raw)
	assert.Equal(t, []any{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}, verdict["reasonCodes"])
	assert.Contains(t, errorMessage(r), `loading the tool ran out of memory: memory_pages is 64 (4 MiB)`)
	assert.Contains(t, errorMessage(r), `set "memory_pages" in the "limits" of the "wasmgate" field of the package.json of acme-big@1.0.0 above 64 (e.g. 128)`)
	recs := f.sink.Verdicts()
	require.Len(t, recs, 1)
	assert.Equal(t, []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}, recs[0].ReasonCodes)
}
