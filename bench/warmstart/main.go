// Command warmstart measures what `wasmgate run --js tool.js` costs as a
// whole process with a warm cache, against `node` running the same tool: the
// goal "warm start faster than node" of issue 17.
//
// Both sides are timed from spawn to exit, in interleaved rounds (the order
// alternating from one round to the next), so background load falls on both
// alike; the figure is the median of the per-round ratios wasmgate / node.
// The tool is the trivial trim tool (jstool/testdata/bench/trim.js), copied
// into a temporary directory next to a package.json of "type": "module" so
// node imports the very file wasmgate bundles. Node's runner imports it,
// calls execute on the input given as its argument and prints the JSON
// result; wasmgate's "output" must equal it, or the command fails.
//
// Before the rounds, wasmgate runs once to fill its cache directory (a new
// temporary one): the compiled QuickJS engine, its instrumented module and
// the tool's snapshot. With -baseline, a second wasmgate binary (an older
// build) runs in the same rounds with its own warm cache, for a before and
// after measured side by side.
//
// Run it from the module root:
//
//	go run ./bench/warmstart [-n 20] [-wasmgate BIN] [-baseline BIN] [-line]
//
// With -line it prints one line, "warm-start-vs-node RATIO", for the goals
// table of make bench.
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
	"time"

	"github.com/wasmgate/wasmgate/bench/internal/gobuild"
	"github.com/wasmgate/wasmgate/bench/internal/report"
)

// input is the payload of every run.
const input = `{"text":"  hello world  "}`

// nodeRunner imports the tool, calls execute once on the JSON of argv[2]
// and prints the JSON result.
const nodeRunner = `import { execute } from "./tool.js";
process.stdout.write(JSON.stringify(await execute(JSON.parse(process.argv[2]))));
`

type options struct {
	tool     string
	node     string
	wasmgate string
	baseline string
	n        int
	line     bool
}

func main() {
	var o options
	flag.StringVar(&o.tool, "tool", filepath.Join("jstool", "testdata", "bench", "trim.js"), "the tool (a single ES module exporting execute)")
	flag.StringVar(&o.node, "node", "node", "the node executable")
	flag.StringVar(&o.wasmgate, "wasmgate", "", "the wasmgate binary (default: built from ./cmd/wasmgate into a temporary directory)")
	flag.StringVar(&o.baseline, "baseline", "", "an older wasmgate binary to measure in the same rounds (optional)")
	flag.IntVar(&o.n, "n", 20, "rounds")
	flag.BoolVar(&o.line, "line", false, `print only "warm-start-vs-node RATIO"`)
	flag.Parse()
	if o.n < 1 {
		fmt.Fprintln(os.Stderr, "warmstart: -n must be at least 1")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "warmstart:", err)
		os.Exit(1)
	}
}

// variant is one command measured in every round.
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
	dir, err := os.MkdirTemp("", "warmstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src, err := os.ReadFile(o.tool)
	if err != nil {
		return fmt.Errorf("the tool: %w", err)
	}
	files := map[string]string{"tool.js": string(src), "package.json": `{"type":"module"}` + "\n", "runner.mjs": nodeRunner}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	bin, err := gobuild.Wasmgate(context.Background(), o.wasmgate, dir)
	if err != nil {
		return err
	}
	tool := filepath.Join(dir, "tool.js")
	wasmgate := func(name, bin, cache string) *variant {
		return &variant{name: name, cmd: []string{bin, "run", "--js", tool, "--input", input, "--cache-dir", cache}, output: resultOutput}
	}
	vs := []*variant{
		wasmgate("wasmgate run --js, warm cache", bin, filepath.Join(dir, "cache")),
		{name: "node runner.mjs", cmd: []string{o.node, filepath.Join(dir, "runner.mjs"), input}, output: func(b []byte) ([]byte, error) { return b, nil }},
	}
	if o.baseline != "" {
		vs = append(vs, wasmgate("baseline wasmgate run --js, warm cache", o.baseline, filepath.Join(dir, "baseline-cache")))
	}
	// Fill the caches, and check every variant gives the same result.
	var want []byte
	for _, v := range vs {
		for range 2 {
			out, _, _, err := v.run(dir)
			if err != nil {
				return err
			}
			if want == nil {
				want = out
			} else if !bytes.Equal(out, want) {
				return fmt.Errorf("%s gave %s, %s gave %s", vs[0].name, want, v.name, out)
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
			if !bytes.Equal(out, want) {
				return fmt.Errorf("round %d: %s gave %s, want %s", r, v.name, out, want)
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
		fmt.Printf("warm-start-vs-node %.2f\n", report.Median(ratios))
		return nil
	}
	fmt.Printf("%s; %d interleaved rounds; tool %s, input %s\n\n", report.CPUModel(), o.n, o.tool, input)
	fmt.Println("| whole process | n | median (ms) | min (ms) | max (ms) | median of per-round ratios to node | CPU, user + system, median (ms) |")
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
	fmt.Printf("\nTarget: wasmgate / node ≤ 1.00x: %s (%.2fx).\n", met, report.Median(ratios))
	return nil
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
