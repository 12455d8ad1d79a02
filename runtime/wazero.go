package runtime

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmgate/wasmgate/host"
	"github.com/wasmgate/wasmgate/runtime/internal/instrument"
)

// instrumentOptions are the same for every module and engine: that is what
// makes fuel counts and stack limits identical everywhere.
var instrumentOptions = instrument.Options{MaxCallDepth: MaxCallDepth, CanonicalizeNaN: true}

// wazeroEngine runs modules on one wazero.Runtime. The virtual WASI is
// instantiated once into that runtime; guests bind to it by name and reach
// their per-execution Session through the call's context.
type wazeroEngine struct {
	name EngineName
	rt   wazero.Runtime
	// interruptible: the deadline is enforced by driving the fuel global
	// negative (compiler) rather than by wazero's context watcher.
	interruptible bool
	// uninstrumented: see Config.
	uninstrumented bool

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
	// The compiler is stopped at the deadline through the instrumented fuel
	// global (see meter), which costs nothing until it fires; wazero's own
	// context watcher costs ~40x on tight loops. The interpreter keeps the
	// watcher: it keeps globals in Go memory, so writing one while the
	// guest runs would be a data race, and the watcher's relative cost there
	// is small.
	interp := cfg.engine == EngineWazeroInterp
	rc = rc.WithCoreFeatures(api.CoreFeaturesV2).
		WithCloseOnContextDone(interp || cfg.watchContext).
		WithCustomSections(false)
	if cfg.cacheDir != "" {
		cache, err := wazero.NewCompilationCacheWithDir(cfg.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("compilation cache: %w", err)
		}
		rc = rc.WithCompilationCache(cache)
	}
	e := &wazeroEngine{
		name:           cfg.engine,
		interruptible:  !interp && !cfg.uninstrumented,
		uninstrumented: cfg.uninstrumented,
		rt:             wazero.NewRuntimeWithConfig(ctx, rc),
		moduleConfig:   wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(zeroReader{}),
		cache:          map[string]*cacheEntry{},
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
	// Compiled code is the instrumented module: the key names the
	// instrumenter's version too.
	digest := digestHex(wasm) + "/instrument-v" + strconv.Itoa(instrument.Version)
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
	if !e.uninstrumented {
		code, err = instrument.Instrument(code, instrumentOptions)
		if err != nil {
			return nil, &AdmissionError{Problem: "cannot instrument the module", Err: err}
		}
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
	alloc := &memoryAllocator{limit: uint64(lim.MemoryPages) * pageSize}
	meter := newMeter(lim.Fuel)

	runCtx, cancel := context.WithTimeout(ctx, time.Duration(lim.TimeoutMs)*time.Millisecond)
	defer cancel()
	runCtx = experimental.WithMemoryAllocator(host.WithSession(runCtx, sess), alloc)

	out, depth, err := m.run(runCtx, in.Bytes, sess, int(lim.MaxOutputBytes), meter)
	left, interrupted := meter.finish()
	// The instance is closed and the guest no longer runs: its memory can
	// be wiped and reused.
	defer alloc.release()
	o, cerr := classify(ctx, err, runState{
		memoryRefused: alloc.refused(),
		fuelLeft:      left,
		interrupted:   interrupted,
		depth:         depth,
	})
	if cerr != nil {
		return Outcome{}, cerr
	}
	o.FuelUsed = meter.used(left, interrupted)
	if o.Kind == Completed {
		o.Output = out
	}
	o.Stderr, _ = sess.Stderr()
	return o, nil
}

// run instantiates a fresh instance and drives it by the module's calling
// convention. The instance never outlives the call. depth is the call depth
// the instance reached when it stopped (above MaxCallDepth after a stack
// trap).
func (m *wazeroModule) run(ctx context.Context, input []byte, sess *host.Session, maxOutput int, meter *meter) (out []byte, depth uint32, err error) {
	mod, err := m.engine.rt.InstantiateModule(ctx, m.compiled, m.engine.moduleConfig)
	if err != nil {
		return nil, 0, err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	slice, ok1 := mod.ExportedGlobal(instrument.FuelGlobal).(api.MutableGlobal)
	reserve, ok2 := mod.ExportedGlobal(instrument.ReserveGlobal).(api.MutableGlobal)
	switch {
	case m.engine.uninstrumented:
	case !ok1 || !ok2:
		return nil, 0, fmt.Errorf("instrumented module exports no mutable %s and %s", instrument.FuelGlobal, instrument.ReserveGlobal)
	case m.engine.interruptible:
		meter.arm(ctx, wazeroFuel{slice}, wazeroFuel{reserve})
	default:
		meter.setBudget(wazeroFuel{slice}, wazeroFuel{reserve})
	}
	defer func() {
		if g := mod.ExportedGlobal(instrument.DepthGlobal); g != nil {
			depth = uint32(g.Get())
		}
	}()
	inst := wazeroInstance{mod}

	// The start function, moved out of instantiation by the instrumenter so
	// that it runs metered.
	if mod.ExportedFunction(instrument.StartExport) != nil {
		if _, err := inst.Call(ctx, instrument.StartExport); err != nil {
			return nil, 0, err
		}
	}
	if m.info.Convention == ConventionCommand {
		// proc_exit(0) ends a command successfully by unwinding with an
		// error, so stdout is the output whatever _start returned.
		_, err := inst.Call(ctx, host.ExportStart)
		return sess.Stdout(), 0, err
	}
	if m.info.Reactor {
		if _, err := inst.Call(ctx, host.ExportInitialize); err != nil {
			return nil, 0, err
		}
	}
	res, err := host.RunABIv1(ctx, inst, input, maxOutput)
	if err != nil {
		return nil, 0, err
	}
	if res.Status == host.StatusError {
		return nil, 0, &executorError{msg: string(res.Output)}
	}
	return res.Output, 0, nil
}

// wazeroFuel adapts an exported i64 global to fuelGlobal.
type wazeroFuel struct{ g api.MutableGlobal }

func (f wazeroFuel) Get() int64  { return int64(f.g.Get()) }
func (f wazeroFuel) Set(v int64) { f.g.Set(uint64(v)) }

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
