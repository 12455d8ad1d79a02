package httpexec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// executeRequest is the body of POST /execute-tool.
type executeRequest struct {
	PackageName string          `json:"packageName"`
	Version     string          `json:"version"`
	Name        string          `json:"name"`
	Params      json.RawMessage `json:"params"`
	Env         json.RawMessage `json:"env"`
}

// executeResponse is the protocol's answer to a tool call, with wasmgate's
// verdict alongside (clients of the protocol ignore it).
type executeResponse struct {
	Success         bool            `json:"success"`
	Output          json.RawMessage `json:"output,omitempty"`
	Error           *errDetail      `json:"error,omitempty"`
	ExecutionTimeMs int64           `json:"executionTimeMs"`
	*typedFailure
	Wasmgate *verdict `json:"wasmgate,omitempty"`
	// busy: the Runner refused the call for want of capacity (503).
	busy string
}

// verdict is the ActionResult's auditable part.
type verdict struct {
	Action          string                `json:"action"`
	ExecutorID      string                `json:"executorId"`
	ExecutorVersion string                `json:"executorVersion"`
	Status          pipeline.Status       `json:"status"`
	ReasonCodes     []pipeline.ReasonCode `json:"reasonCodes"`
	TraceID         string                `json:"traceId"`
	InputDigest     string                `json:"inputDigest"`
	OutputDigest    *string               `json:"outputDigest"`
	FuelUsed        uint64                `json:"fuelUsed"`
	// AuditIndex is the verdict's leaf index in the audit log's Merkle
	// tree (seq − 1), absent when no log keeps it: the caller fetches its
	// inclusion proof with it.
	AuditIndex *uint64 `json:"auditIndex,omitempty"`
}

// requestError is a refusal before anything runs.
type requestError struct {
	status int
	code   string
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) *requestError {
	return &requestError{http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf(format, args...)}
}

func (s *Server) executeTool(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec, _ := w.(*statusRecorder)
	req, rerr := s.parse(w, r)
	if rerr != nil {
		s.metrics.observeCall("REFUSED", rerr.code)
		writeError(w, rerr.status, rerr.code, rerr.msg)
		return
	}
	traceID := traceIDFrom(r.Header)
	if rec != nil {
		rec.tool, rec.traceID = req.PackageName+"/"+req.Name, traceID
	}
	if traceID != "" {
		w.Header().Set("X-Trace-Id", traceID)
	}

	release, refused := s.admit(r.Context())
	if refused != "" {
		s.metrics.admissionRefusals.WithLabelValues(refused).Inc()
		s.metrics.observeCall("REFUSED", CodeServiceUnavailable)
		w.Header().Set("Retry-After", "1")
		msg := fmt.Sprintf("the server is running %d tool calls and %d more are waiting; retry later", s.cfg.MaxConcurrency, s.cfg.QueueLength)
		if refused == refusedQueueWait {
			msg = fmt.Sprintf("no slot for this call within %s (%d tool calls run at once); retry later", s.cfg.QueueWait, s.cfg.MaxConcurrency)
		}
		writeError(w, http.StatusServiceUnavailable, CodeServiceUnavailable, msg)
		return
	}
	defer release()
	s.metrics.inFlight.Inc()
	defer s.metrics.inFlight.Dec()

	resp := s.call(r.Context(), req, traceID)
	if resp.busy != "" {
		s.metrics.admissionRefusals.WithLabelValues("cluster_full").Inc()
		s.metrics.observeCall("REFUSED", CodeServiceUnavailable)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, CodeServiceUnavailable, resp.busy+"; retry later")
		return
	}
	resp.ExecutionTimeMs = time.Since(start).Milliseconds()
	if resp.Error != nil && resp.typedFailure == nil {
		resp.typedFailure = classify(resp.Error.Code, resp.Wasmgate)
	}
	if resp.Wasmgate != nil && rec != nil {
		rec.traceID = resp.Wasmgate.TraceID
		w.Header().Set("X-Trace-Id", resp.Wasmgate.TraceID)
	}
	status := "SUCCESS"
	code := ""
	if resp.Error != nil {
		status, code = "ERROR", resp.Error.Code
		if rec != nil {
			rec.code = code
		}
	}
	if resp.Wasmgate != nil {
		status = string(resp.Wasmgate.Status)
		for _, c := range resp.Wasmgate.ReasonCodes {
			s.metrics.reasons.WithLabelValues(string(c)).Inc()
		}
	}
	s.metrics.observeCall(status, code)
	writeJSON(w, http.StatusOK, resp)
}

// parse reads and checks the request body.
func (s *Server) parse(w http.ResponseWriter, r *http.Request) (executeRequest, *requestError) {
	var req executeRequest
	// A request without a body carries nothing to refuse: it is the
	// protocol's 400 (a missing body), whatever its type.
	if r.ContentLength != 0 {
		if rerr := checkContentType(r.Header.Get("Content-Type")); rerr != nil {
			return req, rerr
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return req, &requestError{http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
			fmt.Sprintf("request body exceeds %d bytes (maxRequestBodyBytes)", s.cfg.MaxBodyBytes)}
	}
	if err != nil {
		return req, badRequest("cannot read the request body: %v", err)
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return req, badRequest("the request body is empty; send a JSON object {packageName, name, params?, version?, env?}")
	}
	if trimmed[0] != '{' {
		return req, badRequest("the request body must be a JSON object")
	}
	req, rerr := decodeEnvelope(trimmed)
	if rerr != nil {
		return req, rerr
	}
	switch {
	case strings.TrimSpace(req.PackageName) == "":
		return req, badRequest("packageName is required (a non-empty string)")
	case strings.TrimSpace(req.Name) == "":
		return req, badRequest("name is required (the tool's export, a non-empty string)")
	}
	if len(req.Params) == 0 || string(req.Params) == "null" {
		req.Params = json.RawMessage("{}")
	} else if bytes.TrimSpace(req.Params)[0] != '{' {
		return req, badRequest("params must be a JSON object")
	}
	if len(req.Env) > 0 && string(req.Env) != "null" {
		if bytes.TrimSpace(req.Env)[0] != '{' {
			return req, badRequest("env must be a JSON object")
		}
		if key, dup := duplicateKey(req.Env); dup {
			return req, badRequest("env has the key %q twice", key)
		}
	} else {
		req.Env = nil
	}
	if req.Version == "" {
		req.Version = "latest"
	}
	if !s.servesByName(req.PackageName) {
		// npm's naming rules, before the store or npm sees the name: no
		// path traversal, no shell.
		if _, _, err := jstool.ParseSpec(req.PackageName + "@" + req.Version); err != nil {
			return req, badRequest("packageName/version: %v", err)
		}
	}
	return req, nil
}

// checkContentType accepts the protocol's request type, application/json
// (in UTF-8, as JSON is), and refuses any other before the body is read:
// text/plain, form encodings and no type at all are what a web page may
// POST to any origin without a preflight, so refusing them keeps a page
// from calling a tool behind the browser's back.
func checkContentType(ct string) *requestError {
	unsupported := func(msg string) *requestError {
		return &requestError{http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, msg}
	}
	if strings.TrimSpace(ct) == "" {
		return unsupported("the request has no Content-Type; send the JSON body with Content-Type: application/json")
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return unsupported(fmt.Sprintf("Content-Type %q cannot be read (%v); send Content-Type: application/json", ct, err))
	}
	if mediaType != "application/json" {
		return unsupported(fmt.Sprintf("Content-Type %s is not accepted; send the JSON body with Content-Type: application/json", mediaType))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return unsupported(fmt.Sprintf("charset %s is not accepted: JSON is UTF-8 (send Content-Type: application/json, or application/json; charset=utf-8)", cs))
	}
	return nil
}

// servesByName reports whether name is an action or executor of the
// registry rather than an npm package.
func (s *Server) servesByName(name string) bool {
	if s.cfg.Runner != nil {
		return slices.Contains(s.cfg.Runner.Actions(), name)
	}
	return slices.Contains(s.actions, name) || slices.Contains(s.executors, name)
}

// registered reports whether the Runtime had a registry of its own when the
// server was made (NPMAllow's default depends on it).
func (s *Server) registered() bool { return len(s.actions) > 0 || len(s.executors) > 0 }

// envelopeFields are the request's fields, spelled as the protocol spells
// them.
var envelopeFields = []string{"packageName", "version", "name", "params", "env"}

// decodeEnvelope reads the request object strictly: keys match the
// protocol's spelling exactly (encoding/json would take "PackageName" for
// packageName), a key given twice is refused rather than the last one
// silently winning, and each field has its type. Keys the protocol does
// not define are ignored: later versions add fields (importUrl).
func decodeEnvelope(b []byte) (executeRequest, *requestError) {
	var req executeRequest
	dec := json.NewDecoder(bytes.NewReader(b))
	notJSON := func(err error) *requestError { return badRequest("the request body is not valid JSON: %v", err) }
	if _, err := dec.Token(); err != nil { // the '{' checked by the caller
		return req, notJSON(err)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return req, notJSON(err)
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return req, notJSON(err)
		}
		if seen[key] {
			return req, badRequest("the request body has the key %q twice", key)
		}
		seen[key] = true
		isNull := string(raw) == "null"
		str := func(dst *string) *requestError {
			if isNull {
				return nil
			}
			if raw[0] != '"' {
				return badRequest("%s must be a string, not %s", key, kindOf(raw))
			}
			if err := json.Unmarshal(raw, dst); err != nil {
				return notJSON(err)
			}
			return nil
		}
		var rerr *requestError
		switch key {
		case "packageName":
			rerr = str(&req.PackageName)
		case "version":
			rerr = str(&req.Version)
		case "name":
			rerr = str(&req.Name)
		case "params", "env":
			if !isNull && raw[0] != '{' {
				return req, badRequest("%s must be a JSON object, not %s", key, kindOf(raw))
			}
			if key == "params" {
				req.Params = raw
			} else {
				req.Env = raw
			}
		default:
			for _, f := range envelopeFields {
				if strings.EqualFold(key, f) {
					return req, badRequest("the request body has the key %q; the protocol's field is %q (keys are case-sensitive)", key, f)
				}
			}
		}
		if rerr != nil {
			return req, rerr
		}
	}
	if _, err := dec.Token(); err != nil {
		return req, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, badRequest("the request body holds more than one JSON value")
	}
	return req, nil
}

// duplicateKey reports the first key that an object's top level gives
// twice. The object is valid JSON.
func duplicateKey(obj []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		key, _ := t.(string)
		if seen[key] {
			return key, true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}

// kindOf names the JSON type of a value, for messages.
func kindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// call resolves the request's executor and runs it through the pipeline.
func (s *Server) call(ctx context.Context, req executeRequest, traceID string) executeResponse {
	run, action, refusal, fail := s.resolve(ctx, req)
	if fail != nil {
		resp := executeResponse{Error: fail}
		if fail.Code == CodeExecutionTimeout {
			// Installing or loading the package took too long: in 1.1's
			// terms the package could not be imported, this time.
			resp.typedFailure = &typedFailure{Stage: "load", Code: "PACKAGE_IMPORT_FAILED", Retryable: true}
		}
		return resp
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.MaxExecutionTime)
	defer cancel()
	res, err := run(ctx, pipeline.ActionRequest{Action: action, Payload: req.Params, TraceID: traceID, Env: req.Env})
	v := &verdict{
		Action: res.Action, ExecutorID: res.ExecutorID, ExecutorVersion: res.ExecutorVersion,
		Status: res.Status, ReasonCodes: res.ReasonCodes, TraceID: res.TraceID,
		InputDigest: res.InputDigest, OutputDigest: res.OutputDigest, FuelUsed: res.FuelUsed,
		AuditIndex: res.AuditIndex,
	}
	if err != nil && res.Status == "" {
		if errors.Is(err, pipeline.ErrBusy) {
			return executeResponse{busy: err.Error()}
		}
		if errors.Is(err, pipeline.ErrInvalidRequest) {
			return executeResponse{Error: &errDetail{CodeInvalidRequest, err.Error()}}
		}
		s.cfg.Logger.Error("tool call failed", "trace_id", traceID, "tool", req.PackageName+"/"+req.Name, "error", err)
		return executeResponse{Error: &errDetail{CodeInternalError, "internal error; the server log has the details under trace id " + traceID}}
	}
	if refusal != nil {
		// The pipeline only recorded the refusal (BLOCKED, audited); the
		// answer says why in the protocol's terms.
		return executeResponse{Error: refusal, Wasmgate: v}
	}
	if res.Status == pipeline.StatusSuccess {
		out := res.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		return executeResponse{Success: true, Output: out, Wasmgate: v}
	}
	return executeResponse{Error: mapResult(res), Wasmgate: v}
}

// mapResult maps a result that is not SUCCESS to the protocol's error
// codes, from the verdict's classification (pipeline.Classify).
func mapResult(res pipeline.ActionResult) *errDetail {
	codes := make([]string, len(res.ReasonCodes))
	for i, c := range res.ReasonCodes {
		codes[i] = string(c)
	}
	withCodes := res.Message + " (" + strings.Join(codes, ", ") + ")"
	switch res.Failure {
	case pipeline.FailureTimeout:
		return &errDetail{CodeExecutionTimeout, withCodes}
	case pipeline.FailureLimit:
		if slices.Contains(res.ReasonCodes, pipeline.FuelExhausted) {
			// The protocol has no budget but time: fuel is how a
			// runaway tool's time is bounded.
			return &errDetail{CodeExecutionTimeout, withCodes}
		}
		return &errDetail{CodeToolExecutionError, withCodes}
	case pipeline.FailureToolInvalid:
		if res.Stage == pipeline.StageRun {
			// A factory that gave no tool, found out when it was called:
			// the protocol's code says what the message's prefix does.
			return &errDetail{CodeToolInvalid, strings.TrimPrefix(res.Message, "TOOL_INVALID: ")}
		}
		return &errDetail{CodeToolInvalid, res.Message}
	case pipeline.FailureException:
		return &errDetail{CodeToolExecutionError, res.Message}
	case pipeline.FailureOutputInvalid:
		// The tool ran and returned what its output schema forbids.
		return &errDetail{CodeToolExecutionError, withCodes}
	case pipeline.FailureInput:
		// params break the limits or the tool's input schema: nothing ran.
		return &errDetail{CodeInvalidRequest, withCodes}
	case pipeline.FailureNotFound:
		if slices.Contains(res.ReasonCodes, pipeline.ExecutorInvalid) {
			// A package without the export asked for: the loader's
			// message names it.
			return &errDetail{CodeToolNotFound, res.Message}
		}
		return &errDetail{CodeToolNotFound, withCodes}
	}
	// Version, capability and audit refusals are the deployment's, not the
	// caller's: the codes say which, the message no more.
	return &errDetail{CodeInternalError, "the call was refused by the server's governance (" + strings.Join(codes, ", ") + "); trace id " + res.TraceID}
}

// run executes one request: on the Runtime, on a registry of its own
// (Host.ExecuteOn), or on the Runner.
type run func(ctx context.Context, req pipeline.ActionRequest) (pipeline.ActionResult, error)

// resolve finds what serves req and its action: an action of the registry,
// an executor of the registry, or a tool of an npm package the server may
// fetch. A package it may not fetch, or that npm does not have, is refused
// on a registry of the refusal alone (Host.ExecuteOn), so that the refusal
// is audited like any call (BLOCKED) while the Runtime's registry does not
// grow by a name for every bogus one asked: refusal is then the answer.
// fail is an answer for a call that reached nothing that audits.
func (s *Server) resolve(ctx context.Context, req executeRequest) (r run, action string, refusal, fail *errDetail) {
	if r := s.cfg.Runner; r != nil {
		if slices.Contains(r.Actions(), req.PackageName) {
			return r.Execute, req.PackageName, nil, nil
		}
		// Refused where it is audited, by a worker: ACTION_UNKNOWN.
		return r.Execute, refusedAction(req), &errDetail{CodePackageNotFound,
			fmt.Sprintf("package %s is not served here: it is not an action of the registry published to the cluster", req.PackageName)}, nil
	}
	rt := s.cfg.Runtime
	if slices.Contains(s.actions, req.PackageName) {
		return rt.Execute, req.PackageName, nil, nil
	}
	if slices.Contains(s.executors, req.PackageName) {
		reg, err := s.tools.executorRegistry(req.PackageName)
		if err != nil {
			return nil, "", nil, &errDetail{CodeInternalError, err.Error()}
		}
		return s.on(reg), req.PackageName, nil, nil
	}
	action = refusedAction(req)
	if !s.npmAllowed(req.PackageName) {
		// Not an action of this deployment: ACTION_UNKNOWN.
		return s.on(pipeline.NewRegistry()), action, &errDetail{CodePackageNotFound,
			fmt.Sprintf("package %s is not served here: it is not in the registry, and this server fetches only npm packages matching %s", req.PackageName, s.npmAllowText())}, nil
	}
	t, err := s.tools.packageTool(ctx, req.PackageName+"@"+req.Version, req.Name)
	if errors.Is(err, jstool.ErrPackageNotFound) {
		reg := pipeline.NewRegistry()
		id := pipeline.ExecutorIDFrom(req.PackageName + "__" + req.Name)
		if reg.AddMissing(id, err) == nil && reg.AddAction(refusedAction(req), pipeline.Route{Executor: id, Version: "*"}) == nil {
			return s.on(reg), refusedAction(req), toolError(err), nil
		}
	}
	if err != nil {
		return nil, "", nil, toolError(err)
	}
	if t.own == nil {
		return rt.Execute, t.action, nil, nil
	}
	return s.on(t.own), t.action, nil, nil
}

// on runs requests on reg rather than on the Runtime's registry.
func (s *Server) on(reg *pipeline.Registry) run {
	return func(ctx context.Context, req pipeline.ActionRequest) (pipeline.ActionResult, error) {
		return s.cfg.Runtime.ExecuteOn(ctx, req, reg)
	}
}

// refusedAction names the action of a call to a package tool that is
// refused before it is loaded, as loaded tools' actions are named.
func refusedAction(req executeRequest) string {
	a := req.PackageName + "/" + req.Name
	if len(a) > 128 {
		a = a[:128]
	}
	return a
}

// npmAllowed reports whether the server may fetch the npm package name.
func (s *Server) npmAllowed(name string) bool {
	allow := s.cfg.NPMAllow
	if s.cfg.Runner != nil {
		return false
	}
	if allow == nil && !s.registered() {
		return true
	}
	for _, pattern := range allow {
		if pattern == "*" {
			return true
		}
		if ok, _ := path.Match(pattern, name); ok {
			return true
		}
	}
	return false
}

// NPMAllows reports whether the server lets requests run the npm package
// name (its NPMAllow patterns, or their default).
func (s *Server) NPMAllows(name string) bool { return s.npmAllowed(name) }

// NPMAllowed is what the server lets requests fetch from npm, as patterns
// ("*" for every package; none when empty).
func (s *Server) NPMAllowed() []string {
	if s.cfg.Runner != nil {
		return []string{}
	}
	if s.cfg.NPMAllow == nil && !s.registered() {
		return []string{"*"}
	}
	return append([]string{}, s.cfg.NPMAllow...)
}

func (s *Server) npmAllowText() string {
	allow := s.NPMAllowed()
	if len(allow) == 0 {
		return "nothing (--npm-allow is empty)"
	}
	return strings.Join(allow, ",") + " (--npm-allow)"
}

// ValidNPMPattern checks a --npm-allow pattern: path.Match's syntax on
// package names ("@tpmjs/*"), or "*" alone for every package.
func ValidNPMPattern(p string) error {
	if p == "" {
		return errors.New("an empty pattern")
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("pattern %q: %w", p, err)
	}
	return nil
}

// toolError maps a failure to install, bundle or load a tool.
func toolError(err error) *errDetail {
	var bundle *jstool.BundleError
	switch {
	case errors.Is(err, jstool.ErrPackageNotFound):
		return &errDetail{CodePackageNotFound, err.Error()}
	case errors.Is(err, jstool.ErrToolNotFound):
		return &errDetail{CodeToolNotFound, err.Error()}
	case errors.Is(err, jstool.ErrToolInvalid), errors.As(err, &bundle), errors.Is(err, sandbox.ErrNotAdmitted):
		return &errDetail{CodeToolInvalid, err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		return &errDetail{CodeExecutionTimeout, "installing or loading the package took too long: " + err.Error()}
	}
	return &errDetail{CodeInternalError, "the package could not be installed or loaded"}
}

// toolCache keeps each tool the server has loaded: a tool is installed,
// bundled, loaded and snapshotted once, then every call starts from its
// snapshot. A loaded tool is an action of the Runtime (pipeline.ShareTool);
// the cache remembers which, and the registry of its own of a tool that
// could not be shared or admitted.
type toolCache struct {
	cfg Config
	// loadTool loads a package's tool (Config.LoadTool).
	loadTool func(ctx context.Context, src pipeline.ExecutorSource) (pipeline.Executor, error)

	mu      sync.Mutex
	entries map[string]*toolEntry
}

// tool is a loaded tool: its action, and own, the registry to run it on
// when it is not the Runtime's (nil when it is).
type tool struct {
	action string
	own    *pipeline.Registry
}

type toolEntry struct {
	ready chan struct{}
	tool  tool
	err   error
}

func newToolCache(cfg Config) *toolCache {
	c := &toolCache{cfg: cfg, entries: map[string]*toolEntry{}, loadTool: cfg.LoadTool}
	if c.loadTool == nil {
		c.loadTool = func(ctx context.Context, src pipeline.ExecutorSource) (e pipeline.Executor, err error) {
			uerr := cfg.Runtime.UseEngine(ctx, func(ctx context.Context, engine sandbox.Engine) error {
				e, err = pipeline.LoadExecutor(ctx, engine, src, js.Kind())
				return nil
			})
			return e, errors.Join(uerr, err)
		}
	}
	return c
}

// get returns the entry under key, building it once with build; a failed
// build is not kept, so that the next call tries again.
func (c *toolCache) get(ctx context.Context, key string, build func() (tool, error)) (tool, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &toolEntry{ready: make(chan struct{})}
		c.entries[key] = e
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-e.ready:
			return e.tool, e.err
		case <-ctx.Done():
			return tool{}, ctx.Err()
		}
	}
	e.tool, e.err = build()
	if e.err != nil {
		c.mu.Lock()
		delete(c.entries, key)
		c.mu.Unlock()
	}
	close(e.ready)
	return e.tool, e.err
}

// executorRegistry serves a registry executor by its id: a registry of the
// executor alone, with one action named as it is, kept (there are as many
// as the registry has executors) and run on through Host.ExecuteOn, so that
// the Runtime's registry does not list an action per executor asked for.
func (c *toolCache) executorRegistry(id string) (*pipeline.Registry, error) {
	t, err := c.get(context.Background(), "executor:"+id, func() (tool, error) {
		e, ok := c.cfg.Runtime.Executor(id)
		if !ok {
			return tool{}, fmt.Errorf("executor %s is no longer in the registry", id)
		}
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor(id, e); err != nil {
			return tool{}, err
		}
		if err := reg.AddAction(id, pipeline.Route{Executor: id, Version: "*"}); err != nil {
			return tool{}, err
		}
		return tool{action: id, own: reg}, nil
	})
	return t.own, err
}

// packageTool installs (when missing), loads and caches the tool name of
// the package spec.
func (c *toolCache) packageTool(ctx context.Context, spec, name string) (tool, error) {
	return c.get(ctx, "package:"+spec+"#"+name, func() (tool, error) {
		inst, err := c.cfg.Store.Get(spec)
		if errors.Is(err, jstool.ErrNotInstalled) {
			// Installing is not the caller's to cancel halfway: another
			// request may be waiting for the same package.
			inst, err = c.cfg.Store.Add(context.WithoutCancel(ctx), spec)
		}
		if err != nil {
			return tool{}, err
		}
		exact := inst.Name + "@" + inst.Version
		// Loading is shared by every caller waiting for this tool: the first
		// one leaving must not fail the others.
		e, err := c.loadTool(context.WithoutCancel(ctx), pipeline.ExecutorSource{Package: exact, Tool: name, ToolsDir: c.cfg.Store.Dir,
			Defaults: c.toolLimits(sandbox.Limits{})})
		action := inst.Name + "/" + name
		if len(action) > 128 {
			action = action[:128]
		}
		route := pipeline.Route{Version: "*"}
		switch {
		case errors.Is(err, sandbox.ErrNotAdmitted):
			// A tool that cannot be admitted (missing export, no execute,
			// does not bundle) is still a call: it is refused, BLOCKED with
			// EXECUTOR_INVALID, and audited, on a registry of its own (the
			// export is the caller's to name: it is not shared).
			reg := pipeline.NewRegistry()
			route.Executor = pipeline.ExecutorIDFrom(inst.Name + "__" + name)
			if err := reg.AddUnadmitted(route.Executor, err); err != nil {
				return tool{}, err
			}
			if err := reg.AddAction(action, route); err != nil {
				return tool{}, err
			}
			return tool{action: action, own: reg}, nil
		case err != nil:
			return tool{}, err
		}
		route.Executor = e.Manifest().ExecutorID
		route.Limits = c.toolLimits(e.Manifest().Limits)
		own, err := pipeline.ShareTool(ctx, c.cfg.Runtime, action, route, e)
		if err != nil {
			return tool{}, err
		}
		return tool{action: action, own: own}, nil
	})
}

// toolLimits are the limits of an npm tool called over HTTP: its
// manifest's, and for every field it leaves unset, a wall-clock limit of
// the server's execution time and room for the request body the server
// accepts. They are the route's limits, so they take precedence over the
// manifest's exactly where the manifest is silent. Fuel stays unset unless
// the manifest sets it: a JS tool's default fuel covers its timeout.
func (c *toolCache) toolLimits(m sandbox.Limits) sandbox.Limits {
	served := jstool.ServedLimits(c.cfg.MaxExecutionTime)
	// A body the server accepts is a payload the tool accepts.
	served.MaxPayloadBytes = max(c.cfg.MaxBodyBytes, served.MaxPayloadBytes)
	return m.WithDefaults(served)
}
