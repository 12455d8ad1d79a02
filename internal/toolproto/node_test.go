package toolproto

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
)

// nodeTool lays out a tool of runtime "node" whose entry is source.
func nodeTool(t *testing.T, id, manifest, source string) string {
	t.Helper()
	dir := t.TempDir()
	writeTool(t, dir, id, `{"id":"`+id+`","runtime":"node","entry":"index.js"`+manifest+`}`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, id, "index.js"), []byte(source), 0o644))
	return dir
}

// emitJS is what a node tool writes an event with, as the protocol's own
// tools do.
const emitJS = `const emit = (type, payload) => process.stdout.write(JSON.stringify({ type, ts: new Date().toISOString(), toolId: TOOL, payload }) + "\n");
`

// TestServeNodeTool: a tool of runtime "node" runs in the sandbox as node
// would run it (its request on stdin), its own events passed through; one
// audited action whose input digest is the request's bytes and whose
// verdict has the tool's exit status.
func TestServeNodeTool(t *testing.T) {
	request := `{"context":{"toolId":"hello-node","config":{},"workspaceRoot":"/w"},"input":{"name":"Ada"}}`
	s := serve(t, fixtures, "hello-node", request)
	assert.Equal(t, []EventType{EventStarted, EventLog, EventResult}, s.types())
	assert.Equal(t, `{"meta":{}}`, string(s.events[0].Payload), "the tool's own started")
	assert.JSONEq(t, `{"level":"info","message":"greeting Ada"}`, string(s.events[1].Payload))
	assert.JSONEq(t, `{"message":"Hello, Ada!"}`, string(s.terminal.Payload))
	assert.Equal(t, ExitResult, ExitCode(s.terminal))
	require.Len(t, s.records, 1)
	v := s.records[0]
	assert.Equal(t, "SUCCESS", v.Status)
	assert.Equal(t, "hello-node", v.Action)
	assert.Equal(t, "hello_node", v.ExecutorID)
	assert.Equal(t, audit.Digest([]byte(request)), v.InputDigest, "the request's bytes, as the tool read them")
	require.NotNil(t, v.ExitCode)
	assert.Equal(t, 0, *v.ExitCode)
	assert.NotNil(t, v.AttemptHash)

	// Its own error for a request that is not JSON, and its exit status 1.
	s = serve(t, fixtures, "hello-node", `not json`)
	assert.Equal(t, []EventType{EventStarted, EventError}, s.types())
	p, ok := ErrorOf(s.terminal)
	require.True(t, ok)
	assert.Equal(t, "INVALID_REQUEST", p.Code)
	assert.Contains(t, p.Message, "the request is not JSON")
	assert.Equal(t, ExitError, ExitCode(s.terminal))
	require.Len(t, s.records, 1)
	assert.Equal(t, "FAILED", s.records[0].Status)
	assert.Equal(t, 1, *s.records[0].ExitCode)
}

// TestServeNodeToolEndings: what the tool side adds when a node tool does
// not end its own stream.
func TestServeNodeToolEndings(t *testing.T) {
	for _, c := range []struct {
		name, manifest, source, request string
		types                           []EventType
		code, message                   string
		ran                             bool
	}{
		{"a limit stops it", `,"timeoutMs":200`, emitJS + `emit("started", {meta: {}}); for (;;) {}`, `{}`,
			[]EventType{EventStarted, EventError}, "EXECUTOR_TIMEOUT", "the tool ran longer than its timeoutMs of 200 ms", true},
		{"it throws", "", emitJS + `emit("started", {meta: {}}); throw new TypeError("broken tool");`, `{}`,
			[]EventType{EventStarted, EventError}, CodeToolCrash, "the tool exited with status 1 without a result or error event", true},
		{"it writes no event at all", "", `process.exitCode = 0;`, `{}`,
			[]EventType{EventStarted, EventError}, CodeToolCrash, "the tool exited with status 0 without a result or error event", true},
		{"it writes what is not an event", "", emitJS + `emit("started", {meta: {}}); console.log("hello"); emit("result", {});`, `{}`,
			[]EventType{EventStarted, EventError}, CodeRunnerProtocolError, `the tool wrote an invalid event stream: event 2: not a JSON event: "hello"`, true},
		{"its required config is missing", `,"requiredConfig":["apiKey"]`, emitJS + `emit("started", {meta: {}});`, `{"context":{"config":{}}}`,
			[]EventType{EventStarted, EventError}, CodeConfigMissing, `context.config lacks the required key "apiKey"`, false},
		{"it does not bundle", "", `import x from "./missing.js";`, `{}`,
			[]EventType{EventStarted, EventError}, CodeToolInvalid, "entry:", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := nodeTool(t, "n-tool", c.manifest, "const TOOL = \"n-tool\";\n"+c.source)
			s := serve(t, dir, "n-tool", c.request)
			assert.Equal(t, c.types, s.types())
			p, ok := ErrorOf(s.terminal)
			require.True(t, ok)
			assert.Equal(t, c.code, p.Code)
			assert.Contains(t, p.Message, c.message)
			assert.Equal(t, ExitError, ExitCode(s.terminal))
			assert.Equal(t, c.ran, len(s.records) == 1, "audited when it ran: %v", s.records)
		})
	}
}

// TestServeNodeToolStderrAndDigestOnly: a node tool's stderr is the tool
// side's diagnostics; with digest-only results nothing it wrote leaves the
// run but its event types and error code.
func TestServeNodeToolStderrAndDigestOnly(t *testing.T) {
	dir := nodeTool(t, "n-tool", "", `const TOOL = "n-tool";
`+emitJS+`emit("started", {meta: {}});
process.stderr.write("secret diagnostics\n");
emit("log", {level: "info", message: "secret log"});
emit("result", {secret: "value"});`)
	s := serve(t, dir, "n-tool", `{}`)
	assert.Equal(t, []EventType{EventStarted, EventLog, EventResult}, s.types())
	assert.Equal(t, "secret diagnostics\n", s.stderr)

	d := serveWith(t, ServeConfig{ToolsDir: dir, ToolID: "n-tool", Stdin: strings.NewReader(`{}`)}, wg.WithResults(pipeline.ResultsDigestOnly))
	assert.Equal(t, []EventType{EventStarted, EventResult}, d.types(), "no log events")
	assert.Equal(t, `{}`, string(d.terminal.Payload))
	assert.Empty(t, d.stderr, "no diagnostics of the tool's")
	raw, err := json.Marshal(d.events)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "secret")
}

// TestNodeToolArgvIsItsEntry: a node tool's process.argv[1] is its entry in
// the program's virtual tree (/app), not the host path of the tools
// directory.
func TestNodeToolArgvIsItsEntry(t *testing.T) {
	dir := nodeTool(t, "argv-tool", "", `const TOOL = "argv-tool";
`+emitJS+`emit("started", { meta: {} });
emit("result", { argv1: process.argv[1] });
`)
	s := serve(t, dir, "argv-tool", `{"context":{"toolId":"argv-tool","config":{}},"input":{}}`)
	require.Equal(t, EventResult, s.terminal.Type, "terminal: %s, stderr: %s", s.terminal.Payload, s.stderr)
	assert.JSONEq(t, `{"argv1":"/app/index.js"}`, string(s.terminal.Payload))
}
