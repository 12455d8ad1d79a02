// Package pipeline is the governed path of one action: it validates the
// request, resolves the executor through a registry, enforces the JSON limits
// on canonical input and output, runs the executor, maps the Outcome to an
// ActionResult with reason codes, and appends the audit record before the
// result is returned.
//
// It does not know which Wasm engine runs an executor: executors are reached
// through the Executor interface.
package pipeline

import (
	"encoding/json"
)

// ActionRequest asks for one action to be executed.
type ActionRequest struct {
	Action string `json:"action"`
	// Payload is any JSON value. It is canonicalized (RFC 8785) before
	// anything else looks at it.
	Payload json.RawMessage `json:"payload"`
	// TraceID is a UUID. When empty, the pipeline assigns a random one.
	TraceID string `json:"trace_id"`
	// TsUTC is an RFC 3339 timestamp in UTC. When empty, the pipeline uses
	// the time the request arrived.
	TsUTC string `json:"ts_utc"`
	// Env is the request's configuration, a JSON object (or empty or null
	// for none): what a JS tool's factory gets (HTTP env, NDJSON
	// context.config). It is audited as env_digest, never as keys or
	// values, and reaches the executor only through the pipeline, as the
	// canonical bytes digested. Executors without a use for it (Wasm
	// modules) do not see it; it is audited all the same, being part of
	// what was asked.
	Env json.RawMessage `json:"env,omitempty"`
}

// Status is the verdict on an action.
type Status string

const (
	StatusSuccess Status = "SUCCESS"
	StatusFailed  Status = "FAILED"
	StatusBlocked Status = "BLOCKED"
)

// ReasonCode says why an action did not succeed.
type ReasonCode string

// Reason codes, in the order they are checked.
const (
	NonJSONPayload              ReasonCode = "NON_JSON_PAYLOAD"
	ActionUnknown               ReasonCode = "ACTION_UNKNOWN"
	ActionVersionMissing        ReasonCode = "ACTION_VERSION_MISSING"
	ActionVersionInvalid        ReasonCode = "ACTION_VERSION_INVALID"
	ExecutorNotFound            ReasonCode = "EXECUTOR_NOT_FOUND"
	ExecutorInvalid             ReasonCode = "EXECUTOR_INVALID"
	ExecutorVersionMissing      ReasonCode = "EXECUTOR_VERSION_MISSING"
	ExecutorVersionIncompatible ReasonCode = "EXECUTOR_VERSION_INCOMPATIBLE"
	ExecutorCapabilityMissing   ReasonCode = "EXECUTOR_CAPABILITY_MISSING"
	ExecutorCapabilityMismatch  ReasonCode = "EXECUTOR_CAPABILITY_MISMATCH"
	LimitExceeded               ReasonCode = "LIMIT_EXCEEDED"
	PayloadTooLarge             ReasonCode = "PAYLOAD_TOO_LARGE"
	DepthExceeded               ReasonCode = "DEPTH_EXCEEDED"
	ListTooLong                 ReasonCode = "LIST_TOO_LONG"
	FuelExhausted               ReasonCode = "FUEL_EXHAUSTED"
	StackExhausted              ReasonCode = "STACK_EXHAUSTED"
	MemoryExhausted             ReasonCode = "MEMORY_EXHAUSTED"
	OutputTooLarge              ReasonCode = "OUTPUT_TOO_LARGE"
	// InputSchemaInvalid: the payload does not match the executor's
	// input_schema (BLOCKED; nothing ran).
	InputSchemaInvalid ReasonCode = "INPUT_SCHEMA_INVALID"
	ExecutorTimeout    ReasonCode = "EXECUTOR_TIMEOUT"
	ExecutorException  ReasonCode = "EXECUTOR_EXCEPTION"
	OutputNotJSON      ReasonCode = "OUTPUT_NOT_JSON"
	// OutputSchemaInvalid: the output does not match the executor's
	// output_schema, or there is none while it declares one (FAILED).
	OutputSchemaInvalid ReasonCode = "OUTPUT_SCHEMA_INVALID"
	AuditLogFailed      ReasonCode = "AUDIT_LOG_FAILED"
)

// ActionResult is the verdict on one action, as returned to the caller.
// Everything but Output and Message is also in the audit record (as digests).
type ActionResult struct {
	Action          string       `json:"action"`
	ExecutorID      string       `json:"executor_id"`
	ExecutorVersion string       `json:"executor_version"`
	Status          Status       `json:"status"`
	ReasonCodes     []ReasonCode `json:"reason_codes"`
	InputDigest     string       `json:"input_digest"`
	// EnvDigest is the digest of the request's canonical env; empty when it
	// had none.
	EnvDigest string `json:"env_digest,omitempty"`
	// OutputDigest is nil when the action delivered no output.
	OutputDigest *string `json:"output_digest"`
	TraceID      string  `json:"trace_id"`
	TsUTC        string  `json:"ts_utc"`
	DurationMs   int64   `json:"duration_ms"`
	FuelUsed     uint64  `json:"fuel_used"`
	// Output is the canonical output, for the caller only: never audited.
	Output json.RawMessage `json:"output,omitempty"`
	// Message explains a result that is not SUCCESS. It may quote the
	// executor's own error text, so it is for the caller only: never audited.
	Message string `json:"message,omitempty"`
	// Log is the executor's bounded diagnostic output (stderr), for the
	// caller only: never audited.
	Log string `json:"log,omitempty"`
	// ExitCode is the exit status of a program (RunProgram) that ended by
	// itself; nil for an action, and for a program a limit stopped.
	ExitCode *int `json:"exit_code,omitempty"`

	// guestMessage says that Message quotes the executor (its failure's
	// text), which digest-only results withhold.
	guestMessage bool
}
