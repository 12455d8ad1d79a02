package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/internal/jsonrpc"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

const repHelp = `Usage:
  wasmgate rep --config FILE [--audit FILE] [--concurrency N] [--engine E] [--cache-dir DIR]

Speaks TraceMind's Runtime Execution Protocol (REP) v0.1, JSON-RPC 2.0 on
stdio: one request per line on stdin, one response per line on stdout
(nothing else goes there; logs go to stderr). Runs execute Flow IR 1.0.0
flows, as TraceMind's compiler emits them, whose steps are the actions of
--config; every step is one call through the governed pipeline, audited
(--audit FILE) with the run's trace id. On end of input, rep waits for the
pending and running runs to finish, then exits 0; SIGINT or SIGTERM cancels
them.

Methods (params -> result):
  Runtime.Capabilities {version?, step_kinds?}
      -> {version:"0.1.0", step_kinds:[actions..., "switch"],
          limits:{concurrency, max_request_bytes}, ir_version:"1.0.0",
          compatible, missing_step_kinds}
      A client version of another major (for 0.y.z: another minor) is
      refused with -32602; compatible is false exactly when some of the
      client's step_kinds are missing, and they are listed.
  Runtime.StartRun {ir, inputs?, options?:{run_id?, trace_id?, allow_shell?}}
      -> {run_id, trace_id}
      The IR is checked (1001 version, 1003 schema and rules, 1002 step
      kinds) and the inputs against a JSON Schema inputs_schema (1003)
      before the answer; the run then waits for a slot (status pending) and
      runs (running). run_id: 1-128 of [A-Za-z0-9._:-], default
      $TRACE_MIND_RUN_ID for the first run, else a random UUID. trace_id
      (UUID, dashes optional): default $TRACE_MIND_TRACE_ID, else random.
      allow_shell is accepted either way: no step kind here uses a shell.
  Runtime.Poll {run_id, since?}
      -> {status: pending|running|completed|failed, events,
          summary:{completed_steps, failed_steps, skipped_steps, total_steps,
          attempts, outputs:{step_id: output}, started_at, finished_at,
          duration_ms}, run_id, trace_id, last_seq, error?, metadata}
      events are those with seq > since (default 0: all); pass last_seq as
      the next since. A failed run has error {code, message, data:{step_id,
      attempt, retriable, details:{reason, cause?, result?}}}: 2001 when a
      step failed (reason step_failed, step_timeout or unresolved_reference),
      3001 with cause "Timeout" when the flow timed out, 3001 with cause
      "Cancelled" when it was cancelled.
  Runtime.Cancel {run_id} -> {ok:true, run_id, status, cancelled}
      Answers once the run has stopped (status failed); cancelled is false
      when it had already finished.
  Runtime.Health -> {ok:true, details:{version, runs_active, runs_pending,
                     runs_running, runs_retained}}

Events (REP section 7): {type:"log", timestamp, seq, level, message, step_id?}
  and {type:"step", timestamp, seq, step_id, state: started|succeeded|failed,
  kind, attempt, retriable?, will_retry?, message?, duration_ms?, result?};
  timestamps are RFC 3339 UTC with milliseconds; an action step's result is
  its audited verdict. A node no edge leads to is reported by a log event.

Flow IR 1.0.0 (internal/jsonrpc/flow/schema.json): {version:"1.0.0",
  flow:{name, timeout_ms}, constants:{policyRef, policy}, inputs_schema,
  graph:{nodes:[{id, type, with, timeout_ms, retry:{max, backoff_ms}}],
  edges:[{from, to, on:"success"|"failure", case?}]}, metadata:{generated_at,
  source_file}}, checked against the spec's JSON Schema; unknown properties
  are ignored where the schema allows them. Steps run one at a time in a
  topological order; a node with incoming edges runs when one was taken.
  "failure" edges are taken when their source fails for good (after its
  retries), and the run goes on. A "switch" node has with {key_from: REF,
  cases:{VALUE: NODE}, default: VALUE} and takes its edges whose case is
  the key's value, else the default's. References, whole strings of with:
  $input.PATH, $step.ID.PATH, $.vars.ID.PATH, $.inputs.PATH,
  $constants.PATH, and ${inputs.PATH}, ${steps.ID.output.PATH},
  ${constants.PATH}; one that cannot be resolved fails the step. A step of
  type "policy.*" also gets the IR's constants as its input's "constants".
  inputs_schema validates the inputs when it is a JSON Schema; otherwise
  (TraceMind's {NAME: {type}} metadata) it is passed through.
  A step that FAILED, or was BLOCKED with only EXECUTOR_TIMEOUT, or exceeded
  its timeout_ms, is retried up to retry.max times after backoff_ms; other
  BLOCKED verdicts (governance, limits, fuel, audit) are not retried.
  $TRACE_MIND_ENGINE_TIMEOUT (seconds) caps every run; TRACE_MIND_LOG_JSON=1
  writes the log on stderr as JSON lines.

Errors: 1001 IR version; 1002 unknown step kind; 1003 IR schema or rules,
  or inputs (data.details {in, pointer}); 2001 step failed (in Poll); 3001
  not JSON, not a JSON-RPC 2.0 request object (a batch too: REP's responses
  are single objects), or a line over 4 MiB (id null when unknown); 3002
  the runtime failed; -32601 unknown method; -32602 invalid params (unknown
  fields, an unknown run id). Requests are answered in order, one response
  object per line; notifications (no id) and blank lines not at all. The
  latest 1000 finished runs are kept for Poll.

Flags:
`

func (e env) repCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("rep", e.stderr)
	config := fs.String("config", "", "registry configuration (JSON): its actions are the step kinds (required)")
	auditPath := fs.String("audit", "", "append every step's audit record to this JSON Lines file")
	auditLockWait := fs.Duration("audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	concurrency := fs.Int("concurrency", jsonrpc.DefaultConcurrency, "runs executing at once; more wait")
	resultsFlag := fs.String("results", "full", resultsUsage+"; digest-only: Poll reports no step outputs, only their digests")
	engineName := fs.String("engine", string(sandbox.EngineWazero), engineUsage)
	cache := fs.String("cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	var nf natsFlags
	nf.register(fs, "dispatch every step to the workers of this NATS JetStream deployment (instead of --config)")
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
	case *concurrency < 1:
		return e.fail("rep", usagef("--concurrency must be at least 1"))
	case nf.set():
		if err := notWith(fs, "config", "audit"); err != nil {
			return e.fail("rep", err)
		}
	case *config == "":
		return e.fail("rep", usagef("--config FILE (or --nats URL) is required: its actions are what flows can run"))
	}
	defaults, err := repEnvironment()
	if err != nil {
		return e.fail("rep", err)
	}
	name, err := sandbox.ParseEngineName(*engineName)
	if err != nil {
		return e.fail("rep", usagef("--engine: %v", err))
	}
	results, err := pipeline.ParseResults(*resultsFlag)
	if err != nil {
		return e.fail("rep", usagef("--results: %v", err))
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, nil))
	if defaults.logJSON {
		logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
	}

	runner, closeRunner, err := e.repRunner(ctx, nf, name, *cache, *config, *auditPath, *auditLockWait, logger)
	if err != nil {
		return e.fail("rep", err)
	}
	defer closeRunner()

	srv, err := jsonrpc.NewServer(jsonrpc.Config{
		Pipeline:       runner,
		Results:        results,
		Concurrency:    *concurrency,
		DefaultRunID:   defaults.runID,
		DefaultTraceID: defaults.traceID,
		FlowTimeoutCap: defaults.flowTimeout,
		Logger:         logger,
	})
	if err != nil {
		return e.fail("rep", usagef("TRACE_MIND_RUN_ID or TRACE_MIND_TRACE_ID: %v", err))
	}
	logger.Info("serving the JSON-RPC runtime protocol on stdio", "version", jsonrpc.ProtocolVersion,
		"actions", len(runner.Actions()), "concurrency", *concurrency, "audit", *auditPath)
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

// repRunner is what executes rep's steps: a pipeline of this process on
// the registry of config, audited to auditPath, or with --nats a client of
// the deployment's workers. closeFn releases it.
func (e env) repRunner(ctx context.Context, nf natsFlags, name sandbox.EngineName, cache, config, auditPath string, lockWait time.Duration, logger *slog.Logger) (runner pipeline.Runner, closeFn func(), err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	closeFn = closeAll
	defer func() {
		// Not closeFn: an error return sets it to nil.
		if err != nil {
			closeAll()
		}
	}()
	if nf.set() {
		c, err := nf.connect(ctx, "rep")
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, c.Close)
		client, err := cluster.NewClient(ctx, c, cluster.ClientOptions{})
		if errors.Is(err, cluster.ErrNoRegistry) {
			return nil, nil, usagef("%v: publish one first (wasmgate publish --nats %s --config FILE)", err, nf.o.URL)
		}
		if err != nil {
			return nil, nil, err
		}
		closers = append(closers, func() { client.Close() })
		logger.Info("dispatching steps to NATS workers", "nats", c.NC.ConnectedUrl(), "prefix", c.Names.Prefix)
		return client, closeFn, nil
	}
	rt, err := openRuntime(ctx, runtimeFlags{engine: name, cacheDir: cache, audit: auditPath, lockWait: lockWait},
		func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
			return e.loadRegistry(ctx, engine, sourceFlags{config: config}, "", sandbox.Limits{},
				func(problem string) { logger.Warn("registry problem", "problem", problem) })
		})
	if err != nil {
		return nil, nil, err
	}
	if auditPath == "" {
		logger.Warn("no --audit file: audit records are checked and dropped")
	}
	closers = append(closers, func() { _ = rt.Close(context.WithoutCancel(ctx)) })
	return rt, closeFn, nil
}

// repDefaults are what the orchestrator passes through the environment
// (REP section 8).
type repDefaults struct {
	runID, traceID string
	flowTimeout    time.Duration
	logJSON        bool
}

// repEnvironment reads TRACE_MIND_RUN_ID, TRACE_MIND_TRACE_ID,
// TRACE_MIND_ENGINE_TIMEOUT (seconds, as REP says; a fraction is allowed)
// and TRACE_MIND_LOG_JSON ("1": JSON log lines, on stderr since stdout
// carries the protocol). TRACE_MIND_ALLOW_SHELL is not read: no step kind
// uses a shell. A value that is set but unusable is a usage error rather
// than silently ignored.
func repEnvironment() (repDefaults, error) {
	d := repDefaults{runID: os.Getenv("TRACE_MIND_RUN_ID"), traceID: os.Getenv("TRACE_MIND_TRACE_ID")}
	if v := os.Getenv("TRACE_MIND_ENGINE_TIMEOUT"); v != "" {
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil || !(sec > 0) || sec > float64(math.MaxInt64/int64(time.Second)) {
			return d, usagef("TRACE_MIND_ENGINE_TIMEOUT must be a positive number of seconds, not %q", v)
		}
		d.flowTimeout = time.Duration(sec * float64(time.Second))
	}
	switch v := os.Getenv("TRACE_MIND_LOG_JSON"); v {
	case "", "0":
	case "1":
		d.logJSON = true
	default:
		return d, usagef(`TRACE_MIND_LOG_JSON must be "0" or "1", not %q`, v)
	}
	return d, nil
}
