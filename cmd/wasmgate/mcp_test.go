package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// mcpConnect starts `wasmgate mcp args...` and connects the Go SDK's
// client to it over stdio, as an MCP host starts a server.
func mcpConnect(t *testing.T, args ...string) (*sdk.ClientSession, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())
	t.Cleanup(func() { cs.Close() })
	return cs, &stderr
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func callText(res *sdk.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); ok {
		return tc.Text
	}
	return ""
}

// The registry's actions over stdio, against the built binary; every call
// is audited to --audit, and the log verifies.
func TestMCPStdio(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	cs, stderr := mcpConnect(t, "--config", td("registry.json"), "--audit", logPath)
	assert.Equal(t, []string{"math.sort", "math.sum", "text.stats", "text.upper"}, toolNames(t, cs), stderr.String())

	ctx := context.Background()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "math.sum", Arguments: map[string]any{"numbers": []int{1, 2, 39}}})
	require.NoError(t, err)
	assert.False(t, res.IsError, callText(res))
	assert.Equal(t, `{"sum":42}`, callText(res))
	assert.Equal(t, map[string]any{"sum": 42.0}, res.StructuredContent)

	// A limit hit: math.sum's manifest admits 1000 list items.
	many := make([]int, 1001)
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "math.sum", Arguments: map[string]any{"numbers": many}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "BLOCKED LIMIT_EXCEEDED, LIST_TOO_LONG: payload has a list of 1001 items; max_list_items is 1000", callText(res))

	require.NoError(t, cs.Close())
	rep := verifyLog(t, logPath)
	assert.EqualValues(t, 3, rep.Records, "an attempt and a verdict, then a verdict (the limit refuses before the attempt)")
}

// The tools of a tool store, and a package added while the server runs is
// announced with tools/list_changed.
func TestMCPToolStore(t *testing.T) {
	store := toolStore(t,
		storePackage{"@acme/text-tools", "2.1.0", acmeTools, `{"name":"@acme/text-tools","version":"2.1.0"}`},
		// A CommonJS package's tools, properties of module.exports.
		storePackage{"cjs-tools", "1.0.0", `export default { hello: { execute: () => ({ hi: true }) }, version: 3 };`, `{"name":"cjs-tools","version":"1.0.0"}`},
		// A package that is one tool.
		storePackage{"one-tool", "0.1.0", `export default { execute: ({ n }) => ({ twice: 2 * n }) };`, `{"name":"one-tool","version":"0.1.0"}`})
	changed, onChange := listChanged()
	cmd := exec.Command(binary, "mcp", "--tools-dir", store)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: onChange,
	}).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, stderr.String())
	t.Cleanup(func() { cs.Close() })
	// The catalog loads in the background: the list grows to this.
	waitTools(t, cs, changed, []string{"acme_text-tools_boom", "acme_text-tools_broken", "acme_text-tools_needsenv", "acme_text-tools_shout", "acme_text-tools_withkey",
		"cjs-tools_hello", "one-tool"}, stderr.String)
	waitLog(t, stderr.String, "mcp: tool store loaded")
	select {
	case <-changed: // what the last tools' loading announced
	default:
	}

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "acme_text-tools_shout", Arguments: map[string]any{"s": "hi"}})
	require.NoError(t, err)
	assert.Equal(t, `{"s":"HI"}`, callText(res))
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "cjs-tools_hello", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, `{"hi":true}`, callText(res))
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "one-tool", Arguments: map[string]any{"n": 21}})
	require.NoError(t, err)
	assert.Equal(t, `{"twice":42}`, callText(res))
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "acme_text-tools_boom", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(callText(res), "FAILED EXECUTOR_EXCEPTION: Error: boom"), callText(res))

	// Another package appears in the store, as `wasmgate tools add` leaves
	// one.
	other := storeWith(t, "spinner", "1.0.0", spinner, `{"name":"spinner","version":"1.0.0","wasmgate":{"limits":{"timeout_ms":200,"fuel":4000000000000000000}}}`)
	require.NoError(t, os.Rename(filepath.Join(other, "spinner@1.0.0"), filepath.Join(store, "spinner@1.0.0")))
	awaitListChanged(t, changed, stderr.String)
	waitTools(t, cs, changed, []string{"acme_text-tools_boom", "acme_text-tools_broken", "acme_text-tools_needsenv", "acme_text-tools_shout", "acme_text-tools_withkey",
		"cjs-tools_hello", "one-tool", "spinner_spin"}, stderr.String)
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "spinner_spin", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.True(t, strings.HasPrefix(callText(res), "BLOCKED EXECUTOR_TIMEOUT"), callText(res))
}

// bearer adds an API key to every request.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// /mcp on serve: behind the API key, the registry's tools over streamable
// HTTP, audited to serve's log.
func TestServeMCP(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startServe(t, []string{"EXECUTOR_API_KEY=sekret"}, "--config", td("registry.json"), "--audit", logPath)

	resp, err := http.Post(s.url+"/mcp", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "no key, no MCP")
	assert.Equal(t, `Bearer realm="wasmgate"`, resp.Header.Get("WWW-Authenticate"))

	ctx := context.Background()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "wasmgate-test", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: s.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{"sekret", http.DefaultTransport}}}, nil)
	require.NoError(t, err, s.logText())
	t.Cleanup(func() { cs.Close() })
	assert.Equal(t, []string{"math.sort", "math.sum", "text.stats", "text.upper"}, toolNames(t, cs))
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "text.upper", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, callText(res))
	assert.Equal(t, `{"text":"HI"}`, callText(res))
	require.NoError(t, cs.Close())

	rep := verifyLog(t, logPath)
	assert.EqualValues(t, 2, rep.Records)
}

// An AI SDK tool with no manifest of its own is listed with the
// description and the input schema it declares itself (zod, converted to
// JSON Schema inside the sandbox when it was loaded), and the pipeline
// enforces that schema.
func TestMCPListsAnAISDKToolsOwnSchema(t *testing.T) {
	// The fixture, beside its node_modules, with a manifest that says who
	// it is and nothing of its schemas.
	src, err := filepath.Abs(filepath.Join("..", "..", "jstool", "testdata", "tools", "ai"))
	require.NoError(t, err)
	dir := t.TempDir()
	code, err := os.ReadFile(filepath.Join(src, "weather.ts"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weather.ts"), code, 0o644))
	// A copy, not a link to the fixture's node_modules: a link out of the
	// tool's tree is refused like any import outside it.
	copyTree(t, filepath.Join(src, "node_modules"), filepath.Join(dir, "node_modules"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "weather.manifest.json"), []byte(`{"executor_id":"weather","version":"1.0.0","capabilities":[]}`), 0o644))
	config := filepath.Join(dir, "registry.json")
	require.NoError(t, os.WriteFile(config, []byte(`{
  "executors": {"weather": {"js": "weather.ts", "tool": "weather"}},
  "actions": {"weather.get": {"executor": "weather", "version": "^1.0.0"}}
}`), 0o644))
	cs, stderr := mcpConnect(t, "--config", config)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err, stderr.String())
	require.Len(t, res.Tools, 1)
	tl := res.Tools[0]
	assert.Equal(t, "weather.get", tl.Name)
	assert.Equal(t, "Get the weather in a location", tl.Description)
	schema, err := json.Marshal(tl.InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",
		"properties":{"location":{"type":"string","description":"The location"}},"required":["location"]}`, string(schema))

	call, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "weather.get", Arguments: map[string]any{"location": 7}})
	require.NoError(t, err)
	assert.True(t, call.IsError)
	assert.True(t, strings.HasPrefix(callText(call), "BLOCKED INPUT_SCHEMA_INVALID: payload does not match the input schema at /location"), callText(call))
	call, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "weather.get", Arguments: map[string]any{"location": "Paris"}})
	require.NoError(t, err)
	assert.Equal(t, `{"location":"Paris","temperature":65}`, callText(call))
}

// verifyLog checks the audit log at path as `wasmgate audit verify` does
// and returns what it found.
func verifyLog(t *testing.T, path string) audit.VerifyReport {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, err := audit.Verify(f)
	require.NoError(t, err)
	return rep
}
