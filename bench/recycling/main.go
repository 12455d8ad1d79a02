// Command recycling measures issue 17's first goal, recycled instances,
// side by side in interleaved rounds:
//
//   - a trivial Wasm executor (testdata/sum.wasm) through the whole
//     pipeline against the same logic as a native Go executor: p50 latency
//     and bytes allocated per call (the pipeline audits to a sink that
//     checks and drops records, so that what is counted is per call, not a
//     log kept in memory); the goal's executor declares no schema, and the
//     same pair with sum's input and output schemas shows what validating
//     them costs;
//   - a trivial JS tool (jstool/testdata/bench/trim.js) called from its
//     snapshot against node running the same function in a fresh
//     vm.runInNewContext per call (node's cheapest fresh isolation): p50
//     latency, and bytes allocated per wasmgate call.
//
// Each round runs every variant -n calls, in alternating order; the figures
// are medians over rounds of the per-round p50 (and of the per-round ratio).
// With -lines it prints only the goal lines scripts/bench.sh reads:
//
//	wasm-pipeline-vs-native RATIO
//	wasm-pipeline-bytes BYTES
//	wasm-pipeline-schema-bytes BYTES (with sum's schemas validated)
//	js-snapshot-vs-node-vm RATIO
//	js-snapshot-bytes BYTES
//
// Usage: go run ./bench/recycling [-rounds 7] [-n 2000] [-js-n 1000] [-lines]
package main

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/bench/internal/report"
	"github.com/wasmgate/wasmgate/internal/nativesum"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

func main() {
	rounds := flag.Int("rounds", 7, "interleaved rounds")
	n := flag.Int("n", 2000, "pipeline calls per variant and round")
	jsN := flag.Int("js-n", 1000, "JS calls per variant and round")
	lines := flag.Bool("lines", false, "print only the goal lines")
	flag.Parse()
	if err := run(*rounds, *n, *jsN, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "recycling:", err)
		os.Exit(1)
	}
}

// schemaless is an executor with its manifest's schemas left out: the
// trivial executor of the goal, without the cost of validating its input
// and output (measured apart).
type schemaless struct{ pipeline.Executor }

func (s schemaless) Manifest() sandbox.Manifest {
	m := s.Executor.Manifest()
	m.InputSchema, m.OutputSchema = nil, nil
	return m
}

// variant is one side of a comparison: a call, measured n times a round.
type variant struct {
	name  string
	call  func() error
	p50s  []time.Duration
	bytes []float64 // per call, per round (Go variants only)
	// external runs a round itself (node) and returns its p50.
	external func(n int) (time.Duration, error)
}

func (v *variant) round(n int) error {
	if v.external != nil {
		p50, err := v.external(n)
		v.p50s = append(v.p50s, p50)
		return err
	}
	d := make([]time.Duration, n)
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for i := range d {
		t := time.Now()
		if err := v.call(); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
		d[i] = time.Since(t)
	}
	goruntime.ReadMemStats(&after)
	slices.Sort(d)
	v.p50s = append(v.p50s, d[n/2])
	v.bytes = append(v.bytes, float64(after.TotalAlloc-before.TotalAlloc)/float64(n))
	return nil
}

func run(rounds, n, jsN int, lines bool) error {
	ctx := context.Background()
	engine, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	if err != nil {
		return err
	}
	defer engine.Close(ctx)
	fresh, err := sandbox.NewEngine(ctx, sandbox.NewConfig().WithoutRecycling())
	if err != nil {
		return err
	}
	defer fresh.Close(ctx)

	native, wasm, wasmFresh, err := pipelines(ctx, engine, fresh, false)
	if err != nil {
		return err
	}
	nativeS, wasmS, _, err := pipelines(ctx, engine, fresh, true)
	if err != nil {
		return err
	}
	req := pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(`{"numbers":[1,2,3,4,5,6,7,8,9,10]}`)}
	through := func(p pipeline.Runner) func() error {
		return func() error {
			res, err := p.Execute(ctx, req)
			if err == nil && res.Status != pipeline.StatusSuccess {
				err = fmt.Errorf("%s %v %s", res.Status, res.ReasonCodes, res.Message)
			}
			return err
		}
	}
	nat := &variant{name: "native executor through the pipeline", call: through(native)}
	rec := &variant{name: "Wasm executor through the pipeline, recycled instances", call: through(wasm)}
	frs := &variant{name: "Wasm executor through the pipeline, fresh instances", call: through(wasmFresh)}
	natS := &variant{name: "native executor, with sum's input and output schemas", call: through(nativeS)}
	recS := &variant{name: "Wasm executor, recycled, with sum's input and output schemas", call: through(wasmS)}

	trim, in, err := jsTool(ctx, engine)
	if err != nil {
		return err
	}
	trimFresh, _, err := jsTool(ctx, fresh)
	if err != nil {
		return err
	}
	jsCall := func(t *jstool.Tool) func() error {
		return func() error {
			o, err := t.Execute(ctx, in)
			if err == nil && (o.Kind != sandbox.Completed || string(o.Output) != `{"text":"hello world"}`) {
				err = fmt.Errorf("%v %s %s", o.Kind, o.Output, o.Message)
			}
			return err
		}
	}
	js := &variant{name: "JS tool from its snapshot, recycled instances", call: jsCall(trim)}
	jsFresh := &variant{name: "JS tool from its snapshot, fresh instances", call: jsCall(trimFresh)}
	node, stop, err := nodeVM()
	if err != nil {
		return err
	}
	defer stop()
	vm := &variant{name: "node, vm.runInNewContext per call", external: node}

	groups := [][]*variant{{nat, rec, frs, natS, recS}, {vm, js, jsFresh}}
	for r := range rounds {
		for gi, g := range groups {
			calls := n
			if gi == 1 {
				calls = jsN
			}
			order := g
			if r%2 == 1 {
				order = slices.Clone(g)
				slices.Reverse(order)
			}
			for _, v := range order {
				if err := v.round(calls); err != nil {
					return err
				}
			}
		}
	}

	pipeRatio := medianRatio(rec.p50s, nat.p50s)
	jsRatio := medianRatio(js.p50s, vm.p50s)
	if lines {
		fmt.Printf("wasm-pipeline-vs-native %.2f\n", pipeRatio)
		fmt.Printf("wasm-pipeline-bytes %.0f\n", report.Median(rec.bytes))
		fmt.Printf("wasm-pipeline-schema-bytes %.0f\n", report.Median(recS.bytes))
		fmt.Printf("js-snapshot-vs-node-vm %.2f\n", jsRatio)
		fmt.Printf("js-snapshot-bytes %.0f\n", report.Median(js.bytes))
		return nil
	}
	fmt.Printf("%d rounds, GOMAXPROCS %d, %s/%s\n\n", rounds, goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH)
	fmt.Println("| variant | p50 (median of rounds) | KB allocated per call | ratio to baseline (median of per-round ratios) |")
	fmt.Println("|---|---:|---:|---:|")
	row := func(v, base *variant) {
		kb := "-"
		if len(v.bytes) > 0 {
			kb = fmt.Sprintf("%.1f", report.Median(v.bytes)/1024)
		}
		fmt.Printf("| %s | %s | %s | %.2fx |\n", v.name, medianDuration(v.p50s), kb, medianRatio(v.p50s, base.p50s))
	}
	row(nat, nat)
	row(rec, nat)
	row(frs, nat)
	row(natS, natS)
	row(recS, natS)
	row(vm, vm)
	row(js, vm)
	row(jsFresh, vm)
	return nil
}

// pipelines builds the three pipelines of testdata/sum.wasm's action,
// with the schemas its manifest declares when schemas is set.
func pipelines(ctx context.Context, engine, fresh sandbox.Engine, schemas bool) (native, wasm, wasmFresh pipeline.Runner, err error) {
	mod, err := os.ReadFile(filepath.Join("testdata", "sum.wasm"))
	if err != nil {
		return nil, nil, nil, err
	}
	// Each is a Runtime, as an embedder runs the pipeline; records are
	// checked and dropped.
	build := func(e pipeline.Executor) (pipeline.Runner, error) {
		if !schemas {
			e = schemaless{e}
		}
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor("sum", e); err != nil {
			return nil, err
		}
		if err := reg.AddAction("math.sum", pipeline.Route{Executor: "sum", Version: "^1.0.0"}); err != nil {
			return nil, err
		}
		return wasmgate.New(ctx, wasmgate.WithRegistry(func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) { return reg, nil }))
	}
	we, err := pipeline.LoadWasm(ctx, engine, mod, sandbox.Manifest{})
	if err != nil {
		return nil, nil, nil, err
	}
	wf, err := pipeline.LoadWasm(ctx, fresh, mod, sandbox.Manifest{})
	if err != nil {
		return nil, nil, nil, err
	}
	if native, err = build(nativesum.New(we.Manifest())); err != nil {
		return nil, nil, nil, err
	}
	if wasm, err = build(we); err != nil {
		return nil, nil, nil, err
	}
	wasmFresh, err = build(wf)
	return native, wasm, wasmFresh, err
}

const trimFile = "jstool/testdata/bench/trim.js"

func jsTool(ctx context.Context, engine sandbox.Engine) (*jstool.Tool, sandbox.Input, error) {
	b, err := jstool.BundleFile(trimFile)
	if err != nil {
		return nil, sandbox.Input{}, err
	}
	t, err := jstool.Load(ctx, engine, jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "trim", Version: "1.0.0"}})
	if err != nil {
		return nil, sandbox.Input{}, err
	}
	c, err := audit.Canonicalize([]byte(`{"text":"  hello world  "}`))
	if err != nil {
		return nil, sandbox.Input{}, err
	}
	return t, sandbox.Input{Bytes: c.Bytes, Digest: audit.DigestBytes(c.Bytes)}, nil
}

// nodeScript runs the trim tool's source in a fresh context per call, as
// many calls as each line on stdin asks, and answers each line with the
// round's p50 in nanoseconds.
const nodeScript = `const vm = require("vm");
const fs = require("fs");
const readline = require("readline");
const src = fs.readFileSync(process.argv[2], "utf8").replace(/export function/g, "function");
const code = src + "\nJSON.stringify(execute(JSON.parse(input)));";
const input = JSON.stringify({ text: "  hello world  " });
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const n = Number(line);
  const d = new Array(n);
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    const out = vm.runInNewContext(code, { input });
    d[i] = Number(process.hrtime.bigint() - t);
    if (out !== '{"text":"hello world"}') throw new Error("node: " + out);
  }
  d.sort((a, b) => a - b);
  process.stdout.write(String(d[n >> 1]) + "\n");
});`

// nodeVM starts node with nodeScript and returns a round of n calls.
func nodeVM() (round func(n int) (time.Duration, error), stop func(), err error) {
	dir, err := os.MkdirTemp("", "recycling-node-")
	if err != nil {
		return nil, nil, err
	}
	script := filepath.Join(dir, "vm.cjs")
	if err := os.WriteFile(script, []byte(nodeScript), 0o600); err != nil {
		return nil, nil, err
	}
	tool, err := filepath.Abs(trimFile)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command("node", script, tool)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("node is needed for the comparison: %w", err)
	}
	out := bufio.NewScanner(stdout)
	round = func(n int) (time.Duration, error) {
		if _, err := fmt.Fprintf(stdin, "%d\n", n); err != nil {
			return 0, err
		}
		if !out.Scan() {
			return 0, fmt.Errorf("node ended: %v", out.Err())
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(out.Text()), 10, 64)
		return time.Duration(ns), err
	}
	stop = func() {
		stdin.Close()
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	return round, stop, nil
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// medianRatio is the median over rounds of a[i]/b[i].
func medianRatio(a, b []time.Duration) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = float64(a[i]) / float64(b[i])
	}
	return report.Median(r)
}
