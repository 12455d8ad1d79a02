package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/protocol/jsonrpc"
	"github.com/wasmgate/wasmgate/runtime"
)

const repHelp = `Usage:
  wasmgate rep --config FILE [--audit FILE] [--concurrency N] [--engine E] [--cache-dir DIR]

Speaks the JSON-RPC 2.0 runtime protocol v0.1 on stdio: one request per
line on stdin, one response per line on stdout (nothing else goes there;
logs go to stderr). Runs execute Flow IR 1.0.0 flows whose steps are the
actions of --config; every step is one call through the governed pipeline,
audited (--audit FILE) with the run's trace id. On end of input, rep waits
for the pending and running runs to finish, then exits 0; SIGINT or SIGTERM
cancels them.

Methods (params -> result):
  Runtime.Capabilities {version?, step_kinds?}
      -> {version:"0.1.0", ir_version:"1.0.0", step_kinds:[actions..., "switch"],
          limits:{concurrency, max_steps, max_retries, max_backoff_ms, max_request_bytes},
          compatible, missing_step_kinds}
      The handshake: a version of another major (for 0.y.z: another minor)
      is refused with -32602; otherwise compatible is false exactly when some
      of the client's step_kinds are missing, and they are listed.
  Runtime.StartRun {ir, inputs?, options?:{run_id?, trace_id?, allow_shell?}}
      -> {run_id, trace_id}
      The flow is checked before the answer; the run then waits for a slot
      (status pending) and runs (running). run_id: 1-128 of [A-Za-z0-9._:-],
      default $TRACE_MIND_RUN_ID for the first run, else a random UUID.
      trace_id (UUID): default $TRACE_MIND_TRACE_ID, else random.
      allow_shell:true is refused (-32602): the sandbox has no shell.
  Runtime.Poll {run_id, since?}
      -> {run_id, trace_id, status: pending|running|completed|failed|cancelled,
          events, last_seq, summary:{steps_total, steps_succeeded, steps_failed,
          steps_skipped, attempts, outputs:{step_id: output}, started_at,
          finished_at, duration_ms}, error?}
      events are those with seq > since (default 0: all); pass last_seq as
      the next since. A failed run has error {code:2001, message,
      data:{step_id, attempt, retriable, reason, result?}}; reason is
      step_failed, step_timeout, flow_timeout or input_unresolved.
  Runtime.Cancel {run_id} -> {run_id, status, cancelled}
      Answers once the run has stopped; cancelled is false when it had
      already finished.
  Runtime.Health -> {status:"ok", version, runs_active, runs_pending,
                     runs_running, runs_retained}

Events: {seq, type:"log", ts, level, message, step_id?} and
  {seq, type:"step", ts, step_id, kind, status: started|succeeded|failed|skipped,
   attempt, retriable?, will_retry?, message?, duration_ms?, result?}
  with RFC 3339 UTC timestamps; an action step's result is its audited
  verdict (status, reason_codes, digests, fuel_used...).

Flow IR 1.0.0: {version:"1.0.0", flow:{name, timeout_ms},
  graph:{nodes:[{id, type, with, timeout_ms, retry:{max, backoff_ms}}],
         edges:[{from, to, on:"success"}]}}
  Steps run one at a time in a topological order; a node with incoming edges
  runs when one of them was taken, else it is skipped. A string in with that
  is exactly "${inputs.PATH}" or "${steps.ID.output.PATH}" (ID an ancestor;
  PATH dot-separated keys, numbers index arrays; both PATHs optional) is
  replaced by that JSON value; other strings holding "${" are refused ("$${"
  is a literal "${"). A "switch" node has with {"value": V} and edges
  on "case:LABEL" and "default"; a string V matches its own text, any other
  V its canonical JSON; no match and no default takes no edge.
  A step that FAILED, or was BLOCKED with only EXECUTOR_TIMEOUT, or exceeded
  its timeout_ms, is retried up to retry.max times (<= 10) after backoff_ms;
  other BLOCKED verdicts (governance, limits, fuel, audit) are not retried.
  flow.timeout_ms (default $TRACE_MIND_ENGINE_TIMEOUT ms, else none) caps a
  run from its first step.

Errors: 3001 not JSON (id null); -32600 invalid request (also a line over
  4 MiB); -32601 unknown method; -32602 invalid params (unknown fields too);
  -32603 internal; 1001 IR version; 1002 unknown step kind (data {step_id,
  type}); 1003 flow schema (ids, edges, cycles, references); 2001 step failed
  (in Poll); 3002 unknown run id. Requests are answered in order; a batch
  (JSON array) with an array; notifications (no id) and blank lines not at
  all. The latest 1000 finished runs are kept for Poll.

Flags:
`

func (e env) repCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("rep", e.stderr)
	config := fs.String("config", "", "registry configuration (JSON): its actions are the step kinds (required)")
	auditPath := fs.String("audit", "", "append every step's audit record to this JSON Lines file")
	concurrency := fs.Int("concurrency", jsonrpc.DefaultConcurrency, "runs executing at once; more wait")
	engineName := fs.String("engine", string(runtime.EngineWazero), engineUsage)
	cache := fs.String("cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), repHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("rep", &usageError{err.Error()})
	}
	switch {
	case len(pos) > 0:
		return e.fail("rep", usagef("unexpected argument %q", pos[0]))
	case *config == "":
		return e.fail("rep", usagef("--config FILE is required: its actions are what flows can run"))
	case *concurrency < 1:
		return e.fail("rep", usagef("--concurrency must be at least 1"))
	}
	defaults, err := repEnvironment()
	if err != nil {
		return e.fail("rep", err)
	}
	name, err := runtime.ParseEngineName(*engineName)
	if err != nil {
		return e.fail("rep", usagef("--engine: %v", err))
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))

	engine, err := runtime.NewEngine(ctx, runtime.NewConfig().WithEngine(name).WithCompilationCacheDir(cacheDir(*cache)))
	if err != nil {
		return e.fail("rep", err)
	}
	defer engine.Close(context.WithoutCancel(ctx))
	reg, err := e.loadRegistry(ctx, engine, sourceFlags{config: *config}, "", runtime.Limits{},
		func(problem string) { logger.Warn("registry problem", "problem", problem) })
	if err != nil {
		return e.fail("rep", err)
	}
	var sink audit.Sink
	if *auditPath != "" {
		fsink, err := audit.OpenFile(*auditPath)
		if err != nil {
			return e.fail("rep", err)
		}
		sink = fsink
	} else {
		logger.Warn("no --audit file: audit records are checked and dropped")
		sink = audit.NewDiscardSink()
	}
	defer sink.Close()

	srv, err := jsonrpc.NewServer(jsonrpc.Config{
		Pipeline:           pipeline.New(reg, sink),
		Concurrency:        *concurrency,
		DefaultRunID:       defaults.runID,
		DefaultTraceID:     defaults.traceID,
		DefaultFlowTimeout: defaults.flowTimeout,
		Logger:             logger,
	})
	if err != nil {
		return e.fail("rep", usagef("TRACE_MIND_RUN_ID or TRACE_MIND_TRACE_ID: %v", err))
	}
	logger.Info("serving the JSON-RPC runtime protocol on stdio", "version", jsonrpc.ProtocolVersion,
		"actions", len(reg.Actions()), "concurrency", *concurrency, "audit", *auditPath)
	err = srv.Serve(ctx, e.stdin, e.stdout)
	switch {
	case errors.Is(err, context.Canceled):
		logger.Info("interrupted: runs cancelled")
		return exitSuccess
	case err != nil:
		return e.fail("rep", err)
	}
	logger.Info("end of input: every run has finished")
	return exitSuccess
}

// repDefaults are the defaults a parent process passes through the
// environment.
type repDefaults struct {
	runID, traceID string
	flowTimeout    time.Duration
}

// repEnvironment reads TRACE_MIND_RUN_ID, TRACE_MIND_TRACE_ID and
// TRACE_MIND_ENGINE_TIMEOUT (milliseconds). A value that is set but unusable
// is a usage error rather than silently ignored.
func repEnvironment() (repDefaults, error) {
	d := repDefaults{runID: os.Getenv("TRACE_MIND_RUN_ID"), traceID: os.Getenv("TRACE_MIND_TRACE_ID")}
	if v := os.Getenv("TRACE_MIND_ENGINE_TIMEOUT"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return d, usagef("TRACE_MIND_ENGINE_TIMEOUT must be a positive number of milliseconds, not %q", v)
		}
		d.flowTimeout = time.Duration(ms) * time.Millisecond
	}
	return d, nil
}
