package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/mcpgateway/mcptest"
)

// The MCP gateway: toolscripts calling the tools of the MCP reference
// server (@modelcontextprotocol/server-everything, pinned, from make
// testdata-js), as the toolscript text's Gateway Communication, Output
// Handling and Error Handling scenarios say.

// mcpServers writes an mcpServers file of the given entries.
func mcpServers(t *testing.T, entries string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"mcpServers": {`+entries+`}}`), 0o644))
	return p
}

// runMCPScript runs a script with --mcp-servers and an audit log, and
// returns what it printed and the audit log's text ("" when none was
// written).
func runMCPScript(t *testing.T, servers, file string, flags ...string) (runResult, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := wasmgate(t, "", append([]string{"script", scriptFile(file), "--mcp-servers", servers, "--audit", log}, flags...)...)
	text, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return r, ""
	}
	require.NoError(t, err)
	v := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, 0, v.code, "the audit log verifies: %s", v.stderr)
	return r, string(text)
}

// records lists the audit log's records as "EVENT ACTION STATUS CODES".
func records(t *testing.T, log string) []string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(log), 0o644))
	var out []string
	for _, r := range allRecords(t, p) {
		line := r.EventType + " " + r.Action
		if r.Status != "" {
			line += " " + r.Status + " " + strings.Join(r.ReasonCodes, ",")
		}
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

// TestScriptCallsMCPServers is Gateway Communication's "Tool invocation
// with camelCase syntax", "Multiple servers with camelCase namespacing",
// "Response parsing" and "Multiple tool calls", and Output Handling's
// three scenarios, over stdio and over streamable HTTP.
func TestScriptCallsMCPServers(t *testing.T) {
	stdio := mcptest.StdioConfig(t)
	http := `{"url": "` + mcptest.StartHTTP(t) + `"}`
	for _, tt := range []struct{ name, everything, second string }{
		{"stdio", stdio, http},
		{"streamable HTTP", http, stdio},
	} {
		t.Run(tt.name, func(t *testing.T) {
			servers := mcpServers(t, `"everything": `+tt.everything+`, "second": `+tt.second)
			r, log := runMCPScript(t, servers, "mcp_calls.ts", "--mcp-allow", "everything.*", "--mcp-allow", "second.get-sum")
			require.Equal(t, exitSuccess, r.code, r.stderr)
			assert.Equal(t, "Echo: a private note\n"+
				`{"echoed":{"content":[{"text":"Echo: a private note","type":"text"}]},`+
				`"sum":{"content":[{"text":"The sum of 2 and 3 is 5.","type":"text"}]},"celsius":36}`+"\n", r.stdout,
				"console.log, then the result: a CallToolResult where the tool declares no outputSchema, else its structuredContent")
			assert.Equal(t, "humidity 82\nwasmgate script: 3 MCP gateway calls (3 SUCCESS, 0 FAILED, 0 BLOCKED)\n", r.stderr)
			assert.Equal(t, []string{
				"action_attempt everything__echo", "action_audit everything__echo SUCCESS",
				"action_attempt second__get-sum", "action_audit second__get-sum SUCCESS",
				"action_attempt everything__get-structured-content", "action_audit everything__get-structured-content SUCCESS",
			}, records(t, log), "one attempt and one verdict per call, in order")
			for _, raw := range []string{"private note", "The sum of", "Light rain", "Chicago"} {
				assert.NotContains(t, log, raw, "the audit holds digests, never the data")
			}
			assert.Contains(t, log, `"executor_id":"mcp_everything_echo"`, "the executor names server and tool")
		})
	}
}

// TestScriptMCPTypeErrorRunsNothing is Error Handling's "Type error" for a
// server tool: its inputSchema types its params.
func TestScriptMCPTypeErrorRunsNothing(t *testing.T) {
	servers := mcpServers(t, `"everything": `+mcptest.StdioConfig(t))
	r, log := runMCPScript(t, servers, "mcp_type_error.ts", "--mcp-allow", "everything.*")
	assert.Equal(t, exitUsage, r.code)
	assert.Empty(t, r.stdout)
	assert.Equal(t, scriptFile("mcp_type_error.ts")+":4:48: error TS2322: Type 'string' is not assignable to type 'number'.\n"+
		"wasmgate script: 1 type error in "+scriptFile("mcp_type_error.ts")+": nothing was run (--no-check runs it unchecked)\n", r.stderr)
	assert.Empty(t, log, "nothing was called: no audit log")
}

// TestScriptMCPToolOutsideThePolicy: a call to a tool --mcp-allow does not
// name throws, and is audited BLOCKED without being sent.
func TestScriptMCPToolOutsideThePolicy(t *testing.T) {
	servers := mcpServers(t, `"everything": `+mcptest.StdioConfig(t))
	r, log := runMCPScript(t, servers, "mcp_not_allowed.ts", "--mcp-allow", "everything.echo")
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, `{"name":"ToolCallError","status":"BLOCKED","reasonCodes":["EXECUTOR_CAPABILITY_MISMATCH"]}`+"\n", r.stdout)
	assert.Equal(t, `tools.everything.getEnv failed: BLOCKED [EXECUTOR_CAPABILITY_MISMATCH]: executor "mcp_everything_get_env" 2.0.0 declares capability MCP_CALL, which action "everything__get-env" does not grant`+"\n"+
		"wasmgate script: 1 MCP gateway call (0 SUCCESS, 0 FAILED, 1 BLOCKED)\n", r.stderr)
	assert.Equal(t, []string{"action_audit everything__get-env BLOCKED EXECUTOR_CAPABILITY_MISMATCH"}, records(t, log),
		"refused before anything ran: a verdict, no attempt")
}

// TestScriptMCPErrorPropagation is Gateway Communication's "Error
// propagation" and Error Handling's "Runtime error": the tool's isError
// result throws an Error naming the server, the tool and the message.
func TestScriptMCPErrorPropagation(t *testing.T) {
	servers := mcpServers(t, `"everything": `+mcptest.StdioConfig(t))
	r, log := runMCPScript(t, servers, "mcp_tool_error.ts", "--mcp-allow", "everything.*")
	assert.Equal(t, exitFailed, r.code)
	assert.Equal(t, "calling\n", r.stdout)
	want := `wasmgate script: ToolCallError: tools.everything.gzipFileAsResource failed: FAILED [EXECUTOR_EXCEPTION]: ` +
		`MCP server "everything", tool "gzip-file-as-resource": Error processing file ftp://example.com/readme: Unsupported URL protocol for ftp://example.com/readme. Only http, https, and data URLs are supported.` + "\n" +
		"    at tools.everything.gzipFileAsResource (mcp_tool_error.ts:"
	assert.True(t, strings.HasPrefix(r.stderr, want), "stderr: %s", r.stderr)
	assert.True(t, strings.HasSuffix(r.stderr, "\nwasmgate script: 1 MCP gateway call (0 SUCCESS, 1 FAILED, 0 BLOCKED)\n"), r.stderr)
	assert.Equal(t, []string{"action_attempt everything__gzip-file-as-resource", "action_audit everything__gzip-file-as-resource FAILED EXECUTOR_EXCEPTION"}, records(t, log))
	assert.NotContains(t, log, "Unsupported URL", "the tool's message is the script's, not the audit's")
}

func TestScriptMCPCallBudget(t *testing.T) {
	servers := mcpServers(t, `"everything": `+mcptest.StdioConfig(t))
	r, log := runMCPScript(t, servers, "mcp_budget.ts", "--mcp-allow", "everything.echo", "--mcp-max-calls", "2")
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, `["one","two","BLOCKED LIMIT_EXCEEDED,FUEL_EXHAUSTED"]`+"\n", r.stdout)
	assert.Equal(t, "wasmgate script: 3 MCP gateway calls (2 SUCCESS, 0 FAILED, 1 BLOCKED)\n", r.stderr)
	assert.Equal(t, []string{
		"action_attempt everything__echo", "action_audit everything__echo SUCCESS",
		"action_attempt everything__echo", "action_audit everything__echo SUCCESS",
		"action_attempt everything__echo", "action_audit everything__echo BLOCKED LIMIT_EXCEEDED,FUEL_EXHAUSTED",
	}, records(t, log))
}

func TestScriptMCPUsageErrors(t *testing.T) {
	good := mcpServers(t, `"everything": `+mcptest.StdioConfig(t))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"allow without servers", []string{"--mcp-allow", "everything.echo"}, "wasmgate script: --mcp-allow needs --mcp-servers FILE: the servers whose tools it allows\n"},
		{"a pattern of no server", []string{"--mcp-servers", good, "--mcp-allow", "github.*"}, `wasmgate script: --mcp-allow "github.*": no server "github" in --mcp-servers (it has: everything): nothing was run` + "\n"},
		{"no budget", []string{"--mcp-servers", good, "--mcp-max-calls", "0"}, "wasmgate script: --mcp-max-calls 0: want 1 or more\n"},
		{"a missing file", []string{"--mcp-servers", "missing.json"}, "wasmgate script: --mcp-servers: open missing.json: no such file or directory\n"},
		{"a server that does not start", []string{"--mcp-servers", mcpServers(t, `"broken": {"command": "/nonexistent/mcp-server"}`)},
			`wasmgate script: MCP server "broken" (command /nonexistent/mcp-server): cannot connect: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"script", scriptFile("mcp_calls.ts")}, tt.args...)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Empty(t, r.stdout)
			assert.True(t, strings.HasPrefix(r.stderr, tt.want), "stderr: %s", r.stderr)
		})
	}
}

// TestTypesDeclaresMCPTools: wasmgate types --mcp-servers writes the server
// tools' declarations, typed from their schemas.
func TestTypesDeclaresMCPTools(t *testing.T) {
	out := t.TempDir()
	servers := mcpServers(t, `"everything": `+mcptest.StdioConfig(t))
	r := wasmgate(t, "", "types", "--mcp-servers", servers, "--out", out)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	decl, err := os.ReadFile(filepath.Join(out, "toolscript.d.ts"))
	require.NoError(t, err)
	for _, want := range []string{
		"    readonly everything: {\n",
		"      getSum(params: {\n        /** First number */\n        a: number;\n",
		`        location: "New York" | "Chicago" | "Los Angeles";`,
		"       * Action everything__get-structured-content.\n",
	} {
		assert.Contains(t, string(decl), want)
	}
}
