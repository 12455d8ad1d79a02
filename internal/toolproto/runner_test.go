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
	startedLine = `{"type":"started", "toolId":"fake", "ts":"` + fakeTS + `", "payload":{"meta":{"name":"Fake","version":"1.0.0","runtime":"js"}}}`
	logLine     = line("log", `{"level":"info","message":"hello <&>"}`)
	resultLine  = line("result", `{"review":"LGTM"}`)
	result2Line = line("result", `{"review":"LGTM, twice"}`)
	scalarLine  = line("result", `"done"`)
	recoverLine = line("error", `{"message":"PAT expired","code":"AUTH_FAILED","recoverable":true}`)
	fatalLine   = line("error", `{"message":"fuel exhausted","code":"FUEL_EXHAUSTED","recoverable":false}`)
	codeless    = line("error", `{"message":"no code","recoverable":true}`)
	bigLogLine  = line("log", `{"level":"info","message":"`+strings.Repeat("x", 5000)+`"}`)
)

// fakeScripts are the fake tool sides: what each writes on stdout and
// stderr, and how it ends.
var fakeScripts = map[string]func(){
	"lifecycle":         func() { out(startedLine, logLine, resultLine) },
	"recoverable":       func() { out(startedLine, recoverLine); os.Exit(1) },
	"fatal":             func() { out(startedLine, fatalLine); os.Exit(1) },
	"error-then-crash":  func() { out(startedLine, fatalLine); os.Exit(2) },
	"result-then-crash": func() { out(startedLine, resultLine); os.Exit(3) },
	"codeless":          func() { out(startedLine, codeless); os.Exit(1) },
	"scalar":            func() { out(startedLine, scalarLine) },
	"two-results":       func() { out(startedLine, resultLine, logLine, result2Line) },
	"after-end":         func() { out(startedLine, resultLine, logLine) },
	"two-ends":          func() { out(startedLine, resultLine, recoverLine); os.Exit(1) },
	"events":            func() { out(startedLine); out(repeat(logLine, 10)...); out(resultLine) },
	"bytes":             func() { out(startedLine, bigLogLine, resultLine) },
	"long-line":         func() { fmt.Print(strings.Repeat("x", 200_000)); hang() },
	"stderr":            func() { fmt.Fprint(os.Stderr, strings.Repeat("e", 5000)); out(startedLine, resultLine) },
	"hang":              func() { out(startedLine); hang() },
	"silent":            hang,
	"crash":             func() { out(startedLine, logLine); fmt.Fprintln(os.Stderr, "panic: the tool side broke"); os.Exit(3) },
	"quiet-exit":        func() {},
	"not-json":          func() { out(startedLine, "this is not JSON", resultLine) },
	"blank":             func() { out(startedLine, "", resultLine) },
	"no-started":        func() { out(logLine, resultLine) },
	"two-started":       func() { out(startedLine, startedLine, resultLine) },
	"other-tool":        func() { out(strings.Replace(startedLine, `"fake"`, `"other"`, 1), resultLine) },
	"bad-type":          func() { out(startedLine, line("progress", `{}`), resultLine) },
	"bad-ts":            func() { out(startedLine, strings.Replace(logLine, fakeTS, "yesterday", 1), resultLine) },
	"bad-payload":       func() { out(startedLine, line("log", `"text"`), resultLine) },
	"bad-level":         func() { out(startedLine, line("log", `{"level":"verbose","message":"m"}`), resultLine) },
	"no-payload":        func() { out(startedLine, `{"type":"result","ts":"`+fakeTS+`","toolId":"fake"}`) },
	"bad-error":         func() { out(startedLine, line("error", `{"message":"m","code":"X"}`)); os.Exit(1) },
	"bad-code":          func() { out(startedLine, line("error", `{"message":"m","code":7,"recoverable":true}`)); os.Exit(1) },
	"no-newline":        func() { out(startedLine); fmt.Print(resultLine) },
	"echo-stdin": func() {
		var in bytes.Buffer
		_, _ = in.ReadFrom(os.Stdin)
		out(startedLine, line("result", `{"got":`+in.String()+`}`))
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
func runFake(t *testing.T, ctx context.Context, script string, g Guardrails, request string) (Ending, []string) {
	t.Helper()
	var lines []string
	end, err := Run(ctx, RunConfig{
		ToolID:     "fake",
		Request:    []byte(request),
		Command:    fake(script),
		Guardrails: g,
		Emit: func(ev Event, line []byte) error {
			lines = append(lines, string(line))
			return nil
		},
	})
	require.NoError(t, err)
	return end, lines
}

func fake(script string) func() *exec.Cmd {
	return func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fakeEnv+"="+script)
		return cmd
	}
}

func TestRunPassesTheEventsThroughUnchanged(t *testing.T) {
	for _, tt := range []struct {
		script string
		lines  []string
		exit   int
	}{
		{"lifecycle", []string{startedLine, logLine, resultLine}, 0},
		{"recoverable", []string{startedLine, recoverLine}, 1},
		{"fatal", []string{startedLine, fatalLine}, 1},
		// The runner adds no second terminal event after the tool side's
		// own error, whatever its exit status.
		{"error-then-crash", []string{startedLine, fatalLine}, 1},
		{"codeless", []string{startedLine, codeless}, 1},
		{"scalar", []string{startedLine, scalarLine}, 0},
		{"no-newline", []string{startedLine, resultLine}, 0},
		{"events", append(append([]string{startedLine}, repeat(logLine, 10)...), resultLine), 0},
		// The last result or error wins, as the protocol says.
		{"two-results", []string{startedLine, resultLine, logLine, result2Line}, 0},
		{"after-end", []string{startedLine, resultLine, logLine}, 0},
		{"two-ends", []string{startedLine, resultLine, recoverLine}, 1},
	} {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			end, lines := runFake(t, context.Background(), tt.script, Guardrails{}, `{}`)
			assert.Equal(t, tt.lines, lines)
			assert.False(t, end.Runner)
			last := ""
			for _, l := range tt.lines {
				if ev := mustEvent(t, l); ev.Type.Terminal() {
					last = l
				}
			}
			assert.Equal(t, last, string(mustLine(t, end.Event)), "the last result or error is the ending")
			assert.Equal(t, tt.exit, end.ExitCode())
		})
	}
}

// mustLine encodes ev as the tool side wrote it (its fields in order, the
// payload as it came).
func mustLine(t *testing.T, ev Event) []byte {
	t.Helper()
	if ev.ToolID == "fake" && ev.Ts == fakeTS {
		return []byte(line(string(ev.Type), string(ev.Payload)))
	}
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	return b
}

func TestRunGivesTheRequestToTheToolSide(t *testing.T) {
	t.Parallel()
	end, _ := runFake(t, context.Background(), "echo-stdin", Guardrails{}, `{"input":{"a":1}}`)
	assert.JSONEq(t, `{"got":{"input":{"a":1}}}`, string(end.Event.Payload))
}

// runnerError is the runner's own terminal event, as the tests see it.
func runnerError(t *testing.T, lines []string) ErrorPayload {
	t.Helper()
	require.NotEmpty(t, lines)
	ev, err := ParseEvent([]byte(lines[len(lines)-1]), "fake")
	require.NoError(t, err)
	p, ok := ErrorOf(ev)
	require.True(t, ok, lines[len(lines)-1])
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, ev.Ts)
	var exact map[string]any
	require.NoError(t, json.Unmarshal(ev.Payload, &exact))
	assert.Len(t, exact, 3, "message, code and recoverable, nothing else: %s", ev.Payload)
	return p
}

func TestRunGuardrails(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		guard        Guardrails
		passed       []string
		msg          string
	}{
		{"too many events", "events", Guardrails{MaxEvents: 5}, append([]string{startedLine}, repeat(logLine, 4)...),
			"guardrail maxEvents: the tool side wrote more than 5 events"},
		{"exactly maxEvents is fine", "lifecycle", Guardrails{MaxEvents: 3}, []string{startedLine, logLine, resultLine}, ""},
		{"too many bytes on stdout", "bytes", Guardrails{MaxOutputBytes: 1000}, []string{startedLine},
			"guardrail maxOutputBytes: the tool side wrote more than 1000 bytes to stdout"},
		{"a line that never ends", "long-line", Guardrails{MaxOutputBytes: 100_000}, nil,
			"guardrail maxOutputBytes: the tool side wrote more than 100000 bytes to stdout"},
		// maxOutputBytes bounds stdout, as the reference runner counts it.
		{"stderr is not counted", "stderr", Guardrails{MaxOutputBytes: 1000}, []string{startedLine, resultLine}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			end, lines := runFake(t, context.Background(), tt.script, tt.guard, `{}`)
			if tt.msg == "" {
				assert.Equal(t, tt.passed, lines)
				assert.Equal(t, 0, end.ExitCode())
				return
			}
			require.Len(t, lines, max(len(tt.passed), 1)+1, "%q", lines)
			if tt.passed == nil {
				// The runner writes the started event the tool side did not.
				assert.JSONEq(t, `{"meta":{}}`, string(mustEvent(t, lines[0]).Payload))
			} else {
				assert.Equal(t, tt.passed, lines[:len(tt.passed)])
			}
			assert.Equal(t, ErrorPayload{Code: CodeRunnerGuardrail, Message: tt.msg}, runnerError(t, lines))
			assert.True(t, end.Runner)
			assert.Equal(t, 2, end.ExitCode())
		})
	}
}

func TestRunTimeout(t *testing.T) {
	t.Parallel()
	end, lines := runFake(t, context.Background(), "hang", Guardrails{Timeout: 500 * time.Millisecond}, `{}`)
	require.Len(t, lines, 2, "%q", lines)
	// The tool side's started event, or the runner's when the tool side
	// did not get to write one in time.
	assert.Equal(t, EventStarted, mustEvent(t, lines[0]).Type)
	assert.Equal(t, ErrorPayload{Code: CodeRunnerGuardrail, Message: "guardrail timeoutMs: the tool ran longer than 500 ms"}, runnerError(t, lines))
	assert.Equal(t, 2, end.ExitCode())
}

func mustEvent(t *testing.T, line string) Event {
	t.Helper()
	ev, err := ParseEvent([]byte(line), "fake")
	require.NoError(t, err)
	return ev
}

func TestRunWritesStartedForASilentToolSide(t *testing.T) {
	t.Parallel()
	end, lines := runFake(t, context.Background(), "silent", Guardrails{Timeout: 150 * time.Millisecond}, `{}`)
	require.Len(t, lines, 2)
	started := mustEvent(t, lines[0])
	assert.Equal(t, EventStarted, started.Type)
	assert.JSONEq(t, `{"meta":{}}`, string(started.Payload))
	assert.Equal(t, ErrorPayload{Code: CodeRunnerGuardrail, Message: "guardrail timeoutMs: the tool ran longer than 150 ms"}, runnerError(t, lines))
	assert.Equal(t, 2, end.ExitCode())
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
		{"other-tool", nil, `event 1: toolId is "other", not "fake"`},
		{"bad-type", []string{startedLine}, `event 2: unknown event type "progress"`},
		{"bad-ts", []string{startedLine}, `event 2: ts "yesterday" is not an ISO 8601 timestamp`},
		{"bad-payload", []string{startedLine}, "event 2: the log event's payload is not a JSON object"},
		{"bad-level", []string{startedLine}, "event 2: the log event's payload lacks a level (debug, info, warn or error) or a string message"},
		{"no-payload", []string{startedLine}, "event 2: the result event has no payload"},
		{"bad-error", []string{startedLine}, "event 2: the error event's payload lacks a string message or a boolean recoverable"},
		{"bad-code", []string{startedLine}, "event 2: the error event's code is not a string"},
	} {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			end, lines := runFake(t, context.Background(), tt.script, Guardrails{}, `{}`)
			// Without the tool side's, the runner writes a started event.
			require.Len(t, lines, max(len(tt.passed), 1)+1, "%q", lines)
			if tt.passed != nil {
				assert.Equal(t, tt.passed, lines[:len(tt.passed)])
			}
			assert.Equal(t, EventStarted, mustEvent(t, lines[0]).Type)
			assert.Equal(t, ErrorPayload{Code: CodeRunnerProtocolError, Message: tt.msg}, runnerError(t, lines))
			assert.Equal(t, 2, end.ExitCode())
		})
	}
}

func TestRunToolSideCrash(t *testing.T) {
	t.Parallel()
	end, lines := runFake(t, context.Background(), "crash", Guardrails{}, `{}`)
	require.Len(t, lines, 3)
	assert.Equal(t, []string{startedLine, logLine}, lines[:2])
	assert.Equal(t, ErrorPayload{Code: CodeToolCrash,
		Message: "the tool side exited with status 3 without a result or error event; its stderr ends: panic: the tool side broke"},
		runnerError(t, lines))
	assert.True(t, end.Runner)
	assert.Equal(t, 2, end.ExitCode())

	_, lines = runFake(t, context.Background(), "quiet-exit", Guardrails{}, `{}`)
	require.Len(t, lines, 2)
	assert.Equal(t, "the tool side exited with status 0 without a result or error event", runnerError(t, lines).Message)

	// Exit 2 or more is a crash whatever came before, except the tool
	// side's own error.
	end, lines = runFake(t, context.Background(), "result-then-crash", Guardrails{}, `{}`)
	require.Len(t, lines, 3)
	assert.Equal(t, []string{startedLine, resultLine}, lines[:2])
	assert.Equal(t, ErrorPayload{Code: CodeToolCrash, Message: "the tool side exited with status 3 after its result"}, runnerError(t, lines))
	assert.Equal(t, 2, end.ExitCode())
}

func TestRunCannotStartTheToolSide(t *testing.T) {
	t.Parallel()
	var lines []string
	end, err := Run(context.Background(), RunConfig{
		ToolID:  "fake",
		Command: func() *exec.Cmd { return exec.Command("/nonexistent/tool-side") },
		Emit:    func(_ Event, line []byte) error { lines = append(lines, string(line)); return nil },
	})
	require.NoError(t, err)
	require.Len(t, lines, 2)
	p := runnerError(t, lines)
	assert.Equal(t, CodeInternalError, p.Code)
	assert.Contains(t, p.Message, "cannot start the tool side: fork/exec /nonexistent/tool-side")
	assert.Equal(t, 2, end.ExitCode())
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var lines []string
	end, err := Run(ctx, RunConfig{
		ToolID:  "fake",
		Command: fake("hang"),
		Emit: func(_ Event, line []byte) error {
			lines = append(lines, string(line))
			cancel() // once the tool side has started
			return nil
		},
	})
	require.NoError(t, err)
	require.Len(t, lines, 2)
	assert.Equal(t, ErrorPayload{Code: CodeCancelled, Message: "the run was cancelled: context canceled"}, runnerError(t, lines))
	assert.Equal(t, 2, end.ExitCode())
}

func TestRunStopsWhenEmitFails(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), RunConfig{
		ToolID:  "fake",
		Command: fake("hang"),
		Emit:    func(Event, []byte) error { return os.ErrClosed },
	})
	require.ErrorIs(t, err, os.ErrClosed)
}

func TestRunPassesStderrOn(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	end, err := Run(context.Background(), RunConfig{
		ToolID: "fake", Command: fake("stderr"), Stderr: &stderr,
		Emit: func(Event, []byte) error { return nil },
	})
	require.NoError(t, err)
	assert.Equal(t, 0, end.ExitCode())
	assert.Equal(t, strings.Repeat("e", 5000), stderr.String())
}

func TestRunTimeoutFromTheManifestAndRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeTool(t, dir, "fake", `{"timeoutMs": 250}`)
	for _, tt := range []struct {
		request string
		ms      int
	}{
		{`{}`, 250},
		{`{"context":{"config":{"timeoutMs":120}}}`, 120},
		// The tool side reports the bad request; the runner falls back.
		{`{"context":{"config":{"timeoutMs":"soon"}}}`, 250},
	} {
		var lines []string
		_, err := Run(context.Background(), RunConfig{
			ToolsDir: dir, ToolID: "fake", Request: []byte(tt.request),
			Command: fake("silent"),
			Emit:    func(_ Event, line []byte) error { lines = append(lines, string(line)); return nil },
		})
		require.NoError(t, err)
		require.Len(t, lines, 2)
		assert.JSONEq(t, `{"meta":{"name":"Fake","version":"1.0.0","runtime":"js"}}`, string(mustEvent(t, lines[0]).Payload))
		assert.Equal(t, fmt.Sprintf("guardrail timeoutMs: the tool ran longer than %d ms", tt.ms), runnerError(t, lines).Message)
	}
}
