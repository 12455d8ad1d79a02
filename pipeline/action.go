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
// Everything but Output, Message, Log and the classification (Stage,
// Failure, QuotesExecutor) is also in the audit record (as digests).
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
	// AuditIndex is the verdict record's leaf index in the audit log's
	// Merkle tree (package audit/transparency): its seq − 1, so that a
	// caller can fetch its inclusion proof later (`wasmgate audit prove LOG
	// --seq INDEX+1`). Nil when no verdict was recorded in a log: the
	// record could not be written, or the runtime keeps no log (an
	// audit.DiscardSink, a DryRun).
	AuditIndex *uint64 `json:"audit_index,omitempty"`

	// Stage is the step of the governed path that decided the verdict, and
	// Failure what kind of failure it is (FailureNone for SUCCESS): fronts
	// map them, with the reason codes, to their protocol's errors, and
	// never read Message for it. Neither is audited (the reason codes are)
	// nor part of the JSON form, which the protocols' clients check.
	Stage   Stage       `json:"-"`
	Failure FailureKind `json:"-"`
	// QuotesExecutor says that Message quotes the executor's own text (its
	// failure's, or of its output), which digest-only results withhold.
	QuotesExecutor bool `json:"-"`
}

// Stage is the step of the governed path that decided a verdict.
type Stage string

// Stages, in the order an action goes through them.
const (
	// StageInput: the request's payload (not JSON, its JSON limits, the
	// input schema). Nothing ran.
	StageInput Stage = "input"
	// StageLoad: resolving the executor (the action's route, the code, its
	// versions and capabilities, a JS tool's loading). Nothing ran.
	StageLoad Stage = "load"
	// StageRun: the executor's run (its exception, fuel, stack, memory,
	// the wall clock).
	StageRun Stage = "run"
	// StageOutput: the output (not JSON, its limits, the output schema);
	// a SUCCESS is decided here too.
	StageOutput Stage = "output"
	// StageAudit: the audit log could not take a record (AUDIT_LOG_FAILED),
	// whatever was decided before.
	StageAudit Stage = "audit"
)

// FailureKind is what kind of failure a verdict that is not SUCCESS is: the
// distinctions fronts make in their protocols' terms (HTTP error codes,
// NDJSON error events, JSON-RPC errors), which the reason codes alone do
// not carry (a limit on the input or on the output, a tool that is no tool
// or one that threw).
type FailureKind string

// Kinds of failure.
const (
	// FailureNone: SUCCESS.
	FailureNone FailureKind = ""
	// FailureInput: the payload breaks a rule (not JSON, a JSON limit, the
	// input schema). The caller's to fix; nothing ran.
	FailureInput FailureKind = "input_invalid"
	// FailureNotFound: no such action, executor, or export of a tool.
	FailureNotFound FailureKind = "not_found"
	// FailureToolInvalid: the code is no admissible executor (refused by
	// admission, a tool without execute), found out when it was loaded or,
	// for a JS factory that gave no tool, when it was called.
	FailureToolInvalid FailureKind = "tool_invalid"
	// FailureRefused: the deployment's governance refused the executor (a
	// version range, a capability). Nothing ran.
	FailureRefused FailureKind = "refused"
	// FailureException: the executor failed at its work (threw, trapped,
	// exited nonzero, gave output that is not JSON), or the engine did.
	FailureException FailureKind = "exception"
	// FailureLimit: a resource limit stopped the executor (fuel, stack,
	// memory, the output's size and shape).
	FailureLimit FailureKind = "limit"
	// FailureTimeout: the wall clock, or the caller's deadline, ended it.
	FailureTimeout FailureKind = "timeout"
	// FailureOutputInvalid: the output breaks the executor's own output
	// schema: a pure executor gives it again.
	FailureOutputInvalid FailureKind = "output_invalid"
	// FailureAudit: the audit log could not take a record.
	FailureAudit FailureKind = "audit_failed"
)

// Classify is the one classification of a verdict by its reason codes
// (the order of DESIGN.md) and whether the executor ran: the pipeline sets
// Stage and Failure with it, and a verdict read back from its audit record
// (where ran is fuel_used > 0) is classified the same way. Two facts the
// codes do not hold refine it where the pipeline knows them: a tool that
// is no tool when called (FailureToolInvalid over FailureException) and a
// tool export that is missing (FailureNotFound over FailureToolInvalid).
// No codes is SUCCESS: StageOutput, FailureNone.
func Classify(codes []ReasonCode, ran bool) (Stage, FailureKind) {
	if len(codes) == 0 {
		return StageOutput, FailureNone
	}
	if codes[len(codes)-1] == AuditLogFailed {
		return StageAudit, FailureAudit
	}
	switch codes[0] {
	case NonJSONPayload, InputSchemaInvalid:
		return StageInput, FailureInput
	case ActionUnknown, ExecutorNotFound:
		return StageLoad, FailureNotFound
	case ExecutorInvalid:
		return StageLoad, FailureToolInvalid
	case ActionVersionMissing, ActionVersionInvalid, ExecutorVersionMissing, ExecutorVersionIncompatible,
		ExecutorCapabilityMissing, ExecutorCapabilityMismatch:
		return StageLoad, FailureRefused
	case ExecutorTimeout:
		return StageRun, FailureTimeout
	case ExecutorException:
		if len(codes) > 1 && codes[1] == OutputNotJSON {
			return StageOutput, FailureException
		}
		return StageRun, FailureException
	case OutputSchemaInvalid:
		return StageOutput, FailureOutputInvalid
	case LimitExceeded:
		if len(codes) < 2 {
			break
		}
		switch codes[1] {
		case FuelExhausted, StackExhausted:
			return StageRun, FailureLimit
		case MemoryExhausted:
			if !ran {
				// A JS tool that did not fit its memory while loading.
				return StageLoad, FailureLimit
			}
			return StageRun, FailureLimit
		case OutputTooLarge:
			return StageOutput, FailureLimit
		}
		if ran {
			return StageOutput, FailureLimit
		}
		return StageInput, FailureInput
	}
	// A code out of place (not a verdict the pipeline gives): the
	// deployment's to look into, as a governance refusal is.
	return StageLoad, FailureRefused
}

// refines reports whether kind is what the pipeline knows more precisely
// than Classify's by (see Classify).
func refines(kind, byCodes FailureKind) bool {
	return kind == FailureToolInvalid && byCodes == FailureException ||
		kind == FailureNotFound && byCodes == FailureToolInvalid
}
