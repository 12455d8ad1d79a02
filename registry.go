package wasmgate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
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
	return r.ChangeRegistry(ctx, func(ctx context.Context, reg *pipeline.Registry, engine runtime.Engine) error {
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
	return r.ChangeRegistry(context.Background(), func(_ context.Context, reg *pipeline.Registry, _ runtime.Engine) error {
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
func (r *Runtime) ChangeRegistry(ctx context.Context, change func(ctx context.Context, reg *pipeline.Registry, engine runtime.Engine) error) error {
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
func (r *Runtime) ActionManifest(action string) (runtime.Manifest, bool) {
	if !r.acquire() {
		return runtime.Manifest{}, false
	}
	defer r.running.Done()
	return r.current.Load().ActionManifest(action)
}
