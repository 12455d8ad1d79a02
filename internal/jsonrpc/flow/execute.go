package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Status is the state of a run: REP's four values (§5.3).
type Status string

const (
	// StatusPending: accepted, not started (waiting for a free slot).
	StatusPending Status = "pending"
	// StatusRunning: executing steps.
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	// StatusFailed: a step failed for good without a failure edge, the
	// flow timed out, or the run was cancelled.
	StatusFailed Status = "failed"
)

// Finished reports whether s is final.
func (s Status) Finished() bool { return s == StatusCompleted || s == StatusFailed }

// Call is one attempt of an action step.
type Call struct {
	StepID string
	// Kind is the node's type: the action to run.
	Kind string
	// Payload is the node's with, references resolved.
	Payload json.RawMessage
	// Attempt counts from 1.
	Attempt int
}

// Outcome is what an attempt came to.
type Outcome struct {
	OK bool
	// Output is the step's output when OK (empty: none, seen as null).
	Output json.RawMessage
	// Retriable says whether a failure may succeed when tried again.
	Retriable bool
	// Message says why the attempt failed.
	Message string
	// Result, when set, is shown in the step's succeeded or failed event
	// (for an action: its audited verdict).
	Result any
}

// StepFunc runs one attempt of an action step. ctx carries the step's and
// the run's deadlines and the run's cancellation: when it is done, the
// attempt should stop and may return anything.
type StepFunc func(ctx context.Context, call Call) Outcome

// EventType is "log" or "step" (REP §7).
type EventType string

const (
	EventLog  EventType = "log"
	EventStep EventType = "step"
)

// StepState is what a step event reports (REP §7).
type StepState string

const (
	StepStarted   StepState = "started"
	StepSucceeded StepState = "succeeded"
	StepFailed    StepState = "failed"
)

// TimestampFormat is RFC 3339 in UTC with milliseconds, as in REP's
// examples ("2024-06-30T18:25:43.511Z").
const TimestampFormat = "2006-01-02T15:04:05.000Z"

// Event is one thing that happened in a run, as REP §7 defines it: every
// event has type and timestamp; a log event level and message (and the
// step_id it concerns, if any); a step event step_id and state. The other
// members are this runtime's metrics.
type Event struct {
	Type EventType `json:"type"`
	// Timestamp is when it happened (TimestampFormat).
	Timestamp string `json:"timestamp"`
	// Seq numbers a run's events from 1; the runtime that stores them sets
	// it.
	Seq int `json:"seq"`
	// Level of a log event: info, warn or error.
	Level   string    `json:"level,omitempty"`
	Message string    `json:"message,omitempty"`
	StepID  string    `json:"step_id,omitempty"`
	State   StepState `json:"state,omitempty"`
	// Kind is a step event's node type.
	Kind string `json:"kind,omitempty"`
	// Attempt of a step event (0 for a failure before the first attempt).
	Attempt *int `json:"attempt,omitempty"`
	// Retriable and WillRetry are set on failed step events.
	Retriable *bool `json:"retriable,omitempty"`
	WillRetry *bool `json:"will_retry,omitempty"`
	// DurationMs of a finished attempt.
	DurationMs *int64 `json:"duration_ms,omitempty"`
	Result     any    `json:"result,omitempty"`
	// Output of a succeeded step, for Summary; not part of the event's
	// JSON (outputs are in the run's summary).
	Output json.RawMessage `json:"-"`
	// skipped marks the log event of a skipped node, for Summary.
	skipped bool
}

// Summary is the tally of a run's events. completed_steps and failed_steps
// are REP's (§5.3).
type Summary struct {
	CompletedSteps int `json:"completed_steps"`
	FailedSteps    int `json:"failed_steps"`
	SkippedSteps   int `json:"skipped_steps"`
	TotalSteps     int `json:"total_steps"`
	// Attempts counts started attempts, retries included.
	Attempts int `json:"attempts"`
	// Outputs of the steps that succeeded, by step id (null: no output).
	Outputs map[string]json.RawMessage `json:"outputs"`
}

// NewSummary is the summary of f before it runs.
func NewSummary(f *Flow) Summary {
	return Summary{TotalSteps: f.Steps(), Outputs: map[string]json.RawMessage{}}
}

// Apply counts e.
func (s *Summary) Apply(e Event) {
	if e.skipped {
		s.SkippedSteps++
	}
	if e.Type != EventStep {
		return
	}
	switch e.State {
	case StepStarted:
		s.Attempts++
	case StepSucceeded:
		s.CompletedSteps++
		s.Outputs[e.StepID] = e.Output
	case StepFailed:
		if e.WillRetry == nil || !*e.WillRetry {
			s.FailedSteps++
		}
	}
}

// FailureReason says why a run failed.
type FailureReason string

const (
	// ReasonStepFailed: the step's last attempt failed.
	ReasonStepFailed FailureReason = "step_failed"
	// ReasonStepTimeout: the step's last attempt exceeded its timeout_ms.
	ReasonStepTimeout FailureReason = "step_timeout"
	// ReasonUnresolvedReference: a reference in the step's with could not
	// be resolved; the step did not run.
	ReasonUnresolvedReference FailureReason = "unresolved_reference"
	// ReasonFlowTimeout: flow.timeout_ms (or the runtime's default) elapsed.
	ReasonFlowTimeout FailureReason = "flow_timeout"
	// ReasonCancelled: the run was cancelled (Runtime.Cancel, or the
	// runtime stopping).
	ReasonCancelled FailureReason = "cancelled"
)

// Failure is why a run failed.
type Failure struct {
	// StepID is the step that failed or was in flight; empty for a run
	// cancelled before its first step.
	StepID string
	// Attempt is the last attempt made (retry.max+1 when every retry
	// failed); 0 when the step failed before its first attempt.
	Attempt int
	// Retriable says whether the failure was of a kind that is retried
	// (even when the retries are spent).
	Retriable bool
	Reason    FailureReason
	// Result is the failed attempt's Outcome.Result.
	Result  any
	Message string
}

// Result is how a run ended.
type Result struct {
	// Status is StatusCompleted or StatusFailed.
	Status Status
	// Failure is set when Status is StatusFailed.
	Failure *Failure
}

// Cancelled is the end of a run cancelled before it started.
func Cancelled(cause error) Result {
	return Result{Status: StatusFailed, Failure: &Failure{Reason: ReasonCancelled, Message: cancelMessage(cause)}}
}

func cancelMessage(cause error) string {
	if cause == nil || errors.Is(cause, context.Canceled) {
		return "the run was cancelled"
	}
	return "the run was cancelled (" + cause.Error() + ")"
}

// ExecConfig is what one execution needs.
type ExecConfig struct {
	// Inputs is the run's inputs: a JSON object, or empty for {}.
	Inputs json.RawMessage
	Step   StepFunc
	// Emit receives the run's events, in order, from the executing
	// goroutine.
	Emit func(Event)
	// TimeoutCap caps the run's duration whatever flow.timeout_ms says
	// (spec §9: timeouts are enforced "subject to runtime caps"); 0: no cap.
	TimeoutCap time.Duration
}

var (
	errFlowTimeout = errors.New("flow.timeout_ms elapsed")
	errStepTimeout = errors.New("the step's timeout_ms elapsed")
)

// execution is the state of one run.
type execution struct {
	f       *Flow
	cfg     ExecConfig
	parent  context.Context
	ctx     context.Context
	timeout time.Duration
	scope   scope
	taken   map[*node]bool
}

// Execute runs the flow to its end, or until ctx is done or the flow's
// timeout (or the cap) elapses: the run then fails.
func (f *Flow) Execute(ctx context.Context, cfg ExecConfig) Result {
	x := &execution{f: f, cfg: cfg, parent: ctx, ctx: ctx, timeout: f.timeout, taken: map[*node]bool{}}
	if c := cfg.TimeoutCap; c > 0 && (x.timeout == 0 || c < x.timeout) {
		x.timeout = c
	}
	if x.timeout > 0 {
		var cancel context.CancelFunc
		x.ctx, cancel = context.WithTimeoutCause(ctx, x.timeout, errFlowTimeout)
		defer cancel()
	}
	x.scope = scope{inputs: map[string]any{}, constants: f.constants, outputs: map[string]any{}, nodes: map[string]bool{}}
	for _, n := range f.nodes {
		x.scope.nodes[n.id] = true
	}
	if len(cfg.Inputs) > 0 {
		v, err := decodeJSON(cfg.Inputs)
		if err != nil {
			return x.end(Result{Status: StatusFailed, Failure: &Failure{StepID: f.nodes[0].id, Reason: ReasonUnresolvedReference, Message: fmt.Sprintf("inputs: %v", err)}})
		}
		if v != nil {
			x.scope.inputs = v
		}
	}
	x.log("info", "", fmt.Sprintf("run of flow %q started: %d steps", f.name, len(f.nodes)))
	for _, n := range f.nodes {
		if len(n.in) > 0 && !x.taken[n] {
			x.emit(Event{Type: EventLog, Level: "info", StepID: n.id, skipped: true,
				Message: fmt.Sprintf("step %q skipped: no edge into it was taken", n.id)})
			continue
		}
		if x.ctx.Err() != nil {
			return x.end(x.stopped(n, 0))
		}
		if res, ok := x.step(n); !ok {
			return x.end(res)
		}
	}
	return x.end(Result{Status: StatusCompleted})
}

func (x *execution) end(r Result) Result {
	if r.Status == StatusCompleted {
		x.log("info", "", "run completed")
	} else {
		x.log("error", r.Failure.StepID, "run failed: "+r.Failure.Message)
	}
	return r
}

// stopped is the end of a run whose context is done while n is its next or
// current step.
func (x *execution) stopped(n *node, attempt int) Result {
	if context.Cause(x.ctx) == errFlowTimeout && x.parent.Err() == nil {
		return Result{Status: StatusFailed, Failure: &Failure{StepID: n.id, Attempt: attempt, Reason: ReasonFlowTimeout,
			Message: fmt.Sprintf("the flow timed out after %d ms", x.timeout.Milliseconds())}}
	}
	return Result{Status: StatusFailed, Failure: &Failure{StepID: n.id, Attempt: attempt, Reason: ReasonCancelled,
		Message: cancelMessage(context.Cause(x.parent))}}
}

// step runs n; ok is false when the run ends with res.
func (x *execution) step(n *node) (res Result, ok bool) {
	if n.sw != nil {
		return x.decide(n)
	}
	value, err := n.with.resolve(&x.scope)
	var payload json.RawMessage
	if err == nil {
		payload, err = encode(x.withConstants(n, value))
	}
	if err != nil {
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepFailed, Attempt: ptr(0),
			Retriable: ptr(false), WillRetry: ptr(false), Message: err.Error()})
		return x.failed(n, &Failure{StepID: n.id, Reason: ReasonUnresolvedReference, Message: fmt.Sprintf("step %q: %v", n.id, err)})
	}
	for attempt := 1; ; attempt++ {
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepStarted, Attempt: ptr(attempt)})
		start := time.Now()
		stepCtx, cancel := x.ctx, context.CancelFunc(func() {})
		if n.timeout > 0 {
			stepCtx, cancel = context.WithTimeoutCause(x.ctx, n.timeout, errStepTimeout)
		}
		out := x.cfg.Step(stepCtx, Call{StepID: n.id, Kind: n.kind, Payload: payload, Attempt: attempt})
		timedOut := context.Cause(stepCtx) == errStepTimeout
		cancel()
		took := time.Since(start).Milliseconds()
		if out.OK {
			output := out.Output
			if len(output) == 0 {
				output = json.RawMessage("null")
			}
			v, err := decodeJSON(output)
			if err != nil {
				v = nil
			}
			x.scope.outputs[n.id] = v
			x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepSucceeded, Attempt: ptr(attempt), DurationMs: &took, Result: out.Result, Output: output})
			x.take(n, false, "", false)
			return Result{}, true
		}
		failure := &Failure{StepID: n.id, Attempt: attempt, Retriable: out.Retriable, Reason: ReasonStepFailed, Result: out.Result, Message: out.Message}
		if x.ctx.Err() != nil {
			stop := x.stopped(n, attempt)
			stop.Failure.Result = out.Result
			x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepFailed, Attempt: ptr(attempt),
				Retriable: ptr(false), WillRetry: ptr(false), Message: stop.Failure.Message, DurationMs: &took, Result: out.Result})
			return stop, false
		}
		if timedOut {
			failure.Retriable, failure.Reason = true, ReasonStepTimeout
			failure.Message = fmt.Sprintf("timed out after %d ms", n.timeout.Milliseconds())
		}
		again := failure.Retriable && attempt <= n.retries
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepFailed, Attempt: ptr(attempt),
			Retriable: ptr(failure.Retriable), WillRetry: ptr(again), Message: failure.Message, DurationMs: &took, Result: out.Result})
		if !again {
			failure.Message = fmt.Sprintf("step %q failed on attempt %d: %s", n.id, attempt, failure.Message)
			return x.failed(n, failure)
		}
		if n.backoff > 0 {
			t := time.NewTimer(n.backoff)
			select {
			case <-t.C:
			case <-x.ctx.Done():
				t.Stop()
				return x.stopped(n, attempt), false
			}
		}
	}
}

// withConstants adds the IR's constants to the input of a "policy." step.
func (x *execution) withConstants(n *node, value any) any {
	m, ok := value.(map[string]any)
	if !ok || !strings.HasPrefix(n.kind, "policy.") {
		return value
	}
	if _, set := m[ConstantsMember]; !set {
		m[ConstantsMember] = x.scope.constants
	}
	return m
}

// failed is what a step that failed for good leads to: its failure edges
// when it has some (the run goes on), else the end of the run.
func (x *execution) failed(n *node, f *Failure) (Result, bool) {
	if targets := x.take(n, true, "", false); len(targets) > 0 {
		x.log("warn", n.id, fmt.Sprintf("%s; taking its failure edges to %s", f.Message, quoteAll(targets)))
		return Result{}, true
	}
	return Result{Status: StatusFailed, Failure: f}, false
}

// decide evaluates switch n and takes the edges of the case it chooses.
func (x *execution) decide(n *node) (Result, bool) {
	x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepStarted, Attempt: ptr(1)})
	key, err := n.sw.key.lookup(&x.scope)
	if err != nil {
		zero := int64(0)
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepFailed, Attempt: ptr(1),
			Retriable: ptr(false), WillRetry: ptr(false), Message: err.Error(), DurationMs: &zero})
		return x.failed(n, &Failure{StepID: n.id, Attempt: 1, Reason: ReasonUnresolvedReference, Message: fmt.Sprintf("switch %q: %v", n.id, err)})
	}
	label := caseLabel(key)
	var chosen any
	switch {
	case n.sw.labels[label]:
		chosen = label
	case n.sw.hasDefault:
		chosen = n.sw.def
	}
	if chosen != nil {
		x.take(n, false, chosen.(string), true)
	} else {
		x.take(n, false, "", false)
		x.log("warn", n.id, fmt.Sprintf("switch %q: no case matches %q and there is no default: no case edge is taken", n.id, label))
	}
	output := map[string]any{"case": chosen, "value": key}
	raw, err := encode(output)
	if err != nil {
		raw = json.RawMessage("null")
	}
	x.scope.outputs[n.id] = output
	zero := int64(0)
	x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, State: StepSucceeded, Attempt: ptr(1), DurationMs: &zero,
		Result: map[string]any{"case": chosen}, Output: raw})
	return Result{}, true
}

// take marks the targets of n's failure edges (failure), or of its success
// edges: when caseSet, those whose case is label and those without a case.
// It returns the ids of the nodes these edges lead to.
func (x *execution) take(n *node, failure bool, label string, caseSet bool) []string {
	var reached []string
	for _, e := range n.out {
		if e.failure != failure || (e.hasLabel && (!caseSet || e.label != label)) {
			continue
		}
		if !slices.Contains(reached, e.to.id) {
			reached = append(reached, e.to.id)
		}
		x.taken[e.to] = true
	}
	sort.Strings(reached)
	return reached
}

func quoteAll(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

func (x *execution) log(level, stepID, msg string) {
	x.emit(Event{Type: EventLog, Level: level, StepID: stepID, Message: msg})
}

func (x *execution) emit(e Event) {
	e.Timestamp = Now()
	if x.cfg.Emit != nil {
		x.cfg.Emit(e)
	}
}

// Now is the current time as an event timestamp.
func Now() string { return time.Now().UTC().Format(TimestampFormat) }

func ptr[T any](v T) *T { return &v }
