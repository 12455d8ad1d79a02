package mcp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/wasmgate/internal/weborigin"
)

// Defaults of HTTPConfig.
const (
	// DefaultMaxBodyBytes is the SDK's own bound on a request body.
	DefaultMaxBodyBytes = sdk.DefaultMaxRequestBodyBytes
	DefaultIdleTimeout  = 10 * time.Minute
	DefaultMaxSessions  = 1000
)

// HTTPConfig configures the streamable HTTP transport of a Server.
type HTTPConfig struct {
	// AllowedOrigins are the web origins ("https://app.example") whose
	// pages may use the server. The transport's specification requires
	// the Origin header to be validated, as a web page the user visits
	// could otherwise drive a server on loopback (DNS rebinding, or a
	// plain cross-origin call): a request with an Origin header is
	// refused with 403 unless its origin is listed, or is a loopback
	// origin (localhost, 127.0.0.0/8, [::1], any port) on a connection
	// to a loopback address, that is a page of a program of this machine.
	// A request without one (a program, not a browser) is served.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes);
	// a larger one is refused with 413.
	MaxBodyBytes int64
	// IdleTimeout ends a session no request has used for that long
	// (default DefaultIdleTimeout). A call in progress keeps its session.
	IdleTimeout time.Duration
	// MaxSessions bounds the sessions open at once (default
	// DefaultMaxSessions): each holds memory until it ends, and a client
	// may open them without ever using them. Beyond it a new session is
	// refused with 503 and Retry-After.
	MaxSessions int
}

// HTTPHandler serves the streamable HTTP transport (one endpoint, POST for
// messages, GET for the server's stream, DELETE to end a session), after
// the checks of cfg, and refusing, as stdio does (see ServeStdio), a body
// that is not JSON or not a JSON-RPC message, or a batch under a protocol
// version without batches, with HTTP 400 and a JSON-RPC error. Every
// refusal's body is a JSON-RPC error without an id.
func (s *Server) HTTPHandler(cfg HTTPConfig) http.Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	return &httpFront{
		s:       s,
		cfg:     cfg,
		origins: weborigin.NewSet(cfg.AllowedOrigins),
		sdk: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.sdk },
			&sdk.StreamableHTTPOptions{
				Logger:              s.cfg.Logger,
				SessionTimeout:      cfg.IdleTimeout,
				MaxRequestBodyBytes: cfg.MaxBodyBytes,
			}),
	}
}

// httpFront is the streamable HTTP transport: the SDK's handler behind the
// checks the SDK does not make.
type httpFront struct {
	s       *Server
	cfg     HTTPConfig
	origins weborigin.Set
	sdk     http.Handler

	mu sync.Mutex
	// opening counts the requests that may open a session and are being
	// served: each is counted against MaxSessions until it is done, so
	// that concurrent ones cannot pass the bound together (a session of
	// one is counted twice while it is being opened, which errs towards
	// refusing).
	opening int
}

func (h *httpFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !h.originAllowed(r, origin) {
		refuse(w, http.StatusForbidden, &rpcError{codeRefused, fmt.Sprintf(
			"origin %q may not use this MCP server: web pages are served only from the origins the server lists "+
				"(wasmgate serve --cors-origin), or from this machine (localhost, 127.0.0.1, [::1]) on a connection to a loopback address", origin)})
		return
	}
	if r.Method != http.MethodPost || !isJSON(r.Header.Get("Content-Type")) {
		// The SDK answers these (the server's stream, the end of a
		// session, a body of another type: 415).
		h.sdk.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		refuse(w, http.StatusRequestEntityTooLarge, &rpcError{codeInvalidRequest, fmt.Sprintf(
			"request body exceeds %d bytes, the server's limit (wasmgate serve --max-body-bytes); send a smaller message", h.cfg.MaxBodyBytes)})
		return
	case err != nil:
		refuse(w, http.StatusBadRequest, &rpcError{codeInvalidRequest, fmt.Sprintf("cannot read the request body: %v", err)})
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	id := r.Header.Get("Mcp-Session-Id")
	var requested string // only a batch needs the session's version
	if id != "" && bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) {
		var open bool
		if requested, open = h.session(id); !open {
			h.sdk.ServeHTTP(w, r) // the SDK's 404 for a session it does not have
			return
		}
	}
	if e := screen(body, requested); e != nil {
		refuse(w, http.StatusBadRequest, e)
		return
	}
	if id == "" {
		// A request without a session opens one (the SDK closes it again
		// at once unless the request is initialize).
		done, ok := h.open()
		if !ok {
			h.s.cfg.Logger.Warn("mcp: a new session was refused: the server has as many as it may", "max_sessions", h.cfg.MaxSessions)
			w.Header().Set("Retry-After", strconv.Itoa(h.retryAfter()))
			refuse(w, http.StatusServiceUnavailable, &rpcError{codeRefused, fmt.Sprintf(
				"this MCP server has %d sessions open, as many as it may (wasmgate serve --mcp-max-sessions); retry later: "+
					"a session ends when its client ends it (DELETE) or after %s unused", h.cfg.MaxSessions, h.cfg.IdleTimeout)})
			return
		}
		defer done()
	}
	h.sdk.ServeHTTP(w, r)
}

// originAllowed reports whether a page of origin may use the server; see
// HTTPConfig.AllowedOrigins.
func (h *httpFront) originAllowed(r *http.Request, origin string) bool {
	if h.origins.Contains(origin) {
		return true
	}
	// Only a program of this machine reaches a loopback address, and a web
	// site cannot give its pages a loopback origin: such a page is served
	// by a program here, which could call the server without a browser.
	// The Host header is not looked at: a rebinding attacker chooses it.
	return weborigin.IsLoopback(origin) && toLoopback(r)
}

// toLoopback reports whether r arrived on a loopback address.
func toLoopback(r *http.Request) bool {
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || addr == nil {
		return false
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// session returns the protocol version the session id asked for in its
// initialize request ("" before it), and whether the session is open.
func (h *httpFront) session(id string) (requested string, open bool) {
	if id == "" {
		return "", false
	}
	for ss := range h.s.sdk.Sessions() {
		if ss.ID() == id {
			if p := ss.InitializeParams(); p != nil {
				return p.ProtocolVersion, true
			}
			return "", true
		}
	}
	return "", false
}

// open counts a request that may open a session, if the server may have
// one more; done uncounts it once it is served.
func (h *httpFront) open() (done func(), ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions()+h.opening >= h.cfg.MaxSessions {
		return nil, false
	}
	h.opening++
	return func() {
		h.mu.Lock()
		h.opening--
		h.mu.Unlock()
	}, true
}

// sessions counts the open sessions of this transport: the SDK's sessions
// with an id (those of stdio and of in-memory transports have none).
func (h *httpFront) sessions() int {
	n := 0
	for ss := range h.s.sdk.Sessions() {
		if ss.ID() != "" {
			n++
		}
	}
	return n
}

// retryAfter is the Retry-After of a refused session, in seconds: the idle
// timeout, the latest an abandoned session ends, but at most a minute, as
// clients end theirs sooner.
func (h *httpFront) retryAfter() int {
	return int(math.Ceil(min(h.cfg.IdleTimeout, time.Minute).Seconds()))
}

// isJSON reports whether a Content-Type is application/json, as the SDK
// reads it.
func isJSON(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == "application/json"
}

// refuse answers e with status.
func refuse(w http.ResponseWriter, status int, e *rpcError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(e.line())
}
