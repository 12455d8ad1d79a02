package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/instrument"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
)

// Recycled instances.
//
// Instantiating a module costs more than a trivial execution: wazero
// allocates the instance, its globals and memory, and every exported
// function called gets its own call stack. An execution may instead take an
// instance that an earlier execution used and that was then returned to a
// state bit-for-bit equal to a fresh instance's: the same linear memory
// (size and bytes), the same value in every global. A leak of state from
// one execution to the next would be a sandbox escape, so an instance is
// recycled only where that state is all there is, and all of it is reset:
//
//   - The module is recyclable only when its whole state is memory and
//     globals: instrumentation found no table.set, table.grow, table.fill,
//     table.copy, table.init, elem.drop or data.drop in its code
//     (instrument.Facts), so its tables and segments stay as instantiation
//     left them (a C module's table of function pointers is such a table);
//     and it imports no table, memory or global. Other modules always get
//     a fresh instance.
//   - Every mutable global is exported for the host (the instrumenter
//     exports its own; recyclingCode exports the module's others under
//     names the guest cannot see), so each can be read after
//     instantiation and set back after an execution. The host reads and
//     writes 64 bits of a global, so a v128 is set back by a function
//     recyclingCode adds to the module instead, from its initializer; a
//     global of a type neither can reset exactly makes the module not
//     recyclable.
//   - An instance goes back to the pool only after an execution that
//     returned normally (a result, or the guest's own error status): never
//     after a trap, an interruption (time), exhausted fuel, a refused
//     memory.grow, or memory that grew. Such an instance is closed.
//   - Reset returns memory to its image and sets every mutable global to
//     its value right after instantiation (and, from a snapshot, after the
//     snapshot's restore). For a module's own initial state the image is
//     the memory right after instantiation, copied back whole (a page or
//     two for the executors this is for). From a snapshot, the instance
//     maps the snapshot's image copy-on-write, and only the pages holding
//     a private copy, which /proc/self/pagemap names (dirtyPages), get the
//     image's bytes back: the cost follows what executions wrote, not the
//     memory's size. Memory that did not grow has the image's size, so
//     every byte is covered either way.
//
// The differential test (recycle_test.go) runs random sequences of
// executions on recycled and on fresh instances and requires identical
// outcomes, output and fuel, and a state digest after reset equal to a
// fresh instance's; state.wasm writes a global of every value type and
// memory, and outputs what it found.

// recycledGlobalPrefix names the exports recyclingCode adds for the
// module's own mutable globals: wg_ names are the host's.
const recycledGlobalPrefix = "wg_recycle_global_"

// maxIdlePerLimit bounds the idle instances kept per module and memory
// limit: enough for the executions that run at once.
var maxIdlePerLimit = 2 * goruntime.GOMAXPROCS(0)

// recycleResetExport names the function recyclingCode adds to set a
// module's mutable v128 globals back to their initial values.
const recycleResetExport = "wg_recycle_reset"

// Value types of globals (the binary format's bytes).
const (
	valI32       = 0x7f
	valI64       = 0x7e
	valF32       = 0x7d
	valF64       = 0x7c
	valV128      = 0x7b
	valFuncref   = 0x70
	valExternref = 0x6f
)

// recyclingCode reports whether the instrumented module code, of which
// info was admitted, can be recycled and, when it can, returns it with
// every mutable global made resettable, and a recycler that knows how.
//
// The host resets a global through wazero's api.MutableGlobal, which reads
// and writes 64 bits: exact for i32, i64, f32, f64 and the references (a
// funcref is a pointer into the instance's own functions, taken from this
// same instance once instantiated; an externref can only be null, as no
// host gives a guest another). A v128 has 128 bits, and Set writes zero
// into the high half. So a mutable v128 global is reset by code: a function
// added to the module that sets each one to its initializer's constant (a
// module recycled from its own initial state imports no global, so that
// constant is its initial value). A global of any other type, or a v128
// whose initializer is not a constant, makes the module not recyclable.
func recyclingCode(info ModuleInfo, code []byte) ([]byte, *recycler) {
	if !info.recyclable {
		return code, nil
	}
	m, err := wasmbin.Decode(code)
	if err != nil {
		return code, nil
	}
	for _, im := range m.Imports {
		if im.Kind != wasmbin.KindFunc {
			return code, nil // an imported table, memory or global
		}
	}
	r := &recycler{}
	exported := map[uint32]bool{}
	var v128 []uint32
	for i, g := range m.Globals {
		if !g.Mutable {
			continue
		}
		switch g.ValType {
		case valI32, valI64, valF32, valF64, valFuncref, valExternref:
		case valV128:
			v128 = append(v128, uint32(i))
		default:
			return code, nil
		}
	}
	for _, e := range m.Exports {
		if e.Kind == wasmbin.KindGlobal && int(e.Index) < len(m.Globals) && m.Globals[e.Index].Mutable && m.Globals[e.Index].ValType != valV128 && !exported[e.Index] {
			exported[e.Index] = true
			r.globals = append(r.globals, e.Name)
		}
	}
	var extra []wasmbin.Export
	for i, g := range m.Globals {
		if g.Mutable && g.ValType != valV128 && !exported[uint32(i)] {
			name := recycledGlobalPrefix + strconv.Itoa(i)
			extra = append(extra, wasmbin.Export{Name: name, Kind: wasmbin.KindGlobal, Index: uint32(i)})
			r.globals = append(r.globals, name)
		}
	}
	if len(v128) > 0 {
		body, ok := v128ResetBody(m, v128)
		if !ok {
			return code, nil
		}
		withReset, index, err := m.WithFunction(wasmbin.FuncType{}, body)
		if err != nil {
			return code, nil
		}
		if m, err = wasmbin.Decode(withReset); err != nil {
			return code, nil
		}
		extra = append(extra, wasmbin.Export{Name: recycleResetExport, Kind: wasmbin.KindFunc, Index: index})
		r.reset = recycleResetExport
	}
	if len(extra) == 0 {
		return code, r
	}
	out, err := m.WithExports(extra)
	if err != nil {
		return code, nil
	}
	return out, r
}

// v128ResetBody is the code of a function that sets each v128 global of
// indices to its initializer's constant, when each is a v128.const.
func v128ResetBody(m *wasmbin.Module, indices []uint32) ([]byte, bool) {
	const v128Const = 12 // 0xfd 12: v128.const, then 16 bytes
	body := []byte{0}    // no locals
	for _, i := range indices {
		init := m.Globals[i].Init
		if len(init) != 2+16+1 || init[0] != 0xfd || init[1] != v128Const || init[len(init)-1] != 0x0b {
			return nil, false
		}
		body = append(body, init[:len(init)-1]...)
		body = append(body, 0x24) // global.set
		body = binary.AppendUvarint(body, uint64(i))
	}
	return append(body, 0x0b), true
}

// recycler keeps a module's idle instances, by memory limit.
type recycler struct {
	// globals names an export of every mutable global but the v128 ones
	// (no imported global: see recyclingCode).
	globals []string
	// reset names the exported function that resets the v128 globals (""
	// when there are none).
	reset string

	mu   sync.Mutex
	idle map[poolKey][]*pooledInstance
	// reuses counts the executions that took an idle instance.
	reuses atomic.Uint64

	// image is the memory right after instantiation, taken from the
	// first instance: the same for every instance, the module being what
	// it is (modules run from their own initial state only).
	imageOnce sync.Once
	image     []byte
	imageErr  error
}

// instanceImage is a fresh instance's state.
type instanceImage struct {
	memory  []byte
	globals []uint64 // in the order of pooledInstance.globals
}

// poolKey says which instances are interchangeable: those of one memory
// limit started from one snapshot (nil: the module's own initial state).
type poolKey struct {
	snap  *Snapshot
	limit uint64
}

// pooledInstance is an instance with what a reuse needs at hand.
type pooledInstance struct {
	mod   api.Module
	alloc instanceMemory
	key   poolKey
	// fresh is the state a reset returns to: memory as a fresh instance
	// starts (shared, never written), and the globals this instance had
	// once instantiated (and restored from its snapshot).
	fresh instanceImage

	globals     []api.MutableGlobal // every mutable global, as recycler.globals
	resetV128   api.Function        // recycler.reset's function, or nil
	slice       api.MutableGlobal
	reserve     api.MutableGlobal
	budget      api.MutableGlobal
	depth       api.Global
	overBudget  api.Global
	funcs       map[string]api.Function
	memoryPages uint32
}

// take returns an idle instance for key, or a new one.
func (r *recycler) take(ctx context.Context, m *wazeroModule, key poolKey) (*pooledInstance, error) {
	r.mu.Lock()
	if list := r.idle[key]; len(list) > 0 {
		p := list[len(list)-1]
		r.idle[key] = list[:len(list)-1]
		r.mu.Unlock()
		r.reuses.Add(1)
		return p, nil
	}
	r.mu.Unlock()
	return r.instantiate(ctx, m, key)
}

// instantiate makes a new instance for key: started from key.snap when
// set (its memory mapped copy-on-write where the platform allows, so a
// reset copies back only the pages executions wrote; see dirtyPages), and
// takes its fresh state.
func (r *recycler) instantiate(ctx context.Context, m *wazeroModule, key poolKey) (*pooledInstance, error) {
	var alloc instanceMemory
	if key.snap != nil {
		alloc = newCOWAllocator(key.limit, key.snap)
	}
	if alloc == nil {
		a := &memoryAllocator{limit: key.limit}
		if key.snap != nil {
			a.image, a.pages = key.snap.memory, key.snap.nonzeroPages()
		}
		alloc = a
	}
	mod, err := m.engine.rt.InstantiateModule(experimental.WithMemoryAllocator(ctx, alloc), m.compiled, m.engine.moduleConfig)
	if err != nil {
		alloc.release()
		return nil, err
	}
	p := &pooledInstance{mod: mod, alloc: alloc, key: key, funcs: map[string]api.Function{}}
	if key.snap != nil {
		if err := restore(mod, key.snap); err != nil {
			p.close(ctx)
			return nil, err
		}
	}
	if err := p.bind(r.globals, r.reset); err != nil {
		p.close(ctx)
		return nil, err
	}
	for _, g := range p.globals {
		p.fresh.globals = append(p.fresh.globals, g.Get())
	}
	if key.snap != nil {
		p.fresh.memory = key.snap.memory
		return p, nil
	}
	r.imageOnce.Do(func() { r.image, r.imageErr = p.captureMemory() })
	if r.imageErr != nil {
		p.close(ctx)
		return nil, r.imageErr
	}
	p.fresh.memory = r.image
	return p, nil
}

// bind finds the instance's mutable globals, the function that resets its
// v128 globals (reset, when set) and the meter's globals.
func (p *pooledInstance) bind(names []string, reset string) error {
	for _, name := range names {
		g, ok := p.mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return fmt.Errorf("recycling: global %s is not mutable", name)
		}
		p.globals = append(p.globals, g)
	}
	if reset != "" {
		if p.resetV128 = p.mod.ExportedFunction(reset); p.resetV128 == nil {
			return fmt.Errorf("recycling: no function %s", reset)
		}
	}
	var ok1, ok2, ok3 bool
	p.slice, ok1 = p.mod.ExportedGlobal(instrument.FuelGlobal).(api.MutableGlobal)
	p.reserve, ok2 = p.mod.ExportedGlobal(instrument.ReserveGlobal).(api.MutableGlobal)
	p.budget, ok3 = p.mod.ExportedGlobal(instrument.BudgetGlobal).(api.MutableGlobal)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("instrumented module exports no mutable %s, %s and %s", instrument.FuelGlobal, instrument.ReserveGlobal, instrument.BudgetGlobal)
	}
	p.depth = p.mod.ExportedGlobal(instrument.DepthGlobal)
	p.overBudget = p.mod.ExportedGlobal(instrument.OverBudgetGlobal)
	if mem := p.mod.Memory(); mem != nil {
		p.memoryPages, _ = mem.Grow(0)
	}
	return nil
}

// captureMemory copies the instance's memory.
func (p *pooledInstance) captureMemory() ([]byte, error) {
	mem := p.mod.Memory()
	if mem == nil {
		return nil, nil
	}
	b, ok := mem.Read(0, mem.Size())
	if !ok {
		return nil, errors.New("recycling: cannot read memory")
	}
	return append([]byte(nil), b...), nil
}

// reset returns the instance to its fresh state, or reports that it
// cannot (its memory grew).
func (p *pooledInstance) reset(ctx context.Context) bool {
	img := p.fresh.memory
	if mem := p.mod.Memory(); mem != nil {
		if mem.Size() != uint32(len(img)) {
			return false
		}
		b, ok := mem.Read(0, mem.Size())
		if !ok {
			return false
		}
		if cow, ok := p.alloc.(*cowAllocator); ok && cow.mem != nil {
			// Pages no execution wrote still map the image itself: copy
			// back only the others.
			if dirty, ok := dirtyPages(b); ok {
				for _, r := range dirty {
					copy(b[r.start:r.end], img[r.start:r.end])
				}
			} else {
				copy(b, img)
			}
		} else {
			copy(b, img)
		}
	} else if len(img) > 0 {
		return false
	}
	for i, g := range p.globals {
		g.Set(p.fresh.globals[i])
	}
	if p.resetV128 != nil {
		// Added after instrumentation: it neither charges fuel nor traps.
		if _, err := p.resetV128.Call(context.WithoutCancel(ctx)); err != nil {
			return false
		}
	}
	return true
}

// put returns p to the pool, reset, or closes it when it cannot be.
func (r *recycler) put(ctx context.Context, p *pooledInstance) {
	if !p.reset(ctx) {
		p.close(ctx)
		return
	}
	r.mu.Lock()
	if r.idle == nil {
		r.idle = map[poolKey][]*pooledInstance{}
	}
	if len(r.idle[p.key]) < maxIdlePerLimit {
		r.idle[p.key] = append(r.idle[p.key], p)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	p.close(ctx)
}

func (p *pooledInstance) close(ctx context.Context) {
	_ = p.mod.Close(context.WithoutCancel(ctx))
	p.alloc.release()
}

// call calls an export through the instance's own function handles, which
// keep their call stacks from one execution to the next.
func (p *pooledInstance) call(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	f, ok := p.funcs[name]
	if !ok {
		f = p.mod.ExportedFunction(name)
		if f == nil {
			return nil, &host.GuestError{Msg: "missing export " + name}
		}
		p.funcs[name] = f
	}
	return f.Call(ctx, params...)
}

// recycledInstance adapts a pooled instance to host.Instance.
type recycledInstance struct{ p *pooledInstance }

func (i recycledInstance) Memory() host.Memory {
	if m := i.p.mod.Memory(); m != nil {
		return m
	}
	return nil
}

func (i recycledInstance) Call(ctx context.Context, name string, params ...uint64) ([]uint64, error) {
	return i.p.call(ctx, name, params...)
}

// runRecycled is execute on a recycled instance (see the comment at the top
// of this file): same limits, same meter, same classification.
func (m *wazeroModule) runRecycled(ctx context.Context, in Input, from *Snapshot, lim Limits, drive driver) (Outcome, error) {
	sess := host.NewSession(in.Bytes, in.Digest, int(lim.MaxOutputBytes))
	meter := newMeter(lim.Fuel)
	sess.SetFuelCharge(meter.charge)
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(lim.TimeoutMs)*time.Millisecond)
	defer cancel()
	runCtx = host.WithSession(runCtx, sess)

	p, err := m.recycle.take(runCtx, m, poolKey{snap: from, limit: uint64(lim.MemoryPages) * pageSize})
	if err != nil {
		left, interrupted := meter.finish()
		o, _, err := verdict(ctx, wazeroTrap(err), runState{}, meter.used(left, interrupted), nil, nil, sess)
		return o, err
	}
	setBudget(wazeroFuel{p.budget}, m.info, lim, uint64(p.memoryPages))
	meter.arm(runCtx, wazeroFuel{p.slice}, wazeroFuel{p.reserve})
	out, runErr := drive(runCtx, recycledInstance{p}, sess, int(lim.MaxOutputBytes))
	left, interrupted := meter.finish()
	var end instanceEnd
	if p.depth != nil {
		end.depth = uint32(p.depth.Get())
	}
	if p.overBudget != nil {
		end.overBudget = uint32(p.overBudget.Get()) != 0
	}
	refused := p.alloc.refused()
	var failure *host.GuestFailure
	normal := runErr == nil || errors.As(runErr, &failure)
	if normal && !interrupted && !refused && !end.overBudget && left >= 0 {
		// The output was copied out of the guest's memory by the driver
		// (host.RunABIv1 copies; a command's stdout is the session's).
		m.recycle.put(ctx, p)
	} else {
		p.close(ctx)
	}
	o, _, err := verdict(ctx, wazeroTrap(runErr), runState{
		memoryRefused: refused || end.overBudget,
		fuelLeft:      left,
		interrupted:   interrupted,
		depth:         end.depth,
		maxDepth:      m.info.maxDepth,
	}, meter.used(left, interrupted), out, nil, sess)
	return o, err
}
