package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmgate/wasmgate/host"
)

// wazeroEngine runs modules on one wazero.Runtime. The virtual WASI is
// instantiated once into that runtime; guests bind to it by name and reach
// their per-execution Session through the call's context.
type wazeroEngine struct {
	name EngineName
	rt   wazero.Runtime

	// moduleConfig is shared by every instantiation: unnamed (so instances
	// coexist), no start functions (the host decides what to call), and a
	// fixed rand source so wazero does not seed a PRNG per instance for a
	// WASI it does not serve (ours is in package host).
	moduleConfig wazero.ModuleConfig

	mu    sync.Mutex
	cache map[string]*cacheEntry
}

type cacheEntry struct {
	ready chan struct{}
	mod   *wazeroModule
	err   error
}

func newWazeroEngine(ctx context.Context, cfg Config) (*wazeroEngine, error) {
	var rc wazero.RuntimeConfig
	if cfg.engine == EngineWazeroInterp {
		rc = wazero.NewRuntimeConfigInterpreter()
	} else {
		rc = wazero.NewRuntimeConfigCompiler()
	}
	// The Wasm 2.0 feature set, nothing beyond: no threads, no relaxed SIMD.
	rc = rc.WithCoreFeatures(api.CoreFeaturesV2).
		// The wall-clock backstop; see docs/RATIONALE.md for its cost.
		WithCloseOnContextDone(true).
		WithCustomSections(false)
	if cfg.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	e := &wazeroEngine{
		name:         cfg.engine,
		rt:           wazero.NewRuntimeWithConfig(ctx, rc),
		moduleConfig: wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(zeroReader{}),
		cache:        map[string]*cacheEntry{},
	}
	if err := e.instantiateHost(ctx, host.WASIModule, host.WASI()); err != nil {
		_ = e.rt.Close(ctx)
		return nil, err
	}
	return e, nil
}

func (e *wazeroEngine) instantiateHost(ctx context.Context, module string, fns []host.Function) error {
	b := e.rt.NewHostModuleBuilder(module)
	for _, f := range fns {
		call := f.Call
		b.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
				call(ctx, mod.Memory(), stack)
			}), valueTypes(f.Params), valueTypes(f.Results)).
			Export(f.Name)
	}
	if _, err := b.Instantiate(ctx); err != nil {
		return fmt.Errorf("instantiating host module %s: %w", module, err)
	}
	return nil
}

func valueTypes(ts []host.ValueType) []api.ValueType {
	out := make([]api.ValueType, len(ts))
	for i, t := range ts {
		out[i] = api.ValueType(t)
	}
	return out
}

func (e *wazeroEngine) Name() EngineName { return e.name }

func (e *wazeroEngine) Close(ctx context.Context) error {
	return e.rt.Close(context.WithoutCancel(ctx))
}

func (e *wazeroEngine) Load(ctx context.Context, wasm []byte) (Module, error) {
	digest := digestHex(wasm)
	e.mu.Lock()
	entry, ok := e.cache[digest]
	if !ok {
		entry = &cacheEntry{ready: make(chan struct{})}
		e.cache[digest] = entry
	}
	e.mu.Unlock()
	if ok {
		select {
		case <-entry.ready:
			return entry.mod, entry.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	entry.mod, entry.err = e.compile(ctx, wasm)
	if entry.err != nil && ctx.Err() != nil {
		// A cancelled compile says nothing about the module: forget it.
		e.mu.Lock()
		delete(e.cache, digest)
		e.mu.Unlock()
	}
	close(entry.ready)
	if entry.err != nil {
		return nil, entry.err
	}
	return entry.mod, nil
}

func (e *wazeroEngine) compile(ctx context.Context, wasm []byte) (*wazeroModule, error) {
	info, code, err := admit(wasm)
	if err != nil {
		return nil, err
	}
	compiled, err := e.rt.CompileModule(ctx, code)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &AdmissionError{Problem: "the module does not validate", Err: err}
	}
	return &wazeroModule{engine: e, info: info, compiled: compiled}, nil
}

type wazeroModule struct {
	engine   *wazeroEngine
	info     ModuleInfo
	compiled wazero.CompiledModule
}

func (m *wazeroModule) Info() ModuleInfo { return m.info }

func (m *wazeroModule) Run(ctx context.Context, in Input) (Outcome, error) {
	lim := in.Limits.WithDefaults(DefaultLimits)
	if m.info.MemoryMinPages > lim.MemoryPages {
		return Outcome{Kind: MemoryExhausted, Message: fmt.Sprintf(
			"the module's memory starts at %d pages; memory_pages allows %d", m.info.MemoryMinPages, lim.MemoryPages)}, nil
	}
	sess := host.NewSession(in.Bytes, in.Digest, int(lim.MaxOutputBytes))
	alloc := &memoryAllocator{limit: uint64(lim.MemoryPages) * 65536}

	runCtx, cancel := context.WithTimeout(ctx, time.Duration(lim.TimeoutMs)*time.Millisecond)
	defer cancel()
	runCtx = experimental.WithMemoryAllocator(host.WithSession(runCtx, sess), alloc)

	out, err := m.run(runCtx, in.Bytes, sess, int(lim.MaxOutputBytes))
	// The instance is closed and the guest no longer runs: its memory can
	// be wiped and reused.
	defer alloc.release()
	o, cerr := classify(ctx, err, runState{memoryRefused: alloc.refused()})
	if cerr != nil {
		return Outcome{}, cerr
	}
	if o.Kind == Completed {
		o.Output = out
	}
	o.Stderr, _ = sess.Stderr()
	return o, nil
}

// run instantiates a fresh instance and drives it by the module's calling
// convention. The instance never outlives the call.
func (m *wazeroModule) run(ctx context.Context, input []byte, sess *host.Session, maxOutput int) ([]byte, error) {
	mod, err := m.engine.rt.InstantiateModule(ctx, m.compiled, m.engine.moduleConfig)
	if err != nil {
		return nil, err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	inst := wazeroInstance{mod}

	if m.info.Convention == ConventionCommand {
		// proc_exit(0) ends a command successfully by unwinding with an
		// error, so stdout is the output whatever _start returned.
		_, err := inst.Call(ctx, host.ExportStart)
		return sess.Stdout(), err
	}
	if m.info.Reactor {
		if _, err := inst.Call(ctx, host.ExportInitialize); err != nil {
			return nil, err
		}
	}
	res, err := host.RunABIv1(ctx, inst, input, maxOutput)
	if err != nil {
		return nil, err
	}
	if res.Status == host.StatusError {
		return nil, &executorError{msg: string(res.Output)}
	}
	return res.Output, nil
}

// executorError is a guest's own report of failure (ABI v1 status 1).
type executorError struct{ msg string }

func (e *executorError) Error() string { return e.msg }

// wazeroInstance adapts an instantiated wazero module to host.Instance.
type wazeroInstance struct{ mod api.Module }

func (i wazeroInstance) Memory() host.Memory {
	if m := i.mod.Memory(); m != nil {
		return m
	}
	return nil
}

func (i wazeroInstance) Call(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	f := i.mod.ExportedFunction(name)
	if f == nil {
		return nil, &host.GuestError{Msg: "missing export " + name}
	}
	return f.Call(ctx, params...)
}

// zeroReader is the rand source of wazero's own system context, which no
// guest can reach: guests get randomness from host.Session only.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
