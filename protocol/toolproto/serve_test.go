package toolproto

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/runtime"
)

// fixtures is the protocol's tools of testdata/toolproto.
var fixtures = filepath.Join("..", "..", "testdata", "toolproto", "tools")

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

// served is what the tool side wrote.
type served struct {
	events   []Event
	terminal Event
	records  []audit.Record
}

func serve(t *testing.T, dir, id, request string) served {
	t.Helper()
	engine, err := runtime.NewEngine(context.Background(), runtime.NewConfig())
	require.NoError(t, err)
	t.Cleanup(func() { engine.Close(context.Background()) })
	sink := audit.NewMemorySink()
	var out bytes.Buffer
	terminal, err := Serve(context.Background(), ServeConfig{
		ToolsDir: dir, ToolID: id, Engine: engine, Sink: sink,
		Stdin: strings.NewReader(request), Stdout: &out,
	})
	require.NoError(t, err)
	var s served
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		ev, err := ParseEvent([]byte(l), id)
		require.NoError(t, err, "stdout holds only events: %q", l)
		s.events = append(s.events, ev)
	}
	require.NotEmpty(t, s.events)
	assert.Equal(t, EventStarted, s.events[0].Type)
	assert.Equal(t, terminal, s.events[len(s.events)-1], "the terminal event is the last")
	s.terminal = terminal
	s.records = sink.Records()
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
	assert.JSONEq(t, `{"name":"Fake","version":"1.0.0","runtime":"wasm","timeoutMs":30000}`, string(s.events[0].Payload))

	var res ResultPayload
	require.NoError(t, json.Unmarshal(s.terminal.Payload, &res))
	assert.JSONEq(t, `{"text":"ABC"}`, string(res.Output))
	assert.Equal(t, "SUCCESS", string(res.Status))
	assert.Empty(t, res.ReasonCodes)
	assert.Equal(t, "upper", res.ExecutorID)
	require.Len(t, s.records, 1, "the run is audited")
	assert.Equal(t, s.records[0].InputDigest, res.InputDigest)
	assert.Equal(t, s.records[0].OutputDigest, res.OutputDigest)
	assert.Equal(t, s.records[0].TraceID, res.TraceID)
	assert.Equal(t, ExitResult, ExitCode(s.terminal))
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
			CodeRunnerTimeout, false, []string{"EXECUTOR_TIMEOUT"}, "the tool ran longer than its timeoutMs of 100 ms"},
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
			require.NotNil(t, p.Verdict, "a tool that went through the pipeline has a verdict")
			var reasons []string
			for _, r := range p.ReasonCodes {
				reasons = append(reasons, string(r))
			}
			assert.Equal(t, tt.reasons, reasons)
			assert.Contains(t, p.Message, tt.msg)
			assert.Len(t, s.records, 1, "the run is audited")
			want := ExitNonRecoverable
			if tt.recoverable {
				want = ExitRecoverable
			}
			assert.Equal(t, want, ExitCode(s.terminal))
		})
	}
}

func TestServeRefusals(t *testing.T) {
	for _, tt := range []struct {
		name, dir, id, request string
		want                   ErrorPayload
	}{
		{"unknown tool", fixtures, "nope", `{}`, ErrorPayload{Code: CodeToolNotFound,
			Message: `no manifest in ` + fixtures + ` declares tool "nope" (tools there: bigout, chatty, greeter, spin, text-slug, text-stats, text-upper)`}},
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
		{"missing config", fixtures, "greeter", `{"context":{"config":{"punctuation":"!"}},"input":{"name":"Ada"}}`, ErrorPayload{Code: CodeMissingConfig,
			Message: `context.config lacks the required key "greeting"`, Recoverable: true, Keys: []string{"greeting"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := serve(t, tt.dir, tt.id, tt.request)
			assert.Equal(t, []EventType{EventStarted, EventError}, s.types())
			p, ok := ErrorOf(s.terminal)
			require.True(t, ok)
			assert.Equal(t, tt.want, p)
			assert.Empty(t, s.records, "nothing ran")
		})
	}
}

func TestServeStartedForAnUnknownTool(t *testing.T) {
	s := serve(t, fixtures, "nope", `{"context":{"config":{"timeoutMs":1234}}}`)
	assert.JSONEq(t, `{"timeoutMs":1234}`, string(s.events[0].Payload))
}
