package toolproto

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriterWritesOneLinePerEvent(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, "text-slug")
	_, err := w.Write(EventStarted, StartedPayload{Name: "Slug", Version: "1.0.0", Runtime: "js", TimeoutMs: 30000})
	require.NoError(t, err)
	_, err = w.Write(EventLog, LogPayload{Level: LevelInfo, Message: "a <b> & c"})
	require.NoError(t, err)
	end, err := w.Write(EventResult, ResultPayload{Output: json.RawMessage(`{"slug":"a-b"}`)})
	require.NoError(t, err)
	assert.Equal(t, EventResult, end.Type)

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	want := []string{
		`{"type":"started","ts":"TS","toolId":"text-slug","payload":{"name":"Slug","version":"1.0.0","runtime":"js","timeoutMs":30000}}`,
		`{"type":"log","ts":"TS","toolId":"text-slug","payload":{"level":"info","message":"a <b> & c"}}`,
		`{"type":"result","ts":"TS","toolId":"text-slug","payload":{"output":{"slug":"a-b"},"status":"","reason_codes":null,"executor_id":"","executor_version":"","trace_id":"","input_digest":"","output_digest":null,"fuel_used":0,"duration_ms":0}}`,
	}
	for i, l := range lines {
		ev, err := ParseEvent([]byte(l), "text-slug")
		require.NoError(t, err)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, ev.Ts)
		assert.Equal(t, want[i], strings.Replace(l, ev.Ts, "TS", 1))
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
	_, err = w.Write(EventResult, ResultPayload{})
	require.ErrorIs(t, err, ErrOutOfOrder, "after the terminal event")
	assert.Equal(t, 2, strings.Count(out.String(), "\n"))
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		ev   Event
		code int
	}{
		{Event{Type: EventResult, Payload: json.RawMessage(`{}`)}, 0},
		{Event{Type: EventError, Payload: json.RawMessage(`{"code":"X","recoverable":true}`)}, 1},
		{Event{Type: EventError, Payload: json.RawMessage(`{"code":"X","recoverable":false}`)}, 2},
		{Event{Type: EventError, Payload: json.RawMessage(`{"code":"X"}`)}, 2},
		{Event{}, 2},
	} {
		assert.Equal(t, tt.code, ExitCode(tt.ev), string(tt.ev.Payload))
	}
}

func TestPretty(t *testing.T) {
	var out bytes.Buffer
	emit := Pretty(&out)
	for _, ev := range []Event{
		{Type: EventStarted, ToolID: "text-slug", Payload: json.RawMessage(`{"name":"Slug","version":"1.0.0","timeoutMs":1}`)},
		{Type: EventLog, ToolID: "text-slug", Payload: json.RawMessage(`{"level":"info","message":"one"}`)},
		{Type: EventLog, ToolID: "text-slug", Payload: json.RawMessage(`{"level":"warn","message":"two"}`)},
		{Type: EventResult, ToolID: "text-slug", Payload: json.RawMessage(`{"output":{"slug":"a"},"status":"SUCCESS"}`)},
		{Type: EventResult, ToolID: "text-slug", Payload: json.RawMessage(`{"output":null}`)},
		{Type: EventError, ToolID: "text-slug", Payload: json.RawMessage(`{"code":"RUNNER_TIMEOUT","message":"too slow","recoverable":false}`)},
		{Type: EventStarted, ToolID: "nope", Payload: json.RawMessage(`{"timeoutMs":1}`)},
	} {
		require.NoError(t, emit(ev, nil))
	}
	assert.Equal(t, `▶ started text-slug 1.0.0
  log: one
  log: warn: two
✔ result: {"slug":"a"}
✔ result: null
✖ error RUNNER_TIMEOUT: too slow
▶ started nope
`, out.String())
}

func TestPassthrough(t *testing.T) {
	var out bytes.Buffer
	line := []byte(`{"type":"log",  "ts":"x"}`)
	require.NoError(t, Passthrough(&out)(Event{}, line[:len(line):len(line)]))
	assert.Equal(t, `{"type":"log",  "ts":"x"}`+"\n", out.String())
}

func TestLogLines(t *testing.T) {
	assert.Nil(t, logLines(""))
	assert.Equal(t, []LogPayload{
		{LevelInfo, "plain"},
		{LevelWarn, "careful"},
		{LevelError, "bad"},
		{LevelInfo, ""},
		{LevelInfo, "[log truncated at 64 KiB]"},
	}, logLines("plain\nwarn: careful\nerror: bad\n\n[log truncated at 64 KiB]\n"))
}
