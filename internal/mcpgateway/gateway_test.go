package mcpgateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/mcpgateway"
	"github.com/wasmgate/wasmgate/internal/mcpgateway/mcptest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

func TestLoadConfig(t *testing.T) {
	cfg, err := mcpgateway.LoadConfig(writeConfig(t, `{"mcpServers": {
		"github": {"command": "gh-mcp", "args": ["serve"], "env": {"TOKEN": "x"}},
		"remote-docs": {"type": "http", "url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer y"}},
		"other": {"command": "x", "disabled": false, "timeout": 5}
	}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]mcpgateway.ServerConfig{
		"github":      {Command: "gh-mcp", Args: []string{"serve"}, Env: map[string]string{"TOKEN": "x"}},
		"remote-docs": {URL: "https://docs.example/mcp", Headers: map[string]string{"Authorization": "Bearer y"}},
		"other":       {Command: "x"},
	}, cfg.Servers, "other clients' fields are ignored")

	bad := []struct{ name, text, want string }{
		{"not JSON", `{"mcpServers": `, `not a JSON object of the form {"mcpServers"`},
		{"no mcpServers", `{"servers": {}}`, `no "mcpServers" object`},
		{"neither", `{"mcpServers": {"a": {"args": ["x"]}}}`, `server "a": neither "command" nor "url"`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h/mcp"}}}`, `server "a": both "command" and "url": give one`},
		{"headers on a command", `{"mcpServers": {"a": {"command": "x", "headers": {"h": "v"}}}}`, `server "a": "headers" is for a "url" server`},
		{"env on a url", `{"mcpServers": {"a": {"url": "http://h/mcp", "env": {"k": "v"}}}}`, `server "a": "args" and "env" are for a "command" server`},
		{"a relative url", `{"mcpServers": {"a": {"url": "/mcp"}}}`, `server "a": "url" "/mcp": want an absolute http:// or https:// URL`},
		{"sse", `{"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}`, `server "a": "type": "sse" is not a transport the gateway speaks`},
		{"a dot in the name", `{"mcpServers": {"my.server": {"command": "x"}}}`, `server "my.server": a name with "." or "__" cannot be a script's namespace`},
		{"no letters", `{"mcpServers": {"--": {"command": "x"}}}`, `server "--": the name has no letter or digit`},
		{"two names alike", `{"mcpServers": {"my-server": {"command": "x"}, "my_server": {"command": "y"}}}`, `servers "my-server" and "my_server" would both be tools.myServer in a script: rename one`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.text)
			_, err := mcpgateway.LoadConfig(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--mcp-servers "+p+": ")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err = mcpgateway.LoadConfig(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestPolicyPatternsNameConfiguredServers(t *testing.T) {
	cfg := mcpgateway.Config{Servers: map[string]mcpgateway.ServerConfig{"everything": {Command: "x"}}}
	for pattern, want := range map[string]string{
		"everything":   `--mcp-allow "everything": want SERVER.TOOL (a tool's own name) or SERVER.* (every tool of the server)`,
		"everything.":  `--mcp-allow "everything.": want SERVER.TOOL`,
		".echo":        `--mcp-allow ".echo": want SERVER.TOOL`,
		"nothing.echo": `--mcp-allow "nothing.echo": no server "nothing" in --mcp-servers (it has: everything)`,
	} {
		_, err := mcpgateway.Connect(context.Background(), cfg, mcpgateway.Policy{Allow: []string{pattern}})
		require.Error(t, err, pattern)
		assert.Contains(t, err.Error(), want)
	}
	_, err := mcpgateway.Connect(context.Background(), cfg, mcpgateway.Policy{MaxCalls: -1})
	assert.EqualError(t, err, "mcp gateway: a call budget of -1: want 0 (the default, 100) or more")
}

// waitRefresh waits for the gateway's next refresh of a server's tools.
func waitRefresh(t *testing.T, g *mcpgateway.Gateway) {
	t.Helper()
	select {
	case <-mcpgateway.Refreshed(g):
	case <-time.After(time.Minute):
		t.Fatal("the gateway did not list the tools again within a minute of tools/list_changed")
	}
}

// newRuntime is a Runtime with no registry of its own, auditing in memory.
func newRuntime(t *testing.T) (*wasmgate.Runtime, *audit.MemorySink) {
	t.Helper()
	sink := audit.NewMemorySink()
	rt, err := wasmgate.New(context.Background(), wasmgate.WithAuditSink(sink),
		wasmgate.WithRegistry(func(context.Context, sandbox.Engine) (*pipeline.Registry, error) { return pipeline.NewRegistry(), nil }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt, sink
}

func connect(t *testing.T, servers string, p mcpgateway.Policy) *mcpgateway.Gateway {
	t.Helper()
	cfg, err := mcpgateway.LoadConfig(writeConfig(t, `{"mcpServers": {`+servers+`}}`))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g, err := mcpgateway.Connect(ctx, cfg, p)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, g.Close()) })
	return g
}

// TestGatewayCallsTheReferenceServer calls the MCP reference server's tools
// as pipeline actions, over stdio and over streamable HTTP.
func TestGatewayCallsTheReferenceServer(t *testing.T) {
	for _, transport := range []string{"stdio", "streamable HTTP"} {
		t.Run(transport, func(t *testing.T) {
			entry := mcptest.StdioConfig(t)
			if transport != "stdio" {
				entry = `{"url": "` + mcptest.StartHTTP(t) + `"}`
			}
			g := connect(t, `"everything": `+entry, mcpgateway.Policy{
				Allow: []string{"everything.echo", "everything.get-sum", "everything.get-structured-content", "everything.gzip-file-as-resource"},
			})
			byName := map[string]mcpgateway.Tool{}
			for _, tool := range g.Tools() {
				byName[tool.Name] = tool
			}
			require.Contains(t, byName, "echo")
			echo := byName["echo"]
			assert.Equal(t, "everything__echo", echo.Action)
			assert.Equal(t, "Echoes back the input string", echo.Description)
			assert.True(t, echo.Allowed)
			assert.Nil(t, echo.OutputSchema, "echo declares no output schema")
			assert.JSONEq(t, `{"message":{"type":"string","description":"Message to echo"}}`, string(field(t, echo.InputSchema, "properties")))
			assert.NotNil(t, byName["get-structured-content"].OutputSchema)
			assert.False(t, byName["get-env"].Allowed, "outside the policy")

			rt, sink := newRuntime(t)
			require.NoError(t, g.Register(rt))
			m, ok := rt.ActionManifest("everything__get-sum")
			require.True(t, ok)
			assert.Equal(t, "mcp_everything_get_sum", m.ExecutorID)
			assert.Equal(t, "2.0.0", m.Version, "the server's own version")
			assert.Equal(t, int64(30_000), m.Limits.TimeoutMs, "the default call timeout")

			ctx := mcpgateway.WithBudget(context.Background())
			call := func(action, payload string) pipeline.ActionResult {
				res, err := rt.Execute(ctx, pipeline.ActionRequest{Action: action, Payload: json.RawMessage(payload)})
				require.NoError(t, err)
				return res
			}
			res := call("everything__echo", `{"message":"a secret word"}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			assert.JSONEq(t, `{"content":[{"type":"text","text":"Echo: a secret word"}]}`, string(res.Output), "the CallToolResult, as the tool declares no output schema")

			res = call("everything__get-structured-content", `{"location":"Chicago"}`)
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			assert.JSONEq(t, `{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}`, string(res.Output), "its structuredContent")

			res = call("everything__get-sum", `{"a":"2","b":3}`)
			assert.Equal(t, pipeline.StatusBlocked, res.Status)
			assert.Equal(t, []pipeline.ReasonCode{pipeline.InputSchemaInvalid}, res.ReasonCodes, "the tool's input schema, checked before the call")

			res = call("everything__gzip-file-as-resource", `{"data":"ftp://example.com/x"}`)
			assert.Equal(t, pipeline.StatusFailed, res.Status)
			assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorException}, res.ReasonCodes)
			assert.Equal(t, `MCP server "everything", tool "gzip-file-as-resource": Error processing file ftp://example.com/x: Unsupported URL protocol for ftp://example.com/x. Only http, https, and data URLs are supported.`, res.Message)

			res = call("everything__get-env", `{}`)
			assert.Equal(t, pipeline.StatusBlocked, res.Status)
			assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorCapabilityMismatch}, res.ReasonCodes)
			assert.Equal(t, `executor "mcp_everything_get_env" 2.0.0 declares capability MCP_CALL, which action "everything__get-env" does not grant`, res.Message)

			assert.Equal(t, 3, mcpgateway.CallsMade(ctx), "echo, get-structured-content, gzip-file-as-resource reached the server")

			// One attempt and one verdict per call that ran; a verdict
			// alone for a call refused before it; no raw text anywhere.
			var kinds []string
			for _, r := range sink.Records() {
				kinds = append(kinds, r.EventType+" "+r.Action)
				assert.Equal(t, audit.Digest(mustCanonical(t, definitionOf(t, g, r.Action))), r.ModuleDigest, "the module digest is the tool's definition's")
			}
			assert.Equal(t, []string{
				"action_attempt everything__echo", "action_audit everything__echo",
				"action_attempt everything__get-structured-content", "action_audit everything__get-structured-content",
				"action_audit everything__get-sum",
				"action_attempt everything__gzip-file-as-resource", "action_audit everything__gzip-file-as-resource",
				"action_audit everything__get-env",
			}, kinds)
			var log bytes.Buffer
			_, err := sink.WriteTo(&log)
			require.NoError(t, err)
			assert.NotContains(t, log.String(), "secret word")
			assert.NotContains(t, log.String(), "Light rain")
			assert.NotContains(t, log.String(), "Unsupported URL")
		})
	}
}

func field(t *testing.T, raw json.RawMessage, name string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[name]
}

func definitionOf(t *testing.T, g *mcpgateway.Gateway, action string) []byte {
	for _, tool := range g.Tools() {
		if tool.Action == action {
			out := tool.OutputSchema
			if out == nil {
				out = json.RawMessage("null")
			}
			b, err := json.Marshal(map[string]any{"server": tool.Server, "tool": tool.Name, "input_schema": tool.InputSchema, "output_schema": out})
			require.NoError(t, err)
			return b
		}
	}
	t.Fatalf("no tool %s", action)
	return nil
}

func mustCanonical(t *testing.T, b []byte) []byte {
	c, err := audit.Canonicalize(b)
	require.NoError(t, err)
	return c.Bytes
}

func TestTheCallBudgetIsPerScript(t *testing.T) {
	g := connect(t, `"everything": `+mcptest.StdioConfig(t), mcpgateway.Policy{Allow: []string{"everything.*"}, MaxCalls: 2})
	rt, sink := newRuntime(t)
	require.NoError(t, g.Register(rt))
	script := mcpgateway.WithBudget(context.Background())
	var statuses []string
	for range 3 {
		res, err := rt.Execute(script, pipeline.ActionRequest{Action: "everything__echo", Payload: json.RawMessage(`{"message":"m"}`)})
		require.NoError(t, err)
		statuses = append(statuses, string(res.Status)+" "+res.Message)
		if res.Status != pipeline.StatusSuccess {
			assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}, res.ReasonCodes)
		}
	}
	assert.Equal(t, []string{"SUCCESS ", "SUCCESS ",
		`BLOCKED MCP server "everything", tool "echo": not called: the script has made its 2 MCP gateway calls (raise --mcp-max-calls)`}, statuses)
	assert.Equal(t, 2, mcpgateway.CallsMade(script))
	assert.Len(t, sink.Verdicts(), 3, "the refusal is audited")

	next := mcpgateway.WithBudget(context.Background())
	res, err := rt.Execute(next, pipeline.ActionRequest{Action: "everything__echo", Payload: json.RawMessage(`{"message":"m"}`)})
	require.NoError(t, err)
	assert.Equal(t, pipeline.StatusSuccess, res.Status, "the next script has a budget of its own")
}

// TestToolListChangedKeepsTheRegistryCurrent runs an MCP server of the Go
// SDK in the test: server-everything adds tools only for clients that
// offer roots, sampling or elicitation, which the gateway does not.
func TestToolListChangedKeepsTheRegistryCurrent(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1.2.3"}, nil)
	type in struct {
		X int `json:"x"`
	}
	type out struct {
		Y int `json:"y"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "double", Description: "Doubles x"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		return nil, out{a.X * 2}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	g := connect(t, `"calc": {"url": "`+hs.URL+`"}`, mcpgateway.Policy{Allow: []string{"calc.*"}})
	rt, _ := newRuntime(t)
	require.NoError(t, g.Register(rt))
	assert.Equal(t, []string{"calc__double"}, rt.Actions())

	mcp.AddTool(srv, &mcp.Tool{Name: "triple-it", Description: "Triples x"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		return nil, out{a.X * 3}, nil
	})
	waitRefresh(t, g)
	assert.Equal(t, []string{"calc__double", "calc__triple-it"}, rt.Actions())
	res, err := rt.Execute(context.Background(), pipeline.ActionRequest{Action: "calc__triple-it", Payload: json.RawMessage(`{"x":5}`)})
	require.NoError(t, err)
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"y":15}`, string(res.Output))
	m, _ := rt.ActionManifest("calc__triple-it")
	assert.Equal(t, "1.2.3", m.Version)

	srv.RemoveTools("double")
	waitRefresh(t, g)
	assert.Equal(t, []string{"calc__triple-it"}, rt.Actions())
	var actions []string
	for _, tool := range g.Tools() {
		actions = append(actions, tool.Action)
	}
	assert.Equal(t, []string{"calc__triple-it"}, actions)
	ns, name, _ := jstool.ToolPath("calc__triple-it")
	assert.Equal(t, "calc.tripleIt", ns+"."+name)
}
