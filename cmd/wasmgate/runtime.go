package main

import (
	"context"
	"errors"
	"sync/atomic"
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
func openRuntime(ctx context.Context, f runtimeFlags, build func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error), more ...wg.Option) (*wg.Runtime, error) {
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
	rt, err := wg.New(ctx, append(opts, more...)...)
	if err != nil {
		return nil, auditLogError(err, f.audit)
	}
	return rt, nil
}

// openRuntimeAuditLater opens the command's Runtime as openRuntime does,
// but touches its --audit log only when openAudit is called: a command
// that refuses the user's code before running any (script: a bundling or
// type error) leaves the log as it was, not even created. Until then the
// Runtime refuses every action with AUDIT_LOG_FAILED.
//
// # Errors
//
// As openRuntime's; openAudit's are those of opening the log, saying what
// to do about one that is torn or held.
func openRuntimeAuditLater(ctx context.Context, f runtimeFlags, build func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error)) (rt *wg.Runtime, openAudit func() error, err error) {
	if f.audit == "" {
		rt, err = openRuntime(ctx, f, build)
		return rt, func() error { return nil }, err
	}
	if err := checkLockWait(f.lockWait); err != nil {
		return nil, nil, err
	}
	log := &laterLog{path: f.audit, lockWait: f.lockWait}
	f.audit = ""
	rt, err = openRuntime(ctx, f, build, wg.WithAuditSink(log))
	return rt, log.open, err
}

// errAuditNotOpen is what a laterLog answers before it is opened; no
// command executes before opening it, so a user never sees it.
var errAuditNotOpen = errors.New("the --audit log is not open yet")

// laterLog is an --audit log opened on demand (openRuntimeAuditLater).
type laterLog struct {
	path     string
	lockWait time.Duration
	sink     atomic.Pointer[audit.FileSink]
}

func (l *laterLog) open() error {
	s, err := audit.OpenFile(l.path, audit.WithLockWait(l.lockWait))
	if err != nil {
		return auditLogError(err, l.path)
	}
	l.sink.Store(s)
	return nil
}

func (l *laterLog) Append(ctx context.Context, r audit.Record) (audit.Record, error) {
	s := l.sink.Load()
	if s == nil {
		return audit.Record{}, errAuditNotOpen
	}
	return s.Append(ctx, r)
}

func (l *laterLog) Close() error {
	if s := l.sink.Load(); s != nil {
		return s.Close()
	}
	return nil
}

func (l *laterLog) Health() error {
	if s := l.sink.Load(); s != nil {
		return s.Health()
	}
	return errAuditNotOpen
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
