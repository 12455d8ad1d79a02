package toolproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/wasmgate/wasmgate/pipeline"
)

// EventType is what an event says.
type EventType string

// The protocol's event types.
const (
	EventStarted EventType = "started"
	EventLog     EventType = "log"
	EventResult  EventType = "result"
	EventError   EventType = "error"
)

// Terminal reports whether t ends a stream (result or error).
func (t EventType) Terminal() bool { return t == EventResult || t == EventError }

// Event is one line of a tool's stdout.
type Event struct {
	Type EventType `json:"type"`
	// Ts is when the event was written: RFC 3339, UTC, milliseconds.
	Ts      string          `json:"ts"`
	ToolID  string          `json:"toolId"`
	Payload json.RawMessage `json:"payload"`
}

// TimestampLayout is the layout of Event.Ts.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// StartedPayload is the payload of a started event: the tool as its
// manifest describes it (empty when the tool was not found) and the
// timeout the run is held to.
type StartedPayload struct {
	Name      string `json:"name,omitempty"`
	Version   string `json:"version,omitempty"`
	Runtime   string `json:"runtime,omitempty"`
	TimeoutMs int64  `json:"timeoutMs"`
}

// Log levels.
const (
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// LogPayload is the payload of a log event: one line of the tool's console
// output (a JS tool's console.*, a Wasm executor's stderr).
type LogPayload struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Verdict is the auditable part of the pipeline's ActionResult, carried by
// result events and by the error events of a tool that ran.
type Verdict struct {
	Status          pipeline.Status       `json:"status"`
	ReasonCodes     []pipeline.ReasonCode `json:"reason_codes"`
	ExecutorID      string                `json:"executor_id"`
	ExecutorVersion string                `json:"executor_version"`
	TraceID         string                `json:"trace_id"`
	InputDigest     string                `json:"input_digest"`
	// OutputDigest is nil when there is no output.
	OutputDigest *string `json:"output_digest"`
	FuelUsed     uint64  `json:"fuel_used"`
	DurationMs   int64   `json:"duration_ms"`
}

func verdictOf(res pipeline.ActionResult) Verdict {
	return Verdict{
		Status: res.Status, ReasonCodes: res.ReasonCodes,
		ExecutorID: res.ExecutorID, ExecutorVersion: res.ExecutorVersion,
		TraceID: res.TraceID, InputDigest: res.InputDigest, OutputDigest: res.OutputDigest,
		FuelUsed: res.FuelUsed, DurationMs: res.DurationMs,
	}
}

// ResultPayload is the payload of a result event: the tool's output (null
// when it returned none) and the verdict.
type ResultPayload struct {
	Output json.RawMessage `json:"output"`
	Verdict
}

// Error codes of error events. Reason codes of the pipeline (e.g.
// EXECUTOR_EXCEPTION, FUEL_EXHAUSTED) are error codes too.
const (
	// CodeInvalidRequest: stdin is not a ToolRequest (not recoverable).
	CodeInvalidRequest = "INVALID_REQUEST"
	// CodeMissingConfig: a requiredConfig key is not in context.config
	// (recoverable; the payload's keys name them).
	CodeMissingConfig = "MISSING_CONFIG"
	// CodeToolNotFound: no manifest declares the tool (not recoverable).
	CodeToolNotFound = "TOOL_NOT_FOUND"
	// CodeToolInvalid: the tool's manifest is invalid (not recoverable).
	CodeToolInvalid = "TOOL_INVALID"
	// CodeInternalError: wasmgate itself failed (not recoverable).
	CodeInternalError = "INTERNAL_ERROR"
	// CodeCancelled: the run was interrupted (not recoverable).
	CodeCancelled = "CANCELLED"
	// CodeRunnerTimeout: the run took longer than its timeoutMs.
	CodeRunnerTimeout = "RUNNER_TIMEOUT"
	// CodeRunnerMaxOutputBytes: the tool side wrote more than
	// maxOutputBytes (stdout and stderr together).
	CodeRunnerMaxOutputBytes = "RUNNER_MAX_OUTPUT_BYTES"
	// CodeRunnerMaxEvents: the tool side wrote more than maxEvents events.
	CodeRunnerMaxEvents = "RUNNER_MAX_EVENTS"
	// CodeRunnerProtocolError: the tool side wrote something that is not
	// a well-formed event stream.
	CodeRunnerProtocolError = "RUNNER_PROTOCOL_ERROR"
	// CodeToolCrashed: the tool side exited without a result or error.
	CodeToolCrashed = "TOOL_CRASHED"
)

// ErrorPayload is the payload of an error event. Verdict is set when the
// tool ran through the pipeline.
type ErrorPayload struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	Recoverable bool   `json:"recoverable"`
	// Keys are the missing keys of a MISSING_CONFIG error.
	Keys []string `json:"keys,omitempty"`
	*Verdict
}

// Exit codes of both sides, following the terminal event.
const (
	ExitResult         = 0
	ExitRecoverable    = 1
	ExitNonRecoverable = 2
)

// ExitCode is the exit code that goes with a terminal event: 0 for a
// result, 1 for a recoverable error, 2 for any other event.
func ExitCode(terminal Event) int {
	switch terminal.Type {
	case EventResult:
		return ExitResult
	case EventError:
		var p struct {
			Recoverable bool `json:"recoverable"`
		}
		if json.Unmarshal(terminal.Payload, &p) == nil && p.Recoverable {
			return ExitRecoverable
		}
	}
	return ExitNonRecoverable
}

// ErrorOf decodes the payload of an error event.
func ErrorOf(ev Event) (ErrorPayload, bool) {
	if ev.Type != EventError {
		return ErrorPayload{}, false
	}
	var p ErrorPayload
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return ErrorPayload{}, false
	}
	return p, true
}

// newEvent stamps an event and encodes it as one line (without the
// newline). HTML characters are not escaped: the line is for programs and
// terminals, not for a web page.
func newEvent(typ EventType, toolID string, payload any) (Event, []byte, error) {
	p, err := marshal(payload)
	if err != nil {
		return Event{}, nil, fmt.Errorf("toolproto: %s payload: %w", typ, err)
	}
	ev := Event{Type: typ, Ts: time.Now().UTC().Format(TimestampLayout), ToolID: toolID, Payload: p}
	line, err := marshal(ev)
	if err != nil {
		return Event{}, nil, fmt.Errorf("toolproto: %s event: %w", typ, err)
	}
	return ev, line, nil
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ErrOutOfOrder is returned by Writer.Write for an event the protocol does
// not allow where it is: anything before started, a second started, or
// anything after the terminal event.
const ErrOutOfOrder = errorString("toolproto: event out of order")

type errorString string

func (e errorString) Error() string { return string(e) }

// Writer writes the events of one tool side, one line each, in the order
// the protocol allows.
type Writer struct {
	out     io.Writer
	toolID  string
	started bool
	ended   bool
}

// NewWriter returns a Writer of toolID's events to out.
func NewWriter(out io.Writer, toolID string) *Writer {
	return &Writer{out: out, toolID: toolID}
}

// Write stamps and writes one event and returns it.
//
// # Errors
//
// ErrOutOfOrder for an event the protocol does not allow here (nothing is
// written); the error of out.
func (w *Writer) Write(typ EventType, payload any) (Event, error) {
	// started comes first, and only first.
	first := typ == EventStarted
	if w.ended || w.started == first {
		return Event{}, fmt.Errorf("%w: %s", ErrOutOfOrder, typ)
	}
	ev, line, err := newEvent(typ, w.toolID, payload)
	if err != nil {
		return Event{}, err
	}
	w.started = true
	w.ended = typ.Terminal()
	if _, err := w.out.Write(append(line, '\n')); err != nil {
		return ev, fmt.Errorf("toolproto: writing the %s event: %w", typ, err)
	}
	return ev, nil
}
