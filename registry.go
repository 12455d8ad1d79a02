package wasmgate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// A Runtime's registry can change while it runs: a front adds the npm tools
// its callers ask for, an operator replaces an executor with a new version.
// Every change is made on a copy of the registry, which then replaces it
// whole (copy-on-write): an execution sees one registry from start to end,
// the executions under way keep theirs, and a change never waits for them
// (changes wait for each other).

// AddExecutor loads the executor src names on the Runtime's engine and
// registers it as id, as WithExecutor does (relative paths are relative to
// the working directory; the code's manifest must name id). The executions
// that start after it returns can reach it through the actions routed to
// it (AddAction).
//
// # Errors
//
// ErrClosed after Close. ErrInvalidRegistry when id is registered already
// (ReplaceExecutor replaces it), src names no code or more than one, or the
// code is missing or refused: the registry is unchanged then.
func (r *Runtime) AddExecutor(ctx context.Context, id string, src ExecutorSource) error {
	return r.changeExecutor(ctx, id, src, false)
}

// ReplaceExecutor loads the executor src names as AddExecutor does and
// registers it as id in place of the executor registered as id, if any: the
// actions routed to id reach the new one from the next execution on, while
// those under way finish on the old one.
//
// # Errors
//
// As AddExecutor's, but for id being registered; the registry is unchanged
// when it fails, and when any action routed to id would be blocked by the
// new executor (a version range or capability it does not match), with
// ErrInvalidRegistry naming them.
func (r *Runtime) ReplaceExecutor(ctx context.Context, id string, src ExecutorSource) error {
	return r.changeExecutor(ctx, id, src, true)
}

func (r *Runtime) changeExecutor(ctx context.Context, id string, src ExecutorSource, replace bool) error {
	return r.ChangeRegistry(ctx, func(ctx context.Context, reg *pipeline.Registry, engine sandbox.Engine) error {
		if replace {
			reg.RemoveExecutor(id)
		}
		if err := reg.AddSource(ctx, engine, id, src); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidRegistry, err)
		}
		var blocked []string
		for _, a := range reg.Actions() {
			if route, _ := reg.Route(a); route.Executor == id {
				if problem := reg.Problem(a); problem != "" {
					blocked = append(blocked, problem)
				}
			}
		}
		if why := reg.Unusable(id); why != "" {
			return fmt.Errorf("%w: executor %q: %s", ErrInvalidRegistry, id, why)
		}
		if len(blocked) > 0 {
			return fmt.Errorf("%w: executor %q would block: %s", ErrInvalidRegistry, id, strings.Join(blocked, "; "))
		}
		return nil
	})
}

// AddAction routes action to an executor of the Runtime's registry, for the
// executions that start after it returns.
//
// # Errors
//
// ErrClosed after Close. ErrInvalidRegistry when action is routed already
// (ReplaceAction replaces its route), its name is not 1 to 128 printable
// ASCII characters, or its requests would be blocked before running (no
// such executor, a version range or capability it does not match): the
// registry is unchanged then.
func (r *Runtime) AddAction(action string, route Route) error {
	return r.changeAction(action, route, false)
}

// ReplaceAction routes action as AddAction does, in place of its route if it
// has one.
//
// # Errors
//
// As AddAction's, but for action being routed.
func (r *Runtime) ReplaceAction(action string, route Route) error {
	return r.changeAction(action, route, true)
}

func (r *Runtime) changeAction(action string, route Route, replace bool) error {
	route.Capabilities = slices.Clone(route.Capabilities)
	return r.ChangeRegistry(context.Background(), func(_ context.Context, reg *pipeline.Registry, _ sandbox.Engine) error {
		if replace {
			reg.RemoveAction(action)
		}
		if err := reg.AddAction(action, route); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidRegistry, err)
		}
		if problem := reg.Problem(action); problem != "" {
			return fmt.Errorf("%w: %s", ErrInvalidRegistry, problem)
		}
		return nil
	})
}

// ChangeRegistry changes the Runtime's registry with change, for what the
// other methods cannot say, as WithRegistry builds one: executors of one's
// own, code that is kept although it cannot run (so that its requests are
// refused and audited), several changes that take effect together. change
// gets a copy of the registry and the Runtime's engine to load code on;
// when it returns nil, the copy becomes the registry for the executions
// that start afterwards. Changes are made one at a time.
//
// # Errors
//
// ErrClosed after Close; change's error, as it is, and the registry is
// unchanged then.
func (r *Runtime) ChangeRegistry(ctx context.Context, change func(ctx context.Context, reg *pipeline.Registry, engine sandbox.Engine) error) error {
	if change == nil {
		return fmt.Errorf("%w: ChangeRegistry: nil function", ErrInvalidOption)
	}
	if !r.acquire() {
		return ErrClosed
	}
	defer r.running.Done()
	r.changing.Lock()
	defer r.changing.Unlock()
	reg := r.current.Load().Registry().Clone()
	if err := change(ctx, reg, r.engine); err != nil {
		return err
	}
	r.current.Store(pipeline.New(reg, r.sink, pipeline.WithResults(r.results)))
	return nil
}

// ReplaceRegistry replaces the Runtime's registry whole with the one build
// makes on the Runtime's engine, as WithRegistry makes the first: it is how
// a deployment's worker runs each registry revision that is published. The
// executions that start after it returns run on the new registry, those
// under way finish on the old one. build runs while other changes wait.
//
// # Errors
//
// ErrClosed after Close; ErrInvalidOption for a nil build; build's error,
// as it is, and ErrInvalidRegistry when it returns no registry: the
// registry is unchanged then.
func (r *Runtime) ReplaceRegistry(ctx context.Context, build func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error)) error {
	if build == nil {
		return fmt.Errorf("%w: ReplaceRegistry: nil function", ErrInvalidOption)
	}
	if !r.acquire() {
		return ErrClosed
	}
	defer r.running.Done()
	r.changing.Lock()
	defer r.changing.Unlock()
	reg, err := build(ctx, r.engine)
	if err != nil {
		return err
	}
	if reg == nil {
		return fmt.Errorf("%w: ReplaceRegistry's function returned no registry", ErrInvalidRegistry)
	}
	r.current.Store(pipeline.New(reg, r.sink, pipeline.WithResults(r.results)))
	return nil
}

// Actions lists the actions of the Runtime's registry as it stands, sorted;
// nil after Close.
func (r *Runtime) Actions() []string {
	if !r.acquire() {
		return nil
	}
	defer r.running.Done()
	return r.current.Load().Actions()
}

// Engine names the Wasm engine the Runtime runs on.
func (r *Runtime) Engine() EngineName {
	if r == nil || r.engine == nil {
		return ""
	}
	return r.engine.Name()
}

// DryRun runs one action as Execute does, on the same registry, engine and
// results mode, but records nothing: its audit records are kept in memory,
// and the verdict's record is returned with the result (its module digest
// names the code that ran). It is for checking determinism (package
// replay), which re-runs what was audited already.
//
// # Errors
//
// As Execute's. An error matching ErrInternal when the record could not be
// kept (the result is then AUDIT_LOG_FAILED, with no record).
func (r *Runtime) DryRun(ctx context.Context, req ActionRequest) (ActionResult, audit.Record, error) {
	if !r.acquire() {
		return ActionResult{}, audit.Record{}, ErrClosed
	}
	defer r.running.Done()
	sink := audit.NewMemorySink()
	res, err := pipeline.New(r.current.Load().Registry(), sink, pipeline.WithResults(r.results)).Execute(ctx, req)
	// The records are kept in memory for this run only: no log's tree has
	// the verdict.
	res.AuditIndex = nil
	if err != nil {
		return res, audit.Record{}, err
	}
	recs := sink.Verdicts()
	if len(recs) != 1 {
		return res, audit.Record{}, fmt.Errorf("%w: the run's audit record was not kept: %s", ErrInternal, res.Message)
	}
	return res, recs[0], nil
}

// ActionManifest is the manifest of the executor action routes to, when it
// can run (fronts announce an action's schemas from it).
func (r *Runtime) ActionManifest(action string) (sandbox.Manifest, bool) {
	if !r.acquire() {
		return sandbox.Manifest{}, false
	}
	defer r.running.Done()
	return r.current.Load().ActionManifest(action)
}

var _ pipeline.Host = (*Runtime)(nil)

// ExecuteOn runs req on reg rather than on the Runtime's registry, with
// the Runtime's sink and results mode, and drops reg afterwards. It is how
// a front refuses what its callers name but the registry does not hold (an
// npm package that does not exist, a package it may not fetch, an export
// that is not a tool): the refusal is audited like any request, BLOCKED
// with its reason code, yet the shared registry does not grow by one entry
// for every bogus name asked, which a caller could repeat without end. It
// also runs what must not be shared: a command's one-off registry for a
// tool whose limits its request sets.
//
// # Errors
//
// As Execute's; ErrInvalidOption for a nil reg.
func (r *Runtime) ExecuteOn(ctx context.Context, req ActionRequest, reg *pipeline.Registry) (ActionResult, error) {
	if reg == nil {
		return ActionResult{}, fmt.Errorf("%w: ExecuteOn: nil registry", ErrInvalidOption)
	}
	if !r.acquire() {
		return ActionResult{}, ErrClosed
	}
	defer r.running.Done()
	return pipeline.New(reg, r.sink, pipeline.WithResults(r.results)).Execute(ctx, req)
}

// RunProgram runs prog, an executor run as a command-line program (what
// `wasmgate node` runs), once on req.Stdin as one action audited by the
// Runtime; see pipeline.Pipeline.RunProgram. prog is not registered.
//
// # Errors
//
// ErrClosed after Close; as pipeline.Pipeline.RunProgram's.
func (r *Runtime) RunProgram(ctx context.Context, prog pipeline.Executor, req pipeline.ProgramRequest) (ActionResult, error) {
	if !r.acquire() {
		return ActionResult{}, ErrClosed
	}
	defer r.running.Done()
	return pipeline.New(pipeline.NewRegistry(), r.sink, pipeline.WithResults(r.results)).RunProgram(ctx, prog, req)
}

// UseEngine calls use with the Runtime's engine, to load code on it that
// is not (or not yet) registered: a front loads an npm tool there before
// ChangeRegistry adds it, so that a long load holds no other change up.
// Close waits for use to return. What use loads must not outlive the
// Runtime.
//
// # Errors
//
// ErrClosed after Close; use's error, as it is.
func (r *Runtime) UseEngine(ctx context.Context, use func(ctx context.Context, engine sandbox.Engine) error) error {
	if !r.acquire() {
		return ErrClosed
	}
	defer r.running.Done()
	return use(ctx, r.engine)
}

// Executor is the usable executor the Runtime's registry holds as id (a
// front may serve an executor by its id).
func (r *Runtime) Executor(id string) (pipeline.Executor, bool) {
	if !r.acquire() {
		return nil, false
	}
	defer r.running.Done()
	return r.current.Load().Registry().Executor(id)
}

// Executors lists the ids of the usable executors of the Runtime's
// registry, sorted; nil after Close.
func (r *Runtime) Executors() []string {
	if !r.acquire() {
		return nil
	}
	defer r.running.Done()
	return r.current.Load().Registry().Executors()
}

// Results is what the Runtime's results carry back (WithResults).
func (r *Runtime) Results() Results { return r.results }

// Health is nil while the audit sink accepts records, and otherwise says
// why it refuses them (audit.HealthReporter; a sink that does not report
// is taken as healthy): every action is refused with AUDIT_LOG_FAILED
// meanwhile, so a front reports itself unhealthy.
func (r *Runtime) Health() error {
	if r == nil || r.sink == nil {
		return ErrClosed
	}
	if h, ok := r.sink.(audit.HealthReporter); ok {
		return h.Health()
	}
	return nil
}
