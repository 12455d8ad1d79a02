package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/instrument"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
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

// WithGlobal returns s with the captured global name set to value: the
// same memory, which the two share (neither changes it). An interpreter's
// driver moves its C stack so (package pyhost).
//
// # Errors
//
// When s captured no global name.
func (s *Snapshot) WithGlobal(name string, value uint64) (*Snapshot, error) {
	out := &Snapshot{memory: s.memory, globals: append([]savedGlobal(nil), s.globals...)}
	for i := range out.globals {
		if out.globals[i].name == name {
			out.globals[i].value = value
			return out, nil
		}
	}
	return nil, fmt.Errorf("snapshot: no global %s was captured", name)
}

// MemoryBytes is the size of the captured memory.
func (s *Snapshot) MemoryBytes() int { return len(s.memory) }

// snapshotMagic begins an encoded Snapshot; it names the layout's version.
const snapshotMagic = "wasmgate snapshot v1"

// MarshalBinary encodes s: the size of its memory, the pages of it that
// hold a nonzero byte, and its globals. UnmarshalSnapshot reads it back.
func (s *Snapshot) MarshalBinary() ([]byte, error) { return s.appendBinary(nil), nil }

func (s *Snapshot) appendBinary(b []byte) []byte {
	w := entryWriter{b: b}
	w.string(snapshotMagic)
	w.uint(uint64(len(s.memory)))
	ranges := s.nonzeroPages()
	w.uint(uint64(len(ranges)))
	for _, r := range ranges {
		w.uint(uint64(r.start))
		w.bytes(s.memory[r.start:r.end])
	}
	w.uint(uint64(len(s.globals)))
	for _, g := range s.globals {
		w.string(g.name)
		w.uint(g.value)
	}
	return w.b
}

// UnmarshalSnapshot decodes what Snapshot.MarshalBinary encoded.
//
// # Errors
//
// When b is not an encoded Snapshot (another layout, truncated, trailing
// bytes), or describes an impossible one: a memory larger than 4 GiB,
// pages out of order or outside it.
func UnmarshalSnapshot(b []byte) (*Snapshot, error) {
	r := entryReader{b: b}
	if magic := r.string(); r.err == nil && magic != snapshotMagic {
		return nil, fmt.Errorf("snapshot: not an encoded snapshot (it begins %q)", magic[:min(len(magic), 40)])
	}
	size := r.uint()
	if r.err == nil && size > MaxMemoryPages*pageSize {
		return nil, fmt.Errorf("snapshot: memory of %d bytes is larger than 4 GiB", size)
	}
	n := r.uint()
	if r.err != nil {
		return nil, fmt.Errorf("snapshot: %w", r.err)
	}
	if n > uint64(len(r.b)) {
		return nil, fmt.Errorf("snapshot: %d ranges of pages in %d bytes", n, len(r.b))
	}
	s := &Snapshot{memory: make([]byte, size)}
	ranges := make([]byteRange, 0, n)
	end := uint64(0)
	for range n {
		start := r.uint()
		page := r.bytes()
		if r.err != nil {
			break
		}
		if start < end || start%diffPage != 0 || uint64(len(page)) > size-start {
			return nil, fmt.Errorf("snapshot: pages at %d (%d bytes) out of order or outside the memory of %d bytes", start, len(page), size)
		}
		end = start + uint64(len(page))
		copy(s.memory[start:end], page)
		ranges = append(ranges, byteRange{int(start), int(end)})
	}
	g := r.uint()
	if r.err == nil && g > uint64(len(r.b)) {
		return nil, fmt.Errorf("snapshot: %d globals in %d bytes", g, len(r.b))
	}
	for range g {
		name := r.string()
		s.globals = append(s.globals, savedGlobal{name: name, value: r.uint()})
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	// Every byte outside ranges is zero: they are all a restore copies.
	s.nonzeroOnce.Do(func() { s.nonzero = ranges })
	return s, nil
}

// CachedSnapshot is r.Snapshot(ctx, nil, in, init) through the on-disk cache
// of the engine that loaded r (Config.WithCompilationCacheDir): a snapshot
// taken once is read back, verified, by every later process, with the
// Outcome init had (output, fuel, stderr). key must name everything init
// does and depends on (the code it loads, its arguments); the cache adds r's
// module, engine and instrumentation, in and the build of wasmgate. Only a
// snapshot whose init completed is kept.
//
// # Errors
//
// As Reactor.Snapshot.
func CachedSnapshot(ctx context.Context, r Reactor, key string, in Input, init Driver) (*Snapshot, Outcome, error) {
	return CachedSnapshotFrom(ctx, r, nil, key, in, init)
}

// CachedSnapshotFrom is CachedSnapshot of r.Snapshot(ctx, from, in, init):
// init runs from the state of from, a snapshot of r, which key must name
// too (how it was taken, from what).
//
// # Errors
//
// As Reactor.Snapshot.
func CachedSnapshotFrom(ctx context.Context, r Reactor, from *Snapshot, key string, in Input, init Driver) (*Snapshot, Outcome, error) {
	c, ok := r.(interface{ snapshotCache() (diskCache, string) })
	if !ok {
		return r.Snapshot(ctx, from, in, init)
	}
	disk, origin := c.snapshotCache()
	if disk.dir == "" {
		return r.Snapshot(ctx, from, in, init)
	}
	k := snapshotKey(origin, key, in)
	defer disk.lock(k)()
	if b, ok := disk.get(k); ok {
		if snap, out, err := decodeSnapshotEntry(b); err == nil {
			return snap, out, nil
		}
	}
	snap, out, err := r.Snapshot(ctx, from, in, init)
	if err == nil && snap != nil && out.Kind == Completed {
		disk.put(k, encodeSnapshotEntry(snap, out))
	}
	return snap, out, err
}

// snapshotKey names, in the on-disk cache, the snapshot init (named by key)
// takes from the initial state of the reactor named by origin, with in.
func snapshotKey(origin, key string, in Input) diskKey {
	lim := in.Limits.WithDefaults(DefaultLimits())
	return diskKey{kind: "snapshot", what: fmt.Sprintf("%s\ninit %s\ninput %s %x\nlimits %d %d %d %d %d %d %d",
		origin, key, digestHex(in.Bytes), in.Digest,
		lim.TimeoutMs, lim.MaxPayloadBytes, lim.MaxDepth, lim.MaxListItems, lim.Fuel, lim.MemoryPages, lim.MaxOutputBytes)}
}

// encodeSnapshotEntry lays out a snapshot and the Outcome of the init that
// took it for the on-disk cache.
func encodeSnapshotEntry(snap *Snapshot, out Outcome) []byte {
	var w entryWriter
	w.bytes(out.Output)
	w.uint(out.FuelUsed)
	w.bytes(out.Stderr)
	w.bytes(snap.appendBinary(nil))
	return w.b
}

// decodeSnapshotEntry reads what encodeSnapshotEntry wrote.
func decodeSnapshotEntry(b []byte) (*Snapshot, Outcome, error) {
	r := entryReader{b: b}
	out := Outcome{Kind: Completed}
	if o := r.bytes(); len(o) > 0 {
		out.Output = o
	}
	out.FuelUsed = r.uint()
	if e := r.bytes(); len(e) > 0 {
		out.Stderr = e
	}
	enc := r.bytes()
	if err := r.done(); err != nil {
		return nil, out, err
	}
	snap, err := UnmarshalSnapshot(enc)
	return snap, out, err
}

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
	digest := digestHex(wasm) // once: see admitDecoded
	mod, err := e.cache.get(ctx, cacheKey(digest, &glue), func() (*wazeroModule, error) { return e.compileReactor(ctx, wasm, digest, glue) })
	if err != nil {
		return nil, err
	}
	origin := fmt.Sprintf("%s recycling=%t\n%s", e.name, !e.noRecycling, preparedKey(mod.info.Digest, glue, e.uninstrumented, false).what)
	return wazeroReactor{m: mod, origin: origin}, nil
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

func (e *wazeroEngine) compileReactor(ctx context.Context, wasm []byte, digest string, glue host.Glue) (*wazeroModule, error) {
	r, err := prepareReactor(e.disk, wasm, digest, glue, e.uninstrumented, false)
	if err != nil {
		return nil, err
	}
	code := r.code
	var rec *recycler
	if e.interruptible && !e.noRecycling {
		// Runs may reuse instances (recycle.go).
		code, rec = recyclingCode(r.info, code)
	}
	compiled, err := e.compileCode(ctx, code)
	if err != nil {
		return nil, err
	}
	return &wazeroModule{engine: e, info: r.info, compiled: compiled, image: r.image, snapshotGlobals: r.globals, recycle: rec}, nil
}

// reactorCode is what every engine compiles a reactor from.
type reactorCode struct {
	info ModuleInfo
	// code is the instrumented module with its data segments made passive
	// and empty: instances start from a memory image, never from
	// instantiation. It is nil when prepareReactor was asked for withData.
	code []byte
	// withData is the instrumented module with its active data segments
	// (passive ones emptied, as in code): instantiated, it starts from the
	// image, for an engine that maps that copy-on-write (wasmtime). It is
	// nil unless prepareReactor was asked for it.
	withData []byte
	// image is the initial state: memory as the data segments leave it.
	image *Snapshot
	// globals are the globals a Snapshot keeps.
	globals []string
}

// prepareReactor admits and instruments a reactor for glue and splits its
// initial memory image from its code: code, or withData when withData is
// set. Admission runs on wasm (whose digestHex is digest) every time; what
// instrumenting and splitting derive from it comes from cache when cache
// holds it, and goes there when it does not.
func prepareReactor(cache diskCache, wasm []byte, digest string, glue host.Glue, uninstrumented, withData bool) (reactorCode, error) {
	if cache.dir != "" {
		m, err := wasmbin.Decode(wasm)
		if err != nil {
			return reactorCode{}, &AdmissionError{Problem: "cannot parse module", Err: err}
		}
		info, err := admitDecoded(wasm, digest, m, &glue)
		if err != nil {
			return reactorCode{}, err
		}
		key := preparedKey(info.Digest, glue, uninstrumented, withData)
		if b, ok := cache.get(key); ok {
			if r, facts, err := decodeReactorCode(b, withData); err == nil {
				r.info = info
				r.info.recyclable = facts&factRecyclable != 0
				r.info.maxDepth = instrumentFor(&glue).MaxCallDepth
				return r, nil
			}
		}
		r, err := buildReactor(wasm, glue, uninstrumented)
		if err != nil {
			return reactorCode{}, err
		}
		cache.put(key, r.encode(withData))
		if withData {
			r.code = nil
		} else {
			r.withData = nil
		}
		return r, nil
	}
	r, err := buildReactor(wasm, glue, uninstrumented)
	if withData {
		r.code = nil
	} else {
		r.withData = nil
	}
	return r, err
}

// buildReactor is prepareReactor without a cache, both forms built.
func buildReactor(wasm []byte, glue host.Glue, uninstrumented bool) (reactorCode, error) {
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

// preparedKey names a prepared reactor in the on-disk cache: the digest of
// the module's bytes, the glue it was admitted for, how it was instrumented
// and which form of its code is kept.
func preparedKey(digest string, glue host.Glue, uninstrumented, withData bool) diskKey {
	return diskKey{kind: "reactor", what: fmt.Sprintf("module %s\nglue %s\ninstrument v%d %+v uninstrumented=%t\nwith-data=%t",
		digest, glue.Name, instrument.Version, instrumentFor(&glue), uninstrumented, withData)}
}

// What instrumenting learnt of a module (ModuleInfo's unexported fields),
// as an entry keeps it.
const (
	factRecyclable = 1 << iota
)

// encode lays out r for the on-disk cache: what instrumenting learnt of it
// (the rest of its info is admission's, which runs every time), the one
// form of its code, its image and its globals. Every field of ModuleInfo
// that instrumenting sets must be kept here:
// TestPreparedReactorFromTheCacheIsTheBuiltOne compares the whole info.
func (r reactorCode) encode(withData bool) []byte {
	var w entryWriter
	var facts uint64
	if r.info.recyclable {
		facts |= factRecyclable
	}
	w.uint(facts)
	if withData {
		w.bytes(r.withData)
	} else {
		w.bytes(r.code)
	}
	w.bytes(r.image.appendBinary(nil))
	w.uint(uint64(len(r.globals)))
	for _, g := range r.globals {
		w.string(g)
	}
	return w.b
}

// decodeReactorCode reads what encode wrote, but for the info: the facts
// of it that instrumenting gives.
func decodeReactorCode(b []byte, withData bool) (reactorCode, uint64, error) {
	var r reactorCode
	rd := entryReader{b: b}
	facts := rd.uint()
	code := rd.bytes()
	if withData {
		r.withData = code
	} else {
		r.code = code
	}
	image := rd.bytes()
	n := rd.uint()
	if n > uint64(len(rd.b)) {
		return r, 0, errShortEntry
	}
	for range n {
		r.globals = append(r.globals, rd.string())
	}
	if err := rd.done(); err != nil {
		return r, 0, err
	}
	var err error
	r.image, err = UnmarshalSnapshot(image)
	return r, facts, err
}

// snapshotable refuses modules whose state a Snapshot would not capture
// exactly, and returns the names of the globals a Snapshot captures: every
// exported mutable global except the host's own (wg_*), which each
// execution resets.
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
		if !g.Mutable {
			continue
		}
		if !exported[uint32(imported+i)] {
			return nil, refuse("mutable global %d is not exported, so a snapshot could not capture it", imported+i)
		}
		// A snapshot keeps 64 bits of a global, which engines read and
		// write exactly for numbers only: not the high half of a v128, nor
		// a reference, which points into the instance it was read from.
		switch g.ValType {
		case valI32, valI64, valF32, valF64:
		default:
			return nil, refuse("mutable global %d has type %s, which a snapshot cannot capture exactly; keep such state in memory or in an i32, i64, f32 or f64 global", imported+i, valTypeName(g.ValType))
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

type wazeroReactor struct {
	m *wazeroModule
	// origin names the reactor in the on-disk cache: the engine and its
	// prepared code.
	origin string
}

func (r wazeroReactor) snapshotCache() (diskCache, string) { return r.m.engine.disk, r.origin }

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
	if r.m.recycle != nil {
		lim := in.Limits.WithDefaults(DefaultLimits())
		if o, ok := tooLargeToStart(r.m.info, snap, lim); ok {
			return o, nil
		}
		return r.m.runRecycled(ctx, in, snap, lim, glueDriver(drive))
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
