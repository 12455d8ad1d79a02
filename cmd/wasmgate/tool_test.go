package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// protoTools is the tools directory of the NDJSON tool protocol's tests.
var protoTools = td(filepath.Join("toolproto", "tools"))

// protoEvent is a ToolEvent line as a client reads it.
type protoEvent struct {
	Type    string          `json:"type"`
	Ts      string          `json:"ts"`
	ToolID  string          `json:"toolId"`
	Payload json.RawMessage `json:"payload"`
}

type protoError struct {
	Code        string   `json:"code"`
	Message     string   `json:"message"`
	Recoverable bool     `json:"recoverable"`
	Keys        []string `json:"keys"`
	Status      string   `json:"status"`
	ReasonCodes []string `json:"reason_codes"`
}

// protoEvents parses stdout as NDJSON events of toolID, checking what
// every stream must be: nothing but events, started first, exactly one
// terminal event, last.
func protoEvents(t *testing.T, r runResult, toolID string) []protoEvent {
	t.Helper()
	require.True(t, strings.HasSuffix(r.stdout, "\n"), "stdout: %q\nstderr: %s", r.stdout, r.stderr)
	var evs []protoEvent
	for _, l := range strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n") {
		var ev protoEvent
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&ev), "not an event: %q", l)
		assert.Equal(t, toolID, ev.ToolID)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, ev.Ts)
		evs = append(evs, ev)
	}
	require.NotEmpty(t, evs)
	assert.Equal(t, "started", evs[0].Type)
	for i, ev := range evs {
		terminal := ev.Type == "result" || ev.Type == "error"
		assert.Equal(t, i == len(evs)-1, terminal, "event %d is %s", i, ev.Type)
	}
	return evs
}

func protoLastError(t *testing.T, evs []protoEvent) protoError {
	t.Helper()
	last := evs[len(evs)-1]
	require.Equal(t, "error", last.Type, "%s", last.Payload)
	var p protoError
	require.NoError(t, json.Unmarshal(last.Payload, &p))
	return p
}

func eventTypes(evs []protoEvent) []string {
	var ts []string
	for _, ev := range evs {
		ts = append(ts, ev.Type)
	}
	return ts
}

func TestToolRunLifecycleJSON(t *testing.T) {
	r := wasmgate(t, `{"context":{"toolId":"text-slug","config":{},"workspaceRoot":"/w"},"input":{"title":"Hello, World"}}`,
		"tool", "run", "text-slug", "--tools", protoTools, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	evs := protoEvents(t, r, "text-slug")
	require.Equal(t, []string{"started", "log", "result"}, eventTypes(evs))
	assert.JSONEq(t, `{"name":"Text slug","version":"1.0.0","runtime":"js","timeoutMs":30000}`, string(evs[0].Payload))
	assert.JSONEq(t, `{"level":"info","message":"slugging 12 characters"}`, string(evs[1].Payload))

	var res struct {
		Output          json.RawMessage `json:"output"`
		Status          string          `json:"status"`
		ReasonCodes     []string        `json:"reason_codes"`
		ExecutorID      string          `json:"executor_id"`
		ExecutorVersion string          `json:"executor_version"`
		TraceID         string          `json:"trace_id"`
		InputDigest     string          `json:"input_digest"`
		OutputDigest    string          `json:"output_digest"`
		FuelUsed        uint64          `json:"fuel_used"`
	}
	require.NoError(t, json.Unmarshal(evs[2].Payload, &res))
	assert.JSONEq(t, `{"slug":"hello-world"}`, string(res.Output))
	assert.Equal(t, "SUCCESS", res.Status)
	assert.Equal(t, []string{}, res.ReasonCodes)
	assert.Equal(t, "text_slug", res.ExecutorID)
	assert.Equal(t, "1.0.0", res.ExecutorVersion)
	assert.Regexp(t, `^[0-9a-f-]{36}$`, res.TraceID)
	assert.Regexp(t, `^[0-9a-f]{64}$`, res.InputDigest)
	assert.Regexp(t, `^[0-9a-f]{64}$`, res.OutputDigest)
	assert.NotZero(t, res.FuelUsed)
}

func TestToolRunPretty(t *testing.T) {
	for _, tt := range []struct {
		name, tool, input string
		code              int
		stdout            string
	}{
		{"result", "text-slug", `{"title":"Hello, World"}`, 0, `▶ started text-slug 1.0.0
  log: slugging 12 characters
✔ result: {"slug":"hello-world"}
`},
		{"a warning", "text-slug", `{"title":"!!!"}`, 0, `▶ started text-slug 1.0.0
  log: slugging 3 characters
  log: warn: nothing left to slug
✔ result: {"slug":""}
`},
		{"wasm", "text-upper", `{"text":"abc"}`, 0, `▶ started text-upper 1.0.0
✔ result: {"text":"ABC"}
`},
		{"recoverable error", "greeter", `{"name":"Ada"}`, 1, `▶ started greeter 0.2.0
✖ error MISSING_CONFIG: context.config lacks the required key "greeting"
`},
		{"unknown tool", "nope", `{}`, 2, `▶ started nope
✖ error TOOL_NOT_FOUND: no manifest in ` + protoTools + ` declares tool "nope" (tools there: bigout, chatty, greeter, spin, text-slug, text-stats, text-upper)
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", "tool", "run", tt.tool, "--tools", protoTools, "--input", tt.input)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Equal(t, tt.stdout, r.stdout)
		})
	}
}

func TestToolRunOutcomes(t *testing.T) {
	for _, tt := range []struct {
		name, tool, stdin string
		args              []string
		code              int
		types             []string
		err               protoError
		msgPrefix         string
	}{
		{"the tool throws", "text-slug", `{"input":{"title":7}}`, nil, 1, []string{"started", "error"},
			protoError{Code: "EXECUTOR_EXCEPTION", Recoverable: true, Status: "FAILED", ReasonCodes: []string{"EXECUTOR_EXCEPTION"}},
			"TypeError: title must be a string"},
		{"missing required config", "greeter", `{"context":{"config":{"punctuation":"!"}},"input":{"name":"Ada"}}`, nil, 1, []string{"started", "error"},
			protoError{Code: "MISSING_CONFIG", Recoverable: true, Keys: []string{"greeting"}},
			`context.config lacks the required key "greeting"`},
		{"stdin not JSON", "text-slug", `title=Hello`, nil, 2, []string{"started", "error"},
			protoError{Code: "INVALID_REQUEST"}, "the request is not a JSON object"},
		{"config not an object", "text-slug", `{"context":{"config":"x=1"}}`, nil, 2, []string{"started", "error"},
			protoError{Code: "INVALID_REQUEST"}, "context.config must be a JSON object"},
		{"unknown tool", "no-such-tool", `{}`, nil, 2, []string{"started", "error"},
			protoError{Code: "TOOL_NOT_FOUND"}, `no manifest in ` + protoTools + ` declares tool "no-such-tool"`},
		{"no tools directory", "text-slug", `{}`, []string{"--tools", "no-such-dir"}, 2, []string{"started", "error"},
			protoError{Code: "TOOL_NOT_FOUND"}, "the tools directory no-such-dir does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"tool", "run", tt.tool, "--tools", protoTools, "--json"}, tt.args...)
			r := wasmgate(t, tt.stdin, args...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			evs := protoEvents(t, r, tt.tool)
			assert.Equal(t, tt.types, eventTypes(evs))
			got := protoLastError(t, evs)
			assert.True(t, strings.HasPrefix(got.Message, tt.msgPrefix), "message: %s", got.Message)
			got.Message = ""
			assert.Equal(t, tt.err, got)
		})
	}
}

func TestToolRunPassesConfigToJSTools(t *testing.T) {
	r := wasmgate(t, "", "tool", "run", "greeter", "--tools", protoTools, "--json",
		"--input", `{"name":"Ada"}`, "--config", `{"greeting":"Hello","punctuation":"!"}`)
	require.Equal(t, 0, r.code, r.stderr)
	evs := protoEvents(t, r, "greeter")
	require.Equal(t, []string{"started", "result"}, eventTypes(evs))
	assert.Contains(t, string(evs[1].Payload), `"output":{"message":"Hello, Ada!"}`)
}

func TestToolRunWasmStderrIsLogged(t *testing.T) {
	r := wasmgate(t, `{"input":{"text":7}}`, "tool", "run", "text-stats", "--tools", protoTools, "--json")
	evs := protoEvents(t, r, "text-stats")
	require.Equal(t, []string{"started", "log", "error"}, eventTypes(evs))
	assert.JSONEq(t, `{"level":"info","message":"textstats: input must be an object with a string field \"text\": json: cannot unmarshal number into Go struct field input.text of type string"}`,
		string(evs[1].Payload))
}

func TestToolRunInvalidManifests(t *testing.T) {
	manifest := func(dir string) string { return filepath.Join(protoTools, dir, "manifest.json") }
	for _, tt := range []struct{ tool, msg string }{
		{"bad-version", manifest("bad-version") + ": manifestVersion: must be 1, not 2"},
		{"id-mismatch", manifest("id-mismatch") + `: id: "other-name" must equal the name of the manifest's directory, "id-mismatch"`},
		{"Not_Kebab", manifest("Not_Kebab") + `: id: "Not_Kebab" is not kebab-case (lowercase letters and digits in words joined by "-", starting with a letter)`},
		{"bad-runtime", manifest("bad-runtime") + `: runtime: must be "wasm" or "js", not "python"`},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			r := wasmgate(t, `{}`, "tool", "run", tt.tool, "--tools", protoTools, "--json")
			assert.Equal(t, 2, r.code, r.stderr)
			evs := protoEvents(t, r, tt.tool)
			assert.Equal(t, []string{"started", "error"}, eventTypes(evs))
			assert.Equal(t, protoError{Code: "TOOL_INVALID", Message: tt.msg}, protoLastError(t, evs))
		})
	}
}

func TestToolRunGuardrails(t *testing.T) {
	t.Run("RUNNER_TIMEOUT from the manifest's timeoutMs", func(t *testing.T) {
		r := wasmgate(t, `{"input":{}}`, "tool", "run", "spin", "--tools", protoTools, "--json")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r, "spin")
		assert.Equal(t, []string{"started", "error"}, eventTypes(evs))
		assert.JSONEq(t, `{"name":"Spin","version":"1.0.0","runtime":"js","timeoutMs":300}`, string(evs[0].Payload))
		assert.Equal(t, protoError{Code: "RUNNER_TIMEOUT", Message: "the tool ran longer than its timeoutMs of 300 ms"}, protoLastError(t, evs))
	})
	t.Run("RUNNER_TIMEOUT from the request's config first", func(t *testing.T) {
		r := wasmgate(t, "", "tool", "run", "spin", "--tools", protoTools, "--config", `{"timeoutMs":200}`)
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Equal(t, "▶ started spin 1.0.0\n✖ error RUNNER_TIMEOUT: the tool ran longer than its timeoutMs of 200 ms\n", r.stdout)
	})
	t.Run("RUNNER_MAX_EVENTS at 10000", func(t *testing.T) {
		r := wasmgate(t, `{"input":{"lines":12000}}`, "tool", "run", "chatty", "--tools", protoTools, "--json")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r, "chatty")
		require.Len(t, evs, 10001, "the first 10000 events, then the runner's")
		assert.Equal(t, "started", evs[0].Type)
		for _, ev := range evs[1:10000] {
			require.Equal(t, "log", ev.Type)
			require.JSONEq(t, `{"level":"info","message":"x"}`, string(ev.Payload))
		}
		assert.Equal(t, protoError{Code: "RUNNER_MAX_EVENTS", Message: "the tool side wrote more than 10000 events (maxEvents)"}, protoLastError(t, evs))
	})
	t.Run("--max-events", func(t *testing.T) {
		r := wasmgate(t, `{"input":{"lines":100}}`, "tool", "run", "chatty", "--tools", protoTools, "--json", "--max-events", "50")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r, "chatty")
		require.Len(t, evs, 51)
		assert.Equal(t, protoError{Code: "RUNNER_MAX_EVENTS", Message: "the tool side wrote more than 50 events (maxEvents)"}, protoLastError(t, evs))

		r = wasmgate(t, `{"input":{"lines":48}}`, "tool", "run", "chatty", "--tools", protoTools, "--json", "--max-events", "50")
		assert.Equal(t, 0, r.code, "started, 48 logs and the result are 50 events: %s", r.stderr)
		assert.Len(t, protoEvents(t, r, "chatty"), 50)
	})
	t.Run("RUNNER_MAX_OUTPUT_BYTES at 10 MiB", func(t *testing.T) {
		r := wasmgate(t, `{"input":{}}`, "tool", "run", "bigout", "--tools", protoTools, "--json")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r, "bigout")
		assert.Equal(t, []string{"started", "error"}, eventTypes(evs))
		assert.Equal(t, protoError{Code: "RUNNER_MAX_OUTPUT_BYTES", Message: "the tool side wrote more than 10485760 bytes (maxOutputBytes)"}, protoLastError(t, evs))
	})
	t.Run("--max-output-bytes", func(t *testing.T) {
		r := wasmgate(t, `{"input":{"lines":100}}`, "tool", "run", "chatty", "--tools", protoTools, "--json", "--max-output-bytes", "2000")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r, "chatty")
		assert.Equal(t, protoError{Code: "RUNNER_MAX_OUTPUT_BYTES", Message: "the tool side wrote more than 2000 bytes (maxOutputBytes)"}, protoLastError(t, evs))
		passed := strings.TrimSuffix(r.stdout, "\n")
		passed = passed[:strings.LastIndex(passed, "\n")+1]
		assert.LessOrEqual(t, len(passed), 2000, "only what fits is passed on")
	})
}

func TestToolServeStdio(t *testing.T) {
	for _, tt := range []struct {
		name, tool, stdin string
		code              int
		types             []string
	}{
		{"result", "text-slug", `{"context":{"toolId":"text-slug"},"input":{"title":"A b"}}`, 0, []string{"started", "log", "result"}},
		{"recoverable error", "text-slug", `{"input":{"title":null}}`, 1, []string{"started", "error"}},
		{"stdin not JSON", "text-slug", `{"input":`, 2, []string{"started", "error"}},
		{"another tool's request", "text-upper", `{"context":{"toolId":"text-slug"}}`, 2, []string{"started", "error"}},
		{"unknown tool", "nope", `{}`, 2, []string{"started", "error"}},
		{"invalid manifest", "bad-runtime", `{}`, 2, []string{"started", "error"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, tt.stdin, "tool", "serve-stdio", tt.tool, "--tools", protoTools)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			assert.Equal(t, tt.types, eventTypes(protoEvents(t, r, tt.tool)))
		})
	}
}

func TestToolRunAudit(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		r := wasmgate(t, "", "tool", "run", "text-upper", "--tools", protoTools, "--input", `{"text":"a"}`, "--audit", log)
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "ok, 2 records, hash chain intact")
}

func TestToolRunUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"tool"}, "wasmgate tool run ID"},
		{[]string{"tool", "list"}, `wasmgate tool: unknown subcommand "list" (run, serve-stdio)`},
		{[]string{"tool", "run"}, "wasmgate tool run: give one tool ID"},
		{[]string{"tool", "run", "a", "b"}, "wasmgate tool run: give one tool ID"},
		{[]string{"tool", "run", "text-slug", "--input", "{"}, "wasmgate tool run: --input is not JSON"},
		{[]string{"tool", "run", "text-slug", "--config", "[1]"}, "wasmgate tool run: --config: the config is not a JSON object"},
		{[]string{"tool", "run", "text-slug", "--max-events", "0", "--input", "{}"}, "wasmgate tool run: --max-events must be positive"},
		{[]string{"tool", "serve-stdio"}, "wasmgate tool serve-stdio: give one tool ID"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := wasmgate(t, "", tt.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tt.stderr)
		})
	}
}
