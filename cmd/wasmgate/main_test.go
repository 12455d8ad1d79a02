package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/testenv"
)

// binary is the wasmgate command built once for the tests that run it as a
// user would.
var binary string

// buildTags are the tags the tests were built with, so that the command
// under test has the same engines (see wasmtime_test.go).
var buildTags string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "tool" {
		// `wasmgate tool run` run in-process starts os.Executable, this
		// test binary, as its tool side: it would run the tests again.
		fmt.Fprintln(os.Stderr, "the test binary was started as wasmgate's tool side: run `tool run` with wasmgateProcess")
		os.Exit(exitInternal)
	}
	if out := os.Getenv(peakRSSEnv); out != "" {
		os.Exit(launchMeasuringPeakRSS(out, os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "wasmgate-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "wasmgate")
	// The compilation cache every test binary shares, for every command the
	// tests start: large guests are compiled once, not once per process.
	cache := testenv.CacheDir()
	if cache == "" {
		cache = "off"
	}
	os.Setenv("WASMGATE_CACHE_DIR", cache)
	build := exec.Command("go", "build", "-tags", buildTags, "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic(fmt.Sprintf("building wasmgate: %v", err))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func td(name string) string { return filepath.Join("..", "..", "testdata", name) }

type runResult struct {
	code   int
	stdout string
	stderr string
}

// wasmgate runs the command in-process, as main does but with stdin and
// captured streams: what a test of the command line needs, under the race
// detector with the rest of the test. A test that needs a real process (a
// signal, ulimit, another process holding a lock, a stdio protocol whose
// runner starts the binary as its tool side) uses wasmgateProcess.
func wasmgate(t *testing.T, stdin string, args ...string) runResult {
	t.Helper()
	var out, errb syncBuffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// syncBuffer is a bytes.Buffer that, like the standard streams, may be
// written from several goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// wasmgateProcess runs the built binary as a user would, in a process of
// its own.
func wasmgateProcess(t *testing.T, stdin string, args ...string) runResult {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// result is the part of an ActionResult the tests look at.
type result struct {
	Action          string          `json:"action"`
	ExecutorID      string          `json:"executor_id"`
	ExecutorVersion string          `json:"executor_version"`
	Status          string          `json:"status"`
	ReasonCodes     []string        `json:"reason_codes"`
	InputDigest     string          `json:"input_digest"`
	OutputDigest    *string         `json:"output_digest"`
	Output          json.RawMessage `json:"output"`
	Message         string          `json:"message"`
}

func parseResult(t *testing.T, r runResult) result {
	t.Helper()
	var res result
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return res
}

func TestRunWasm(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		stdin  string
		code   int
		status string
		codes  []string
		output string
	}{
		{"wat upper", []string{"--wasm", td("upper.wasm"), "--input", `{"text":"abc"}`}, "", 0, "SUCCESS", []string{}, `{"text":"ABC"}`},
		{"wat sum from stdin", []string{"--wasm", td("sum.wasm")}, `{"numbers": [1, 2, 3]}`, 0, "SUCCESS", []string{}, `{"sum":6}`},
		{"c sort from a file", []string{"--wasm", td("sort.wasm"), "--input-file", td("sort_input.json")}, "", 0, "SUCCESS", []string{}, `{"count":4,"max":9,"min":-1,"sorted":[-1,3,5,9]}`},
		{"go textstats", []string{"--wasm", td("textstats.wasm"), "--input", `{"text":"one two"}`}, "", 0, "SUCCESS", []string{}, `{"length":7,"upper":"ONE TWO","words":2}`},
		{"interpreter", []string{"--wasm", td("upper.wasm"), "--engine", "wazero-interp", "--input", `{"text":"x"}`}, "", 0, "SUCCESS", []string{}, `{"text":"X"}`},
		{"no output", []string{"--wasm", td("noout.wasm"), "--input", `{}`}, "", 0, "SUCCESS", []string{}, ``},
		{"executor error", []string{"--wasm", td("fail.wasm"), "--input", `{}`}, "", 1, "FAILED", []string{"EXECUTOR_EXCEPTION"}, ""},
		{"trap", []string{"--wasm", td("trap.wasm"), "--input", `{}`}, "", 1, "FAILED", []string{"EXECUTOR_EXCEPTION"}, ""},
		{"output not json", []string{"--wasm", td("notjson.wasm"), "--input", `{}`}, "", 1, "FAILED", []string{"EXECUTOR_EXCEPTION", "OUTPUT_NOT_JSON"}, ""},
		{"go guest exits 1", []string{"--wasm", td("textstats.wasm"), "--input", `{"text":7}`}, "", 1, "FAILED", []string{"EXECUTOR_EXCEPTION"}, ""},
		{"non-json payload", []string{"--wasm", td("echo.wasm"), "--input", `{"a":NaN}`}, "", 3, "BLOCKED", []string{"NON_JSON_PAYLOAD"}, ""},
		{"refused import", []string{"--wasm", td("refused/env_import.wasm"), "--input", `{}`}, "", 3, "BLOCKED", []string{"EXECUTOR_INVALID"}, ""},
		{"shared memory", []string{"--wasm", td("refused/shared_memory.wasm"), "--input", `{}`}, "", 3, "BLOCKED", []string{"EXECUTOR_INVALID"}, ""},
		{"payload 20 KB vs 10000", []string{"--wasm", td("echo.wasm"), "--max-payload-bytes", "10000", "--input", `"` + strings.Repeat("x", 20000) + `"`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "PAYLOAD_TOO_LARGE"}, ""},
		{"15 levels vs max_depth 10", []string{"--wasm", td("echo.wasm"), "--max-depth", "10", "--input", strings.Repeat("[", 15) + strings.Repeat("]", 15)}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "DEPTH_EXCEEDED"}, ""},
		{"200 items vs max_list_items 100", []string{"--wasm", td("echo.wasm"), "--max-list-items", "100", "--input", "[" + strings.TrimSuffix(strings.Repeat("0,", 200), ",") + "]"}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "LIST_TOO_LONG"}, ""},
		{"infinite loop against the clock", []string{"--wasm", td("loop.wasm"), "--timeout-ms", "100", "--fuel", "4000000000000000000", "--input", `{}`}, "", 3, "BLOCKED", []string{"EXECUTOR_TIMEOUT"}, ""},
		{"infinite loop against fuel", []string{"--wasm", td("loop.wasm"), "--fuel", "100000", "--input", `{}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}, ""},
		{"infinite loop with the manifest's fuel", []string{"--wasm", td("loop.wasm"), "--input", `{}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}, ""},
		{"memory bomb", []string{"--wasm", td("grow.wasm"), "--memory-pages", "8", "--input", `{}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}, ""},
		{"go guest over its memory", []string{"--wasm", td("textstats.wasm"), "--memory-pages", "4", "--input", `{"text":"x"}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}, ""},
		{"deep recursion", []string{"--wasm", td("recurse.wasm"), "--input", `{}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "STACK_EXHAUSTED"}, ""},
		{"oversized output", []string{"--wasm", td("bigout.wasm"), "--input", `{}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "OUTPUT_TOO_LARGE"}, ""},
		{"table.grow bomb stops at memory_pages", []string{"--wasm", td("tablegrow.wasm"), "--input", `{}`}, "", 0, "SUCCESS", []string{}, `{"elements":30720}`},
		{"start function that never returns", []string{"--wasm", td("startloop.wasm"), "--timeout-ms", "100", "--fuel", "4000000000000000000", "--input", `{}`}, "", 3, "BLOCKED", []string{"EXECUTOR_TIMEOUT"}, ""},
		{"start function out of fuel", []string{"--wasm", td("startloop.wasm"), "--fuel", "1000", "--input", `{}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}, ""},
		{"output over a lowered limit", []string{"--wasm", td("echo.wasm"), "--max-output-bytes", "5", "--input", `{"a":"bcdef"}`}, "", 3, "BLOCKED", []string{"LIMIT_EXCEEDED", "OUTPUT_TOO_LARGE"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, tt.stdin, append([]string{"run"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			res := parseResult(t, r)
			assert.Equal(t, tt.status, res.Status, res.Message)
			assert.Equal(t, tt.codes, res.ReasonCodes)
			assert.Equal(t, tt.output, string(res.Output))
			if tt.status != "SUCCESS" {
				assert.NotEmpty(t, res.Message, "a result that is not SUCCESS says why")
			}
		})
	}
}

func TestRunRegistry(t *testing.T) {
	tests := []struct {
		config, action, input string
		code                  int
		codes                 []string
	}{
		{"registry.json", "text.upper", `{"text":"a"}`, 0, []string{}},
		{"registry.json", "math.sort", `{"numbers":[2,1]}`, 0, []string{}},
		{"registry.json", "text.stats", `{"text":"a b"}`, 0, []string{}},
		{"registry.json", "nope", `{}`, 3, []string{"ACTION_UNKNOWN"}},
		{"registry_problems.json", "ok", `{"text":"a"}`, 0, []string{}},
		{"registry_problems.json", "no.version", `{}`, 3, []string{"ACTION_VERSION_MISSING"}},
		{"registry_problems.json", "bad.version", `{}`, 3, []string{"ACTION_VERSION_INVALID"}},
		{"registry_problems.json", "ghost", `{}`, 3, []string{"EXECUTOR_NOT_FOUND"}},
		{"registry_problems.json", "missing.file", `{}`, 3, []string{"EXECUTOR_NOT_FOUND"}},
		{"registry_problems.json", "refused", `{}`, 3, []string{"EXECUTOR_INVALID"}},
		{"registry_problems.json", "misnamed", `{}`, 3, []string{"EXECUTOR_INVALID"}},
		{"registry_problems.json", "unversioned", `{}`, 3, []string{"EXECUTOR_VERSION_MISSING"}},
		{"registry_problems.json", "too.new", `{}`, 3, []string{"EXECUTOR_VERSION_INCOMPATIBLE"}},
		{"registry_problems.json", "needs.net", `{}`, 3, []string{"EXECUTOR_CAPABILITY_MISSING"}},
		{"registry_problems.json", "grants.nothing", `{}`, 3, []string{"EXECUTOR_CAPABILITY_MISMATCH"}},
	}
	for _, tt := range tests {
		t.Run(tt.config+" "+tt.action, func(t *testing.T) {
			r := wasmgate(t, "", "run", "--config", td(tt.config), "--action", tt.action, "--input", tt.input)
			assert.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			res := parseResult(t, r)
			assert.Equal(t, tt.codes, res.ReasonCodes, res.Message)
			assert.Equal(t, tt.action, res.Action)
		})
	}
	// Broken routes are reported up front, each naming its reason code.
	r := wasmgate(t, "", "run", "--config", td("registry_problems.json"), "--action", "ok", "--input", `{"text":"a"}`)
	assert.Contains(t, r.stderr, "warning: grants.nothing: EXECUTOR_CAPABILITY_MISMATCH")
	assert.Contains(t, r.stderr, "warning: missing.file: EXECUTOR_NOT_FOUND")
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "Usage:"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"run without module", []string{"run", "--input", "{}"}, "one of --wasm FILE, --js FILE, --package NAME@VERSION, --py FILE or --config FILE is required"},
		{"wasm and js", []string{"run", "--wasm", td("echo.wasm"), "--js", "x.js", "--input", "{}"}, "--wasm and --js are exclusive"},
		{"package without tool", []string{"run", "--package", "x@1.0.0", "--input", "{}"}, "--package needs --tool EXPORT"},
		{"tool without js", []string{"run", "--wasm", td("echo.wasm"), "--tool", "x", "--input", "{}"}, "--tool applies to --js and --package only"},
		{"missing js", []string{"run", "--js", "nope.js", "--input", "{}"}, "--js: stat nope.js: no such file or directory"},
		{"bad package spec", []string{"run", "--package", "../x@1.0.0", "--tool", "t", "--input", "{}"}, "INVALID_SPEC"},
		{"tools without add", []string{"tools"}, "wasmgate tools add NAME@VERSION"},
		{"tools add bad spec", []string{"tools", "add", "Bad Name@1"}, "INVALID_SPEC"},
		{"both inputs", []string{"run", "--wasm", td("echo.wasm"), "--input", "{}", "--input-file", "x"}, "--input and --input-file are exclusive"},
		{"missing module", []string{"run", "--wasm", "nope.wasm", "--input", "{}"}, "nope.wasm: no such file"},
		{"missing input file", []string{"run", "--wasm", td("echo.wasm"), "--input-file", "nope.json"}, "--input-file: open nope.json"},
		{"bad engine", []string{"run", "--wasm", td("echo.wasm"), "--engine", "v8", "--input", "{}"}, `unknown engine "v8"`},
		{"bad flag value", []string{"run", "--wasm", td("echo.wasm"), "--memory-pages", "-1"}, `invalid value "-1" for flag -memory-pages`},
		{"memory beyond 4 GiB", []string{"run", "--wasm", td("echo.wasm"), "--memory-pages", "70000", "--input", "{}"}, "memory_pages must be at most 65536"},
		{"negative timeout", []string{"run", "--wasm", td("echo.wasm"), "--timeout-ms", "-5", "--input", "{}"}, "timeout_ms must be positive"},
		{"config without action", []string{"run", "--config", td("registry.json")}, "--config needs --action NAME"},
		{"bad trace id", []string{"run", "--wasm", td("echo.wasm"), "--trace-id", "abc", "--input", "{}"}, `trace_id "abc" is not a UUID`},
		{"config not json", []string{"run", "--config", td("sort_input.json"), "--action", "x", "--input", "{}"}, "unknown field"},
		{"inspect two files", []string{"inspect", "a", "b"}, "want exactly one module file"},
		{"pack without manifest", []string{"pack", td("echo.wasm"), "-o", "x.wasm"}, "--manifest M.json is required"},
		{"audit without verify", []string{"audit"}, "usage: wasmgate audit verify FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", tt.args...)
			assert.Equal(t, exitUsage, r.code, "stdout: %s", r.stdout)
			assert.Contains(t, r.stderr, tt.want)
		})
	}
}

func TestInspect(t *testing.T) {
	r := wasmgate(t, "", "inspect", td("textstats.wasm"))
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Admitted   bool   `json:"admitted"`
		Digest     string `json:"module_digest"`
		Profile    string `json:"profile"`
		Convention string `json:"convention"`
		Imports    []struct{ Module, Name, Kind string }
		Manifest   struct {
			ExecutorID string `json:"executor_id"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.True(t, rep.Admitted)
	assert.Regexp(t, "^[0-9a-f]{64}$", rep.Digest)
	assert.Equal(t, "wasi", rep.Profile)
	assert.Equal(t, "wasi-command", rep.Convention)
	assert.Equal(t, "textstats", rep.Manifest.ExecutorID)
	require.NotEmpty(t, rep.Imports)
	for _, im := range rep.Imports {
		assert.Equal(t, "wasi_snapshot_preview1", im.Module)
	}

	r = wasmgate(t, "", "inspect", td("refused/shared_memory.wasm"))
	assert.Equal(t, exitBlocked, r.code)
	assert.Contains(t, r.stdout, `"admitted": false`)
	assert.Contains(t, r.stdout, "shared memory (threads) is not allowed")
}

func TestPack(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "m.json")
	require.NoError(t, os.WriteFile(manifest, []byte(`{"executor_id":"shouty","version":"3.1.4","capabilities":["text"]}`), 0o644))
	out := filepath.Join(dir, "out.wasm")
	r := wasmgate(t, "", "pack", "--manifest", manifest, td("upper.wasm"), "-o", out)
	require.Equal(t, 0, r.code, r.stderr)

	res := parseResult(t, wasmgate(t, "", "run", "--wasm", out, "--input", `{"text":"hi"}`))
	assert.Equal(t, "shouty", res.ExecutorID)
	assert.Equal(t, "3.1.4", res.ExecutorVersion)
	assert.Equal(t, "shouty", res.Action)
	assert.Equal(t, `{"text":"HI"}`, string(res.Output))

	require.NoError(t, os.WriteFile(manifest, []byte(`{"executor_id":"shouty","version":"3.1"}`), 0o644))
	r = wasmgate(t, "", "pack", "--manifest", manifest, td("upper.wasm"), "-o", out)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `version "3.1" of "shouty" is not strict semver`)
}

func TestModuleWithoutManifest(t *testing.T) {
	res := parseResult(t, wasmgate(t, "", "run", "--wasm", td("nomanifest.wasm"), "--input", `{"k":1}`))
	assert.Equal(t, "nomanifest", res.ExecutorID, "id derived from the file name")
	assert.Equal(t, "0.0.0", res.ExecutorVersion)
	assert.Equal(t, "SUCCESS", res.Status)
}

func TestAuditVerify(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	for i := range 4 {
		r := wasmgate(t, "", "run", "--wasm", td("sum.wasm"), "--audit", log, "--input", fmt.Sprintf(`{"numbers":[%d]}`, i))
		require.Equal(t, 0, r.code, r.stderr)
	}
	r := wasmgate(t, "", "audit", "verify", log)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, log+": ok, 8 records (4 attempts, 4 verdicts), hash chain intact\n", r.stdout,
		"an attempt and a verdict per action")

	orig, err := os.ReadFile(log)
	require.NoError(t, err)
	lines := strings.SplitAfter(strings.TrimSuffix(string(orig), "\n"), "\n")
	require.Len(t, lines, 8)
	lines[7] += "\n"
	join := func(ls ...string) string { return strings.Join(ls, "") }

	tamper := map[string]string{
		"edited":    join(lines[0], strings.Replace(lines[1], `"SUCCESS"`, `"FAILED"`, 1), join(lines[2:]...)),
		"removed":   join(lines[0], join(lines[2:]...)),
		"reordered": join(lines[0], lines[2], lines[1], join(lines[3:]...)),
		"torn":      join(lines[:7]...) + lines[7][:len(lines[7])/2],
		"verdict moved to another attempt": func() string {
			// The second action's verdict, relinked to answer the first
			// action's attempt: every hash recomputed, only the link lies.
			var recs []map[string]any
			for _, l := range lines {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(l), &m))
				recs = append(recs, m)
			}
			recs[3]["attempt_hash"] = recs[0]["hash"]
			return relink(t, recs)
		}(),
	}
	wantLine := map[string]string{"edited": ":2:", "removed": ":2:", "reordered": ":2:", "torn": ":8:", "verdict moved to another attempt": ":4:"}
	for name, content := range tamper {
		t.Run(name, func(t *testing.T) {
			bad := filepath.Join(dir, name+".jsonl")
			require.NoError(t, os.WriteFile(bad, []byte(content), 0o600))
			r := wasmgate(t, "", "audit", "verify", bad)
			assert.Equal(t, exitFailed, r.code)
			assert.Contains(t, r.stderr, bad+wantLine[name], "names the first bad line")
		})
	}

	// A torn log is never appended to: the record would hide the damage.
	torn := filepath.Join(dir, "torn.jsonl")
	r = wasmgate(t, "", "run", "--wasm", td("sum.wasm"), "--audit", torn, "--input", `{"numbers":[1]}`)
	assert.Equal(t, exitInternal, r.code)
	after, err := os.ReadFile(torn)
	require.NoError(t, err)
	assert.Equal(t, tamper["torn"], string(after), "nothing already recorded is lost or rewritten")
}

// TestAuditHoldsNoRawData runs actions whose payloads and outputs carry
// distinctive strings and checks that none of them reaches the audit log.
func TestAuditHoldsNoRawData(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	secrets := []string{"hunter2-secret", "Zebra Quokka", "sk_live_51H8"}
	for _, s := range secrets {
		for _, args := range [][]string{
			{"--wasm", td("upper.wasm"), "--input", `{"text":"` + s + `"}`},
			{"--wasm", td("textstats.wasm"), "--input", `{"text":"` + s + `"}`},
			{"--wasm", td("fail.wasm"), "--input", `{"text":"` + s + `"}`},
			{"--wasm", td("echo.wasm"), "--max-depth", "1", "--input", `{"text":["` + s + `"]}`},
		} {
			r := wasmgate(t, "", append([]string{"run", "--audit", log}, args...)...)
			require.NotEqual(t, exitInternal, r.code, r.stderr)
		}
	}
	content, err := os.ReadFile(log)
	require.NoError(t, err)
	// Four requests per secret; the one over --max-depth ran nothing.
	require.Equal(t, 12+9, strings.Count(string(content), "\n"), "12 verdicts, 9 attempts")
	lower := strings.ToLower(string(content))
	for _, s := range secrets {
		for _, variant := range []string{s, strings.ToUpper(s)} {
			assert.NotContains(t, lower, strings.ToLower(variant))
		}
	}
	assert.NotContains(t, lower, "deliberate failure", "guest error text is never audited")
	assert.NotContains(t, lower, "output\"", "no output field in records")
	assert.NotContains(t, lower, "payload\"", "no payload field in records")
}

// relink rewrites decoded records as a log whose seq, prev and hash are
// all consistent, as a forger with write access would.
func relink(t *testing.T, recs []map[string]any) string {
	t.Helper()
	var b strings.Builder
	prev := audit.GenesisPrev
	for i, m := range recs {
		m["seq"], m["prev"] = i+1, prev
		delete(m, "hash")
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		c, err := audit.Canonicalize(raw)
		require.NoError(t, err)
		hash := audit.Digest(c.Bytes)
		m["hash"] = hash
		raw, err = json.Marshal(m)
		require.NoError(t, err)
		c, err = audit.Canonicalize(raw)
		require.NoError(t, err)
		b.Write(c.Bytes)
		b.WriteByte('\n')
		prev = hash
	}
	return b.String()
}
