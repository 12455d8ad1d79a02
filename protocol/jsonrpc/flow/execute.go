package flow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Status is the state of a run.
type Status string

const (
	// StatusPending: accepted, waiting for a free slot.
	StatusPending Status = "pending"
	// StatusRunning: executing steps.
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	// StatusCancelled: stopped by its caller before it finished.
	StatusCancelled Status = "cancelled"
)

// Finished reports whether s is final.
func (s Status) Finished() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

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

// EventType is "log" or "step".
type EventType string

const (
	EventLog  EventType = "log"
	EventStep EventType = "step"
)

// StepStatus is what a step event reports.
type StepStatus string

const (
	StepStarted   StepStatus = "started"
	StepSucceeded StepStatus = "succeeded"
	StepFailed    StepStatus = "failed"
	// StepSkipped: no edge into the node was taken.
	StepSkipped StepStatus = "skipped"
)

// Event is one thing that happened in a run.
type Event struct {
	// Seq numbers a run's events from 1; the runtime that stores them sets
	// it.
	Seq  int       `json:"seq"`
	Type EventType `json:"type"`
	// Ts is when it happened (RFC 3339, UTC).
	Ts string `json:"ts"`
	// Level of a log event: info, warn or error.
	Level  string     `json:"level,omitempty"`
	StepID string     `json:"step_id,omitempty"`
	Kind   string     `json:"kind,omitempty"`
	Status StepStatus `json:"status,omitempty"`
	// Attempt of a step event (0 for a failure before the first attempt,
	// absent for a skipped step).
	Attempt *int `json:"attempt,omitempty"`
	// Retriable and WillRetry are set on failed step events.
	Retriable *bool  `json:"retriable,omitempty"`
	WillRetry *bool  `json:"will_retry,omitempty"`
	Message   string `json:"message,omitempty"`
	// DurationMs of a finished attempt.
	DurationMs *int64 `json:"duration_ms,omitempty"`
	Result     any    `json:"result,omitempty"`
	// Output of a succeeded step, for Summary; not part of the event's
	// JSON (outputs are in the run's summary).
	Output json.RawMessage `json:"-"`
}

// Summary is the tally of a run's events.
type Summary struct {
	StepsTotal     int `json:"steps_total"`
	StepsSucceeded int `json:"steps_succeeded"`
	StepsFailed    int `json:"steps_failed"`
	StepsSkipped   int `json:"steps_skipped"`
	// Attempts counts started attempts, retries included.
	Attempts int `json:"attempts"`
	// Outputs of the steps that succeeded, by step id (null: no output).
	Outputs map[string]json.RawMessage `json:"outputs"`
}

// NewSummary is the summary of f before it runs.
func NewSummary(f *Flow) Summary {
	return Summary{StepsTotal: f.Steps(), Outputs: map[string]json.RawMessage{}}
}

// Apply counts e.
func (s *Summary) Apply(e Event) {
	if e.Type != EventStep {
		return
	}
	switch e.Status {
	case StepStarted:
		s.Attempts++
	case StepSucceeded:
		s.StepsSucceeded++
		s.Outputs[e.StepID] = e.Output
	case StepFailed:
		if e.WillRetry == nil || !*e.WillRetry {
			s.StepsFailed++
		}
	case StepSkipped:
		s.StepsSkipped++
	}
}

// FailureReason says why a run failed.
type FailureReason string

const (
	// ReasonStepFailed: the step's last attempt failed.
	ReasonStepFailed FailureReason = "step_failed"
	// ReasonStepTimeout: the step's last attempt exceeded its timeout_ms.
	ReasonStepTimeout FailureReason = "step_timeout"
	// ReasonFlowTimeout: flow.timeout_ms elapsed.
	ReasonFlowTimeout FailureReason = "flow_timeout"
	// ReasonInputUnresolved: a reference in the step's with could not be
	// resolved; the step did not run.
	ReasonInputUnresolved FailureReason = "input_unresolved"
)

// Failure is why a run failed: the step that failed and how.
type Failure struct {
	StepID string `json:"step_id"`
	// Attempt is the last attempt made (retry.max+1 when every retry
	// failed); 0 when the step failed before its first attempt.
	Attempt int `json:"attempt"`
	// Retriable says whether the failure was of a kind that is retried
	// (even when the retries are spent).
	Retriable bool          `json:"retriable"`
	Reason    FailureReason `json:"reason"`
	// Result is the failed attempt's Outcome.Result.
	Result  any    `json:"result,omitempty"`
	Message string `json:"-"`
}

// Result is how a run ended.
type Result struct {
	// Status is StatusCompleted, StatusFailed or StatusCancelled.
	Status Status
	// Failure is set when Status is StatusFailed.
	Failure *Failure
}

// ExecConfig is what one execution needs.
type ExecConfig struct {
	// Inputs is the run's inputs: a JSON object, or empty for {}.
	Inputs json.RawMessage
	Step   StepFunc
	// Emit receives the run's events, in order, from the executing
	// goroutine.
	Emit func(Event)
	// DefaultTimeout caps the run when the flow sets no timeout_ms (0: no
	// cap).
	DefaultTimeout time.Duration
}

var (
	errFlowTimeout = errors.New("flow.timeout_ms elapsed")
	errStepTimeout = errors.New("the step's timeout_ms elapsed")
)

// execution is the state of one run.
type execution struct {
	f       *Flow
	cfg     ExecConfig
	ctx     context.Context
	timeout time.Duration
	scope   scope
	taken   map[*node]bool
}

// Execute runs the flow to its end, or until ctx is done (the run is then
// cancelled) or the flow's timeout elapses (the run fails).
func (f *Flow) Execute(ctx context.Context, cfg ExecConfig) Result {
	x := &execution{f: f, cfg: cfg, ctx: ctx, timeout: f.timeout, taken: map[*node]bool{}}
	if x.timeout == 0 {
		x.timeout = cfg.DefaultTimeout
	}
	if x.timeout > 0 {
		var cancel context.CancelFunc
		x.ctx, cancel = context.WithTimeoutCause(ctx, x.timeout, errFlowTimeout)
		defer cancel()
	}
	x.scope = scope{inputs: map[string]any{}, outputs: map[string]json.RawMessage{}}
	if len(cfg.Inputs) > 0 {
		v, err := decode(cfg.Inputs)
		if err != nil {
			return x.end(Result{Status: StatusFailed, Failure: &Failure{StepID: f.nodes[0].id, Reason: ReasonInputUnresolved, Message: fmt.Sprintf("inputs: %v", err)}})
		}
		if v != nil {
			x.scope.inputs = v
		}
	}
	what := "run"
	if f.name != "" {
		what = fmt.Sprintf("run of flow %q", f.name)
	}
	x.log("info", "", fmt.Sprintf("%s started: %d steps", what, len(f.nodes)))
	for _, n := range f.nodes {
		if n.in > 0 && !x.taken[n] {
			x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepSkipped, Message: "no edge into the node was taken"})
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
	switch r.Status {
	case StatusCompleted:
		x.log("info", "", "run completed")
	case StatusCancelled:
		x.log("warn", "", "run cancelled")
	case StatusFailed:
		x.log("error", r.Failure.StepID, "run failed: "+r.Failure.Message)
	}
	return r
}

// stopped is the end of a run whose context is done while n is its next or
// current step.
func (x *execution) stopped(n *node, attempt int) Result {
	if context.Cause(x.ctx) == errFlowTimeout {
		return Result{Status: StatusFailed, Failure: &Failure{StepID: n.id, Attempt: attempt, Reason: ReasonFlowTimeout,
			Message: fmt.Sprintf("the flow timed out after %d ms", x.timeout.Milliseconds())}}
	}
	return Result{Status: StatusCancelled}
}

// step runs n; ok is false when the run ends with res.
func (x *execution) step(n *node) (res Result, ok bool) {
	value, err := n.with.resolve(&x.scope)
	var payload json.RawMessage
	if err == nil {
		payload, err = encode(value)
	}
	if err != nil {
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepFailed, Attempt: ptr(0),
			Retriable: ptr(false), WillRetry: ptr(false), Message: err.Error()})
		return Result{Status: StatusFailed, Failure: &Failure{StepID: n.id, Reason: ReasonInputUnresolved, Message: fmt.Sprintf("step %q: %v", n.id, err)}}, false
	}
	if n.kind == SwitchKind {
		return x.decide(n, value.(map[string]any)["value"])
	}
	for attempt := 1; ; attempt++ {
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepStarted, Attempt: ptr(attempt)})
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
			x.scope.outputs[n.id] = output
			x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepSucceeded, Attempt: ptr(attempt), DurationMs: &took, Result: out.Result, Output: output})
			x.take(n, "success")
			return Result{}, true
		}
		failure := &Failure{StepID: n.id, Attempt: attempt, Retriable: out.Retriable, Reason: ReasonStepFailed, Result: out.Result, Message: out.Message}
		if x.ctx.Err() != nil {
			stop := x.stopped(n, attempt)
			msg := "the run was cancelled"
			if stop.Failure != nil {
				msg = stop.Failure.Message
			}
			x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepFailed, Attempt: ptr(attempt),
				Retriable: ptr(false), WillRetry: ptr(false), Message: msg, DurationMs: &took, Result: out.Result})
			if stop.Failure != nil {
				stop.Failure.Result = out.Result
			}
			return stop, false
		}
		if timedOut {
			failure.Retriable, failure.Reason = true, ReasonStepTimeout
			failure.Message = fmt.Sprintf("timed out after %d ms", n.timeout.Milliseconds())
		}
		again := failure.Retriable && attempt <= n.retries
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepFailed, Attempt: ptr(attempt),
			Retriable: ptr(failure.Retriable), WillRetry: ptr(again), Message: failure.Message, DurationMs: &took, Result: out.Result})
		if !again {
			failure.Message = fmt.Sprintf("step %q failed on attempt %d: %s", n.id, attempt, failure.Message)
			return Result{Status: StatusFailed, Failure: failure}, false
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

// decide evaluates switch n on value and takes the matching edges.
func (x *execution) decide(n *node, value any) (Result, bool) {
	x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepStarted, Attempt: ptr(1)})
	label, err := caseLabel(value)
	if err != nil {
		x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepFailed, Attempt: ptr(1),
			Retriable: ptr(false), WillRetry: ptr(false), Message: err.Error()})
		return Result{Status: StatusFailed, Failure: &Failure{StepID: n.id, Attempt: 1, Reason: ReasonStepFailed, Message: fmt.Sprintf("switch %q: %v", n.id, err)}}, false
	}
	var chosen any
	switch {
	case x.take(n, "case:"+label) > 0:
		chosen = label
	case x.take(n, "default") > 0:
		chosen = "default"
	default:
		x.log("warn", n.id, fmt.Sprintf("switch %q: no case matches %q and there is no default: no edge is taken", n.id, label))
	}
	output, err := encode(map[string]any{"case": chosen, "value": value})
	if err != nil {
		output = json.RawMessage("null")
	}
	x.scope.outputs[n.id] = output
	zero := int64(0)
	x.emit(Event{Type: EventStep, StepID: n.id, Kind: n.kind, Status: StepSucceeded, Attempt: ptr(1), DurationMs: &zero,
		Result: map[string]any{"case": chosen}, Output: output})
	return Result{}, true
}

// take marks the targets of n's edges labelled on; it returns how many.
func (x *execution) take(n *node, on string) int {
	count := 0
	for _, e := range n.out {
		if e.on == on {
			x.taken[e.to] = true
			count++
		}
	}
	return count
}

func (x *execution) log(level, stepID, msg string) {
	x.emit(Event{Type: EventLog, Level: level, StepID: stepID, Message: msg})
}

func (x *execution) emit(e Event) {
	e.Ts = time.Now().UTC().Format(time.RFC3339Nano)
	if x.cfg.Emit != nil {
		x.cfg.Emit(e)
	}
}

func ptr[T any](v T) *T { return &v }
