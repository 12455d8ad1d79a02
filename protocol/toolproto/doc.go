// Package toolproto implements the NDJSON tool protocol v1: a tool named by
// a manifest (DIR/**/manifest.json) reads one ToolRequest {context, input}
// on stdin and answers with ToolEvent lines {type, ts, toolId, payload} on
// stdout (started, then log events, then exactly one result or error),
// exiting 0 after a result, 1 after a recoverable error and 2 after one that
// is not.
//
// It has two sides. Serve is the tool side (`wasmgate tool serve-stdio`):
// it runs the tool through the pipeline, so the tool is sandboxed, limited
// and audited like any executor, and maps the ActionResult to events. Run
// is the runner (`wasmgate tool run`): it spawns the tool side as a child
// process, passes its events on, and enforces the protocol's guardrails on
// what the child produces (timeoutMs, maxOutputBytes, maxEvents), killing
// it and reporting RUNNER_TIMEOUT, RUNNER_MAX_OUTPUT_BYTES or
// RUNNER_MAX_EVENTS when it crosses one.
//
// # Events
//
//	started  {name, version, runtime, timeoutMs}
//	log      {level: "info"|"warn"|"error", message}
//	result   {output, status, reason_codes, executor_id, executor_version,
//	          trace_id, input_digest, output_digest, fuel_used, duration_ms}
//	error    {code, message, recoverable, keys?, ...the verdict fields when
//	          the tool ran}
//
// Every stream starts with started, even when the request is refused before
// anything runs, and ends with exactly one result or error event.
//
// # Recoverable errors
//
// An error is recoverable when the caller can do something about it with
// the same tool: the tool ran and failed (FAILED: it threw, or returned
// something that is not JSON), the input was refused before the tool ran
// (NON_JSON_PAYLOAD, or a payload over the limits), or a required config key
// is missing (MISSING_CONFIG). Everything else is not: an unknown or invalid
// tool, a request that is not a ToolRequest, a tool stopped by a limit while
// running (fuel, memory, stack, output), and every guardrail the runner
// enforces. A timeout is RUNNER_TIMEOUT whichever side notices it first.
package toolproto
