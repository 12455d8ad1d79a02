package toolproto

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/wasmgate/wasmgate/internal/sentinel"
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
	// Ts is when the event was written: ISO 8601 as JavaScript's
	// toISOString writes it (UTC, milliseconds).
	Ts      string          `json:"ts"`
	ToolID  string          `json:"toolId"`
	Payload json.RawMessage `json:"payload"`
}

// TimestampLayout is the layout of Event.Ts.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// StartedPayload is the payload of a started event, as the protocol's
// reference tools write it: {"meta": {...}}.
type StartedPayload struct {
	Meta Meta `json:"meta"`
}

// Meta is what a started event says of the tool: its manifest's name,
// version and runtime (all empty when no manifest declares the tool).
type Meta struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	Runtime string `json:"runtime,omitempty"`
}

// Log levels, the protocol's four.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelWarn  = "warn"
	LevelError = "error"
)

// LogPayload is the payload of a log event: one console call of a JS tool.
type LogPayload struct {
	Level   string `json:"level"`
	Message string `json:"message"`
	// Data is the structured context of console.log("message", {...}).
	Data json.RawMessage `json:"data,omitempty"`
}

// ResultPayload is the payload of a result event for a tool's output (its
// JSON, empty when the tool returned nothing): the output itself when it
// is a JSON object, {"value": output} when it is any other value, and {}
// when there is none. The verdict is not in it: the audit record has it.
func ResultPayload(output json.RawMessage) json.RawMessage {
	out := bytes.TrimSpace(output)
	switch {
	case len(out) == 0:
		return json.RawMessage("{}")
	case out[0] == '{':
		return out
	}
	return append(append(json.RawMessage(`{"value":`), out...), '}')
}

// ErrorPayload is the payload of an error event.
type ErrorPayload struct {
	Message string `json:"message"`
	// Code says what went wrong, for programs: a pipeline reason code, a
	// JS tool's own Error code, or one of the Code constants.
	Code string `json:"code"`
	// Recoverable says the user can fix it (input, config); false is a bug
	// or a limit, to be reported.
	Recoverable bool `json:"recoverable"`
}

// Error codes of error events besides the pipeline's reason codes (e.g.
// EXECUTOR_EXCEPTION, FUEL_EXHAUSTED) and JS tools' own codes.
const (
	// CodeInvalidRequest: stdin is not a ToolRequest.
	CodeInvalidRequest = "INVALID_REQUEST"
	// CodeConfigMissing: a requiredConfig key is not in context.config
	// (recoverable; the message names the keys).
	CodeConfigMissing = "CONFIG_MISSING"
	// CodeToolNotFound: no manifest declares the tool.
	CodeToolNotFound = "TOOL_NOT_FOUND"
	// CodeToolInvalid: the tool's manifest is invalid, its runtime is one
	// wasmgate cannot run, or its code is not a tool.
	CodeToolInvalid = "TOOL_INVALID"
	// CodeInternalError: wasmgate itself failed.
	CodeInternalError = "INTERNAL_ERROR"
	// CodeCancelled: the run was interrupted (a signal).
	CodeCancelled = "CANCELLED"
	// CodeRunnerGuardrail: the runner stopped the tool side at a
	// guardrail (timeoutMs, maxOutputBytes, maxEvents); the message names
	// it.
	CodeRunnerGuardrail = "RUNNER_GUARDRAIL"
	// CodeRunnerProtocolError: the tool side wrote something that is not a
	// well-formed event stream.
	CodeRunnerProtocolError = "RUNNER_PROTOCOL_ERROR"
	// CodeToolCrash: the tool side ended without a result or error event,
	// or crashed (exit status 2 or more, a signal) after its result.
	CodeToolCrash = "TOOL_CRASH"
)

// Exit codes, as the protocol's table has them.
const (
	// ExitResult: the run ended with a result.
	ExitResult = 0
	// ExitError: the run ended with an error event of the tool side.
	ExitError = 1
	// ExitCrash: the tool side ended without one (the runner's own error
	// events: guardrails, crashes, protocol errors).
	ExitCrash = 2
)

// ExitCode is the tool side's exit code after its terminal event: 0 after
// a result, 1 after an error event.
func ExitCode(terminal Event) int {
	if terminal.Type == EventResult {
		return ExitResult
	}
	return ExitError
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
const ErrOutOfOrder = sentinel.Error("toolproto: event out of order")

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
	return ev, w.put(ev.Type, line)
}

// Pass writes an event a tool wrote itself (a node tool's), already checked
// by ParseEvent and in order: line as the tool wrote it, or ev encoded anew
// when line is nil (its payload replaced).
//
// # Errors
//
// ErrOutOfOrder for an event the protocol does not allow here; the error
// of out.
func (w *Writer) Pass(ev Event, line []byte) error {
	first := ev.Type == EventStarted
	if w.ended || w.started == first {
		return fmt.Errorf("%w: %s", ErrOutOfOrder, ev.Type)
	}
	if line == nil {
		var err error
		if line, err = marshal(ev); err != nil {
			return fmt.Errorf("toolproto: %s event: %w", ev.Type, err)
		}
	}
	return w.put(ev.Type, line)
}

func (w *Writer) put(typ EventType, line []byte) error {
	w.started = true
	w.ended = typ.Terminal()
	if _, err := w.out.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("toolproto: writing the %s event: %w", typ, err)
	}
	return nil
}
