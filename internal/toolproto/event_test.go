package toolproto

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/pipeline"
)

func TestWriterWritesOneLinePerEvent(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, "text-slug")
	_, err := w.Write(EventStarted, StartedPayload{Meta: Meta{Name: "Slug", Version: "1.0.0", Runtime: "js"}})
	require.NoError(t, err)
	_, err = w.Write(EventLog, LogPayload{Level: LevelInfo, Message: "a <b> & c"})
	require.NoError(t, err)
	_, err = w.Write(EventLog, LogPayload{Level: LevelDebug, Message: "with data", Data: json.RawMessage(`{"n":1}`)})
	require.NoError(t, err)
	end, err := w.Write(EventResult, ResultPayload(json.RawMessage(`{"slug":"a-b"}`)))
	require.NoError(t, err)
	assert.Equal(t, EventResult, end.Type)

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 4)
	want := []string{
		`{"type":"started","ts":"TS","toolId":"text-slug","payload":{"meta":{"name":"Slug","version":"1.0.0","runtime":"js"}}}`,
		`{"type":"log","ts":"TS","toolId":"text-slug","payload":{"level":"info","message":"a <b> & c"}}`,
		`{"type":"log","ts":"TS","toolId":"text-slug","payload":{"level":"debug","message":"with data","data":{"n":1}}}`,
		`{"type":"result","ts":"TS","toolId":"text-slug","payload":{"slug":"a-b"}}`,
	}
	for i, l := range lines {
		ev, err := ParseEvent([]byte(l), "text-slug")
		require.NoError(t, err)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, ev.Ts)
		assert.Equal(t, want[i], strings.Replace(l, ev.Ts, "TS", 1))
	}

	var errOut bytes.Buffer
	w = NewWriter(&errOut, "t")
	_, err = w.Write(EventStarted, StartedPayload{})
	require.NoError(t, err)
	_, err = w.Write(EventError, ErrorPayload{Code: "AUTH_FAILED", Message: "PAT expired", Recoverable: true})
	require.NoError(t, err)
	assert.Regexp(t, `^\{"type":"started","ts":"[^"]+","toolId":"t","payload":\{"meta":\{\}\}\}
\{"type":"error","ts":"[^"]+","toolId":"t","payload":\{"message":"PAT expired","code":"AUTH_FAILED","recoverable":true\}\}
$`, errOut.String())
}

func TestResultPayload(t *testing.T) {
	for _, tt := range []struct{ output, payload string }{
		{`{"review":"LGTM"}`, `{"review":"LGTM"}`},
		{`{}`, `{}`},
		{``, `{}`},
		{`[1,2]`, `{"value":[1,2]}`},
		{`"text"`, `{"value":"text"}`},
		{`42`, `{"value":42}`},
		{`null`, `{"value":null}`},
		{`true`, `{"value":true}`},
	} {
		assert.Equal(t, tt.payload, string(ResultPayload(json.RawMessage(tt.output))), tt.output)
	}
}

func TestWriterKeepsTheOrder(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, "t")
	_, err := w.Write(EventLog, LogPayload{})
	require.ErrorIs(t, err, ErrOutOfOrder, "log before started")
	_, err = w.Write(EventStarted, StartedPayload{})
	require.NoError(t, err)
	_, err = w.Write(EventStarted, StartedPayload{})
	require.ErrorIs(t, err, ErrOutOfOrder, "a second started")
	_, err = w.Write(EventError, ErrorPayload{Code: "X", Message: "m"})
	require.NoError(t, err)
	_, err = w.Write(EventResult, ResultPayload(nil))
	require.ErrorIs(t, err, ErrOutOfOrder, "after the terminal event")
	assert.Equal(t, 2, strings.Count(out.String(), "\n"))
}

func TestExitCodes(t *testing.T) {
	result := Event{Type: EventResult, Payload: json.RawMessage(`{}`)}
	recoverable := Event{Type: EventError, Payload: json.RawMessage(`{"message":"m","code":"X","recoverable":true}`)}
	fatal := Event{Type: EventError, Payload: json.RawMessage(`{"message":"m","code":"X","recoverable":false}`)}
	// The tool side: 0 after a result, 1 after every error event it writes.
	assert.Equal(t, 0, ExitCode(result))
	assert.Equal(t, 1, ExitCode(recoverable))
	assert.Equal(t, 1, ExitCode(fatal))
	// The runner: 2 for its own error events (the tool side ended without
	// one of its own).
	assert.Equal(t, 0, Ending{Event: result}.ExitCode())
	assert.Equal(t, 1, Ending{Event: recoverable}.ExitCode())
	assert.Equal(t, 1, Ending{Event: fatal}.ExitCode())
	assert.Equal(t, 2, Ending{Event: fatal, Runner: true}.ExitCode())
}

func TestPretty(t *testing.T) {
	var out bytes.Buffer
	emit := Pretty(&out)
	for _, ev := range []Event{
		{Type: EventStarted, ToolID: "text-slug", Payload: json.RawMessage(`{"meta":{"name":"Slug","version":"1.0.0"}}`)},
		{Type: EventLog, ToolID: "text-slug", Payload: json.RawMessage(`{"level":"info","message":"one"}`)},
		{Type: EventLog, ToolID: "text-slug", Payload: json.RawMessage(`{"level":"warn","message":"two"}`)},
		{Type: EventLog, ToolID: "text-slug", Payload: json.RawMessage(`{"level":"debug","message":"three","data":{ "n": 3 }}`)},
		{Type: EventResult, ToolID: "text-slug", Payload: json.RawMessage(`{"slug": "a"}`)},
		{Type: EventResult, ToolID: "text-slug", Payload: json.RawMessage(`{"value":null}`)},
		{Type: EventError, ToolID: "text-slug", Payload: json.RawMessage(`{"code":"RUNNER_GUARDRAIL","message":"too slow","recoverable":false}`)},
		{Type: EventStarted, ToolID: "nope", Payload: json.RawMessage(`{"meta":{}}`)},
	} {
		require.NoError(t, emit(ev, nil))
	}
	assert.Equal(t, `▶ started text-slug 1.0.0
  log: one
  log: warn: two
  log: debug: three {"n":3}
✔ result: {"slug":"a"}
✔ result: {"value":null}
✖ error RUNNER_GUARDRAIL: too slow
▶ started nope
`, out.String())
}

func TestPassthrough(t *testing.T) {
	var out bytes.Buffer
	line := []byte(`{"type":"log",  "ts":"x"}`)
	require.NoError(t, Passthrough(&out)(Event{}, line[:len(line):len(line)]))
	assert.Equal(t, `{"type":"log",  "ts":"x"}`+"\n", out.String())
}

func TestFormatVerdict(t *testing.T) {
	out := "b3"
	assert.Equal(t, "verdict: SUCCESS [] text_slug 1.0.0 fuel_used=12 duration_ms=3 trace_id=t1 input_digest=a1 output_digest=b3",
		FormatVerdict(pipeline.ActionResult{Status: pipeline.StatusSuccess, ReasonCodes: []pipeline.ReasonCode{}, ExecutorID: "text_slug",
			ExecutorVersion: "1.0.0", FuelUsed: 12, DurationMs: 3, TraceID: "t1", InputDigest: "a1", OutputDigest: &out}))
	assert.Equal(t, "verdict: BLOCKED [LIMIT_EXCEEDED FUEL_EXHAUSTED] loop 1.0.0 fuel_used=9 duration_ms=1 trace_id=t2 input_digest=a2 output_digest=null",
		FormatVerdict(pipeline.ActionResult{Status: pipeline.StatusBlocked, ReasonCodes: []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted},
			ExecutorID: "loop", ExecutorVersion: "1.0.0", FuelUsed: 9, DurationMs: 1, TraceID: "t2", InputDigest: "a2"}))
	// A verdict a log keeps names its leaf index, to fetch its proof by.
	index := uint64(41)
	assert.Equal(t, "verdict: FAILED [EXECUTOR_EXCEPTION] pat 0.0.0 fuel_used=7 duration_ms=2 trace_id=t3 input_digest=a3 output_digest=null audit_index=41",
		FormatVerdict(pipeline.ActionResult{Status: pipeline.StatusFailed, ReasonCodes: []pipeline.ReasonCode{pipeline.ExecutorException},
			ExecutorID: "pat", ExecutorVersion: "0.0.0", FuelUsed: 7, DurationMs: 2, TraceID: "t3", InputDigest: "a3", AuditIndex: &index}))
}
