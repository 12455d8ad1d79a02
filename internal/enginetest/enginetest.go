// Package enginetest gives tests the engines of this build: one of each per
// test binary, compiling through the compilation cache every test binary
// shares (testenv.CacheDir), and the engine matrix that runs a test on
// every one of them.
//
// Compiling a large module is most of what an engine costs a test (the
// QuickJS engine module takes seconds under the race detector, a 3 MB Go
// guest more), so tests take the shared engines unless they need one of
// their own: to close it, to configure it, or to count what it compiles.
package enginetest

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
)

// Config is the default configuration of engine name, with the tests'
// compilation cache.
func Config(name sandbox.EngineName) sandbox.Config {
	return sandbox.NewConfig().WithEngine(name).WithCompilationCacheDir(testenv.CacheDir())
}

var (
	mu     sync.Mutex
	shared = map[sandbox.EngineName]sandbox.Engine{}
)

// Engine returns the test binary's engine name, made on first use and never
// closed (it lives as long as the binary). It is safe for concurrent use, as
// every Engine is; do not close it.
func Engine(t testing.TB, name sandbox.EngineName) sandbox.Engine {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if e, ok := shared[name]; ok {
		return e
	}
	e, err := sandbox.NewEngine(context.Background(), Config(name))
	if err != nil {
		t.Fatalf("engine %s: %v", name, err)
	}
	shared[name] = e
	return e
}

// New returns an engine of t's own, with the tests' compilation cache,
// closed when t ends: for a test that closes it, or must see it start
// empty.
func New(t testing.TB, name sandbox.EngineName) sandbox.Engine {
	t.Helper()
	e, err := sandbox.NewEngine(context.Background(), Config(name))
	if err != nil {
		t.Fatalf("engine %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// All returns the shared engine of every engine of this build, in
// sandbox.Engines' order: for tests that compare the engines' results.
func All(t testing.TB) []sandbox.Engine {
	t.Helper()
	var all []sandbox.Engine
	for _, name := range sandbox.Engines() {
		all = append(all, Engine(t, name))
	}
	return all
}

// Each is the engine matrix: it runs f on the shared engine of every engine
// of this build (wazero's compiler and interpreter, and wasmtime in builds
// with it), each in a subtest named after the engine, one after the other,
// so that code after Each may compare what the subtests saw.
func Each(t *testing.T, f func(t *testing.T, e sandbox.Engine)) {
	t.Helper()
	for _, name := range sandbox.Engines() {
		t.Run(string(name), func(t *testing.T) { f(t, Engine(t, name)) })
	}
}

// EachCompared is Each over the engines of JSEnginesCompared: for tests
// that compare the engines' QuickJS runs.
func EachCompared(t *testing.T, f func(t *testing.T, e sandbox.Engine)) {
	t.Helper()
	for _, name := range JSEnginesCompared() {
		t.Run(string(name), func(t *testing.T) { f(t, Engine(t, name)) })
	}
}

// JSEngines are the engines the tests of how JS tools, programs and
// toolscripts behave run QuickJS on: the compiled ones of the build
// (wazero's compiler, and wasmtime in builds with it). wazero's
// interpreter runs QuickJS ten times slower without the race detector and
// about 50 times slower with it (a load with Node's built-ins takes over a
// minute there), and what it could get wrong is what the engines compute,
// not how a tool behaves: it runs every form of JS tool and toolscript in
// the cross-engine suite (pipeline/crossengine_test.go), and the tests
// that compare the engines' results take it from JSEnginesCompared.
func JSEngines() []sandbox.EngineName {
	var names []sandbox.EngineName
	for _, name := range sandbox.Engines() {
		if name != sandbox.EngineWazeroInterp {
			names = append(names, name)
		}
	}
	return names
}

// JSEnginesCompared are the engines a test that compares the engines'
// results of QuickJS runs it on (the "…IsDeterministicOnEveryEngine"
// tests): every engine of the build with wasmtime, which `make
// test-wasmtime` runs (without the race detector) and where the
// cross-engine suite runs too; in the default build, the compiled ones
// alone (JSEngines). There, wazero's interpreter would run QuickJS again,
// ten times slower than the compiler (about 50 times under the race
// detector), what the wasmtime build's runs already compare, in `make
// test`, which runs beside `make test-wasmtime`; and under the race
// detector it has nothing to watch that the compiler's runs do not.
func JSEnginesCompared() []sandbox.EngineName {
	if testenv.Race || !slices.Contains(sandbox.Engines(), sandbox.EngineWasmtime) {
		return JSEngines()
	}
	return sandbox.Engines()
}
