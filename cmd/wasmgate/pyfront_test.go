package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/enginetest"
)

// The fronts over a registry with a Python executor class
// (testdata/python.json: text.words, the word-count tool's WordCount, which
// declares its title, description and schemas as class attributes, beside
// the Wasm text.upper). Every test uses the one code tree, so that its
// snapshot is made once and cached.

// pythonRegistry is the registry file.
var pythonRegistry = td("python.json")

// wordCountInput and wordCountOutput are the schemas WordCount declares.
const (
	wordCountInput = `{"type":"object","properties":{"text":{"type":"string","description":"The text to count"}},
		"required":["text"],"additionalProperties":false}`
	wordCountOutput = `{"type":"object","properties":{"words":{"type":"integer"},"longest":{"type":"string"}},
		"required":["words","longest"]}`
)

// TestPythonServe: POST /execute-tool runs a Python action, and
// the Python executor by its id; the class's input_schema refuses params
// before anything runs; what it raises is TOOL_EXECUTION_ERROR; /mcp on
// serve lists the action with the class's title, description and schemas.
func TestPythonServe(t *testing.T) {
	t.Parallel()
	const key = "py-key"
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startServe(t, []string{"EXECUTOR_API_KEY=" + key}, "--config", pythonRegistry, "--audit", logPath)
	c := newProtocolClient(s.url, key)

	r, tr := c.execute(t, "/execute-tool", call("text.words", "", "count", `{"text":"Hello there, wide world"}`))
	requireSuccess(t, r, tr, `{"words":4,"longest":"Hello"}`)
	require.NotNil(t, tr.Wasmgate)
	assert.Equal(t, "text.words", tr.Wasmgate.Action)
	assert.Equal(t, "SUCCESS", tr.Wasmgate.Status)

	r, tr = c.execute(t, "/execute-tool", call("word_count", "", "count", `{"text":"one"}`))
	requireSuccess(t, r, tr, `{"words":1,"longest":"one"}`)

	r, tr = c.execute(t, "/execute-tool", call("text.words", "", "count", `{"txt":"one"}`))
	requireToolError(t, r, tr, "INVALID_REQUEST", "payload does not match the input schema at the root: missing property 'text' (INPUT_SCHEMA_INVALID)")
	assert.Equal(t, []string{"INPUT_SCHEMA_INVALID"}, tr.Wasmgate.ReasonCodes)

	r, tr = c.execute(t, "/execute-tool", call("text.words", "", "count", `{"text":"--"}`))
	requireToolError(t, r, tr, "TOOL_EXECUTION_ERROR", "ValueError: no words to count")
	assert.Equal(t, "FAILED", tr.Wasmgate.Status)

	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{key, http.DefaultTransport}}}, nil)
	require.NoError(t, err, s.logText())
	t.Cleanup(func() { cs.Close() })
	assertWordCountListed(t, cs)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "text.words", Arguments: map[string]any{"text": "a bb ccc"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, callText(res))
	assert.Equal(t, map[string]any{"words": 3.0, "longest": "ccc"}, res.StructuredContent)
	require.NoError(t, cs.Close())

	// Five calls over HTTP and MCP, one refused before it ran: an attempt
	// and a verdict for each of the others.
	assert.EqualValues(t, 9, verifyLog(t, logPath).Records)
}

// TestPythonMCP: `wasmgate mcp --config` lists a Python action
// with what its class declares and calls it; what it raises is an error
// result with its type and message.
func TestPythonMCP(t *testing.T) {
	t.Parallel()
	cs, stderr := mcpConnect(t, "--config", pythonRegistry)
	assert.Equal(t, []string{"text.upper", "text.words"}, toolNames(t, cs), stderr.String())
	assertWordCountListed(t, cs)

	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "text.words", Arguments: map[string]any{"text": "It's a small world"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, callText(res))
	assert.Equal(t, `{"longest":"small","words":4}`, callText(res))

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "text.words", Arguments: map[string]any{"text": "?"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "FAILED EXECUTOR_EXCEPTION: ValueError: no words to count", callText(res))

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "text.words", Arguments: map[string]any{"text": 7}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(callText(res), "BLOCKED INPUT_SCHEMA_INVALID: payload does not match the input schema at /text"), callText(res))
}

// assertWordCountListed checks text.words as tools/list gives it: the
// class's title, description, input and output schemas.
func assertWordCountListed(t *testing.T, cs *sdk.ClientSession) {
	t.Helper()
	list, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var words *sdk.Tool
	for _, tl := range list.Tools {
		if tl.Name == "text.words" {
			words = tl
		}
	}
	require.NotNil(t, words, "text.words is listed")
	assert.Equal(t, "Word count", words.Title)
	assert.Equal(t, "Counts the words of a text and finds the longest.", words.Description)
	in, err := json.Marshal(words.InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, wordCountInput, string(in))
	out, err := json.Marshal(words.OutputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, wordCountOutput, string(out))
}

// TestReplayAPythonExecutor: a corpus replayed against a Python executor,
// given by --py (with --py-path and --py-class) and by --config, agrees
// across runs and engines and with the audit log of the runs it replays:
// same status, output digest, fuel and module digest (the code tree's).
// An executor class is given the request's trace_id and ts_utc, so the
// corpus carries those of the audited runs.
func TestReplayAPythonExecutor(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "toolproto", "tools", "word-count")
	py := []string{"--py", filepath.Join(dir, "count.py"), "--py-path", filepath.Join(dir, "site"), "--py-class", "WordCount"}
	payloads := []string{`{"text":"the quick brown fox"}`, `{"text":"!!"}`, `{"text":7}`}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, p := range payloads {
		r := wasmgate(t, "", append([]string{"run", "--audit", log, "--input", p}, py...)...)
		require.NotEqual(t, exitInternal, r.code, r.stderr)
	}
	records := readRecords(t, log)
	require.Len(t, records, len(payloads))
	var lines []string
	for i, p := range payloads {
		lines = append(lines, `{"payload":`+p+`,"trace_id":"`+records[i].TraceID+`","ts_utc":"`+records[i].TsUTC+`"}`)
	}
	engines := strings.Join(compiledEngines(), ",")

	r := wasmgate(t, "", append([]string{"replay", "--corpus", corpusFile(t, lines...), "--audit", log, "--json", "--engines", engines}, py...)...)
	require.Equal(t, exitSuccess, r.code, "stderr: %s", r.stderr)
	rep := parseReplay(t, r)
	assert.Equal(t, 3*3*len(compiledEngines()), rep.Summary.Executions)
	assert.Equal(t, 3, rep.Summary.Agreeing)
	assert.Zero(t, rep.Summary.Divergent)
	require.NotNil(t, rep.Summary.Audit)
	assert.Equal(t, 3, rep.Summary.Audit.Matched)
	assert.Empty(t, rep.Divergences)
	var got []string
	for _, q := range rep.Requests {
		got = append(got, q.Action+" "+q.Status+" "+strings.Join(q.ReasonCodes, ","))
	}
	assert.Equal(t, []string{"word_count SUCCESS ", "word_count FAILED EXECUTOR_EXCEPTION", "word_count BLOCKED INPUT_SCHEMA_INVALID"}, got)
	assert.Equal(t, digestJSON(t, `{"words":4,"longest":"quick"}`), *rep.Requests[0].OutputDigest)
	for i, q := range rep.Requests {
		assert.Equal(t, records[i].ModuleDigest, q.ModuleDigest)
		assert.Equal(t, records[i].FuelUsed, q.FuelUsed)
	}

	// The same executor from a registry: the same module digest and fuel.
	corpus := corpusFile(t, `{"action":"text.words",`+strings.TrimPrefix(lines[0], "{"), `{"action":"text.upper","payload":{"text":"abc"}}`)
	r = wasmgate(t, "", "replay", "--config", pythonRegistry, "--corpus", corpus, "--runs", "2", "--json", "--engines", engines)
	require.Equal(t, exitSuccess, r.code, "stderr: %s", r.stderr)
	reg := parseReplay(t, r)
	assert.Equal(t, 2, reg.Summary.Agreeing)
	assert.Zero(t, reg.Summary.Divergent)
	assert.Equal(t, rep.Requests[0].ModuleDigest, reg.Requests[0].ModuleDigest)
	assert.Equal(t, rep.Requests[0].FuelUsed, reg.Requests[0].FuelUsed)
	assert.Equal(t, rep.Requests[0].OutputDigest, reg.Requests[0].OutputDigest)
}

// compiledEngines are the engines a Python executor's replay compares:
// those the tests of how CPython runs use (enginetest.JSEngines), the
// compiled ones. wazero's interpreter takes some 45 s to start CPython
// the first time (its snapshot is then cached), on a quiet machine.
func compiledEngines() []string {
	var names []string
	for _, e := range enginetest.JSEngines() {
		names = append(names, string(e))
	}
	return names
}
