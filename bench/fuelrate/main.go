// Command fuelrate measures how many fuel units an execution burns per
// second of wall clock, for compiled Wasm guests and for JavaScript tools in
// the QuickJS engine, side by side in one run. The default fuel of each kind
// of executor is sized from these rates (docs/BENCHMARKS.md, Issue 14): it
// must cover the default timeout_ms with margin, so that fuel never stops
// ordinary work before the wall clock would.
//
// Every workload runs under limits far above what it needs, so nothing but
// its own end (or, for the endless loops, the fuel given) stops it. A call's
// time is the whole Execute, instance creation included: that is what
// timeout_ms bounds. Workloads run in interleaved rounds, so that a noisy
// stretch of a shared machine falls on every workload rather than on one.
//
// Run it from the module root, where the fixtures are:
//
//	go run ./bench/fuelrate [-rounds 5] [-engine wazero]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/bench/internal/report"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/runtime"
)

// workload is one measured execution, repeated.
type workload struct {
	kind, name string
	input      []byte
	limits     runtime.Limits
	want       runtime.OutcomeKind
	exec       func(context.Context, runtime.Input) (runtime.Outcome, error)

	calls []time.Duration
	fuel  uint64
}

func main() {
	rounds := flag.Int("rounds", 5, "measured calls of each workload (after one unmeasured call)")
	engineName := flag.String("engine", string(runtime.EngineWazero), "the engine that runs the Wasm guests and the QuickJS engine")
	flag.Parse()
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "fuelrate: -rounds must be at least 1")
		os.Exit(2)
	}
	start := time.Now()
	if err := run(context.Background(), runtime.EngineName(*engineName), *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "fuelrate:", err)
		os.Exit(1)
	}
	fmt.Printf("\n(fuelrate took %.1f s)\n", time.Since(start).Seconds())
}

func run(ctx context.Context, engineName runtime.EngineName, rounds int) error {
	eng, err := runtime.NewEngine(ctx, runtime.NewConfig().WithEngine(engineName))
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	ws, err := workloads(ctx, eng)
	if err != nil {
		return err
	}
	for i := range ws {
		if _, err := ws[i].once(ctx); err != nil {
			return err
		}
	}
	for range rounds {
		for i := range ws {
			d, err := ws[i].once(ctx)
			if err != nil {
				return err
			}
			ws[i].calls = append(ws[i].calls, d)
		}
	}
	fmt.Printf("Machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s; engine %s; %d measured calls each.\n\n",
		report.CPUModel(), goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH,
		goruntime.Version(), engineName, rounds)
	fmt.Println("| executor | workload | fuel_used per call | p50 call (ms) | fuel/s at p50 | fuel/s, fastest call |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	for _, w := range ws {
		p50, fastest := report.Percentile(w.calls, 50), slices.Min(w.calls)
		fmt.Printf("| %s | %s | %s | %.1f | %s | %s |\n", w.kind, w.name, report.Thousands(int64(w.fuel)),
			float64(p50)/float64(time.Millisecond), rate(w.fuel, p50), rate(w.fuel, fastest))
	}
	return nil
}

// once runs the workload and checks that it ended as it should, with the
// same fuel as before (fuel is deterministic).
func (w *workload) once(ctx context.Context) (time.Duration, error) {
	in := runtime.Input{Bytes: w.input, Digest: audit.DigestBytes(w.input), Limits: w.limits}
	t := time.Now()
	out, err := w.exec(ctx, in)
	d := time.Since(t)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s: %w", w.name, err)
	case out.Kind != w.want:
		return 0, fmt.Errorf("%s: ended %s (%s), want %s", w.name, out.Kind, out.Message, w.want)
	case w.fuel != 0 && out.FuelUsed != w.fuel:
		return 0, fmt.Errorf("%s: fuel_used %d, then %d", w.name, w.fuel, out.FuelUsed)
	}
	w.fuel = out.FuelUsed
	return d, nil
}

// rate is fuel per second, in millions.
func rate(fuel uint64, d time.Duration) string {
	return report.Thousands(int64(float64(fuel)/d.Seconds()/1e6)) + " M"
}

// generous limits let a workload run to its own end.
var generous = runtime.Limits{TimeoutMs: 600_000, Fuel: 1 << 62, MemoryPages: 1024,
	MaxOutputBytes: 64 << 20, MaxPayloadBytes: 64 << 20}

// endless limits stop an endless loop after fuel units.
func endless(fuel uint64) runtime.Limits {
	l := generous
	l.Fuel = fuel
	return l
}

func workloads(ctx context.Context, eng runtime.Engine) ([]workload, error) {
	wasm := func(file string) (runtime.Module, error) {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			return nil, err
		}
		return eng.Load(ctx, b)
	}
	js := func(file string) (*jstool.Tool, error) {
		b, err := jstool.BundleFile(file)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(file), ".js")
		return jstool.Load(ctx, eng, jstool.Spec{Bundle: b, Manifest: runtime.Manifest{ExecutorID: name, Version: "1.0.0"}})
	}
	var ws []workload
	for _, m := range []struct {
		file, name string
		input      []byte
		limits     runtime.Limits
		want       runtime.OutcomeKind
	}{
		{"loop.wasm", "endless loop (`loop.wasm`, stopped by 2 billion fuel)", []byte(`{}`), endless(2_000_000_000), runtime.FuelExhausted},
		{"spin.wasm", "tight counted loop (`spin.wasm`, n = 300 million)", []byte(`{"n":300000000}`), generous, runtime.Completed},
		{"sort.wasm", "C: parse, merge sort, print 200,000 integers (`sort.wasm`)", sortInput(200_000), generous, runtime.Completed},
		{"textstats.wasm", "Go: 1 MiB of text, runes, ToUpper, Fields (`textstats.wasm`)", textInput(1 << 20), generous, runtime.Completed},
	} {
		mod, err := wasm(m.file)
		if err != nil {
			return nil, err
		}
		ws = append(ws, workload{kind: "Wasm", name: m.name, input: m.input, limits: m.limits, want: m.want, exec: mod.Run})
	}
	tools := filepath.Join("jstool", "testdata")
	for _, t := range []struct {
		file, name string
		input      []byte
		limits     runtime.Limits
		want       runtime.OutcomeKind
	}{
		{filepath.Join(tools, "tools", "endless.js"), "endless loop `for (;;) {}` (`endless.js`, stopped by 2 billion fuel)", []byte(`{}`), endless(2_000_000_000), runtime.FuelExhausted},
		{filepath.Join(tools, "bench", "busy.js"), "integer loop (`busy.js`, n = 3 million)", []byte(`{"n":3000000}`), generous, runtime.Completed},
		{filepath.Join(tools, "bench", "work.js"), "JSON, regexps, Map, sort, strings (`work.js`, n = 40)", []byte(`{"n":40}`), generous, runtime.Completed},
	} {
		tool, err := js(t.file)
		if err != nil {
			return nil, err
		}
		ws = append(ws, workload{kind: "JS (QuickJS)", name: t.name, input: t.input, limits: t.limits, want: t.want, exec: tool.Execute})
	}
	return ws, nil
}

// sortInput is {"numbers":[...]} with n pseudo-random integers, canonical.
func sortInput(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := []byte(`{"numbers":[`)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, r.Int64N(2_000_000_000)-1_000_000_000, 10)
	}
	return append(b, "]}"...)
}

// textInput is {"text":"..."} with about n bytes of words, canonical.
func textInput(n int) []byte {
	words := []string{"fuel", "wasm", "gate", "Grüße", "timeout", "limit", "naïve", "engine"}
	var sb strings.Builder
	sb.WriteString(`{"text":"`)
	for i := 0; sb.Len() < n; i++ {
		sb.WriteString(words[i*5%len(words)])
		sb.WriteByte(' ')
	}
	sb.WriteString(`"}`)
	return []byte(sb.String())
}
