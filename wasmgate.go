// Package wasmgate is the front door for Go programs: a Runtime runs actions
// through the governed pipeline (request checks, the registry's routes,
// limits on canonical JSON, an executor in a fresh Wasm instance, the
// outcome mapped to an ActionResult with reason codes) and appends each
// action's hash-chained, digest-only audit records before it returns.
//
// A Runtime owns everything that takes: the Wasm engine, the compiled
// executors, the registry, the audit sink and the compilation cache. It is
// made once with New and the options below, used from any number of
// goroutines, and closed once:
//
//	rt, err := wasmgate.New(ctx, wasmgate.WithRegistryFile("registry.json"), wasmgate.WithAuditFile("audit.jsonl"))
//	if err != nil { … }
//	defer rt.Close(ctx)
//	res, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1,2]}`)})
//
// The request, result and status types are those of package pipeline, named
// here so that the common path needs this package only. Replaying a corpus
// on several runtimes to check determinism is package replay; the audit
// log's records and their verification are package audit.
package wasmgate

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/sentinel"
	"github.com/wasmgate/wasmgate/pipeline"
)

// The request and result of one action, and what they are made of.
type (
	// ActionRequest asks for one action; see pipeline.ActionRequest.
	ActionRequest = pipeline.ActionRequest
	// ActionResult is the verdict on one action; see pipeline.ActionResult.
	ActionResult = pipeline.ActionResult
	// Status is SUCCESS, FAILED or BLOCKED.
	Status = pipeline.Status
	// ReasonCode says why an action did not succeed; the codes are
	// pipeline's constants, in docs/DESIGN.md's order.
	ReasonCode = pipeline.ReasonCode
)

// Statuses of an ActionResult.
const (
	StatusSuccess = pipeline.StatusSuccess
	StatusFailed  = pipeline.StatusFailed
	StatusBlocked = pipeline.StatusBlocked
)

// What a registry given as values is made of (see WithExecutor and
// WithAction).
type (
	// ExecutorSource says where an executor's code is: a Wasm file or its
	// bytes, a JS or TS file, or a package of the tool store.
	ExecutorSource = pipeline.ExecutorSource
	// Route sends an action to an executor, with the versions and
	// capabilities it requires and the limits it sets.
	Route = pipeline.Route
	// Limits bound one execution; zero fields take the manifest's, else
	// the defaults.
	Limits = sandbox.Limits
)

// What an executor of one's own is made of (see WithRegistry): the
// pipeline runs any Executor as it runs Wasm modules and JS tools.
type (
	// Executor runs one kind of action; see pipeline.Executor.
	Executor = pipeline.Executor
	// Engine is the Wasm engine a Runtime runs executors on.
	Engine = sandbox.Engine
	// Manifest is an executor's identity, capabilities and limits.
	Manifest = sandbox.Manifest
	// Input is what an executor runs once on: the canonical payload and
	// the limits in force.
	Input = sandbox.Input
	// Outcome is what one run of an executor caused.
	Outcome = sandbox.Outcome
	// OutcomeKind says how a run ended.
	OutcomeKind = sandbox.OutcomeKind
)

// How an executor's run ended, the two an executor of one's own reports
// (the engine reports the others: fuel, stack, memory, time, output).
const (
	// OutcomeCompleted: the executor returned its output.
	OutcomeCompleted = sandbox.Completed
	// OutcomeFailed: the executor reported an error, in Message.
	OutcomeFailed = sandbox.Failed
)

// EngineName names a Wasm engine (see WithEngine).
type EngineName = sandbox.EngineName

// Engines.
const (
	// EngineWazero is wazero's optimizing compiler, the default.
	EngineWazero = sandbox.EngineWazero
	// EngineWazeroInterp is wazero's interpreter.
	EngineWazeroInterp = sandbox.EngineWazeroInterp
	// EngineWasmtime is Wasmtime, in builds with the wasmtime tag only.
	EngineWasmtime = sandbox.EngineWasmtime
)

// Results says what an ActionResult carries back (see WithResults).
type Results = pipeline.Results

// Results modes.
const (
	// ResultsFull returns the output, and the executor's own message and
	// log. It is the default.
	ResultsFull = pipeline.ResultsFull
	// ResultsDigestOnly returns the verdict and digests: no output, log or
	// message quoting the executor.
	ResultsDigestOnly = pipeline.ResultsDigestOnly
)

// Errors. Those New returns wrap the cause (errors.Is and errors.As see
// through them); the request errors are pipeline's.
const (
	// ErrInvalidOption is matched by New's error for options that cannot
	// work: none naming a registry, two naming it differently, an empty
	// path, a nil function or sink, an engine not in this build, an
	// unknown results mode.
	ErrInvalidOption = sentinel.Error("wasmgate: invalid option")

	// ErrInvalidRegistry is matched by New's error for a registry given as
	// values (WithExecutor, WithAction) that would block requests before
	// they run: code that is missing or refused, a route to an executor
	// that is not there, a version range it does not match, a capability it
	// lacks. The error names every such action and why. A registry file is
	// not held to this: see WithRegistryFile.
	ErrInvalidRegistry = sentinel.Error("wasmgate: invalid registry")

	// ErrClosed is returned by Execute on a Runtime that is closed, or that
	// New did not make.
	ErrClosed = sentinel.Error("wasmgate: runtime closed")

	// ErrInvalidRequest is matched by Execute's error for a malformed
	// trace_id or ts_utc, or an env that is not a JSON object: nothing is
	// audited then.
	ErrInvalidRequest = pipeline.ErrInvalidRequest

	// ErrInternal is matched by Execute's error when the engine failed,
	// as opposed to the executor; the action is audited as FAILED.
	ErrInternal = pipeline.ErrInternal
)

// Runtime executes actions under governance. It is safe for concurrent use.
type Runtime struct {
	mu     sync.Mutex
	closed bool
	// running counts the executions (and replays) under way, which Close
	// waits for; done is closed once Close has closed everything.
	running sync.WaitGroup
	done    chan struct{}

	engine  sandbox.Engine
	sink    audit.Sink
	results pipeline.Results
	// current is the pipeline over the registry as it stands: a change to
	// the registry (registry.go) stores a new one over a changed copy, so
	// that an execution sees one registry from start to end, and a change
	// never waits for executions.
	current atomic.Pointer[pipeline.Pipeline]
	// changing serializes changes to the registry.
	changing sync.Mutex
}

// New returns a Runtime built from opts: it starts the engine (WithEngine,
// WithCompilationCacheDir), loads the registry on it (WithRegistryFile,
// WithExecutor and WithAction, or WithRegistry), and opens the audit sink
// (WithAuditFile or WithAuditSink; without either, every record is checked
// and dropped), in that order. Options are read once, when New is called.
//
// # Errors
//
// ErrInvalidOption for options that cannot work, before anything is started.
// Then, as they come: the engine's error (a compilation cache directory that
// cannot be made); pipeline.LoadRegistry's for a registry file that cannot be
// read or is not a registry; ErrInvalidRegistry for a registry given as
// values that would block requests; WithRegistry's function's error, as it
// is; audit.OpenFile's for an audit log that does not verify
// (audit.ErrTornTail, *audit.ChainError) or is held by another sink
// (audit.ErrLocked). Whatever New started is closed again when it fails.
func New(ctx context.Context, opts ...Option) (*Runtime, error) {
	o := newOptions(opts)
	if err := o.check(); err != nil {
		return nil, err
	}
	engine, err := sandbox.NewEngine(ctx, sandbox.NewConfig().WithEngine(o.engine).WithCompilationCacheDir(o.cacheDir))
	if err != nil {
		return nil, err
	}
	reg, err := o.loadRegistry(ctx, engine)
	if err != nil {
		_ = engine.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	sink, err := o.openSink()
	if err != nil {
		_ = engine.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	r := &Runtime{done: make(chan struct{}), engine: engine, sink: sink, results: o.results}
	r.current.Store(pipeline.New(reg, sink, pipeline.WithResults(o.results)))
	return r, nil
}

// Execute runs one action and returns its verdict. Everything an executor
// can cause is in the result (FAILED or BLOCKED, with reason codes), which
// is audited before Execute returns; see pipeline.Pipeline.Execute for the
// write-ahead audit and the order of checks.
//
// # Errors
//
// ErrClosed after Close. ErrInvalidRequest for a malformed trace_id or
// ts_utc or an env that is not a JSON object: nothing is audited then. An
// error wrapping ctx.Err() when ctx ends first; the action is audited as
// BLOCKED with EXECUTOR_TIMEOUT, as the result says. ErrInternal when the
// engine failed; the action is audited as FAILED.
func (r *Runtime) Execute(ctx context.Context, req ActionRequest) (ActionResult, error) {
	if !r.acquire() {
		return ActionResult{}, ErrClosed
	}
	defer r.running.Done()
	return r.current.Load().Execute(ctx, req)
}

// acquire counts one more use of the runtime under way, unless it is closed
// (or was not made by New). The caller calls r.running.Done when done.
func (r *Runtime) acquire() bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.current.Load() == nil {
		return false
	}
	r.running.Add(1)
	return true
}

// Close refuses new executions (ErrClosed), waits for those under way, then
// closes the audit sink (the records accepted are durable once it returns)
// and the engine. It succeeds even with a cancelled ctx. A second Close
// waits for the first and returns nil.
//
// # Notes
//
// An execution that starts another one on the same Runtime (an executor of
// one's own that calls back) gets ErrClosed for the inner one once Close
// has begun, rather than holding Close up.
//
// # Errors
//
// The audit sink's error when it could not write or close its log, and the
// engine's; the Runtime is closed all the same.
func (r *Runtime) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed || r.current.Load() == nil {
		r.mu.Unlock()
		if r.done != nil {
			<-r.done
		}
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	defer close(r.done)
	r.running.Wait()
	return errors.Join(r.sink.Close(), r.engine.Close(context.WithoutCancel(ctx)))
}
