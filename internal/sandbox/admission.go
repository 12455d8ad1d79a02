package sandbox

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/instrument"
	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// ErrNotAdmitted is matched (errors.Is) by every admission refusal.
const ErrNotAdmitted = sentinel.Error("runtime: module not admitted")

// AdmissionError says why a module was refused before anything ran.
type AdmissionError struct {
	Problem string
	Err     error // underlying cause, if any
}

func (e *AdmissionError) Error() string {
	if e.Err != nil {
		return "module not admitted: " + e.Problem + ": " + e.Err.Error()
	}
	return "module not admitted: " + e.Problem
}

func (e *AdmissionError) Unwrap() error { return e.Err }

func (e *AdmissionError) Is(target error) bool { return target == ErrNotAdmitted }

func refuse(format string, args ...any) error {
	return &AdmissionError{Problem: fmt.Sprintf(format, args...)}
}

// Profile is what a module may import.
type Profile string

const (
	// ProfileStrict: no imports at all.
	ProfileStrict Profile = "strict"
	// ProfileWASI: wasi_snapshot_preview1 functions only, served by the
	// virtual WASI.
	ProfileWASI Profile = "wasi"
)

// Convention is how the host calls a module, decided by its exports.
type Convention string

const (
	// ConventionABIv1: wg_alloc / wg_execute / wg_output_ptr / wg_output_len.
	ConventionABIv1 Convention = "abi-v1"
	// ConventionCommand: a WASI command run through _start, stdin in,
	// stdout out.
	ConventionCommand Convention = "wasi-command"
)

// Import is one import of a module, for inspection.
type Import struct {
	Module string `json:"module"`
	Name   string `json:"name"`
	Kind   string `json:"kind"`
}

// Export is one export of a module, for inspection.
type Export struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// ModuleInfo is what admission learned about a module.
type ModuleInfo struct {
	Digest     string     `json:"module_digest"`
	Size       int        `json:"size_bytes"`
	Profile    Profile    `json:"profile"`
	Convention Convention `json:"convention"`
	Imports    []Import   `json:"imports"`
	Exports    []Export   `json:"exports"`
	// Manifest is nil when the module carries none.
	Manifest *Manifest `json:"manifest"`
	// MemoryMinPages is the initial size of the module's memory.
	MemoryMinPages uint32 `json:"memory_min_pages"`
	// TableElements is the initial size of the module's tables, summed:
	// TableElementBytes each of memory_pages before anything runs.
	TableElements uint64 `json:"table_elements"`
	// Reactor reports an exported _initialize, called before ABI v1.
	Reactor bool `json:"reactor"`

	// recyclable is set by instrumentation when an instance's whole state
	// is its memory and its globals (instrument.Facts): its instances may
	// be recycled (recycle.go). False, the safe default, whenever unknown.
	recyclable bool
	// maxDepth is the instrumented call-depth limit (MaxCallDepth, unless
	// the module's glue sets its own).
	maxDepth uint32
}

// abiV1 lists the ABI v1 function exports and their signatures.
type abiExport struct {
	name            string
	params, results string
}

var abiV1 = []abiExport{
	{host.ExportAlloc, "i32", "i32"},
	{host.ExportExecute, "i32 i32", "i32"},
	{host.ExportOutputPtr, "", "i32"},
	{host.ExportOutputLen, "", "i32"},
}

// Inspect decides whether a module may run and how. It is the single place
// admission rules live; every engine runs it before compiling.
func Inspect(wasm []byte) (ModuleInfo, error) {
	info, _, err := admit(wasm)
	return info, err
}

// MaxTableElements caps every table: table.grow past it fails (returns -1),
// as the spec allows, instead of taking host memory without bound. The
// initial sizes of all of a module's tables together are capped at it too.
const MaxTableElements = 1 << 20

// TableElementBytes is what one table element costs of memory_pages: a
// module's tables and its linear memory share that budget. It bounds what
// every engine takes per element (8 bytes live, and in wazero up to about
// 32 while a grown table's old backing array waits for the collector);
// see docs/RATIONALE.md, "Tables and other guest-controlled allocations".
const TableElementBytes = instrument.TableElementBytes

// Counts admission bounds because an engine allocates per declared item:
// in every instance (tables, globals, element entries, data segments, and
// functions in wazero's interpreter), or when it compiles (functions,
// locals, types). Each is far above what real modules declare (QuickJS's
// engine, Go wasip1 programs of 8 MB, C guests) and keeps what one module
// can make the host allocate to a few MB per instance; the numbers are
// measured in docs/RATIONALE.md.
const (
	maxTables          = 100
	maxFunctions       = 100_000
	maxLocals          = 1_000_000 // summed over every function body
	maxGlobals         = 10_000
	maxTypes           = 100_000
	maxElementSegments = 10_000
	maxElementEntries  = 100_000
	// maxDataSegments is Go's linker's own limit for wasm.
	maxDataSegments = 100_000
)

// admit runs admission and, when the module is admitted, returns the bytes
// engines compile (see wasmbin.Module.ForEngine).
func admit(wasm []byte) (ModuleInfo, []byte, error) {
	return admitFor(wasm, nil)
}

// admitFor is admit for a module driven by glue (nil: by ABI v1 or _start).
func admitFor(wasm []byte, glue *host.Glue) (ModuleInfo, []byte, error) {
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		return ModuleInfo{}, nil, &AdmissionError{Problem: "cannot parse module", Err: err}
	}
	info, err := admitDecoded(wasm, digestHex(wasm), m, glue)
	if err != nil {
		return info, nil, err
	}
	code, err := m.ForEngine(MaxTableElements)
	if err != nil {
		return info, nil, refuse("%v", err)
	}
	return info, code, nil
}

func inspect(wasm []byte) (ModuleInfo, *wasmbin.Module, error) {
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		return ModuleInfo{}, nil, &AdmissionError{Problem: "cannot parse module", Err: err}
	}
	info, err := admitDecoded(wasm, digestHex(wasm), m, nil)
	return info, m, err
}

// admitDecoded admits wasm, decoded as m, whose digest (digestHex) the
// caller has: hashing a large module (CPython's is 13 MB) costs
// milliseconds, and a warm start needs the digest once.
func admitDecoded(wasm []byte, digest string, m *wasmbin.Module, glue *host.Glue) (ModuleInfo, error) {
	var err error
	info := ModuleInfo{Digest: digest, Size: len(wasm)}

	info.Profile, err = admitImports(m, &info, glue)
	if err != nil {
		return info, err
	}
	for _, e := range m.Exports {
		info.Exports = append(info.Exports, Export{Name: e.Name, Kind: wasmbin.KindName(e.Kind)})
	}
	if err := admitMemory(m, &info); err != nil {
		return info, err
	}
	if err := admitTables(m, &info); err != nil {
		return info, err
	}
	if err := admitCounts(m); err != nil {
		return info, err
	}
	if err := admitReservedExports(m); err != nil {
		return info, err
	}
	if glue != nil {
		err = admitGlueExports(m, glue)
		info.Convention = Convention(glue.Name)
	} else {
		info.Convention, err = admitExports(m)
	}
	if err != nil {
		return info, err
	}
	if e, ok := m.Export(host.ExportInitialize); ok && e.Kind == wasmbin.KindFunc {
		info.Reactor = true
	}

	sections := m.CustomSections(ManifestSection)
	switch len(sections) {
	case 0:
	case 1:
		man, err := ParseManifest(sections[0].Payload)
		if err != nil {
			return info, &AdmissionError{Problem: "invalid " + ManifestSection + " section", Err: err}
		}
		info.Manifest = &man
	default:
		return info, refuse("%d %s sections; a module carries at most one", len(sections), ManifestSection)
	}
	return info, nil
}

func admitImports(m *wasmbin.Module, info *ModuleInfo, glue *host.Glue) (Profile, error) {
	wasi := wasiSignatures()
	for _, im := range m.Imports {
		info.Imports = append(info.Imports, Import{Module: im.Module, Name: im.Name, Kind: wasmbin.KindName(im.Kind)})
	}
	if len(m.Imports) == 0 {
		return ProfileStrict, nil
	}
	glued := map[string]string{}
	if glue != nil {
		for _, f := range glue.Imports {
			glued[f.Module+"."+f.Name] = hostSignature(f)
		}
	}
	profile := ProfileWASI
	for _, im := range m.Imports {
		where := im.Module + "." + im.Name
		if want, ok := glued[where]; ok && im.Kind == wasmbin.KindFunc {
			if int(im.TypeIndex) >= len(m.Types) {
				return "", refuse("import %s refers to type %d, which does not exist", where, im.TypeIndex)
			}
			if got := signature(m.Types[im.TypeIndex]); got != want {
				return "", refuse("import %s has signature %s; the %s glue defines %s", where, got, glue.Name, want)
			}
			profile = Profile(glue.Name)
			continue
		}
		if im.Module != host.WASIModule {
			return "", refuse("import %s (%s) is outside %s; only the virtual WASI may be imported",
				where, wasmbin.KindName(im.Kind), host.WASIModule)
		}
		if im.Kind != wasmbin.KindFunc {
			return "", refuse("import %s is a %s; only functions may be imported from %s",
				where, wasmbin.KindName(im.Kind), host.WASIModule)
		}
		want, ok := wasi[im.Name]
		if !ok {
			return "", refuse("import %s is not a %s function", where, host.WASIModule)
		}
		if int(im.TypeIndex) >= len(m.Types) {
			return "", refuse("import %s refers to type %d, which does not exist", where, im.TypeIndex)
		}
		if got := signature(m.Types[im.TypeIndex]); got != want {
			return "", refuse("import %s has signature %s; %s defines %s", where, got, host.WASIModule, want)
		}
	}
	if glue != nil {
		profile = Profile(glue.Name)
	}
	return profile, nil
}

// admitGlueExports checks that a module exports its memory and every
// function its glue calls, with the right signatures.
func admitGlueExports(m *wasmbin.Module, glue *host.Glue) error {
	var missing []string
	for _, want := range glue.Exports {
		e, ok := m.Export(want.Name)
		if !ok || e.Kind != wasmbin.KindFunc {
			missing = append(missing, want.Name)
			continue
		}
		ft, ok := m.FuncTypeOf(e.Index)
		if !ok {
			return refuse("export %s refers to function %d, which does not exist", want.Name, e.Index)
		}
		if got, w := signature(ft), hostSignature(host.Function{Params: want.Params, Results: want.Results}); got != w {
			return refuse("export %s has signature %s; the %s glue calls it as %s", want.Name, got, glue.Name, w)
		}
	}
	if e, ok := m.Export("memory"); !ok || e.Kind != wasmbin.KindMemory {
		missing = append(missing, "memory")
	}
	if len(missing) > 0 {
		return refuse("missing exports the %s glue needs: %s", glue.Name, strings.Join(missing, ", "))
	}
	return nil
}

func admitMemory(m *wasmbin.Module, info *ModuleInfo) error {
	mems := m.Memories
	for _, im := range m.Imports {
		if im.Kind == wasmbin.KindMemory {
			mems = append(mems, im.Limits)
		}
	}
	for _, l := range mems {
		if l.Shared {
			return refuse("shared memory (threads) is not allowed: it makes execution order nondeterministic")
		}
		if l.Is64 {
			return refuse("64-bit memory is not supported")
		}
	}
	if len(mems) > 1 {
		return refuse("%d memories; at most one is supported", len(mems))
	}
	if len(mems) == 1 {
		if mems[0].Min > MaxMemoryPages {
			return refuse("memory minimum of %d pages exceeds the 4 GiB of a 32-bit memory", mems[0].Min)
		}
		info.MemoryMinPages = uint32(mems[0].Min)
	}
	return nil
}

// admitTables bounds the tables: how many there are, and how large each is
// and all are together to begin with. Their size is charged to memory_pages
// when the module runs (see tooLargeToStart and the instrumented
// table.grow); these bounds refuse what no budget is meant to hold.
func admitTables(m *wasmbin.Module, info *ModuleInfo) error {
	if len(m.Tables) > maxTables {
		return refuse("%d tables; at most %d are allowed", len(m.Tables), maxTables)
	}
	var sum uint64
	for i, t := range m.Tables {
		if t.Limits.Shared || t.Limits.Is64 {
			return refuse("table %d is shared or 64-bit; only plain 32-bit tables are supported", i)
		}
		if t.Limits.Min > MaxTableElements {
			return refuse("table %d starts with %d elements; at most %d are allowed", i, t.Limits.Min, MaxTableElements)
		}
		sum += t.Limits.Min
	}
	if sum > MaxTableElements {
		return refuse("%d tables start with %d elements in total; at most %d are allowed (%d bytes of memory_pages at %d bytes each)",
			len(m.Tables), sum, MaxTableElements, MaxTableElements*TableElementBytes, TableElementBytes)
	}
	info.TableElements = sum
	return nil
}

// admitCounts refuses a module that declares more of anything than an
// engine should allocate for it (see maxTables and the rest).
func admitCounts(m *wasmbin.Module) error {
	counts := []struct {
		n    uint64
		max  uint64
		what string
	}{
		{uint64(len(m.Types)), maxTypes, "types"},
		{uint64(len(m.Funcs)), maxFunctions, "functions"},
		{m.Locals, maxLocals, "locals declared by the function bodies together"},
		{uint64(len(m.Globals)), maxGlobals, "globals"},
		{uint64(m.ElementSegments), maxElementSegments, "element segments"},
		{m.ElementEntries, maxElementEntries, "entries in the element segments together"},
		{uint64(len(m.Data)), maxDataSegments, "data segments"},
	}
	for _, c := range counts {
		if c.n > c.max {
			return refuse("%d %s; at most %d are allowed", c.n, c.what, c.max)
		}
	}
	return nil
}

// admitReservedExports refuses exports under the wg_ prefix other than ABI
// v1's: the host adds exports of its own there (the fuel and depth counters,
// the moved start function).
func admitReservedExports(m *wasmbin.Module) error {
	for _, e := range m.Exports {
		if !strings.HasPrefix(e.Name, "wg_") {
			continue
		}
		if !slices.ContainsFunc(abiV1, func(f abiExport) bool { return f.name == e.Name }) {
			return refuse("export %s: names beginning wg_ are reserved for ABI v1 and the host", e.Name)
		}
	}
	return nil
}

func admitExports(m *wasmbin.Module) (Convention, error) {
	attempted := false
	for _, f := range abiV1 {
		if _, ok := m.Export(f.name); ok {
			attempted = true
		}
	}
	if attempted {
		var missing []string
		for _, f := range abiV1 {
			e, ok := m.Export(f.name)
			if !ok || e.Kind != wasmbin.KindFunc {
				missing = append(missing, f.name)
				continue
			}
			ft, ok := m.FuncTypeOf(e.Index)
			if !ok {
				return "", refuse("export %s refers to function %d, which does not exist", f.name, e.Index)
			}
			want := "(" + f.params + ") -> (" + f.results + ")"
			if got := signature(ft); got != want {
				return "", refuse("export %s has signature %s; ABI v1 requires %s", f.name, got, want)
			}
		}
		if e, ok := m.Export("memory"); !ok || e.Kind != wasmbin.KindMemory {
			missing = append(missing, "memory")
		}
		if len(missing) > 0 {
			return "", refuse("missing ABI v1 exports: %s", strings.Join(missing, ", "))
		}
		return ConventionABIv1, nil
	}
	if e, ok := m.Export(host.ExportStart); ok && e.Kind == wasmbin.KindFunc {
		ft, _ := m.FuncTypeOf(e.Index)
		if got := signature(ft); got != "() -> ()" {
			return "", refuse("export _start has signature %s; a WASI command's _start is () -> ()", got)
		}
		return ConventionCommand, nil
	}
	return "", refuse("missing ABI exports: the module exports neither wg_execute (ABI v1) nor _start (WASI command)")
}

func valTypeName(t byte) string {
	switch t {
	case 0x7f:
		return "i32"
	case 0x7e:
		return "i64"
	case 0x7d:
		return "f32"
	case 0x7c:
		return "f64"
	case 0x7b:
		return "v128"
	case 0x70:
		return "funcref"
	case 0x6f:
		return "externref"
	}
	return fmt.Sprintf("0x%02x", t)
}

func typeList(ts []byte) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = valTypeName(t)
	}
	return strings.Join(names, " ")
}

func signature(ft wasmbin.FuncType) string {
	return "(" + typeList(ft.Params) + ") -> (" + typeList(ft.Results) + ")"
}

func hostSignature(f host.Function) string {
	p := make([]byte, len(f.Params))
	for i, t := range f.Params {
		p[i] = byte(t)
	}
	r := make([]byte, len(f.Results))
	for i, t := range f.Results {
		r[i] = byte(t)
	}
	return signature(wasmbin.FuncType{Params: p, Results: r})
}

// wasiSignatures maps each virtual WASI function to its signature.
var wasiSignatures = sync.OnceValue(func() map[string]string {
	fns := host.WASI()
	out := make(map[string]string, len(fns))
	for _, f := range fns {
		out[f.Name] = hostSignature(f)
	}
	return out
})

// PackManifest returns module wasm with its manifest section set to the given
// manifest JSON, replacing any previous one. The manifest is validated first
// and stored as given (not re-encoded), so it reads back byte for byte.
func PackManifest(wasm, manifest []byte) ([]byte, error) {
	if _, err := ParseManifest(manifest); err != nil {
		return nil, err
	}
	out, err := wasmbin.WithCustomSection(wasm, ManifestSection, manifest)
	if err != nil {
		return nil, fmt.Errorf("cannot pack manifest: %w", err)
	}
	return out, nil
}
