package jstool

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/jshost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// Errors of loading a tool, matched with errors.Is. Every one of them also
// matches sandbox.ErrNotAdmitted: the tool is not admitted as an executor.
const (
	// ErrToolNotFound: the requested export does not exist (TOOL_NOT_FOUND).
	ErrToolNotFound = sentinel.Error("TOOL_NOT_FOUND")
	// ErrToolInvalid: the export has no execute and is not a factory, or
	// the tool's code threw while it was loaded (TOOL_INVALID).
	ErrToolInvalid = sentinel.Error("TOOL_INVALID")
	// ErrLoadMemoryExhausted: loading the tool needed more memory than its
	// memory_pages allows (MEMORY_EXHAUSTED). The *LoadError says how much
	// it had when an allocation was refused.
	ErrLoadMemoryExhausted = sentinel.Error("MEMORY_EXHAUSTED")
)

// LoadError says why a tool was not admitted.
type LoadError struct {
	Tool string // the bundle's entry, for messages
	Code error  // ErrToolNotFound, ErrToolInvalid or ErrLoadMemoryExhausted
	Msg  string
	// MemoryPages is the memory limit the tool was loaded under, and
	// MemoryBytes the size its memory had reached when loading ended: for
	// ErrLoadMemoryExhausted, what a message says was used of what.
	MemoryPages uint32
	MemoryBytes uint64
}

func (e *LoadError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Code, e.Tool, e.Msg) }

func (e *LoadError) Is(target error) bool {
	return target == e.Code || target == sandbox.ErrNotAdmitted
}

// fuelPerMs is the fuel a toolscript's or a program's budget grants per
// millisecond of its wall clock (ScriptLimits(), ProgramLimits()): twice what
// the fastest-burning tool measured (an integer loop, about 6 billion units
// a second) spends in one (docs/BENCHMARKS.md, Issue 14).
const fuelPerMs = 12_000_000

// A JS tool's default limits (docs/BENCHMARKS.md, Issue 24). Fuel, not the
// clock, must end ordinary runaway code, so that a verdict does not depend
// on how busy the machine is: the default fuel covers ordinary heavy
// pure-JS work with room (SHA-3 of 300 KB in js-sha3 takes 9.7 billion),
// and the clock is a backstop set to ten times what that fuel lasts at the
// slowest rate measured on a loaded machine.
const (
	defaultFuel      = 20_000_000_000
	defaultTimeoutMs = 250_000
	// toolFuelPerMs keeps that ratio for a tool given only a time limit:
	// its unset fuel is this for each millisecond of its timeout_ms.
	toolFuelPerMs = defaultFuel / defaultTimeoutMs
	// defaultMemoryPages (128 MiB) holds what loading the largest real
	// packages measured needs (an @agentic tool on mathjs and zod: 28 MiB
	// after loading a 2.3 MB bundle) four times over. Loading and calls
	// share it: every call starts from the memory loading left.
	defaultMemoryPages = 2048
)

// loadLimits is LoadLimits's value, of which callers get copies.
var loadLimits = sandbox.Limits{TimeoutMs: 300_000, Fuel: 60_000_000_000}

// LoadLimits returns the limits that bound loading a tool (evaluating the engine's setup, the prelude
// and the tool's top-level code) before its snapshot is taken: fuel for
// several times the largest load measured (12 billion), and a clock ten
// times what that fuel lasts on a loaded machine. Memory is the tool's own
// memory_pages (see Spec.CallLimits), so that a snapshot fits the
// executions that start from it.
// The caller gets a copy.
func LoadLimits() sandbox.Limits { return loadLimits }

// ServedLimits returns the limits of an npm tool that a front serves to
// callers (over HTTP, MCP), for every field its manifest leaves unset: a
// wall clock of timeout, the front's limit on one call, and room for the
// inputs and outputs of ordinary tools. Fuel and memory stay unset, so a
// JS tool's defaults apply (its default fuel covers its timeout). It is the
// one place those figures are set.
func ServedLimits(timeout time.Duration) sandbox.Limits {
	return sandbox.Limits{
		TimeoutMs:       timeout.Milliseconds(),
		MaxPayloadBytes: 10 << 20,
		MaxOutputBytes:  10 << 20,
		MaxDepth:        64,
		MaxListItems:    100_000,
	}
}

// defaultLimits are a JS tool's limits where its route, manifest and caller
// set none: sandbox.DefaultLimits() but for fuel, time and memory, with an
// unset fuel being toolFuelPerMs for each millisecond of whatever
// timeout_ms applies.
func defaultLimits() sandbox.Limits {
	d := sandbox.DefaultLimits().WithFuelPerMs(toolFuelPerMs)
	d.Fuel, d.TimeoutMs, d.MemoryPages = defaultFuel, defaultTimeoutMs, defaultMemoryPages
	return d
}

// Spec is what Load needs to know about a tool.
type Spec struct {
	// Bundle is the tool's code (BundleFile, BundlePackage).
	Bundle Bundle
	// Export selects the tool among the bundle's exports ("" = the module,
	// when it exports execute, or its default export).
	Export string
	// Manifest is the tool's identity and limits.
	Manifest sandbox.Manifest
	// CallLimits are the limits the tool's calls will run under over its
	// manifest's, where the caller knows them when loading: a command's
	// flags, a registry's routes to the tool, a front's configuration.
	// Loading takes the largest memory_pages among them (each over the
	// manifest's and the defaults), since every call starts from the
	// memory loading left; none means the manifest's, else the default.
	CallLimits []sandbox.Limits
	// Engine is the QuickJS engine module; nil means the embedded one.
	Engine []byte
}

// Tool is a JavaScript tool loaded into the QuickJS engine and snapshotted.
// It implements the pipeline's Executor interface and is safe for concurrent
// use: each execution runs in a fresh engine instance started from the
// snapshot.
type Tool struct {
	reactor  sandbox.Reactor
	snap     *sandbox.Snapshot
	entry    jshost.JSEntry
	manifest sandbox.Manifest
	digest   string
	loadFuel uint64
	load     func(context.Context, host.Instance) ([]byte, error)
}

// Load admits the engine, evaluates the tool in it once and keeps the
// snapshot every execution starts from.
//
// # Errors
//
// A *LoadError (matching
// sandbox.ErrNotAdmitted) when the tool throws while loading, or its export
// is missing or has no execute; an *AdmissionError when the engine module
// is refused.
func Load(ctx context.Context, engine sandbox.Engine, spec Spec) (*Tool, error) {
	wasm := spec.Engine
	if wasm == nil {
		var err error
		if wasm, err = EngineModule(); err != nil {
			return nil, err
		}
	}
	reactor, err := engine.LoadReactor(ctx, wasm, jshost.QuickJSGlue())
	if err != nil {
		return nil, fmt.Errorf("the QuickJS engine module: %w", err)
	}
	name := path.Base(spec.Bundle.Entry)
	if name == "" || name == "." || name == "/" {
		name = "tool.js"
	}
	limits := LoadLimits()
	limits.MemoryPages = loadMemoryPages(spec)
	load := jshost.QuickJSLoad(jshost.JSTool{Name: name, Source: spec.Bundle.Source, Export: spec.Export})
	t := &Tool{reactor: reactor, manifest: spec.Manifest, digest: toolDigest(wasm, spec), load: load}
	// A load whose tool threw fails the run rather than completing it, so
	// that the runtime tells a throw that followed a refused memory.grow
	// (MemoryExhausted) from any other: QuickJS reports running out of
	// memory as whatever it was doing said, "out of memory", "null", even
	// a SyntaxError from a parser that could not allocate.
	var threw *jshost.ToolLoadError
	var memBytes uint64
	drive := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		out, err := load(ctx, inst)
		if m := inst.Memory(); m != nil {
			memBytes = uint64(m.Size())
		}
		if err != nil {
			return nil, err
		}
		if _, perr := jshost.ParseJSLoad(out); errors.As(perr, &threw) {
			return nil, &host.GuestFailure{Msg: threw.Message}
		}
		return out, nil
	}
	// The snapshot and what the load said come from the engine's on-disk
	// cache when an earlier process loaded the same tool: the tool's digest
	// names the engine module, the prelude, the source and the export, and
	// name is the module name the tool is evaluated under.
	snap, out, err := sandbox.CachedSnapshot(ctx, reactor, "jstool.Load "+t.digest+" "+name, sandbox.Input{Limits: limits}, sandbox.Driver(drive))
	if err != nil {
		return nil, err
	}
	switch {
	case out.Kind == sandbox.MemoryExhausted:
		return nil, &LoadError{Tool: spec.Bundle.Entry, Code: ErrLoadMemoryExhausted, MemoryPages: limits.MemoryPages, MemoryBytes: memBytes,
			Msg: fmt.Sprintf("loading the tool ran out of memory: memory_pages is %d (%s), its memory had grown to %s when more was refused",
				limits.MemoryPages, mib(uint64(limits.MemoryPages)*pageBytes), mib(memBytes))}
	case out.Kind == sandbox.Failed && threw != nil:
		return nil, loadFailure(spec.Bundle.Entry, threw)
	case out.Kind != sandbox.Completed:
		return nil, &LoadError{Tool: spec.Bundle.Entry, Code: ErrToolInvalid,
			Msg: fmt.Sprintf("loading the tool stopped: %s (%s)", out.Kind, out.Message)}
	}
	t.entry, err = jshost.ParseJSLoad(out.Output)
	var tle *jshost.ToolLoadError
	if errors.As(err, &tle) {
		// A load cached by an earlier build, which completed with the
		// tool's problem.
		return nil, loadFailure(spec.Bundle.Entry, tle)
	}
	if err != nil {
		return nil, err
	}
	t.snap, t.loadFuel = snap, out.FuelUsed
	t.manifest = describedBy(spec.Manifest, t.entry.Info)
	return t, nil
}

// loadFailure is the error of a tool that threw while it was loaded, or
// whose export is missing or not a tool.
func loadFailure(entry string, tle *jshost.ToolLoadError) *LoadError {
	e := &LoadError{Tool: entry, Code: ErrToolInvalid, Msg: tle.Message}
	switch tle.Kind {
	case "notfound":
		e.Code = ErrToolNotFound
	case "error":
		e.Msg = "the tool threw while it was loaded: " + tle.Message
	}
	return e
}

// loadMemoryPages is the memory limit a tool loads under: the largest
// memory_pages among spec.CallLimits, each over the manifest's and the
// defaults, else the manifest's, else the default.
func loadMemoryPages(spec Spec) uint32 {
	own := spec.Manifest.Limits.WithDefaults(defaultLimits())
	if len(spec.CallLimits) == 0 {
		return own.MemoryPages
	}
	var pages uint32
	for _, l := range spec.CallLimits {
		pages = max(pages, l.WithDefaults(own).MemoryPages)
	}
	return pages
}

// pageBytes is the size of a Wasm memory page.
const pageBytes = 65536

// mib writes a size in bytes as MiB for messages.
func mib(b uint64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// describedBy is manifest m with the title, description and schemas the
// tool says it has where m leaves them out: what the manifest declares
// wins.
func describedBy(m sandbox.Manifest, info ToolInfo) sandbox.Manifest {
	if m.Title == "" {
		m.Title = info.Title
	}
	if m.Description == "" {
		m.Description = info.Description
	}
	if len(m.InputSchema) == 0 {
		m.InputSchema = info.InputSchema
	}
	if len(m.OutputSchema) == 0 {
		m.OutputSchema = info.OutputSchema
	}
	return m
}

// toolDigest identifies a JS executor: the engine module, wasmgate's
// prelude, the bundled source and the export, together.
func toolDigest(engine []byte, spec Spec) string {
	var b []byte
	b = append(b, "wasmgate-js-tool-v1\n"...)
	b = append(b, audit.Digest(engine)...)
	b = append(b, '\n')
	b = append(b, jshost.QuickJSPreludeDigest()...)
	b = append(b, '\n')
	b = append(b, audit.Digest(spec.Bundle.Source)...)
	b = append(b, '\n')
	b = append(b, spec.Export...)
	return audit.Digest(b)
}

// Manifest implements the pipeline's Executor: the Spec's manifest, with
// the title, description, input schema and output schema the tool says it
// has (Info) where the manifest leaves them out.
func (t *Tool) Manifest() sandbox.Manifest { return t.manifest }

// ToolInfo is what a tool object says of itself: its title, description
// and schemas, converted to JSON Schema when it was loaded, and notes on
// what could not be read or converted.
type ToolInfo = jshost.JSToolInfo

// Info is what the tool said of itself when it was loaded, before its
// manifest overrides it. A factory says nothing: its tool exists only in
// an execution.
func (t *Tool) Info() ToolInfo { return t.entry.Info }

// ModuleDigest implements the pipeline's Executor.
func (t *Tool) ModuleDigest() string { return t.digest }

// SnapshotBytes is the size of the memory every execution starts from.
func (t *Tool) SnapshotBytes() int { return t.snap.MemoryBytes() }

// LoadFuel is the fuel loading the tool took (not charged to executions).
func (t *Tool) LoadFuel() uint64 { return t.loadFuel }

// DefaultLimits are the limits the tool runs under where its route, its
// manifest and the caller's Input set none. They differ from
// sandbox.DefaultLimits() in fuel, time and memory; the pipeline resolves a
// JS tool's limits with these.
func (t *Tool) DefaultLimits() sandbox.Limits { return defaultLimits() }

// Execute implements the pipeline's Executor: one execution, without an
// env.
func (t *Tool) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	return t.ExecuteWithEnv(ctx, in, nil)
}

// LogEntry is one console call of a tool: its level ("debug" for
// console.debug and trace, "info" for log and info, "warn", "error"), its
// message, and its data (the JSON of the object in console.log("message",
// {...}), else nil).
type LogEntry = jshost.JSLogEntry

// Exception is what an exception that ended an execution says of itself:
// an Error's name and message, its code when that is a string, its
// recoverable flag when that is a boolean, and the whole description with
// the tool's stack frames.
type Exception = jshost.JSException

// Observer receives what an execution of a tool reports besides its
// Outcome. It is for the caller only: nothing it receives is audited, and
// observing an execution changes nothing in it (output, log and fuel are
// the same with or without an Observer).
type Observer struct {
	// Log, when set, is called for each console call as the tool makes it,
	// in order, until the 64 KiB console log is full. It runs on the
	// goroutine running the tool, which waits for it: it should not block.
	Log func(LogEntry)
	// Threw, when set, is called once before Execute returns when the
	// execution ended in an exception the tool threw (or a factory that
	// gave no tool: Code "TOOL_INVALID").
	Threw func(Exception)
}

type observerKey struct{}

// WithObserver returns ctx carrying o for the executions of JS tools
// reached through ctx, the pipeline's included.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

// ExecuteWithEnv runs the tool once on canonical input, passing env (a JSON
// object, or nil) to a factory tool as its configuration. The pipeline calls
// it with a request's env (pipeline.ActionRequest.Env), which it audits as a
// digest; keys and values are never logged or audited. The tool's console
// output is the Outcome's Stderr; the Observer ctx carries (WithObserver)
// sees it as it is written.
func (t *Tool) ExecuteWithEnv(ctx context.Context, in sandbox.Input, env []byte) (sandbox.Outcome, error) {
	lim := in.Limits.WithDefaults(defaultLimits())
	in.Limits = lim
	obs, _ := ctx.Value(observerKey{}).(Observer)
	var res jshost.JSResult
	drive := jshost.QuickJSRun(t.entry, jshost.JSCall{Input: in.Bytes, Env: env, Seed: in.Digest, MaxOutput: int(lim.MaxOutputBytes), Log: obs.Log}, &res)
	out, err := t.reactor.Run(ctx, t.snap, in, sandbox.Driver(drive))
	if err != nil {
		return out, err
	}
	out.Stderr = []byte(res.Log)
	if res.Exception != nil && obs.Threw != nil && out.Kind == sandbox.Failed {
		obs.Threw(*res.Exception)
	}
	return out, nil
}

// ExecuteCold runs the tool once without its snapshot: the engine is set up
// and the tool evaluated in a fresh instance, which then executes. It gives
// the same output as Execute (FuelUsed includes loading) and exists to
// measure what the snapshot saves.
func (t *Tool) ExecuteCold(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	lim := in.Limits.WithDefaults(defaultLimits())
	var res jshost.JSResult
	drive := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		out, err := t.load(ctx, inst)
		if err != nil {
			return nil, err
		}
		entry, err := jshost.ParseJSLoad(out)
		if err != nil {
			return nil, err
		}
		return jshost.QuickJSRun(entry, jshost.JSCall{Input: in.Bytes, Seed: in.Digest, MaxOutput: int(lim.MaxOutputBytes)}, &res)(ctx, inst)
	}
	cold := in
	cold.Limits = lim
	cold.Limits.Fuel = lim.Fuel + LoadLimits().Fuel
	cold.Limits.TimeoutMs = lim.TimeoutMs + LoadLimits().TimeoutMs
	out, err := t.reactor.Run(ctx, nil, cold, drive)
	if err != nil {
		return out, err
	}
	out.Stderr = []byte(res.Log)
	return out, nil
}
