// Package toolproto implements the NDJSON tool protocol v1: a tool named by
// a manifest (DIR/**/manifest.json) reads one ToolRequest {context, input}
// on stdin to EOF and answers with ToolEvent lines {type, ts, toolId,
// payload} on stdout: started, log events, then one result or error. Its
// stderr is raw diagnostics, and it exits 0 after a result, 1 after an
// error event, and only a crash leaves it without one (exit 2 or more).
//
// It has two sides. Serve is the tool side (`wasmgate tool serve-stdio`):
// it runs the tool through the pipeline, so the tool is sandboxed, limited
// and audited like any executor, and speaks the protocol as its reference
// tools do. Run is the runner (`wasmgate tool run`): it spawns a tool side
// as a child process, passes its events on, and enforces the protocol's
// guardrails on what the child writes (timeoutMs, maxOutputBytes,
// maxEvents), stopping it and reporting RUNNER_GUARDRAIL when it crosses
// one, and TOOL_CRASH when it ends without a result or error event.
//
// # Events
//
//	started  {"meta": {name, version, runtime}}
//	log      {level: debug|info|warn|error, message, data?}  (a JS tool's
//	         console calls, written while the tool runs)
//	result   the tool's output itself when it is a JSON object;
//	         {"value": output} for any other value; {} for none
//	error    {message, code, recoverable}
//
// The governance verdict (status, reason codes, digests, fuel) is not in
// any event: it is in the audit record, and on stderr for a person
// (ServeConfig.Verdict).
//
// A tool of runtime "node" is a Node program that writes these events
// itself; the tool side runs it sandboxed and passes on each event it
// writes, once checked, adding an error event only when the tool could not
// end its stream (a limit, a crash, a line that is not an event).
//
// # Error codes
//
// An exception a JS tool throws is its own error: an Error whose code is a
// string gives that code, and its recoverable flag when that is a boolean
// (recoverable otherwise); any other throw is EXECUTOR_EXCEPTION,
// recoverable. A governance refusal keeps its reason code (the specific one:
// FUEL_EXHAUSTED rather than LIMIT_EXCEEDED); it is recoverable when the
// caller can fix it with the same tool (the input was refused, a required
// config key is missing: CONFIG_MISSING) and not otherwise (limits hit while
// running, EXECUTOR_TIMEOUT, an unknown or invalid tool, a request that is
// not a ToolRequest). The runner's own errors are never recoverable.
package toolproto
