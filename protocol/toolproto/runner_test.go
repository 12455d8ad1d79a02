package toolproto

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeEnv makes the test binary a fake tool side (see TestMain) that
// writes what the named script says.
const fakeEnv = "TOOLPROTO_FAKE_TOOL_SIDE"

const fakeTS = "2025-01-02T03:04:05.678Z"

func line(typ, payload string) string {
	return fmt.Sprintf(`{"type":%q,"ts":%q,"toolId":"fake","payload":%s}`, typ, fakeTS, payload)
}

var (
	// Spaces and key order a Go encoder would not produce, to show the
	// runner passes lines through as they are.
	startedLine = `{"type":"started", "toolId":"fake", "ts":"` + fakeTS + `", "payload":{"name":"Fake","version":"1.0.0","runtime":"js","timeoutMs":30000}}`
	logLine     = line("log", `{"level":"info","message":"hello <&>"}`)
	resultLine  = line("result", `{"output":{"ok":true},"status":"SUCCESS","reason_codes":[]}`)
	recoverLine = line("error", `{"code":"EXECUTOR_EXCEPTION","message":"Error: no","recoverable":true}`)
	fatalLine   = line("error", `{"code":"FUEL_EXHAUSTED","message":"fuel exhausted","recoverable":false}`)
	bigLogLine  = line("log", `{"level":"info","message":"`+strings.Repeat("x", 5000)+`"}`)
)

// fakeScripts are the fake tool sides: what each writes on stdout and
// stderr, and how it ends.
var fakeScripts = map[string]func(){
	"lifecycle":   func() { out(startedLine, logLine, resultLine) },
	"recoverable": func() { out(startedLine, recoverLine); os.Exit(1) },
	"fatal":       func() { out(startedLine, fatalLine); os.Exit(2) },
	"events":      func() { out(startedLine); out(repeat(logLine, 10)...); out(resultLine) },
	"bytes":       func() { out(startedLine, bigLogLine, resultLine) },
	"long-line":   func() { fmt.Print(strings.Repeat("x", 200_000)); hang() },
	"stderr":      func() { fmt.Fprint(os.Stderr, strings.Repeat("e", 5000)); hang() },
	"hang":        func() { out(startedLine); hang() },
	"silent":      hang,
	"crash":       func() { out(startedLine, logLine); fmt.Fprintln(os.Stderr, "panic: the tool side broke"); os.Exit(3) },
	"quiet-exit":  func() {},
	"not-json":    func() { out(startedLine, "this is not JSON", resultLine) },
	"blank":       func() { out(startedLine, "", resultLine) },
	"no-started":  func() { out(logLine, resultLine) },
	"two-started": func() { out(startedLine, startedLine, resultLine) },
	"after-end":   func() { out(startedLine, resultLine, logLine) },
	"two-ends":    func() { out(startedLine, resultLine, recoverLine) },
	"other-tool":  func() { out(strings.Replace(startedLine, `"fake"`, `"other"`, 1), resultLine) },
	"bad-type":    func() { out(startedLine, line("progress", `{}`), resultLine) },
	"bad-ts":      func() { out(startedLine, strings.Replace(logLine, fakeTS, "yesterday", 1), resultLine) },
	"bad-payload": func() { out(startedLine, line("log", `"text"`), resultLine) },
	"bad-error":   func() { out(startedLine, line("error", `{"message":"no code"}`)); os.Exit(2) },
	"no-newline":  func() { out(startedLine); fmt.Print(resultLine) },
	"echo-stdin": func() {
		var in bytes.Buffer
		_, _ = in.ReadFrom(os.Stdin)
		out(startedLine, line("result", `{"output":`+in.String()+`}`))
	},
}

func out(lines ...string) {
	for _, l := range lines {
		fmt.Println(l)
	}
}

func repeat(s string, n int) []string {
	r := make([]string, n)
	for i := range r {
		r[i] = s
	}
	return r
}

func hang() { time.Sleep(time.Hour) }

func TestMain(m *testing.M) {
	if name := os.Getenv(fakeEnv); name != "" {
		fakeScripts[name]()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runFake runs the runner against the fake tool side script.
func runFake(t *testing.T, ctx context.Context, script string, g Guardrails, request string) (Event, []string) {
	t.Helper()
	var lines []string
	ev, err := Run(ctx, RunConfig{
		ToolID:  "fake",
		Request: []byte(request),
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fakeEnv+"="+script)
			return cmd
		},
		Guardrails: g,
		Emit: func(ev Event, line []byte) error {
			lines = append(lines, string(line))
			return nil
		},
	})
	require.NoError(t, err)
	return ev, lines
}

func TestRunPassesTheLifecycleThroughUnchanged(t *testing.T) {
	for _, tt := range []struct {
		script string
		lines  []string
		exit   int
	}{
		{"lifecycle", []string{startedLine, logLine, resultLine}, ExitResult},
		{"recoverable", []string{startedLine, recoverLine}, ExitRecoverable},
		{"fatal", []string{startedLine, fatalLine}, ExitNonRecoverable},
		{"no-newline", []string{startedLine, resultLine}, ExitResult},
		{"events", append(append([]string{startedLine}, repeat(logLine, 10)...), resultLine), ExitResult},
	} {
		t.Run(tt.script, func(t *testing.T) {
			ev, lines := runFake(t, context.Background(), tt.script, Guardrails{}, `{}`)
			assert.Equal(t, tt.lines, lines)
			assert.Equal(t, tt.exit, ExitCode(ev))
		})
	}
}

func TestRunGivesTheRequestToTheToolSide(t *testing.T) {
	ev, _ := runFake(t, context.Background(), "echo-stdin", Guardrails{}, `{"input":{"a":1}}`)
	assert.JSONEq(t, `{"output":{"input":{"a":1}}}`, string(ev.Payload))
}

// runnerError is the runner's own terminal event, as the tests see it.
func runnerError(t *testing.T, lines []string) ErrorPayload {
	t.Helper()
	require.NotEmpty(t, lines)
	ev, err := ParseEvent([]byte(lines[len(lines)-1]), "fake")
	require.NoError(t, err)
	p, ok := ErrorOf(ev)
	require.True(t, ok, lines[len(lines)-1])
	assert.Nil(t, p.Verdict)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, ev.Ts)
	return p
}

func TestRunGuardrails(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		guard        Guardrails
		passed       []string
		code, msg    string
	}{
		{"too many events", "events", Guardrails{MaxEvents: 5}, append([]string{startedLine}, repeat(logLine, 4)...),
			CodeRunnerMaxEvents, "the tool side wrote more than 5 events (maxEvents)"},
		{"exactly maxEvents is fine", "lifecycle", Guardrails{MaxEvents: 3}, []string{startedLine, logLine, resultLine}, "", ""},
		{"too many bytes on stdout", "bytes", Guardrails{MaxOutputBytes: 1000}, []string{startedLine},
			CodeRunnerMaxOutputBytes, "the tool side wrote more than 1000 bytes (maxOutputBytes)"},
		{"a line that never ends", "long-line", Guardrails{MaxOutputBytes: 100_000}, nil,
			CodeRunnerMaxOutputBytes, "the tool side wrote more than 100000 bytes (maxOutputBytes)"},
		{"too many bytes on stderr", "stderr", Guardrails{MaxOutputBytes: 1000}, nil,
			CodeRunnerMaxOutputBytes, "the tool side wrote more than 1000 bytes (maxOutputBytes)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, lines := runFake(t, context.Background(), tt.script, tt.guard, `{}`)
			if tt.code == "" {
				assert.Equal(t, tt.passed, lines)
				assert.Equal(t, ExitResult, ExitCode(ev))
				return
			}
			require.Len(t, lines, max(len(tt.passed), 1)+1, "%q", lines)
			if tt.passed == nil {
				// The runner writes the started event the tool side did not.
				assert.JSONEq(t, `{"timeoutMs":30000}`, string(mustEvent(t, lines[0]).Payload))
			} else {
				assert.Equal(t, tt.passed, lines[:len(tt.passed)])
			}
			assert.Equal(t, ErrorPayload{Code: tt.code, Message: tt.msg}, runnerError(t, lines))
			assert.Equal(t, ExitNonRecoverable, ExitCode(ev))
		})
	}
}

func TestRunTimeout(t *testing.T) {
	ev, lines := runFake(t, context.Background(), "hang", Guardrails{Timeout: 500 * time.Millisecond}, `{}`)
	require.Len(t, lines, 2, "%q", lines)
	// The tool side's started event, or the runner's when the tool side
	// did not get to write one in time.
	assert.Equal(t, EventStarted, mustEvent(t, lines[0]).Type)
	assert.Equal(t, ErrorPayload{Code: CodeRunnerTimeout, Message: "the tool ran longer than its timeoutMs of 500 ms"}, runnerError(t, lines))
	assert.Equal(t, ExitNonRecoverable, ExitCode(ev))
}

func mustEvent(t *testing.T, line string) Event {
	t.Helper()
	ev, err := ParseEvent([]byte(line), "fake")
	require.NoError(t, err)
	return ev
}

func TestRunWritesStartedForASilentToolSide(t *testing.T) {
	ev, lines := runFake(t, context.Background(), "silent", Guardrails{Timeout: 150 * time.Millisecond}, `{}`)
	require.Len(t, lines, 2)
	started := mustEvent(t, lines[0])
	assert.Equal(t, EventStarted, started.Type)
	assert.JSONEq(t, `{"timeoutMs":150}`, string(started.Payload))
	assert.Equal(t, ErrorPayload{Code: CodeRunnerTimeout, Message: "the tool ran longer than its timeoutMs of 150 ms"}, runnerError(t, lines))
	assert.Equal(t, ExitNonRecoverable, ExitCode(ev))
}

func TestRunProtocolErrors(t *testing.T) {
	for _, tt := range []struct {
		script string
		passed []string
		msg    string
	}{
		{"not-json", []string{startedLine}, `event 2: not a JSON event: "this is not JSON"`},
		{"blank", []string{startedLine}, `event 2: not a JSON event: ""`},
		{"no-started", nil, "event 1: the first event is log; it must be started"},
		{"two-started", []string{startedLine}, "event 2: a second started event"},
		{"after-end", []string{startedLine}, "event 3: a log event after the result event"},
		{"two-ends", []string{startedLine}, "event 3: a error event after the result event"},
		{"other-tool", nil, `event 1: toolId is "other", not "fake"`},
		{"bad-type", []string{startedLine}, `event 2: unknown event type "progress"`},
		{"bad-ts", []string{startedLine}, `event 2: ts "yesterday" is not an RFC 3339 timestamp`},
		{"bad-payload", []string{startedLine}, "event 2: the log event's payload is not a JSON object"},
		{"bad-error", []string{startedLine}, "event 2: the error event's payload lacks a code or recoverable"},
	} {
		t.Run(tt.script, func(t *testing.T) {
			ev, lines := runFake(t, context.Background(), tt.script, Guardrails{}, `{}`)
			// Without the tool side's, the runner writes a started event.
			require.Len(t, lines, max(len(tt.passed), 1)+1, "%q", lines)
			if tt.passed != nil {
				assert.Equal(t, tt.passed, lines[:len(tt.passed)])
			}
			assert.Equal(t, EventStarted, mustEvent(t, lines[0]).Type)
			assert.Equal(t, ErrorPayload{Code: CodeRunnerProtocolError, Message: tt.msg}, runnerError(t, lines))
			assert.Equal(t, ExitNonRecoverable, ExitCode(ev))
		})
	}
}

func TestRunToolSideCrash(t *testing.T) {
	ev, lines := runFake(t, context.Background(), "crash", Guardrails{}, `{}`)
	require.Len(t, lines, 3)
	assert.Equal(t, []string{startedLine, logLine}, lines[:2])
	assert.Equal(t, ErrorPayload{Code: CodeToolCrashed,
		Message: "the tool side exited with status 3 without a result or error event; its stderr ends: panic: the tool side broke"},
		runnerError(t, lines))
	assert.Equal(t, ExitNonRecoverable, ExitCode(ev))

	_, lines = runFake(t, context.Background(), "quiet-exit", Guardrails{}, `{}`)
	require.Len(t, lines, 2)
	assert.Equal(t, "the tool side exited with status 0 without a result or error event", runnerError(t, lines).Message)
}

func TestRunCannotStartTheToolSide(t *testing.T) {
	var lines []string
	ev, err := Run(context.Background(), RunConfig{
		ToolID:  "fake",
		Command: func() *exec.Cmd { return exec.Command("/nonexistent/tool-side") },
		Emit:    func(_ Event, line []byte) error { lines = append(lines, string(line)); return nil },
	})
	require.NoError(t, err)
	require.Len(t, lines, 2)
	p := runnerError(t, lines)
	assert.Equal(t, CodeInternalError, p.Code)
	assert.Contains(t, p.Message, "cannot start the tool side: fork/exec /nonexistent/tool-side")
	assert.Equal(t, ExitNonRecoverable, ExitCode(ev))
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var lines []string
	ev, err := Run(ctx, RunConfig{
		ToolID: "fake",
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fakeEnv+"=hang")
			return cmd
		},
		Emit: func(_ Event, line []byte) error {
			lines = append(lines, string(line))
			cancel() // once the tool side has started
			return nil
		},
	})
	require.NoError(t, err)
	require.Len(t, lines, 2)
	assert.Equal(t, ErrorPayload{Code: CodeCancelled, Message: "the run was cancelled: context canceled"}, runnerError(t, lines))
	assert.Equal(t, ExitNonRecoverable, ExitCode(ev))
}

func TestRunStopsWhenEmitFails(t *testing.T) {
	_, err := Run(context.Background(), RunConfig{
		ToolID: "fake",
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fakeEnv+"=hang")
			return cmd
		},
		Emit: func(Event, []byte) error { return os.ErrClosed },
	})
	require.ErrorIs(t, err, os.ErrClosed)
}

func TestRunTimeoutFromTheManifestAndRequest(t *testing.T) {
	dir := t.TempDir()
	writeTool(t, dir, "fake", `{"timeoutMs": 250}`)
	for _, tt := range []struct {
		request string
		started string
	}{
		{`{}`, `{"name":"Fake","version":"1.0.0","runtime":"js","timeoutMs":250}`},
		{`{"context":{"config":{"timeoutMs":120}}}`, `{"name":"Fake","version":"1.0.0","runtime":"js","timeoutMs":120}`},
		// The tool side reports the bad request; the runner falls back.
		{`{"context":{"config":{"timeoutMs":"soon"}}}`, `{"name":"Fake","version":"1.0.0","runtime":"js","timeoutMs":250}`},
	} {
		var lines []string
		_, err := Run(context.Background(), RunConfig{
			ToolsDir: dir, ToolID: "fake", Request: []byte(tt.request),
			Command: func() *exec.Cmd {
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), fakeEnv+"=silent")
				return cmd
			},
			Emit: func(_ Event, line []byte) error { lines = append(lines, string(line)); return nil },
		})
		require.NoError(t, err)
		require.Len(t, lines, 2)
		assert.JSONEq(t, tt.started, string(mustEvent(t, lines[0]).Payload))
		var started StartedPayload
		require.NoError(t, json.Unmarshal(mustEvent(t, lines[0]).Payload, &started))
		assert.Equal(t, fmt.Sprintf("the tool ran longer than its timeoutMs of %d ms", started.TimeoutMs), runnerError(t, lines).Message)
	}
}
