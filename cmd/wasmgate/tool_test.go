package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `wasmgate tool run` starts the binary itself as its tool side and speaks
// the NDJSON tool protocol with it over stdio, so the tests of tool run and
// serve-stdio run the built binary (wasmgateProcess, startTool); the others
// run the command in-process.

// protoTools is the tools directory of the NDJSON tool protocol's tests.
var protoTools = td(filepath.Join("toolproto", "tools"))

// protoToolIDs are the valid tools there.
const protoToolIDs = "bigout, chatty, fuel-out, greeter, hello-node, pat-check, slow-logger, spin, text-slug, text-stats, text-upper, word-count"

// protoEvent is a ToolEvent line as a client reads it.
type protoEvent struct {
	Type    string          `json:"type"`
	Ts      string          `json:"ts"`
	ToolID  string          `json:"toolId"`
	Payload json.RawMessage `json:"payload"`
}

// protoError is an error event's payload, exactly: a field the protocol
// does not define fails to decode.
type protoError struct {
	Message     string `json:"message"`
	Code        string `json:"code"`
	Recoverable bool   `json:"recoverable"`
}

// protoEvents parses stdout as NDJSON events of toolID, checking what
// every stream must be: nothing but events of the protocol's shape, each
// with ts and toolId, started first, exactly one terminal event, last.
func protoEvents(t *testing.T, stdout, toolID string) []protoEvent {
	t.Helper()
	require.True(t, strings.HasSuffix(stdout, "\n"), "stdout: %q", stdout)
	var evs []protoEvent
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		var ev protoEvent
		dec := json.NewDecoder(strings.NewReader(l))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&ev), "not an event: %q", l)
		assert.Equal(t, toolID, ev.ToolID)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, ev.Ts, "ts as toISOString writes it")
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
	dec := json.NewDecoder(bytes.NewReader(last.Payload))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&p), "an error payload is {message, code, recoverable}: %s", last.Payload)
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
	t.Parallel()
	r := wasmgateProcess(t, `{"context":{"toolId":"text-slug","config":{},"workspaceRoot":"/w"},"input":{"title":"Hello, World"}}`,
		"tool", "run", "text-slug", "--tools", protoTools, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	evs := protoEvents(t, r.stdout, "text-slug")
	require.Equal(t, []string{"started", "log", "result"}, eventTypes(evs))
	assert.Equal(t, `{"meta":{"name":"Text slug","version":"1.0.0","runtime":"js"}}`, string(evs[0].Payload))
	assert.Equal(t, `{"level":"info","message":"slugging 12 characters"}`, string(evs[1].Payload))
	// The result's payload is the tool's output itself.
	assert.Equal(t, `{"slug":"hello-world"}`, string(evs[2].Payload))
}

func TestToolRunPretty(t *testing.T) {
	t.Parallel()
	verdict := func(status, codes, executor string) string {
		return `^verdict: ` + status + ` \[` + codes + `\] ` + executor + ` fuel_used=\d+ duration_ms=\d+ trace_id=[0-9a-f-]{36} input_digest=[0-9a-f]{64} output_digest=([0-9a-f]{64}|null)\n$`
	}
	for _, tt := range []struct {
		name, tool, input, config string
		code                      int
		stdout, stderr            string
	}{
		{"result", "text-slug", `{"title":"Hello, World"}`, "", 0, `▶ started text-slug 1.0.0
  log: slugging 12 characters
✔ result: {"slug":"hello-world"}
`, verdict("SUCCESS", "", "text_slug 1.0.0")},
		{"a warning", "text-slug", `{"title":"!!!"}`, "", 0, `▶ started text-slug 1.0.0
  log: slugging 3 characters
  log: warn: nothing left to slug
✔ result: {"slug":""}
`, verdict("SUCCESS", "", "text_slug 1.0.0")},
		{"wasm", "text-upper", `{"text":"abc"}`, "", 0, `▶ started text-upper 1.0.0
✔ result: {"text":"ABC"}
`, verdict("SUCCESS", "", "upper 1.0.0")},
		// What a Python tool prints is a diagnostic, on stderr before the
		// verdict; its result is the output of its execute.
		{"python", "word-count", `{"text":"The cat sat on the extraordinary mat"}`, "", 0, `▶ started word-count 1.0.0
✔ result: {"longest":"extraordinary","words":7}
`, "^counted 7 words\n" + strings.TrimPrefix(verdict("SUCCESS", "", "word_count 1.0.0"), "^")},
		{"the tool's own error", "pat-check", `{"prId":42}`, `{"azdo.token":"expired-1"}`, 1, `▶ started pat-check 1.0.0
  log: reviewing PR #42
✖ error AUTH_FAILED: PAT expired
`, `^Error: PAT expired\n    at execute \(pat\.js:\d+(:\d+)?\)\n(.*\n)*verdict: FAILED \[EXECUTOR_EXCEPTION\] pat 0\.0\.0 .*\n$`},
		{"missing config", "greeter", `{"name":"Ada"}`, "", 1, `▶ started greeter 0.2.0
✖ error CONFIG_MISSING: context.config lacks the required key "greeting"
`, `^$`},
		{"unknown tool", "nope", `{}`, "", 1, `▶ started nope
✖ error TOOL_NOT_FOUND: no manifest in ` + protoTools + ` declares tool "nope" (tools there: ` + protoToolIDs + `)
`, `^$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"tool", "run", tt.tool, "--tools", protoTools, "--input", tt.input}
			if tt.config != "" {
				args = append(args, "--config", tt.config)
			}
			r := wasmgateProcess(t, "", args...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Equal(t, tt.stdout, r.stdout)
			// The verdict is for the person, on stderr with the other
			// diagnostics; it is in no event.
			assert.Regexp(t, tt.stderr, r.stderr)
		})
	}
}

// TestToolRunOutcomes: every error event the tool side writes is exit 1,
// recoverable or not, with the code the text and the reference tools use.
func TestToolRunOutcomes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, tool, stdin string
		args              []string
		types             []string
		err               protoError
	}{
		{"the tool throws", "text-slug", `{"input":{"title":7}}`, nil, []string{"started", "error"},
			protoError{Code: "EXECUTOR_EXCEPTION", Recoverable: true, Message: "TypeError: title must be a string"}},
		{"an Error with a code", "pat-check", `{"context":{"config":{"azdo.token":"expired-7"}},"input":{"prId":1}}`, nil, []string{"started", "log", "error"},
			protoError{Code: "AUTH_FAILED", Recoverable: true, Message: "PAT expired"}},
		{"an Error with a code, not recoverable", "pat-check", `{"context":{"config":{"azdo.token":7}},"input":{"prId":1}}`, nil, []string{"started", "log", "error"},
			protoError{Code: "BAD_TOKEN", Recoverable: false, Message: "azdo.token is not a string"}},
		{"missing required config", "greeter", `{"context":{"config":{"punctuation":"!"}},"input":{"name":"Ada"}}`, nil, []string{"started", "error"},
			protoError{Code: "CONFIG_MISSING", Recoverable: true, Message: `context.config lacks the required key "greeting"`}},
		{"a governance limit", "fuel-out", `{"input":{}}`, nil, []string{"started", "error"},
			protoError{Code: "FUEL_EXHAUSTED", Recoverable: false, Message: "fuel exhausted"}},
		{"a Python tool raises", "word-count", `{"input":{"text":"!?"}}`, nil, []string{"started", "error"},
			protoError{Code: "EXECUTOR_EXCEPTION", Recoverable: true, Message: "ValueError: no words to count"}},
		{"a Python tool's input_schema", "word-count", `{"input":{"text":["a"]}}`, nil, []string{"started", "error"},
			protoError{Code: "INPUT_SCHEMA_INVALID", Recoverable: true, Message: "payload does not match the input schema at /text: got array, want string"}},
		{"a Python tool's limits", "word-count", `{"input":{"text":"` + strings.Repeat("a ", 2100) + `"}}`, nil, []string{"started", "error"},
			protoError{Code: "PAYLOAD_TOO_LARGE", Recoverable: true, Message: "payload is 4211 canonical bytes; max_payload_bytes is 4096"}},
		{"stdin not JSON", "text-slug", `title=Hello`, nil, []string{"started", "error"},
			protoError{Code: "INVALID_REQUEST", Message: "the request is not a JSON object"}},
		{"config not an object", "text-slug", `{"context":{"config":"x=1"}}`, nil, []string{"started", "error"},
			protoError{Code: "INVALID_REQUEST", Message: "context.config must be a JSON object"}},
		{"unknown tool", "no-such-tool", `{}`, nil, []string{"started", "error"},
			protoError{Code: "TOOL_NOT_FOUND", Message: `no manifest in ` + protoTools + ` declares tool "no-such-tool" (tools there: ` + protoToolIDs + `)`}},
		{"no tools directory", "text-slug", `{}`, []string{"--tools", "no-such-dir"}, []string{"started", "error"},
			protoError{Code: "TOOL_NOT_FOUND", Message: "the tools directory no-such-dir does not exist"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"tool", "run", tt.tool, "--tools", protoTools, "--json"}, tt.args...)
			r := wasmgateProcess(t, tt.stdin, args...)
			assert.Equal(t, 1, r.code, r.stderr)
			evs := protoEvents(t, r.stdout, tt.tool)
			assert.Equal(t, tt.types, eventTypes(evs))
			assert.Equal(t, tt.err, protoLastError(t, evs))
		})
	}
}

// TestToolRunANodeTool: a tool of runtime "node" (written for Node, as the
// protocol's own tools are) runs in the sandbox, its own events passing
// through the tool side and the runner.
func TestToolRunANodeTool(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := wasmgateProcess(t, "", "tool", "run", "hello-node", "--tools", protoTools, "--json", "--input", `{"name":"Ada"}`, "--audit", log)
	require.Equal(t, 0, r.code, r.stderr)
	evs := protoEvents(t, r.stdout, "hello-node")
	assert.Equal(t, []string{"started", "log", "result"}, eventTypes(evs))
	assert.Equal(t, `{"meta":{}}`, string(evs[0].Payload), "the tool's own started event")
	assert.JSONEq(t, `{"level":"info","message":"greeting Ada"}`, string(evs[1].Payload))
	assert.JSONEq(t, `{"message":"Hello, Ada!"}`, string(evs[2].Payload))
	recs := readRecords(t, log)
	require.Len(t, recs, 1)
	assert.Equal(t, "SUCCESS", recs[0].Status)
	require.NotNil(t, recs[0].ExitCode)
	assert.Equal(t, 0, *recs[0].ExitCode)
}

// TestPythonToolRun: a tool of runtime "python" (an executor class
// with a dependency of its own, testdata/toolproto/tools/word-count) runs
// as a Python executor: its manifest's started meta, its output as the
// result, its prints on stderr, an audit record naming the executor class's
// id and version; a second run gives the same digests. (Not always the
// same fuel: an executor class is given the request's ts_utc, which is
// each run's arrival time, and parsing a longer one costs more;
// TestReplayAPythonExecutor compares fuel with the time fixed.)
func TestPythonToolRun(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		r := wasmgateProcess(t, `{"context":{"toolId":"word-count","config":{},"workspaceRoot":"/w"},"input":{"text":"Don't panic: it's only a test"}}`,
			"tool", "run", "word-count", "--tools", protoTools, "--json", "--audit", log)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "counted 6 words\n", r.stderr)
		evs := protoEvents(t, r.stdout, "word-count")
		require.Equal(t, []string{"started", "result"}, eventTypes(evs))
		assert.Equal(t, `{"meta":{"name":"Word count","version":"1.0.0","runtime":"python"}}`, string(evs[0].Payload))
		assert.Equal(t, `{"longest":"Don't","words":6}`, string(evs[1].Payload))
	}
	recs := readRecords(t, log)
	require.Len(t, recs, 2)
	for _, rec := range recs {
		assert.Equal(t, "word_count", rec.ExecutorID)
		assert.Equal(t, "1.0.0", rec.ExecutorVersion)
		assert.Equal(t, "SUCCESS", rec.Status)
		assert.Positive(t, rec.FuelUsed)
	}
	assert.Equal(t, recs[0].ModuleDigest, recs[1].ModuleDigest)
	assert.Equal(t, recs[0].OutputDigest, recs[1].OutputDigest)
}

func TestToolRunStackTraceGoesToStderr(t *testing.T) {
	t.Parallel()
	r := wasmgateProcess(t, `{"input":{"title":7}}`, "tool", "run", "text-slug", "--tools", protoTools, "--json")
	assert.Equal(t, 1, r.code)
	assert.Regexp(t, `^TypeError: title must be a string\n    at execute \(slug\.js:\d+`, r.stderr)
	assert.NotContains(t, r.stdout, "slug.js:", "the stack is not in the event")
}

func TestToolRunPassesConfigToJSTools(t *testing.T) {
	t.Parallel()
	r := wasmgateProcess(t, "", "tool", "run", "greeter", "--tools", protoTools, "--json",
		"--input", `{"name":"Ada"}`, "--config", `{"greeting":"Hello","punctuation":"!"}`)
	require.Equal(t, 0, r.code, r.stderr)
	evs := protoEvents(t, r.stdout, "greeter")
	require.Equal(t, []string{"started", "result"}, eventTypes(evs))
	assert.Equal(t, `{"message":"Hello, Ada!"}`, string(evs[1].Payload))
}

func TestToolRunWasmStderrIsADiagnostic(t *testing.T) {
	t.Parallel()
	r := wasmgateProcess(t, `{"input":{"text":7}}`, "tool", "run", "text-stats", "--tools", protoTools, "--json")
	assert.Equal(t, 1, r.code)
	evs := protoEvents(t, r.stdout, "text-stats")
	require.Equal(t, []string{"started", "error"}, eventTypes(evs))
	assert.Equal(t, protoError{Code: "EXECUTOR_EXCEPTION", Recoverable: true, Message: "guest exited with code 1"}, protoLastError(t, evs))
	assert.Equal(t, "textstats: input must be an object with a string field \"text\": json: cannot unmarshal number into Go struct field input.text of type string\n", r.stderr)
}

func TestToolRunInvalidManifests(t *testing.T) {
	t.Parallel()
	manifest := func(dir string) string { return filepath.Join(protoTools, dir, "manifest.json") }
	for _, tt := range []struct{ tool, msg string }{
		{"bad-version", manifest("bad-version") + ": manifestVersion: must be 1, not 2"},
		{"Not_Kebab", manifest("Not_Kebab") + `: id: "Not_Kebab" is not kebab-case (lowercase letters and digits in words joined by "-")`},
		{"bad-runtime", manifest("bad-runtime") + `: runtime: must be "wasm", "js", "node" or "python", not "dotnet"`},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			t.Parallel()
			r := wasmgateProcess(t, `{}`, "tool", "run", tt.tool, "--tools", protoTools, "--json")
			assert.Equal(t, 1, r.code, r.stderr)
			evs := protoEvents(t, r.stdout, tt.tool)
			assert.Equal(t, []string{"started", "error"}, eventTypes(evs))
			assert.Equal(t, protoError{Code: "TOOL_INVALID", Message: tt.msg}, protoLastError(t, evs))
		})
	}
}

// TestToolRunGuardrails: the runner's own error events are RUNNER_GUARDRAIL,
// as the text says, not recoverable, and exit 2.
func TestToolRunGuardrails(t *testing.T) {
	t.Parallel()
	t.Run("timeoutMs from the manifest", func(t *testing.T) {
		t.Parallel()
		r := wasmgateProcess(t, `{"input":{}}`, "tool", "run", "spin", "--tools", protoTools, "--json")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r.stdout, "spin")
		assert.Equal(t, []string{"started", "error"}, eventTypes(evs))
		assert.Equal(t, `{"meta":{"name":"Spin","version":"1.0.0","runtime":"js"}}`, string(evs[0].Payload))
		assert.Equal(t, protoError{Code: "RUNNER_GUARDRAIL", Message: "guardrail timeoutMs: the tool ran longer than 300 ms"}, protoLastError(t, evs))
	})
	t.Run("timeoutMs from the request's config first", func(t *testing.T) {
		t.Parallel()
		r := wasmgateProcess(t, "", "tool", "run", "spin", "--tools", protoTools, "--config", `{"timeoutMs":200}`)
		assert.Equal(t, 2, r.code, r.stderr)
		assert.Equal(t, "▶ started spin 1.0.0\n✖ error RUNNER_GUARDRAIL: guardrail timeoutMs: the tool ran longer than 200 ms\n", r.stdout)
	})
	t.Run("maxEvents at 10000", func(t *testing.T) {
		t.Parallel()
		r := wasmgateProcess(t, `{"input":{"lines":12000}}`, "tool", "run", "chatty", "--tools", protoTools, "--json")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r.stdout, "chatty")
		require.Len(t, evs, 10001, "the first 10000 events, then the runner's")
		assert.Equal(t, "started", evs[0].Type)
		for _, ev := range evs[1:10000] {
			require.Equal(t, "log", ev.Type)
			require.Equal(t, `{"level":"info","message":"x"}`, string(ev.Payload))
		}
		assert.Equal(t, protoError{Code: "RUNNER_GUARDRAIL", Message: "guardrail maxEvents: the tool side wrote more than 10000 events"}, protoLastError(t, evs))
	})
	t.Run("--max-events", func(t *testing.T) {
		t.Parallel()
		r := wasmgateProcess(t, `{"input":{"lines":100}}`, "tool", "run", "chatty", "--tools", protoTools, "--json", "--max-events", "50")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r.stdout, "chatty")
		require.Len(t, evs, 51)
		assert.Equal(t, protoError{Code: "RUNNER_GUARDRAIL", Message: "guardrail maxEvents: the tool side wrote more than 50 events"}, protoLastError(t, evs))

		r = wasmgateProcess(t, `{"input":{"lines":48}}`, "tool", "run", "chatty", "--tools", protoTools, "--json", "--max-events", "50")
		assert.Equal(t, 0, r.code, "started, 48 logs and the result are 50 events: %s", r.stderr)
		assert.Len(t, protoEvents(t, r.stdout, "chatty"), 50)
	})
	t.Run("maxOutputBytes at 10 MiB", func(t *testing.T) {
		t.Parallel()
		r := wasmgateProcess(t, `{"input":{}}`, "tool", "run", "bigout", "--tools", protoTools, "--json")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r.stdout, "bigout")
		assert.Equal(t, []string{"started", "error"}, eventTypes(evs))
		assert.Equal(t, protoError{Code: "RUNNER_GUARDRAIL", Message: "guardrail maxOutputBytes: the tool side wrote more than 10485760 bytes to stdout"}, protoLastError(t, evs))
	})
	t.Run("--max-output-bytes", func(t *testing.T) {
		t.Parallel()
		r := wasmgateProcess(t, `{"input":{"lines":100}}`, "tool", "run", "chatty", "--tools", protoTools, "--json", "--max-output-bytes", "2000")
		assert.Equal(t, 2, r.code, r.stderr)
		evs := protoEvents(t, r.stdout, "chatty")
		assert.Equal(t, protoError{Code: "RUNNER_GUARDRAIL", Message: "guardrail maxOutputBytes: the tool side wrote more than 2000 bytes to stdout"}, protoLastError(t, evs))
		passed := strings.TrimSuffix(r.stdout, "\n")
		passed = passed[:strings.LastIndex(passed, "\n")+1]
		assert.LessOrEqual(t, len(passed), 2000, "only what fits is passed on")
	})
}

// timedLine is a line of a child's stdout and when it arrived.
type timedLine struct {
	at   time.Duration
	line string
}

// startTool starts wasmgate with args, reading its stdout line by line as
// it comes; lines delivers them (closed at EOF) and the returned function
// waits for the exit code.
func startTool(t *testing.T, args ...string) (cmd *exec.Cmd, lines <-chan timedLine, wait func() int) {
	t.Helper()
	cmd = exec.Command(binary, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, cmd.Start())
	ch := make(chan timedLine, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			ch <- timedLine{at: time.Since(start), line: sc.Text()}
		}
	}()
	return cmd, ch, func() int {
		err := cmd.Wait()
		if err == nil {
			return 0
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, stderr.String())
		return ee.ExitCode()
	}
}

// TestToolRunStreamsLogs: a tool that logs and then computes shows its log
// event while it computes, not at the end.
func TestToolRunStreamsLogs(t *testing.T) {
	t.Parallel()
	// run returns when the first log event and the result arrived on the
	// pipe, and how long the tool computed between them by its own clock
	// (the events' ts, which it sets when it writes them).
	run := func(rounds int) (firstLog, result, computed time.Duration, types []string) {
		_, lines, wait := startTool(t, "tool", "run", "slow-logger", "--tools", protoTools, "--json",
			"--input", fmt.Sprintf(`{"rounds":%d}`, rounds))
		var all []string
		var logTs, resultTs time.Time
		for l := range lines {
			var ev protoEvent
			require.NoError(t, json.Unmarshal([]byte(l.line), &ev), l.line)
			ts, err := time.Parse(time.RFC3339Nano, ev.Ts)
			require.NoError(t, err)
			types = append(types, ev.Type)
			all = append(all, l.line)
			switch {
			case ev.Type == "log" && firstLog == 0:
				firstLog, logTs = l.at, ts
			case ev.Type == "result":
				result, resultTs = l.at, ts
			}
		}
		require.Equal(t, 0, wait(), "%q", all)
		return firstLog, result, resultTs.Sub(logTs), types
	}
	// The sandbox has no clock to wait on, so the tool computes for a
	// number of rounds; a short run says how many take about two seconds
	// on this machine.
	// The machine's load can change between the probe and the run: a run
	// that computed for less than a second is repeated with more rounds.
	const probe = 10
	_, _, computed, _ := run(probe)
	rounds := min(max(int(2*time.Second/max(computed/probe, time.Millisecond)), probe), 300)

	first, result, computed, types := run(rounds)
	for try := 0; try < 3 && computed < time.Second && rounds < 300; try++ {
		rounds = min(2*rounds, 300)
		first, result, computed, types = run(rounds)
	}
	assert.Equal(t, []string{"started", "log", "log", "result"}, types)
	require.GreaterOrEqual(t, computed, time.Second, "the tool computed for %d rounds", rounds)
	assert.GreaterOrEqual(t, result-first, time.Second,
		"the first log event (at %v) arrives while the tool computes, long before the result (at %v)", first, result)
}

// childOf finds the process whose parent is pid (Linux: /proc).
func childOf(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ")".
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			return child
		}
	}
	t.Fatalf("no child of %d", pid)
	return 0
}

// TestToolRunToolSideCrash: a tool side that dies without a terminal
// event is the runner's TOOL_CRASH, its one terminal event, exit 2.
func TestToolRunToolSideCrash(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("finds the tool side through /proc")
	}
	t.Parallel()
	cmd, lines, wait := startTool(t, "tool", "run", "spin", "--tools", protoTools, "--json",
		"--input", `{}`, "--config", `{"timeoutMs":60000}`)
	started := <-lines
	require.Contains(t, started.line, `"type":"started"`)
	child := childOf(t, cmd.Process.Pid)
	require.NoError(t, syscall.Kill(child, syscall.SIGKILL))
	var rest []string
	for l := range lines {
		rest = append(rest, l.line)
	}
	assert.Equal(t, 2, wait())
	evs := protoEvents(t, started.line+"\n"+strings.Join(rest, "\n")+"\n", "spin")
	assert.Equal(t, []string{"started", "error"}, eventTypes(evs))
	assert.Equal(t, protoError{Code: "TOOL_CRASH", Message: "the tool side ended (signal: killed) without a result or error event"}, protoLastError(t, evs))
}

// TestToolServeStdio: the tool side exits 0 after its result and 1 after
// every error event it writes, so that a runner that reads exit 2 or more
// as a crash never adds one.
func TestToolServeStdio(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, tool, stdin string
		code              int
		types             []string
		errCode           string
	}{
		{"result", "text-slug", `{"context":{"toolId":"text-slug"},"input":{"title":"A b"}}`, 0, []string{"started", "log", "result"}, ""},
		{"recoverable error", "text-slug", `{"input":{"title":null}}`, 1, []string{"started", "error"}, "EXECUTOR_EXCEPTION"},
		{"a limit", "fuel-out", `{}`, 1, []string{"started", "error"}, "FUEL_EXHAUSTED"},
		{"stdin not JSON", "text-slug", `{"input":`, 1, []string{"started", "error"}, "INVALID_REQUEST"},
		{"another tool's request", "text-upper", `{"context":{"toolId":"text-slug"}}`, 1, []string{"started", "error"}, "INVALID_REQUEST"},
		{"unknown tool", "nope", `{}`, 1, []string{"started", "error"}, "TOOL_NOT_FOUND"},
		{"invalid manifest", "bad-runtime", `{}`, 1, []string{"started", "error"}, "TOOL_INVALID"},
		{"a Node tool", "hello-node", `{}`, 0, []string{"started", "log", "result"}, ""},
		{"a Python tool", "word-count", `{"input":{"text":"a b"}}`, 0, []string{"started", "result"}, ""},
		{"a Python tool's error", "word-count", `{"input":{"text":""}}`, 1, []string{"started", "error"}, "EXECUTOR_EXCEPTION"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := wasmgateProcess(t, tt.stdin, "tool", "serve-stdio", tt.tool, "--tools", protoTools)
			assert.Equal(t, tt.code, r.code, r.stderr)
			evs := protoEvents(t, r.stdout, tt.tool)
			assert.Equal(t, tt.types, eventTypes(evs))
			if tt.errCode != "" {
				assert.Equal(t, tt.errCode, protoLastError(t, evs).Code)
			}
		})
	}
	t.Run("an audit log that cannot be opened", func(t *testing.T) {
		t.Parallel()
		r := wasmgateProcess(t, `{}`, "tool", "serve-stdio", "text-upper", "--tools", protoTools, "--audit", filepath.Join(t.TempDir(), "no", "such", "dir", "a.jsonl"))
		assert.Equal(t, 1, r.code, r.stderr)
		evs := protoEvents(t, r.stdout, "text-upper")
		p := protoLastError(t, evs)
		assert.Equal(t, "AUDIT_LOG_FAILED", p.Code)
		assert.True(t, p.Recoverable)
		assert.Contains(t, p.Message, "no such file or directory")
	})
}

func TestToolRunAudit(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	for range 2 {
		r := wasmgateProcess(t, "", "tool", "run", "text-upper", "--tools", protoTools, "--input", `{"text":"a"}`, "--audit", log)
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "ok, 4 records (2 attempts, 2 verdicts), hash chain intact")
}

func TestToolRunUsageErrors(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
			r := wasmgate(t, "", tt.args...)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tt.stderr)
		})
	}
}
