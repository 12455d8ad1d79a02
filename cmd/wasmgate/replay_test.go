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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// replayReport is what `wasmgate replay --json` prints, as its help
// documents it. parseReplay refuses unknown fields, so a renamed or added
// field fails the tests.
type replayReport struct {
	Summary struct {
		Requests        int      `json:"requests"`
		Runs            int      `json:"runs"`
		Engines         []string `json:"engines"`
		Executions      int      `json:"executions"`
		Agreeing        int      `json:"agreeing"`
		Divergent       int      `json:"divergent"`
		TimingDependent int      `json:"timing_dependent"`
		Audit           *struct {
			Records     int `json:"records"`
			Checked     int `json:"checked"`
			Matched     int `json:"matched"`
			Mismatched  int `json:"mismatched"`
			NotInCorpus int `json:"not_in_corpus"`
		} `json:"audit"`
	} `json:"summary"`
	Requests []struct {
		Line         int      `json:"line"`
		Action       string   `json:"action"`
		TraceID      string   `json:"trace_id"`
		InputDigest  string   `json:"input_digest"`
		EnvDigest    *string  `json:"env_digest"`
		Verdict      string   `json:"verdict"`
		Status       string   `json:"status"`
		ReasonCodes  []string `json:"reason_codes"`
		OutputDigest *string  `json:"output_digest"`
		FuelUsed     uint64   `json:"fuel_used"`
		ModuleDigest string   `json:"module_digest"`
	} `json:"requests"`
	Divergences []replayDivergence `json:"divergences"`
	NotInCorpus []struct {
		Seq         uint64  `json:"seq"`
		Action      string  `json:"action"`
		TraceID     string  `json:"trace_id"`
		InputDigest string  `json:"input_digest"`
		EnvDigest   *string `json:"env_digest"`
	} `json:"not_in_corpus"`
}

type replayDivergence struct {
	Kind     string        `json:"kind"`
	Line     int           `json:"line"`
	Action   string        `json:"action"`
	TraceID  string        `json:"trace_id"`
	AuditSeq uint64        `json:"audit_seq"`
	Field    string        `json:"field"`
	Values   []replayValue `json:"values"`
}

type replayValue struct {
	Value   json.RawMessage `json:"value"`
	Sources []replaySource  `json:"sources"`
}

type replaySource struct {
	Engine   string `json:"engine,omitempty"`
	Run      int    `json:"run,omitempty"`
	AuditSeq uint64 `json:"audit_seq,omitempty"`
}

func parseReplay(t *testing.T, r runResult) replayReport {
	t.Helper()
	var rep replayReport
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&rep), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	require.NotNil(t, rep.Divergences, "divergences is a list, never null")
	require.NotNil(t, rep.NotInCorpus, "not_in_corpus is a list, never null")
	return rep
}

// writeFile writes content to name in a fresh temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func corpusFile(t *testing.T, lines ...string) string {
	t.Helper()
	return writeFile(t, "corpus.jsonl", strings.Join(lines, "\n")+"\n")
}

// readRecords reads the verdicts (action_audit records, one per action) of
// an audit log the tests wrote; allRecords reads attempts too.
func readRecords(t *testing.T, path string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, r := range allRecords(t, path) {
		if r.EventType == audit.EventActionAudit {
			out = append(out, r)
		}
	}
	return out
}

func allRecords(t *testing.T, path string) []audit.Record {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []audit.Record
	for line := range bytes.Lines(raw) {
		var r audit.Record
		require.NoError(t, json.Unmarshal(line, &r))
		out = append(out, r)
	}
	return out
}

// engineNames are the engines of this build (and of the command under test,
// built with the same tags).
func engineNames() []string {
	var names []string
	for _, e := range sandbox.Engines() {
		names = append(names, string(e))
	}
	return names
}

// comparedEngines are the engines of the replay tests whose corpora run
// the heavy guests (the 3 MB Go textstats, QuickJS): those the tests that
// compare engines' QuickJS runs use (enginetest.JSEnginesCompared), every
// engine in the wasmtime build (make test-wasmtime, without the race
// detector) and the compiled ones in the default build. wazero's
// interpreter runs these guests 10 to 50 times slower, so that a Wasm
// module's 1 s default clock could end one run of several on a loaded
// machine and make the replay diverge under the race detector, and it
// would only repeat, in make test, what make test-wasmtime compares.
func comparedEngines() []string {
	var names []string
	for _, e := range enginetest.JSEnginesCompared() {
		names = append(names, string(e))
	}
	return names
}

func traceID(line int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", line) }

func digestJSON(t *testing.T, v string) string {
	t.Helper()
	c, err := audit.Canonicalize([]byte(v))
	require.NoError(t, err)
	return audit.Digest(c.Bytes)
}

// TestReplayFixtures replays requests to real executors in WAT, C and Go on
// both engines, against the audit log of `wasmgate run` on the same
// requests: every run agrees, and reproduces what was audited.
func TestReplayFixtures(t *testing.T) {
	type request struct {
		payload, status string
		codes           []string
	}
	ok := func(payload string) request { return request{payload, "SUCCESS", []string{}} }
	failed := func(payload string, codes ...string) request { return request{payload, "FAILED", codes} }
	tests := []struct {
		module   string
		requests []request
	}{
		{"echo", []request{ok(`{"b":[1,2],"a":"x"}`), ok(`"just a string"`), ok(`null`)}},
		{"upper", []request{ok(`{"text":"abc"}`), failed(`{"nope":7}`, "EXECUTOR_EXCEPTION")}},
		{"sum", []request{ok(`{"numbers":[1,2,3]}`), failed(`{"numbers":[1.5]}`, "EXECUTOR_EXCEPTION")}},
		{"sort", []request{ok(`{"numbers":[3,1,2]}`), ok(`{"numbers":[]}`)}},
		{"textstats", []request{ok(`{"text":"one two"}`), failed(`{"text":7}`, "EXECUTOR_EXCEPTION")}},
		{"wasi_abi", []request{ok(`{}`), ok(`{"seed":1}`)}},
		{"noout", []request{ok(`{}`)}},
		{"fail", []request{failed(`{}`, "EXECUTOR_EXCEPTION")}},
		{"trap", []request{failed(`{}`, "EXECUTOR_EXCEPTION")}},
		{"notjson", []request{failed(`{}`, "EXECUTOR_EXCEPTION", "OUTPUT_NOT_JSON")}},
		{"grow", []request{{`{}`, "BLOCKED", []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}}}},
		// Writes a global of every value type and memory, and outputs what
		// it found: wazero's runs after the first take a recycled instance,
		// which must be as fresh as the others' (a v128's high half too).
		{"state", []request{ok(`{}`), ok(`[1,2,3]`)}},
	}
	for _, tt := range tests {
		t.Run(tt.module, func(t *testing.T) {
			module := td(tt.module + ".wasm")
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			var lines []string
			for _, req := range tt.requests {
				lines = append(lines, `{"payload":`+req.payload+`}`)
				r := wasmgate(t, "", "run", "--wasm", module, "--audit", log, "--input", req.payload)
				require.NotEqual(t, exitInternal, r.code, r.stderr)
			}
			records := readRecords(t, log)

			r := wasmgate(t, "", "replay", "--wasm", module, "--corpus", corpusFile(t, lines...), "--audit", log, "--json",
				"--engines", strings.Join(comparedEngines(), ","))
			require.Equal(t, exitSuccess, r.code, "stderr: %s", r.stderr)
			assert.Empty(t, r.stderr)
			rep := parseReplay(t, r)
			n := len(tt.requests)
			assert.Equal(t, n, rep.Summary.Requests)
			assert.Equal(t, 3, rep.Summary.Runs)
			assert.Equal(t, comparedEngines(), rep.Summary.Engines)
			assert.Equal(t, 3*len(comparedEngines())*n, rep.Summary.Executions)
			assert.Equal(t, n, rep.Summary.Agreeing)
			assert.Zero(t, rep.Summary.Divergent)
			assert.Zero(t, rep.Summary.TimingDependent)
			require.NotNil(t, rep.Summary.Audit)
			assert.Equal(t, n, rep.Summary.Audit.Records)
			assert.Equal(t, n, rep.Summary.Audit.Checked)
			assert.Equal(t, n, rep.Summary.Audit.Matched)
			assert.Zero(t, rep.Summary.Audit.Mismatched)
			assert.Zero(t, rep.Summary.Audit.NotInCorpus)
			assert.Empty(t, rep.Divergences)
			assert.Empty(t, rep.NotInCorpus)

			require.Len(t, rep.Requests, n)
			for i, req := range tt.requests {
				got, rec := rep.Requests[i], records[i]
				assert.Equal(t, i+1, got.Line)
				assert.Equal(t, tt.module, got.Action, "the action defaults to the module's")
				assert.Equal(t, traceID(i+1), got.TraceID)
				assert.Equal(t, "agree", got.Verdict)
				assert.Equal(t, req.status, got.Status)
				assert.Equal(t, req.codes, got.ReasonCodes)
				assert.Equal(t, digestJSON(t, req.payload), got.InputDigest)
				assert.Equal(t, rec.InputDigest, got.InputDigest)
				assert.Equal(t, rec.OutputDigest, got.OutputDigest)
				assert.Equal(t, rec.ModuleDigest, got.ModuleDigest)
				assert.Equal(t, rec.FuelUsed, got.FuelUsed)
				if tt.module == "state" {
					// What a fresh instance finds (guests/wat/state.wat).
					fresh := `{"state":"4433221108070605040302010000c03f00000000000002c00100f0debc9a78563412f0debc9a785600010000000000"}`
					assert.Equal(t, digestJSON(t, fresh), *got.OutputDigest)
				}
			}
		})
	}
}

// TestReplayExampleCorpus replays testdata/corpus.jsonl, as `make demo` does,
// and checks the printed summary byte for byte.
func TestReplayExampleCorpus(t *testing.T) {
	engines := strings.Join(comparedEngines(), ",")
	r := wasmgate(t, "", "replay", "--config", td("registry.json"), "--corpus", td("corpus.jsonl"), "--runs", "2", "--engines", engines)
	require.Equal(t, exitSuccess, r.code, r.stdout+r.stderr)
	assert.Equal(t, `requests          13
runs              2
engines           `+strings.Join(comparedEngines(), ", ")+`
executions        `+strconv.Itoa(13*2*len(comparedEngines()))+`
agreeing          13
divergent         0
timing-dependent  0

ok: every run agrees
`, r.stdout)
	assert.Empty(t, r.stderr, "no progress line when stderr is not a terminal")

	r = wasmgate(t, "", "replay", "--config", td("registry.json"), "--corpus", td("corpus.jsonl"), "--runs", "1", "--engines", engines, "--json")
	require.Equal(t, exitSuccess, r.code, r.stdout+r.stderr)
	rep := parseReplay(t, r)
	assert.Equal(t, comparedEngines(), rep.Summary.Engines)
	assert.Equal(t, 13*len(comparedEngines()), rep.Summary.Executions)
	assert.Nil(t, rep.Summary.Audit)
	var got []string
	for _, q := range rep.Requests {
		got = append(got, fmt.Sprintf("%d %s %s %s %v", q.Line, q.Action, q.Verdict, q.Status, q.ReasonCodes))
		if q.Line != 6 {
			assert.Equal(t, traceID(q.Line), q.TraceID)
		}
	}
	assert.Equal(t, []string{
		"1 math.sum agree SUCCESS []",
		"2 math.sum agree SUCCESS []",
		"3 math.sort agree SUCCESS []",
		"4 math.sort agree SUCCESS []",
		"5 text.upper agree SUCCESS []",
		"6 text.upper agree SUCCESS []",
		"7 text.stats agree SUCCESS []",
		"8 text.stats agree SUCCESS []",
		// line 9 is blank
		"10 math.sum agree FAILED [EXECUTOR_EXCEPTION]",
		"11 text.stats agree FAILED [EXECUTOR_EXCEPTION]",
		"12 math.sort agree FAILED [EXECUTOR_EXCEPTION]",
		"13 math.mul agree BLOCKED [ACTION_UNKNOWN]",
		"14 text.upper agree BLOCKED [LIMIT_EXCEEDED DEPTH_EXCEEDED]",
	}, got)
	assert.Equal(t, "4b1c2d3e-5f60-4718-8a9b-0c1d2e3f4a5b", rep.Requests[5].TraceID, "a trace id in the corpus is kept")
	assert.Equal(t, digestJSON(t, `{"sum":6}`), *rep.Requests[0].OutputDigest)
	assert.Equal(t, digestJSON(t, `{"count":4,"max":9,"min":-1,"sorted":[-1,3,5,9]}`), *rep.Requests[2].OutputDigest)
	assert.Equal(t, digestJSON(t, `{"text":"GOVERNED"}`), *rep.Requests[4].OutputDigest)
}

// TestReplayEngines selects engines with --engines.
func TestReplayEngines(t *testing.T) {
	corpus := corpusFile(t, `{"payload":{"numbers":[4,5]}}`, `{"payload":{"numbers":[6]}}`)
	for flag, want := range map[string][]string{
		"all":                   engineNames(),
		"wazero":                {"wazero"},
		"wazero-interp":         {"wazero-interp"},
		"wazero-interp, wazero": {"wazero-interp", "wazero"},
	} {
		t.Run(flag, func(t *testing.T) {
			r := wasmgate(t, "", "replay", "--wasm", td("sum.wasm"), "--corpus", corpus, "--engines", flag, "--runs", "4", "--json")
			require.Equal(t, exitSuccess, r.code, r.stderr)
			rep := parseReplay(t, r)
			assert.Equal(t, want, rep.Summary.Engines)
			assert.Equal(t, 2*4*len(want), rep.Summary.Executions)
			assert.Equal(t, 2, rep.Summary.Agreeing)
		})
	}
}

// TestReplayPlantedDivergence audits requests to one module, then replays
// them on another module that claims to be the same executor (a newer
// version whose code differs): the replay names each field the audit log
// disagrees with, and exits 5.
func TestReplayPlantedDivergence(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	for _, payload := range []string{`{"text":"abc"}`, `{"text":"only audited"}`} {
		r := wasmgate(t, "", "run", "--wasm", td("upper.wasm"), "--audit", log, "--input", payload)
		require.Equal(t, exitSuccess, r.code, r.stderr)
	}
	records := readRecords(t, log)
	corpus := corpusFile(t, `{"payload":{"text":"abc"}}`, ``, `{"action":"upper","payload":{"text":"replayed only"}}`)

	// Against the module that was audited, everything matches.
	r := wasmgate(t, "", "replay", "--wasm", td("upper.wasm"), "--corpus", corpus, "--audit", log)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Contains(t, r.stdout, "audit records     2\naudit checked     1\naudit matched     1\naudit mismatched  0\nnot in corpus     1\n")
	assert.Contains(t, r.stdout, "\nnot in corpus (audited, not replayed):\n  audit seq 4 (upper)\n", "seq 3 is its attempt")
	assert.True(t, strings.HasSuffix(r.stdout, "\nok: every run agrees\n"), r.stdout)

	// The impostor: echo.wasm packed as upper 1.1.0.
	manifest := filepath.Join(dir, "manifest.json")
	require.NoError(t, os.WriteFile(manifest, []byte(`{"executor_id":"upper","version":"1.1.0","capabilities":["TEXT"]}`), 0o600))
	impostor := filepath.Join(dir, "upper-1.1.0.wasm")
	p := wasmgate(t, "", "pack", "--manifest", manifest, td("echo.wasm"), "-o", impostor)
	require.Equal(t, exitSuccess, p.code, p.stderr)
	impostorBytes, err := os.ReadFile(impostor)
	require.NoError(t, err)
	impostorDigest := audit.Digest(impostorBytes)
	echoed := digestJSON(t, `{"text":"abc"}`)

	everyRun := make([]string, 0, len(engineNames()))
	for _, name := range engineNames() {
		everyRun = append(everyRun, name+" runs 1-2")
	}
	onEveryRun := strings.Join(everyRun, ", ")
	r = wasmgate(t, "", "replay", "--wasm", impostor, "--corpus", corpus, "--audit", log, "--runs", "2")
	require.Equal(t, exitDivergence, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, `requests          2
runs              2
engines           `+engineList()+`
executions        `+strconv.Itoa(2*2*len(engineNames()))+`
agreeing          2
divergent         0
timing-dependent  0
audit records     2
audit checked     1
audit matched     0
audit mismatched  1
not in corpus     1

divergences:
  line 1 (upper) vs audit seq 2: output_digest differs: "`+*records[0].OutputDigest+`" in audit seq 2; "`+echoed+`" on `+onEveryRun+`
  line 1 (upper) vs audit seq 2: module_digest differs: "`+records[0].ModuleDigest+`" in audit seq 2; "`+impostorDigest+`" on `+onEveryRun+`

not in corpus (audited, not replayed):
  audit seq 4 (upper)

DIVERGED: 2 divergences
`, r.stdout)

	r = wasmgate(t, "", "replay", "--wasm", impostor, "--corpus", corpus, "--audit", log, "--runs", "1", "--engines", "wazero", "--json")
	require.Equal(t, exitDivergence, r.code, r.stderr)
	rep := parseReplay(t, r)
	require.NotNil(t, rep.Summary.Audit)
	assert.Equal(t, 1, rep.Summary.Audit.Mismatched)
	wazeroRun1 := []replaySource{{Engine: "wazero", Run: 1}}
	audited := []replaySource{{AuditSeq: 2}}
	assert.Equal(t, []replayDivergence{
		{Kind: "audit", Line: 1, Action: "upper", TraceID: traceID(1), AuditSeq: 2, Field: "output_digest", Values: []replayValue{
			{Value: json.RawMessage(`"` + *records[0].OutputDigest + `"`), Sources: audited},
			{Value: json.RawMessage(`"` + echoed + `"`), Sources: wazeroRun1},
		}},
		{Kind: "audit", Line: 1, Action: "upper", TraceID: traceID(1), AuditSeq: 2, Field: "module_digest", Values: []replayValue{
			{Value: json.RawMessage(`"` + records[0].ModuleDigest + `"`), Sources: audited},
			{Value: json.RawMessage(`"` + impostorDigest + `"`), Sources: wazeroRun1},
		}},
	}, rep.Divergences)
	require.Len(t, rep.NotInCorpus, 1)
	assert.Equal(t, uint64(4), rep.NotInCorpus[0].Seq)
	assert.Equal(t, records[1].TraceID, rep.NotInCorpus[0].TraceID)
	assert.Equal(t, digestJSON(t, `{"text":"only audited"}`), rep.NotInCorpus[0].InputDigest)
	assert.Equal(t,
		`wasmgate replay: divergence: line 1 (upper) vs audit seq 2: output_digest differs: "`+*records[0].OutputDigest+`" in audit seq 2; "`+echoed+`" on wazero run 1`+"\n"+
			`wasmgate replay: divergence: line 1 (upper) vs audit seq 2: module_digest differs: "`+records[0].ModuleDigest+`" in audit seq 2; "`+impostorDigest+`" on wazero run 1`+"\n",
		r.stderr, "with --json, stderr still names the divergences")
}

// TestReplayTimingDependent replays an infinite loop stopped by its
// wall-clock limit (with fuel to spare): the runs agree on status and
// reasons, and the request is reported as timing-dependent, not agreeing.
func TestReplayTimingDependent(t *testing.T) {
	loop, err := filepath.Abs(td("loop.wasm"))
	require.NoError(t, err)
	config := writeFile(t, "registry.json", `{
		"executors": {"loop": {"wasm": `+fmt.Sprintf("%q", loop)+`}},
		"actions": {"spin": {"executor": "loop", "version": "*", "limits": {"timeout_ms": 100, "fuel": 1000000000000}}}}`)
	corpus := corpusFile(t, `{"action":"spin","payload":{}}`)
	r := wasmgateWithin(t, 30*time.Second, "replay", "--config", config, "--corpus", corpus, "--runs", "2")
	require.Equal(t, exitSuccess, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Equal(t, `requests          1
runs              2
engines           `+engineList()+`
executions        `+strconv.Itoa(2*len(engineNames()))+`
agreeing          0
divergent         0
timing-dependent  1

timing-dependent (EXECUTOR_TIMEOUT: status and reason codes compared, fuel not):
  line 1 (spin)

ok: every run agrees
`, r.stdout)
}

// wasmgateWithin runs wasmgate as wasmgate does, but kills it after limit:
// a guest that the wall clock fails to stop then fails the test instead of
// hanging it.
func wasmgateWithin(t *testing.T, limit time.Duration, args ...string) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("wasmgate %s was still running after %v and was killed; stderr: %s", strings.Join(args, " "), limit, errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestReplayUsageErrors(t *testing.T) {
	sum := td("sum.wasm")
	good := corpusFile(t, `{"payload":{"numbers":[1]}}`)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	for i := range 2 {
		r := wasmgate(t, "", "run", "--wasm", sum, "--audit", log, "--input", fmt.Sprintf(`{"numbers":[%d]}`, i))
		require.Equal(t, exitSuccess, r.code, r.stderr)
	}
	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	edited := writeFile(t, "edited.jsonl", strings.Replace(string(raw), `"fuel_used":`, `"fuel_used":1`, 2))
	torn := writeFile(t, "torn.jsonl", string(raw[:len(raw)-5]))

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no module", []string{"--corpus", good}, "one of --wasm FILE, --js FILE, --package NAME@VERSION, --py FILE or --config FILE is required"},
		{"both modules", []string{"--wasm", sum, "--config", td("registry.json"), "--corpus", good}, "--wasm and --config are exclusive"},
		{"no corpus", []string{"--wasm", sum}, "--corpus REQUESTS.jsonl is required"},
		{"zero runs", []string{"--wasm", sum, "--corpus", good, "--runs", "0"}, "--runs must be at least 1, got 0"},
		{"runs not a number", []string{"--wasm", sum, "--corpus", good, "--runs", "many"}, `invalid value "many" for flag -runs`},
		{"unknown engine", []string{"--wasm", sum, "--corpus", good, "--engines", "wazero,v8"}, `--engines: runtime: unknown engine "v8" (available: ` + engineList() + `)`},
		{"engine twice", []string{"--wasm", sum, "--corpus", good, "--engines", "wazero,wazero"}, "--engines: wazero is listed twice"},
		{"positional argument", []string{"--wasm", sum, "--corpus", good, "extra"}, `unexpected argument "extra"`},
		{"missing module", []string{"--wasm", "nope.wasm", "--corpus", good}, "--wasm: open nope.wasm: no such file"},
		{"config not a registry", []string{"--config", td("sort_input.json"), "--corpus", corpusFile(t, `{"action":"x","payload":1}`)}, "--config: registry"},
		{"missing corpus", []string{"--wasm", sum, "--corpus", "nope.jsonl"}, "--corpus: open nope.jsonl: no such file"},
		{"empty corpus", []string{"--wasm", sum, "--corpus", corpusFile(t, "", "  ")}, "corpus.jsonl: no requests"},
		{"line not an object", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"payload":1}`, `[1,2]`)}, "corpus.jsonl:2: not a JSON object"},
		{"line not JSON", []string{"--wasm", sum, "--corpus", corpusFile(t, ``, ``, `{"payload":NaN}`)}, "corpus.jsonl:3: not a request object: invalid character 'N'"},
		{"line without payload", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"payload":1}`, `{"action":"sum"}`)}, `corpus.jsonl:2: no "payload"`},
		{"unknown member", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"payload":1,"paylod":2}`)}, `corpus.jsonl:1: not a request object: json: unknown field "paylod"`},
		{"two objects on a line", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"payload":1} {"payload":2}`)}, "corpus.jsonl:1: more than one JSON value on the line"},
		{"action not a string", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"action":1,"payload":1}`)}, "corpus.jsonl:1: not a request object: json: cannot unmarshal number"},
		{"no action with --config", []string{"--config", td("registry.json"), "--corpus", corpusFile(t, `{"action":"math.sum","payload":1}`, `{"payload":1}`)}, `corpus.jsonl:2: no "action" (every request needs one with --config)`},
		{"malformed trace id", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"payload":1}`, `{"payload":1,"trace_id":"abc"}`)}, `corpus line 2: pipeline: invalid request: trace_id "abc" is not a UUID`},
		{"missing audit log", []string{"--wasm", sum, "--corpus", good, "--audit", "nope.jsonl"}, "--audit: open nope.jsonl: no such file"},
		{"edited audit log", []string{"--wasm", sum, "--corpus", good, "--audit", edited}, edited + ":2: hash mismatch: the record was edited"},
		{"torn audit log", []string{"--wasm", sum, "--corpus", good, "--audit", torn}, torn + ":4: torn last line"},
		{"env not an object", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"payload":1}`, `{"payload":1,"env":["KEY"]}`)}, `corpus.jsonl:2: "env" must be a JSON object`},
		{"env with a key twice", []string{"--wasm", sum, "--corpus", corpusFile(t, `{"payload":1,"env":{"K":1,"K":2}}`)}, `corpus line 1: pipeline: invalid request: env is not canonicalizable JSON: audit: duplicate object key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"replay"}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, tt.want)
			assert.Empty(t, r.stdout)
		})
	}

	r := wasmgate(t, "", "replay", "-h")
	assert.Equal(t, exitUsage, r.code)
	for _, documented := range []string{"summary", "timing_dependent", "not_in_corpus", "divergences", "sources", "audit_seq", "5 a divergence"} {
		assert.Contains(t, r.stderr, documented)
	}
	r = wasmgate(t, "", "help")
	assert.Contains(t, r.stdout, "wasmgate replay --wasm FILE|--js FILE|--py FILE|--config FILE --corpus R.jsonl")
	assert.Contains(t, r.stdout, "5 divergence (replay")
}

// TestReplayProgress checks the progress line: written with \r on a
// terminal for a long corpus, never otherwise.
func TestReplayProgress(t *testing.T) {
	var lines []string
	for i := range progressMinRequests {
		lines = append(lines, fmt.Sprintf(`{"payload":{"numbers":[%d]}}`, i))
	}
	corpus := corpusFile(t, lines...)
	args := []string{"replay", "--wasm", td("sum.wasm"), "--corpus", corpus, "--runs", "1"}

	r := wasmgate(t, "", args...)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Empty(t, r.stderr, "stderr is not a terminal")

	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("needs script(1) for a terminal")
	}
	// script(1) runs the command on a pseudo-terminal.
	cmd := exec.Command(script, "-qfec", strings.Join(append([]string{binary}, args...), " "), "/dev/null")
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	terminal := string(out)
	last := fmt.Sprintf("\rreplay: %d/%d requests", progressMinRequests, progressMinRequests)
	assert.Contains(t, terminal, last)
	assert.Contains(t, terminal, last+"\r"+strings.Repeat(" ", len(last)-1)+"\r", "the line is blanked before the report")
	assert.Contains(t, terminal, "ok: every run agrees")

	// A short corpus gets none, terminal or not.
	cmd = exec.Command(script, "-qfec", binary+" replay --wasm "+td("sum.wasm")+" --corpus "+corpusFile(t, lines[:progressMinRequests-1]...), "/dev/null")
	out, err = cmd.Output()
	require.NoError(t, err, "%s", out)
	assert.NotContains(t, string(out), "replay: ")
}

func TestProgressLine(t *testing.T) {
	var b strings.Builder
	p := &progressLine{w: &b}
	p.update(1, 100)
	p.update(2, 100) // within 100 ms of the last: skipped
	p.update(100, 100)
	p.clear()
	p.clear()
	assert.Equal(t, "\rreplay: 1/100 requests\rreplay: 100/100 requests\r"+strings.Repeat(" ", 24)+"\r", b.String())

	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f), "the null device is a character device, not a terminal")
	assert.False(t, isTerminal(&b))
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	require.NoError(t, err)
	defer file.Close()
	assert.False(t, isTerminal(file))
}
