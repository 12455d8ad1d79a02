package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func scriptFile(name string) string { return td(filepath.Join("scripts", name)) }

// scriptCall is what the audit log says about one tool call of a script.
type scriptCall struct {
	action, executor, status string
	codes                    []string
}

// runScript runs a script with --config registry and an audit log, and
// returns what it printed and the calls the audit log holds, with their
// trace id when they share one.
func runScript(t *testing.T, registry, file string, flags ...string) (runResult, []scriptCall, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	args := append([]string{"script", scriptFile(file), "--config", td(registry), "--audit", log}, flags...)
	r := wasmgate(t, "", args...)
	records := readRecords(t, log)
	calls := make([]scriptCall, 0, len(records))
	trace := ""
	for i, rec := range records {
		calls = append(calls, scriptCall{rec.Action, rec.ExecutorID, rec.Status, rec.ReasonCodes})
		if i == 0 {
			trace = rec.TraceID
		}
		assert.Equal(t, trace, rec.TraceID, "every call of a script has the script's trace id")
	}
	if len(records) > 0 {
		assert.Regexp(t, "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", trace)
		v := wasmgate(t, "", "audit", "verify", log)
		assert.Equal(t, 0, v.code, "the audit log verifies: %s", v.stderr)
	}
	return r, calls, trace
}

func TestScriptCallsTwoExecutors(t *testing.T) {
	r, calls, _ := runScript(t, "registry.json", "combine.ts")
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, "sum of [3,4,5] is 12\ndone\n"+`{"sum":12,"shout":"TOTAL 12"}`+"\n", r.stdout,
		"console.log, then the result as JSON")
	assert.Equal(t, "about to shout\nwarnings go to stderr too\n", r.stderr, "console.error and console.warn")
	assert.Equal(t, []scriptCall{
		{"math.sum", "sum", "SUCCESS", []string{}},
		{"text.upper", "upper", "SUCCESS", []string{}},
	}, calls, "one audit record per tool call")
}

func TestScriptCallsAJavaScriptTool(t *testing.T) {
	r, calls, _ := runScript(t, "tools.json", "slug_then_upper.ts")
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, `{"slug":"hello-world","text":"HELLO-WORLD"}`+"\n", r.stdout)
	assert.Empty(t, r.stderr, "the tool's own log is not the script's")
	assert.Equal(t, []scriptCall{
		{"text.slug", "slugify", "SUCCESS", []string{}},
		{"text.upper", "upper", "SUCCESS", []string{}},
	}, calls)
}

func TestScriptToolCallFailures(t *testing.T) {
	tests := []struct {
		name, file string
		code       int
		stdout     string
		stderr     string
		calls      []scriptCall
	}{
		{
			name: "the executor fails, the script catches it", file: "catch_failure.ts", code: exitSuccess,
			stdout: `{"isError":true,"name":"ToolCallError","message":"tools.math.sum failed: FAILED [EXECUTOR_EXCEPTION]: sum: numbers[0] is not an integer",` +
				`"status":"FAILED","reasonCodes":["EXECUTOR_EXCEPTION"],"action":"math.sum","traceIdIsUUID":true}` + "\n",
			calls: []scriptCall{{"math.sum", "sum", "FAILED", []string{"EXECUTOR_EXCEPTION"}}},
		},
		{
			name: "the executor fails, uncaught", file: "uncaught_failure.ts", code: exitFailed,
			stdout: "calling\n",
			stderr: "wasmgate script: ToolCallError: tools.math.sum failed: FAILED [EXECUTOR_EXCEPTION]: sum: numbers[0] is not an integer\n" +
				"    at tools.math.sum (uncaught_failure.ts:",
			calls: []scriptCall{{"math.sum", "sum", "FAILED", []string{"EXECUTOR_EXCEPTION"}}},
		},
		{
			name: "blocked by the action's limits", file: "blocked.ts", code: exitSuccess,
			stdout: `{"status":"BLOCKED","reasonCodes":["LIMIT_EXCEEDED","LIST_TOO_LONG"]}` + "\n",
			stderr: "tools.math.sum failed: BLOCKED [LIMIT_EXCEEDED, LIST_TOO_LONG]: payload has a list of 1001 items; max_list_items is 1000\n",
			calls:  []scriptCall{{"math.sum", "sum", "BLOCKED", []string{"LIMIT_EXCEEDED", "LIST_TOO_LONG"}}},
		},
		{
			name: "tools holds the registered actions only", file: "unknown_tool.ts", code: exitSuccess,
			stdout: `{"namespaces":["math","text"],"math":["sort","sum"],"text":["stats","upper"],"hasProduct":false,"typeError":true}` + "\n",
			calls:  []scriptCall{},
		},
		{
			name: "an unknown tool, uncaught", file: "unknown_tool_uncaught.ts", code: exitFailed,
			stderr: "wasmgate script: TypeError: not a function\n    at ",
			calls:  []scriptCall{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, calls, _ := runScript(t, "registry.json", tt.file)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Equal(t, tt.stdout, r.stdout)
			if tt.code == exitSuccess {
				assert.Equal(t, tt.stderr, r.stderr)
			} else {
				assert.True(t, strings.HasPrefix(r.stderr, tt.stderr), "stderr: %s", r.stderr)
			}
			assert.Equal(t, tt.calls, calls)
		})
	}
}

func TestScriptOutcomes(t *testing.T) {
	tests := []struct {
		name, file string
		flags      []string
		code       int
		stdout     string
		stderr     []string // in this order
	}{
		{"a runtime error", "runtime_error.ts", nil, exitFailed, "before\n",
			[]string{"wasmgate script: RangeError: too big: 3\n", "    at check (runtime_error.ts:", "    at <anonymous> (runtime_error.ts:"}},
		{"no default export", "no_result.ts", nil, exitSuccess, "hello from a script\n", nil},
		{"a result without a JSON form", "not_json.ts", nil, exitFailed, "",
			[]string{"wasmgate script: output is not JSON: a function at key \"f\"\n"}},
		// node:fs has no declarations, so the checker refuses the script
		// (TestScriptTypeCheck); unchecked, the sandbox refuses the call.
		{"no network, file system or environment", "sandbox.ts", []string{"--no-check"}, exitSuccess,
			`{"fetch":"function","process":"undefined","setTimeout":"function",` +
				`"readFile":"Error: Access to this API has been restricted: fs.readFileSync() (wasmgate runs code without network, file system or processes)",` +
				`"now":"2000-01-01T00:00:00.000Z"}` + "\n", nil},
		{"out of fuel", "loop.ts", []string{"--fuel", "1000000"}, exitBlocked, "",
			[]string{"wasmgate script: the script ran out of fuel (--fuel 1000000)\n"}},
		{"out of time", "loop.ts", []string{"--timeout-ms", "100", "--fuel", "4000000000000000000"}, exitBlocked, "",
			[]string{"wasmgate script: the script ran out of time (--timeout-ms 100)\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, calls, _ := runScript(t, "registry.json", tt.file, tt.flags...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Equal(t, tt.stdout, r.stdout)
			rest := r.stderr
			for _, want := range tt.stderr {
				i := strings.Index(rest, want)
				require.GreaterOrEqual(t, i, 0, "stderr lacks %q: %s", want, r.stderr)
				rest = rest[i+len(want):]
			}
			if tt.stderr == nil {
				assert.Empty(t, r.stderr)
			}
			assert.Empty(t, calls)
		})
	}
}

func TestScriptBundleErrorsRunNothing(t *testing.T) {
	tests := []struct{ file, problem string }{
		{"syntax_error.ts", `syntax_error.ts:2:15: Unexpected ";"`},
		{"type_error.ts", `type_error.ts:4:7: Expected ";" but found "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			r := wasmgate(t, "", "script", scriptFile(tt.file), "--config", td("registry.json"), "--audit", log)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout, "nothing ran")
			assert.Equal(t, "wasmgate script: cannot bundle "+scriptFile(tt.file)+": "+tt.problem+"\n", r.stderr)
			assert.NoFileExists(t, log, "nothing was audited")
		})
	}
}

func TestScriptWithoutConfigHasNoTools(t *testing.T) {
	r := wasmgate(t, "", "script", scriptFile("unknown_tool_uncaught.ts"))
	assert.Equal(t, exitFailed, r.code)
	assert.True(t, strings.HasPrefix(r.stderr, "wasmgate script: TypeError: cannot read property 'product' of undefined\n"), r.stderr)
}

func TestScriptUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "want one script FILE"},
		{"two files", []string{scriptFile("combine.ts"), scriptFile("loop.ts")}, "want one script FILE"},
		{"missing file", []string{scriptFile("missing.ts")}, "no such file or directory"},
		{"not a script", []string{td("registry.json")}, `unsupported extension ".json"`},
		{"missing config", []string{scriptFile("combine.ts"), "--config", td("missing.json")}, "--config: registry:"},
		{"bad fuel", []string{scriptFile("combine.ts"), "--fuel", "lots"}, `invalid value "lots" for flag -fuel`},
		{"bad engine", []string{scriptFile("combine.ts"), "--engine", "v8"}, "--engine:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"script"}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.Contains(t, r.stderr, tt.want)
		})
	}
}
