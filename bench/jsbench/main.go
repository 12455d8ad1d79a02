// Command jsbench measures what one call of a JavaScript tool costs when
// every call gets a fresh VM, and what each VM alive at the same time costs
// in memory. It prints Markdown tables for docs/BENCHMARKS.md.
//
// Latency compares, side by side in one run, three ways of calling the trim
// tool (jstool/testdata/bench/trim.js) on {"text":"  hello world  "}:
// wasmgate from the tool's snapshot (Tool.Execute), wasmgate without it
// (Tool.ExecuteCold: engine setup and tool evaluation in every instance), and
// a node process spawned per call, which is how HTTP tool executors commonly
// run a tool (without their npm install). Node's output must equal
// wasmgate's byte for byte, or the command fails.
//
// Run it from the module root, where the fixtures are:
//
//	go run ./bench/jsbench [-n 200] [-cold-n 200] [-node-n 100] [-k 32] [-busy-n 600000]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/bench/internal/report"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// trimInput is the latency benchmark's payload, already canonical.
const trimInput = `{"text":"  hello world  "}`

// nodeRunner runs the tool the way a per-call executor does: import it,
// read the JSON input from stdin, call execute once, print the JSON result.
const nodeRunner = `import { execute } from "./tool.mjs";
let raw = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) raw += chunk;
process.stdout.write(JSON.stringify(await execute(JSON.parse(raw))));
`

type options struct {
	fixtures string
	node     string
	n        int // snapshot calls
	coldN    int
	nodeN    int
	warmup   int
	k        int // concurrent VMs
	busyN    int // loop iterations of the busy tool
}

func main() {
	var o options
	flag.StringVar(&o.fixtures, "fixtures", filepath.Join("jstool", "testdata", "bench"), "directory holding trim.js and busy.js")
	flag.StringVar(&o.node, "node", "node", "the node executable")
	flag.IntVar(&o.n, "n", 200, "measured calls from the snapshot")
	flag.IntVar(&o.coldN, "cold-n", 200, "measured calls without the snapshot")
	flag.IntVar(&o.nodeN, "node-n", 100, "measured node processes")
	flag.IntVar(&o.warmup, "warmup", 10, "unmeasured calls of each kind first")
	flag.IntVar(&o.k, "k", 32, "concurrent executions for the memory per VM")
	flag.IntVar(&o.busyN, "busy-n", 600_000, "loop iterations of each concurrent execution")
	flag.Parse()
	if o.n < 1 || o.coldN < 1 || o.nodeN < 1 || o.k < 1 || o.warmup < 0 || o.busyN < 0 {
		fmt.Fprintln(os.Stderr, "jsbench: -n, -cold-n, -node-n and -k must be at least 1, -warmup and -busy-n at least 0")
		os.Exit(2)
	}
	start := time.Now()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "jsbench:", err)
		os.Exit(1)
	}
	fmt.Printf("\n(jsbench took %.1f s)\n", time.Since(start).Seconds())
}

func run(ctx context.Context, o options) error {
	nodeVersion, err := exec.Command(o.node, "--version").Output()
	if err != nil {
		return fmt.Errorf("node is needed for the comparison: %w", err)
	}
	trimBundle, err := jstool.BundleFile(filepath.Join(o.fixtures, "trim.js"))
	if err != nil {
		return err
	}
	busyBundle, err := jstool.BundleFile(filepath.Join(o.fixtures, "busy.js"))
	if err != nil {
		return err
	}

	// Loading is once per tool and kept out of the per-call figures: the
	// first Load also compiles (and instruments) the engine module, later
	// ones reuse it.
	t0 := time.Now()
	eng, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	trim, err := jstool.Load(ctx, eng, jstool.Spec{Bundle: trimBundle, Manifest: sandbox.Manifest{ExecutorID: "trim", Version: "1.0.0"}})
	if err != nil {
		return err
	}
	firstLoad := time.Since(t0)
	t0 = time.Now()
	busy, err := jstool.Load(ctx, eng, jstool.Spec{Bundle: busyBundle, Manifest: sandbox.Manifest{ExecutorID: "busy", Version: "1.0.0"}})
	if err != nil {
		return err
	}
	laterLoad := time.Since(t0)

	lat, err := measureLatency(ctx, o, trim, trimBundle.Source)
	if err != nil {
		return err
	}
	mem, err := measureMemory(ctx, busy, o.k, o.busyN)
	if err != nil {
		return err
	}

	fmt.Printf("Machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s, node %s; trim tool snapshot %s.\n\n",
		report.CPUModel(), goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH,
		goruntime.Version(), strings.TrimSpace(string(nodeVersion)), mib(uint64(trim.SnapshotBytes())))
	printLatency(lat)
	fmt.Printf("\nOne-time `jstool.Load` (kept out of the figures above): %s for the first tool, which includes\n"+
		"compiling the QuickJS engine module (engine creation included); %s for another tool on the same engine.\n\n",
		ms(firstLoad), ms(laterLoad))
	printMemory(o, mem, busy.SnapshotBytes())
	return nil
}

// latency is one mode's measured calls.
type latency struct {
	name  string
	calls []time.Duration
}

// measureLatency runs the three modes in interleaved rounds, each mode's
// calls spread evenly over the rounds, so that a noisy stretch of a shared
// machine falls on every mode rather than on one.
func measureLatency(ctx context.Context, o options, tool *jstool.Tool, source []byte) ([]latency, error) {
	c, err := audit.Canonicalize([]byte(trimInput))
	if err != nil {
		return nil, err
	}
	in := sandbox.Input{Bytes: c.Bytes, Digest: audit.DigestBytes(c.Bytes)}
	want, err := execOnce(ctx, tool.Execute, in)
	if err != nil {
		return nil, err
	}
	node, cleanup, err := newNodeTool(o.node, source, c.Bytes, want)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	modes := []struct {
		latency
		n    int
		call func() error
	}{
		{latency{name: "wasmgate, from the snapshot (`Tool.Execute`)"}, o.n, func() error {
			return check(execOnce(ctx, tool.Execute, in))(want)
		}},
		{latency{name: "wasmgate, without the snapshot (`Tool.ExecuteCold`)"}, o.coldN, func() error {
			return check(execOnce(ctx, tool.ExecuteCold, in))(want)
		}},
		{latency{name: "node, one process per call"}, o.nodeN, node},
	}
	for _, m := range modes {
		for range o.warmup {
			if err := m.call(); err != nil {
				return nil, err
			}
		}
	}
	rounds := max(o.n, o.coldN, o.nodeN)
	for i := range rounds {
		for j := range modes {
			m := &modes[j]
			if i*m.n/rounds == (i+1)*m.n/rounds {
				continue
			}
			t := time.Now()
			err := m.call()
			d := time.Since(t)
			if err != nil {
				return nil, err
			}
			m.calls = append(m.calls, d)
		}
	}
	out := make([]latency, len(modes))
	for i, m := range modes {
		out[i] = m.latency
	}
	return out, nil
}

// execOnce runs one execution and returns its output, refusing anything but
// a completed one, so that no figure can be the cost of a failure.
func execOnce(ctx context.Context, exec func(context.Context, sandbox.Input) (sandbox.Outcome, error), in sandbox.Input) ([]byte, error) {
	out, err := exec(ctx, in)
	if err != nil {
		return nil, err
	}
	if out.Kind != sandbox.Completed {
		return nil, fmt.Errorf("the execution did not complete: %s (%s)", out.Kind, out.Message)
	}
	return out.Output, nil
}

func check(got []byte, err error) func(want []byte) error {
	return func(want []byte) error {
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("output %s, want %s", got, want)
		}
		return nil
	}
}

// newNodeTool writes the tool as an ES module and the runner beside it in a
// temporary directory, and returns a call that spawns node on them with the
// input on stdin. The time of a call is from the spawn to the process's exit
// with its output read.
func newNodeTool(node string, source, input, want []byte) (call func() error, cleanup func(), err error) {
	path, err := exec.LookPath(node)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "jsbench-node-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	runner := filepath.Join(dir, "runner.mjs")
	if err := errors.Join(
		os.WriteFile(filepath.Join(dir, "tool.mjs"), source, 0o600),
		os.WriteFile(runner, []byte(nodeRunner), 0o600),
	); err != nil {
		cleanup()
		return nil, nil, err
	}
	call = func() error {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(path, runner)
		cmd.Dir = dir
		cmd.Stdin = bytes.NewReader(input)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("node: %w: %s", err, stderr.Bytes())
		}
		if !bytes.Equal(stdout.Bytes(), want) {
			return fmt.Errorf("node printed %q, wasmgate %q: the two do not run the same tool", stdout.Bytes(), want)
		}
		return nil
	}
	return call, cleanup, nil
}

func printLatency(modes []latency) {
	nodeP50 := report.Percentile(modes[len(modes)-1].calls, 50)
	fmt.Println("| one call, fresh VM per call | n | p50 (µs) | p90 (µs) | p99 (µs) | mean (µs) | node p50 / this p50 |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, m := range modes {
		p50 := report.Percentile(m.calls, 50)
		fmt.Printf("| %s | %d | %s | %s | %s | %s | %.1fx |\n", m.name, len(m.calls),
			report.Micros(p50), report.Micros(report.Percentile(m.calls, 90)), report.Micros(report.Percentile(m.calls, 99)), report.Micros(mean(m.calls)),
			float64(nodeP50)/float64(p50))
	}
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// memory is what measureMemory observed.
type memory struct {
	alone             time.Duration // one busy execution with nothing else running
	wall              time.Duration // the k executions together
	baseHeap, baseRSS uint64
	// The peaks over the samples taken while all k calls were in flight.
	peakHeap, peakRSS uint64
	samples, full     int           // samples taken; with all k in flight
	fullFrom, fullTo  time.Duration // first and last of those, from the start
}

// measureMemory runs k executions of the busy tool at once, from k
// goroutines, and samples the Go heap in use and the process's RSS every
// millisecond; (peak − baseline)/k is what each live VM costs: its linear
// memory (a copy of the snapshot, in a buffer rounded up to a power of two
// of pages), wazero's instance, and the Go stack and objects of the call.
//
// Its limits:
//   - GOMAXPROCS bounds how many executions run at once; the others wait
//     for a CPU. They are still all alive together: an execution creates its
//     instance (and its memory) before running guest code, and the metered
//     code returns to Go at every fuel refill, where the scheduler lets the
//     waiting goroutines start theirs. That is checked, not assumed: a call
//     counts as in flight from just before Execute to just after, and only
//     samples with all k in flight count towards the peak. Later samples
//     would overstate it: a finished execution's memory goes back to a pool
//     and stays on the heap until the next collections.
//   - k in flight means none has returned, not that all k have created their
//     instance; the heap reaches a plateau once they have, and the peak is
//     taken at the plateau's end, so the loop must outlast the startup of
//     all k (-busy-n). The report says how long all k were in flight.
//   - The scheduler only runs the sampler when a goroutine running guest
//     code reaches a fuel refill, so samples are tens of milliseconds apart
//     rather than one; the plateau is long enough for that.
//   - The heap figure includes garbage not yet collected, and RSS what the
//     Go runtime freed but has not returned to the OS; both overstate a
//     little. RSS is read on Linux only.
//   - The heap is read through runtime/metrics, not sandbox.ReadMemStats:
//     ReadMemStats stops the world, which waits for every goroutine running
//     guest code to reach a fuel refill.
func measureMemory(ctx context.Context, tool *jstool.Tool, k, n int) (memory, error) {
	payload := []byte(`{"n":` + strconv.Itoa(n) + `}`)
	// Generous limits: k executions share GOMAXPROCS CPUs, so each takes up
	// to k/GOMAXPROCS times as long as alone.
	in := sandbox.Input{Bytes: payload, Digest: audit.DigestBytes(payload),
		Limits: sandbox.Limits{TimeoutMs: 600_000, Fuel: 1 << 62}}
	var m memory
	t := time.Now()
	if _, err := execOnce(ctx, tool.Execute, in); err != nil {
		return m, err
	}
	m.alone = time.Since(t)

	// Twice: the first collection moves the pooled guest memories to the
	// pools' victim caches, the second frees them.
	debug.FreeOSMemory()
	debug.FreeOSMemory()
	m.baseHeap, m.baseRSS = heapInUse(), rss()

	var inFlight atomic.Int64
	begin := make(chan struct{})
	stop := make(chan struct{})
	sampled := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			m.samples++
			if inFlight.Load() < int64(k) {
				continue
			}
			h, r := heapInUse(), rss()
			// Still all in flight after reading: the figures are of k live calls.
			if inFlight.Load() < int64(k) {
				continue
			}
			at := time.Since(start)
			if m.full == 0 {
				m.fullFrom = at
			}
			m.full++
			m.fullTo = at
			m.peakHeap, m.peakRSS = max(m.peakHeap, h), max(m.peakRSS, r)
		}
	}()

	var wg sync.WaitGroup
	errs := make([]error, k)
	for i := range k {
		wg.Go(func() {
			<-begin
			inFlight.Add(1)
			_, errs[i] = execOnce(ctx, tool.Execute, in)
			inFlight.Add(-1)
		})
	}
	start = time.Now()
	close(begin)
	wg.Wait()
	m.wall = time.Since(start)
	close(stop)
	<-sampled
	if err := errors.Join(errs...); err != nil {
		return m, err
	}
	if m.full < 2 {
		return m, fmt.Errorf("the %d executions were all in flight for %d samples, too few to measure: raise -busy-n", k, m.full)
	}
	return m, nil
}

func printMemory(o options, m memory, snapshot int) {
	k := uint64(o.k)
	perVM := func(peak, base uint64) string { return mib((max(peak, base) - base) / k) }
	fmt.Printf("| memory per concurrent VM: %d executions of a %s-iteration JS loop at once | value |\n", o.k, report.Thousands(int64(o.busyN)))
	fmt.Println("|---|---:|")
	fmt.Printf("| Go heap in use, (peak − baseline) / %d | **%s** |\n", o.k, perVM(m.peakHeap, m.baseHeap))
	if m.baseRSS > 0 {
		fmt.Printf("| process RSS, (peak − baseline) / %d | **%s** |\n", o.k, perVM(m.peakRSS, m.baseRSS))
	}
	fmt.Printf("| snapshot each execution starts from | %s |\n", mib(uint64(snapshot)))
	fmt.Printf("| Go heap in use: baseline → peak | %s → %s |\n", mib(m.baseHeap), mib(m.peakHeap))
	if m.baseRSS > 0 {
		fmt.Printf("| process RSS: baseline → peak | %s → %s |\n", mib(m.baseRSS), mib(m.peakRSS))
	}
	fmt.Printf("| all %d in flight (the peak is over these samples) | %s to %s of %s; %d of %d samples |\n",
		o.k, ms(m.fullFrom), ms(m.fullTo), ms(m.wall), m.full, m.samples)
	fmt.Printf("| one execution alone | %s |\n", ms(m.alone))
}

var heapMetrics = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
}

// heapInUse is MemStats.HeapInuse: the bytes of spans holding objects.
func heapInUse() uint64 {
	metrics.Read(heapMetrics)
	return heapMetrics[0].Value.Uint64() + heapMetrics[1].Value.Uint64()
}

// rss is the process's resident set (VmRSS), or 0 where /proc does not
// say.
func rss() uint64 {
	v, _ := report.ProcField("/proc/self/status", "VmRSS:")
	kb, err := strconv.ParseUint(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return kb * 1024
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(b uint64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
