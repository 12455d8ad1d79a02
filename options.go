package wasmgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Option configures a Runtime. Options are values: each copies what it is
// given, so changing a slice after passing it changes nothing, and the same
// options may make several runtimes (one per engine, for a replay). An
// option never fails; New reports what does not work.
type Option func(*options)

// options are what New reads. The zero value is the default: wazero's
// compiler, no compilation cache, no registry, records dropped, full results.
type options struct {
	engine   sandbox.EngineName
	cacheDir string

	registryFile string
	registryFunc func(context.Context, sandbox.Engine) (*pipeline.Registry, error)
	executors    []executorEntry
	actions      []actionEntry

	auditFile     string
	auditFileOpts []audit.FileOption
	auditSink     audit.Sink

	results pipeline.Results

	// kinds load the executors' code that is not Wasm (WithKind).
	kinds []pipeline.Kind

	// errs are the problems options found in their own arguments.
	errs []error
}

type executorEntry struct {
	id  string
	src pipeline.ExecutorSource
}

type actionEntry struct {
	action string
	route  pipeline.Route
}

func newOptions(opts []Option) options {
	o := options{engine: sandbox.EngineWazero}
	for _, opt := range opts {
		if opt == nil {
			o.errs = append(o.errs, errors.New("a nil Option"))
			continue
		}
		opt(&o)
	}
	return o
}

// WithRegistryFile loads the registry from a configuration file, as every
// command's --config does: paths in it are relative to the file's directory,
// and a route that is merely unusable (missing or refused code, a version
// range the executor does not match) is kept and blocks its own requests
// with its reason code, audited, rather than failing New. `wasmgate run
// --config FILE` warns about such routes.
func WithRegistryFile(path string) Option {
	return func(o *options) {
		if path == "" {
			o.errs = append(o.errs, errors.New("WithRegistryFile: empty path"))
		}
		o.registryFile = path
	}
}

// WithExecutor registers the executor src names as id, as an entry of a
// registry file's "executors" would be, except that relative paths are
// relative to the working directory: the code's manifest must name id, and
// code without a manifest has no version. WithAction routes actions to it.
// The tool store of a package is src.ToolsDir, else jstool.DefaultStoreDir();
// New does not add a package to it (`wasmgate tools add` does).
//
// Executors and actions given as values are the registry: they exclude
// WithRegistryFile and WithRegistry, and New refuses them
// (ErrInvalidRegistry) when any action would be blocked before running.
func WithExecutor(id string, src ExecutorSource) Option {
	src.Module = slices.Clone(src.Module)
	return func(o *options) {
		o.executors = append(o.executors, executorEntry{id: id, src: src})
	}
}

// WithAction routes action to an executor given with WithExecutor; see
// WithExecutor for the rules of a registry given as values.
func WithAction(action string, route Route) Option {
	route.Capabilities = slices.Clone(route.Capabilities)
	return func(o *options) {
		o.actions = append(o.actions, actionEntry{action: action, route: route})
	}
}

// WithRegistry builds the registry with a function of the Runtime's engine,
// for registries the other options cannot describe: executors of one's own
// (implementing pipeline.Executor), or a command's rules for one executor
// run directly (pipeline.RegistryForSource). New calls build once; its error
// is New's, as it is. It excludes WithRegistryFile, WithExecutor and
// WithAction.
func WithRegistry(build func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error)) Option {
	return func(o *options) {
		if build == nil {
			o.errs = append(o.errs, errors.New("WithRegistry: nil function"))
		}
		o.registryFunc = build
	}
}

// WithAuditFile appends every action's audit records to the JSON Lines log
// at path, created if missing: an existing log is verified and continued,
// and held against other sinks while the Runtime is open. opts are
// audit.OpenFile's, e.g. audit.WithLockWait for how long to wait for a log
// another process holds (audit.DefaultLockWait by default). It excludes
// WithAuditSink.
func WithAuditFile(path string, opts ...audit.FileOption) Option {
	opts = slices.Clone(opts)
	return func(o *options) {
		if path == "" {
			o.errs = append(o.errs, errors.New("WithAuditFile: empty path"))
		}
		o.auditFile, o.auditFileOpts = path, opts
	}
}

// WithAuditSink appends every action's audit records to sink, for instance
// an audit.NewMemorySink() to read them back (its records stay readable
// after Close). The Runtime owns the sink: Close closes it. It excludes
// WithAuditFile.
func WithAuditSink(sink audit.Sink) Option {
	return func(o *options) {
		if sink == nil {
			o.errs = append(o.errs, errors.New("WithAuditSink: nil sink"))
		}
		o.auditSink = sink
	}
}

// WithEngine selects the Wasm engine: EngineWazero (the default),
// EngineWazeroInterp, or EngineWasmtime in builds with the wasmtime tag.
// Every engine gives the same verdicts, digests and fuel_used.
func WithEngine(name EngineName) Option {
	return func(o *options) { o.engine = name }
}

// WithCompilationCacheDir keeps compiled code in dir (created if missing)
// across processes, so that a large executor (a Go program, the JS engine)
// compiles once per machine rather than once per process. Empty, the
// default, means no cache.
func WithCompilationCacheDir(dir string) Option {
	return func(o *options) { o.cacheDir = dir }
}

// WithResults sets what results carry back: ResultsFull (the default) or
// ResultsDigestOnly, for deployments where raw outputs never leave the
// pipeline. The audit records are the same either way.
func WithResults(mode Results) Option {
	return func(o *options) { o.results = mode }
}

// check finds the options that cannot work, before anything is started.
func (o *options) check() error {
	errs := o.errs
	values := len(o.executors) > 0 || len(o.actions) > 0
	switch {
	case o.registryFile != "" && o.registryFunc != nil:
		errs = append(errs, errors.New("WithRegistryFile and WithRegistry are exclusive"))
	case values && o.registryFile != "":
		errs = append(errs, errors.New("WithRegistryFile and WithExecutor or WithAction are exclusive"))
	case values && o.registryFunc != nil:
		errs = append(errs, errors.New("WithRegistry and WithExecutor or WithAction are exclusive"))
	case !values && o.registryFile == "" && o.registryFunc == nil && len(o.errs) == 0:
		errs = append(errs, errors.New("no registry: give WithRegistryFile, WithExecutor and WithAction, or WithRegistry"))
	}
	if o.auditFile != "" && o.auditSink != nil {
		errs = append(errs, errors.New("WithAuditFile and WithAuditSink are exclusive"))
	}
	if o.results != pipeline.ResultsFull && o.results != pipeline.ResultsDigestOnly {
		errs = append(errs, fmt.Errorf("WithResults: unknown mode %d", int(o.results)))
	}
	if _, err := sandbox.ParseEngineName(string(o.engine)); err != nil {
		errs = append(errs, fmt.Errorf("WithEngine: %w", err))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOption, errors.Join(errs...))
}

// loadRegistry builds the registry the options name on engine.
func (o *options) loadRegistry(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
	switch {
	case o.registryFile != "":
		return pipeline.LoadRegistry(ctx, o.registryFile, engine, o.kinds...)
	case o.registryFunc != nil:
		reg, err := o.registryFunc(ctx, engine)
		if err == nil && reg == nil {
			err = fmt.Errorf("%w: WithRegistry's function returned no registry", ErrInvalidRegistry)
		}
		return reg, err
	}
	reg := pipeline.NewRegistry(o.kinds...)
	for _, e := range o.executors {
		if err := reg.AddSource(ctx, engine, e.id, e.src); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidRegistry, err)
		}
	}
	for _, a := range o.actions {
		if err := reg.AddAction(a.action, a.route); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidRegistry, err)
		}
	}
	if len(o.actions) == 0 {
		return nil, fmt.Errorf("%w: no actions: route one with WithAction", ErrInvalidRegistry)
	}
	if problems := reg.Problems(); len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidRegistry, strings.Join(problems, "; "))
	}
	return reg, nil
}

// openSink opens the audit sink the options name.
func (o *options) openSink() (audit.Sink, error) {
	switch {
	case o.auditFile != "":
		return audit.OpenFile(o.auditFile, o.auditFileOpts...)
	case o.auditSink != nil:
		return o.auditSink, nil
	}
	return audit.NewDiscardSink(), nil
}
