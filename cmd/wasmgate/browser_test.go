package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// browserPatience bounds every wait on a condition in these tests: far
// longer than the condition takes on any machine.
const browserPatience = time.Minute

// mcpRefusal is a JSON-RPC error as /mcp and `wasmgate mcp` answer what
// they refuse: id null.
type mcpRefusal struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func requireMCPRefusal(t *testing.T, body []byte, code int, msg string) {
	t.Helper()
	var r mcpRefusal
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	assert.Equal(t, "null", string(r.ID), "%s", body)
	require.NotNil(t, r.Error, "%s", body)
	assert.Equal(t, code, r.Error.Code)
	assert.Equal(t, msg, r.Error.Message)
}

// mcpHeaders are what a streamable HTTP client sends with a POST.
var mcpHeaders = []string{"Accept", "application/json, text/event-stream"}

// sumRegistry is a registry of math.sum alone: what these tests call. (The
// whole of testdata/registry.json holds a 3 MB Go guest, whose first
// compilation in a race-detector build can outlast the wait for serve to
// listen.)
func sumRegistry(t *testing.T) string {
	t.Helper()
	wasm, err := filepath.Abs(td("sum.wasm"))
	require.NoError(t, err)
	config := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`{
  "executors": {"sum": {"wasm": %q}},
  "actions": {"math.sum": {"executor": "sum", "version": ">=1.0.0 <2.0.0", "capabilities": ["MATH"]}}
}`, wasm)), 0o644))
	return config
}

func mcpInitialize(id int, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, id, version)
}

const forbiddenWithoutKey = `this server has no API key, so it serves no web page: origin "https://evil.example" is refused, as any web site the user visits could otherwise run tools here; ` +
	"set EXECUTOR_API_KEY to require a key, or list the page's origin with --cors-origin"

// Issue 23 (browsers, item 6) against `wasmgate serve` at its defaults but
// for the flags under test: no API key, --cors-origin naming one page.
// A web site's page can neither POST a "simple" text/plain call nor call
// at all; the listed page is served; /mcp validates Origin, bounds bodies
// by --max-body-bytes, refuses batches under 2025-06-18 and caps sessions.
func TestServeRefusesWebPagesWithoutAKey(t *testing.T) {
	url := startServeInProcess(t, "--config", sumRegistry(t), "--tools-dir", t.TempDir(),
		"--cors-origin", "https://app.example", "--max-body-bytes", "2048",
		"--mcp-max-sessions", "3", "--mcp-idle-timeout", "1h")
	c := newProtocolClient(url, "")
	sum := call("math.sum", "", "math.sum", `{"numbers":[1,2]}`)

	t.Run("text/plain POST", func(t *testing.T) {
		r := c.do(t, http.MethodPost, "/execute-tool", sum, "Content-Type", "text/plain")
		requireRefusal(t, r, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE",
			"Content-Type text/plain is not accepted; send the JSON body with Content-Type: application/json")
	})
	t.Run("a web site's page", func(t *testing.T) {
		for _, path := range []string{"/execute-tool", "/health", "/info"} {
			method, body := http.MethodGet, ""
			if path == "/execute-tool" {
				method, body = http.MethodPost, sum
			}
			r := c.do(t, method, path, body, "Origin", "https://evil.example")
			requireRefusal(t, r, http.StatusForbidden, "FORBIDDEN", forbiddenWithoutKey)
		}
		pre := c.do(t, http.MethodOptions, "/execute-tool", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
		assert.Equal(t, http.StatusOK, pre.status, "a preflight is answered as the protocol says")
		assertProtocolHeaders(t, pre)
	})
	t.Run("the listed page", func(t *testing.T) {
		r, tr := c.execute(t, "/execute-tool", sum, "Origin", "https://app.example")
		requireSuccess(t, r, tr, `{"sum":3}`)
		assertProtocolHeaders(t, r)
	})
	t.Run("a program", func(t *testing.T) {
		r, tr := c.execute(t, "/execute-tool", sum)
		requireSuccess(t, r, tr, `{"sum":3}`)
	})

	t.Run("/mcp: a web site's page", func(t *testing.T) {
		r := c.do(t, http.MethodPost, "/mcp", mcpInitialize(1, "2025-06-18"), append(mcpHeaders, "Origin", "https://evil.example")...)
		assert.Equal(t, http.StatusForbidden, r.status)
		assert.Empty(t, r.header.Get("Mcp-Session-Id"))
		requireMCPRefusal(t, r.body, -32000, `origin "https://evil.example" may not use this MCP server: web pages are served only from the origins the server lists `+
			"(wasmgate serve --cors-origin), or from this machine (localhost, 127.0.0.1, [::1]) on a connection to a loopback address")
	})
	var session string
	t.Run("/mcp: the listed page", func(t *testing.T) {
		r := c.do(t, http.MethodPost, "/mcp", mcpInitialize(1, "2025-06-18"), append(mcpHeaders, "Origin", "https://app.example")...)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		session = r.header.Get("Mcp-Session-Id")
		require.NotEmpty(t, session)
	})
	t.Run("/mcp: a body over --max-body-bytes", func(t *testing.T) {
		big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"math.sum","arguments":{"numbers":[` + strings.Repeat("1,", 2048) + `1]}}}`
		r := c.do(t, http.MethodPost, "/mcp", big, append(mcpHeaders, "Mcp-Session-Id", session)...)
		assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		requireMCPRefusal(t, r.body, -32600, "request body exceeds 2048 bytes, the server's limit (wasmgate serve --max-body-bytes); send a smaller message")
	})
	t.Run("/mcp: a batch under 2025-06-18", func(t *testing.T) {
		batch := `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`
		r := c.do(t, http.MethodPost, "/mcp", batch, append(mcpHeaders, "Mcp-Session-Id", session)...)
		assert.Equal(t, http.StatusBadRequest, r.status)
		requireMCPRefusal(t, r.body, -32600, "invalid request: JSON-RPC batches are not part of MCP after protocol version 2025-03-26, "+
			"and this session has none (it asked for 2025-06-18); send each message on its own")
	})
	t.Run("/mcp: sessions over --mcp-max-sessions", func(t *testing.T) {
		for i := range 2 {
			r := c.do(t, http.MethodPost, "/mcp", mcpInitialize(10+i, "2025-06-18"), mcpHeaders...)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		}
		r := c.do(t, http.MethodPost, "/mcp", mcpInitialize(20, "2025-06-18"), mcpHeaders...)
		assert.Equal(t, http.StatusServiceUnavailable, r.status)
		assert.Equal(t, "60", r.header.Get("Retry-After"))
		requireMCPRefusal(t, r.body, -32000, "this MCP server has 3 sessions open, as many as it may (wasmgate serve --mcp-max-sessions); retry later: "+
			"a session ends when its client ends it (DELETE) or after 1h0m0s unused")
	})
}

// The attack as written, scaled down: abandoned initialize calls. A
// session nobody uses ends after --mcp-idle-timeout and frees its place.
func TestServeMCPIdleSessionsEnd(t *testing.T) {
	url := startServeInProcess(t, "--config", sumRegistry(t), "--tools-dir", t.TempDir(),
		"--mcp-max-sessions", "1", "--mcp-idle-timeout", "200ms")
	c := newProtocolClient(url, "")
	r := c.do(t, http.MethodPost, "/mcp", mcpInitialize(1, "2025-06-18"), mcpHeaders...)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	abandoned := r.header.Get("Mcp-Session-Id")
	r = c.do(t, http.MethodPost, "/mcp", mcpInitialize(2, "2025-06-18"), mcpHeaders...)
	require.Equal(t, http.StatusServiceUnavailable, r.status, "the one session is taken: %s", r.body)
	assert.Equal(t, "1", r.header.Get("Retry-After"))

	// Asking does not use the abandoned session: a refused initialize
	// opens none.
	deadline := time.Now().Add(browserPatience)
	for r.status == http.StatusServiceUnavailable && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		r = c.do(t, http.MethodPost, "/mcp", mcpInitialize(3, "2025-06-18"), mcpHeaders...)
	}
	require.Equal(t, http.StatusOK, r.status, "the abandoned session ended and freed its place: %s", r.body)
	r = c.do(t, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":4,"method":"ping"}`, append(mcpHeaders, "Mcp-Session-Id", abandoned)...)
	assert.Equal(t, http.StatusNotFound, r.status, "the abandoned session is gone: %s", r.body)
}

// With a key, web pages are served as the protocol's text says, whatever
// their origin, with the text's CORS headers; /mcp still validates Origin
// as MCP requires.
func TestServeWithAKeyServesWebPages(t *testing.T) {
	t.Setenv("EXECUTOR_API_KEY", "sekret")
	url := startServeInProcess(t, "--config", sumRegistry(t), "--tools-dir", t.TempDir())
	c := newProtocolClient(url, "sekret")
	r, tr := c.execute(t, "/execute-tool", call("math.sum", "", "math.sum", `{"numbers":[1,2]}`), "Origin", "https://evil.example")
	requireSuccess(t, r, tr, `{"sum":3}`)
	for _, resp := range []reply{
		r,
		c.do(t, http.MethodGet, "/health", "", "Origin", "https://evil.example"),
		c.do(t, http.MethodOptions, "/execute-tool", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST"),
	} {
		assert.Equal(t, http.StatusOK, resp.status, "%s", resp.body)
		assertProtocolHeaders(t, resp)
		assert.Equal(t, "GET, POST, OPTIONS", resp.header.Get("Access-Control-Allow-Methods"))
		assert.Equal(t, "Content-Type, Authorization, X-TPMJS-Protocol-Version, X-Trace-Id, traceparent", resp.header.Get("Access-Control-Allow-Headers"))
	}

	m := c.do(t, http.MethodPost, "/mcp", mcpInitialize(1, "2025-06-18"), append(mcpHeaders, "Origin", "https://evil.example")...)
	assert.Equal(t, http.StatusForbidden, m.status, "MCP requires Origin to be validated, key or not")
	m = c.do(t, http.MethodPost, "/mcp", mcpInitialize(1, "2025-06-18"), append(mcpHeaders, "Origin", "http://localhost:6274")...)
	assert.Equal(t, http.StatusOK, m.status, "a page of this machine, on loopback: %s", m.body)
}

func TestServeBrowserFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--cors-origin", "app.example"}, `invalid value "app.example" for flag -cors-origin: "app.example" is not an origin: write scheme://host[:port], as https://app.example`},
		{[]string{"--cors-origin", "https://app.example/page"}, `"https://app.example/page" is not an origin: an origin is scheme://host[:port] alone, without a path, query or user`},
		{[]string{"--cors-origin", "null"}, `"null" is the origin of every sandboxed frame and local file, so it cannot be told apart; serve the page from an origin of its own`},
		{[]string{"--mcp-max-sessions", "0"}, "wasmgate serve: --mcp-max-sessions must be positive (leave it out for 1000)"},
		{[]string{"--mcp-idle-timeout", "0s"}, "wasmgate serve: --mcp-idle-timeout must be positive (leave it out for 10m0s)"},
	} {
		res := wasmgate(t, "", append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", tc.args, res.stderr)
		assert.Contains(t, res.stderr, tc.msg, tc.args)
	}
	res := wasmgate(t, "", "mcp", "--config", td("registry.json"), "--max-line-bytes", "0")
	assert.Equal(t, exitUsage, res.code, res.stderr)
	assert.Contains(t, res.stderr, "wasmgate mcp: --max-line-bytes must be positive (leave it out for 16777216)")
}

// Item 8 of the review, as written: one line over the default limit (16
// MiB) and `wasmgate mcp` stopped reading, so the host's next write
// blocked. The line is answered with -32700 naming the limit, and the
// request after it is served; the writer finishes.
func TestMCPStdioOverlongLine(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"mcp", "--config", td("registry.json"), "--audit", filepath.Join(t.TempDir(), "audit.jsonl")}, inR, outW, &stderr)
		outW.Close()
	}()
	replies := make(chan mcpRefusal, 16)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var r mcpRefusal
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				replies <- r
			}
		}
	}()

	wrote := make(chan error, 1)
	go func() {
		huge := `{"jsonrpc":"2.0","id":0,"method":"ping","params":{"pad":"` + strings.Repeat("x", 17<<20) + `"}}` + "\n"
		if _, err := io.WriteString(inW, huge); err != nil {
			wrote <- err
			return
		}
		_, err := io.WriteString(inW, mcpInitialize(1, "2025-06-18")+"\n")
		wrote <- err
	}()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case code := <-exited:
		t.Fatalf("wasmgate mcp exited %d while the host was writing: %s", code, stderr.String())
	case <-time.After(browserPatience):
		t.Fatalf("the host's write is blocked: wasmgate mcp stopped reading\n%s", stderr.String())
	}

	next := func() mcpRefusal {
		t.Helper()
		select {
		case r, ok := <-replies:
			require.True(t, ok, "wasmgate mcp closed its output: %s", stderr.String())
			return r
		case <-time.After(browserPatience):
			t.Fatalf("no answer from wasmgate mcp: %s", stderr.String())
		}
		return mcpRefusal{}
	}
	r := next()
	assert.Equal(t, "null", string(r.ID))
	require.NotNil(t, r.Error)
	assert.Equal(t, -32700, r.Error.Code)
	assert.Equal(t, "parse error: a message of more than 16777216 bytes (the server's limit on one line) was discarded unread; "+
		"send smaller messages, or start the server with a higher limit", r.Error.Message)
	r = next()
	assert.Equal(t, "1", string(r.ID))
	assert.Nil(t, r.Error)
	assert.Contains(t, string(r.Result), `"protocolVersion":"2025-06-18"`)

	require.NoError(t, inW.Close())
	select {
	case code := <-exited:
		assert.Equal(t, exitSuccess, code, stderr.String())
	case <-time.After(browserPatience):
		t.Fatal("wasmgate mcp did not exit after its stdin closed")
	}
	assert.Contains(t, stderr.String(), "mcp: a stdio message over the line limit was discarded")
}
