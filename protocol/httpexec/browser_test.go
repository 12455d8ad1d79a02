package httpexec

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CORS headers the protocol's text requires on every response, exactly
// as the server sends them: the browser defences must not change them.
func assertProtocolCORS(t *testing.T, r reply) {
	t.Helper()
	assert.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"), "HTTP %d", r.status)
	assert.Equal(t, "GET, POST, OPTIONS", r.header.Get("Access-Control-Allow-Methods"), "HTTP %d", r.status)
	assert.Equal(t, "Content-Type, Authorization, X-TPMJS-Protocol-Version, X-Trace-Id, traceparent",
		r.header.Get("Access-Control-Allow-Headers"), "HTTP %d", r.status)
	assert.Equal(t, "1.0", r.header.Get(VersionHeader), "HTTP %d", r.status)
}

// A web page may POST text/plain, a form encoding or no type at all to any
// origin without a preflight: /execute-tool takes application/json only,
// so such a call runs nothing (and nothing is audited).
func TestExecuteToolTakesJSONOnly(t *testing.T) {
	f := newFixture(t, nil)
	body := execute("acme-tools", "shout", `{"s":"a"}`)
	for _, tc := range []struct{ contentType, msg string }{
		{"text/plain", "Content-Type text/plain is not accepted; send the JSON body with Content-Type: application/json"},
		{"text/plain;charset=UTF-8", "Content-Type text/plain is not accepted; send the JSON body with Content-Type: application/json"},
		{"application/x-www-form-urlencoded", "Content-Type application/x-www-form-urlencoded is not accepted; send the JSON body with Content-Type: application/json"},
		{"multipart/form-data; boundary=x", "Content-Type multipart/form-data is not accepted; send the JSON body with Content-Type: application/json"},
		{"", "the request has no Content-Type; send the JSON body with Content-Type: application/json"},
		{"application/json; charset=latin1", "charset latin1 is not accepted: JSON is UTF-8 (send Content-Type: application/json, or application/json; charset=utf-8)"},
		{"application/json;;", `Content-Type "application/json;;" cannot be read (mime: invalid media parameter); send Content-Type: application/json`},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			r := f.do(t, "POST", "/execute-tool", body, "Content-Type", tc.contentType)
			require.Equal(t, http.StatusUnsupportedMediaType, r.status, r.raw)
			assert.Equal(t, false, r.body["success"])
			assert.Equal(t, CodeUnsupportedMediaType, errorCode(r))
			assert.Equal(t, tc.msg, errorMessage(r))
			assert.Equal(t, "INVALID_REQUEST", r.body["errorCode"], "1.1's code")
			assertProtocolCORS(t, r)
		})
	}
	assert.Empty(t, f.sink.Verdicts(), "nothing ran")

	// No body, nothing to refuse: the protocol's 400 for a missing body.
	r := f.do(t, "POST", "/execute-tool", "", "Content-Type", "")
	assert.Equal(t, http.StatusBadRequest, r.status, r.raw)
	assert.Equal(t, CodeInvalidRequest, errorCode(r))
	assert.Contains(t, errorMessage(r), "the request body is empty")

	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; charset=UTF-8"} {
		r := f.do(t, "POST", "/execute-tool", body, "Content-Type", ct)
		require.Equal(t, http.StatusOK, r.status, "%s: %s", ct, r.raw)
		assert.Equal(t, true, r.body["success"], r.raw)
	}
}

// Without a key, a request carrying an Origin header (a web page's) is
// refused on every route, before anything runs, unless its origin is
// listed; requests without one (programs) are served, and preflights are
// answered as the protocol requires.
func TestKeylessServerRefusesWebPages(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.CORSOrigins = []string{"https://app.example", "http://localhost:3000"} })
	call := execute("acme-tools", "shout", `{"s":"a"}`)
	const refusal = "this server has no API key, so it serves no web page: origin %q is refused, as any web site the user visits could otherwise run tools here; " +
		"set EXECUTOR_API_KEY to require a key, or list the page's origin with --cors-origin"

	for _, origin := range []string{"https://evil.example", "http://localhost:3001", "http://app.example", "null", "http://127.0.0.1:8080"} {
		for _, rq := range []struct{ method, path, body string }{
			{"POST", "/execute-tool", call},
			{"POST", "/api/execute-tool", call},
			{"GET", "/health", ""},
			{"GET", "/info", ""},
			{"GET", "/metrics", ""},
		} {
			r := f.do(t, rq.method, rq.path, rq.body, "Origin", origin)
			require.Equal(t, http.StatusForbidden, r.status, "%s %s from %s: %s", rq.method, rq.path, origin, r.raw)
			assert.Equal(t, false, r.body["success"])
			assert.Equal(t, CodeForbidden, errorCode(r))
			assert.Equal(t, fmt.Sprintf(refusal, origin), errorMessage(r))
			assert.Equal(t, "AUTHENTICATION_REQUIRED", r.body["errorCode"], "1.1's code")
			assertProtocolCORS(t, r)
			assert.Contains(t, r.header.Values("Vary"), "Origin")
		}
		pre := f.do(t, "OPTIONS", "/execute-tool", "", "Origin", origin, "Access-Control-Request-Method", "POST")
		assert.Equal(t, http.StatusOK, pre.status, "a preflight is answered as the protocol says")
		assertProtocolCORS(t, pre)
	}
	assert.Empty(t, f.sink.Verdicts(), "no page ran anything")

	for _, origin := range []string{"https://app.example", "https://APP.example:443", "http://localhost:3000", ""} {
		var h []string
		if origin != "" {
			h = []string{"Origin", origin}
		}
		r := f.do(t, "POST", "/execute-tool", call, h...)
		require.Equal(t, http.StatusOK, r.status, "%q: %s", origin, r.raw)
		assert.Equal(t, true, r.body["success"], r.raw)
		assertProtocolCORS(t, r)
		assert.Equal(t, http.StatusOK, f.do(t, "GET", "/health", "", h...).status, origin)
	}
	assert.Len(t, f.sink.Verdicts(), 4)
}

// With a key, web pages are served as the protocol's text says: the key is
// the guard, the Origin header is not looked at, and the CORS headers are
// those of the text.
func TestKeyedServerServesWebPages(t *testing.T) {
	f := newFixture(t, func(c *fixtureConfig) { c.APIKey = "s3cret" })
	call := execute("acme-tools", "shout", `{"s":"a"}`)

	r := f.do(t, "POST", "/execute-tool", call, "Origin", "https://evil.example", "Authorization", "Bearer s3cret")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Equal(t, true, r.body["success"], r.raw)
	assertProtocolCORS(t, r)
	assert.NotContains(t, r.header.Values("Vary"), "Origin")

	r = f.do(t, "POST", "/execute-tool", call, "Origin", "https://evil.example")
	assert.Equal(t, http.StatusUnauthorized, r.status, "without the key, a page is refused as any client is")
	assert.Equal(t, CodeUnauthorized, errorCode(r))
	assertProtocolCORS(t, r)

	for _, path := range []string{"/health", "/info"} {
		r := f.do(t, "GET", path, "", "Origin", "https://evil.example")
		assert.Equal(t, http.StatusOK, r.status, path)
		assertProtocolCORS(t, r)
	}
	pre := f.do(t, "OPTIONS", "/execute-tool", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	assert.Equal(t, http.StatusOK, pre.status)
	assert.Empty(t, pre.raw)
	assertProtocolCORS(t, pre)
	assert.Len(t, f.sink.Verdicts(), 1)
}
