package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/protocol/mcp"
)

// patience bounds every wait on a condition: generous, as the condition
// holds long before on any machine.
const patience = 30 * time.Second

// rpcReply is a JSON-RPC response as a client reads it.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// requireRPCError checks a refusal: a JSON-RPC error with a null id, its
// code and its message.
func requireRPCError(t *testing.T, body []byte, code int, msg string) {
	t.Helper()
	var r rpcReply
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	assert.Equal(t, "2.0", r.JSONRPC)
	assert.Equal(t, "null", string(r.ID), "an error without an id has id null: %s", body)
	require.NotNil(t, r.Error, "%s", body)
	assert.Equal(t, code, r.Error.Code, r.Error.Message)
	assert.Equal(t, msg, r.Error.Message)
}

func initialize(id int, version string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, id, version)
}

// httpReply is what a streamable HTTP client saw of one POST.
type httpReply struct {
	status  int
	header  http.Header
	body    []byte
	session string
}

// post sends body to the /mcp endpoint at url as a streamable HTTP client
// does; header holds name, value pairs.
func post(t *testing.T, url, body string, header ...string) httpReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return httpReply{status: resp.StatusCode, header: resp.Header, body: b, session: resp.Header.Get("Mcp-Session-Id")}
}

// sseResult is the JSON-RPC message of a POST answered as an event stream
// (the SDK's default), or the body itself when it is JSON.
func sseResult(t *testing.T, r httpReply) rpcReply {
	t.Helper()
	data := r.body
	for line := range strings.Lines(string(r.body)) {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data:"); ok {
			data = []byte(strings.TrimSpace(d))
		}
	}
	var rr rpcReply
	require.NoError(t, json.Unmarshal(data, &rr), "%s", r.body)
	return rr
}

// openSession initializes a session under version and says it is
// initialized, as a client does.
func openSession(t *testing.T, url, version string, header ...string) string {
	t.Helper()
	r := post(t, url, initialize(1, version), header...)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.NotEmpty(t, r.session)
	require.Nil(t, sseResult(t, r).Error)
	session := r.session
	r = post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, append(header, "Mcp-Session-Id", session)...)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	return session
}

func serveHTTP(t *testing.T, f *fixture, cfg mcp.HTTPConfig) string {
	t.Helper()
	srv := httptest.NewServer(f.server.HTTPHandler(cfg))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The transport's specification: the Origin header is validated, and one
// not allowed is refused with 403, on every method; requests without it
// (programs) are served, and so are listed origins and pages of this
// machine on a loopback connection.
func TestHTTPOrigin(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	url := serveHTTP(t, f, mcp.HTTPConfig{AllowedOrigins: []string{"https://app.example"}})
	refusal := func(origin string) string {
		return fmt.Sprintf("origin %q may not use this MCP server: web pages are served only from the origins the server lists "+
			"(wasmgate serve --cors-origin), or from this machine (localhost, 127.0.0.1, [::1]) on a connection to a loopback address", origin)
	}

	for _, origin := range []string{"https://evil.example", "http://app.example", "null", "https://localhost.evil.example"} {
		r := post(t, url, initialize(1, "2025-06-18"), "Origin", origin)
		assert.Equal(t, http.StatusForbidden, r.status, origin)
		assert.Empty(t, r.session, "no session for %s", origin)
		requireRPCError(t, r.body, -32000, refusal(origin))
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, err := http.NewRequest(method, url, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", "any")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, method)
		requireRPCError(t, b, -32000, refusal("https://evil.example"))
	}
	assert.Equal(t, 0, sessionCount(f), "no refused request opened a session")

	for _, origin := range []string{"", "https://app.example", "https://APP.example:443", "http://localhost:5173", "http://127.0.0.1:3000", "http://[::1]:8080"} {
		var h []string
		if origin != "" {
			h = []string{"Origin", origin}
		}
		openSession(t, url, "2025-06-18", h...)
	}

	// A loopback origin on a connection that is not to a loopback address
	// is another machine's page.
	w := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initialize(1, "2025-06-18")))
	req.Header.Set("Origin", "http://localhost:5173")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	f.server.HTTPHandler(mcp.HTTPConfig{}).ServeHTTP(w, req)
	assert.Equal(t, http.StatusForbidden, w.Code)
	requireRPCError(t, w.Body.Bytes(), -32000, refusal("http://localhost:5173"))
}

func sessionCount(f *fixture) int {
	n := 0
	for ss := range f.server.SDK().Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// A body over MaxBodyBytes is refused with 413, where the SDK's own 4 MiB
// applied whatever the server's limit.
func TestHTTPBodyLimit(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	url := serveHTTP(t, f, mcp.HTTPConfig{MaxBodyBytes: 1024})
	session := openSession(t, url, "2025-06-18")
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"math.sum","arguments":{"numbers":[` +
		strings.Repeat("1,", 1024) + `1]}}}`
	r := post(t, url, big, "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	requireRPCError(t, r.body, -32600, "request body exceeds 1024 bytes, the server's limit (wasmgate serve --max-body-bytes); send a smaller message")
	assert.Empty(t, f.sink.Records(), "nothing ran")

	r = post(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"math.sum","arguments":{"numbers":[1,2]}}}`, "Mcp-Session-Id", session)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.JSONEq(t, `{"sum":3}`, string(mustField(t, sseResult(t, r).Result, "structuredContent")))
}

func mustField(t *testing.T, obj json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m), "%s", obj)
	return m[key]
}

// Protocol 2025-06-18 removed JSON-RPC batches: a session that negotiated
// it, or a later version, has its batches refused, whatever headers the
// request carries (the SDK looked only at MCP-Protocol-Version, which a
// client may leave out); a 2025-03-26 session still has them.
func TestHTTPBatches(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	url := serveHTTP(t, f, mcp.HTTPConfig{})
	batch := `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"tools/list"}]`
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		session := openSession(t, url, version)
		for _, h := range [][]string{
			{"Mcp-Session-Id", session},
			{"Mcp-Session-Id", session, "MCP-Protocol-Version", version},
		} {
			r := post(t, url, batch, h...)
			assert.Equal(t, http.StatusBadRequest, r.status, "%v: %s", h, r.body)
			requireRPCError(t, r.body, -32600, "invalid request: JSON-RPC batches are not part of MCP after protocol version 2025-03-26, "+
				"and this session has none (it asked for "+version+"); send each message on its own")
		}
	}
	r := post(t, url, `[`+initialize(1, "2025-03-26")+`]`)
	assert.Equal(t, http.StatusBadRequest, r.status)
	requireRPCError(t, r.body, -32600, "invalid request: JSON-RPC batches are not part of MCP after protocol version 2025-03-26, "+
		"and this session has none (it has not initialized, and initialize may not be batched); send each message on its own")

	session := openSession(t, url, "2025-03-26")
	r = post(t, url, batch, "Mcp-Session-Id", session)
	require.Equal(t, http.StatusOK, r.status, "a 2025-03-26 session may batch: %s", r.body)
	assert.Contains(t, string(r.body), `"id":3`)

	// What the SDK would have dropped the request for is answered as
	// JSON-RPC says.
	r = post(t, url, `{"jsonrpc":"2.0","id":`, "Mcp-Session-Id", session)
	assert.Equal(t, http.StatusBadRequest, r.status)
	requireRPCError(t, r.body, -32700, "parse error: the message is not JSON")
}

// The attack as written: abandoned initialize calls, each a session held
// for ever. Sessions are capped (503 with Retry-After beyond the cap), and
// an idle one ends after IdleTimeout, which frees its place.
func TestHTTPSessionsAreCappedAndExpire(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	const idle = 200 * time.Millisecond
	url := serveHTTP(t, f, mcp.HTTPConfig{MaxSessions: 5, IdleTimeout: idle})
	var sessions []string
	for i := range 5 {
		r := post(t, url, initialize(i, "2025-06-18"))
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		sessions = append(sessions, r.session)
	}
	r := post(t, url, initialize(6, "2025-06-18"))
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	assert.Empty(t, r.session)
	requireRPCError(t, r.body, -32000, "this MCP server has 5 sessions open, as many as it may (wasmgate serve --mcp-max-sessions); retry later: "+
		"a session ends when its client ends it (DELETE) or after 200ms unused")

	// Nothing uses them: they end (the SDK's list is the truth; asking
	// over HTTP would use them).
	require.Eventually(t, func() bool { return sessionCount(f) == 0 }, patience, 10*time.Millisecond,
		"idle sessions end after %s", idle)
	r = post(t, url, `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "Mcp-Session-Id", sessions[0])
	assert.Equal(t, http.StatusNotFound, r.status, "an expired session is gone: %s", r.body)
	openSession(t, url, "2025-06-18")
}

// A session in use does not count as idle, and the Retry-After of a full
// server is at most a minute.
func TestHTTPSessionCapRetryAfter(t *testing.T) {
	f := newFixture(t, mcp.Config{})
	url := serveHTTP(t, f, mcp.HTTPConfig{MaxSessions: 1, IdleTimeout: time.Hour})
	session := openSession(t, url, "2025-06-18")
	r := post(t, url, initialize(2, "2025-06-18"))
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "60", r.header.Get("Retry-After"))

	req, err := http.NewRequest(http.MethodDelete, url, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Eventually(t, func() bool { return sessionCount(f) == 0 }, patience, 10*time.Millisecond)
	openSession(t, url, "2025-06-18")
}

// stdioSession runs ServeStdio over pipes; send writes lines from a
// goroutine of its own (the test requires it to finish: a server that
// stops reading would block it), and replies are read as they come.
type stdioSession struct {
	in      *io.PipeWriter
	replies chan rpcReply
	served  chan error
}

func startStdio(t *testing.T, f *fixture) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{in: inW, replies: make(chan rpcReply, 64), served: make(chan error, 1)}
	go func() {
		s.served <- f.server.ServeStdio(context.Background(), inR, outW)
		outW.Close()
	}()
	go func() {
		defer close(s.replies)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var r rpcReply
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				s.replies <- r
			}
		}
	}()
	t.Cleanup(func() { inW.Close() })
	return s
}

// send writes lines and requires the writes to finish.
func (s *stdioSession) send(t *testing.T, lines ...string) {
	t.Helper()
	wrote := make(chan error, 1)
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(s.in, l+"\n"); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("the server stopped reading: the writer is blocked")
	}
}

// next is the next reply.
func (s *stdioSession) next(t *testing.T) rpcReply {
	t.Helper()
	select {
	case r, ok := <-s.replies:
		require.True(t, ok, "the server closed its output")
		return r
	case <-time.After(patience):
		t.Fatal("no reply")
	}
	return rpcReply{}
}

func requireErrorReply(t *testing.T, r rpcReply, code int, msg string) {
	t.Helper()
	assert.Equal(t, "null", string(r.ID))
	require.NotNil(t, r.Error, "%s", r.Result)
	assert.Equal(t, code, r.Error.Code)
	assert.Equal(t, msg, r.Error.Message)
}

// Item 8 of the review: an over-long line made the server stop reading
// for good, so the host's next write blocked. It is answered -32700 naming
// the limit, as a line that is not JSON is, or not JSON-RPC (-32600), and
// a batch where the protocol has none; the server reads on.
func TestStdioRefusesAndReadsOn(t *testing.T) {
	f := newFixture(t, mcp.Config{MaxLineBytes: 1024})
	s := startStdio(t, f)

	s.send(t, `{"jsonrpc":"2.0","id":0,"method":"ping","params":{"pad":"`+strings.Repeat("x", 64<<10)+`"}}`)
	requireErrorReply(t, s.next(t), -32700, "parse error: a message of more than 1024 bytes (the server's limit on one line) was discarded unread; "+
		"send smaller messages, or start the server with a higher limit")

	s.send(t, initialize(1, "2025-06-18"))
	r := s.next(t)
	assert.Equal(t, "1", string(r.ID))
	require.Nil(t, r.Error)
	assert.JSONEq(t, `"2025-06-18"`, string(mustField(t, r.Result, "protocolVersion")))
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for _, tc := range []struct {
		line string
		code int
		msg  string
	}{
		{`{"jsonrpc":"2.0","id":`, -32700, "parse error: the message is not JSON"},
		{`not json at all`, -32700, "parse error: the message is not JSON"},
		{`{"id":5,"method":"ping"}`, -32600, `invalid request: not a JSON-RPC 2.0 message: invalid message version tag ""; expected "2.0"`},
		{`[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, -32600, "invalid request: JSON-RPC batches are not part of MCP after protocol version 2025-03-26, " +
			"and this session has none (it asked for 2025-06-18); send each message on its own"},
		{strings.Repeat(" ", 2048), -32700, "parse error: a message of more than 1024 bytes (the server's limit on one line) was discarded unread; " +
			"send smaller messages, or start the server with a higher limit"},
	} {
		s.send(t, tc.line)
		requireErrorReply(t, s.next(t), tc.code, tc.msg)
	}

	s.send(t, "", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"math.sum","arguments":{"numbers":[1,2]}}}`)
	r = s.next(t)
	assert.Equal(t, "9", string(r.ID), "the server reads on")
	require.Nil(t, r.Error)
	assert.JSONEq(t, `{"sum":3}`, string(mustField(t, r.Result, "structuredContent")))

	require.NoError(t, s.in.Close())
	select {
	case err := <-s.served:
		assert.NoError(t, err, "the client closed stdin: the session is over")
	case <-time.After(patience):
		t.Fatal("ServeStdio did not return after stdin closed")
	}
}
