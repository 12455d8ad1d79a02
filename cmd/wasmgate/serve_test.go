package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/testenv"
)

// The tests in this file start the real binary with `wasmgate serve` on a
// loopback port and speak the HTTP executor protocol v1.0 to it, as a
// client of the protocol would: they follow its compliance checklist (core,
// then standard), then what a production server adds (routes under /api/,
// structured refusals, limits, trace ids in the audit log, metrics,
// saturation and a graceful stop).

// acmeTools is an npm package of tools, laid out in a tool store without
// npm: a plain tool, one that throws, an export that is no tool, a factory
// that reads the request's env, one that throws unless it is given the env,
// one that throws either way, and a class.
const acmeTools = `export const shout = { execute: ({ s }) => ({ s: s.toUpperCase() }) };
export const boom = { execute: () => { throw new Error("boom") } };
export const notool = 42;
export const withkey = (env) => env ? { execute: () => ({ keyLength: env.API_KEY.length }) } : undefined;
export const needsenv = (env) => {
  if (env === undefined) throw new Error("API_KEY is required");
  return { execute: () => ({ configured: Object.keys(env).length }) };
};
export const broken = (env) => { throw new RangeError(env === undefined ? "no config" : "bad config"); };
export class Greeter { execute() { return "hi"; } }
`

// normalizeWhitespace stands in for @tpmjs/tools-normalize-whitespace@0.2.0,
// the package the protocol authors' compliance suite executes (it is not on
// the registry this project can reach): an AI SDK-style tool.
const normalizeWhitespace = `export const normalizeWhitespaceTool = {
  description: "Collapse runs of whitespace into one space",
  execute: async ({ text }) => ({ text: text.replace(/\s+/g, " ").trim() }),
};
`

// spinner is a package whose one tool never returns; its package.json sets
// the limit that stops it (a clock with fuel far beyond it: an unset fuel
// would follow the clock at a JS tool's ratio and bind first).
const spinner = `export const spin = { execute: () => { for (;;) {} } };`

// storePackage is one package of a tool store.
type storePackage struct{ name, version, bundle, packageJSON string }

// toolStore lays out a tool store holding pkgs, each as storeWith lays out
// one.
func toolStore(t *testing.T, pkgs ...storePackage) string {
	t.Helper()
	dir := storeWith(t, pkgs[0].name, pkgs[0].version, pkgs[0].bundle, pkgs[0].packageJSON)
	for _, p := range pkgs[1:] {
		other := storeWith(t, p.name, p.version, p.bundle, p.packageJSON)
		entries, err := os.ReadDir(other)
		require.NoError(t, err)
		for _, e := range entries {
			require.NoError(t, os.Rename(filepath.Join(other, e.Name()), filepath.Join(dir, e.Name())))
		}
	}
	return dir
}

func spinPackage(name, limits string) storePackage {
	return storePackage{name, "1.0.0", spinner,
		`{"name":"` + name + `","version":"1.0.0","wasmgate":{"limits":` + limits + `}}`}
}

// serveProcess is a `wasmgate serve` running in the background.
type serveProcess struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited and its log is read

	mu  sync.Mutex
	log bytes.Buffer // everything it wrote to stderr
}

var textListening = regexp.MustCompile(`msg=listening url=(\S+)`)

// listeningURL finds the URL in the "listening" log line, text or JSON.
func listeningURL(line string) string {
	var rec struct{ Msg, URL string }
	if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
		return rec.URL
	}
	if m := textListening.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// startServe starts `wasmgate serve --addr 127.0.0.1:0 args...` with env
// added to the environment, and returns once it is listening. The process
// is killed at the end of the test unless it has exited.
func startServe(t *testing.T, env []string, args ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	s := &serveProcess{cmd: cmd, exited: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.log.Write(sc.Bytes())
			s.log.WriteByte('\n')
			s.mu.Unlock()
			if u := listeningURL(sc.Text()); u != "" {
				listening <- u
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	select {
	case s.url = <-listening:
	case <-s.exited:
		t.Fatalf("wasmgate serve exited (%v) before listening:\n%s", cmd.ProcessState, s.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("wasmgate serve did not listen within a minute:\n%s", s.logText())
	}
	return s
}

func (s *serveProcess) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// protocolClient speaks the protocol to one server, with a key when set.
type protocolClient struct {
	base string
	key  string
	http *http.Client
}

func newProtocolClient(base, key string) protocolClient {
	return protocolClient{base: base, key: key, http: &http.Client{Timeout: 2 * time.Minute}}
}

// reply is an HTTP response as the client saw it.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// toolReply is the body of an /execute-tool response, and of every
// structured error.
type toolReply struct {
	Success bool            `json:"success"`
	Output  json.RawMessage `json:"output"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	ExecutionTimeMs *int64 `json:"executionTimeMs"`
	Wasmgate        *struct {
		Action      string   `json:"action"`
		Status      string   `json:"status"`
		ReasonCodes []string `json:"reasonCodes"`
		TraceID     string   `json:"traceId"`
	} `json:"wasmgate"`
}

// send sends one request; header holds name, value pairs. The client's
// key goes in Authorization unless header sets it. It is safe to call from
// any goroutine.
func (c protocolClient) send(method, path, body string, header ...string) (reply, error) {
	return c.sendContext(context.Background(), method, path, body, header...)
}

// sendContext is send with a context that can abandon the request.
func (c protocolClient) sendContext(ctx context.Context, method, path, body string, header ...string) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return reply{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// do is send for the test's goroutine.
func (c protocolClient) do(t *testing.T, method, path, body string, header ...string) reply {
	t.Helper()
	r, err := c.send(method, path, body, header...)
	require.NoError(t, err, "%s %s", method, path)
	return r
}

// execute posts body to /execute-tool (or /api/execute-tool) and decodes
// the answer.
func (c protocolClient) execute(t *testing.T, path, body string, header ...string) (reply, toolReply) {
	t.Helper()
	r := c.do(t, http.MethodPost, path, body, header...)
	return r, decodeTool(t, r)
}

func decodeTool(t *testing.T, r reply) toolReply {
	t.Helper()
	var tr toolReply
	require.NoError(t, json.Unmarshal(r.body, &tr), "HTTP %d: %s", r.status, r.body)
	return tr
}

// call is a protocol request body.
func call(pkg, version, name, params string) string {
	b := `{"packageName":` + strconv.Quote(pkg)
	if version != "" {
		b += `,"version":` + strconv.Quote(version)
	}
	b += `,"name":` + strconv.Quote(name)
	if params != "" {
		b += `,"params":` + params
	}
	return b + "}"
}

// requireSuccess checks a tool call's answer: 200, success, the exact
// output and an execution time.
func requireSuccess(t *testing.T, r reply, tr toolReply, output string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	require.True(t, tr.Success, "%s", r.body)
	require.Nil(t, tr.Error)
	assert.JSONEq(t, output, string(tr.Output))
	require.NotNil(t, tr.ExecutionTimeMs, "executionTimeMs is always present")
	assert.GreaterOrEqual(t, *tr.ExecutionTimeMs, int64(0))
	assert.Equal(t, "application/json; charset=utf-8", r.header.Get("Content-Type"))
}

// requireToolError checks a tool call that did not succeed: 200, success
// false, the code, and a message holding msg.
func requireToolError(t *testing.T, r reply, tr toolReply, code, msg string) {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "a tool's outcome is a 200: %s", r.body)
	require.False(t, tr.Success, "%s", r.body)
	require.NotNil(t, tr.Error, "%s", r.body)
	assert.Equal(t, code, tr.Error.Code, tr.Error.Message)
	assert.Contains(t, tr.Error.Message, msg)
	assert.Empty(t, tr.Output, "no output on failure")
	require.NotNil(t, tr.ExecutionTimeMs, "executionTimeMs is always present")
	assert.GreaterOrEqual(t, *tr.ExecutionTimeMs, int64(0))
}

// requireRefusal checks a structured refusal: the HTTP status, a JSON body
// {success:false, error:{code, message}} whose message holds msg, and the
// protocol's headers.
func requireRefusal(t *testing.T, r reply, status int, code, msg string) {
	t.Helper()
	require.Equal(t, status, r.status, "%s", r.body)
	assert.Equal(t, "application/json; charset=utf-8", r.header.Get("Content-Type"))
	var body struct {
		Success *bool `json:"success"`
		Error   struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(r.body, &body), "%s", r.body)
	require.NotNil(t, body.Success, "success is present: %s", r.body)
	assert.False(t, *body.Success)
	assert.Equal(t, code, body.Error.Code)
	assert.Contains(t, body.Error.Message, msg)
	assertProtocolHeaders(t, r)
}

func assertProtocolHeaders(t *testing.T, r reply) {
	t.Helper()
	assert.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"), "CORS on HTTP %d", r.status)
	assert.Equal(t, "1.0", r.header.Get("X-TPMJS-Protocol-Version"), "version header on HTTP %d", r.status)
}

// metricValue reads one series of a Prometheus text exposition ("name" or
// `name{label="v",...}`, labels in the sorted order the exposition uses);
// a series not there reads 0.
func metricValue(t *testing.T, exposition []byte, series string) float64 {
	t.Helper()
	for line := range strings.Lines(string(exposition)) {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, line)
			return f
		}
	}
	return 0
}

var uuidForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestServeCompliance runs the protocol's compliance checklist and the rest
// of what the server promises against one server: with an API key, an
// audit file, a registry (testdata/tools.json), a tool store and a body
// limit of 1 KiB.
func TestServeCompliance(t *testing.T) {
	t.Parallel()
	const key = "test-key-5b1f"
	store := toolStore(t,
		storePackage{"acme-tools", "1.0.0", acmeTools, `{"name":"acme-tools","version":"1.0.0"}`},
		storePackage{"@tpmjs/tools-normalize-whitespace", "0.2.0", normalizeWhitespace, `{"name":"@tpmjs/tools-normalize-whitespace","version":"0.2.0"}`},
		spinPackage("acme-slow", `{"timeout_ms":300,"fuel":4000000000000000000}`),
		spinPackage("acme-metered", `{"fuel":1000000}`),
	)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	srv := startServe(t, []string{"EXECUTOR_API_KEY=" + key, "npm_config_registry=" + emptyRegistry(t)},
		"--config", td("tools.json"), "--npm-allow", "acme-*,@tpmjs/*,wasmgate-no-such-*", "--tools-dir", store, "--audit", auditPath,
		"--max-body-bytes", "1024", "--log-format", "json")
	c := newProtocolClient(srv.url, key)
	anon := newProtocolClient(srv.url, "")

	// Core.

	t.Run("health", func(t *testing.T) {
		for _, path := range []string{"/health", "/api/health"} {
			r := c.do(t, http.MethodGet, path, "")
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
			assertProtocolHeaders(t, r)
			var h map[string]any
			require.NoError(t, json.Unmarshal(r.body, &h))
			assert.Equal(t, "ok", h["status"])
			assert.Equal(t, "1.0", h["protocolVersion"])
			assert.Equal(t, implementationVersion, h["implementationVersion"])
			assert.NotContains(t, h, "runtime", "the OpenAPI enum allows node, deno or bun only")
			ts, _ := h["timestamp"].(string)
			_, err := time.Parse(time.RFC3339Nano, ts)
			assert.NoError(t, err, "timestamp %q is RFC 3339", ts)
		}
	})

	t.Run("execute", func(t *testing.T) {
		cases := []struct {
			name, body, output string
		}{
			{"npm package tool", call("acme-tools", "1.0.0", "shout", `{"s":"hi there"}`), `{"s":"HI THERE"}`},
			{"registry action (TypeScript)", call("text.slug", "", "slug", `{"title":"The Quick Brown Fox"}`), `{"slug":"quick-brown-fox","removed":["the"]}`},
			{"registry executor (Wasm)", call("upper", "", "upper", `{"text":"abc"}`), `{"text":"ABC"}`},
			{"factory given the env", `{"packageName":"acme-tools","version":"1.0.0","name":"withkey","env":{"API_KEY":"12345"}}`, `{"keyLength":5}`},
			{"factory that throws until given the env", `{"packageName":"acme-tools","version":"1.0.0","name":"needsenv","env":{"API_KEY":"k","REGION":"eu"}}`, `{"configured":2}`},
		}
		for _, tc := range cases {
			for _, path := range []string{"/execute-tool", "/api/execute-tool"} {
				t.Run(tc.name+" "+path, func(t *testing.T) {
					r, tr := c.execute(t, path, tc.body)
					requireSuccess(t, r, tr, tc.output)
					assertProtocolHeaders(t, r)
					require.NotNil(t, tr.Wasmgate, "the verdict rides along")
					assert.Equal(t, "SUCCESS", tr.Wasmgate.Status)
					assert.Equal(t, []string{}, tr.Wasmgate.ReasonCodes)
				})
			}
		}
	})

	t.Run("tool errors", func(t *testing.T) {
		cases := []struct {
			name, body, code, msg string
		}{
			{"missing export", call("acme-tools", "1.0.0", "nope", `{}`), "TOOL_NOT_FOUND", `the tool exports no "nope"`},
			{"inherited property", call("acme-tools", "1.0.0", "__proto__", `{}`), "TOOL_NOT_FOUND", `the tool exports no "__proto__"`},
			{"prototype method", call("acme-tools", "1.0.0", "constructor", `{}`), "TOOL_NOT_FOUND", `the tool exports no "constructor"`},
			{"path as a name", call("acme-tools", "1.0.0", "../../etc/passwd", `{}`), "TOOL_NOT_FOUND", `the tool exports no "../../etc/passwd"`},
			{"export that is no tool", call("acme-tools", "1.0.0", "notool", `{}`), "TOOL_INVALID", `export "notool" is a number with no execute function, not a tool`},
			{"class", call("acme-tools", "1.0.0", "Greeter", `{}`), "TOOL_INVALID", `export "Greeter" is a class, not a tool`},
			{"factory that fails both ways", call("acme-tools", "1.0.0", "broken", `{}`), "TOOL_INVALID",
				"the factory gave no tool: called with no argument it threw RangeError: no config; called with the env it threw RangeError: bad config"},
			{"thrown error", call("acme-tools", "1.0.0", "boom", `{}`), "TOOL_EXECUTION_ERROR", "Error: boom"},
			{"wall clock (timeout_ms 300)", call("acme-slow", "1.0.0", "spin", `{}`), "EXECUTION_TIMEOUT", "EXECUTOR_TIMEOUT"},
			{"fuel (1,000,000)", call("acme-metered", "1.0.0", "spin", `{}`), "EXECUTION_TIMEOUT", "FUEL_EXHAUSTED"},
			{"package neither in the store nor on npm", call("wasmgate-no-such-package-zz9", "1.0.0", "x", `{}`), "PACKAGE_NOT_FOUND", "npm has no package wasmgate-no-such-package-zz9@1.0.0"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r, tr := c.execute(t, "/execute-tool", tc.body)
				requireToolError(t, r, tr, tc.code, tc.msg)
				assertProtocolHeaders(t, r)
			})
		}
	})

	t.Run("CORS and version header on every route", func(t *testing.T) {
		reqs := []struct {
			client       protocolClient
			method, path string
			body         string
			status       int
		}{
			{c, http.MethodGet, "/health", "", http.StatusOK},
			{c, http.MethodGet, "/api/health", "", http.StatusOK},
			{c, http.MethodGet, "/info", "", http.StatusOK},
			{c, http.MethodGet, "/api/info", "", http.StatusOK},
			{c, http.MethodPost, "/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"a"}`), http.StatusOK},
			{c, http.MethodPost, "/api/execute-tool", call("acme-tools", "1.0.0", "boom", `{}`), http.StatusOK},
			{c, http.MethodPost, "/execute-tool", `{`, http.StatusBadRequest},
			{anon, http.MethodPost, "/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"a"}`), http.StatusUnauthorized},
			{c, http.MethodGet, "/nope", "", http.StatusNotFound},
			{c, http.MethodGet, "/execute-tool", "", http.StatusMethodNotAllowed},
			{c, http.MethodPost, "/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"`+strings.Repeat("a", 2000)+`"}`), http.StatusRequestEntityTooLarge},
			{c, http.MethodGet, "/metrics", "", http.StatusOK},
			{anon, http.MethodOptions, "/execute-tool", "", http.StatusOK},
			{anon, http.MethodGet, "/health", "", http.StatusOK},
			{anon, http.MethodGet, "/info", "", http.StatusOK},
		}
		for _, rq := range reqs {
			r := rq.client.do(t, rq.method, rq.path, rq.body, "X-TPMJS-Protocol-Version", "1.0")
			assert.Equal(t, rq.status, r.status, "%s %s: %s", rq.method, rq.path, r.body)
			assertProtocolHeaders(t, r)
			assert.Contains(t, r.header.Get("Access-Control-Expose-Headers"), "X-TPMJS-Protocol-Version")
		}
	})

	t.Run("OPTIONS preflight", func(t *testing.T) {
		for _, path := range []string{"/execute-tool", "/api/execute-tool", "/health", "/info"} {
			r := anon.do(t, http.MethodOptions, path, "",
				"Origin", "https://app.example",
				"Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "authorization, content-type")
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
			assert.Empty(t, r.body)
			assertProtocolHeaders(t, r)
			methods := r.header.Get("Access-Control-Allow-Methods")
			for _, m := range []string{"GET", "POST", "OPTIONS"} {
				assert.Contains(t, methods, m)
			}
			headers := r.header.Get("Access-Control-Allow-Headers")
			for _, h := range []string{"Content-Type", "Authorization", "X-TPMJS-Protocol-Version"} {
				assert.Contains(t, headers, h)
			}
		}
	})

	// Standard.

	t.Run("info", func(t *testing.T) {
		for _, path := range []string{"/info", "/api/info"} {
			r := c.do(t, http.MethodGet, path, "")
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
			var info struct {
				Name            string                     `json:"name"`
				Version         string                     `json:"version"`
				ProtocolVersion string                     `json:"protocolVersion"`
				Capabilities    map[string]json.RawMessage `json:"capabilities"`
			}
			require.NoError(t, json.Unmarshal(r.body, &info))
			assert.Equal(t, "wasmgate", info.Name)
			assert.Equal(t, implementationVersion, info.Version)
			assert.Equal(t, "1.0", info.ProtocolVersion)
			caps := info.Capabilities
			assert.JSONEq(t, `"vm"`, string(caps["isolation"]))
			assert.JSONEq(t, `["sync"]`, string(caps["executionModes"]))
			var maxMs int64
			require.NoError(t, json.Unmarshal(caps["maxExecutionTimeMs"], &maxMs))
			assert.GreaterOrEqual(t, maxMs, int64(60000))
			assert.JSONEq(t, `1024`, string(caps["maxRequestBodyBytes"]))
			for _, k := range []string{"supportsStreaming", "supportsCallbacks", "supportsCaching"} {
				assert.JSONEq(t, `false`, string(caps[k]), k)
			}
		}
	})

	t.Run("auth", func(t *testing.T) {
		body := call("acme-tools", "1.0.0", "shout", `{"s":"k"}`)
		for _, auth := range []string{"", "Bearer wrong-key", "Bearer ", "Basic " + key, key, "Bearer " + key + "x"} {
			with := func(path, body string) reply {
				if auth == "" {
					return anon.do(t, http.MethodPost, path, body)
				}
				return anon.do(t, http.MethodPost, path, body, "Authorization", auth)
			}
			for _, path := range []string{"/execute-tool", "/api/execute-tool"} {
				requireRefusal(t, with(path, body), http.StatusUnauthorized, "UNAUTHORIZED", "API key")
			}
			// The OpenAPI description secures /execute-tool alone: clients
			// probe health and info without a key.
			for _, path := range []string{"/health", "/api/health", "/info", "/api/info", "/metrics"} {
				var r reply
				if auth == "" {
					r = anon.do(t, http.MethodGet, path, "")
				} else {
					r = anon.do(t, http.MethodGet, path, "", "Authorization", auth)
				}
				assert.Equal(t, http.StatusOK, r.status, "%s with %q: %s", path, auth, r.body)
			}
		}
		r, tr := c.execute(t, "/execute-tool", body)
		requireSuccess(t, r, tr, `{"s":"K"}`)
		r = anon.do(t, http.MethodOptions, "/execute-tool", "")
		assert.Equal(t, http.StatusOK, r.status, "OPTIONS needs no key")
		assert.Contains(t, srv.logText(), `"auth":"/execute-tool"`, "the listening line says what the key guards")
	})

	t.Run("the protocol authors' compliance suite", func(t *testing.T) {
		// The suite is handed the key, as `executor-test URL --api-key K`
		// would be; it sends it on /execute-tool only.
		checks := tpmjsComplianceSuite(srv.url, key)
		require.Len(t, checks, 15)
		for _, check := range checks {
			assert.True(t, check.passed, "%s: %s", check.name, check.message)
		}
		// Its fixture ran, and its nonexistent package is the protocol's
		// PACKAGE_NOT_FOUND (1.1: load, PACKAGE_IMPORT_FAILED).
		r, tr := c.execute(t, "/execute-tool", `{"packageName":"@tpmjs/tools-normalize-whitespace","name":"normalizeWhitespaceTool","version":"0.2.0","params":{"text":" hello   world "}}`)
		requireSuccess(t, r, tr, `{"text":"hello world"}`)
		r, tr = c.execute(t, "/execute-tool", `{"packageName":"@tpmjs/nonexistent-package-12345","name":"nonexistentTool","version":"0.0.0","params":{}}`)
		requireToolError(t, r, tr, "PACKAGE_NOT_FOUND", "@tpmjs/nonexistent-package-12345@0.0.0")
		var typed struct{ ErrorStage, ErrorCode string }
		require.NoError(t, json.Unmarshal(r.body, &typed))
		assert.Equal(t, "load", typed.ErrorStage)
		assert.Equal(t, "PACKAGE_IMPORT_FAILED", typed.ErrorCode)
	})

	// What else the server promises.

	t.Run("unknown path", func(t *testing.T) {
		for _, path := range []string{"/", "/nope", "/api/nope", "/api/metrics", "/execute-tool/", "/api"} {
			requireRefusal(t, c.do(t, http.MethodGet, path, ""), http.StatusNotFound, "NOT_FOUND", "no route "+path)
		}
	})

	t.Run("wrong method", func(t *testing.T) {
		for _, rq := range []struct{ method, path, allow string }{
			{http.MethodGet, "/execute-tool", "POST, OPTIONS"},
			{http.MethodPut, "/api/execute-tool", "POST, OPTIONS"},
			{http.MethodPost, "/health", "GET, OPTIONS"},
			{http.MethodDelete, "/api/health", "GET, OPTIONS"},
			{http.MethodPost, "/info", "GET, OPTIONS"},
			{http.MethodPost, "/metrics", "GET, OPTIONS"},
		} {
			r := c.do(t, rq.method, rq.path, "")
			requireRefusal(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", rq.method+" "+rq.path+" is not allowed")
			assert.Equal(t, rq.allow, r.header.Get("Allow"))
		}
	})

	t.Run("invalid requests", func(t *testing.T) {
		cases := []struct{ name, body, msg string }{
			{"empty body", "", "the request body is empty"},
			{"malformed JSON", `{"packageName":`, "the request body is not valid JSON"},
			{"not an object", `["acme-tools","shout"]`, "the request body must be a JSON object"},
			{"two values", call("acme-tools", "1.0.0", "shout", "") + ` {}`, "more than one JSON value"},
			{"no packageName", `{"name":"shout"}`, "packageName is required"},
			{"blank packageName", `{"packageName":"  ","name":"shout"}`, "packageName is required"},
			{"packageName not a string", `{"packageName":7,"name":"shout"}`, "packageName must be a string"},
			{"no name", `{"packageName":"acme-tools"}`, "name is required"},
			{"empty name", `{"packageName":"acme-tools","name":""}`, "name is required"},
			{"params not an object", call("acme-tools", "1.0.0", "shout", `[1]`), "params must be a JSON object"},
			{"env not an object", `{"packageName":"acme-tools","name":"shout","env":"KEY=v"}`, "env must be a JSON object"},
			{"a key in another case", `{"packageName":"acme-tools","Name":"shout"}`, `the request body has the key "Name"; the protocol's field is "name" (keys are case-sensitive)`},
			{"a key twice", `{"packageName":"acme-tools","name":"shout","packageName":"upper"}`, `the request body has the key "packageName" twice`},
			{"an env key twice", `{"packageName":"acme-tools","name":"shout","env":{"A":"1","A":"2"}}`, `env has the key "A" twice`},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				requireRefusal(t, c.do(t, http.MethodPost, "/execute-tool", tc.body), http.StatusBadRequest, "INVALID_REQUEST", tc.msg)
			})
		}
	})

	t.Run("body over --max-body-bytes", func(t *testing.T) {
		body := call("acme-tools", "1.0.0", "shout", `{"s":"`+strings.Repeat("x", 1100)+`"}`)
		for _, path := range []string{"/execute-tool", "/api/execute-tool"} {
			requireRefusal(t, c.do(t, http.MethodPost, path, body), http.StatusRequestEntityTooLarge,
				"PAYLOAD_TOO_LARGE", "request body exceeds 1024 bytes")
		}
		// Just under the limit passes.
		under := call("acme-tools", "1.0.0", "shout", `{"s":"`+strings.Repeat("x", 900)+`"}`)
		require.Less(t, len(under), 1024)
		r, tr := c.execute(t, "/execute-tool", under)
		requireSuccess(t, r, tr, `{"s":"`+strings.Repeat("X", 900)+`"}`)
	})

	t.Run("package names that try traversal or a shell", func(t *testing.T) {
		before, err := os.ReadDir(store)
		require.NoError(t, err)
		cases := []struct{ pkg, version string }{
			{"../../etc", ""},
			{"a/b/c", ""},
			{"x; rm -rf /", ""},
			{"$(id)", ""},
			{"..", "1.0.0"},
			{"acme-tools", "1.0.0; id"},
			{"acme-tools", "../../../etc/passwd"},
		}
		for _, tc := range cases {
			r, _ := c.execute(t, "/execute-tool", call(tc.pkg, tc.version, "x", `{}`))
			requireRefusal(t, r, http.StatusBadRequest, "INVALID_REQUEST", "packageName/version: INVALID_SPEC")
		}
		after, err := os.ReadDir(store)
		require.NoError(t, err)
		assert.Equal(t, len(before), len(after), "npm never ran: the tool store is as it was")
	})

	t.Run("trace ids reach the audit log", func(t *testing.T) {
		cases := []struct {
			name   string
			header []string
			want   string
		}{
			{"traceparent", []string{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}, "4bf92f35-77b3-4da6-a3ce-929d0e0e4736"},
			{"X-Trace-Id as a UUID", []string{"X-Trace-Id", "0AF7651E-2B6C-4D3E-9F1A-7C8B9D0E1F2A"}, "0af7651e-2b6c-4d3e-9f1a-7c8b9d0e1f2a"},
			{"X-Trace-Id as 32 hex digits", []string{"X-Trace-Id", "a3ce929d0e0e47364bf92f3577b34da6"}, "a3ce929d-0e0e-4736-4bf9-2f3577b34da6"},
			{"traceparent before X-Trace-Id", []string{"traceparent", "00-11111111111111111111111111111111-00f067aa0ba902b7-01", "X-Trace-Id", "22222222-2222-4222-8222-222222222222"}, "11111111-1111-1111-1111-111111111111"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				for _, tool := range []string{"shout", "boom"} {
					r, tr := c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", tool, `{"s":"t"}`), tc.header...)
					require.Equal(t, http.StatusOK, r.status, "%s", r.body)
					assert.Equal(t, tc.want, r.header.Get("X-Trace-Id"))
					require.NotNil(t, tr.Wasmgate)
					assert.Equal(t, tc.want, tr.Wasmgate.TraceID)
					rec := findRecord(t, auditPath, tc.want, "acme-tools/"+tool)
					assert.Equal(t, map[string]string{"shout": "SUCCESS", "boom": "FAILED"}[tool], rec.Status)
				}
			})
		}
		t.Run("no usable header", func(t *testing.T) {
			r, tr := c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"t"}`),
				"traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "X-Trace-Id", "not-a-trace-id")
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			require.NotNil(t, tr.Wasmgate)
			id := tr.Wasmgate.TraceID
			assert.Regexp(t, uuidForm, id, "the pipeline assigns one")
			assert.Equal(t, id, r.header.Get("X-Trace-Id"))
			findRecord(t, auditPath, id, "acme-tools/shout")
		})
		// The log the server wrote is a valid chain.
		v := wasmgate(t, "", "audit", "verify", auditPath)
		assert.Equal(t, exitSuccess, v.code, v.stderr)
		assert.Contains(t, v.stdout, "ok, ")
	})

	t.Run("env is never audited nor logged", func(t *testing.T) {
		const secret = "sk-live-Zq8UnmistakableSecret"
		env := `"env":{"API_KEY":"` + secret + `","OTHER":"` + secret + `-2"}`
		for _, tc := range []struct{ body, code string }{
			{`{"packageName":"acme-tools","version":"1.0.0","name":"withkey",` + env + `}`, ""},
			{`{"packageName":"acme-tools","version":"1.0.0","name":"boom",` + env + `}`, "TOOL_EXECUTION_ERROR"},
			{`{"packageName":"acme-slow","version":"1.0.0","name":"spin",` + env + `}`, "EXECUTION_TIMEOUT"},
			{`{"packageName":"upper","name":"upper","params":{"text":"a"},` + env + `}`, ""},
			{`{"packageName":"acme-tools","version":"1.0.0","name":"nope",` + env + `}`, "TOOL_NOT_FOUND"},
		} {
			r, tr := c.execute(t, "/execute-tool", tc.body)
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			if tc.code == "" {
				assert.True(t, tr.Success, "%s", r.body)
			} else {
				require.NotNil(t, tr.Error, "%s", r.body)
				assert.Equal(t, tc.code, tr.Error.Code)
			}
			assert.NotContains(t, string(r.body), secret)
		}
		r := c.do(t, http.MethodPost, "/execute-tool", `{"packageName":"acme-tools","name":"withkey","params":[],`+env+`}`)
		requireRefusal(t, r, http.StatusBadRequest, "INVALID_REQUEST", "params")
		assert.NotContains(t, string(r.body), secret)

		records, err := os.ReadFile(auditPath)
		require.NoError(t, err)
		assert.Contains(t, string(records), `"action":"acme-tools/withkey"`, "the calls were audited")
		assert.NotContains(t, string(records), secret)
		assert.Contains(t, srv.logText(), `"tool":"acme-tools/withkey"`, "the calls were logged")
		assert.NotContains(t, srv.logText(), secret)
	})

	t.Run("metrics", func(t *testing.T) {
		scrape := func() []byte {
			r := c.do(t, http.MethodGet, "/metrics", "")
			require.Equal(t, http.StatusOK, r.status, "%s", r.body)
			assert.Contains(t, r.header.Get("Content-Type"), "text/plain")
			return r.body
		}
		const (
			success     = `wasmgate_tool_calls_total{error_code="",status="SUCCESS"}`
			notFound    = `wasmgate_tool_calls_total{error_code="TOOL_NOT_FOUND",status="BLOCKED"}`
			failed      = `wasmgate_tool_calls_total{error_code="TOOL_EXECUTION_ERROR",status="FAILED"}`
			refused     = `wasmgate_tool_calls_total{error_code="INVALID_REQUEST",status="REFUSED"}`
			ok200       = `wasmgate_http_request_duration_seconds_count{code="200",route="/execute-tool"}`
			bad400      = `wasmgate_http_request_duration_seconds_count{code="400",route="/execute-tool"}`
			health200   = `wasmgate_http_request_duration_seconds_count{code="200",route="/health"}`
			exceptions  = `wasmgate_tool_call_reason_codes_total{reason_code="EXECUTOR_EXCEPTION"}`
			inFlight    = `wasmgate_tool_calls_in_flight`
			durationSum = `wasmgate_http_request_duration_seconds_sum{code="200",route="/execute-tool"}`
		)
		before := scrape()
		for range 3 {
			r, tr := c.execute(t, "/api/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"m"}`))
			requireSuccess(t, r, tr, `{"s":"M"}`)
		}
		r, tr := c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", "nope", `{}`))
		requireToolError(t, r, tr, "TOOL_NOT_FOUND", "nope")
		r, tr = c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", "boom", `{}`))
		requireToolError(t, r, tr, "TOOL_EXECUTION_ERROR", "boom")
		requireRefusal(t, c.do(t, http.MethodPost, "/execute-tool", `{}`), http.StatusBadRequest, "INVALID_REQUEST", "packageName")
		require.Equal(t, http.StatusOK, c.do(t, http.MethodGet, "/health", "").status)
		after := scrape()

		for _, m := range []string{"# TYPE wasmgate_tool_calls_total counter", "# TYPE wasmgate_http_request_duration_seconds histogram", "# TYPE wasmgate_tool_calls_in_flight gauge"} {
			assert.Contains(t, string(after), m)
		}
		delta := func(series string) float64 { return metricValue(t, after, series) - metricValue(t, before, series) }
		assert.Equal(t, 3.0, delta(success))
		assert.Equal(t, 1.0, delta(notFound))
		assert.Equal(t, 1.0, delta(failed))
		assert.Equal(t, 1.0, delta(refused))
		assert.Equal(t, 1.0, delta(exceptions))
		assert.Equal(t, 5.0, delta(ok200), "3 successes and 2 tool errors, all HTTP 200")
		assert.Equal(t, 1.0, delta(bad400))
		assert.Equal(t, 1.0, delta(health200))
		assert.Positive(t, delta(durationSum))
		assert.Equal(t, 0.0, metricValue(t, after, inFlight), "nothing runs between calls")
	})
}

// findRecord returns the audit record of action under traceID.
func findRecord(t *testing.T, path, traceID, action string) audit.Record {
	t.Helper()
	for _, r := range readRecords(t, path) {
		if r.TraceID == traceID && r.Action == action {
			return r
		}
	}
	t.Fatalf("no audit record of %s with trace_id %s in %s", action, traceID, path)
	return audit.Record{}
}

// TestServeSaturation fills the one slot and the one queue place of a
// server started with --max-concurrency 1 with a tool that spins until its
// 2 s limit: the calls beyond them are refused with 503 and Retry-After
// instead of piling up, and the others run to their verdict.
func TestServeSaturation(t *testing.T) {
	t.Parallel()
	store := toolStore(t, spinPackage("acme-slow", `{"timeout_ms":2000,"fuel":4000000000000000000}`))
	srv := startServe(t, nil, "--tools-dir", store, "--max-concurrency", "1", "--queue-length", "1")
	c := newProtocolClient(srv.url, "")

	const n = 6
	replies := make([]reply, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Go(func() {
			replies[i], errs[i] = c.send(http.MethodPost, "/execute-tool", call("acme-slow", "1.0.0", "spin", `{}`))
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	var unavailable, timedOut int
	for _, r := range replies {
		switch r.status {
		case http.StatusServiceUnavailable:
			unavailable++
			requireRefusal(t, r, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE", "retry later")
			assert.Equal(t, "1", r.header.Get("Retry-After"))
		default:
			timedOut++
			requireToolError(t, r, decodeTool(t, r), "EXECUTION_TIMEOUT", "EXECUTOR_TIMEOUT")
		}
	}
	// One call runs and one waits; the waiting one may get the slot or give
	// up after 2 s. The four beyond find the queue full.
	assert.GreaterOrEqual(t, unavailable, n-2, "calls beyond the slot and the queue are refused")
	assert.GreaterOrEqual(t, timedOut, 1, "the call holding the slot runs to its verdict")

	m := c.do(t, http.MethodGet, "/metrics", "")
	assert.Equal(t, float64(unavailable),
		metricValue(t, m.body, `wasmgate_tool_calls_total{error_code="SERVICE_UNAVAILABLE",status="REFUSED"}`))
	assert.Equal(t, float64(unavailable),
		metricValue(t, m.body, `wasmgate_http_request_duration_seconds_count{code="503",route="/execute-tool"}`))
}

// TestServeDrainsOnSIGTERM stops a server with SIGTERM while a call runs:
// the call still gets its whole answer, new connections are refused, and
// the process exits 0 after logging that it stopped.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	store := toolStore(t, spinPackage("acme-slow", `{"timeout_ms":1500,"fuel":4000000000000000000}`))
	srv := startServe(t, nil, "--tools-dir", store)
	c := newProtocolClient(srv.url, "")

	type answer struct {
		reply
		err error
	}
	inFlight := make(chan answer, 1)
	go func() {
		r, err := c.send(http.MethodPost, "/execute-tool", call("acme-slow", "1.0.0", "spin", `{}`))
		inFlight <- answer{r, err}
	}()
	waitInFlight(t, c, 1)

	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	u, err := url.Parse(srv.url)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		conn, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err == nil {
			conn.Close()
			return false
		}
		return errors.Is(err, syscall.ECONNREFUSED)
	}, 10*time.Second, 10*time.Millisecond, "a new connection is refused once SIGTERM arrived")

	a := <-inFlight
	require.NoError(t, a.err, "the call in flight is not cut off")
	r := a.reply
	require.Equal(t, http.StatusOK, r.status, "the call in flight gets its answer: %s", r.body)
	requireToolError(t, r, decodeTool(t, r), "EXECUTION_TIMEOUT", "EXECUTOR_TIMEOUT")

	select {
	case <-srv.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("wasmgate serve did not exit after SIGTERM:\n%s", srv.logText())
	}
	assert.Equal(t, exitSuccess, srv.cmd.ProcessState.ExitCode(), srv.logText())
	log := srv.logText()
	assert.Contains(t, log, `msg="shutting down: no new requests; waiting for the calls in flight"`)
	assert.Contains(t, log, "msg=stopped")
	called := strings.Index(log, "path=/execute-tool route=/execute-tool status=200")
	require.NotEqual(t, -1, called, "the call was logged")
	assert.Less(t, called, strings.Index(log, "msg=stopped"),
		"the call in flight finished before the server stopped")
}

// waitInFlight waits until the server's in-flight gauge reads n.
func waitInFlight(t *testing.T, c protocolClient, n float64) {
	t.Helper()
	require.Eventually(t, func() bool {
		m := c.do(t, http.MethodGet, "/metrics", "")
		return metricValue(t, m.body, "wasmgate_tool_calls_in_flight") == n
	}, 30*time.Second, 10*time.Millisecond, "%v calls in flight", n)
}

// TestServeToolLoadSurvivesAGoneClient sends two calls of a tool that is
// not loaded yet and takes about half a second to load (a loop at the top
// level of its module); the first client gives up while the tool loads.
// The second, still waiting, must get the tool's answer: the tool is fine,
// and one client's leaving is no verdict on it. The server keeps no cache:
// the tool's snapshot, taken when MCP offered it at start-up, would make
// the call's load instant.
func TestServeToolLoadSurvivesAGoneClient(t *testing.T) {
	t.Parallel()
	store := toolStore(t, storePackage{"slow-load", "1.0.0",
		`let i = 0; while (i < 3000000) i++; export const t = { execute: () => ({ i }) };`,
		`{"name":"slow-load","version":"1.0.0"}`})
	srv := startServe(t, nil, "--tools-dir", store, "--cache-dir", "off")
	c := newProtocolClient(srv.url, "")
	body := call("slow-load", "1.0.0", "t", `{}`)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := make(chan error, 1)
	go func() {
		_, err := c.sendContext(ctx, http.MethodPost, "/execute-tool", body)
		gone <- err
	}()
	waitInFlight(t, c, 1)
	type answer struct {
		reply
		err error
	}
	waiting := make(chan answer, 1)
	go func() {
		r, err := c.send(http.MethodPost, "/execute-tool", body)
		waiting <- answer{r, err}
	}()
	waitInFlight(t, c, 2)
	cancel()
	require.ErrorIs(t, <-gone, context.Canceled)

	a := <-waiting
	require.NoError(t, a.err)
	r, tr := a.reply, decodeTool(t, a.reply)
	requireSuccess(t, r, tr, `{"i":3000000}`)

	// And the tool is served afterwards.
	r, tr = c.execute(t, "/execute-tool", body)
	requireSuccess(t, r, tr, `{"i":3000000}`)
}

// TestServeAuthScheme checks that the "Bearer" scheme is matched without
// regard to case, as HTTP authentication schemes are (RFC 9110, 11.1), and
// that the key itself is not.
func TestServeAuthScheme(t *testing.T) {
	t.Parallel()
	const key = "Case-Sensitive-Key"
	srv := startServe(t, []string{"EXECUTOR_API_KEY=" + key}, "--config", td("tools.json"))
	c := newProtocolClient(srv.url, "")
	body := call("upper", "", "upper", `{"text":"a"}`)
	for _, auth := range []string{"Bearer " + key, "bearer " + key, "BEARER " + key} {
		r, tr := c.execute(t, "/execute-tool", body, "Authorization", auth)
		requireSuccess(t, r, tr, `{"text":"A"}`)
	}
	for _, auth := range []string{"Bearer " + strings.ToLower(key), "Bearer " + strings.ToUpper(key)} {
		r := c.do(t, http.MethodPost, "/execute-tool", body, "Authorization", auth)
		requireRefusal(t, r, http.StatusUnauthorized, "UNAUTHORIZED", "API key")
	}
}

// TestServeAuthAll checks --auth-all: the key guards every route but
// preflights, and the flag without a key is a usage error.
func TestServeAuthAll(t *testing.T) {
	t.Parallel()
	const key = "all-routes-key"
	srv := startServe(t, []string{"EXECUTOR_API_KEY=" + key}, "--config", td("tools.json"), "--auth-all")
	anon := newProtocolClient(srv.url, "")
	c := newProtocolClient(srv.url, key)
	for _, path := range []string{"/health", "/api/health", "/info", "/metrics"} {
		requireRefusal(t, anon.do(t, http.MethodGet, path, ""), http.StatusUnauthorized, "UNAUTHORIZED", "API key")
		assert.Equal(t, http.StatusOK, c.do(t, http.MethodGet, path, "").status, path)
	}
	requireRefusal(t, anon.do(t, http.MethodPost, "/execute-tool", call("upper", "", "upper", `{"text":"a"}`)), http.StatusUnauthorized, "UNAUTHORIZED", "API key")
	r, tr := c.execute(t, "/execute-tool", call("upper", "", "upper", `{"text":"a"}`))
	requireSuccess(t, r, tr, `{"text":"A"}`)
	pre := anon.do(t, http.MethodOptions, "/health", "")
	assert.Equal(t, http.StatusOK, pre.status, "preflights stay open")
	assertProtocolHeaders(t, pre)
	assert.Contains(t, srv.logText(), `auth="all routes"`)

	u := wasmgate(t, "", "serve", "--addr", "127.0.0.1:0", "--auth-all")
	assert.Equal(t, exitUsage, u.code)
	assert.Contains(t, u.stderr, "--auth-all needs a key: set EXECUTOR_API_KEY")
}

// TestServeAdmissionUnderLoad sends 2,000 calls of a ~10 ms tool from 32
// clients at once to a server with the default admission (4 calls per CPU
// running, the rest waiting up to --queue-wait): every call is served,
// none is refused with 503.
func TestServeAdmissionUnderLoad(t *testing.T) {
	testenv.LoadTest(t) // 2,000 calls: make loadtest runs it
	t.Parallel()
	// About 10 ms of computation per call on the project's 2-core machine.
	work := `export const work = { execute: ({ n }) => { let x = 0; for (let i = 0; i < n; i++) { x = (x * 31 + i) | 0; } return { x }; } };`
	store := toolStore(t, storePackage{"acme-work", "1.0.0", work, `{"name":"acme-work","version":"1.0.0"}`})
	srv := startServe(t, nil, "--tools-dir", store)
	c := newProtocolClient(srv.url, "")
	body := call("acme-work", "1.0.0", "work", `{"n":15000}`)
	r, tr := c.execute(t, "/execute-tool", body) // loads the tool once
	requireSuccess(t, r, tr, `{"x":809936204}`)

	const clients, calls = 32, 2000
	statuses := make([]map[int]int, clients)
	var wg sync.WaitGroup
	for i := range clients {
		statuses[i] = map[int]int{}
		wg.Go(func() {
			for range calls / clients {
				r, err := c.send(http.MethodPost, "/execute-tool", body)
				if err != nil {
					statuses[i][-1]++
					continue
				}
				statuses[i][r.status]++
			}
		})
	}
	wg.Wait()
	total := map[int]int{}
	for _, m := range statuses {
		for k, v := range m {
			total[k] += v
		}
	}
	assert.Equal(t, map[int]int{http.StatusOK: calls / clients * clients}, total, "every call served, none refused")
	m := c.do(t, http.MethodGet, "/metrics", "")
	assert.Equal(t, float64(0), metricValue(t, m.body, `wasmgate_admission_refusals_total{reason="queue_wait"}`))
	assert.Equal(t, float64(0), metricValue(t, m.body, `wasmgate_admission_refusals_total{reason="queue_full"}`))
	assert.Equal(t, float64(calls/clients*clients+1), metricValue(t, m.body, `wasmgate_tool_calls_total{error_code="",status="SUCCESS"}`))
}

// TestServeNPMAllow checks that a server with a registry fetches only the
// npm packages --npm-allow names, refuses the others as PACKAGE_NOT_FOUND
// (BLOCKED and audited), says which in /info, and refuses a bad pattern.
func TestServeNPMAllow(t *testing.T) {
	t.Parallel()
	store := toolStore(t,
		storePackage{"acme-tools", "1.0.0", acmeTools, `{"name":"acme-tools","version":"1.0.0"}`},
		storePackage{"@tpmjs/tools-normalize-whitespace", "0.2.0", normalizeWhitespace, `{"name":"@tpmjs/tools-normalize-whitespace","version":"0.2.0"}`},
	)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	srv := startServe(t, nil, "--config", td("tools.json"), "--tools-dir", store, "--audit", auditPath, "--npm-allow", "@tpmjs/*")
	c := newProtocolClient(srv.url, "")
	r, tr := c.execute(t, "/execute-tool", `{"packageName":"@tpmjs/tools-normalize-whitespace","name":"normalizeWhitespaceTool","version":"0.2.0","params":{"text":"a  b"}}`)
	requireSuccess(t, r, tr, `{"text":"a b"}`)
	r, tr = c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"a"}`))
	requireToolError(t, r, tr, "PACKAGE_NOT_FOUND", "package acme-tools is not served here: it is not in the registry, and this server fetches only npm packages matching @tpmjs/* (--npm-allow)")
	require.NotNil(t, tr.Wasmgate)
	assert.Equal(t, "BLOCKED", tr.Wasmgate.Status)
	assert.Equal(t, []string{"ACTION_UNKNOWN"}, tr.Wasmgate.ReasonCodes)
	rec := findRecord(t, auditPath, tr.Wasmgate.TraceID, "acme-tools/shout")
	assert.Equal(t, "BLOCKED", rec.Status)
	r, tr = c.execute(t, "/execute-tool", call("text.slug", "", "slug", `{"title":"Registry Actions Stay"}`))
	requireSuccess(t, r, tr, `{"slug":"registry-actions-stay","removed":[]}`)
	info := c.do(t, http.MethodGet, "/info", "")
	var body struct {
		Wasmgate struct {
			NPMAllow []string `json:"npmAllow"`
		} `json:"wasmgate"`
	}
	require.NoError(t, json.Unmarshal(info.body, &body))
	assert.Equal(t, []string{"@tpmjs/*"}, body.Wasmgate.NPMAllow)
	assert.Contains(t, srv.logText(), `npm_allow=@tpmjs/*`)

	// With --config and no --npm-allow: registry only.
	closed := startServe(t, nil, "--config", td("tools.json"), "--tools-dir", store)
	r, tr = newProtocolClient(closed.url, "").execute(t, "/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"a"}`))
	requireToolError(t, r, tr, "PACKAGE_NOT_FOUND", "this server fetches only npm packages matching nothing (--npm-allow is empty)")

	u := wasmgate(t, "", "serve", "--addr", "127.0.0.1:0", "--npm-allow", "@acme/[")
	assert.Equal(t, exitUsage, u.code)
	assert.Contains(t, u.stderr, `--npm-allow: pattern "@acme/[": syntax error in pattern`)
}
