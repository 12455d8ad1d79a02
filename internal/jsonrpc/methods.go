package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/wasmgate/wasmgate/internal/jsonrpc/flow"
	"github.com/wasmgate/wasmgate/internal/traceid"
	"github.com/wasmgate/wasmgate/pipeline"
)

func (s *Server) dispatch(ctx context.Context, req request) (any, *rpcError) {
	switch req.Method {
	case "Runtime.Capabilities":
		return s.capabilities(req.Params)
	case "Runtime.StartRun":
		return s.startRun(req.Params)
	case "Runtime.Poll":
		return s.poll(req.Params)
	case "Runtime.Cancel":
		return s.cancelRun(ctx, req.Params)
	case "Runtime.Health":
		return s.health(req.Params)
	}
	return nil, errorf(CodeMethodNotFound, "method %q not found; this runtime serves Runtime.Capabilities, Runtime.StartRun, Runtime.Poll, Runtime.Cancel and Runtime.Health", req.Method)
}

type capabilitiesParams struct {
	Version   string   `json:"version"`
	StepKinds []string `json:"step_kinds"`
}

// capabilitiesResult holds REP's fields (version, step_kinds,
// limits.concurrency) first, then this runtime's.
type capabilitiesResult struct {
	Version   string       `json:"version"`
	StepKinds []string     `json:"step_kinds"`
	Limits    limitsResult `json:"limits"`
	IRVersion string       `json:"ir_version"`
	// Compatible: the client's version is of this runtime's line and every
	// step kind it named is available.
	Compatible       bool     `json:"compatible"`
	MissingStepKinds []string `json:"missing_step_kinds"`
}

type limitsResult struct {
	Concurrency     int `json:"concurrency"`
	MaxRequestBytes int `json:"max_request_bytes"`
}

func (s *Server) capabilities(p json.RawMessage) (any, *rpcError) {
	var params capabilitiesParams
	if err := decodeParams(p, &params); err != nil {
		return nil, err
	}
	if params.Version != "" {
		if err := checkProtocolVersion(params.Version); err != nil {
			return nil, err
		}
	}
	missing := []string{}
	for _, k := range params.StepKinds {
		if !s.known[k] && !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
	}
	return capabilitiesResult{
		Version:   ProtocolVersion,
		StepKinds: s.stepKinds,
		Limits: limitsResult{
			Concurrency:     s.cfg.Concurrency,
			MaxRequestBytes: s.cfg.MaxRequestBytes,
		},
		IRVersion:        flow.Version,
		Compatible:       len(missing) == 0,
		MissingStepKinds: missing,
	}, nil
}

// checkProtocolVersion accepts a client version X.Y.Z of this runtime's
// line: the same major, and for major 0 the same minor (semver: 0.y.z
// versions make no compatibility promise across minors).
func checkProtocolVersion(v string) *rpcError {
	want, _ := parseSemver(ProtocolVersion)
	got, ok := parseSemver(v)
	if !ok {
		return errorf(CodeInvalidParams, "version %q is not a semantic version X.Y.Z", v)
	}
	if got[0] != want[0] || (want[0] == 0 && got[1] != want[1]) {
		e := errorf(CodeInvalidParams, "protocol version %s is incompatible with this runtime's %s", v, ProtocolVersion)
		e.Data = map[string]string{"version": ProtocolVersion}
		return e
	}
	return nil
}

func parseSemver(v string) ([3]uint64, bool) {
	var out [3]uint64
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || (len(p) > 1 && p[0] == '0') {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

type startRunParams struct {
	IR      json.RawMessage `json:"ir"`
	Inputs  json.RawMessage `json:"inputs"`
	Options struct {
		RunID   string `json:"run_id"`
		TraceID string `json:"trace_id"`
		// AllowShell is the orchestrator's policy: a permission, which no
		// step kind of this runtime uses (executors run in a sandbox
		// without a shell), so either value is accepted.
		AllowShell bool `json:"allow_shell"`
	} `json:"options"`
}

type startRunResult struct {
	RunID   string `json:"run_id"`
	TraceID string `json:"trace_id"`
}

func (s *Server) startRun(p json.RawMessage) (any, *rpcError) {
	var params startRunParams
	if err := decodeParams(p, &params); err != nil {
		return nil, err
	}
	opts := params.Options
	traceID, traceOK := traceid.Parse(opts.TraceID)
	switch {
	case len(params.IR) == 0 || string(params.IR) == "null":
		return nil, errorf(CodeInvalidParams, "ir is required: a Flow IR %s document", flow.Version)
	case opts.TraceID != "" && !traceOK:
		return nil, errorf(CodeInvalidParams, "options.trace_id %q is not a UUID", opts.TraceID)
	case opts.RunID != "" && !runIDPattern.MatchString(opts.RunID):
		return nil, errorf(CodeInvalidParams, "options.run_id %q must be 1 to 128 of [A-Za-z0-9._:-]", opts.RunID)
	}
	inputs := bytes.TrimSpace(params.Inputs)
	if string(inputs) == "null" {
		inputs = nil
	}
	if len(inputs) > 0 && inputs[0] != '{' {
		return nil, errorf(CodeInvalidParams, "inputs must be a JSON object")
	}
	f, err := flow.Parse(params.IR, func(kind string) bool { return s.known[kind] })
	if err != nil {
		return nil, flowError(err)
	}
	if err := f.CheckInputs(inputs); err != nil {
		return nil, flowError(err)
	}
	if traceID == "" {
		traceID = s.cfg.DefaultTraceID
	}
	if traceID == "" {
		traceID = traceid.New()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := opts.RunID
	if id == "" && s.cfg.DefaultRunID != "" && !s.defaultUsed {
		if _, taken := s.runs[s.cfg.DefaultRunID]; !taken {
			id = s.cfg.DefaultRunID
			s.defaultUsed = true
		}
	}
	if id == "" {
		id = traceid.New()
	}
	if _, taken := s.runs[id]; taken {
		return nil, errorf(CodeInvalidParams, "run id %q is already in use", id)
	}
	s.start(&run{id: id, traceID: traceID, flow: f, inputs: inputs})
	return startRunResult{RunID: id, TraceID: traceID}, nil
}

// errorData is the data of REP's error classes (§6): {step_id, attempt,
// retriable, details}.
type errorData struct {
	StepID    string `json:"step_id,omitempty"`
	Attempt   int    `json:"attempt"`
	Retriable bool   `json:"retriable"`
	Details   any    `json:"details,omitempty"`
}

// flowError maps a refused flow (or refused inputs) to its REP error.
func flowError(err error) *rpcError {
	var fe *flow.Error
	if !errors.As(err, &fe) {
		return errorf(CodeInternal, "%v", err)
	}
	details := map[string]any{"pointer": fe.Pointer}
	code := CodeSchema
	switch {
	case errors.Is(err, flow.ErrVersion):
		code = CodeIRVersion
		details["expected"], details["received"] = flow.Version, fe.Received
	case errors.Is(err, flow.ErrUnknownStepKind):
		code = CodeUnknownStepKind
		details["type"] = fe.Type
	case errors.Is(err, flow.ErrInputs):
		details["in"] = "inputs"
	default:
		details["in"] = "ir"
	}
	if len(fe.Violations) > 0 {
		details["errors"] = fe.Violations
	}
	e := errorf(code, "%s", fe.Msg)
	e.Data = errorData{StepID: fe.StepID, Details: details}
	return e
}

type pollParams struct {
	RunID string `json:"run_id"`
	// Since is the seq of the last event the client has seen.
	Since int `json:"since"`
}

func (s *Server) poll(p json.RawMessage) (any, *rpcError) {
	var params pollParams
	if err := decodeParams(p, &params); err != nil {
		return nil, err
	}
	if params.Since < 0 {
		return nil, errorf(CodeInvalidParams, "since must not be negative")
	}
	r, rerr := s.lookup(params.RunID)
	if rerr != nil {
		return nil, rerr
	}
	res := r.snapshot(params.Since)
	if s.cfg.Results == pipeline.ResultsDigestOnly {
		// The outputs' digests are in the step events' results.
		res.Summary.Outputs = map[string]json.RawMessage{}
	}
	return res, nil
}

// cancelResult is REP's {ok: true} (§5.4) and what became of the run.
type cancelResult struct {
	OK     bool        `json:"ok"`
	RunID  string      `json:"run_id"`
	Status flow.Status `json:"status"`
	// Cancelled says whether this call stopped the run (false when it had
	// already finished: REP accepts ok true then).
	Cancelled bool `json:"cancelled"`
}

func (s *Server) cancelRun(ctx context.Context, p json.RawMessage) (any, *rpcError) {
	var params struct {
		RunID string `json:"run_id"`
	}
	if err := decodeParams(p, &params); err != nil {
		return nil, err
	}
	r, rerr := s.lookup(params.RunID)
	if rerr != nil {
		return nil, rerr
	}
	if st := r.currentStatus(); st.Finished() {
		return cancelResult{OK: true, RunID: r.id, Status: st}, nil
	}
	r.cancel(errCancelled)
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, errorf(CodeInternal, "the runtime is shutting down: %v", ctx.Err())
	}
	return cancelResult{OK: true, RunID: r.id, Status: r.currentStatus(), Cancelled: r.wasCancelled()}, nil
}

// healthResult is REP's {ok: true, details: {...}} (§5.5).
type healthResult struct {
	OK      bool          `json:"ok"`
	Details healthDetails `json:"details"`
}

type healthDetails struct {
	Version      string `json:"version"`
	RunsActive   int    `json:"runs_active"`
	RunsPending  int    `json:"runs_pending"`
	RunsRunning  int    `json:"runs_running"`
	RunsRetained int    `json:"runs_retained"`
}

func (s *Server) health(p json.RawMessage) (any, *rpcError) {
	if err := decodeParams(p, &struct{}{}); err != nil {
		return nil, err
	}
	res := healthResult{OK: true, Details: healthDetails{Version: ProtocolVersion}}
	s.mu.Lock()
	runs := make([]*run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	d := &res.Details
	for _, r := range runs {
		switch r.currentStatus() {
		case flow.StatusPending:
			d.RunsPending++
		case flow.StatusRunning:
			d.RunsRunning++
		default:
			d.RunsRetained++
		}
	}
	d.RunsActive = d.RunsPending + d.RunsRunning
	return res, nil
}
