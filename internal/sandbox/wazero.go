package sandbox

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/instrument"
)

// wazeroEngine runs modules on one wazero.Runtime. The virtual WASI is
// instantiated once into that runtime; guests bind to it by name and reach
// their per-execution Session through the call's context.
type wazeroEngine struct {
	name EngineName
	rt   wazero.Runtime
	// interruptible: the deadline is enforced by driving the fuel global
	// negative (compiler) rather than by wazero's context watcher.
	interruptible bool
	// uninstrumented, copyOnWrite: see Config.
	uninstrumented bool
	copyOnWrite    bool
	// noRecycling gives every execution a fresh instance (Config; the
	// differential test's reference).
	noRecycling bool

	// moduleConfig is shared by every instantiation: unnamed (so instances
	// coexist), no start functions (the host decides what to call), and a
	// fixed rand source so wazero does not seed a PRNG per instance for a
	// WASI it does not serve (ours is in package host).
	moduleConfig wazero.ModuleConfig

	cache compileCache[*wazeroModule]
	// disk keeps compiled code, instrumented reactors and snapshots across
	// processes (diskcache.go), in the compilation cache directory; code
	// is how wazero's compiled code goes there (nil: not kept).
	disk  diskCache
	code  *wazeroCodeCache
	mu    sync.Mutex
	glues map[string]bool // glues whose imports are instantiated
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
	disk := newDiskCache(cfg.cacheDir)
	var code *wazeroCodeCache
	if disk.dir != "" && !interp {
		// (The interpreter compiles nothing worth keeping: wazero keeps no
		// cache for it.)
		var err error
		engine := fmt.Sprintf("wazero %s %s/%s close-on-context-done=%t", moduleVersion("github.com/tetratelabs/wazero"), goruntime.GOARCH, goruntime.GOOS, cfg.watchContext)
		if code, err = newWazeroCodeCache(disk, engine); err != nil {
			warnCache(fmt.Sprintf("wasmgate: compiling without a cache of compiled code: %v", err))
		} else {
			rc = rc.WithCompilationCache(code.cache)
		}
	}
	e := &wazeroEngine{
		name:           cfg.engine,
		interruptible:  !interp && !cfg.uninstrumented,
		uninstrumented: cfg.uninstrumented,
		copyOnWrite:    cfg.copyOnWrite,
		noRecycling:    cfg.noRecycling,
		rt:             wazero.NewRuntimeWithConfig(ctx, rc),
		moduleConfig:   wazero.NewModuleConfig().WithName("").WithStartFunctions().WithRandSource(zeroReader{}),
		glues:          map[string]bool{},
		disk:           disk,
		code:           code,
	}
	if err := e.instantiateHost(ctx, host.WASIModule, host.WASI()); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	return e, nil
}

func (e *wazeroEngine) instantiateHost(ctx context.Context, module string, fns []host.Function) error {
	b := e.rt.NewHostModuleBuilder(module)
	for _, f := range fns {
		var fn api.GoModuleFunc
		if call := f.CallInstance; call != nil {
			fn = func(ctx context.Context, mod api.Module, stack []uint64) {
				call(ctx, wazeroInstance{mod}, stack)
			}
		} else {
			call := f.Call
			fn = func(ctx context.Context, mod api.Module, stack []uint64) {
				call(ctx, mod.Memory(), stack)
			}
		}
		b.NewFunctionBuilder().
			WithGoModuleFunction(fn, valueTypes(f.Params), valueTypes(f.Results)).
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
	mod, err := e.cache.get(ctx, cacheKey(digestHex(wasm), nil), func() (*wazeroModule, error) { return e.compile(ctx, wasm) })
	if err != nil {
		return nil, err
	}
	return mod, nil
}

func (e *wazeroEngine) compile(ctx context.Context, wasm []byte) (*wazeroModule, error) {
	info, code, err := admitAndInstrument(wasm, nil, e.uninstrumented)
	if err != nil {
		return nil, err
	}
	var rec *recycler
	if e.interruptible && !e.noRecycling {
		// Executions may reuse instances (recycle.go): on the compiler,
		// whose instances survive an execution's end.
		code, rec = recyclingCode(info, code)
	}
	compiled, err := e.compileCode(ctx, code)
	if err != nil {
		return nil, err
	}
	_, hasStart := compiled.ExportedFunctions()[instrument.StartExport]
	return &wazeroModule{engine: e, info: info, compiled: compiled, hasStart: hasStart, recycle: rec}, nil
}

func (e *wazeroEngine) compileCode(ctx context.Context, code []byte) (wazero.CompiledModule, error) {
	compile := func() (wazero.CompiledModule, error) { return e.rt.CompileModule(ctx, code) }
	var compiled wazero.CompiledModule
	var err error
	if e.code != nil {
		compiled, err = e.code.compile(ctx, code, compile)
	} else {
		compiled, err = compile()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &AdmissionError{Problem: "the module does not validate", Err: err}
	}
	return compiled, nil
}

type wazeroModule struct {
	engine   *wazeroEngine
	info     ModuleInfo
	compiled wazero.CompiledModule
	hasStart bool // the instrumenter moved a start function to wg_start

	// recycle, when set, keeps idle instances for reuse (recycle.go).
	recycle *recycler

	// Reactors only: the initial state (memory as the data segments leave
	// it; the compiled module has none) and the globals a snapshot keeps.
	image           *Snapshot
	snapshotGlobals []string
}

func (m *wazeroModule) Info() ModuleInfo { return m.info }

func (m *wazeroModule) Run(ctx context.Context, in Input) (Outcome, error) {
	if m.recycle != nil {
		lim := in.Limits.WithDefaults(DefaultLimits())
		if o, ok := tooLargeToStart(m.info, nil, lim); ok {
			return o, nil
		}
		return m.runRecycled(ctx, in, nil, lim, driveConvention(m.info, m.hasStart, in))
	}
	o, _, err := m.execute(ctx, in, nil, driveConvention(m.info, m.hasStart, in), false)
	return o, err
}

// execute runs drive on a fresh instance under in's limits and classifies
// what happened. The instance starts from snapshot's memory and globals when
// snapshot is set; with capture, the state the instance is left in is
// returned as a new Snapshot (when the run completed).
func (m *wazeroModule) execute(ctx context.Context, in Input, from *Snapshot, drive driver, capture bool) (Outcome, *Snapshot, error) {
	lim := in.Limits.WithDefaults(DefaultLimits())
	if o, ok := tooLargeToStart(m.info, from, lim); ok {
		return o, nil, nil
	}
	sess := host.NewSession(in.Bytes, in.Digest, int(lim.MaxOutputBytes))
	alloc := newInstanceMemory(uint64(lim.MemoryPages)*pageSize, from, m.engine.copyOnWrite)
	meter := newMeter(lim.Fuel)
	sess.SetFuelCharge(meter.charge)

	runCtx, cancel := context.WithTimeout(ctx, time.Duration(lim.TimeoutMs)*time.Millisecond)
	defer cancel()
	runCtx = experimental.WithMemoryAllocator(host.WithSession(runCtx, sess), alloc)

	var snap *Snapshot
	out, end, err := m.instance(runCtx, from, meter, lim, func(ctx context.Context, inst wazeroInstance) ([]byte, error) {
		out, err := drive(ctx, inst, sess, int(lim.MaxOutputBytes))
		if err == nil && capture {
			snap, err = captureState(inst, m.snapshotGlobals)
		}
		return out, err
	})
	left, interrupted := meter.finish()
	// The instance is closed and the guest no longer runs: its memory can
	// be wiped and reused.
	defer alloc.release()
	return verdict(ctx, wazeroTrap(err), runState{
		memoryRefused: alloc.refused() || end.overBudget,
		fuelLeft:      left,
		interrupted:   interrupted,
		depth:         end.depth,
		maxDepth:      m.info.maxDepth,
	}, meter.used(left, interrupted), out, snap, sess)
}

// instanceEnd is what an instance's globals say once its guest stopped.
type instanceEnd struct {
	// depth is the call depth the guest reached (above MaxCallDepth after a
	// stack trap).
	depth uint32
	// overBudget: a memory.grow or table.grow failed because of
	// memory_pages (see instrument.OverBudgetGlobal).
	overBudget bool
}

// instance instantiates a fresh instance (from a snapshot's state when from
// is set), gives it what is left of lim's memory_pages, arms the meter and
// runs drive. The instance never outlives the call.
func (m *wazeroModule) instance(ctx context.Context, from *Snapshot, meter *meter, lim Limits, drive func(context.Context, wazeroInstance) ([]byte, error)) (out []byte, end instanceEnd, err error) {
	mod, err := m.engine.rt.InstantiateModule(ctx, m.compiled, m.engine.moduleConfig)
	if err != nil {
		return nil, end, err
	}
	defer mod.Close(context.WithoutCancel(ctx))
	if from != nil {
		if err := restore(mod, from); err != nil {
			return nil, end, err
		}
	}
	slice, ok1 := mod.ExportedGlobal(instrument.FuelGlobal).(api.MutableGlobal)
	reserve, ok2 := mod.ExportedGlobal(instrument.ReserveGlobal).(api.MutableGlobal)
	budget, ok3 := mod.ExportedGlobal(instrument.BudgetGlobal).(api.MutableGlobal)
	if !m.engine.uninstrumented {
		if !ok1 || !ok2 || !ok3 {
			return nil, end, fmt.Errorf("instrumented module exports no mutable %s, %s and %s", instrument.FuelGlobal, instrument.ReserveGlobal, instrument.BudgetGlobal)
		}
		var pages uint32
		if mem := mod.Memory(); mem != nil {
			pages, _ = mem.Grow(0) // the size in pages, which Size in bytes cannot say at 4 GiB
		}
		setBudget(wazeroFuel{budget}, m.info, lim, uint64(pages))
	}
	switch {
	case m.engine.uninstrumented:
	case m.engine.interruptible:
		meter.arm(ctx, wazeroFuel{slice}, wazeroFuel{reserve})
	default:
		meter.setBudget(wazeroFuel{slice}, wazeroFuel{reserve})
	}
	defer func() {
		if g := mod.ExportedGlobal(instrument.DepthGlobal); g != nil {
			end.depth = uint32(g.Get())
		}
		if g := mod.ExportedGlobal(instrument.OverBudgetGlobal); g != nil {
			end.overBudget = uint32(g.Get()) != 0
		}
	}()
	out, err = drive(ctx, wazeroInstance{mod})
	return out, end, err
}

// wazeroFuel adapts an exported i64 global to fuelGlobal.
type wazeroFuel struct{ g api.MutableGlobal }

func (f wazeroFuel) Get() int64  { return int64(f.g.Get()) }
func (f wazeroFuel) Set(v int64) { f.g.Set(uint64(v)) }

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

// wazeroTrap turns wazero's trap errors into a *trapError. wazero's trap values
// are internal, so its stable message prefix is what can be matched ("wasm
// error: unreachable\nwasm stack trace: ..."); its compiler returns a stack
// overflow unwrapped. Any other error is returned as it is.
func wazeroTrap(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if msg == string(trapStackOverflow) {
		return &trapError{code: trapStackOverflow, err: err}
	}
	const prefix = "wasm error: "
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	msg = msg[len(prefix):]
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return &trapError{code: trapCode(msg), err: err}
}
