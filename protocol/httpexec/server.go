// Package httpexec serves the HTTP executor protocol v1.0 (GET /health,
// POST /execute-tool, GET /info, also under /api/) over the pipeline: every
// call is resolved to an executor, run sandboxed and limited, and audited.
//
// A request's packageName names an action or executor of the registry, or
// an npm package of JS tools (installed into the tool store on first use,
// then kept); its name is the tool's export. The protocol's facts are in
// docs/DESIGN.md; what a production server adds (auth, CORS, limits, metrics,
// logs, graceful shutdown) is in docs/SERVE.md.
package httpexec

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wasmgate/wasmgate/internal/admission"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/weborigin"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// The protocol's constants.
const (
	ProtocolVersion = "1.0"
	// VersionHeader carries the protocol version on requests and responses.
	VersionHeader = "X-TPMJS-Protocol-Version"
)

// Error codes of the protocol (and of this server's own refusals).
const (
	CodePackageNotFound    = "PACKAGE_NOT_FOUND"
	CodeToolNotFound       = "TOOL_NOT_FOUND"
	CodeToolInvalid        = "TOOL_INVALID"
	CodeToolExecutionError = "TOOL_EXECUTION_ERROR"
	CodeExecutionTimeout   = "EXECUTION_TIMEOUT"
	CodeInternalError      = "INTERNAL_ERROR"
	CodeInvalidRequest     = "INVALID_REQUEST"
	CodeUnauthorized       = "UNAUTHORIZED"
	CodeNotFound           = "NOT_FOUND"
	CodeMethodNotAllowed   = "METHOD_NOT_ALLOWED"
	CodePayloadTooLarge    = "PAYLOAD_TOO_LARGE"
	CodeServiceUnavailable = "SERVICE_UNAVAILABLE"
	DefaultMaxBodyBytes    = 1 << 20
	// DefaultQueueLength bounds the calls waiting for a slot: each holds
	// its request body (at most MaxBodyBytes) while it waits.
	DefaultQueueLength      = 256
	DefaultQueueWait        = 2 * time.Second
	DefaultMaxExecutionTime = 60 * time.Second

	// CodeForbidden: a web page's request to a server without a key.
	CodeForbidden = "FORBIDDEN"
	// CodeUnsupportedMediaType: a body that is not application/json.
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
)

// Config configures a Server. Runtime is required.
type Config struct {
	// Runtime runs and audits every call (a *wasmgate.Runtime): the
	// actions and executors of its registry when the server is made are
	// served by name, and the npm tools the server loads become actions of
	// it (pipeline.ShareTool), so that every front of the process serves
	// them alike. Its results mode (pipeline.ResultsFull or
	// pipeline.ResultsDigestOnly) is what a call's answer carries: with
	// digest-only results a success answers output null (the digest is in
	// the verdict), and a failure's message never quotes the tool.
	Runtime pipeline.Host
	// Runner, when set, executes every call instead of Runtime (a
	// cluster.Client: the calls go to workers, which audit them). It serves
	// its actions by name; Runtime's registry and npm packages are not used
	// (tools are published to the cluster instead).
	Runner pipeline.Runner
	// Store is the tool store npm packages are installed into.
	Store jstool.Store
	// LoadTool, when set, loads a tool of an installed package in place of
	// the server: serve passes its MCP catalog's (mcp.StoreCatalog.LoadTool),
	// so that a tool is loaded once for both fronts, and a call waits for
	// that tool alone, not for the catalog. An export that is not a tool
	// matches sandbox.ErrNotAdmitted. Default: pipeline.LoadExecutor on
	// Runtime's engine. Either way a load is shared by every call waiting for it,
	// and the server does not cancel it when the call that started it
	// leaves.
	LoadTool func(ctx context.Context, src pipeline.ExecutorSource) (pipeline.Executor, error)
	// Catalog, when set, says how far the catalog of the tool store
	// (/mcp's tools/list) has loaded: /health carries it under
	// "wasmgate"."catalog", so that a client can tell a server still
	// loading from one whose store offers few tools.
	Catalog func() CatalogStatus
	// NPMAllow are the npm packages a request may name beyond the
	// registry's actions and executors: path.Match patterns on package
	// names ("@tpmjs/*"), "*" alone for every package. Nil means every
	// package when there is no Registry, and none when there is one: a
	// deployment with a registry serves what it registered.
	NPMAllow []string
	// APIKey, when set, is required as "Authorization: Bearer <key>" on
	// POST /execute-tool, the one operation the protocol's OpenAPI
	// description secures: /health and /info stay open, as clients probe
	// them without a key.
	APIKey string
	// AuthAll extends the key to every route (/health, /info, /metrics)
	// but OPTIONS preflights, for deployments that want nothing open.
	AuthAll bool
	// CORSOrigins are the web origins ("https://app.example") whose pages
	// a server without APIKey serves. Without a key, a request carrying an
	// Origin header (a browser page's) is refused with 403 on every route
	// unless its origin is listed: any web site the user visits could
	// otherwise drive an executor listening on loopback, and read its
	// answers (Access-Control-Allow-Origin is *, as the protocol requires).
	// With a key, pages are served as the protocol says, and this list is
	// not consulted. /mcp applies its own origin rule (protocol/mcp).
	CORSOrigins []string
	// MaxConcurrency bounds the executions at once (default: 4 per CPU);
	// QueueLength more wait at most QueueWait for a slot (defaults:
	// DefaultQueueLength, 2 s) before the server answers 503. The queue is
	// bounded in time more than in length: a burst of clients is served
	// late rather than refused at once.
	MaxConcurrency int
	QueueLength    int
	QueueWait      time.Duration
	// MaxBodyBytes bounds a request body (default 1 MiB).
	MaxBodyBytes int64
	// MaxExecutionTime is the wall-clock limit of one tool call, and what
	// /info advertises (default 60 s, the protocol's minimum). A tool's own
	// timeout_ms applies within it.
	MaxExecutionTime time.Duration
	// ImplementationVersion is reported by /health and /info.
	ImplementationVersion string
	// Logger receives one structured line per request (default: discard).
	Logger *slog.Logger
	// Metrics is where the server registers its collectors (default: a
	// registry of its own, served at /metrics).
	Metrics *prometheus.Registry
	// MCP, when set, is served at /mcp: the Model Context Protocol's
	// streamable HTTP transport (protocol/mcp). It is behind the API key
	// whenever one is set, and its tool calls take their slots from the
	// same admission as /execute-tool (Server.Admit).
	MCP http.Handler
}

// CatalogStatus is how far the catalog of a server's tool store has loaded
// (mcp.StoreStatus): its State is "loading" until every package it offers
// is loaded, then "ready".
type CatalogStatus struct {
	State          string `json:"state"`
	Packages       int    `json:"packages"`
	PackagesLoaded int    `json:"packagesLoaded"`
	PackagesFailed int    `json:"packagesFailed"`
	Tools          int    `json:"tools"`
}

// Server is the protocol's HTTP handler.
type Server struct {
	cfg     Config
	origins weborigin.Set
	keyHash [32]byte
	mux     *http.ServeMux
	tools   *toolCache
	gate    *admission.Gate
	metrics *metrics
	// actions and executors are those of the Runtime's registry when the
	// server was made: what it serves by name. The npm tools added since
	// are served as npm tools, by package and export, as before.
	actions, executors []string
	engine             sandbox.EngineName
}

// NewServer returns the handler for cfg.
func NewServer(cfg Config) *Server {
	if cfg.MaxConcurrency <= 0 {
		cfg.MaxConcurrency = 4 * runtime.GOMAXPROCS(0)
	}
	if cfg.QueueLength <= 0 {
		cfg.QueueLength = DefaultQueueLength
	}
	if cfg.QueueWait <= 0 {
		cfg.QueueWait = DefaultQueueWait
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxExecutionTime <= 0 {
		cfg.MaxExecutionTime = DefaultMaxExecutionTime
	}
	if cfg.ImplementationVersion == "" {
		cfg.ImplementationVersion = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	s := &Server{
		cfg:     cfg,
		origins: weborigin.NewSet(cfg.CORSOrigins),
		keyHash: sha256.Sum256([]byte(cfg.APIKey)),
		tools:   newToolCache(cfg),
		gate:    admission.NewQueued(cfg.MaxConcurrency, cfg.QueueLength, cfg.QueueWait),
		metrics: newMetrics(cfg.Metrics),
	}
	s.actions, s.executors = cfg.Runtime.Actions(), cfg.Runtime.Executors()
	_ = cfg.Runtime.UseEngine(context.Background(), func(_ context.Context, e sandbox.Engine) error {
		s.engine = e.Name()
		return nil
	})
	mux := http.NewServeMux()
	for _, prefix := range []string{"", "/api"} {
		mux.HandleFunc(prefix+"/health", only(http.MethodGet, s.health))
		mux.HandleFunc(prefix+"/info", only(http.MethodGet, s.info))
		mux.HandleFunc(prefix+"/execute-tool", only(http.MethodPost, s.executeTool))
	}
	if cfg.MCP != nil {
		mux.Handle("/mcp", cfg.MCP)
	}
	mux.HandleFunc("/metrics", only(http.MethodGet, promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}).ServeHTTP))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no route "+r.URL.Path+" (routes: /health, /info, /execute-tool, also under /api/, /metrics, and /mcp when MCP is served)")
	})
	s.mux = mux
	return s
}

// ServeHTTP applies CORS, the version header and authentication, then
// routes the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, "+VersionHeader+", X-Trace-Id, traceparent")
	h.Set("Access-Control-Expose-Headers", VersionHeader+", X-Trace-Id, Retry-After")
	if s.cfg.MCP != nil && r.URL.Path == "/mcp" {
		// The streamable HTTP transport's session and version headers, and
		// DELETE, which ends a session.
		h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Accept, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, traceparent")
		h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, "+VersionHeader)
	}
	h.Set("Access-Control-Max-Age", "86400")
	h.Set(VersionHeader, ProtocolVersion)
	if s.cfg.APIKey == "" {
		// The answer depends on the Origin header: a cache must not give a
		// page's refusal to a client, or a client's answer to a page.
		h.Add("Vary", "Origin")
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	route := s.route(r)
	defer func() {
		s.metrics.observeRequest(route, rec.status, time.Since(start))
		s.cfg.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("route", route),
			slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)),
			slog.String("trace_id", rec.traceID), slog.String("tool", rec.tool), slog.String("code", rec.code))
	}()
	if r.Method == http.MethodOptions {
		// The protocol's status for a preflight (browsers take any 2xx).
		rec.WriteHeader(http.StatusOK)
		return
	}
	if s.cfg.APIKey != "" && (s.cfg.AuthAll || route == "/execute-tool" || route == "/mcp") && !s.authorized(r) {
		if route == "/mcp" {
			// What MCP clients look for on a 401 (RFC 6750).
			h.Set("WWW-Authenticate", `Bearer realm="wasmgate"`)
		}
		writeError(rec, http.StatusUnauthorized, CodeUnauthorized, "invalid or missing API key (Authorization: Bearer <key>)")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" && s.cfg.APIKey == "" && route != "/mcp" && !s.origins.Contains(origin) {
		// Browsers send Origin on every request whose answer a page may
		// read (CORS mode) and on every POST, forms included: a request
		// without it is a program's, which could reach the server anyway,
		// or a GET whose answer the page cannot see.
		writeError(rec, http.StatusForbidden, CodeForbidden, fmt.Sprintf(
			"this server has no API key, so it serves no web page: origin %q is refused, as any web site the user visits could otherwise run tools here; "+
				"set EXECUTOR_API_KEY to require a key, or list the page's origin with --cors-origin", origin))
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// only answers a request with another method than method with 405 and the
// structured error.
func only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", method+", OPTIONS")
			writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" "+r.URL.Path+" is not allowed; use "+method)
			return
		}
		h(w, r)
	}
}

// authorized compares the bearer token with the key in constant time (of
// their digests, so that not even the key's length leaks).
func (s *Server) authorized(r *http.Request) bool {
	// The scheme is case-insensitive (RFC 9110 §11.1); the key is not.
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], s.keyHash[:]) == 1
}

// route names the request's route for metrics and logs, from a fixed set.
func (s *Server) route(r *http.Request) string {
	switch p := r.URL.Path; strings.TrimPrefix(p, "/api") {
	case "/health", "/info", "/execute-tool":
		return strings.TrimPrefix(p, "/api")
	case "/metrics", "/mcp":
		if !strings.HasPrefix(p, "/api") {
			return p
		}
	}
	return "other"
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	// A server whose audit log is failing refuses every call (BLOCKED,
	// AUDIT_LOG_FAILED, nothing run) until the log recovers: it is not
	// healthy, and a load balancer should send the calls elsewhere.
	if err := s.cfg.Runtime.Health(); err != nil {
		writeError(w, http.StatusServiceUnavailable, CodeInternalError, "the audit log cannot be written, so every call is refused until it recovers: "+err.Error())
		return
	}
	body := map[string]any{
		"status":                "ok",
		"protocolVersion":       ProtocolVersion,
		"implementationVersion": s.cfg.ImplementationVersion,
		// No "runtime": the OpenAPI description allows node, deno or bun
		// only, and wasmgate is none of them (/info says what it is).
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
	if s.cfg.Catalog != nil {
		// Healthy while it loads: every call is served meanwhile (a tool
		// not loaded yet is loaded for its call).
		body["wasmgate"] = map[string]any{"catalog": s.cfg.Catalog()}
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) info(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"name":            "wasmgate",
		"version":         s.cfg.ImplementationVersion,
		"protocolVersion": ProtocolVersion,
		"capabilities": map[string]any{
			// Every call runs in a fresh WebAssembly instance.
			"isolation":           "vm",
			"executionModes":      []string{"sync"},
			"maxExecutionTimeMs":  s.cfg.MaxExecutionTime.Milliseconds(),
			"maxRequestBodyBytes": s.cfg.MaxBodyBytes,
			"maxConcurrency":      s.cfg.MaxConcurrency,
			"supportsStreaming":   false,
			"supportsCallbacks":   false,
			"supportsCaching":     false,
		},
		// What this deployment lets requests fetch from npm, beyond its
		// registry ("*": any package).
		"wasmgate": map[string]any{"npmAllow": s.NPMAllowed(), "results": s.cfg.Runtime.Results().String()},
		"runtime": map[string]any{
			"platform":  platform(),
			"arch":      runtime.GOARCH,
			"engine":    string(s.engine),
			"goVersion": runtime.Version(),
		},
	})
}

// platform names the operating system as the protocol does (Node's
// process.platform: linux, darwin, win32).
func platform() string {
	if runtime.GOOS == "windows" {
		return "win32"
	}
	return runtime.GOOS
}

// errorBody is the protocol's structured error.
type errorBody struct {
	Success bool      `json:"success"`
	Error   errDetail `json:"error"`
	*typedFailure
}

// typedFailure classifies a failure in the terms of the protocol's next
// version (1.1: errorStage, errorCode, retryable), carried beside 1.0's
// error object: 1.0 clients ignore the extra fields, and the authors'
// compliance suite and health checks read them instead of parsing
// messages.
type typedFailure struct {
	Stage     string `json:"errorStage"`
	Code      string `json:"errorCode"`
	Retryable bool   `json:"retryable"`
}

// failureTypes maps each 1.0 error code to its 1.1 stage and code.
var failureTypes = map[string]typedFailure{
	CodeInvalidRequest:     {"request", "INVALID_REQUEST", false},
	CodePayloadTooLarge:    {"request", "INVALID_REQUEST", false},
	CodeNotFound:           {"request", "INVALID_REQUEST", false},
	CodeMethodNotAllowed:   {"request", "INVALID_REQUEST", false},
	CodeUnauthorized:       {"request", "AUTHENTICATION_REQUIRED", false},
	CodePackageNotFound:    {"load", "PACKAGE_IMPORT_FAILED", false},
	CodeToolNotFound:       {"load", "TOOL_NOT_FOUND", false},
	CodeToolInvalid:        {"load", "INVALID_TOOL", false},
	CodeToolExecutionError: {"execute", "TOOL_EXECUTION_FAILED", false},
	CodeExecutionTimeout:   {"execute", "EXECUTION_TIMEOUT", false},
	CodeServiceUnavailable: {"executor", "EXECUTOR_UNAVAILABLE", true},
	CodeInternalError:      {"executor", "EXECUTOR_INTERNAL_ERROR", false},

	// What keeps web pages out.
	CodeForbidden:            {"request", "AUTHENTICATION_REQUIRED", false},
	CodeUnsupportedMediaType: {"request", "INVALID_REQUEST", false},
}

// classify types a failure with code; v, when the call ran, says whether
// running it again may succeed: a wall-clock timeout or an audit log that
// could not be written may pass another time, exhausted fuel never does.
func classify(code string, v *verdict) *typedFailure {
	t, ok := failureTypes[code]
	if !ok {
		t = failureTypes[CodeInternalError]
	}
	if v != nil && (slices.Contains(v.ReasonCodes, pipeline.ExecutorTimeout) || slices.Contains(v.ReasonCodes, pipeline.AuditLogFailed)) {
		t.Retryable = true
	}
	return &t
}

type errDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	if rec, ok := w.(*statusRecorder); ok {
		rec.code = code
	}
	writeJSON(w, status, errorBody{Error: errDetail{Code: code, Message: msg}, typedFailure: classify(code, nil)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// statusRecorder remembers what a handler answered, for logs and metrics.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	wrote   bool
	code    string
	tool    string
	traceID string
}

func (r *statusRecorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the writer underneath, so that a
// streaming handler (MCP's server-sent events) can flush.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush flushes the writer underneath, for handlers that assert
// http.Flusher rather than use http.ResponseController.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
