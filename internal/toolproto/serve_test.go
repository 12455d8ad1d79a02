package toolproto

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/pipeline"
)

// fixtures is the protocol's tools of testdata/toolproto.
var fixtures = filepath.Join("..", "..", "testdata", "toolproto", "tools")

// fixtureIDs are the valid tools among the fixtures.
const fixtureIDs = "bigout, chatty, fuel-out, greeter, hello-node, pat-check, slow-logger, spin, text-slug, text-stats, text-upper, word-count"

// wasmTools lays out a tools directory of Wasm tools, one per fixture of
// testdata/ named in ids (tool id → module file).
func wasmTools(t *testing.T, ids map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for id, module := range ids {
		abs, err := filepath.Abs(filepath.Join("..", "..", "testdata", module))
		require.NoError(t, err)
		rel, err := filepath.Rel(filepath.Join(dir, id), abs)
		require.NoError(t, err)
		writeTool(t, dir, id, `{"id":"`+id+`","runtime":"wasm","entry":"`+filepath.ToSlash(rel)+`"}`)
	}
	return dir
}

// newRuntime is a Runtime for one tool side, auditing to sink, closed when
// the test ends. Its engine reads what it compiles from the tests' shared
// cache: the QuickJS engine compiles once per machine, not per run.
func newRuntime(t *testing.T, sink audit.Sink, opts ...wg.Option) *wg.Runtime {
	t.Helper()
	opts = append([]wg.Option{
		wg.WithCompilationCacheDir(testenv.CacheDir()),
		wg.WithRegistry(func(context.Context, sandbox.Engine) (*pipeline.Registry, error) { return pipeline.NewRegistry(), nil }),
		wg.WithAuditSink(sink),
	}, opts...)
	rt, err := wg.New(context.Background(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

// served is what the tool side wrote.
type served struct {
	events   []Event
	terminal Event
	records  []audit.Record
	stderr   string
}

func serve(t *testing.T, dir, id, request string) served {
	t.Helper()
	return serveWith(t, ServeConfig{ToolsDir: dir, ToolID: id, Stdin: strings.NewReader(request)})
}

// serveWith runs the tool side of cfg on a Runtime of opts with a memory
// sink, and buffers for stdout and stderr.
func serveWith(t *testing.T, cfg ServeConfig, opts ...wg.Option) served {
	t.Helper()
	sink := audit.NewMemorySink()
	var out, errOut bytes.Buffer
	cfg.Runtime, cfg.Stdout, cfg.Stderr = newRuntime(t, sink, opts...), &out, &errOut
	terminal, err := Serve(context.Background(), cfg)
	require.NoError(t, err)
	s := parseServed(t, out.String(), cfg.ToolID)
	assert.Equal(t, terminal, s.terminal, "the terminal event is the last")
	s.records = sink.Verdicts()
	s.stderr = errOut.String()
	return s
}

func parseServed(t *testing.T, stdout, id string) served {
	t.Helper()
	var s served
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		ev, err := ParseEvent([]byte(l), id)
		require.NoError(t, err, "stdout holds only events: %q", l)
		s.events = append(s.events, ev)
	}
	require.NotEmpty(t, s.events)
	assert.Equal(t, EventStarted, s.events[0].Type)
	s.terminal = s.events[len(s.events)-1]
	for i, ev := range s.events {
		assert.Equal(t, i == len(s.events)-1, ev.Type.Terminal(), "exactly one terminal event, the last")
	}
	return s
}

func (s served) types() []EventType {
	var ts []EventType
	for _, ev := range s.events {
		ts = append(ts, ev.Type)
	}
	return ts
}

func TestServeWasmTool(t *testing.T) {
	dir := wasmTools(t, map[string]string{"upper": "upper.wasm"})
	s := serve(t, dir, "upper", `{"context":{"toolId":"upper","config":{"ignored":true}},"input":{"text":"abc"}}`)
	assert.Equal(t, []EventType{EventStarted, EventResult}, s.types())
	assert.JSONEq(t, `{"meta":{"name":"Fake","version":"1.0.0","runtime":"wasm"}}`, string(s.events[0].Payload))
	// The result's payload is the output itself; the verdict is audited.
	assert.Equal(t, `{"text":"ABC"}`, string(s.terminal.Payload))
	require.Len(t, s.records, 1, "the run is audited")
	assert.Equal(t, "SUCCESS", string(s.records[0].Status))
	assert.Equal(t, audit.Digest([]byte(`{"text":"ABC"}`)), *s.records[0].OutputDigest)
	assert.Equal(t, ExitResult, ExitCode(s.terminal))
	assert.Empty(t, s.stderr)
}

func TestServeWrapsOutputsThatAreNotObjects(t *testing.T) {
	dir := t.TempDir()
	for id, src := range map[string]string{
		"list":    `export function execute() { return [1, "two"]; }`,
		"text":    `export function execute() { return "done"; }`,
		"nothing": `export function execute() {}`,
	} {
		writeTool(t, dir, id, `{"id":"`+id+`"}`)
		require.NoError(t, os.WriteFile(filepath.Join(dir, id, "tool.js"), []byte(src), 0o644))
	}
	for id, payload := range map[string]string{"list": `{"value":[1,"two"]}`, "text": `{"value":"done"}`, "nothing": `{}`} {
		s := serve(t, dir, id, `{}`)
		assert.Equal(t, EventResult, s.terminal.Type, id)
		assert.Equal(t, payload, string(s.terminal.Payload), id)
	}
}

func TestServeVerdictGoesToStderr(t *testing.T) {
	dir := wasmTools(t, map[string]string{"upper": "upper.wasm"})
	s := serveWith(t, ServeConfig{ToolsDir: dir, ToolID: "upper", Stdin: strings.NewReader(`{"input":{"text":"a"}}`), Verdict: true})
	require.Len(t, s.records, 1)
	r := s.records[0]
	assert.Equal(t, fmt.Sprintf("verdict: SUCCESS [] upper 1.0.0 fuel_used=%d duration_ms=%d trace_id=%s input_digest=%s output_digest=%s audit_index=%d\n",
		r.FuelUsed, r.DurationMs, r.TraceID, r.InputDigest, *r.OutputDigest, r.Seq-1), s.stderr)
	assert.Equal(t, `{"text":"A"}`, string(s.terminal.Payload), "and not in the payload")
}

func TestServeOutcomes(t *testing.T) {
	dir := wasmTools(t, map[string]string{"fail": "fail.wasm", "loop": "loop.wasm", "spin": "spin.wasm", "echo": "echo.wasm", "refused": "refused/env_import.wasm"})
	for _, tt := range []struct {
		name, id, request string
		code              string
		recoverable       bool
		reasons           []string
		msg               string
	}{
		{"executor error", "fail", `{}`, "EXECUTOR_EXCEPTION", true, []string{"EXECUTOR_EXCEPTION"}, ""},
		{"fuel", "loop", `{}`, "FUEL_EXHAUSTED", false, []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}, "fuel exhausted"},
		{"timeout from the request's config", "spin", `{"context":{"config":{"timeoutMs":100}},"input":{"n":9007199254740991}}`,
			"EXECUTOR_TIMEOUT", false, []string{"EXECUTOR_TIMEOUT"}, "the tool ran longer than its timeoutMs of 100 ms"},
		{"input over the limits", "echo", `{"input":"` + strings.Repeat("x", 70000) + `"}`,
			"PAYLOAD_TOO_LARGE", true, []string{"LIMIT_EXCEEDED", "PAYLOAD_TOO_LARGE"}, "payload is 70002 canonical bytes; max_payload_bytes is 65536"},
		{"input not canonical", "echo", `{"input":{"n":9007199254740993}}`, "NON_JSON_PAYLOAD", true, []string{"NON_JSON_PAYLOAD"}, "payload is not canonicalizable JSON"},
		{"refused module", "refused", `{}`, "EXECUTOR_INVALID", false, []string{"EXECUTOR_INVALID"}, "env.abort"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, dir, tt.id, tt.request)
			assert.Equal(t, EventError, s.terminal.Type)
			p, ok := ErrorOf(s.terminal)
			require.True(t, ok)
			assert.Equal(t, tt.code, p.Code)
			assert.Equal(t, tt.recoverable, p.Recoverable)
			assert.Contains(t, p.Message, tt.msg)
			require.Len(t, s.records, 1, "the run is audited, with its reason codes")
			assert.Equal(t, tt.reasons, s.records[0].ReasonCodes)
			assert.Equal(t, ExitError, ExitCode(s.terminal), "every error event is exit 1")
		})
	}
}

// TestServeJSTool: a JS tool's console calls are log events, written while
// it runs, before its terminal event; what it throws is its error event.
func TestServeJSTool(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "pat", `{"id":"pat"}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pat", "tool.js"), []byte(`
export function execute({ code, recoverable, bad }) {
  console.log("checking", { code: code ?? null });
  console.debug("details");
  console.warn("a warning", 1);
  if (bad) return null.nope;
  if (code === undefined) return { review: "LGTM" };
  const e = new Error("PAT expired");
  e.code = code;
  if (recoverable !== undefined) e.recoverable = recoverable;
  throw e;
}`), 0o644))
	logs := []string{
		`{"level":"info","message":"checking","data":{"code":%s}}`,
		`{"level":"debug","message":"details"}`,
		`{"level":"warn","message":"a warning 1"}`,
	}
	for _, tt := range []struct {
		name, input, code string
		terminal          string
		stack             bool
	}{
		{"result", `{}`, "null", `{"review":"LGTM"}`, false},
		{"an Error with code and recoverable", `{"code":"AUTH_FAILED","recoverable":false}`, `"AUTH_FAILED"`,
			`{"message":"PAT expired","code":"AUTH_FAILED","recoverable":false}`, true},
		{"an Error with a code", `{"code":"AUTH_FAILED"}`, `"AUTH_FAILED"`,
			`{"message":"PAT expired","code":"AUTH_FAILED","recoverable":true}`, true},
		{"recoverable without a code is not the tool's to set", `{"code":7,"recoverable":false}`, "7",
			`{"message":"Error: PAT expired","code":"EXECUTOR_EXCEPTION","recoverable":true}`, true},
		{"any other throw", `{"bad":true}`, "null",
			`{"message":"TypeError: cannot read property 'nope' of null","code":"EXECUTOR_EXCEPTION","recoverable":true}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, dir, "pat", `{"input":`+tt.input+`}`)
			require.Len(t, s.events, 5)
			assert.JSONEq(t, fmt.Sprintf(logs[0], tt.code), string(s.events[1].Payload))
			assert.JSONEq(t, logs[1], string(s.events[2].Payload))
			assert.JSONEq(t, logs[2], string(s.events[3].Payload))
			assert.JSONEq(t, tt.terminal, string(s.terminal.Payload))
			if tt.stack {
				// The stack is a diagnostic: on stderr, never in the audit.
				assert.Contains(t, s.stderr, "    at execute (tool.js:")
				assert.Equal(t, []string{"EXECUTOR_EXCEPTION"}, s.records[0].ReasonCodes)
			} else {
				assert.Empty(t, s.stderr)
			}
			rec, err := json.Marshal(s.records[0])
			require.NoError(t, err)
			assert.NotContains(t, string(rec), "PAT expired")
			assert.NotContains(t, string(rec), "AUTH_FAILED")
		})
	}
}

// TestServeAFactoryThatGivesNoTool: the export is not a tool after all,
// which the tool side says as TOOL_INVALID, not the tool's own error.
func TestServeAFactoryThatGivesNoTool(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "empty", `{"id":"empty"}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty", "tool.js"), []byte(`export default function make() { return null; }`), 0o644))
	s := serve(t, dir, "empty", `{}`)
	p, ok := ErrorOf(s.terminal)
	require.True(t, ok)
	assert.Equal(t, CodeToolInvalid, p.Code)
	assert.False(t, p.Recoverable)
	assert.Contains(t, p.Message, "the factory gave no tool")
	assert.Equal(t, ExitError, ExitCode(s.terminal))
}

func TestServeRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, dir, id, request string
		want                   ErrorPayload
	}{
		{"unknown tool", fixtures, "nope", `{}`, ErrorPayload{Code: CodeToolNotFound,
			Message: `no manifest in ` + fixtures + ` declares tool "nope" (tools there: ` + fixtureIDs + `)`}},
		{"no tools directory", "no-such-dir", "nope", `{}`, ErrorPayload{Code: CodeToolNotFound,
			Message: "the tools directory no-such-dir does not exist"}},
		{"invalid manifest", fixtures, "bad-version", `{}`, ErrorPayload{Code: CodeToolInvalid,
			Message: filepath.Join(fixtures, "bad-version", "manifest.json") + ": manifestVersion: must be 1, not 2"}},
		{"stdin not JSON", fixtures, "text-upper", `text=abc`, ErrorPayload{Code: CodeInvalidRequest,
			Message: "the request is not a JSON object"}},
		{"empty stdin", fixtures, "text-upper", ``, ErrorPayload{Code: CodeInvalidRequest,
			Message: `stdin is empty; send a ToolRequest {"context": {"toolId", "config", "workspaceRoot"}, "input": ...}`}},
		{"another tool's request", fixtures, "text-upper", `{"context":{"toolId":"text-slug"}}`, ErrorPayload{Code: CodeInvalidRequest,
			Message: `context.toolId is "text-slug", but this is tool "text-upper"`}},
		{"missing config", fixtures, "greeter", `{"context":{"config":{"punctuation":"!"}},"input":{"name":"Ada"}}`, ErrorPayload{Code: CodeConfigMissing,
			Message: `context.config lacks the required key "greeting"`, Recoverable: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, tt.dir, tt.id, tt.request)
			assert.Equal(t, []EventType{EventStarted, EventError}, s.types())
			p, ok := ErrorOf(s.terminal)
			require.True(t, ok)
			assert.Equal(t, tt.want, p)
			assert.Empty(t, s.records, "nothing ran")
			assert.Equal(t, ExitError, ExitCode(s.terminal))
		})
	}
}

func TestServeStartedForAnUnknownTool(t *testing.T) {
	s := serve(t, fixtures, "nope", `{"context":{"config":{"timeoutMs":1234}}}`)
	assert.Equal(t, `{"meta":{}}`, string(s.events[0].Payload))
}

// endless is stdin that ends after n bytes, counting what was read.
type endless struct{ n, read int }

// spaces is what endless reads, a block at a time (filling 64 MB byte by
// byte took seconds under the race detector).
var spaces = bytes.Repeat([]byte{' '}, 64<<10)

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.n {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), e.n-e.read)], spaces)
	e.read += k
	return k, nil
}

func TestServeReadsStdinToEOF(t *testing.T) {
	in := &endless{n: MaxRequestBytes + 100_000}
	s := serveWith(t, ServeConfig{ToolsDir: fixtures, ToolID: "text-upper", Stdin: in})
	p, _ := ErrorOf(s.terminal)
	assert.Equal(t, ErrorPayload{Code: CodeInvalidRequest, Message: fmt.Sprintf("the request is larger than %d bytes", MaxRequestBytes)}, p)
	assert.Equal(t, in.n, in.read, "the rest is read and dropped")
}

func TestRefuse(t *testing.T) {
	var out bytes.Buffer
	in := strings.NewReader(`{"input":{}}`)
	terminal, err := Refuse(ServeConfig{ToolsDir: fixtures, ToolID: "text-upper", Stdin: in, Stdout: &out}, "AUDIT_LOG_FAILED", true, "cannot open the audit log")
	require.NoError(t, err)
	s := parseServed(t, out.String(), "text-upper")
	assert.Equal(t, terminal, s.terminal)
	assert.JSONEq(t, `{"meta":{"name":"Text upper","version":"1.0.0","runtime":"wasm"}}`, string(s.events[0].Payload))
	assert.JSONEq(t, `{"message":"cannot open the audit log","code":"AUDIT_LOG_FAILED","recoverable":true}`, string(s.terminal.Payload))
	assert.Zero(t, in.Len(), "stdin is read to EOF")
}

// TestServeSchemaFailures: a Wasm tool's input schema (the sum guest
// declares one) refuses an input before it runs, recoverably; an output
// that breaks the tool's output schema is the tool's bug, not recoverable.
func TestServeSchemaFailures(t *testing.T) {
	dir := wasmTools(t, map[string]string{"sum": "sum.wasm"})
	s := serve(t, dir, "sum", `{"context":{"toolId":"sum"},"input":{"numbers":[1,"2"]}}`)
	assert.Equal(t, []EventType{EventStarted, EventError}, s.types())
	assert.JSONEq(t, `{"code":"INPUT_SCHEMA_INVALID","message":"payload does not match the input schema at /numbers/1: got string, want number","recoverable":true}`,
		string(s.terminal.Payload))
	require.Len(t, s.records, 1)
	assert.Equal(t, []string{"INPUT_SCHEMA_INVALID"}, s.records[0].ReasonCodes)
	require.NotNil(t, s.records[0].SchemaDigest)

	s = serve(t, dir, "sum", `{"context":{"toolId":"sum"},"input":{"numbers":[1,2]}}`)
	assert.JSONEq(t, `{"sum":3}`, string(s.terminal.Payload))

	failed := pipeline.ActionResult{Status: pipeline.StatusFailed, ReasonCodes: []pipeline.ReasonCode{pipeline.OutputSchemaInvalid},
		Stage: pipeline.StageOutput, Failure: pipeline.FailureOutputInvalid,
		Message: "output does not match the output schema at /sum: got string, want number"}
	assert.Equal(t, ErrorPayload{Code: "OUTPUT_SCHEMA_INVALID", Message: "output does not match the output schema at /sum: got string, want number", Recoverable: false},
		errorFor(failed, nil, time.Second))
}

// errorFor maps a verdict from its classification: what the caller can fix
// (the input) or handle (the tool's failure) is recoverable; a limit, a
// refusal, or an output that breaks the tool's own schema is not. The
// messages here say nothing of the kind.
func TestErrorForMapsTheClassification(t *testing.T) {
	res := func(status pipeline.Status, ran bool, codes ...pipeline.ReasonCode) pipeline.ActionResult {
		r := pipeline.ActionResult{Status: status, Message: "m", ReasonCodes: codes}
		r.Stage, r.Failure = pipeline.Classify(codes, ran)
		return r
	}
	cases := []struct {
		res  pipeline.ActionResult
		want ErrorPayload
	}{
		{res(pipeline.StatusBlocked, false, pipeline.LimitExceeded, pipeline.PayloadTooLarge), ErrorPayload{Code: "PAYLOAD_TOO_LARGE", Message: "m", Recoverable: true}},
		{res(pipeline.StatusBlocked, true, pipeline.LimitExceeded, pipeline.PayloadTooLarge), ErrorPayload{Code: "PAYLOAD_TOO_LARGE", Message: "m", Recoverable: false}},
		{res(pipeline.StatusBlocked, false, pipeline.NonJSONPayload), ErrorPayload{Code: "NON_JSON_PAYLOAD", Message: "m", Recoverable: true}},
		{res(pipeline.StatusBlocked, false, pipeline.InputSchemaInvalid), ErrorPayload{Code: "INPUT_SCHEMA_INVALID", Message: "m", Recoverable: true}},
		{res(pipeline.StatusFailed, true, pipeline.ExecutorException), ErrorPayload{Code: "EXECUTOR_EXCEPTION", Message: "m", Recoverable: true}},
		{res(pipeline.StatusFailed, true, pipeline.OutputSchemaInvalid), ErrorPayload{Code: "OUTPUT_SCHEMA_INVALID", Message: "m", Recoverable: false}},
		{res(pipeline.StatusBlocked, true, pipeline.LimitExceeded, pipeline.FuelExhausted), ErrorPayload{Code: "FUEL_EXHAUSTED", Message: "m", Recoverable: false}},
		{res(pipeline.StatusBlocked, false, pipeline.ExecutorInvalid), ErrorPayload{Code: "EXECUTOR_INVALID", Message: "m", Recoverable: false}},
		{res(pipeline.StatusBlocked, true, pipeline.ExecutorTimeout), ErrorPayload{Code: "EXECUTOR_TIMEOUT", Message: "the tool ran longer than its timeoutMs of 1000 ms"}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, errorFor(c.res, nil, time.Second), c.res.ReasonCodes, c.res.Stage)
	}
}

// TestServePythonTool: a tool of runtime "python" (the word-count fixture,
// an executor class with a dependency of its own) runs on every compiled
// engine with the same result and digests; what it prints is a diagnostic
// on stderr, what it raises an error event. (Its fuel follows the length of
// the request's ts_utc, each run's arrival time, which an executor class
// is given: the replay tests compare fuel across engines with the time
// fixed.)
func TestServePythonTool(t *testing.T) {
	if testenv.Race {
		t.Skip("CPython under the race detector is too slow; the plain pass of make test runs this test (PY_RACE_FREE_TESTS)")
	}
	for _, name := range enginetest.JSEngines() {
		t.Run(string(name), func(t *testing.T) {
			s := serveWith(t, ServeConfig{ToolsDir: fixtures, ToolID: "word-count", Stdin: strings.NewReader(`{"input":{"text":"to be or not to be"}}`)},
				wg.WithEngine(name))
			assert.Equal(t, []EventType{EventStarted, EventResult}, s.types())
			assert.JSONEq(t, `{"meta":{"name":"Word count","version":"1.0.0","runtime":"python"}}`, string(s.events[0].Payload))
			assert.Equal(t, `{"longest":"not","words":6}`, string(s.terminal.Payload))
			assert.Equal(t, "counted 6 words\n", s.stderr)
			require.Len(t, s.records, 1)
			r := s.records[0]
			assert.Equal(t, "word_count", r.ExecutorID)
			assert.Equal(t, audit.Digest([]byte(`{"longest":"not","words":6}`)), *r.OutputDigest)
			assert.Positive(t, r.FuelUsed)

			s = serveWith(t, ServeConfig{ToolsDir: fixtures, ToolID: "word-count", Stdin: strings.NewReader(`{"input":{"text":""}}`)},
				wg.WithEngine(name))
			p, ok := ErrorOf(s.terminal)
			require.True(t, ok)
			assert.Equal(t, ErrorPayload{Code: "EXECUTOR_EXCEPTION", Message: "ValueError: no words to count", Recoverable: true}, p)
		})
	}
}
