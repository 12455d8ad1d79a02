package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/jshost"
	"github.com/wasmgate/wasmgate/internal/testenv"
)

// The QuickJS benchmarks drive the engine through package host directly:
// package jstool imports this one.

// jsTool is a JS tool loaded into a reactor and snapshotted, as jstool.Tool
// holds it.
type jsTool struct {
	r     Reactor
	snap  *Snapshot
	entry jshost.JSEntry
}

// jsLoadLimits are jstool.LoadLimits().
var jsLoadLimits = Limits{Fuel: 2_000_000_000, TimeoutMs: 10_000}

func quickJSEngine(tb testing.TB) []byte {
	tb.Helper()
	wasm, err := os.ReadFile(filepath.Join("..", "..", "jstool", "engine", "quickjs.wasm"))
	if err != nil {
		tb.Skipf("no QuickJS engine (%v): run scripts/fetch-quickjs.sh", err)
	}
	return wasm
}

// jsReactor compiles the QuickJS engine on a fresh engine configured by cfg,
// through the tests' compilation cache.
func jsReactor(tb testing.TB, cfg Config) Reactor {
	tb.Helper()
	ctx := context.Background()
	wasm := quickJSEngine(tb)
	e, err := NewEngine(ctx, cfg.WithCompilationCacheDir(testenv.CacheDir()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close(context.Background()) })
	r, err := e.LoadReactor(ctx, wasm, jshost.QuickJSGlue())
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// loadJSTool loads src (an ES module exporting execute) on a fresh engine
// configured by cfg.
func loadJSTool(tb testing.TB, cfg Config, src string) jsTool {
	tb.Helper()
	return loadJSToolOn(tb, jsReactor(tb, cfg), src)
}

// loadJSToolOn loads src into r and snapshots it.
func loadJSToolOn(tb testing.TB, r Reactor, src string) jsTool {
	tb.Helper()
	ctx := context.Background()
	load := jshost.QuickJSLoad(jshost.JSTool{Name: "t.js", Source: []byte(src)})
	snap, out, err := r.Snapshot(ctx, nil, Input{Limits: jsLoadLimits}, Driver(load))
	if err != nil || out.Kind != Completed {
		tb.Fatalf("loading the tool: %v %v %s", err, out.Kind, out.Message)
	}
	entry, err := jshost.ParseJSLoad(out.Output)
	if err != nil {
		tb.Fatal(err)
	}
	return jsTool{r: r, snap: snap, entry: entry}
}

// run executes the tool once on input (canonical JSON) from its snapshot;
// the tool's console log is the Outcome's Stderr, as jstool reports it.
func (t jsTool) run(ctx context.Context, input string, lim Limits) (Outcome, error) {
	in := []byte(input)
	d := audit.DigestBytes(in)
	var res jshost.JSResult
	call := jshost.JSCall{Input: in, Seed: d, MaxOutput: int(lim.WithDefaults(DefaultLimits()).MaxOutputBytes)}
	o, err := t.r.Run(ctx, t.snap, Input{Bytes: in, Digest: d, Limits: lim}, Driver(jshost.QuickJSRun(t.entry, call, &res)))
	if err == nil && res.Log != "" {
		o.Stderr = []byte(res.Log)
	}
	return o, err
}

// runJSBench runs the tool on input b.N times, checking every result.
func runJSBench(b *testing.B, t jsTool, input string, lim Limits, want string) {
	ctx := context.Background()
	for b.Loop() {
		o, err := t.run(ctx, input, lim)
		if err != nil || o.Kind != Completed || string(o.Output) != want {
			b.Fatalf("%v %v %q %s", err, o.Kind, o.Output, o.Message)
		}
	}
}

// snapshotStarts are the two ways of starting an instance from a snapshot.
var snapshotStarts = []struct {
	name string
	cfg  Config
}{
	{"copy", Config{engine: EngineWazero, noRecycling: true}},
	{"cow", Config{engine: EngineWazero, copyOnWrite: true, noRecycling: true}},
	// An instance recycled from the previous execution (recycle.go).
	{"recycled", Config{engine: EngineWazero}},
}

// BenchmarkJSSnapshotStart: one execution of a trivial tool from its
// snapshot (the engine's ~1.4 MB memory), the image copied into a pooled
// buffer (copy) or mapped copy-on-write (cow, Linux only).
func BenchmarkJSSnapshotStart(b *testing.B) {
	benchSnapshotStart(b, `export function execute({text}) { return {text: text.trim()}; }`,
		`{"text":"  hello  "}`, `{"text":"hello"}`)
}

// BenchmarkJSSnapshotStartLarge: as BenchmarkJSSnapshotStart, for a tool
// whose snapshot holds ~8 MB of data of which an execution reads one value:
// what the copy costs grows with the snapshot, what copy-on-write costs
// with the pages an execution touches.
func BenchmarkJSSnapshotStartLarge(b *testing.B) {
	benchSnapshotStart(b, `const table = Array.from({length: 400000}, (_, i) => i * 2);
export function execute({i}) { return {v: table[i]}; }`, `{"i":1234}`, `{"v":2468}`)
}

func benchSnapshotStart(b *testing.B, src, input, want string) {
	for _, v := range snapshotStarts {
		b.Run(v.name, func(b *testing.B) {
			t := loadJSTool(b, v.cfg, src)
			if v.cfg.copyOnWrite {
				requireCOW(b, t.snap)
			}
			runJSBench(b, t, input, Limits{}, want)
			b.ReportMetric(float64(t.snap.MemoryBytes()), "snapshot-bytes")
		})
	}
}

// requireCOW fails unless this platform maps snapshots copy-on-write, so
// that the cow variant never silently measures the copy.
func requireCOW(tb testing.TB, snap *Snapshot) {
	tb.Helper()
	if _, ok := newInstanceMemory(pageSize, snap, true).(*memoryAllocator); ok {
		tb.Skip("copy-on-write snapshots are not available on this platform")
	}
}

// jsLoopIterations makes the loop dominate an execution: ~0.3 s
// instrumented, against ~0.5 ms for the rest of an execution.
const jsLoopIterations = 1_000_000

const jsLoopSource = `export function execute({n}) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003;
  return {s};
}`

// BenchmarkJSLoop: the cost of fuel metering on JavaScript, a QuickJS
// bytecode loop of jsLoopIterations iterations, instrumented (what wasmgate
// runs) against plain (the same engine module without fuel, depth or NaN
// instrumentation; the deadline still reaches it through the engine's
// interrupt handler).
func BenchmarkJSLoop(b *testing.B) {
	s := 0
	for i := range jsLoopIterations {
		s = (s + i*7) % 1000003
	}
	want := `{"s":` + strconv.Itoa(s) + `}`
	input := `{"n":` + strconv.Itoa(jsLoopIterations) + `}`
	lim := Limits{Fuel: 1 << 62, TimeoutMs: 600_000}
	for _, v := range []struct {
		name string
		cfg  Config
	}{
		{"instrumented", Config{engine: EngineWazero}},
		{"plain", Config{engine: EngineWazero, uninstrumented: true}},
	} {
		b.Run(v.name, func(b *testing.B) {
			runJSBench(b, loadJSTool(b, v.cfg, jsLoopSource), input, lim, want)
		})
	}
}
