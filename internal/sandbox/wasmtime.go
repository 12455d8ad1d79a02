//go:build wasmtime

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	wasmtime "github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/instrument"
	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// The wasmtime engine: the same admission, the same instrumented bytes, the
// same virtual WASI and glue as wazero, run by Wasmtime through cgo. Only
// what the engine itself provides differs, and each difference is chosen
// so that no outcome depends on it:
//
//   - memory_pages is the store's limiter; wasmtime reports no refused grow,
//     so the instrumented wg_grow_failed global tells the host afterwards;
//   - the deadline is epoch interruption: one ticker per engine advances
//     the epoch, each store traps once its deadline in epochs has passed;
//   - the native stack is bounded (maxWasmStack) above what the
//     instrumented depth limit lets a guest use;
//   - a Go panic never crosses cgo: every host function recovers it and
//     traps with it, and the call that ran the guest returns it.

const wasmtimeBuilt = true

// epochTick is how often the engine's epoch advances: the resolution of
// timeout_ms.
const epochTick = time.Millisecond

// errEngineClosed: a module was run after its engine was closed.
const errEngineClosed = sentinel.Error("runtime: the engine is closed")

type wasmtimeEngine struct {
	engine *wasmtime.Engine
	epochs *epochTicker
	// disk keeps compiled code, instrumented reactors and snapshots across
	// processes (diskcache.go).
	disk diskCache
	// uninstrumented, nativeFuel, noEpoch: see Config (benchmarks only).
	uninstrumented bool
	nativeFuel     bool
	noEpoch        bool

	cache  compileCache[*wasmtimeModule]
	closed atomic.Bool
	mu     sync.Mutex
	// linkers resolve imports: "" the virtual WASI alone, a glue's name the
	// WASI and that glue's host functions.
	linkers map[string]*wasmtime.Linker
}

func newWasmtimeEngine(_ context.Context, cfg Config) (Engine, error) {
	wc := wasmtime.NewConfig()
	// The Wasm 2.0 feature set, nothing beyond (admission and the
	// instrumenter refuse the rest already; this is the second fence).
	wc.SetWasmThreads(false)
	wc.SetWasmRelaxedSIMD(false)
	wc.SetWasmRelaxedSIMDDeterministic(true)
	wc.SetWasmMemory64(false)
	wc.SetWasmMultiMemory(false)
	wc.SetWasmTailCall(false)
	wc.SetWasmFunctionReferences(false)
	wc.SetWasmGC(false)
	wc.SetWasmWideArithmetic(false)
	// The instrumented module canonicalizes NaNs itself; Cranelift's pass
	// makes an uninstrumented module deterministic too.
	wc.SetCraneliftNanCanonicalization(true)
	wc.SetMaxWasmStack(maxWasmStack())
	wc.SetEpochInterruption(!cfg.noEpoch)
	if cfg.nativeFuel {
		wc.SetConsumeFuel(true)
	}
	e := &wasmtimeEngine{
		engine:         wasmtime.NewEngineWithConfig(wc),
		disk:           newDiskCache(cfg.cacheDir),
		uninstrumented: cfg.uninstrumented || cfg.nativeFuel,
		nativeFuel:     cfg.nativeFuel,
		noEpoch:        cfg.noEpoch,
		linkers:        map[string]*wasmtime.Linker{},
	}
	e.epochs = newEpochTicker(e.engine)
	if _, err := e.linker(nil); err != nil {
		e.engine.Close()
		return nil, err
	}
	return e, nil
}

func (e *wasmtimeEngine) Name() EngineName { return EngineWasmtime }

func (e *wasmtimeEngine) Close(context.Context) error {
	if e.closed.Swap(true) {
		return nil
	}
	e.epochs.close()
	e.cache.each(func(m *wasmtimeModule) { m.module.Close() })
	e.mu.Lock()
	for _, l := range e.linkers {
		l.Close()
	}
	e.mu.Unlock()
	e.engine.Close()
	return nil
}

// linker returns the linker for modules driven by glue (nil: by ABI v1 or
// _start), defining its host functions on first use.
func (e *wasmtimeEngine) linker(glue *host.Glue) (*wasmtime.Linker, error) {
	name := ""
	if glue != nil {
		name = glue.Name
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if l, ok := e.linkers[name]; ok {
		return l, nil
	}
	l := wasmtime.NewLinker(e.engine)
	fns := host.WASI()
	if glue != nil {
		fns = append(fns[:len(fns):len(fns)], glue.Imports...)
	}
	for _, f := range fns {
		if err := defineHostFunction(l, f); err != nil {
			l.Close()
			return nil, fmt.Errorf("defining host function %s.%s: %w", f.Module, f.Name, err)
		}
	}
	e.linkers[name] = l
	return l, nil
}

func (e *wasmtimeEngine) Load(ctx context.Context, wasm []byte) (Module, error) {
	mod, err := e.cache.get(ctx, cacheKey(digestHex(wasm), nil), func() (*wasmtimeModule, error) {
		info, code, err := admitAndInstrument(wasm, nil, e.uninstrumented)
		if err != nil {
			return nil, err
		}
		return e.compile(info, code, nil)
	})
	if err != nil {
		return nil, err
	}
	return mod, nil
}

func (e *wasmtimeEngine) LoadReactor(ctx context.Context, wasm []byte, glue host.Glue) (Reactor, error) {
	digest := digestHex(wasm) // once: see admitDecoded
	mod, err := e.cache.get(ctx, cacheKey(digest, &glue), func() (*wasmtimeModule, error) {
		r, err := prepareReactor(e.disk, wasm, digest, glue, e.uninstrumented, true)
		if err != nil {
			return nil, err
		}
		m, err := e.compile(r.info, r.withData, &glue)
		if err != nil {
			return nil, err
		}
		m.image, m.snapshotGlobals = r.image, r.globals
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	origin := fmt.Sprintf("%s native-fuel=%t no-epoch=%t\n%s", EngineWasmtime, e.nativeFuel, e.noEpoch, preparedKey(mod.info.Digest, glue, e.uninstrumented, true).what)
	return wasmtimeReactor{m: mod, origin: origin}, nil
}

// compile compiles code (or reads it from the on-disk cache) and learns
// what the host needs of its exports.
func (e *wasmtimeEngine) compile(info ModuleInfo, code []byte, glue *host.Glue) (*wasmtimeModule, error) {
	linker, err := e.linker(glue)
	if err != nil {
		return nil, err
	}
	module, err := e.compileCode(code)
	if err != nil {
		return nil, err
	}
	m := &wasmtimeModule{engine: e, info: info, module: module, linker: linker, funcs: map[string]funcKinds{}}
	for _, ex := range module.Exports() {
		t := ex.Type()
		switch {
		case t.FuncType() != nil:
			ft := t.FuncType()
			m.funcs[ex.Name()] = funcKinds{params: kinds(ft.Params()), results: kinds(ft.Results())}
		case t.MemoryType() != nil && (m.memory == "" || ex.Name() == instrument.MemoryExport):
			// Host functions see the memory the instrumenter exports
			// whatever the module exports itself, as wazero shows them the
			// module's memory.
			m.memory = ex.Name()
		}
	}
	_, m.hasStart = m.funcs[instrument.StartExport]
	return m, nil
}

func kinds(ts []*wasmtime.ValType) []wasmtime.ValKind {
	out := make([]wasmtime.ValKind, len(ts))
	for i, t := range ts {
		out[i] = t.Kind()
	}
	return out
}

// compileCode compiles code, through the on-disk cache when there is one:
// compiled code is kept as an entry bound to the exact bytes compiled, the
// version of wasmtime-go and the engine's configuration (diskcache.go), and
// deserialized only once it verifies (wasmtime runs what it deserializes
// as it is). An entry wasmtime refuses (another version's, which its own
// header check catches) is removed, and the code compiled and kept again.
func (e *wasmtimeEngine) compileCode(code []byte) (*wasmtime.Module, error) {
	var key diskKey
	if e.disk.dir != "" {
		key = compiledKey(fmt.Sprintf("wasmtime %s native-fuel=%t no-epoch=%t", moduleVersion("github.com/bytecodealliance/wasmtime-go/v39"), e.nativeFuel, e.noEpoch), code)
		defer e.disk.lock(key)()
		if b, ok := e.disk.get(key); ok {
			if m, err := wasmtime.NewModuleDeserialize(e.engine, b); err == nil {
				return m, nil
			}
			e.disk.remove(key)
		}
	}
	m, err := wasmtime.NewModule(e.engine, code)
	if err != nil {
		return nil, &AdmissionError{Problem: "the module does not validate", Err: err}
	}
	if e.disk.dir != "" {
		// The cache is an optimization: failing to write it is no error.
		if b, err := m.Serialize(); err == nil {
			e.disk.put(key, b)
		}
	}
	return m, nil
}

type wasmtimeModule struct {
	engine *wasmtimeEngine
	info   ModuleInfo
	module *wasmtime.Module
	linker *wasmtime.Linker
	// funcs are the exported functions' value types, for converting
	// arguments; memory is the name of the exported memory ("" none).
	funcs    map[string]funcKinds
	memory   string
	hasStart bool

	// Reactors only: see wazeroModule.
	image           *Snapshot
	snapshotGlobals []string
}

type funcKinds struct{ params, results []wasmtime.ValKind }

func (m *wasmtimeModule) Info() ModuleInfo { return m.info }

func (m *wasmtimeModule) Run(ctx context.Context, in Input) (Outcome, error) {
	o, _, err := m.execute(ctx, in, nil, driveConvention(m.info, m.hasStart, in), false)
	return o, err
}

// wasmtimeRun is one execution's state, kept as its store's data: host
// functions find it through their Caller.
type wasmtimeRun struct {
	module *wasmtimeModule
	// ctx is the context of the call into the guest in progress, which host
	// functions get (with the Session in it).
	ctx context.Context
	// hostErr is the error a host function unwound the guest with, until
	// the call into the guest returns it.
	hostErr error
	// instance is the store's one instance, once instantiated; exports
	// caches its exports by name (each lookup is a cgo call and a
	// finalizer).
	instance *wasmtime.Instance
	exports  map[string]*wasmtime.Extern
	// caller is the Caller of the host function running now (nil between
	// calls): the way into the store while the guest is stopped in one,
	// where the meter's charges write the fuel globals.
	caller *wasmtime.Caller
}

// export returns the export name of the run's instance (nil: none), through
// store (the Store, or a Caller inside a host function), looked up once.
func (r *wasmtimeRun) export(store wasmtime.Storelike, caller *wasmtime.Caller, name string) *wasmtime.Extern {
	if r.instance == nil {
		// A start function of an uninstrumented module (benchmarks) calls
		// host functions during instantiation.
		if caller == nil {
			return nil
		}
		return caller.GetExport(name)
	}
	if e, ok := r.exports[name]; ok {
		return e
	}
	e := r.instance.GetExport(store, name)
	r.exports[name] = e
	return e
}

// execute is wazeroModule.execute on wasmtime.
func (m *wasmtimeModule) execute(ctx context.Context, in Input, from *Snapshot, drive driver, capture bool) (Outcome, *Snapshot, error) {
	lim := in.Limits.WithDefaults(DefaultLimits())
	if o, ok := tooLargeToStart(m.info, from, lim); ok {
		return o, nil, nil
	}
	if err := ctx.Err(); err != nil {
		return Outcome{}, nil, fmt.Errorf("execution cancelled: %w", err)
	}
	if m.engine.closed.Load() {
		return Outcome{}, nil, errEngineClosed
	}
	sess := host.NewSession(in.Bytes, in.Digest, int(lim.MaxOutputBytes))
	timeout := time.Duration(lim.TimeoutMs) * time.Millisecond
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	runCtx = host.WithSession(runCtx, sess)

	run := &wasmtimeRun{module: m, ctx: runCtx, exports: map[string]*wasmtime.Extern{}}
	store := wasmtime.NewStoreWithData(m.engine.engine, run)
	defer store.Close()
	// The instrumented budget refuses first (memory and tables share
	// memory_pages); the limiter is the engine's own fence.
	store.Limiter(int64(lim.MemoryPages)*pageSize, MaxTableElements, -1, -1, -1)
	if !m.engine.noEpoch {
		m.engine.epochs.enter()
		defer m.engine.epochs.leave()
		// The epoch advances every epochTick at most: the deadline never
		// comes early, and late by the ticker's lag only.
		store.SetEpochDeadline(uint64(timeout/epochTick) + 1)
	}
	if m.engine.nativeFuel {
		if err := store.SetFuel(min(lim.Fuel, math.MaxInt64)); err != nil {
			return Outcome{}, nil, fmt.Errorf("engine failure: %w", err)
		}
	}

	meter := newMeter(lim.Fuel)
	sess.SetFuelCharge(meter.charge)
	var snap *Snapshot
	st := runState{maxDepth: m.info.maxDepth}
	out, err := func() ([]byte, error) {
		inst, err := m.linker.Instantiate(store, m.module)
		if err != nil {
			return nil, err
		}
		run.instance = inst
		wi := wasmtimeInstance{run: run, store: store}
		if from != nil {
			if err := wi.restore(from); err != nil {
				return nil, err
			}
		}
		if !m.engine.uninstrumented {
			slice, reserve, budget := wi.global(instrument.FuelGlobal), wi.global(instrument.ReserveGlobal), wi.global(instrument.BudgetGlobal)
			if slice == nil || reserve == nil || budget == nil {
				return nil, fmt.Errorf("instrumented module exports no %s, %s and %s", instrument.FuelGlobal, instrument.ReserveGlobal, instrument.BudgetGlobal)
			}
			var pages uint64
			if ext := wi.export(m.memory); m.memory != "" && ext != nil && ext.Memory() != nil {
				pages = ext.Memory().Size(store)
			}
			setBudget(budget, m.info, lim, pages)
			meter.setBudget(wasmtimeFuel{run, slice}, wasmtimeFuel{run, reserve})
			defer func() {
				if g := wi.global(instrument.DepthGlobal); g != nil {
					st.depth = uint32(g.g.Get(store).I32())
				}
				if g := wi.global(instrument.GrowFailedGlobal); g != nil {
					st.memoryRefused = g.Get() > int64(lim.MemoryPages)
				}
				if g := wi.global(instrument.OverBudgetGlobal); g != nil && g.g.Get(store).I32() != 0 {
					st.memoryRefused = true
				}
			}()
		}
		out, err := drive(runCtx, wi, sess, int(lim.MaxOutputBytes))
		if err == nil && capture {
			snap, err = wi.capture(m.snapshotGlobals)
		}
		return out, err
	}()
	st.fuelLeft, _ = meter.finish()
	used := meter.used(st.fuelLeft, false)
	if m.engine.nativeFuel {
		left, _ := store.GetFuel()
		used = lim.Fuel - left
	}
	return verdict(ctx, err, st, used, out, snap, sess)
}

// wasmtimeInstance adapts an instance to host.Instance, through its store
// or, inside a host function, through the Caller (which wasmtime requires
// for calls back into the guest).
type wasmtimeInstance struct {
	run    *wasmtimeRun
	store  wasmtime.Storelike
	caller *wasmtime.Caller // inside a host function
}

func (i wasmtimeInstance) export(name string) *wasmtime.Extern {
	return i.run.export(i.store, i.caller, name)
}

func (i wasmtimeInstance) Memory() host.Memory {
	if i.run.module.memory == "" {
		return nil
	}
	ext := i.export(i.run.module.memory)
	if ext == nil || ext.Memory() == nil {
		return nil
	}
	return wasmtimeMemory{store: i.store, mem: ext.Memory()}
}

func (i wasmtimeInstance) Call(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	sig, ok := i.run.module.funcs[name]
	var f *wasmtime.Func
	if ext := i.export(name); ok && ext != nil {
		f = ext.Func()
	}
	if f == nil {
		return nil, &host.GuestError{Msg: "missing export " + name}
	}
	if len(params) != len(sig.params) {
		return nil, fmt.Errorf("calling %s: %d arguments for %d parameters", name, len(params), len(sig.params))
	}
	args := make([]any, len(params))
	for k, p := range params {
		args[k] = toVal(sig.params[k], p)
	}
	// Host functions the guest calls during this call get its ctx.
	outer := i.run.ctx
	i.run.ctx = ctx
	res, err := f.Call(i.store, args...)
	i.run.ctx = outer
	if err != nil {
		return nil, i.run.callError(err)
	}
	switch r := res.(type) {
	case nil:
		return nil, nil
	case []wasmtime.Val:
		out := make([]uint64, len(r))
		for k, v := range r {
			out[k] = fromVal(v)
		}
		return out, nil
	default:
		return []uint64{fromGo(r)}, nil
	}
}

// callError is the error of a call into the guest: the error a host
// function unwound it with, an engine-neutral trap, or the engine's error.
func (r *wasmtimeRun) callError(err error) error {
	if herr := r.hostErr; herr != nil {
		r.hostErr = nil
		return herr
	}
	var trap *wasmtime.Trap
	if errors.As(err, &trap) {
		if code := trap.Code(); code != nil {
			return &trapError{code: wasmtimeTrapCode(*code), err: err}
		}
	}
	return err
}

// wasmtimeTrapCode names wasmtime's traps as classify (and wazero) do.
func wasmtimeTrapCode(c wasmtime.TrapCode) trapCode {
	switch c {
	case wasmtime.StackOverflow:
		return trapStackOverflow
	case wasmtime.MemoryOutOfBounds:
		return "out of bounds memory access"
	case wasmtime.HeapMisaligned:
		return "unaligned atomic"
	case wasmtime.TableOutOfBounds, wasmtime.IndirectCallToNull:
		return "invalid table access"
	case wasmtime.BadSignature:
		return "indirect call type mismatch"
	case wasmtime.IntegerOverflow:
		return "integer overflow"
	case wasmtime.IntegerDivisionByZero:
		return "integer divide by zero"
	case wasmtime.BadConversionToInteger:
		return "invalid conversion to integer"
	case wasmtime.UnreachableCodeReached:
		return trapUnreachable
	case wasmtime.Interrupt:
		return trapInterrupted
	case wasmtime.OutOfFuel:
		return trapOutOfFuel
	}
	return trapCode(fmt.Sprintf("trap %d", c))
}

func (i wasmtimeInstance) global(name string) *wasmtimeGlobal {
	ext := i.export(name)
	if ext == nil || ext.Global() == nil {
		return nil
	}
	return &wasmtimeGlobal{store: i.store, g: ext.Global()}
}

// restore puts a snapshot's state into a fresh instance of a reactor. The
// instance starts from the module's initial image, which its data segments
// write and wasmtime maps copy-on-write; memory is grown to the snapshot's
// size and only the pages that differ from that image are copied (a fifth
// of a QuickJS tool's snapshot), then the globals are set.
func (i wasmtimeInstance) restore(from *Snapshot) error {
	image := i.run.module.image
	if from == image {
		return nil
	}
	ext := i.export(i.run.module.memory)
	if ext == nil || ext.Memory() == nil {
		return fmt.Errorf("restoring a snapshot: the module has no memory")
	}
	mem := ext.Memory()
	if want := uint64(len(from.memory) / pageSize); want > mem.Size(i.store) {
		if _, err := mem.Grow(i.store, want-mem.Size(i.store)); err != nil {
			return fmt.Errorf("restoring a snapshot: cannot grow memory to %d pages: %w", want, err)
		}
	}
	data := mem.UnsafeData(i.store)
	if len(data) < len(from.memory) {
		return fmt.Errorf("restoring a snapshot: memory of %d bytes for an image of %d", len(data), len(from.memory))
	}
	for _, r := range from.changedPages(image.memory) {
		copy(data[r.start:r.end], from.memory[r.start:r.end])
	}
	for _, g := range from.globals {
		mg := i.global(g.name)
		if mg == nil {
			return fmt.Errorf("restoring a snapshot: no global %s", g.name)
		}
		if err := mg.setBits(g.value); err != nil {
			return fmt.Errorf("restoring a snapshot: global %s: %w", g.name, err)
		}
	}
	return nil
}

// capture copies the instance's memory and the named globals.
func (i wasmtimeInstance) capture(globals []string) (*Snapshot, error) {
	ext := i.export(i.run.module.memory)
	if ext == nil || ext.Memory() == nil {
		return nil, fmt.Errorf("snapshot: the module has no memory")
	}
	snap := &Snapshot{memory: append([]byte(nil), ext.Memory().UnsafeData(i.store)...)}
	for _, name := range globals {
		g := i.global(name)
		if g == nil {
			return nil, fmt.Errorf("snapshot: no global %s", name)
		}
		snap.globals = append(snap.globals, savedGlobal{name: name, value: fromVal(g.g.Get(i.store))})
	}
	return snap, nil
}

// wasmtimeMemory adapts a memory to host.Memory. Its views alias memory
// outside Go's heap, valid until the guest runs again (as host.Memory
// requires of every engine).
type wasmtimeMemory struct {
	store wasmtime.Storelike
	mem   *wasmtime.Memory
}

func (m wasmtimeMemory) Size() uint32 { return uint32(m.mem.DataSize(m.store)) }

func (m wasmtimeMemory) Read(offset, length uint32) ([]byte, bool) {
	b := m.mem.UnsafeData(m.store)
	end := uint64(offset) + uint64(length)
	if end > uint64(len(b)) {
		return nil, false
	}
	return b[offset:end:end], true
}

func (m wasmtimeMemory) Write(offset uint32, p []byte) bool {
	b := m.mem.UnsafeData(m.store)
	if uint64(offset)+uint64(len(p)) > uint64(len(b)) {
		return false
	}
	copy(b[offset:], p)
	return true
}

// wasmtimeGlobal adapts an exported i64 global to fuelGlobal.
type wasmtimeGlobal struct {
	store wasmtime.Storelike
	g     *wasmtime.Global
}

func (g *wasmtimeGlobal) Get() int64 { return g.g.Get(g.store).I64() }

func (g *wasmtimeGlobal) Set(v int64) { _ = g.g.Set(g.store, wasmtime.ValI64(v)) }

// wasmtimeFuel is a fuel global as the meter uses it: through the store
// between calls, and through the Caller while a host function runs (a
// charge for its work), as wasmtime wants a store reached inside one.
type wasmtimeFuel struct {
	run *wasmtimeRun
	g   *wasmtimeGlobal
}

func (f wasmtimeFuel) store() wasmtime.Storelike {
	if f.run.caller != nil {
		return f.run.caller
	}
	return f.g.store
}

func (f wasmtimeFuel) Get() int64 { return f.g.g.Get(f.store()).I64() }

func (f wasmtimeFuel) Set(v int64) { _ = f.g.g.Set(f.store(), wasmtime.ValI64(v)) }

// setBits sets the global from its value encoded as in host.Function's
// stack (see fromVal).
func (g *wasmtimeGlobal) setBits(v uint64) error {
	return g.g.Set(g.store, toWasmVal(g.g.Type(g.store).Content().Kind(), v))
}

// defineHostFunction makes f an import of every module the linker
// instantiates. The adapter runs f on the stack convention of package host
// and never lets a panic cross cgo: it recovers it, keeps the error for the
// call that ran the guest, and traps.
func defineHostFunction(l *wasmtime.Linker, f host.Function) error {
	params, results := make([]*wasmtime.ValType, len(f.Params)), make([]*wasmtime.ValType, len(f.Results))
	for i, t := range f.Params {
		params[i] = wasmtime.NewValType(valKind(t))
	}
	resultKinds := make([]wasmtime.ValKind, len(f.Results))
	for i, t := range f.Results {
		resultKinds[i] = valKind(t)
		results[i] = wasmtime.NewValType(resultKinds[i])
	}
	size := max(len(f.Params), len(f.Results))
	name := f.Module + "." + f.Name
	return l.FuncNew(f.Module, f.Name, wasmtime.NewFuncType(params, results), func(caller *wasmtime.Caller, args []wasmtime.Val) (out []wasmtime.Val, trap *wasmtime.Trap) {
		run, ok := caller.Data().(*wasmtimeRun)
		if !ok {
			return nil, wasmtime.NewTrap("wasmgate: " + name + " called outside an execution")
		}
		defer func() {
			if r := recover(); r != nil {
				err, ok := r.(error)
				if !ok {
					err = fmt.Errorf("host function %s panicked: %v", name, r)
				}
				run.hostErr = err
				out, trap = nil, wasmtime.NewTrap("wasmgate: "+name+" unwound the guest")
			}
		}()
		stack := make([]uint64, size)
		for i, a := range args {
			stack[i] = fromVal(a)
		}
		outer := run.caller
		run.caller = caller
		defer func() { run.caller = outer }()
		inst := wasmtimeInstance{run: run, store: caller, caller: caller}
		if f.CallInstance != nil {
			f.CallInstance(run.ctx, inst, stack)
		} else {
			f.Call(run.ctx, inst.Memory(), stack)
		}
		out = make([]wasmtime.Val, len(resultKinds))
		for i, k := range resultKinds {
			out[i] = toWasmVal(k, stack[i])
		}
		return out, nil
	})
}

func valKind(t host.ValueType) wasmtime.ValKind {
	switch t {
	case host.I64:
		return wasmtime.KindI64
	case host.F32:
		return wasmtime.KindF32
	case host.F64:
		return wasmtime.KindF64
	}
	return wasmtime.KindI32
}

// fromVal encodes a value as package host's stack does: i32 zero-extended,
// floats as their bits.
func fromVal(v wasmtime.Val) uint64 {
	switch v.Kind() {
	case wasmtime.KindI32:
		return uint64(uint32(v.I32()))
	case wasmtime.KindI64:
		return uint64(v.I64())
	case wasmtime.KindF32:
		return uint64(math.Float32bits(v.F32()))
	case wasmtime.KindF64:
		return math.Float64bits(v.F64())
	}
	return 0
}

// fromGo encodes a result Func.Call returns as a Go value.
func fromGo(v any) uint64 {
	switch v := v.(type) {
	case int32:
		return uint64(uint32(v))
	case int64:
		return uint64(v)
	case float32:
		return uint64(math.Float32bits(v))
	case float64:
		return math.Float64bits(v)
	}
	return 0
}

func toWasmVal(k wasmtime.ValKind, v uint64) wasmtime.Val {
	switch k {
	case wasmtime.KindI64:
		return wasmtime.ValI64(int64(v))
	case wasmtime.KindF32:
		return wasmtime.ValF32(math.Float32frombits(uint32(v)))
	case wasmtime.KindF64:
		return wasmtime.ValF64(math.Float64frombits(v))
	}
	return wasmtime.ValI32(int32(uint32(v)))
}

// toVal is toWasmVal for Func.Call's arguments.
func toVal(k wasmtime.ValKind, v uint64) any { return toWasmVal(k, v) }

type wasmtimeReactor struct {
	m *wasmtimeModule
	// origin names the reactor in the on-disk cache (see wazeroReactor).
	origin string
}

func (r wasmtimeReactor) snapshotCache() (diskCache, string) {
	return r.m.engine.disk, r.origin
}

func (r wasmtimeReactor) Info() ModuleInfo { return r.m.info }

func (r wasmtimeReactor) Snapshot(ctx context.Context, from *Snapshot, in Input, init Driver) (*Snapshot, Outcome, error) {
	if from == nil {
		from = r.m.image
	}
	o, snap, err := r.m.execute(ctx, in, from, glueDriver(init), true)
	return snap, o, err
}

func (r wasmtimeReactor) Run(ctx context.Context, snap *Snapshot, in Input, drive Driver) (Outcome, error) {
	if snap == nil {
		snap = r.m.image
	}
	o, _, err := r.m.execute(ctx, in, snap, glueDriver(drive), false)
	return o, err
}

// epochTicker advances an engine's epoch every epochTick while executions
// run, and stops when none has run for a while, so an idle engine costs
// nothing. Advancing the epoch is the one thing another thread may do to a
// running store.
type epochTicker struct {
	engine *wasmtime.Engine
	mu     sync.Mutex
	active int
	// running: the ticking goroutine exists; done is closed when it ends.
	running bool
	done    chan struct{}
	closed  bool
}

// epochIdleTicks is how long the ticker outlives the last execution.
const epochIdleTicks = 100

func newEpochTicker(e *wasmtime.Engine) *epochTicker { return &epochTicker{engine: e} }

func (t *epochTicker) enter() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.active++
	if !t.running && !t.closed {
		t.running = true
		t.done = make(chan struct{})
		go t.tick(t.done)
	}
}

func (t *epochTicker) leave() {
	t.mu.Lock()
	t.active--
	t.mu.Unlock()
}

func (t *epochTicker) tick(done chan struct{}) {
	defer close(done)
	tk := time.NewTicker(epochTick)
	defer tk.Stop()
	idle := 0
	for range tk.C {
		t.mu.Lock()
		if t.active > 0 {
			// Executions still running reach their deadlines, even on an
			// engine being closed.
			t.engine.IncrementEpoch()
			idle = 0
		} else if idle++; t.closed || idle >= epochIdleTicks {
			t.running = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

// close stops the ticker for good, once the executions still running have
// ended (by their deadlines at the latest); the engine may be closed
// afterwards.
func (t *epochTicker) close() {
	t.mu.Lock()
	t.closed = true
	done, running := t.done, t.running
	t.mu.Unlock()
	if running {
		<-done
	}
}
