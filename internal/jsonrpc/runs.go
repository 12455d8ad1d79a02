package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/wasmgate/wasmgate/internal/jsonrpc/flow"
	"github.com/wasmgate/wasmgate/pipeline"
)

// errCancelled is the cause of a run stopped by Runtime.Cancel.
var errCancelled = errors.New("Runtime.Cancel")

// run is one execution of a flow and everything a poll reports about it.
type run struct {
	id, traceID string
	flow        *flow.Flow
	inputs      json.RawMessage
	cancel      context.CancelCauseFunc
	// done is closed once the run has finished.
	done chan struct{}

	mu       sync.Mutex
	status   flow.Status
	events   []flow.Event
	summary  flow.Summary
	failure  *flow.Failure
	started  time.Time
	finished time.Time
}

// emit stores e under the next sequence number.
func (r *run) emit(e flow.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq = len(r.events) + 1
	r.events = append(r.events, e)
	r.summary.Apply(e)
}

func (r *run) setRunning() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.started = flow.StatusRunning, time.Now()
}

func (r *run) finish(res flow.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.failure, r.finished = res.Status, res.Failure, time.Now()
}

func (r *run) currentStatus() flow.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status
}

// pollResult is the answer to Runtime.Poll: REP's status, events and
// summary (§5.3), then this runtime's.
type pollResult struct {
	Status  flow.Status  `json:"status"`
	Events  []flow.Event `json:"events"`
	Summary summaryJSON  `json:"summary"`
	RunID   string       `json:"run_id"`
	TraceID string       `json:"trace_id"`
	// LastSeq is the seq of the run's latest event: the since of the next
	// poll.
	LastSeq int `json:"last_seq"`
	// Error says why a failed run failed.
	Error *rpcError `json:"error,omitempty"`
	// Metadata is the IR's metadata, kept on the run.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

type summaryJSON struct {
	flow.Summary
	StartedAt  string `json:"started_at,omitempty"`
	FinishedAt string `json:"finished_at,omitempty"`
	// DurationMs is the time spent running so far (0 while pending).
	DurationMs int64 `json:"duration_ms"`
}

// snapshot is what a poll with since reports.
func (r *run) snapshot(since int) pollResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := pollResult{RunID: r.id, TraceID: r.traceID, Status: r.status, LastSeq: len(r.events), Events: []flow.Event{}, Metadata: r.flow.Metadata()}
	if since < len(r.events) {
		res.Events = slices.Clone(r.events[since:])
	}
	res.Summary.Summary = r.summary
	res.Summary.Outputs = maps.Clone(r.summary.Outputs)
	if !r.started.IsZero() {
		res.Summary.StartedAt = r.started.UTC().Format(flow.TimestampFormat)
		end := time.Now()
		if !r.finished.IsZero() {
			end = r.finished
		}
		res.Summary.DurationMs = end.Sub(r.started).Milliseconds()
	}
	if !r.finished.IsZero() {
		res.Summary.FinishedAt = r.finished.UTC().Format(flow.TimestampFormat)
	}
	if r.failure != nil {
		res.Error = failureError(r.failure)
	}
	return res
}

// wasCancelled reports whether the run ended cancelled.
func (r *run) wasCancelled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failure != nil && r.failure.Reason == flow.ReasonCancelled
}

// failureError is a failed run's error: 2001 for a step that failed; 1003
// (REP's Validation class: malformed inputs) for a step whose payload does
// not match its executor's input schema, details.in "payload"; 3001 with
// the cause REP §10 gives a timeout ("Timeout") for a flow that timed out,
// and likewise ("Cancelled") for a cancelled run, which is no step's
// failure either.
func failureError(f *flow.Failure) *rpcError {
	code := CodeStepFailed
	details := map[string]any{"reason": f.Reason}
	if v, ok := f.Result.(pipeline.ActionResult); ok && slices.Contains(v.ReasonCodes, pipeline.InputSchemaInvalid) {
		code, details["in"] = CodeSchema, "payload"
	}
	switch f.Reason {
	case flow.ReasonFlowTimeout:
		code, details["cause"] = CodeTransport, "Timeout"
	case flow.ReasonCancelled:
		code, details["cause"] = CodeTransport, "Cancelled"
	}
	if f.Result != nil {
		details["result"] = f.Result
	}
	return &rpcError{Code: code, Message: f.Message,
		Data: errorData{StepID: f.StepID, Attempt: f.Attempt, Retriable: f.Retriable, Details: details}}
}

// start registers a run and launches it; it waits for a slot in the
// background. s.mu is held.
func (s *Server) start(r *run) {
	ctx, cancel := context.WithCancelCause(s.runCtx)
	r.cancel = cancel
	r.done = make(chan struct{})
	r.status = flow.StatusPending
	r.summary = flow.NewSummary(r.flow)
	s.runs[r.id] = r
	s.wg.Add(1)
	go s.execute(ctx, r)
}

func (s *Server) execute(ctx context.Context, r *run) {
	defer s.wg.Done()
	defer r.cancel(nil)
	log := s.cfg.Logger.With("run_id", r.id, "trace_id", r.traceID)
	var res flow.Result
	if release, err := s.gate.Acquire(ctx); err == nil {
		r.setRunning()
		log.Info("run started", "flow", r.flow.Name(), "steps", r.flow.Steps())
		res = r.flow.Execute(ctx, flow.ExecConfig{
			Inputs:     r.inputs,
			Step:       s.step(r.traceID),
			Emit:       r.emit,
			TimeoutCap: s.cfg.FlowTimeoutCap,
		})
		release()
	} else {
		res = flow.Cancelled(context.Cause(ctx))
		r.emit(flow.Event{Type: flow.EventLog, Level: "error", Timestamp: flow.Now(), Message: "run failed before it started: " + res.Failure.Message})
	}
	s.retire(r, res)
	attrs := []any{"status", res.Status}
	if res.Failure != nil {
		attrs = append(attrs, "step_id", res.Failure.StepID, "attempt", res.Failure.Attempt, "reason", res.Failure.Reason)
	}
	log.Info("run finished", attrs...)
	close(r.done)
}

// retire records how r ended and keeps it for polling, forgetting the
// oldest finished runs beyond RetainedRuns. Both happen at once, so that
// runs are forgotten in the order they were seen to finish.
func (s *Server) retire(r *run, res flow.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.finish(res)
	s.retired = append(s.retired, r)
	for len(s.retired) > s.cfg.RetainedRuns {
		old := s.retired[0]
		if s.runs[old.id] == old {
			delete(s.runs, old.id)
		}
		s.retired = s.retired[1:]
	}
}

func (s *Server) lookup(id string) (*run, *rpcError) {
	if id == "" {
		return nil, errorf(CodeInvalidParams, "run_id is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.runs[id]
	if !ok {
		// A parameter error: REP keeps 3001 and 3002 for the runtime's own
		// failures, on which clients give up the connection.
		e := errorf(CodeInvalidParams, "unknown run id %q", id)
		e.Data = map[string]string{"run_id": id}
		return nil, e
	}
	return r, nil
}

// step runs one attempt of an action step through the pipeline.
func (s *Server) step(traceID string) flow.StepFunc {
	return func(ctx context.Context, c flow.Call) flow.Outcome {
		res, err := s.cfg.Pipeline.Execute(ctx, pipeline.ActionRequest{Action: c.Kind, Payload: c.Payload, TraceID: traceID})
		if res.Status == "" {
			// No verdict: the request envelope was refused, which a
			// checked trace id rules out.
			return flow.Outcome{Message: err.Error()}
		}
		verdict := res
		verdict.Output, verdict.Message, verdict.Log = nil, "", ""
		// What the run reports is as the results mode shows it; the output
		// itself stays for the steps that reference it.
		out := flow.Outcome{Result: verdict, Message: s.cfg.Results.Present(res).Message}
		switch {
		case err != nil:
			// Cancelled (the flow tells which deadline), or the engine
			// failed: worth another attempt.
			out.Retriable = true
			if out.Message == "" {
				out.Message = err.Error()
			}
		case res.Status == pipeline.StatusSuccess:
			out.OK, out.Output = true, res.Output
		default:
			out.Retriable = retriable(res)
		}
		return out
	}
}

// retriable says whether a verdict that is not SUCCESS may change on
// another attempt: an executor failure or a wall-clock timeout may; a
// governance refusal (unknown action, version, capabilities, JSON limits,
// input schema, fuel, stack, memory, output size, an unwritable audit log)
// will not, and neither will an output that breaks its schema (a pure
// executor gives the same output again). A tool that proved no tool when
// it was called is FAILED like an exception, and retried like one.
func retriable(res pipeline.ActionResult) bool {
	switch res.Failure {
	case pipeline.FailureException, pipeline.FailureTimeout:
		return true
	case pipeline.FailureToolInvalid:
		return res.Stage == pipeline.StageRun
	}
	return false
}
