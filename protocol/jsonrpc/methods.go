package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/wasmgate/wasmgate/protocol/jsonrpc/flow"
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

type capabilitiesResult struct {
	Version   string       `json:"version"`
	IRVersion string       `json:"ir_version"`
	StepKinds []string     `json:"step_kinds"`
	Limits    limitsResult `json:"limits"`
	// Compatible: the client's version is of this runtime's line and every
	// step kind it named is available.
	Compatible       bool     `json:"compatible"`
	MissingStepKinds []string `json:"missing_step_kinds"`
}

type limitsResult struct {
	Concurrency     int `json:"concurrency"`
	MaxSteps        int `json:"max_steps"`
	MaxRetries      int `json:"max_retries"`
	MaxBackoffMs    int `json:"max_backoff_ms"`
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
		IRVersion: flow.Version,
		StepKinds: s.stepKinds,
		Limits: limitsResult{
			Concurrency:     s.cfg.Concurrency,
			MaxSteps:        flow.MaxNodes,
			MaxRetries:      flow.MaxRetries,
			MaxBackoffMs:    flow.MaxBackoffMs,
			MaxRequestBytes: s.cfg.MaxRequestBytes,
		},
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
		RunID      string `json:"run_id"`
		TraceID    string `json:"trace_id"`
		AllowShell bool   `json:"allow_shell"`
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
	switch {
	case len(params.IR) == 0 || string(params.IR) == "null":
		return nil, errorf(CodeInvalidParams, "ir is required: a Flow IR %s document", flow.Version)
	case opts.AllowShell:
		return nil, errorf(CodeInvalidParams, "allow_shell is not supported: executors run in a sandbox that has no shell")
	case opts.TraceID != "" && !uuidPattern.MatchString(opts.TraceID):
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
	traceID := opts.TraceID
	if traceID == "" {
		traceID = s.cfg.DefaultTraceID
	}
	if traceID == "" {
		traceID = newUUID()
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
		id = newUUID()
	}
	if _, taken := s.runs[id]; taken {
		return nil, errorf(CodeInvalidParams, "run id %q is already in use", id)
	}
	s.start(&run{id: id, traceID: strings.ToLower(traceID), flow: f, inputs: inputs})
	return startRunResult{RunID: id, TraceID: strings.ToLower(traceID)}, nil
}

// flowError maps a refused flow to its protocol error.
func flowError(err error) *rpcError {
	var fe *flow.Error
	if !errors.As(err, &fe) {
		return errorf(CodeInternalError, "%v", err)
	}
	switch {
	case errors.Is(err, flow.ErrVersion):
		e := errorf(CodeIRVersion, "%s", fe.Msg)
		e.Data = map[string]string{"supported": flow.Version}
		return e
	case errors.Is(err, flow.ErrUnknownStepKind):
		e := errorf(CodeUnknownStepKind, "%s", fe.Msg)
		e.Data = map[string]string{"step_id": fe.StepID, "type": fe.Type}
		return e
	}
	e := errorf(CodeSchema, "%s", fe.Msg)
	if fe.StepID != "" {
		e.Data = map[string]string{"step_id": fe.StepID}
	}
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
	return r.snapshot(params.Since), nil
}

type cancelResult struct {
	RunID  string      `json:"run_id"`
	Status flow.Status `json:"status"`
	// Cancelled says whether this call stopped the run.
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
		return cancelResult{RunID: r.id, Status: st}, nil
	}
	r.cancel(errCancelled)
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil, errorf(CodeInternalError, "the runtime is shutting down: %v", ctx.Err())
	}
	st := r.currentStatus()
	return cancelResult{RunID: r.id, Status: st, Cancelled: st == flow.StatusCancelled}, nil
}

type healthResult struct {
	Status       string `json:"status"`
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
	res := healthResult{Status: "ok", Version: ProtocolVersion}
	s.mu.Lock()
	runs := make([]*run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		switch r.currentStatus() {
		case flow.StatusPending:
			res.RunsPending++
		case flow.StatusRunning:
			res.RunsRunning++
		default:
			res.RunsRetained++
		}
	}
	res.RunsActive = res.RunsPending + res.RunsRunning
	return res, nil
}
