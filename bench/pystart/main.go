// Command pystart measures what `wasmgate run --py tool.py` costs as a whole
// process, against `python3` running the same tool (issue 26): the warm
// start (a filled cache) side by side with python3, and the cold first run
// with what each part of the cache saves.
//
// The tool is a trivial executor (execute trims a string), written into a
// temporary directory beside runner.py, a CLI wrapper that python3 runs:
// it reads the JSON input from its argument, calls execute, prints the
// JSON result. wasmgate's "output" must equal it, or the command fails.
//
// Cold: each cold run gets a new, empty cache directory, so it instruments
// CPython, compiles it and takes the tool's snapshot. Then, from a cache
// filled by one run, one part is removed at a time and the next run makes
// it again: the snapshot alone (the tool's loading), the snapshot and the
// instrumented interpreter (instrumenting and splitting the module), and
// everything but nothing (the warm run). Each of those is the median of
// -cold-n runs.
//
// Warm: -n interleaved rounds of the warm wasmgate run and python3 (the
// order alternating from one round to the next), so background load falls
// on both alike; the figure is the median of the per-round ratios. CPU
// time (user + system) is reported beside wall time: on a machine shared
// with other work it moves less. With -baseline, a second wasmgate binary
// (an older build) runs in the same rounds with its own warm cache, for a
// before and after measured side by side.
//
// Run it from the module root:
//
//	go run ./bench/pystart [-n 20] [-cold-n 3] [-engine wazero] [-wasmgate BIN] [-baseline BIN] [-line]
//
// -engine wasmtime needs a wasmgate built with the wasmtime tag (make
// build-wasmtime; -wasmgate bin/wasmgate). With -line it prints one line,
// "py-warm-start-vs-python3 RATIO", for the goals table of make bench, and
// skips the cold runs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wasmgate/wasmgate/bench/internal/gobuild"
	"github.com/wasmgate/wasmgate/bench/internal/report"
)

// input is the payload of every run.
const input = `{"text":"  hello world  "}`

// tool is the executor both sides run.
const tool = `def execute(x):
    return {"text": x["text"].strip()}
`

// runner is python3's side: what a CLI wrapper around the tool does.
const runner = `import json, sys
from tool import execute
sys.stdout.write(json.dumps(execute(json.loads(sys.argv[1])), separators=(",", ":")))
`

type options struct {
	python   string
	wasmgate string
	baseline string
	engine   string
	n, coldN int
	line     bool
}

func main() {
	var o options
	flag.StringVar(&o.python, "python", "python3", "the python executable")
	flag.StringVar(&o.wasmgate, "wasmgate", "", "the wasmgate binary (default: built from ./cmd/wasmgate into a temporary directory)")
	flag.StringVar(&o.baseline, "baseline", "", "an older wasmgate binary to measure in the same rounds (optional)")
	flag.StringVar(&o.engine, "engine", "wazero", "the engine wasmgate runs on (wasmtime needs a binary built with the wasmtime tag)")
	flag.IntVar(&o.n, "n", 20, "warm rounds")
	flag.IntVar(&o.coldN, "cold-n", 3, "runs of each cold variant but the first (each cold first run compiles CPython: about 15 s)")
	flag.BoolVar(&o.line, "line", false, `print only "py-warm-start-vs-python3 RATIO" (no cold runs)`)
	flag.Parse()
	if o.n < 1 || o.coldN < 1 {
		fmt.Fprintln(os.Stderr, "pystart: -n and -cold-n must be at least 1")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "pystart:", err)
		os.Exit(1)
	}
}

// variant is one command measured.
type variant struct {
	name string
	cmd  []string
	// output extracts the tool's result from the command's stdout.
	output func([]byte) ([]byte, error)
	// times are wall times, spawn to exit; cpu the process's user and
	// system time.
	times, cpu []time.Duration
}

func run(o options) error {
	dir, err := os.MkdirTemp("", "pystart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for name, text := range map[string]string{"tool.py": tool, "runner.py": runner} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	bin, err := gobuild.Wasmgate(context.Background(), o.wasmgate, dir)
	if err != nil {
		return err
	}
	toolPath := filepath.Join(dir, "tool.py")
	wasmgate := func(name, bin, cache string) *variant {
		return &variant{name: name, cmd: []string{bin, "run", "--py", toolPath, "--input", input, "--engine", o.engine, "--cache-dir", cache}, output: resultOutput}
	}
	python := &variant{name: o.python + " runner.py", cmd: []string{o.python, filepath.Join(dir, "runner.py"), input}, output: func(b []byte) ([]byte, error) { return b, nil }}
	want, _, _, err := python.run(dir)
	if err != nil {
		return err
	}
	check := func(v *variant, out []byte) error {
		if !bytes.Equal(out, want) {
			return fmt.Errorf("%s gave %s, %s gave %s", v.name, out, python.name, want)
		}
		return nil
	}

	warmCache := filepath.Join(dir, "cache")
	if err := os.Mkdir(warmCache, 0o700); err != nil {
		return err
	}
	var cold []*variant
	if !o.line {
		if cold, err = coldRuns(o, dir, warmCache, wasmgate(o.engine, bin, ""), check); err != nil {
			return err
		}
	}

	vs := []*variant{wasmgate("wasmgate run --py, warm cache", bin, warmCache), python}
	if o.baseline != "" {
		baseCache := filepath.Join(dir, "baseline-cache")
		if err := os.Mkdir(baseCache, 0o700); err != nil {
			return err
		}
		vs = append(vs, wasmgate("baseline wasmgate run --py, warm cache", o.baseline, baseCache))
	}
	// Fill the caches (the first of two runs is the cold one, unless the
	// cold runs filled it), and check every variant's result.
	for _, v := range vs {
		for range 2 {
			out, _, _, err := v.run(dir)
			if err != nil {
				return err
			}
			if err := check(v, out); err != nil {
				return err
			}
		}
	}
	var ratios, baseRatios []float64
	for r := range o.n {
		order := slices.Clone(vs)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			out, d, cpu, err := v.run(dir)
			if err != nil {
				return err
			}
			if err := check(v, out); err != nil {
				return fmt.Errorf("round %d: %w", r, err)
			}
			v.times = append(v.times, d)
			v.cpu = append(v.cpu, cpu)
		}
		ratios = append(ratios, float64(vs[0].times[r])/float64(vs[1].times[r]))
		if o.baseline != "" {
			baseRatios = append(baseRatios, float64(vs[2].times[r])/float64(vs[1].times[r]))
		}
	}
	if o.line {
		fmt.Printf("py-warm-start-vs-python3 %.2f\n", report.Median(ratios))
		return nil
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("%s; engine %s; load average %s; tool: execute trims a string, input %s\n\n", report.CPUModel(), o.engine, strings.Join(strings.Fields(string(load))[:3], " "), input)
	if len(cold) > 0 {
		fmt.Println("| cold and partly cold runs | n | median (ms) | min (ms) | max (ms) | CPU, user + system, median (ms) |")
		fmt.Println("|---|---:|---:|---:|---:|---:|")
		for _, v := range cold {
			fmt.Printf("| %s | %d | %.0f | %.0f | %.0f | %.0f |\n", v.name, len(v.times), ms(report.Percentile(v.times, 50)), ms(slices.Min(v.times)), ms(slices.Max(v.times)), ms(report.Percentile(v.cpu, 50)))
		}
		fmt.Println()
	}
	fmt.Printf("%d interleaved rounds:\n\n", o.n)
	fmt.Println("| whole process | n | median (ms) | min (ms) | max (ms) | median of per-round ratios to python3 | CPU, user + system, median (ms) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for i, v := range vs {
		ratio := "1.00x"
		switch i {
		case 0:
			ratio = fmt.Sprintf("**%.2fx** (%.2f–%.2f)", report.Median(ratios), slices.Min(ratios), slices.Max(ratios))
		case 2:
			ratio = fmt.Sprintf("%.2fx (%.2f–%.2f)", report.Median(baseRatios), slices.Min(baseRatios), slices.Max(baseRatios))
		}
		fmt.Printf("| %s | %d | %.1f | %.1f | %.1f | %s | %.1f |\n", v.name, len(v.times), ms(report.Percentile(v.times, 50)), ms(slices.Min(v.times)), ms(slices.Max(v.times)), ratio, ms(report.Percentile(v.cpu, 50)))
	}
	met := "met"
	if report.Median(ratios) > 1 {
		met = "not met"
	}
	fmt.Printf("\nTarget: wasmgate / python3 ≤ 1.00x: %s (%.2fx).\n", met, report.Median(ratios))
	return nil
}

// coldRuns measures the first run in an empty cache, then, from warmCache
// filled by it, the runs that make one part of the cache again: the entries
// whose names begin with each prefix of a step are removed before each run.
// base is the wasmgate variant whose cache directory each run replaces.
func coldRuns(o options, dir, warmCache string, base *variant, check func(*variant, []byte) error) ([]*variant, error) {
	withCache := func(name, cache string) *variant {
		cmd := slices.Clone(base.cmd)
		cmd[len(cmd)-1] = cache
		return &variant{name: name, cmd: cmd, output: base.output}
	}
	first := withCache("first run, empty cache (instrument, compile, snapshot)", warmCache)
	out, d, cpu, err := first.run(dir)
	if err != nil {
		return nil, err
	}
	if err := check(first, out); err != nil {
		return nil, err
	}
	first.times, first.cpu = []time.Duration{d}, []time.Duration{cpu}
	vs := []*variant{first}
	steps := []struct {
		name     string
		prefixes []string
	}{
		{"cache off (--cache-dir off: instrument, compile, snapshot, nothing kept)", nil},
		{"compiled code and instrumented module cached, snapshot made", []string{"snapshot-"}},
		{"compiled code cached, module instrumented and snapshot made", []string{"snapshot-", "reactor-"}},
		{"everything cached (warm)", []string{}},
	}
	for _, s := range steps {
		cache := warmCache
		if s.prefixes == nil {
			cache = "off"
		}
		v := withCache(s.name, cache)
		n := o.coldN
		if s.prefixes == nil {
			// The cache-off run keeps nothing: one shows that it costs a
			// cold run every time.
			n = 1
		}
		for range n {
			if err := removeEntries(warmCache, s.prefixes); err != nil {
				return nil, err
			}
			out, d, cpu, err := v.run(dir)
			if err != nil {
				return nil, err
			}
			if err := check(v, out); err != nil {
				return nil, err
			}
			v.times, v.cpu = append(v.times, d), append(v.cpu, cpu)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// removeEntries removes the cache entries under cache whose file names
// begin with one of prefixes.
func removeEntries(cache string, prefixes []string) error {
	if len(prefixes) == 0 {
		return nil
	}
	return filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, p := range prefixes {
			if strings.HasPrefix(d.Name(), p) {
				return os.Remove(path)
			}
		}
		return nil
	})
}

// run runs v once in dir and returns the tool's result, the process's
// wall time (spawn to exit) and its CPU time (user and system).
func (v *variant) run(dir string) ([]byte, time.Duration, time.Duration, error) {
	cmd := exec.Command(v.cmd[0], v.cmd[1:]...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w: %s", v.name, err, stderr.Bytes())
	}
	out, err := v.output(stdout.Bytes())
	if err != nil {
		return nil, 0, 0, fmt.Errorf("%s: %w (stdout %s)", v.name, err, stdout.Bytes())
	}
	return out, d, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// resultOutput is the "output" of wasmgate run's printed ActionResult,
// re-encoded compactly.
func resultOutput(b []byte) ([]byte, error) {
	var res struct {
		Status string          `json:"status"`
		Output json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, err
	}
	if res.Status != "SUCCESS" {
		return nil, errors.New("status " + res.Status)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, res.Output); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
