// Command fuelratio measures what deterministic fuel costs on compiled code:
// the instrumented module (what wasmgate runs: fuel per basic block, the
// call-depth counter, NaN canonicalization) against the plain one (the
// admitted module, no instrumentation, no deadline), on the tight loop
// (testdata/spin.wasm, 10^6 iterations) and on realistic C
// (testdata/sort.wasm parsing, merge-sorting and printing 20,000 integers).
//
// It runs the sandbox package's own benchmarks (BenchmarkTightLoop and
// BenchmarkSortC, internal/sandbox/bench_test.go), built once into a test binary, in
// interleaved rounds: in each round every variant runs for -benchtime in a
// process of its own, the order alternating from round to round, so that a
// noisy stretch of a shared machine falls on both sides of a ratio. The
// figure is the median of the per-round ratios (instrumented ns/op divided
// by plain ns/op of the same round), not a ratio of medians.
//
// Two figures per variant: wall ns/op as the benchmark reports it, and CPU
// time per op (the process's user + system time, less what a process that
// runs one iteration spends, divided by the iterations). On a machine shared
// with other work the wall figure swings with the load from one round to the
// next; the CPU figure does not, and the targets are judged on it.
//
// With -set wasmtime (a build with the wasmtime tag, see README) it runs
// BenchmarkWasmtimeFuelTightLoop and BenchmarkWasmtimeFuelSortC instead:
// wasmgate's instrumented fuel and wasmtime's own fuel against the bare
// module (no fuel, no epoch deadline). With -set python it runs
// internal/pyhost's BenchmarkPythonLoop: a CPU-bound loop in CPython,
// instrumented vs plain. With -set pipeline it runs the same
// interleaving on the pipeline package's BenchmarkPipeline: the trivial Wasm
// executor against the native one, in-memory audit (issue 17, goal 1).
//
// Besides the Markdown table it prints one line per target, "NAME VALUE", for
// scripts/bench.sh's goal table: fuel-tight-loop and fuel-c-sort (the
// instrumented variant's median CPU ratio); wasm-pipeline-vs-native and
// wasm-pipeline-bytes (B/op) with -set pipeline.
//
// Run it from the module root:
//
//	go run ./bench/fuelratio [-rounds 9] [-benchtime 300ms] [-set wazero|wasmtime|python|pipeline]
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wasmgate/wasmgate/bench/internal/report"
)

// workload is one benchmark of the sandbox package and the variants
// (sub-benchmarks) compared with its baseline.
type workload struct {
	line     string // the NAME of the "NAME VALUE" line
	bytes    string // when set, the NAME of a line with the first variant's B/op
	what     string
	bench    string
	baseline string
	variants []string
	target   float64

	iters  map[string]int       // variant → iterations per sample (about -benchtime)
	setup  map[string]float64   // variant → CPU ns of a process that runs one iteration
	wall   map[string][]float64 // variant → wall ns/op of each round
	cpu    map[string][]float64 // variant → CPU ns/op of each round, setup subtracted
	byteOp map[string]float64   // variant → B/op
}

// sample is one sub-benchmark run in a process of its own.
type sample struct {
	wallOp, bytesOp float64 // as the benchmark reports them
	cpu             float64 // the process's user + system CPU time, ns
}

func main() {
	rounds := flag.Int("rounds", 9, "interleaved rounds; each runs every variant once for about -benchtime")
	benchtime := flag.Duration("benchtime", 300*time.Millisecond, "about how long each variant runs in each round")
	set := flag.String("set", "wazero", "wazero (fuel: instrumented vs plain), wasmtime (fuel: instrumented and native fuel vs bare; needs the wasmtime build), python (fuel on a CPython loop: instrumented vs plain) or pipeline (the Wasm executor vs the native one through the pipeline)")
	goCmd := flag.String("go", envOr("GO", "go"), "the go command that builds the test binary")
	bin := flag.String("bin", "", "the set's test binary already built (go test -c ./internal/sandbox/) instead of building one")
	flag.Parse()
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "fuelratio: -rounds must be at least 1")
		os.Exit(2)
	}
	start := time.Now()
	if err := run(*goCmd, *bin, *set, *rounds, *benchtime); err != nil {
		fmt.Fprintln(os.Stderr, "fuelratio:", err)
		os.Exit(1)
	}
	fmt.Printf("\n(fuelratio took %.1f s)\n", time.Since(start).Seconds())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// workloads are the benchmarks of a set, the package that holds them and
// the build tags it needs.
func workloads(set string) ([]*workload, string, []string, error) {
	switch set {
	case "wazero":
		return []*workload{
			{line: "fuel-tight-loop", what: "tight loop (`spin.wasm`, 10^6 iterations)", bench: "BenchmarkTightLoop", baseline: "plain", variants: []string{"instrumented"}, target: 1.5},
			{line: "fuel-c-sort", what: "C sort (`sort.wasm`, 20,000 integers)", bench: "BenchmarkSortC", baseline: "plain", variants: []string{"instrumented"}, target: 1.1},
		}, "internal/sandbox", nil, nil
	case "python":
		return []*workload{
			{line: "fuel-python-loop", what: "CPython loop (`BenchmarkPythonLoop`, 10^5 rounds from the snapshot)", bench: "BenchmarkPythonLoop", baseline: "plain", variants: []string{"instrumented"}, target: 1.5},
		}, "internal/pyhost", nil, nil
	case "pipeline":
		return []*workload{
			{line: "wasm-pipeline-vs-native", bytes: "wasm-pipeline-bytes", what: "`math.sum` through the pipeline, memory audit (`BenchmarkPipeline`)", bench: "BenchmarkPipeline", baseline: "memory-audit/native", variants: []string{"memory-audit/wasm-wazero"}, target: 3},
		}, "pipeline", nil, nil
	case "wasmtime":
		return []*workload{
			{line: "fuel-tight-loop-wasmtime", what: "tight loop on wasmtime", bench: "BenchmarkWasmtimeFuelTightLoop", baseline: "bare", variants: []string{"instrumented", "native-fuel"}, target: 1.5},
			{line: "fuel-c-sort-wasmtime", what: "C sort on wasmtime", bench: "BenchmarkWasmtimeFuelSortC", baseline: "bare", variants: []string{"instrumented", "native-fuel"}, target: 1.1},
		}, "internal/sandbox", []string{"-tags", "wasmtime"}, nil
	}
	return nil, "", nil, fmt.Errorf("unknown -set %q (wazero, wasmtime, python or pipeline)", set)
}

func run(goCmd, bin, set string, rounds int, benchtime time.Duration) error {
	ws, pkg, tags, err := workloads(set)
	if err != nil {
		return err
	}
	if bin == "" {
		dir, err := os.MkdirTemp("", "fuelratio-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, filepath.Base(pkg)+".test")
		build := exec.Command(goCmd, append(append([]string{"test", "-c", "-o", bin}, tags...), "./"+pkg+"/")...)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the sandbox test binary: %w", err)
		}
	} else if bin, err = filepath.Abs(bin); err != nil {
		return err
	}

	// Calibration, unmeasured: how many iterations make -benchtime, and the
	// CPU a process spends around one iteration (start-up, engine, compile),
	// the median of three, which each sample's CPU time is corrected by.
	for _, w := range ws {
		w.iters, w.setup = map[string]int{}, map[string]float64{}
		w.wall, w.cpu, w.byteOp = map[string][]float64{}, map[string][]float64{}, map[string]float64{}
		for _, v := range append([]string{w.baseline}, w.variants...) {
			s, err := benchOnce(bin, pkg, w.bench, v, "100ms")
			if err != nil {
				return err
			}
			w.iters[v] = max(2, int(float64(benchtime.Nanoseconds())/s.wallOp))
			var setups []float64
			for range 3 {
				s, err := benchOnce(bin, pkg, w.bench, v, "1x")
				if err != nil {
					return err
				}
				setups = append(setups, s.cpu-s.wallOp)
			}
			w.setup[v] = report.Median(setups)
		}
	}
	for r := range rounds {
		for _, w := range ws {
			order := append([]string{w.baseline}, w.variants...)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, v := range order {
				s, err := benchOnce(bin, pkg, w.bench, v, fmt.Sprintf("%dx", w.iters[v]))
				if err != nil {
					return err
				}
				w.wall[v] = append(w.wall[v], s.wallOp)
				w.cpu[v] = append(w.cpu[v], max(s.cpu-w.setup[v], 0)/float64(w.iters[v]))
				w.byteOp[v] = s.bytesOp
			}
		}
		fmt.Fprintf(os.Stderr, "fuelratio: round %d of %d done\n", r+1, rounds)
	}
	printResults(ws, set, rounds, benchtime)
	return nil
}

// benchOnce runs one sub-benchmark in a process of its own, from its
// package's directory (where the benchmarks find ../testdata).
func benchOnce(bin, pkg, bench, variant, benchtime string) (sample, error) {
	cmd := exec.Command(bin, "-test.run", "^$", "-test.bench", "^"+bench+"$/^"+strings.ReplaceAll(variant, "/", "$/^")+"$",
		"-test.benchtime", benchtime, "-test.count", "1", "-test.benchmem")
	cmd.Dir = pkg
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%s/%s: %w: %s%s", bench, variant, err, stdout.Bytes(), stderr.Bytes())
	}
	s := sample{cpu: float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Nanoseconds())}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], bench+"/"+variant) {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			val, perr := strconv.ParseFloat(f[i], 64)
			if perr != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				s.wallOp = val
			case "B/op":
				s.bytesOp = val
			}
		}
	}
	if s.wallOp == 0 {
		return sample{}, fmt.Errorf("%s/%s: no ns/op in its output:\n%s", bench, variant, stdout.Bytes())
	}
	return s, nil
}

// ratios are a variant's per-round ratios to the baseline of the same round.
func ratios(of map[string][]float64, variant, baseline string) []float64 {
	rs := make([]float64, len(of[variant]))
	for i := range rs {
		rs[i] = of[variant][i] / of[baseline][i]
	}
	return rs
}

func printResults(ws []*workload, set string, rounds int, benchtime time.Duration) {
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\nMachine: %s, %d CPUs, %s/%s, %s (load average %s); set %s; %d interleaved rounds of about %s per variant, each in a process of its own.\n\n",
		report.CPUModel(), goruntime.NumCPU(), goruntime.GOOS, goruntime.GOARCH, goruntime.Version(),
		strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "), set, rounds, benchtime)
	fmt.Println("| workload | variant | wall ns/op | CPU ns/op | B/op | wall ratio | CPU ratio | per-round CPU ratios, min–max | target | met? (CPU) |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---|---:|---|")
	for _, w := range ws {
		fmt.Printf("| %s | %s | %s | %s | %s | 1.00x | 1.00x | | | |\n", w.what, w.baseline,
			report.Thousands(int64(report.Median(w.wall[w.baseline]))), report.Thousands(int64(report.Median(w.cpu[w.baseline]))),
			report.Thousands(int64(w.byteOp[w.baseline])))
		for _, v := range w.variants {
			cr := ratios(w.cpu, v, w.baseline)
			target, met := "", ""
			if v == w.variants[0] {
				target = fmt.Sprintf("≤ %.1fx", w.target)
				met = "no"
				if report.Median(cr) <= w.target {
					met = "yes"
				}
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %.2fx | **%.2fx** | %.2f–%.2f | %s | %s |\n", w.what, v,
				report.Thousands(int64(report.Median(w.wall[v]))), report.Thousands(int64(report.Median(w.cpu[v]))),
				report.Thousands(int64(w.byteOp[v])), report.Median(ratios(w.wall, v, w.baseline)), report.Median(cr),
				slices.Min(cr), slices.Max(cr), target, met)
		}
	}
	fmt.Println("\nns/op are medians of the rounds; ratios are medians of the per-round ratios. CPU ns/op is the")
	fmt.Println("process's user + system time less a one-iteration process's, divided by the iterations.")
	fmt.Println()
	for _, w := range ws {
		for _, v := range w.variants {
			fmt.Printf("per-round %s/%s, wall:", w.bench, v)
			for _, r := range ratios(w.wall, v, w.baseline) {
				fmt.Printf(" %.2f", r)
			}
			fmt.Printf("; CPU:")
			for _, r := range ratios(w.cpu, v, w.baseline) {
				fmt.Printf(" %.2f", r)
			}
			fmt.Println()
		}
	}
	fmt.Println()
	for _, w := range ws {
		for _, v := range w.variants {
			name := w.line
			if v != w.variants[0] {
				name += "-" + v
			}
			fmt.Printf("%s %.2f\n", name, report.Median(ratios(w.cpu, v, w.baseline)))
		}
		if w.bytes != "" {
			fmt.Printf("%s %.0f\n", w.bytes, w.byteOp[w.variants[0]])
		}
	}
}
