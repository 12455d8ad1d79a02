package main

import (
	"context"
	"time"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// runtimeFlags are what every command that executes is given in the same
// flags (--engine, --cache-dir, --audit, --audit-lock-wait, --results), from
// which it opens its one Runtime.
type runtimeFlags struct {
	engine   sandbox.EngineName
	cacheDir string // the --cache-dir flag, as cacheDir reads it
	audit    string // empty: records are checked and dropped
	lockWait time.Duration
	results  pipeline.Results
}

// openRuntime opens the command's Runtime on the registry build makes on
// its engine, audited to f.audit.
//
// # Errors
//
// New's; an audit log that is torn or held says what to do about it
// (auditLogError), and a negative --audit-lock-wait is a usage error.
func openRuntime(ctx context.Context, f runtimeFlags, build func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error)) (*wg.Runtime, error) {
	opts := []wg.Option{
		wg.WithEngine(f.engine),
		wg.WithCompilationCacheDir(cacheDir(f.cacheDir)),
		wg.WithResults(f.results),
		wg.WithRegistry(build),
	}
	if f.audit != "" {
		if err := checkLockWait(f.lockWait); err != nil {
			return nil, err
		}
		opts = append(opts, wg.WithAuditFile(f.audit, audit.WithLockWait(f.lockWait)))
	}
	rt, err := wg.New(ctx, opts...)
	if err != nil {
		return nil, auditLogError(err, f.audit)
	}
	return rt, nil
}

// openedRegistry is rt as a Runner that lists the actions of its registry
// as the command opened it (--config): the npm tools that fronts add to
// the Runtime as they are called are the tool store's catalog's to list,
// not the registry's.
type openedRegistry struct {
	*wg.Runtime
	actions []string
}

func registryOf(rt *wg.Runtime) openedRegistry {
	return openedRegistry{Runtime: rt, actions: rt.Actions()}
}

func (r openedRegistry) Actions() []string { return r.actions }

// noRegistry builds the registry of a command whose Runtime starts with
// none: its fronts add what their callers name.
func noRegistry(context.Context, sandbox.Engine) (*pipeline.Registry, error) {
	return pipeline.NewRegistry(), nil
}
