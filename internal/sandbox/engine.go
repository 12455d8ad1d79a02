// Package sandbox runs admitted Wasm modules in fresh, I/O-free instances
// under limits, and tells the caller what happened as an Outcome.
//
// It owns the engines (wazero by default; wasmtime in builds with the
// wasmtime tag), the compile cache, admission (Inspect) and the
// classification of traps. It knows nothing about JSON actions: its input is
// bytes and limits, its output bytes and an Outcome.
package sandbox

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// EngineName selects a Wasm engine.
type EngineName string

const (
	// EngineWazero is wazero's optimizing compiler (the default).
	EngineWazero EngineName = "wazero"
	// EngineWazeroInterp is wazero's interpreter: slower, but available on
	// every platform and independent of the compiler's code generation.
	EngineWazeroInterp EngineName = "wazero-interp"
	// EngineWasmtime is Wasmtime (Cranelift), through cgo. It is only in
	// builds with the wasmtime build tag: see README.
	EngineWasmtime EngineName = "wasmtime"
)

// Engines lists the engines this build can run.
func Engines() []EngineName {
	names := []EngineName{EngineWazero, EngineWazeroInterp}
	if wasmtimeBuilt {
		names = append(names, EngineWasmtime)
	}
	return names
}

// ErrUnknownEngine is returned by NewEngine for a name not in Engines().
const ErrUnknownEngine = sentinel.Error("runtime: unknown engine")

// ErrEngineNotBuilt is returned by NewEngine for an engine that exists but
// is left out of this build (wasmtime without its build tag). It also
// matches ErrUnknownEngine.
const ErrEngineNotBuilt = sentinel.Error("runtime: engine not in this build")

// engineNotBuiltError names the engine and how to get it.
type engineNotBuiltError struct{ name EngineName }

func (e *engineNotBuiltError) Error() string {
	return fmt.Sprintf("engine %q is not in this build: rebuild with -tags %s (cgo; see README)", e.name, e.name)
}

func (e *engineNotBuiltError) Is(target error) bool {
	return target == ErrEngineNotBuilt || target == ErrUnknownEngine
}

// Config configures an Engine. It is immutable: every With method returns a
// copy, and errors are reported by NewEngine, not by the With methods.
type Config struct {
	engine   EngineName
	cacheDir string

	// For the side-by-side benchmarks only: run modules as admitted, without
	// instrumentation (no fuel, no depth limit, no NaN canonicalization), and
	// stop them at the deadline with wazero's context watcher when
	// watchContext is set.
	uninstrumented bool
	watchContext   bool
	// For the snapshot benchmarks only: start instances from a snapshot by
	// mapping its image copy-on-write instead of copying it (Linux; a copy
	// elsewhere). See cowAllocator.
	copyOnWrite bool
	// For the wasmtime benchmarks only: meter with wasmtime's own fuel
	// (Config.SetConsumeFuel) instead of ours; implies uninstrumented.
	nativeFuel bool
	// For the wasmtime benchmarks only: no epoch interruption, so no
	// deadline at all.
	noEpoch bool
	// noRecycling: every execution gets a fresh instance (WithoutRecycling).
	noRecycling bool
}

// WithoutRecycling gives every execution a freshly instantiated instance,
// never a recycled one (see runtime/recycle.go): the reference the
// recycling is tested and measured against. Results are the same either
// way.
func (c Config) WithoutRecycling() Config {
	c.noRecycling = true
	return c
}

// WithoutInstrumentationForBenchmarks runs modules as admitted: no fuel, no
// depth limit, no NaN canonicalization and no deadline. It exists for the
// side-by-side fuel benchmarks of packages outside this one (pyhost's,
// through bench/fuelratio); nothing that gives a verdict may use it.
func (c Config) WithoutInstrumentationForBenchmarks() Config {
	c.uninstrumented = true
	return c
}

// NewConfig returns the default configuration: wazero's compiler, no on-disk
// compilation cache.
func NewConfig() Config { return Config{engine: EngineWazero} }

// WithEngine selects the engine by name.
func (c Config) WithEngine(name EngineName) Config {
	c.engine = name
	return c
}

// WithCompilationCacheDir keeps compiled code in dir across processes, so a
// large module is compiled once per machine instead of once per process,
// and with it what else a warm start would rebuild: the instrumented form
// of a reactor (the QuickJS engine) and the snapshots CachedSnapshot takes
// (a JS tool's), each verified when read (see diskcache.go).
func (c Config) WithCompilationCacheDir(dir string) Config {
	c.cacheDir = dir
	return c
}

// Engine admits, compiles and runs modules.
//
// An Engine is safe for concurrent use. Compiled modules are cached by the
// BLAKE3 digest of their bytes for the Engine's lifetime.
type Engine interface {
	// Name is the engine's name.
	Name() EngineName
	// Load admits and compiles a module, or returns it from the cache.
	//
	// # Errors
	//
	// An *AdmissionError (errors.Is ErrNotAdmitted) when admission refuses
	// the module or the engine cannot compile it.
	Load(ctx context.Context, wasm []byte) (Module, error)
	// LoadReactor admits and compiles a module driven by glue (the QuickJS
	// engine), or returns it from the cache. See Reactor.
	//
	// # Errors
	//
	// As Load.
	LoadReactor(ctx context.Context, wasm []byte, glue host.Glue) (Reactor, error)
	// Close releases every compiled module. It succeeds even with a
	// cancelled ctx.
	Close(ctx context.Context) error
}

// Module is an admitted, compiled module. Each Run uses a fresh instance.
type Module interface {
	Info() ModuleInfo
	// Run executes the module once on a fresh instance.
	//
	// # Errors
	//
	// Everything the guest can cause is reported in the Outcome. An error
	// means the run could not be judged: ctx was cancelled by the caller,
	// or the engine failed.
	Run(ctx context.Context, in Input) (Outcome, error)
}

// Input is one execution's input.
type Input struct {
	// Bytes is the canonical JSON input.
	Bytes []byte
	// Digest is the BLAKE3-256 of Bytes; it seeds the guest's random_get.
	Digest [32]byte
	// Limits bound the execution; zero fields take DefaultLimits().
	Limits Limits
}

// Request is what an executor that takes the whole request (a Python
// executor class) gets beside its Input: the action, trace id and time of
// the request it runs for.
type Request struct {
	Action  string `json:"action"`
	TraceID string `json:"trace_id"`
	TsUTC   string `json:"ts_utc"`
}

// NewEngine returns the configured engine.
func NewEngine(ctx context.Context, cfg Config) (Engine, error) {
	if cfg.cacheDir != "" {
		if err := os.MkdirAll(cfg.cacheDir, 0o700); err != nil {
			return nil, fmt.Errorf("compilation cache directory: %w", err)
		}
	}
	if _, err := ParseEngineName(string(cfg.engine)); err != nil {
		return nil, err
	}
	if cfg.engine == EngineWasmtime {
		return newWasmtimeEngine(ctx, cfg)
	}
	return newWazeroEngine(ctx, cfg)
}

// ParseEngineName checks a user-supplied engine name.
//
// # Errors
//
// ErrUnknownEngine for a name no build knows, listing the available ones;
// ErrEngineNotBuilt (which also matches ErrUnknownEngine) for wasmtime in a
// build without it, saying how to get it.
func ParseEngineName(s string) (EngineName, error) {
	if slices.Contains(Engines(), EngineName(s)) {
		return EngineName(s), nil
	}
	if EngineName(s) == EngineWasmtime {
		return "", &engineNotBuiltError{name: EngineWasmtime}
	}
	names := make([]string, 0, len(Engines()))
	for _, e := range Engines() {
		names = append(names, string(e))
	}
	return "", fmt.Errorf("%w %q (available: %s)", ErrUnknownEngine, s, strings.Join(names, ", "))
}

func digestHex(b []byte) string { return audit.Digest(b) }
