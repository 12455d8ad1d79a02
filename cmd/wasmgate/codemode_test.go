package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/mcpgateway/mcptest"
)

// mcpInProcess runs `wasmgate mcp args...` in-process, its stdio joined to
// the Go SDK's client by pipes, as an MCP host joins a server it starts.
// The command ends, and its audit log is complete, once the test has
// closed the session (cleanup does it, or the test calls the returned
// stop, which waits for the command's exit).
func mcpInProcess(t *testing.T, args ...string) (*sdk.ClientSession, func() int, *syncBuffer) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	exited := make(chan int, 1)
	go func() {
		code := run(context.Background(), append([]string{"mcp"}, args...), inR, outW, &stderr)
		outW.Close()
		inR.Close()
		exited <- code
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, nil).
		Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err, stderr.String())
	code, stopped := -1, false
	stop := func() int {
		if stopped {
			return code
		}
		stopped = true
		cs.Close()
		select {
		case code = <-exited:
		case <-time.After(time.Minute):
			t.Fatalf("wasmgate mcp did not exit once its stdin closed:\n%s", stderr.String())
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return cs, stop, &stderr
}

// runScriptCall calls run_script with script.
func runScriptCall(t *testing.T, cs *sdk.ClientSession, script string) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "run_script", Arguments: map[string]any{"script": script}})
	require.NoError(t, err)
	return res
}

// scriptMetaOf is the "wasmgate/script" of a run_script result.
func scriptMetaOf(t *testing.T, res *sdk.CallToolResult) (m struct {
	Stage   string `json:"stage"`
	Outcome string `json:"outcome"`
	Calls   int    `json:"calls"`
	TraceID string `json:"trace_id"`
}) {
	t.Helper()
	raw, err := json.Marshal(res.Meta["wasmgate/script"])
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// combineScript calls two registered executors, writes to the console and
// returns what it made of their outputs.
const combineScript = `import { tools } from "toolscript";
const numbers: number[] = [3, 4, 5];
const { sum } = await tools.math.sum({ numbers });
console.log("sum of", numbers, "is", sum);
console.error("about to shout");
const shout = await tools.text.upper({ text: "total " + sum });
export default { sum, shout: shout.text };
`

// Code Mode over stdio, through the official Go SDK client: one tool whose
// description declares the registry's actions; a script calling two of
// them returns their combined result and its console output, and the audit
// log holds one attempt and one verdict per call, under one trace id.
func TestCodeModeRunScript(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cs, stop, stderr := mcpInProcess(t, "--code-mode", "--config", td("registry.json"), "--audit", logPath)

	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err, stderr.String())
	require.Len(t, list.Tools, 1, "Code Mode offers one tool")
	tool := list.Tools[0]
	assert.Equal(t, "run_script", tool.Name)
	for _, decl := range []string{"sum(params: {", "upper(params?: {", "sort(params?: unknown)", "stats(params?: unknown)", `declare module "toolscript"`} {
		assert.Contains(t, tool.Description, decl, "the description declares every action")
	}
	schema, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"script":{"type":"string","description":"a TypeScript module: import { tools } from \"toolscript\"; … export default RESULT"}},"required":["script"],"additionalProperties":false}`, string(schema))

	res := runScriptCall(t, cs, combineScript)
	require.False(t, res.IsError, callText(res))
	want := `{"result":{"sum":12,"shout":"TOTAL 12"},"stdout":"sum of [3,4,5] is 12\n","stderr":"about to shout\n"}`
	assert.JSONEq(t, want, callText(res), "the text is the structured content, for clients that read text")
	structured, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	assert.JSONEq(t, want, string(structured))
	meta := scriptMetaOf(t, res)
	assert.Equal(t, "run", meta.Stage)
	assert.Equal(t, "completed", meta.Outcome)
	assert.Equal(t, 2, meta.Calls)

	require.Equal(t, exitSuccess, stop(), stderr.String())
	rep := verifyLog(t, logPath)
	assert.EqualValues(t, 4, rep.Records, "an attempt and a verdict per tool call")
	assert.Empty(t, rep.Unanswered)
	verdicts := readRecords(t, logPath)
	require.Len(t, verdicts, 2)
	for i, action := range []string{"math.sum", "text.upper"} {
		assert.Equal(t, action, verdicts[i].Action)
		assert.Equal(t, "SUCCESS", verdicts[i].Status)
		assert.Equal(t, meta.TraceID, verdicts[i].TraceID, "the calls share the trace id _meta names")
	}
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "TOTAL", "the audit log holds digests, never outputs")
}

// What goes wrong in a script is isError, saying what, and a script that
// did not run calls nothing: its audit log stays empty.
func TestCodeModeFailures(t *testing.T) {
	tests := []struct {
		name, script string
		// text is the start of the result's text; more are in it too.
		text  string
		more  []string
		stage string
		calls int
	}{
		{"a type error names its place and runs nothing",
			"import { tools } from \"toolscript\";\nconst { sum } = await tools.math.sum({ numbers: [1, \"two\", 3] });\nexport default { sum };\n",
			"1 type error, nothing was run:\nscript.ts:2:53: error TS2322: Type 'string' is not assignable to type 'number'.", nil, "check", 0},
		{"a syntax error runs nothing",
			"export default {;\n",
			"the script does not bundle, nothing was run: script.ts:1:17: Expected identifier but found \";\"", nil, "bundle", 0},
		{"a script has no files to import",
			"import x from \"./other.ts\";\nexport default x;\n",
			"the script does not bundle, nothing was run: script.ts:1:15: Could not resolve \"./other.ts\"", nil, "bundle", 0},
		{"a throw gives its message and stack, and the console before it",
			"import { tools } from \"toolscript\";\nconsole.log(\"starting\");\nconst { sum } = await tools.math.sum({ numbers: [1, 2] });\nfunction check(n: number) { if (n > 2) throw new RangeError(\"too big: \" + n); }\ncheck(sum);\nexport default sum;\n",
			"the script threw: RangeError: too big: 3\n    at check (script.ts:", []string{"\n\nstdout:\nstarting\n"}, "run", 1},
		{"a failed call rejects, uncaught it ends the script",
			"import { tools } from \"toolscript\";\nexport default await tools.math.sum({ numbers: [1.5] });\n",
			"the script threw: ToolCallError: tools.math.sum failed: FAILED [EXECUTOR_EXCEPTION]: sum: numbers[0] is not an integer\n    at tools.math.sum (script.ts:", nil, "run", 1},
		{"no script",
			"",
			`run_script: no script: give {"script": "import { tools } from \"toolscript\"; … export default RESULT"}`, nil, "", 0},
	}
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cs, stop, stderr := mcpInProcess(t, "--code-mode", "--config", td("registry.json"), "--audit", logPath)
	calls := 0
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runScriptCall(t, cs, tt.script)
			assert.True(t, res.IsError)
			text := callText(res)
			assert.True(t, strings.HasPrefix(text, tt.text), "text: %s", text)
			for _, m := range tt.more {
				assert.Contains(t, text, m)
			}
			assert.Nil(t, res.StructuredContent)
			if tt.stage != "" {
				meta := scriptMetaOf(t, res)
				assert.Equal(t, tt.stage, meta.Stage)
				assert.Equal(t, tt.calls, meta.Calls)
			}
		})
		calls += tt.calls
	}
	require.Equal(t, exitSuccess, stop(), stderr.String())
	rep := verifyLog(t, logPath)
	assert.EqualValues(t, 2*calls, rep.Records, "the scripts that ran made these calls; the others called nothing")
}

// Code Mode's flags, refused with what to do.
func TestCodeModeUsageErrors(t *testing.T) {
	tests := []struct {
		args   []string
		stderr string
	}{
		{[]string{"--code-mode"}, "wasmgate mcp: --code-mode needs --config FILE or --mcp-servers FILE: their tools are what scripts call\n"},
		{[]string{"--config", td("registry.json"), "--mcp-servers", "servers.json"}, "wasmgate mcp: --mcp-servers needs --code-mode: server tools are offered to scripts (run_script), not one by one\n"},
		{[]string{"--code-mode", "--config", td("registry.json"), "--mcp-allow", "everything.echo"}, "wasmgate mcp: --mcp-allow needs --mcp-servers FILE: the servers whose tools it allows\n"},
		{[]string{"--code-mode", "--config", td("registry.json"), "--tools-dir", "store"}, "wasmgate mcp: --tools-dir does not apply with --code-mode: scripts call the actions of --config and the tools of --mcp-servers\n"},
		{[]string{"--code-mode", "--mcp-servers", "servers.json", "--mcp-max-calls", "0"}, "wasmgate mcp: --mcp-max-calls 0: want 1 or more\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"mcp"}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.True(t, strings.HasPrefix(r.stderr, tt.stderr), "stderr: %s", r.stderr)
		})
	}
}

// listBytes is the size of a tools/list result as the server sends it
// (the result's JSON), the measure of what listing tools costs an agent's
// context.
func listBytes(t *testing.T, cs *sdk.ClientSession) (int, int) {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	raw, err := json.Marshal(list)
	require.NoError(t, err)
	return len(raw), len(list.Tools)
}

// The size of tools/list in Code Mode against one tool per action, for
// testdata/registry.json; go test -v prints it (docs/MCP.md has the
// figures). With four small actions Code Mode's one tool is the larger, by
// a fixed part (how to write a script, what a failed call rejects with)
// that the declarations of four actions do not make up for: what Code
// Mode saves on them is the calls, one round trip for many, and their
// intermediate results, which stay out of the agent's context.
func TestCodeModeToolsListSize(t *testing.T) {
	cs, _, _ := mcpInProcess(t, "--config", td("registry.json"))
	each, n := listBytes(t, cs)
	cm, _, _ := mcpInProcess(t, "--code-mode", "--config", td("registry.json"))
	one, m := listBytes(t, cm)
	t.Logf("tools/list of testdata/registry.json: %d tools, %d bytes (≈%d tokens at 4 bytes a token); Code Mode: %d tool, %d bytes (≈%d tokens)",
		n, each, each/4, m, one, one/4)
	assert.Equal(t, 4, n)
	assert.Equal(t, 1, m)
	assert.Greater(t, one, each, "for four small actions, the fixed part of Code Mode's description costs more than it saves")
	assert.Less(t, one, 3*each)
}

// everythingServers writes an --mcp-servers file naming the MCP reference
// server, over stdio, as "everything".
func everythingServers(t *testing.T) string {
	t.Helper()
	node, bin := mcptest.Everything(t)
	cfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": node, "args": []string{bin, "stdio"}},
	}})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "servers.json")
	require.NoError(t, os.WriteFile(path, cfg, 0o644))
	return path
}

// Code Mode with a real MCP server behind the gateway: the description
// declares the tools --mcp-allow allows (and not the others), a script
// calls them typed, and a call outside the policy throws and is audited
// BLOCKED.
func TestCodeModeGatewayEverything(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cs, stop, stderr := mcpInProcess(t, "--code-mode", "--config", td("registry.json"), "--audit", logPath,
		"--mcp-servers", everythingServers(t), "--mcp-allow", "everything.echo", "--mcp-allow", "everything.get-sum")
	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err, stderr.String())
	require.Len(t, list.Tools, 1)
	desc := list.Tools[0].Description
	assert.Contains(t, desc, "getSum(")
	assert.Contains(t, desc, "echo(")
	assert.NotContains(t, desc, "getStructuredContent(", "a tool the policy refuses is not offered")

	res := runScriptCall(t, cs, `import { tools } from "toolscript";
const sum = await tools.everything.getSum({ a: 2, b: 40 });
const echo = await tools.everything.echo({ message: "hi" });
const total = await tools.math.sum({ numbers: [1, 2] });
export default { sum, echo, total };
`)
	require.False(t, res.IsError, callText(res))
	assert.Contains(t, callText(res), "42")
	assert.Contains(t, callText(res), "hi")
	assert.Equal(t, 3, scriptMetaOf(t, res).Calls)

	res = runScriptCall(t, cs, `import { tools } from "toolscript";
export default await tools.everything.getStructuredContent({ location: "New York" });
`)
	assert.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(callText(res), "the script threw: "), callText(res))
	assert.Contains(t, callText(res), "BLOCKED")

	require.Equal(t, exitSuccess, stop(), stderr.String())
	verdicts := readRecords(t, logPath)
	require.Len(t, verdicts, 4)
	assert.Equal(t, "BLOCKED", verdicts[3].Status)
	rep := verifyLog(t, logPath)
	assert.Empty(t, rep.Unanswered)
	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"hi"`, "no raw arguments or results in the log")
}

// The size of tools/list with the reference server's tools listed one by
// one (as a client connected to it sees them) against Code Mode's one
// tool declaring those --mcp-allow allows.
func TestCodeModeToolsListSizeEverything(t *testing.T) {
	servers := everythingServers(t)
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	raw, err := os.ReadFile(servers)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &cfg))
	ev := cfg.MCPServers["everything"]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	direct, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: exec.Command(ev.Command, ev.Args...)}, nil)
	require.NoError(t, err)
	defer direct.Close()
	each, n := listBytes(t, direct)

	cs, _, _ := mcpInProcess(t, "--code-mode", "--mcp-servers", servers, "--mcp-allow", "everything.*")
	one, m := listBytes(t, cs)
	t.Logf("tools/list of server-everything: %d tools, %d bytes (≈%d tokens at 4 bytes a token); Code Mode: %d tool, %d bytes (≈%d tokens)",
		n, each, each/4, m, one, one/4)
	assert.Equal(t, 1, m)
	assert.Greater(t, n, 10)
}
