package runtime

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmgate/wasmgate/host"
	"github.com/wasmgate/wasmgate/runtime/internal/wasmbin"
)

// Driver drives one instance of a reactor through its exports (the QuickJS
// glue in package host is one). Its output becomes the Outcome's Output;
// its errors are classified like any guest's.
type Driver func(ctx context.Context, inst host.Instance) ([]byte, error)

// Reactor is an admitted, compiled module driven by host glue rather than by
// a calling convention, whose instances can start from a Snapshot.
//
// Every Run and Snapshot uses a fresh instance, metered and limited like any
// execution: a snapshot saves the time to reach a state, never isolation.
type Reactor interface {
	Info() ModuleInfo
	// Snapshot runs init on a fresh instance (from from's state, or the
	// module's initial state when from is nil) and, when it completes,
	// captures the instance's memory and mutable globals.
	//
	// # Errors
	//
	// As Module.Run. An init that does not complete is reported in the
	// Outcome, with a nil Snapshot.
	Snapshot(ctx context.Context, from *Snapshot, in Input, init Driver) (*Snapshot, Outcome, error)
	// Run runs drive on a fresh instance started from snap (nil: the
	// module's initial state).
	Run(ctx context.Context, snap *Snapshot, in Input, drive Driver) (Outcome, error)
}

// Snapshot is the state of a reactor instance: its whole linear memory and
// its exported mutable globals. Tables are not captured: admission refuses
// reactors whose code can change them.
type Snapshot struct {
	memory  []byte
	globals []savedGlobal

	// changed lists, once computed, where memory differs from the
	// module's initial image (see changedPages).
	changedOnce sync.Once
	changed     []byteRange
	// nonzero lists, once computed, where memory holds a nonzero byte (see
	// nonzeroPages).
	nonzeroOnce sync.Once
	nonzero     []byteRange
}

type byteRange struct{ start, end int }

// diffPage is the granularity of changedPages: the host's page size.
const diffPage = 4096

// changedPages returns the ranges of s's memory, in whole diffPage pages,
// that differ from base (the module's initial image, zero beyond its
// end). It is computed once: a snapshot belongs to one reactor.
func (s *Snapshot) changedPages(base []byte) []byteRange {
	s.changedOnce.Do(func() { s.changed = differingPages(s.memory, base) })
	return s.changed
}

// nonzeroPages returns the ranges of s's memory, in whole diffPage pages,
// that hold a nonzero byte: all a restore into zeroed memory must copy.
func (s *Snapshot) nonzeroPages() []byteRange {
	s.nonzeroOnce.Do(func() { s.nonzero = differingPages(s.memory, nil) })
	return s.nonzero
}

// differingPages returns the ranges of mem, in whole diffPage pages, that
// differ from base (zero beyond its end), adjacent pages joined.
func differingPages(mem, base []byte) []byteRange {
	var ranges []byteRange
	var zero [diffPage]byte
	for off := 0; off < len(mem); off += diffPage {
		end := min(off+diffPage, len(mem))
		var was []byte
		if off < len(base) {
			was = base[off:min(end, len(base))]
		}
		now := mem[off:end]
		if bytes.Equal(now[:len(was)], was) && bytes.Equal(now[len(was):], zero[:len(now)-len(was)]) {
			continue
		}
		if n := len(ranges); n > 0 && ranges[n-1].end == off {
			ranges[n-1].end = end
			continue
		}
		ranges = append(ranges, byteRange{off, end})
	}
	return ranges
}

type savedGlobal struct {
	name  string
	value uint64
}

// MemoryBytes is the size of the captured memory.
func (s *Snapshot) MemoryBytes() int { return len(s.memory) }

// LoadReactor admits and compiles a module for glue: it may import the
// virtual WASI and glue.Imports, and must export what glue.Exports lists.
//
// # Errors
//
// An *AdmissionError (errors.Is ErrNotAdmitted) when admission refuses the
// module, including when its state cannot be snapshotted (a mutable global
// that is not exported, data segments at non-constant offsets).
func (e *wazeroEngine) LoadReactor(ctx context.Context, wasm []byte, glue host.Glue) (Reactor, error) {
	if err := e.instantiateGlue(ctx, glue); err != nil {
		return nil, err
	}
	mod, err := e.cache.get(ctx, cacheKey(wasm, &glue), func() (*wazeroModule, error) { return e.compileReactor(ctx, wasm, glue) })
	if err != nil {
		return nil, err
	}
	return wazeroReactor{mod}, nil
}

// instantiateGlue makes glue's imports available in the engine's runtime,
// once per glue. Admission keeps every module but glue's own from importing
// them.
func (e *wazeroEngine) instantiateGlue(ctx context.Context, glue host.Glue) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.glues[glue.Name] {
		return nil
	}
	byModule := map[string][]host.Function{}
	for _, f := range glue.Imports {
		byModule[f.Module] = append(byModule[f.Module], f)
	}
	for name, fns := range byModule {
		if err := e.instantiateHost(ctx, name, fns); err != nil {
			return err
		}
	}
	e.glues[glue.Name] = true
	return nil
}

func (e *wazeroEngine) compileReactor(ctx context.Context, wasm []byte, glue host.Glue) (*wazeroModule, error) {
	r, err := prepareReactor(wasm, glue, e.uninstrumented)
	if err != nil {
		return nil, err
	}
	compiled, err := e.compileCode(ctx, r.code)
	if err != nil {
		return nil, err
	}
	return &wazeroModule{engine: e, info: r.info, compiled: compiled, image: r.image, snapshotGlobals: r.globals}, nil
}

// reactorCode is what every engine compiles a reactor from.
type reactorCode struct {
	info ModuleInfo
	// code is the instrumented module with its data segments made passive
	// and empty: instances start from a memory image, never from
	// instantiation.
	code []byte
	// withData is the instrumented module with its active data segments
	// (passive ones emptied, as in code): instantiated, it starts from the
	// image, for an engine that maps that copy-on-write (wasmtime).
	withData []byte
	// image is the initial state: memory as the data segments leave it.
	image *Snapshot
	// globals are the globals a Snapshot keeps.
	globals []string
}

// prepareReactor admits and instruments a reactor for glue and splits its
// initial memory image from its code.
func prepareReactor(wasm []byte, glue host.Glue, uninstrumented bool) (reactorCode, error) {
	info, code, err := admitAndInstrument(wasm, &glue, uninstrumented)
	if err != nil {
		return reactorCode{}, err
	}
	m, err := wasmbin.Decode(code)
	if err != nil {
		return reactorCode{}, &AdmissionError{Problem: "cannot parse the instrumented module", Err: err}
	}
	globals, err := snapshotable(m)
	if err != nil {
		return reactorCode{}, err
	}
	image, stripped, err := m.SplitData()
	if err != nil {
		return reactorCode{}, &AdmissionError{Problem: "cannot snapshot the module", Err: err}
	}
	return reactorCode{info: info, code: stripped, withData: m.EmptyPassiveData(), image: &Snapshot{memory: image}, globals: globals}, nil
}

// snapshotable refuses modules whose state a Snapshot would not capture, and
// returns the names of the globals a Snapshot captures: every exported
// mutable global except the host's own (wg_*), which each execution resets.
func snapshotable(m *wasmbin.Module) ([]string, error) {
	exported := map[uint32]bool{}
	for _, e := range m.Exports {
		if e.Kind == wasmbin.KindGlobal {
			exported[e.Index] = true
		}
	}
	imported := 0
	for _, im := range m.Imports {
		if im.Kind == wasmbin.KindGlobal {
			imported++
		}
	}
	for i, g := range m.Globals {
		if g.Mutable && !exported[uint32(imported+i)] {
			return nil, refuse("mutable global %d is not exported, so a snapshot could not capture it", imported+i)
		}
	}
	var names []string
	for _, e := range m.Exports {
		i := int(e.Index) - imported
		if e.Kind == wasmbin.KindGlobal && i >= 0 && i < len(m.Globals) && m.Globals[i].Mutable && !strings.HasPrefix(e.Name, "wg_") {
			names = append(names, e.Name)
		}
	}
	return names, nil
}

type wazeroReactor struct{ m *wazeroModule }

func (r wazeroReactor) Info() ModuleInfo { return r.m.info }

func (r wazeroReactor) Snapshot(ctx context.Context, from *Snapshot, in Input, init Driver) (*Snapshot, Outcome, error) {
	if from == nil {
		from = r.m.image
	}
	o, snap, err := r.m.execute(ctx, in, from, glueDriver(init), true)
	return snap, o, err
}

func (r wazeroReactor) Run(ctx context.Context, snap *Snapshot, in Input, drive Driver) (Outcome, error) {
	if snap == nil {
		snap = r.m.image
	}
	o, _, err := r.m.execute(ctx, in, snap, glueDriver(drive), false)
	return o, err
}

// restore puts a snapshot's state into a fresh instance: the memory image
// is already in place (see memoryAllocator), but memory starts at the
// module's minimum, so it is grown to the image's size first.
func restore(mod api.Module, from *Snapshot) error {
	mem := mod.Memory()
	if mem == nil {
		return fmt.Errorf("restoring a snapshot: the module has no memory")
	}
	if want := uint32(len(from.memory) / pageSize); want > mem.Size()/pageSize {
		if _, ok := mem.Grow(want - mem.Size()/pageSize); !ok {
			return fmt.Errorf("restoring a snapshot: cannot grow memory to %d pages", want)
		}
	}
	for _, g := range from.globals {
		mg, ok := mod.ExportedGlobal(g.name).(api.MutableGlobal)
		if !ok {
			return fmt.Errorf("restoring a snapshot: no mutable global %s", g.name)
		}
		mg.Set(g.value)
	}
	return nil
}

// captureState copies an instance's memory and the named globals.
func captureState(inst wazeroInstance, globals []string) (*Snapshot, error) {
	mem := inst.mod.Memory()
	if mem == nil {
		return nil, fmt.Errorf("snapshot: the module has no memory")
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, fmt.Errorf("snapshot: cannot read memory")
	}
	snap := &Snapshot{memory: append([]byte(nil), b...)}
	for _, name := range globals {
		snap.globals = append(snap.globals, savedGlobal{name: name, value: inst.mod.ExportedGlobal(name).Get()})
	}
	return snap, nil
}
