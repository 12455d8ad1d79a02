// Package jsonrpc serves TraceMind's Runtime Execution Protocol (REP) v0.1:
// JSON-RPC 2.0 over a stream (wasmgate rep: stdio), one request per line
// in, one response per line out. Clients start runs of Flow IR 1.0.0 flows
// (package flow), poll their events and cancel them; every action step of
// a run is one call through the governed pipeline, audited with the run's
// trace id.
//
// # Methods
//
//	Runtime.Capabilities {version?, step_kinds?}
//	  -> {version:"0.1.0", step_kinds:[actions..., "switch"],
//	      limits:{concurrency, max_request_bytes}, ir_version:"1.0.0",
//	      compatible, missing_step_kinds}
//	Runtime.StartRun {ir, inputs?, options?:{run_id?, trace_id?, allow_shell?}}
//	  -> {run_id, trace_id}
//	Runtime.Poll {run_id, since?}
//	  -> {status, events, summary, run_id, trace_id, last_seq, error?, metadata}
//	Runtime.Cancel {run_id} -> {ok:true, run_id, status, cancelled}
//	Runtime.Health -> {ok:true, details:{version, runs_active, runs_pending, runs_running, runs_retained}}
//
// The handshake: a client may send its protocol version and the step kinds
// its flows use (REP sends {}). A version of another major (for 0.y.z,
// another minor) is refused with -32602; otherwise compatible says whether
// every step kind is available, and missing_step_kinds lists those that are
// not.
//
// StartRun checks the whole flow, then the inputs against a JSON Schema
// inputs_schema, before it answers (1001, 1002, 1003), and returns at once;
// the run waits for one of the limits.concurrency slots (status pending),
// then runs (running) until completed or failed: REP's four statuses. A
// cancelled run ends failed. allow_shell is a permission no step kind here
// uses: either value is accepted. A run id is 1 to 128 of [A-Za-z0-9._:-];
// without one, the server's DefaultRunID (once), else a random UUID. The
// trace id is options.trace_id (a UUID, with or without dashes), else
// DefaultTraceID, else a random UUID.
//
// Poll returns the events with seq > since (default 0: all of them), so
// that polling is repeatable and a lost response loses nothing; last_seq is
// the since of the next poll. A failed run carries error {code, message,
// data:{step_id, attempt, retriable, details:{reason, cause?, result?}}}:
// 2001 when a step failed; 3001 with cause "Timeout" when the flow timed
// out, as REP §10 words it, and with cause "Cancelled" when it was
// cancelled. Finished runs are kept for polling, up to RetainedRuns of them
// (the oldest are forgotten first).
//
// Cancel stops a pending or running run and answers once it has stopped;
// cancelled says whether this call stopped it (false when it had already
// finished).
//
// # Errors
//
// REP's error objects carry data {step_id?, attempt, retriable, details}.
//
//	1001   Flow IR version missing or not 1.0.0 (details {expected, received, pointer})
//	1002   a node type that is neither a step kind nor "switch" (details {type, pointer})
//	1003   the IR does not match the Flow IR schema or the spec's rules, or the
//	       inputs do not match a JSON Schema inputs_schema
//	       (details {in: "ir"|"inputs", pointer, errors?})
//	2001   a step failed (in Poll's error, not as a response error)
//	3001   the line is not JSON, or not a JSON-RPC 2.0 request object (a
//	       protocol mismatch: a batch too), or longer than MaxRequestBytes
//	       (id null when unknown)
//	3002   the runtime failed unexpectedly (a panic, a result it cannot encode)
//	-32601 unknown method
//	-32602 invalid params (wrong types, a run id in use, an
//	       unknown run id...)
//
// A batch (a JSON array of requests) is a protocol mismatch: REP's
// responses are single objects. Requests without an id are notifications
// (REP does not use them): they are handled and get no answer. Blank lines
// are ignored.
package jsonrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/wasmgate/wasmgate/internal/admission"
	"github.com/wasmgate/wasmgate/internal/jsonrpc/flow"
	"github.com/wasmgate/wasmgate/internal/traceid"
	"github.com/wasmgate/wasmgate/pipeline"
)

// ProtocolVersion is the version of the runtime protocol served.
const ProtocolVersion = "0.1.0"

// Error codes: REP's (§6) and JSON-RPC's.
const (
	CodeIRVersion       = 1001
	CodeUnknownStepKind = 1002
	CodeSchema          = 1003
	CodeStepFailed      = 2001
	// CodeTransport: broken transport, invalid JSON, protocol mismatch.
	CodeTransport = 3001
	// CodeInternal: the runtime panicked or failed unexpectedly.
	CodeInternal       = 3002
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
)

// Defaults.
const (
	DefaultConcurrency     = 4
	DefaultMaxRequestBytes = 4 << 20
	DefaultRetainedRuns    = 1000
)

// Config configures a Server. Pipeline is required.
type Config struct {
	// Pipeline runs every action step; its registry's actions are the step
	// kinds. It must return full results: steps reference each other's
	// outputs.
	Pipeline pipeline.Runner
	// Results is what Poll reports. With pipeline.ResultsDigestOnly, the
	// steps' outputs stay inside the run (summary.outputs is empty; each
	// step event's result has the output digest) and no message quotes an
	// executor.
	Results pipeline.Results
	// Concurrency is how many runs execute at once (default 4); more wait.
	Concurrency int
	// DefaultRunID is the run id of the first run that brings none.
	DefaultRunID string
	// DefaultTraceID (a UUID) is the trace id of runs that bring none.
	DefaultTraceID string
	// FlowTimeoutCap caps every run, whatever its flow.timeout_ms (0: no
	// cap): the orchestrator's engine timeout.
	FlowTimeoutCap time.Duration
	// MaxRequestBytes bounds a request line (default 4 MiB).
	MaxRequestBytes int
	// RetainedRuns is how many finished runs are kept for polling (default
	// 1000).
	RetainedRuns int
	// Logger receives a line per run started and finished (default:
	// discard).
	Logger *slog.Logger
}

// Server serves the protocol. Use one Server for one stream.
type Server struct {
	cfg       Config
	stepKinds []string
	known     map[string]bool
	gate      *admission.Gate

	mu          sync.Mutex
	runs        map[string]*run
	retired     []*run // finished runs, oldest first
	defaultUsed bool

	wg sync.WaitGroup
	// runCtx is the parent of every run: Serve's context.
	runCtx context.Context
}

var (
	runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)
)

// NewServer checks cfg and returns a server.
func NewServer(cfg Config) (*Server, error) {
	switch {
	case cfg.Pipeline == nil:
		return nil, errors.New("jsonrpc: Config.Pipeline is required")
	case cfg.Concurrency < 0:
		return nil, fmt.Errorf("jsonrpc: concurrency must be positive, got %d", cfg.Concurrency)
	case cfg.DefaultRunID != "" && !runIDPattern.MatchString(cfg.DefaultRunID):
		return nil, fmt.Errorf("jsonrpc: default run id %q must be 1 to 128 of [A-Za-z0-9._:-]", cfg.DefaultRunID)
	case cfg.FlowTimeoutCap < 0:
		return nil, fmt.Errorf("jsonrpc: the flow timeout cap must not be negative")
	}
	if cfg.DefaultTraceID != "" {
		id, ok := traceid.Parse(cfg.DefaultTraceID)
		if !ok {
			return nil, fmt.Errorf("jsonrpc: default trace id %q is not a UUID", cfg.DefaultTraceID)
		}
		cfg.DefaultTraceID = id
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.RetainedRuns <= 0 {
		cfg.RetainedRuns = DefaultRetainedRuns
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:    cfg,
		gate:   admission.New(cfg.Concurrency),
		runs:   map[string]*run{},
		known:  map[string]bool{},
		runCtx: context.Background(),
	}
	s.stepKinds = append(cfg.Pipeline.Actions(), flow.SwitchKind)
	for _, k := range s.stepKinds {
		s.known[k] = true
	}
	return s, nil
}

// line is one request line read, or the sign that it was too long.
type line struct {
	b       []byte
	tooLong bool
}

// Serve answers the requests read from r on w until r ends, then waits for
// the runs still pending or running to finish and returns nil. When ctx is
// done first, the runs are cancelled and Serve returns ctx.Err() once they
// have stopped.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	s.runCtx = ctx
	lines := make(chan line)
	readErr := make(chan error, 1)
	go func() {
		defer close(lines)
		readErr <- readLines(r, s.cfg.MaxRequestBytes, func(l line) bool {
			select {
			case lines <- l:
				return true
			case <-ctx.Done():
				return false
			}
		})
	}()
	out := bufio.NewWriter(w)
	for {
		select {
		case <-ctx.Done():
			s.wg.Wait() // runs derive from ctx: they are stopping
			return ctx.Err()
		case l, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					s.cfg.Logger.Error("reading requests", "err", err)
				}
				s.wg.Wait()
				return nil
			}
			resp := s.handleLine(ctx, l)
			if resp == nil {
				continue
			}
			out.Write(resp)
			out.WriteByte('\n')
			if err := out.Flush(); err != nil {
				s.wg.Wait()
				return fmt.Errorf("writing a response: %w", err)
			}
		}
	}
}

// readLines calls deliver with every line of r (without its newline) until
// r ends or deliver returns false. A line longer than limit is delivered as
// tooLong, without its bytes.
func readLines(r io.Reader, limit int, deliver func(line) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		var buf []byte
		tooLong := false
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if !tooLong && len(buf)+len(chunk) > limit+2 { // +2: a CRLF
				tooLong, buf = true, nil
			}
			if !tooLong {
				buf = append(buf, chunk...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		buf = bytes.TrimRight(buf, "\r\n")
		if len(buf) > limit {
			tooLong, buf = true, nil
		}
		if len(buf) > 0 || tooLong {
			if !deliver(line{b: buf, tooLong: tooLong}) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Wire types.

type request struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	// notification: the request has no id and gets no response.
	notification bool
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func errorf(code int, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

var null = json.RawMessage("null")

// handleLine answers one line: nil when there is nothing to answer.
func (s *Server) handleLine(ctx context.Context, l line) []byte {
	if l.tooLong {
		return encodeResponse(&response{ID: null, Error: errorf(CodeTransport, "request line exceeds %d bytes; it was not read", s.cfg.MaxRequestBytes)})
	}
	b := bytes.TrimSpace(l.b)
	if len(b) == 0 {
		return nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		return encodeResponse(&response{ID: null, Error: errorf(CodeTransport, "invalid JSON: %v", err)})
	}
	if b[0] == '[' {
		// REP §4: "All responses must be single JSON objects", and
		// requests and responses go in pairs: a JSON-RPC batch, whose
		// answer is an array, has no place in it.
		return encodeResponse(&response{ID: null, Error: errorf(CodeTransport,
			"protocol mismatch: a batch (a JSON array); REP v0.1 requests are single objects, one per line")})
	}
	resp := s.handleMessage(ctx, b)
	if resp == nil {
		return nil
	}
	return encodeResponse(resp)
}

func encodeResponse(r *response) []byte {
	r.JSONRPC = "2.0"
	return marshal(r)
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a result that cannot be encoded gets here.
		b.Reset()
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":%q}}`, CodeInternal, "encoding the response: "+err.Error())
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// handleMessage answers one request object: nil for a notification. A
// panic while handling it is answered 3002 (REP: "Runtime panicked"), and
// the session goes on.
func (s *Server) handleMessage(ctx context.Context, raw json.RawMessage) (resp *response) {
	req, rerr := parseRequest(raw)
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Logger.Error("panic while handling a request", "method", req.Method, "panic", p)
			resp = nil
			if !req.notification {
				resp = &response{ID: req.ID, Error: errorf(CodeInternal, "runtime panicked handling %s: %v", req.Method, p)}
			}
		}
	}()
	if rerr != nil && req.notification && rerr.Code == CodeInvalidParams {
		return nil // a notification is never answered, even when wrong
	}
	if rerr != nil {
		id := null
		if req.ID != nil {
			id = req.ID
		}
		return &response{ID: id, Error: rerr}
	}
	result, rerr := s.dispatch(ctx, req)
	if req.notification {
		return nil
	}
	if rerr != nil {
		return &response{ID: req.ID, Error: rerr}
	}
	return &response{ID: req.ID, Result: result}
}

// parseRequest checks the envelope. On error, req.ID is the request's id
// when it could be read.
func parseRequest(raw json.RawMessage) (request, *rpcError) {
	var req request
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return req, errorf(CodeTransport, "protocol mismatch: a request is a JSON-RPC 2.0 request object")
	}
	id, hasID := m["id"]
	if hasID {
		switch t := firstByte(id); {
		case t == '"' || t == '-' || (t >= '0' && t <= '9') || string(id) == "null":
			req.ID = id
		default:
			return req, errorf(CodeTransport, "protocol mismatch: id must be a number (or a string)")
		}
	} else {
		req.notification = true
	}
	var version string
	if err := json.Unmarshal(m["jsonrpc"], &version); err != nil || version != "2.0" {
		return req, errorf(CodeTransport, `protocol mismatch: jsonrpc must be "2.0"`)
	}
	if err := json.Unmarshal(m["method"], &req.Method); err != nil || req.Method == "" {
		return req, errorf(CodeTransport, "protocol mismatch: method must be a non-empty string")
	}
	if p, ok := m["params"]; ok && string(p) != "null" {
		if firstByte(p) != '{' {
			return req, errorf(CodeInvalidParams, "params must be an object (parameters by name)")
		}
		req.Params = p
	}
	return req, nil
}

func firstByte(b []byte) byte {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// decodeParams decodes p into dst. Fields it does not know are ignored:
// REP grows by additive changes within v0.x (§12), and a client that sends
// a newer field must still be served.
func decodeParams(p json.RawMessage, dst any) *rpcError {
	if len(p) == 0 {
		return nil
	}
	if err := json.Unmarshal(p, dst); err != nil {
		return errorf(CodeInvalidParams, "invalid params: %v", err)
	}
	return nil
}
