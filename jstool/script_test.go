package jstool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/jshost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

func TestToolPath(t *testing.T) {
	cases := []struct{ action, namespace, name string }{
		{"github__create_issue", "github", "createIssue"},
		{"math.sum", "math", "sum"},
		{"text.upper", "text", "upper"},
		{"text.word-count", "text", "wordCount"},
		{"my_tools.a.b", "myTools", "aB"},
		{"a.b__c", "a", "bC"},
		{"a__b.c", "a", "bC"},
		{"getURL.v2", "getURL", "v2"},
		{"echo", "", "echo"},
		{"snake_case_only", "", "snakeCaseOnly"},
		{"ping.", "", "ping"},
		{"__hidden", "", "hidden"},
		// MCP gateway actions, SERVER__TOOL: a tool's own "-", "_", "."
		// and "__" are word breaks in its name.
		{"everything__get-sum", "everything", "getSum"},
		{"github__create_issue", "github", "createIssue"},
		{"fs__files.read", "fs", "filesRead"},
		{"srv__list__all", "srv", "listAll"},
		{"my-server__get-structured-content", "myServer", "getStructuredContent"},
	}
	for _, c := range cases {
		ns, name, ok := jstool.ToolPath(c.action)
		assert.True(t, ok, c.action)
		assert.Equal(t, [2]string{c.namespace, c.name}, [2]string{ns, name}, c.action)
	}
	_, _, ok := jstool.ToolPath("__.-")
	assert.False(t, ok, "an action made of separators has no path")
}

func TestToolscriptSourceRefusesAmbiguousActions(t *testing.T) {
	_, err := jstool.ToolscriptSource([]string{"a.b_c", "a.bC", "x", "x.y", "__"})
	var be *jstool.BundleError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []string{
		`toolscript: action "__" has no name under tools`,
		`toolscript: action "x" maps to tools.x, which holds other actions`,
		`toolscript: actions "a.bC" and "a.b_c" both map to tools.a.bC`,
	}, be.Problems)
}

func TestBundleFileWithResolvesVirtualModules(t *testing.T) {
	file := writeScript(t, `import { greeting } from "virtual-greeting"; export default greeting;`)
	_, err := jstool.BundleFile(file)
	var be *jstool.BundleError
	require.ErrorAs(t, err, &be, "BundleFile resolves no virtual module")
	assert.Contains(t, be.Problems[0], `Could not resolve "virtual-greeting"`)

	b, err := jstool.BundleFileWith(file, map[string]string{"virtual-greeting": `export const greeting = "hi from the virtual module";`})
	require.NoError(t, err)
	assert.Contains(t, string(b.Source), `"hi from the virtual module"`)

	_, err = jstool.BundleFileWith(file, map[string]string{"virtual-greeting": `export const greeting = ;`})
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []string{`wasmgate-virtual:virtual-greeting:1:25: Unexpected ";"`}, be.Problems)
}

// writeScript writes source into a fresh script.ts.
func writeScript(t *testing.T, source string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "script.ts")
	require.NoError(t, os.WriteFile(file, []byte(source), 0o600))
	return file
}

// scriptRun is what one run of a script gave.
type scriptRun struct {
	out            sandbox.Outcome
	stdout, stderr string
	calls          []string // "action params"
}

// fakeActions are the actions fakeCaller knows.
var fakeActions = []string{"math.sum", "text.upper", "text.nothing", "text.broken", "github__create_issue", "host.error"}

// fakeCaller answers tool calls without a pipeline: math.sum adds, text.upper
// shouts, text.nothing succeeds without output, text.broken fails,
// host.error cannot reach a verdict.
func fakeCaller(calls *[]string) jstool.ToolCaller {
	return func(_ context.Context, action string, params json.RawMessage) (jstool.ToolCallResult, error) {
		*calls = append(*calls, action+" "+string(params))
		ok := jstool.ToolCallResult{Status: "SUCCESS", TraceID: "00000000-0000-4000-8000-000000000001"}
		switch action {
		case "math.sum":
			var in struct{ Numbers []float64 }
			if err := json.Unmarshal(params, &in); err != nil {
				return jstool.ToolCallResult{}, err
			}
			sum := 0.0
			for _, n := range in.Numbers {
				sum += n
			}
			ok.Output, _ = json.Marshal(map[string]float64{"sum": sum})
		case "text.upper", "github__create_issue":
			ok.Output = json.RawMessage(strings.ToUpper(string(params)))
		case "text.nothing":
		case "text.broken":
			return jstool.ToolCallResult{Status: "FAILED", ReasonCodes: []string{"EXECUTOR_EXCEPTION"},
				TraceID: ok.TraceID, Message: "broken: always"}, nil
		case "host.error":
			return jstool.ToolCallResult{}, errors.New("the engine failed")
		}
		return ok, nil
	}
}

func runScript(t *testing.T, e sandbox.Engine, source string, limits sandbox.Limits) scriptRun {
	t.Helper()
	b, err := jstool.BundleScript(writeScript(t, source), fakeActions)
	require.NoError(t, err)
	var run scriptRun
	var stdout, stderr bytes.Buffer
	run.out, err = jstool.RunScript(context.Background(), e, b, jstool.ScriptOptions{
		Limits: limits, Call: fakeCaller(&run.calls), Stdout: &stdout, Stderr: &stderr,
	})
	require.NoError(t, err)
	run.stdout, run.stderr = stdout.String(), stderr.String()
	return run
}

func TestScriptResult(t *testing.T) {
	cases := []struct {
		name, source string
		kind         sandbox.OutcomeKind
		output       string // or the message's first line
	}{
		{"a value", `export default {a: [1, "two"]};`, sandbox.Completed, `{"a":[1,"two"]}`},
		{"a promise", `export default Promise.resolve(42);`, sandbox.Completed, `42`},
		{"a function", `export default () => "called";`, sandbox.Completed, `"called"`},
		{"an async function", `export default async function () { await null; return [true]; }`, sandbox.Completed, `[true]`},
		{"top-level await", `const v = await Promise.resolve("late"); export default v;`, sandbox.Completed, `"late"`},
		{"a function returning undefined", `export default () => {};`, sandbox.Completed, ``},
		{"no default export", `export const x = 1;`, sandbox.Completed, ``},
		{"a function returning a function", `export default () => () => 1;`, sandbox.OutputNotJSON, `output is not JSON: a function at the result`},
		{"a BigInt", `export default {big: 10n};`, sandbox.OutputNotJSON, `output is not JSON: a bigint at key "big"`},
		{"a throwing function", `export default () => { throw new TypeError("bad input"); };`, sandbox.Failed, `TypeError: bad input`},
		{"a throwing module", `throw new Error("at the top");`, sandbox.Failed, `Error: at the top`},
		{"a rejected promise", `export default Promise.reject(new RangeError("no"));`, sandbox.Failed, `RangeError: no`},
		{"a thrown string", `export default () => { throw "plain"; };`, sandbox.Failed, `uncaught plain`},
		{"a promise that never settles", `export default new Promise(() => {});`, sandbox.Failed,
			`the script's promise never settled: nothing was left to run it (no pending job or timer; the sandbox has no I/O)`},
		{"a top-level await that never settles", `await new Promise(() => {}); export default 1;`, sandbox.Failed,
			`the script's promise never settled: nothing was left to run it (no pending job or timer; the sandbox has no I/O)`},
		// Unhandled rejections fail the script, even when its result
		// resolved; handled ones do not.
		{"an unhandled rejection", `Promise.reject(new TypeError("forgotten")); export default 1;`, sandbox.Failed, `TypeError: forgotten`},
		{"an unhandled rejection after the result", `export default async () => { Promise.reject(new Error("later")); return "done"; };`, sandbox.Failed, `Error: later`},
		{"an unhandled rejection of a string", `export default () => { Promise.reject("why"); return 1; };`, sandbox.Failed, `Error: unhandled promise rejection: the promise rejected with why`},
		{"a rejection handled late in the same job", `const p = Promise.reject(new Error("x")); p.catch(() => {}); export default 2;`, sandbox.Completed, `2`},
		{"a rejection handled by await", `export default async () => { try { await Promise.reject(new Error("x")); } catch { return "caught"; } };`, sandbox.Completed, `"caught"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range enginetest.JSEngines() {
				run := runScript(t, engine(t, name), c.source, sandbox.Limits{})
				require.Equal(t, c.kind, run.out.Kind, "%s: %s", name, run.out.Message)
				if c.kind == sandbox.Completed {
					assert.Equal(t, c.output, string(run.out.Output), name)
				} else {
					first, _, _ := strings.Cut(run.out.Message, "\n")
					assert.Equal(t, c.output, first, name)
				}
			}
		})
	}
}

func TestScriptToolCalls(t *testing.T) {
	source := `import { tools, actions } from "toolscript";
const failure = (e) => ({ name: e.name, message: e.message, status: e.status, reasonCodes: e.reasonCodes,
  traceId: e.traceId, action: e.action, isError: e instanceof Error });
const caught = async (p) => { try { await p; return "resolved"; } catch (e) { return failure(e); } };
export default {
  actions,
  sum: await tools.math.sum({ numbers: [1, 2, 3.5] }),
  camel: await tools.github.createIssue({ title: "x" }),
  none: await tools.text.nothing(),
  broken: await caught(tools.text.broken({ text: "a" })),
  hostError: await caught(tools.host.error({})),
  notJSON: await caught(tools.text.upper({ n: 1n })),
  unknown: await caught(Promise.resolve().then(() => tools.text.lower({}))),
  name: tools.math.sum.name,
  frozen: Object.isFrozen(tools) && Object.isFrozen(tools.math) && Object.isFrozen(tools.math.sum),
};`
	for _, name := range enginetest.JSEngines() {
		run := runScript(t, engine(t, name), source, sandbox.Limits{})
		require.Equal(t, sandbox.Completed, run.out.Kind, "%s: %s", name, run.out.Message)
		assert.JSONEq(t, `{
			"actions": ["github__create_issue", "host.error", "math.sum", "text.broken", "text.nothing", "text.upper"],
			"sum": {"sum": 6.5},
			"camel": {"TITLE": "X"},
			"broken": {"name": "ToolCallError", "message": "tools.text.broken failed: FAILED [EXECUTOR_EXCEPTION]: broken: always",
				"status": "FAILED", "reasonCodes": ["EXECUTOR_EXCEPTION"], "traceId": "00000000-0000-4000-8000-000000000001",
				"action": "text.broken", "isError": true},
			"hostError": {"name": "Error", "message": "wasmgate.call: the engine failed", "isError": true},
			"notJSON": {"name": "TypeError", "message": "tools.text.upper: the params are not JSON: a bigint at key \"n\"", "isError": true},
			"unknown": {"name": "TypeError", "message": "not a function", "isError": true},
			"name": "tools.math.sum",
			"frozen": true
		}`, string(run.out.Output), name)
		assert.Equal(t, []string{
			`math.sum {"numbers":[1,2,3.5]}`,
			`github__create_issue {"title":"x"}`,
			`text.nothing {}`,
			`text.broken {"text":"a"}`,
			`host.error {}`,
		}, run.calls, "%s: params that are not JSON never reach the host", name)
	}
}

func TestScriptConsoleIsWrittenAsItHappens(t *testing.T) {
	source := `import { tools } from "toolscript";
console.log("one", 2, {three: [3]}, null);
console.error("to stderr");
console.info("info");
console.warn("careful");
console.debug("debug");
await tools.text.nothing();
console.log("multi\nline");
throw new Error("stop");`
	run := runScript(t, engine(t, sandbox.EngineWazero), source, sandbox.Limits{})
	require.Equal(t, sandbox.Failed, run.out.Kind)
	assert.Equal(t, "one 2 {\"three\":[3]} null\ninfo\ndebug\nmulti\nline\n", run.stdout)
	assert.Equal(t, "to stderr\ncareful\n", run.stderr)
	assert.Len(t, run.calls, 1)
}

func TestScriptIsDeterministic(t *testing.T) {
	source := `export default { random: [Math.random(), Math.random()], now: Date.now() };`
	var outputs []string
	for _, name := range enginetest.JSEnginesCompared() {
		for range 2 {
			run := runScript(t, engine(t, name), source, sandbox.Limits{})
			require.Equal(t, sandbox.Completed, run.out.Kind, run.out.Message)
			outputs = append(outputs, string(run.out.Output))
		}
	}
	for _, o := range outputs[1:] {
		assert.Equal(t, outputs[0], o)
	}
	assert.Contains(t, outputs[0], `"now":946684800000`)
}

func TestScriptLimits(t *testing.T) {
	loop := `while (true) {}`
	run := runScript(t, engine(t, sandbox.EngineWazero), loop, sandbox.Limits{Fuel: 1_000_000})
	assert.Equal(t, sandbox.FuelExhausted, run.out.Kind)
	assert.Equal(t, uint64(1_000_000), run.out.FuelUsed)

	run = runScript(t, engine(t, sandbox.EngineWazero), `export default "x".repeat(100);`, sandbox.Limits{MaxOutputBytes: 50})
	assert.Equal(t, sandbox.OutputTooLarge, run.out.Kind)

	run = runScript(t, engine(t, sandbox.EngineWazero), `const a = []; while (true) a.push(new Array(1e5).fill(1));`,
		sandbox.Limits{MemoryPages: 200, Fuel: 1 << 40})
	assert.Equal(t, sandbox.MemoryExhausted, run.out.Kind, run.out.Message)
}

// An engine whose ctx carries no host functions (every tool's) refuses the
// script's calls; so does the engine of anything a tool call runs, which
// gets a ctx without the script's host functions.
func TestScriptHostFunctionsAreNotInherited(t *testing.T) {
	ctx := context.Background()
	e := engine(t, sandbox.EngineWazero)
	wasm, err := jstool.EngineModule()
	require.NoError(t, err)
	reactor, err := e.LoadReactor(ctx, wasm, jshost.QuickJSGlue())
	require.NoError(t, err)
	b, err := jstool.BundleScript(writeScript(t, `import { tools } from "toolscript";
export default await tools.math.sum({numbers: [1]}).catch((e) => e.message);`), []string{"math.sum"})
	require.NoError(t, err)
	bare := func(ctx context.Context) sandbox.Outcome {
		out, err := reactor.Run(ctx, nil, sandbox.Input{Limits: jstool.ScriptLimits()},
			sandbox.Driver(jshost.QuickJSScript(jshost.JSScript{Name: "script.ts", Source: b.Source, MaxOutput: 1 << 20})))
		require.NoError(t, err)
		return out
	}
	refusal := `"host function \"wasmgate.call\" is not available: tools cannot call the host"`

	out := bare(ctx)
	require.Equal(t, sandbox.Completed, out.Kind, out.Message)
	assert.Equal(t, refusal, string(out.Output))

	var nested sandbox.Outcome
	out, err = jstool.RunScript(ctx, e, b, jstool.ScriptOptions{
		Call: func(ctx context.Context, _ string, _ json.RawMessage) (jstool.ToolCallResult, error) {
			nested = bare(ctx)
			return jstool.ToolCallResult{Status: "SUCCESS", Output: json.RawMessage(`"the outer call"`)}, nil
		},
	})
	require.NoError(t, err)
	require.Equal(t, sandbox.Completed, out.Kind, out.Message)
	assert.Equal(t, `"the outer call"`, string(out.Output))
	require.Equal(t, sandbox.Completed, nested.Kind, nested.Message)
	assert.Equal(t, refusal, string(nested.Output), "the nested engine does not inherit the script's host functions")
}

func TestScriptWithoutCaller(t *testing.T) {
	b, err := jstool.BundleScript(writeScript(t, `import { tools } from "toolscript";
export default await tools.math.sum({}).catch((e) => e.message);`), []string{"math.sum"})
	require.NoError(t, err)
	out, err := jstool.RunScript(context.Background(), engine(t, sandbox.EngineWazero), b, jstool.ScriptOptions{})
	require.NoError(t, err)
	require.Equal(t, sandbox.Completed, out.Kind, out.Message)
	assert.Equal(t, `"wasmgate.call: this script has no tools to call"`, string(out.Output))
}
