package instrument

import (
	"bytes"
	"context"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmgate/wasmgate/internal/testenv"
)

// The harness runs modules the way the engine will, plain or instrumented,
// on both of wazero's engines. It speaks the two calling conventions of
// docs/ABI.md: ABI v1 (wg_alloc, wg_execute, wg_output_ptr, wg_output_len)
// and the WASI command (_start, stdin, stdout), here with wazero's own WASI
// standing in for the virtual one.

type engine struct {
	name string
	cfg  func() wazero.RuntimeConfig
	// cache keeps the test from compiling the same module once per run.
	cache wazero.CompilationCache
}

var engines = []engine{
	{"compiler", wazero.NewRuntimeConfigCompiler, compilerCache()},
	{"interpreter", wazero.NewRuntimeConfigInterpreter, wazero.NewCompilationCache()},
}

// compilerCache keeps the compiler's code in the tests' shared cache
// directory (keyed by wazero on the exact bytes and its version), so that a
// module and its instrumented forms (the 3 MB Go guest's take most of
// TestFixtures' time) compile once per machine rather than once per run.
func compilerCache() wazero.CompilationCache {
	if dir := testenv.CacheDir(); dir != "" {
		if c, err := wazero.NewCompilationCacheWithDir(filepath.Join(dir, "instrument-compiler")); err == nil {
			return c
		}
	}
	return wazero.NewCompilationCache()
}

// outcome is what a run shows the host.
type outcome struct {
	Status  int64  // wg_execute's result or the WASI exit code; -1 after a trap
	Output  string // ABI v1 output, or stdout
	Trapped bool
	// Exited: the guest called proc_exit, which unwinds every frame without
	// returning through the depth decrements.
	Exited bool
	// Instrumented runs only: what is left of the budget, and the call
	// depth when the run ended (0 after a normal return).
	Fuel  int64
	Depth int32
}

// runOpts describe one run.
type runOpts struct {
	input []byte
	// fuel is the budget of an instrumented run; 0 runs the module plain.
	fuel int64
	// memoryPages caps memory (0: 256 pages, the manifests' default).
	memoryPages uint32
}

// quick tells the long tests to cover less: with -short, and under the
// race detector, which finds nothing more in the larger sets.
func quick() bool { return testing.Short() || testenv.Race }

func fixture(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", name))
	require.NoError(t, err)
	return b
}

// forEngine is admission's part of the pipeline.
func forEngine(t testing.TB, wasm []byte) []byte {
	out, err := pipelineForEngine(wasm)
	require.NoError(t, err)
	return out
}

func instrumentFixture(t testing.TB, wasm []byte, opts Options) []byte {
	out, err := Instrument(forEngine(t, wasm), opts)
	require.NoError(t, err)
	return out
}

// run instantiates wasm and calls it by its convention.
func run(t testing.TB, eng engine, wasm []byte, ro runOpts) outcome {
	t.Helper()
	ctx := context.Background()
	pages := ro.memoryPages
	if pages == 0 {
		pages = 256
	}
	rt := wazero.NewRuntimeWithConfig(ctx, eng.cfg().
		WithCoreFeatures(api.CoreFeaturesV2).
		WithMemoryLimitPages(pages).
		WithCompilationCache(eng.cache))
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	cm, err := rt.CompileModule(ctx, wasm)
	require.NoError(t, err)

	instrumented := ro.fuel != 0
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs("guest").
		WithStdin(bytes.NewReader(ro.input)).
		WithStdout(&stdout).
		WithStderr(&stderr).
		WithRandSource(rand.New(rand.NewSource(1))).
		WithWalltime(func() (int64, int32) { return 946684800, 0 }, sys.ClockResolution(1)).
		WithNanotime(func() int64 { return 0 }, sys.ClockResolution(1))
	isCommand := false
	for _, e := range cm.ExportedFunctions() {
		if e.ExportNames()[0] == "_start" {
			isCommand = true
		}
	}
	if instrumented || isCommand {
		// The start function and _start run under the budget, once it is set.
		cfg = cfg.WithStartFunctions()
	}
	mod, err := rt.InstantiateModule(ctx, cm, cfg)
	var o outcome
	if err != nil {
		o.Trapped = true
		o.Status = -1
		return o
	}
	var fuel api.Global
	var depth api.Global
	if instrumented {
		fuel = mod.ExportedGlobal(FuelGlobal)
		depth = mod.ExportedGlobal(DepthGlobal)
		require.NotNil(t, fuel)
		require.NotNil(t, depth)
		fuel.(api.MutableGlobal).Set(uint64(ro.fuel))
	}
	// finish records the end of the run, whatever ended it.
	finish := func(err error) outcome {
		if err != nil {
			var exit *sys.ExitError
			if errors.As(err, &exit) {
				o.Status, o.Exited = int64(exit.ExitCode()), true
			} else {
				o.Trapped, o.Status = true, -1
			}
		}
		if instrumented {
			o.Fuel = int64(fuel.Get())
			o.Depth = int32(uint32(depth.Get()))
		}
		return o
	}
	if instrumented {
		if start := mod.ExportedFunction(StartExport); start != nil {
			if _, err := start.Call(ctx); err != nil {
				return finish(err)
			}
		}
	}
	if isCommand {
		_, err := mod.ExportedFunction("_start").Call(ctx)
		o.Output = stdout.String()
		return finish(err)
	}

	alloc := mod.ExportedFunction("wg_alloc")
	require.NotNil(t, alloc, "no wg_alloc")
	res, err := alloc.Call(ctx, uint64(len(ro.input)))
	if err != nil {
		return finish(err)
	}
	ptr := uint32(res[0])
	require.True(t, mod.Memory().Write(ptr, ro.input))
	res, err = mod.ExportedFunction("wg_execute").Call(ctx, uint64(ptr), uint64(len(ro.input)))
	if err != nil {
		return finish(err)
	}
	o.Status = int64(int32(res[0]))
	outPtr, err := mod.ExportedFunction("wg_output_ptr").Call(ctx)
	require.NoError(t, err)
	outLen, err := mod.ExportedFunction("wg_output_len").Call(ctx)
	require.NoError(t, err)
	out, ok := mod.Memory().Read(uint32(outPtr[0]), uint32(outLen[0]))
	require.True(t, ok)
	o.Output = string(out)
	return finish(nil)
}
