package jstool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

const tools = "testdata/tools"

// engine is the test binary's shared engine name, compiling through the
// tests' compilation cache.
func engine(t *testing.T, name sandbox.EngineName) sandbox.Engine {
	t.Helper()
	if _, err := jstool.EngineModule(); err != nil {
		t.Fatalf("%v (make test fetches it)", err)
	}
	return enginetest.Engine(t, name)
}

// run executes one request on the tool in file (with export tool) through
// the pipeline, as `wasmgate run --js` does.
func run(t *testing.T, e sandbox.Engine, file, tool, payload string, limits sandbox.Limits) pipeline.ActionResult {
	t.Helper()
	if limits.TimeoutMs == 0 {
		// Only the timeout case depends on the clock: the others must not
		// fail because the race detector and the interpreter are slow.
		limits.TimeoutMs = 120_000
	}
	reg, err := pipeline.RegistryForSource(context.Background(), e,
		pipeline.ExecutorSource{JS: filepath.Join(tools, file), Tool: tool}, "act", limits, js.Kind())
	require.NoError(t, err)
	res, err := pipeline.New(reg, audit.NewMemorySink()).Execute(context.Background(),
		pipeline.ActionRequest{Action: "act", Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return res
}

func TestToolForms(t *testing.T) {
	cases := []struct {
		name, file, tool, payload, output string
	}{
		{"file exporting execute", "trim.js", "", `{"text":"  hi  "}`, `{"text":"hi"}`},
		{"async execute", "async.mjs", "", `{"n":21}`, `{"doubled":42,"squares":[1,4,9]}`},
		{"TypeScript with top-level await", "typed.ts", "", `{"words":["a","abc","ab"]}`, `{"count":3,"longest":"abc"}`},
		{"default object with execute", "default_object.js", "", `{"name":"ann"}`, `{"greeting":"hello ann"}`},
		{"factory", "factory.js", "", `{"q":"x"}`, `{"q":"x","region":"none"}`},
		{"pkg[name]", "package_shape.js", "upper", `{"s":"Ab"}`, `{"s":"AB"}`},
		{"pkg.default[name]", "package_shape.js", "lower", `{"s":"Ab"}`, `{"s":"ab"}`},
		{"pkg.default", "package_shape.js", "missing", `{"s":"Ab"}`, `{"s":"Ab","via":"default"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range enginetest.JSEngines() {
				res := run(t, engine(t, name), c.file, c.tool, c.payload, sandbox.Limits{})
				require.Equal(t, pipeline.StatusSuccess, res.Status, "%s: %s", name, res.Message)
				assert.JSONEq(t, c.output, string(res.Output), name)
				assert.Equal(t, audit.Digest(res.Output), *res.OutputDigest, name)
			}
		})
	}
}

func TestFactoryGetsTheRequestEnv(t *testing.T) {
	ctx := context.Background()
	b, err := jstool.BundleFile(filepath.Join(tools, "factory.js"))
	require.NoError(t, err)
	tool, err := jstool.Load(ctx, engine(t, sandbox.EngineWazero), jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "f", Version: "1.0.0"}})
	require.NoError(t, err)
	in := []byte(`{"q":"x"}`)
	// A pretty-printed env works: it is passed on as compact JSON.
	out, err := tool.ExecuteWithEnv(ctx, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in)}, []byte("{\n  \"REGION\": \"eu-west\"\n}"))
	require.NoError(t, err)
	require.Equal(t, sandbox.Completed, out.Kind, out.Message)
	assert.JSONEq(t, `{"q":"x","region":"eu-west"}`, string(out.Output))
}

func TestAIPackageTool(t *testing.T) {
	dir := filepath.Join(tools, "ai")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ai")); err != nil {
		t.Fatalf("the ai package fixture is not installed (make test runs npm ci in %s): %v", dir, err)
	}
	res := run(t, engine(t, sandbox.EngineWazero), "ai/weather.ts", "weather", `{"location":"Paris"}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"location":"Paris","temperature":65}`, string(res.Output))
}

func TestToolOutcomes(t *testing.T) {
	cases := []struct {
		name, file, payload string
		limits              sandbox.Limits
		status              pipeline.Status
		codes               []pipeline.ReasonCode
		message             string // the message starts with this
	}{
		{"thrown error", "throws.js", `{"reason":"no"}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException},
			"Error: cannot do that: no\n    at execute (throws.js:"},
		{"rejected promise", "rejects.js", `{}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException}, "TypeError: async failure"},
		{"function result", "returns_function.js", `{}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException, pipeline.OutputNotJSON},
			"output is not JSON: a function at the result"},
		{"BigInt result", "returns_bigint.js", `{}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException, pipeline.OutputNotJSON},
			`output is not JSON: a bigint at key "big"`},
		{"cyclic result", "returns_cycle.js", `{}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException, pipeline.OutputNotJSON},
			"output is not JSON: circular reference"},
		{"promise that never settles", "never_settles.js", `{}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException},
			"the tool's promise never settled"},
		{"endless loop, fuel", "endless.js", `{}`, sandbox.Limits{Fuel: 5_000_000},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}, "fuel exhausted"},
		{"endless loop, time", "endless.js", `{}`, sandbox.Limits{Fuel: 1 << 62, TimeoutMs: 200},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.ExecutorTimeout}, "timeout_ms elapsed"},
		{"allocation bomb", "alloc_bomb.js", `{}`, sandbox.Limits{MemoryPages: 128},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.MemoryExhausted},
			"InternalError: out of memory"},
		{"deep recursion", "deep.js", `{"n":100000}`, sandbox.Limits{},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.StackExhausted},
			"call depth exceeded 1000"},
		{"a Node builtin used", "uses_fs.js", `{"path":"/etc/passwd"}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException},
			`Error: Access to this API has been restricted: fs.readFileSync() (wasmgate runs code without network, file system or processes)`},
		{"a module not bundled", "dynamic_import.js", `{}`, sandbox.Limits{},
			pipeline.StatusFailed, []pipeline.ReasonCode{pipeline.ExecutorException},
			`Error: cannot import "fs": a tool can import only what is bundled into it`},
		{"syntax error", "syntax_error.js", `{}`, sandbox.Limits{},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.ExecutorInvalid},
			"executor \"syntax_error\": cannot bundle testdata/tools/syntax_error.js: syntax_error.js:2:10: Expected \"}\" but found \"1\""},
		{"TypeScript error", "type_error.ts", `{}`, sandbox.Limits{},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.ExecutorInvalid},
			"executor \"type_error\": cannot bundle testdata/tools/type_error.ts: type_error.ts:2:16: Unexpected \";\""},
		{"import that does not resolve", "unresolved.js", `{}`, sandbox.Limits{},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.ExecutorInvalid},
			`executor "unresolved": cannot bundle testdata/tools/unresolved.js: unresolved.js:1:24: Could not resolve "./not-there.js"`},
		{"throws while loading", "throws_on_load.js", `{}`, sandbox.Limits{},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.ExecutorInvalid},
			`executor "throws_on_load": TOOL_INVALID: testdata/tools/throws_on_load.js: the tool threw while it was loaded: SyntaxError:`},
		{"no execute", "no_execute.js", `{}`, sandbox.Limits{},
			pipeline.StatusBlocked, []pipeline.ReasonCode{pipeline.ExecutorInvalid},
			`executor "no_execute": TOOL_INVALID: testdata/tools/no_execute.js: the default export is an object with no execute function, not a tool`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range enginetest.JSEngines() {
				res := run(t, engine(t, name), c.file, "", c.payload, c.limits)
				assert.Equal(t, c.status, res.Status, "%s: %s", name, res.Message)
				assert.Equal(t, c.codes, res.ReasonCodes, name)
				assert.True(t, strings.HasPrefix(res.Message, c.message), "%s: message %q does not start with %q", name, res.Message, c.message)
				assert.Nil(t, res.OutputDigest, name)
				assert.Empty(t, res.Output, name)
			}
		})
	}
}

func TestMissingExportIsToolNotFound(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), "trim.js", "nope", `{"text":"x"}`, sandbox.Limits{})
	assert.Equal(t, pipeline.StatusBlocked, res.Status)
	assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorInvalid}, res.ReasonCodes)
	assert.Equal(t, `executor "trim": TOOL_NOT_FOUND: testdata/tools/trim.js: the tool exports no "nope" (nor a default export)`, res.Message)

	ctx := context.Background()
	b, err := jstool.BundleFile(filepath.Join(tools, "trim.js"))
	require.NoError(t, err)
	_, err = jstool.Load(ctx, engine(t, sandbox.EngineWazero), jstool.Spec{Bundle: b, Export: "nope"})
	assert.ErrorIs(t, err, jstool.ErrToolNotFound)
	assert.ErrorIs(t, err, sandbox.ErrNotAdmitted)
}

func TestUndefinedIsNoOutput(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), "returns_undefined.js", "", `{}`, sandbox.Limits{})
	assert.Equal(t, pipeline.StatusSuccess, res.Status)
	assert.Empty(t, res.ReasonCodes)
	assert.Nil(t, res.OutputDigest)
	assert.Empty(t, res.Output)
}

func TestDeterminismProfile(t *testing.T) {
	e := engine(t, sandbox.EngineWazero)
	first := run(t, e, "profile.js", "", `{"seed":1}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, first.Status, first.Message)
	var got struct {
		Now            string            `json:"now"`
		DateNow        int64             `json:"dateNow"`
		Random         []float64         `json:"random"`
		Types          map[string]string `json:"types"`
		TimezoneOffset int               `json:"timezoneOffset"`
		Require        string            `json:"require"`
	}
	require.NoError(t, json.Unmarshal(first.Output, &got))
	assert.Equal(t, "2000-01-01T00:00:00.000Z", got.Now)
	assert.Equal(t, int64(946684800000), got.DateNow)
	assert.Equal(t, 0, got.TimezoneOffset)
	assert.Equal(t, map[string]string{"process": "object", "fetch": "function",
		"setTimeout": "function", "setInterval": "function"}, got.Types)
	// The bundler stands in for require with a function that refuses.
	assert.Equal(t, `Dynamic require of "fs" is not supported`, got.Require)
	require.Len(t, got.Random, 2)
	assert.NotEqual(t, got.Random[0], got.Random[1])
	for _, r := range got.Random {
		assert.True(t, r >= 0 && r < 1, r)
	}
	// console goes to the caller's log, never to the audit record.
	assert.Equal(t, "profile {\"checked\":true}\nerror: to the log too\n", first.Log)

	// Math.random is seeded by the input: the same input gives the same
	// numbers on every run and engine, another input others.
	for _, name := range enginetest.JSEnginesCompared() {
		again := run(t, engine(t, name), "profile.js", "", `{"seed":1}`, sandbox.Limits{})
		assert.Equal(t, first.Output, again.Output, name)
		assert.Equal(t, first.FuelUsed, again.FuelUsed, name)
	}
	other := run(t, e, "profile.js", "", `{"seed":2}`, sandbox.Limits{})
	assert.NotEqual(t, first.Output, other.Output)
}

func TestLogIsBounded(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), "chatty.js", "", `{}`, sandbox.Limits{Fuel: 1 << 32})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.Len(t, res.Log, 65536+len("\n[log truncated at 64 KiB]\n"))
	assert.True(t, strings.HasPrefix(res.Log, "line 0 xxxx"))
	assert.True(t, strings.HasSuffix(res.Log, "\n[log truncated at 64 KiB]\n"))

	// An observer sees the same bound: the entries that fit, the last one
	// cut where the log ends, then the notice.
	reg, err := pipeline.RegistryForSource(context.Background(), engine(t, sandbox.EngineWazero),
		pipeline.ExecutorSource{JS: filepath.Join(tools, "chatty.js")}, "act", sandbox.Limits{Fuel: 1 << 32, TimeoutMs: 120_000}, js.Kind())
	require.NoError(t, err)
	var logs []jstool.LogEntry
	ctx := jstool.WithObserver(context.Background(), jstool.Observer{Log: func(l jstool.LogEntry) { logs = append(logs, l) }})
	observed, err := pipeline.New(reg, audit.NewMemorySink()).Execute(ctx, pipeline.ActionRequest{Action: "act", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, res.Log, observed.Log)
	assert.Equal(t, res.FuelUsed, observed.FuelUsed)
	require.Greater(t, len(logs), 2)
	assert.Equal(t, jstool.LogEntry{Level: "warn", Message: "[log truncated at 64 KiB]"}, logs[len(logs)-1])
	var messages []string
	for _, l := range logs[:len(logs)-1] {
		assert.Equal(t, "info", l.Level)
		messages = append(messages, l.Message)
	}
	assert.Equal(t, res.Log[:65536], strings.Join(messages, "\n"), "the entries are the log up to its bound")
}

func TestSidecarManifest(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), "trim.js", "", `{"text":" a "}`, sandbox.Limits{})
	assert.Equal(t, "text_trim", res.ExecutorID)
	assert.Equal(t, "1.2.0", res.ExecutorVersion)

	res = run(t, engine(t, sandbox.EngineWazero), "async.mjs", "", `{"n":1}`, sandbox.Limits{})
	assert.Equal(t, "async", res.ExecutorID)
	assert.Equal(t, "0.0.0", res.ExecutorVersion)
}

// TestExecutionsAreIsolated: every execution starts from the snapshot, so
// nothing one execution leaves in the engine is seen by the next.
func TestExecutionsAreIsolated(t *testing.T) {
	ctx := context.Background()
	src := `export function execute() { globalThis.count = (globalThis.count ?? 0) + 1; return globalThis.count; }`
	tool, err := jstool.Load(ctx, engine(t, sandbox.EngineWazero), jstool.Spec{
		Bundle: jstool.Bundle{Source: []byte(src), Entry: "count.js"}, Manifest: sandbox.Manifest{ExecutorID: "count", Version: "1.0.0"}})
	require.NoError(t, err)
	in := []byte(`{}`)
	for range 3 {
		out, err := tool.Execute(ctx, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in)})
		require.NoError(t, err)
		assert.Equal(t, "1", string(out.Output))
	}
}

func TestModuleDigestCoversEngineToolAndExport(t *testing.T) {
	ctx := context.Background()
	e := engine(t, sandbox.EngineWazero)
	load := func(src, export string) string {
		tool, err := jstool.Load(ctx, e, jstool.Spec{Bundle: jstool.Bundle{Source: []byte(src), Entry: "t.js"}, Export: export})
		require.NoError(t, err)
		return tool.ModuleDigest()
	}
	a := `export const x = { execute: () => 1 }; export const y = { execute: () => 2 };`
	assert.Equal(t, load(a, "x"), load(a, "x"))
	assert.NotEqual(t, load(a, "x"), load(a, "y"))
	assert.NotEqual(t, load(a, "x"), load(a+"\n", "x"))
	assert.Len(t, load(a, "x"), 64)
}

// TestObserver: an Observer sees each console call as a structured entry
// and the exception's code and recoverable flag, and observing changes
// nothing in the execution.
func TestObserver(t *testing.T) {
	e := engine(t, sandbox.EngineWazero)
	reg, err := pipeline.RegistryForSource(context.Background(), e,
		pipeline.ExecutorSource{JS: filepath.Join(tools, "coded_error.js")}, "act", sandbox.Limits{TimeoutMs: 120_000}, js.Kind())
	require.NoError(t, err)
	p := pipeline.New(reg, audit.NewMemorySink())
	execute := func(ctx context.Context, payload string) pipeline.ActionResult {
		res, err := p.Execute(ctx, pipeline.ActionRequest{Action: "act", Payload: json.RawMessage(payload)})
		require.NoError(t, err)
		return res
	}
	no, yes := false, true
	for _, tt := range []struct {
		name, payload string
		want          jstool.Exception
	}{
		{"code and recoverable", `{"code":"AUTH_FAILED","recoverable":false}`,
			jstool.Exception{Name: "Error", Message: "PAT expired", Code: "AUTH_FAILED", Recoverable: &no}},
		{"code alone", `{"code":"AUTH_FAILED"}`, jstool.Exception{Name: "Error", Message: "PAT expired", Code: "AUTH_FAILED"}},
		{"a code that is not a string", `{"code":7,"recoverable":true}`, jstool.Exception{Name: "Error", Message: "PAT expired", Recoverable: &yes}},
		{"not an Error", `{"plain":"oops"}`, jstool.Exception{Message: "uncaught oops"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs []jstool.LogEntry
			var threw []jstool.Exception
			ctx := jstool.WithObserver(context.Background(), jstool.Observer{
				Log:   func(l jstool.LogEntry) { logs = append(logs, l) },
				Threw: func(x jstool.Exception) { threw = append(threw, x) },
			})
			res := execute(ctx, tt.payload)
			assert.Equal(t, pipeline.StatusFailed, res.Status)
			assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorException}, res.ReasonCodes)
			require.Len(t, threw, 1)
			assert.Equal(t, res.Message, threw[0].Description)
			threw[0].Description = ""
			assert.Equal(t, tt.want, threw[0])

			code := "null"
			if strings.Contains(tt.payload, `"code":"`) {
				code = `"AUTH_FAILED"`
			} else if strings.Contains(tt.payload, `"code":7`) {
				code = "7"
			}
			assert.Equal(t, []jstool.LogEntry{
				{Level: "debug", Message: "debugging", Data: json.RawMessage(`{"code":` + code + `}`)},
				{Level: "info", Message: "step 1 of 2"},
				{Level: "warn", Message: "careful"},
				{Level: "error", Message: "about to fail", Data: json.RawMessage(`[1,2]`)},
			}, logs)
			// The caller's log is the same lines, as without an observer.
			assert.Equal(t, "debugging {\"code\":"+code+"}\nstep 1 of 2\nwarn: careful\nerror: about to fail [1,2]\n", res.Log)

			unobserved := execute(context.Background(), tt.payload)
			assert.Equal(t, res.FuelUsed, unobserved.FuelUsed, "observing costs the tool nothing")
			assert.Equal(t, res.Log, unobserved.Log)
			assert.Equal(t, res.Message, unobserved.Message)
		})
	}
}
