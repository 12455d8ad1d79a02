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
// With -load N it first starts N processes that spin on a CPU each (a
// busy loop, as stress(1) makes), for the whole measurement: the loaded
// machine, on which the defaults must still let fuel bind before the clock
// (docs/BENCHMARKS.md, Issue 24). The table it ends with says, for each
// kind of executor, how long its default fuel lasts at the slowest rate
// measured and how many times that its default timeout_ms is.
//
// Run it from the module root, where the fixtures are:
//
//	go run ./bench/fuelrate [-rounds 5] [-engine wazero] [-load 2]
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/bench/internal/report"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// workload is one measured execution, repeated.
type workload struct {
	kind, name string
	input      []byte
	limits     sandbox.Limits
	want       sandbox.OutcomeKind
	exec       func(context.Context, sandbox.Input) (sandbox.Outcome, error)

	calls []time.Duration
	fuel  uint64
}

// spinEnv, set in a child process, makes it spin until its parent ends.
const spinEnv = "WASMGATE_FUELRATE_SPIN"

func main() {
	if os.Getenv(spinEnv) != "" {
		spin()
	}
	rounds := flag.Int("rounds", 5, "measured calls of each workload (after one unmeasured call)")
	engineName := flag.String("engine", string(sandbox.EngineWazero), "the engine that runs the Wasm guests and the QuickJS engine")
	load := flag.Int("load", 0, "busy-loop processes to run meanwhile (2 on a 2-core machine: the loaded measurement)")
	flag.Parse()
	if *rounds < 1 || *load < 0 {
		fmt.Fprintln(os.Stderr, "fuelrate: -rounds must be at least 1, -load at least 0")
		os.Exit(2)
	}
	stop, err := spinners(*load)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuelrate:", err)
		os.Exit(1)
	}
	defer stop()
	start := time.Now()
	if err := run(context.Background(), sandbox.EngineName(*engineName), *rounds, *load); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, "fuelrate:", err)
		os.Exit(1)
	}
	fmt.Printf("\n(fuelrate took %.1f s)\n", time.Since(start).Seconds())
}

// spinners starts n processes of this program that each spin on one CPU,
// and returns what ends them.
func spinners(n int) (stop func(), err error) {
	var procs []*os.Process
	stop = func() {
		for _, p := range procs {
			_ = p.Kill()
			_, _ = p.Wait()
		}
		procs = nil
	}
	self, err := os.Executable()
	if err != nil {
		return stop, err
	}
	for range n {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), spinEnv+"=1")
		if err := cmd.Start(); err != nil {
			stop()
			return stop, fmt.Errorf("starting a busy loop: %w", err)
		}
		procs = append(procs, cmd.Process)
	}
	return stop, nil
}

// spin busy-loops on one CPU until the parent process is gone (it is
// killed, or it died and this process was re-parented).
func spin() {
	goruntime.GOMAXPROCS(1)
	parent := os.Getppid()
	for x := uint64(1); ; x++ {
		x = x*6364136223846793005 + 1442695040888963407
		if x%(1<<24) == 0 && os.Getppid() != parent {
			os.Exit(0)
		}
	}
}

func run(ctx context.Context, engineName sandbox.EngineName, rounds, load int) error {
	eng, err := sandbox.NewEngine(ctx, sandbox.NewConfig().WithEngine(engineName))
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
	fmt.Printf("Machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s; engine %s; %d measured calls each; %d busy-loop processes; load average %s.\n\n",
		report.CPUModel(), goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH,
		goruntime.Version(), engineName, rounds, load, loadAverage())
	fmt.Println("| executor | workload | fuel_used per call | p50 call (ms) | fuel/s at p50 | fuel/s, fastest call | fuel/s, slowest call |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|")
	slowest := map[string]float64{}
	for _, w := range ws {
		p50, fastest, slow := report.Percentile(w.calls, 50), slices.Min(w.calls), slices.Max(w.calls)
		fmt.Printf("| %s | %s | %s | %.1f | %s | %s | %s |\n", w.kind, w.name, report.Thousands(int64(w.fuel)),
			float64(p50)/float64(time.Millisecond), rate(w.fuel, p50), rate(w.fuel, fastest), rate(w.fuel, slow))
		r := float64(w.fuel) / slow.Seconds()
		if s, ok := slowest[w.kind]; !ok || r < s {
			slowest[w.kind] = r
		}
	}
	// Fuel binds before the clock when the default fuel runs out well
	// within the default timeout even at the slowest rate measured.
	fmt.Println()
	fmt.Println("| executor | default fuel | slowest fuel/s | default fuel lasts (s) | default timeout_ms (s) | timeout / that |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, k := range []struct {
		kind string
		lim  sandbox.Limits
	}{
		{"Wasm", sandbox.Limits{}.WithDefaults(sandbox.DefaultLimits())},
		{"JS (QuickJS)", sandbox.Limits{}.WithDefaults(new(jstool.Tool).DefaultLimits())},
	} {
		r := slowest[k.kind]
		lasts := float64(k.lim.Fuel) / r
		timeout := float64(k.lim.TimeoutMs) / 1000
		fmt.Printf("| %s | %s | %s | %.1f | %.0f | %.1fx |\n", k.kind, report.Thousands(int64(k.lim.Fuel)),
			report.Thousands(int64(r/1e6))+" M", lasts, timeout, timeout/lasts)
	}
	return nil
}

// loadAverage is the machine's 1-minute load average, for the report.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// once runs the workload and checks that it ended as it should, with the
// same fuel as before (fuel is deterministic).
func (w *workload) once(ctx context.Context) (time.Duration, error) {
	in := sandbox.Input{Bytes: w.input, Digest: audit.DigestBytes(w.input), Limits: w.limits}
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
var generous = sandbox.Limits{TimeoutMs: 600_000, Fuel: 1 << 62, MemoryPages: 1024,
	MaxOutputBytes: 64 << 20, MaxPayloadBytes: 64 << 20}

// endless limits stop an endless loop after fuel units.
func endless(fuel uint64) sandbox.Limits {
	l := generous
	l.Fuel = fuel
	return l
}

func workloads(ctx context.Context, eng sandbox.Engine) ([]workload, error) {
	wasm := func(file string) (sandbox.Module, error) {
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
		name := strings.NewReplacer(".js", "", ".mjs", "", ".", "_", "-", "_").Replace(filepath.Base(file))
		return jstool.Load(ctx, eng, jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: name, Version: "1.0.0"}})
	}
	var ws []workload
	for _, m := range []struct {
		file, name string
		input      []byte
		limits     sandbox.Limits
		want       sandbox.OutcomeKind
	}{
		{"loop.wasm", "endless loop (`loop.wasm`, stopped by 2 billion fuel)", []byte(`{}`), endless(2_000_000_000), sandbox.FuelExhausted},
		{"spin.wasm", "tight counted loop (`spin.wasm`, n = 300 million)", []byte(`{"n":300000000}`), generous, sandbox.Completed},
		{"sort.wasm", "C: parse, merge sort, print 200,000 integers (`sort.wasm`)", sortInput(200_000), generous, sandbox.Completed},
		{"textstats.wasm", "Go: 1 MiB of text, runes, ToUpper, Fields (`textstats.wasm`)", textInput(1 << 20), generous, sandbox.Completed},
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
		limits     sandbox.Limits
		want       sandbox.OutcomeKind
	}{
		{filepath.Join(tools, "tools", "endless.js"), "endless loop `for (;;) {}` (`endless.js`, stopped by 2 billion fuel)", []byte(`{}`), endless(2_000_000_000), sandbox.FuelExhausted},
		{filepath.Join(tools, "bench", "busy.js"), "integer loop (`busy.js`, n = 3 million)", []byte(`{"n":3000000}`), generous, sandbox.Completed},
		{filepath.Join(tools, "bench", "work.js"), "JSON, regexps, Map, sort, strings (`work.js`, n = 40)", []byte(`{"n":40}`), generous, sandbox.Completed},
		{filepath.Join(tools, "heavy", "sha3.mjs"), "SHA-3-256 of 300 KB in pure JS (`heavy/sha3.mjs`, js-sha3)", []byte(`{}`), generous, sandbox.Completed},
		{filepath.Join(tools, "compat", "tools", "mathjs.mjs"), "mathjs: evaluate, derivative, simplify, matrices (`compat/tools/mathjs.mjs`)", []byte(`{}`), generous, sandbox.Completed},
	} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(t.file), "node_modules")); err != nil && strings.HasSuffix(t.file, ".mjs") {
			if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(t.file)), "node_modules")); err != nil {
				fmt.Fprintf(os.Stderr, "fuelrate: skipping %s: its packages are not installed (make testdata-js)\n", t.file)
				continue
			}
		}
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
