// Command cluster measures what running the governed pipeline through NATS
// JetStream costs and gives, side by side with the pipeline in-process, in
// one run (docs/BENCHMARKS.md, Issue 15):
//
//  1. Latency, one request at a time: math.sum on {"numbers":[1,2]}
//     (testdata/registry.json) through a wasmgate.Runtime's Execute with a
//     durable file audit log and with a memory sink, against
//     cluster.Client.Execute → one in-process worker (cluster.NewWorker, Run)
//     → the JetStream audit chain, on a NATS server embedded in this process
//     (JetStream file storage in a temporary directory), over loopback. The
//     three variants alternate in rounds, the order rotating, so that a noisy
//     stretch of a shared machine falls on all of them.
//  2. Throughput from -clients concurrent callers for -duration: the
//     in-process pipeline (file and memory audit), against 1, 2 and 4 worker
//     processes (`wasmgate worker --concurrency 2`, the built command) behind
//     one cluster.Client, on a NATS server in a process of its own
//     (bench/natsserver), so that the CPU each side uses can be read from
//     /proc. Every worker set has its own deployment (a prefix of its own, so
//     an audit chain of its own) and stays up for the whole run; the
//     variants alternate in rounds. Audit publishes are counted by a plain
//     NATS subscription on the audit subject: every publish, stored or
//     refused (a writer that lost the expected-last-sequence race, or a
//     duplicate), against the records the stream stored.
//  3. At the end, every deployment's chain is exported (cluster.ExportAudit)
//     and verified (audit.Verify), and must hold exactly one verdict per
//     request sent, by trace id, and no other.
//
// Every call is checked: anything but SUCCESS with {"sum":3} is an error and
// fails the command. It prints Markdown tables.
//
// Run it from the module root:
//
//	go run ./bench/cluster [-wasmgate bin/wasmgate] [-rounds 5] [-calls 200] [-clients 32] [-duration 4s] [-workers 1,2,4]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/bench/internal/gobuild"
	"github.com/wasmgate/wasmgate/bench/internal/report"
	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

const (
	registryFile = "testdata/registry.json"
	action       = "math.sum"
	payload      = `{"numbers":[1,2]}`
	wantOutput   = `{"sum":3}`
	// targetAddedP50 is the target for the latency NATS adds.
	targetAddedP50 = time.Millisecond
)

type options struct {
	wasmgate    string
	rounds      int
	calls       int
	clients     int
	duration    time.Duration
	workers     []int
	concurrency int
	warmup      int
}

func main() {
	var o options
	workers := flag.String("workers", "1,2,4", "worker process counts to measure throughput with")
	flag.StringVar(&o.wasmgate, "wasmgate", "", "the wasmgate command the workers run (default: build ./cmd/wasmgate)")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; in each, every variant is measured once, the order rotating")
	flag.IntVar(&o.calls, "calls", 200, "latency: measured calls of each variant per round, one at a time")
	flag.IntVar(&o.clients, "clients", 32, "throughput: concurrent callers")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "throughput: measured time of each variant per round")
	flag.IntVar(&o.concurrency, "concurrency", 2, "throughput: --concurrency of each worker process")
	flag.IntVar(&o.warmup, "warmup", 50, "unmeasured calls of each variant before the first round")
	flag.Parse()
	for _, f := range strings.Split(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "cluster: -workers: %q is not a positive count\n", f)
			os.Exit(2)
		}
		o.workers = append(o.workers, n)
	}
	if o.rounds < 1 || o.calls < 1 || o.clients < 1 || o.duration <= 0 || o.concurrency < 1 || o.warmup < 0 {
		fmt.Fprintln(os.Stderr, "cluster: -rounds, -calls, -clients, -duration and -concurrency must be positive")
		os.Exit(2)
	}
	start := time.Now()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
	fmt.Printf("\n(bench/cluster took %.1f s)\n", time.Since(start).Seconds())
}

func run(ctx context.Context, o options) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the module root: the registry's fixtures are in testdata/")
	}
	tmp, err := os.MkdirTemp("", "wasmgate-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := gobuild.Wasmgate(ctx, o.wasmgate, tmp)
	if err != nil {
		return err
	}
	natsBin := filepath.Join(tmp, "natsserver")
	if err := gobuild.Build(ctx, natsBin, "./bench/natsserver"); err != nil {
		return err
	}

	eng, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	if err != nil {
		return err
	}
	defer eng.Close(ctx)
	reg, err := pipeline.LoadRegistry(ctx, registryFile, eng, js.Kind())
	if err != nil {
		return err
	}

	fmt.Printf("Machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s; NATS server %s (embedded, JetStream file storage, one server, replicas 1).\n",
		report.CPUModel(), goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH,
		goruntime.Version(), server.VERSION)
	fmt.Printf("Action %s on %s (%s), checked SUCCESS %s on every call.\n", action, payload, registryFile, wantOutput)

	lat, err := latency(ctx, o, tmp, eng, reg)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	printLatency(o, lat)

	thr, err := throughput(ctx, o, tmp, bin, natsBin, reg)
	if err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	_ = thr
	return nil
}

// call runs the action through r and checks its result.
func call(ctx context.Context, r pipeline.Runner, traceID string) error {
	// A request that never gets a verdict fails the run rather than hang it.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := r.Execute(ctx, pipeline.ActionRequest{Action: action, Payload: json.RawMessage(payload), TraceID: traceID})
	switch {
	case err != nil:
		return err
	case res.Status != pipeline.StatusSuccess:
		return fmt.Errorf("%s %v: %s", res.Status, res.ReasonCodes, res.Message)
	case string(res.Output) != wantOutput:
		return fmt.Errorf("output %s, want %s", res.Output, wantOutput)
	}
	return nil
}

// --- latency ---

type latencyVariant struct {
	name   string
	runner pipeline.Runner
	calls  []time.Duration
	sent   []string // trace ids, for the NATS variant's check
}

func latency(ctx context.Context, o options, tmp string, eng sandbox.Engine, reg *pipeline.Registry) ([]*latencyVariant, error) {
	fileSink, err := audit.OpenFile(filepath.Join(tmp, "latency-audit.jsonl"))
	if err != nil {
		return nil, err
	}
	defer fileSink.Close()
	memSink := audit.NewMemorySink()
	defer memSink.Close()

	url, stop, err := embeddedServer(filepath.Join(tmp, "latency-js"))
	if err != nil {
		return nil, err
	}
	defer stop()
	c, err := cluster.Connect(cluster.Options{URL: url, Name: "bench latency"})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.Setup(ctx, cluster.Layout{}); err != nil {
		return nil, err
	}
	if _, err := cluster.Publish(ctx, c, registryFile, jstool.Store{}); err != nil {
		return nil, err
	}
	// The in-process worker runs on a Runtime, as `wasmgate worker` does.
	workerSink, err := cluster.OpenAuditSink(ctx, c, cluster.AuditOptions{})
	if err != nil {
		return nil, err
	}
	rt, err := wasmgate.New(ctx, wasmgate.WithAuditSink(workerSink),
		wasmgate.WithRegistry(func(context.Context, sandbox.Engine) (*pipeline.Registry, error) { return pipeline.NewRegistry(), nil }))
	if err != nil {
		_ = workerSink.Close()
		return nil, err
	}
	defer rt.Close(ctx)
	w, err := cluster.NewWorker(ctx, c, rt, workerSink, cluster.WorkerOptions{Concurrency: 2})
	if err != nil {
		return nil, err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	workerDone := make(chan error, 1)
	go func() {
		err := w.Run(wctx)
		if wctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "cluster: the in-process worker stopped: %v\n", err)
		}
		workerDone <- err
	}()
	defer func() {
		stopWorker()
		<-workerDone
	}()
	client, err := cluster.NewClient(ctx, c, cluster.ClientOptions{})
	if err != nil {
		return nil, err
	}
	defer client.Close()

	vs := []*latencyVariant{
		{name: "in-process, durable file audit", runner: inProcess(ctx, reg, fileSink)},
		{name: "in-process, memory audit", runner: inProcess(ctx, reg, memSink)},
		{name: "NATS: Client → 1 worker → JetStream audit", runner: client},
	}
	defer closeInProcess(ctx, vs[0].runner, vs[1].runner)
	natsV := vs[2]
	once := func(v *latencyVariant) (time.Duration, error) {
		id := pipeline.NewTraceID()
		t := time.Now()
		err := call(ctx, v.runner, id)
		d := time.Since(t)
		if err != nil {
			if v.runner == client {
				err = fmt.Errorf("%w\n  %s", err, deploymentState(ctx, c, id))
			}
			return 0, fmt.Errorf("%s: %w", v.name, err)
		}
		v.sent = append(v.sent, id)
		return d, nil
	}
	for _, v := range vs {
		for range o.warmup {
			if _, err := once(v); err != nil {
				return nil, err
			}
		}
	}
	for r := range o.rounds {
		for i := range vs {
			v := vs[(r+i)%len(vs)]
			for range o.calls {
				d, err := once(v)
				if err != nil {
					return nil, err
				}
				v.calls = append(v.calls, d)
			}
		}
	}
	// The worker's chain: one verdict per request, and it verifies.
	if err := checkChain(ctx, c, natsV.sent); err != nil {
		return nil, fmt.Errorf("the latency deployment's audit chain: %w", err)
	}
	fmt.Printf("Latency deployment: audit chain exported and verified, exactly one verdict for each of its %d requests.\n", len(natsV.sent))
	return vs, nil
}

func embeddedServer(dir string) (url string, stop func(), err error) {
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
	})
	if err != nil {
		return "", nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		s.Shutdown()
		return "", nil, errors.New("the embedded NATS server is not ready within 20s")
	}
	return s.ClientURL(), func() { s.Shutdown(); s.WaitForShutdown() }, nil
}

func printLatency(o options, vs []*latencyVariant) {
	fmt.Printf("\n### Latency, one request at a time (%d rounds × %d calls per variant, interleaved; %d warm-up calls each)\n\n", o.rounds, o.calls, o.warmup)
	fmt.Println("| variant | p50 (µs) | p90 (µs) | p99 (µs) | p50 ratio | added p50 by NATS (µs) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	natsP50 := report.Percentile(vs[2].calls, 50)
	for _, v := range vs {
		p50 := report.Percentile(v.calls, 50)
		added := "—"
		if v != vs[2] {
			added = report.Thousands((natsP50 - p50).Microseconds())
		}
		fmt.Printf("| %s | %s | %s | %s | %.2fx | %s |\n", v.name, report.Micros(p50),
			report.Micros(report.Percentile(v.calls, 90)), report.Micros(report.Percentile(v.calls, 99)),
			float64(p50)/float64(report.Percentile(vs[0].calls, 50)), added)
	}
	// Per-round medians, so that the spread is visible.
	fmt.Println()
	for _, v := range vs {
		var meds []string
		for r := range o.rounds {
			meds = append(meds, report.Micros(report.Percentile(v.calls[r*o.calls:(r+1)*o.calls], 50)))
		}
		fmt.Printf("- %s: p50 per round %s µs\n", v.name, strings.Join(meds, ", "))
	}
	base := report.Percentile(vs[1].calls, 50)
	verdict := "met"
	if natsP50-base >= targetAddedP50 {
		verdict = "missed"
	}
	fmt.Printf("\nTarget: NATS adds under %v at p50 over the in-process pipeline (memory audit): %s (+%s µs; +%s µs over the durable file audit).\n",
		targetAddedP50, verdict, report.Thousands((natsP50 - base).Microseconds()),
		report.Thousands((natsP50 - report.Percentile(vs[0].calls, 50)).Microseconds()))
}

// --- throughput ---

type thrVariant struct {
	name    string
	workers int // 0: in-process
	runner  pipeline.Runner

	// NATS variants only.
	conn       *cluster.Conn
	procs      []*exec.Cmd
	published  atomic.Int64 // audit publishes seen on the audit subject
	publishSub *nats.Subscription

	sent     []string
	reqs     []float64 // requests/s per round
	records  []float64 // records stored/s per round
	rejected []int64   // audit publishes not stored, per round
	stored   []int64
	workCPU  []float64 // worker processes' CPU seconds per request, per round
	srvCPU   []float64 // NATS server's CPU seconds per request, per round
	benchCPU []float64 // this process's CPU seconds per request (callers, client; the pipeline in-process)
}

func throughput(ctx context.Context, o options, tmp, bin, natsBin string, reg *pipeline.Registry) ([]*thrVariant, error) {
	// The NATS server, in a process of its own.
	srv := exec.Command(natsBin, "-port", "-1", "-store", filepath.Join(tmp, "throughput-js"))
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		return nil, err
	}
	serverPID.Store(int64(srv.Process.Pid))
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("natsserver: %w", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if !ok {
		return nil, fmt.Errorf("natsserver said %q", line)
	}

	fileSink, err := audit.OpenFile(filepath.Join(tmp, "throughput-audit.jsonl"))
	if err != nil {
		return nil, err
	}
	defer fileSink.Close()
	memSink := audit.NewDiscardSink()
	vs := []*thrVariant{
		{name: "in-process, durable file audit", runner: inProcess(ctx, reg, fileSink)},
		{name: "in-process, audit checked and dropped", runner: inProcess(ctx, reg, memSink)},
	}
	defer closeInProcess(ctx, vs[0].runner, vs[1].runner)
	defer func() {
		for _, v := range vs {
			stopWorkers(v)
			if v.publishSub != nil {
				_ = v.publishSub.Unsubscribe()
			}
			if cl, ok := v.runner.(*cluster.Client); ok {
				cl.Close()
			}
			if v.conn != nil {
				v.conn.Close()
			}
		}
	}()
	for _, n := range o.workers {
		v := &thrVariant{name: fmt.Sprintf("NATS, %d worker process%s × concurrency %d", n, plural(n), o.concurrency), workers: n}
		vs = append(vs, v)
		if err := startDeployment(ctx, v, url, bin, fmt.Sprintf("bench-w%d", n), n, o.concurrency, tmp); err != nil {
			return nil, fmt.Errorf("%d workers: %w", n, err)
		}
	}

	for _, v := range vs {
		if _, err := drive(ctx, v, o.clients, 0, max(o.warmup, 4*o.clients)); err != nil {
			return nil, diagnose(ctx, v, tmp, err)
		}
	}
	for r := range o.rounds {
		for i := range vs {
			v := vs[(r+i)%len(vs)]
			if _, err := drive(ctx, v, o.clients, o.duration, 0); err != nil {
				return nil, diagnose(ctx, v, tmp, err)
			}
		}
	}
	// Printed before the chains are checked, so that a failed check still
	// leaves the figures.
	printThroughput(o, vs)
	for _, v := range vs[2:] {
		if err := checkChain(ctx, v.conn, v.sent); err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
	}
	fmt.Printf("\nThroughput deployments: every audit chain exported and verified, exactly one verdict per request sent (%s).\n",
		strings.Join(func() []string {
			var s []string
			for _, v := range vs[2:] {
				s = append(s, fmt.Sprintf("%d workers: %s", v.workers, report.Thousands(int64(len(v.sent)))))
			}
			return s
		}(), ", "))
	return vs, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}

// startDeployment publishes the registry under prefix, starts n worker
// processes and waits for them, and makes v's client.
func startDeployment(ctx context.Context, v *thrVariant, url, bin, prefix string, n, concurrency int, tmp string) error {
	c, err := cluster.Connect(cluster.Options{URL: url, Prefix: prefix, Name: "bench " + prefix})
	if err != nil {
		return err
	}
	v.conn = c
	if err := c.Setup(ctx, cluster.Layout{}); err != nil {
		return err
	}
	if _, err := cluster.Publish(ctx, c, registryFile, jstool.Store{}); err != nil {
		return err
	}
	v.publishSub, err = c.NC.Subscribe(c.Names.AuditSubject(), func(*nats.Msg) { v.published.Add(1) })
	if err != nil {
		return err
	}
	_ = v.publishSub.SetPendingLimits(-1, -1)
	for i := range n {
		cmd := exec.Command(bin, "worker", "--nats", url, "--nats-prefix", prefix,
			"--concurrency", strconv.Itoa(concurrency), "--cache-dir", filepath.Join(tmp, "cache"))
		// A bench that is killed takes its workers with it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
		stderr, err := cmd.StderrPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		v.procs = append(v.procs, cmd)
		ready := make(chan error, 1)
		go func() {
			log, _ := os.Create(filepath.Join(tmp, fmt.Sprintf("%s-worker%d.log", prefix, i+1)))
			defer log.Close()
			s := bufio.NewScanner(io.TeeReader(stderr, log))
			said := false
			var last string
			for s.Scan() {
				last = s.Text()
				if !said && strings.Contains(last, "worker ready") {
					said = true
					ready <- nil
				}
			}
			if !said {
				ready <- fmt.Errorf("worker %d of %s ended before it was ready: %s", i+1, prefix, last)
			}
		}()
		select {
		case err := <-ready:
			if err != nil {
				return err
			}
		case <-time.After(60 * time.Second):
			return fmt.Errorf("worker %d of %s: not ready within 60s", i+1, prefix)
		}
	}
	cl, err := cluster.NewClient(ctx, c, cluster.ClientOptions{})
	if err != nil {
		return err
	}
	v.runner = cl
	return nil
}

func stopWorkers(v *thrVariant) {
	for _, p := range v.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range v.procs {
		_ = p.Wait()
	}
	v.procs = nil
}

// drive runs clients callers on v for d, or for calls calls in all when d is
// 0 (the warm-up), and records the round when d is not 0.
func drive(ctx context.Context, v *thrVariant, clients int, d time.Duration, calls int) (int, error) {
	var (
		wg       sync.WaitGroup
		n        atomic.Int64
		mu       sync.Mutex
		firstErr error
		ids      = make([][]string, clients)
	)
	seq0, pub0 := auditSeq(ctx, v), v.published.Load()
	cpu0 := cpuTimes(v)
	deadline := time.Now().Add(d)
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			for {
				if d > 0 && !time.Now().Before(deadline) {
					return
				}
				if d == 0 && n.Add(1) > int64(calls) {
					return
				}
				id := pipeline.NewTraceID()
				if err := call(ctx, v.runner, id); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("%s: %w", v.name, err)
					}
					mu.Unlock()
					return
				}
				ids[i] = append(ids[i], id)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, firstErr
	}
	done := 0
	for _, s := range ids {
		done += len(s)
		v.sent = append(v.sent, s...)
	}
	if d == 0 {
		return done, nil
	}
	cpu1 := cpuTimes(v)
	v.reqs = append(v.reqs, float64(done)/elapsed.Seconds())
	v.benchCPU = append(v.benchCPU, (cpu1.bench-cpu0.bench)/float64(done))
	if v.conn != nil {
		// Every verdict is stored before its result is answered, so the
		// stream holds this round's records now.
		stored := int64(auditSeq(ctx, v) - seq0)
		v.stored = append(v.stored, stored)
		v.records = append(v.records, float64(stored)/elapsed.Seconds())
		// The subscription may trail the stream by a message or two.
		time.Sleep(50 * time.Millisecond)
		v.rejected = append(v.rejected, v.published.Load()-pub0-stored)
		v.workCPU = append(v.workCPU, (cpu1.workers-cpu0.workers)/float64(done))
		v.srvCPU = append(v.srvCPU, (cpu1.server-cpu0.server)/float64(done))
	}
	return done, nil
}

func auditSeq(ctx context.Context, v *thrVariant) uint64 {
	if v.conn == nil {
		return 0
	}
	st, err := v.conn.JS.Stream(ctx, v.conn.Names.AuditStream())
	if err != nil {
		return 0
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0
	}
	return info.State.LastSeq
}

// cpu is CPU time in seconds, user and system.
type cpu struct{ bench, workers, server float64 }

var serverPID atomic.Int64

func cpuTimes(v *thrVariant) cpu {
	var c cpu
	c.bench = procCPU(os.Getpid())
	for _, p := range v.procs {
		c.workers += procCPU(p.Process.Pid)
	}
	if pid := serverPID.Load(); pid != 0 {
		c.server = procCPU(int(pid))
	}
	return c
}

// procCPU is the user and system CPU time of process pid, from
// /proc/PID/stat (0 where there is no /proc).
func procCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields are
	// counted after its closing parenthesis.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func medianInt(xs []int64) int64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return int64(report.Median(f))
}

func printThroughput(o options, vs []*thrVariant) {
	fmt.Printf("\n### Throughput, %d concurrent callers (%d rounds × %v per variant, interleaved; medians of the rounds)\n\n", o.clients, o.rounds, o.duration)
	fmt.Println("| variant | requests/s | ratio to in-process (file audit) | requests/s per worker | audit records stored/s | audit publishes refused per round (stored) | CPU ms per request: workers / NATS server / caller process |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---|")
	base := report.Median(vs[0].reqs)
	for _, v := range vs {
		rps := report.Median(v.reqs)
		perWorker, recs, refused, cpuCol := "—", "—", "—", fmt.Sprintf("— / — / %.3f", report.Median(v.benchCPU)*1000)
		if v.conn != nil {
			perWorker = report.Thousands(int64(rps / float64(v.workers)))
			recs = report.Thousands(int64(report.Median(v.records)))
			refused = fmt.Sprintf("%s (%s)", report.Thousands(medianInt(v.rejected)), report.Thousands(medianInt(v.stored)))
			cpuCol = fmt.Sprintf("%.3f / %.3f / %.3f", report.Median(v.workCPU)*1000, report.Median(v.srvCPU)*1000, report.Median(v.benchCPU)*1000)
		}
		fmt.Printf("| %s | %s | %.2fx | %s | %s | %s | %s |\n", v.name, report.Thousands(int64(rps)), rps/base, perWorker, recs, refused, cpuCol)
	}
	fmt.Println()
	for _, v := range vs {
		var rs []string
		for _, x := range v.reqs {
			rs = append(rs, report.Thousands(int64(x)))
		}
		fmt.Printf("- %s: requests/s per round %s\n", v.name, strings.Join(rs, ", "))
	}
}

// --- the chain ---

// checkChain exports c's audit chain, verifies it, and checks that it
// holds exactly one verdict for each trace id of sent, and no other.
func checkChain(ctx context.Context, c *cluster.Conn, sent []string) error {
	var buf bytes.Buffer
	n, err := cluster.ExportAudit(ctx, c, &buf)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	rep, err := audit.Verify(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if uint64(rep.Records) != n {
		return fmt.Errorf("verify checked %d records of %d", rep.Records, n)
	}
	if len(rep.Unanswered) > 0 {
		return fmt.Errorf("%d attempts without a verdict (the first: trace id %s)", len(rep.Unanswered), rep.Unanswered[0].TraceID)
	}
	verdicts := map[string]int{}
	dec := json.NewDecoder(&buf)
	for {
		var r struct {
			EventType string `json:"event_type"`
			TraceID   string `json:"trace_id"`
		}
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if r.EventType == audit.EventActionAudit {
			verdicts[r.TraceID]++
		}
	}
	for _, id := range sent {
		switch verdicts[id] {
		case 1:
			delete(verdicts, id)
		case 0:
			return fmt.Errorf("no verdict for trace id %s", id)
		default:
			return fmt.Errorf("%d verdicts for trace id %s", verdicts[id], id)
		}
	}
	if len(verdicts) > 0 {
		return fmt.Errorf("%d verdicts for trace ids never sent", len(verdicts))
	}
	return nil
}

// diagnose adds to a failed call's error what the deployment's chain and
// its workers' logs say.
func diagnose(ctx context.Context, v *thrVariant, tmp string, err error) error {
	if v.conn == nil {
		return err
	}
	msg := err.Error()
	if st, serr := v.conn.JS.Stream(ctx, v.conn.Names.AuditStream()); serr == nil {
		if info, ierr := st.Info(ctx); ierr == nil {
			msg += fmt.Sprintf("\n  the audit stream: %d records, %d consumers", info.State.Msgs, info.State.Consumers)
		}
	}
	if cerr := checkChain(ctx, v.conn, nil); cerr != nil {
		msg += "\n  the audit chain: " + cerr.Error()
	}
	logs, _ := filepath.Glob(filepath.Join(tmp, v.conn.Names.Prefix+"-worker*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		msg += fmt.Sprintf("\n  %s (%d lines), the last:\n    %s", filepath.Base(l), len(lines), strings.Join(lines[max(0, len(lines)-3):], "\n    "))
	}
	return errors.New(msg)
}

// deploymentState says where a request that got no verdict is: the actions
// stream and the workers' consumer, and the audit chain.
func deploymentState(ctx context.Context, c *cluster.Conn, traceID string) string {
	var b strings.Builder
	if st, err := c.JS.Stream(ctx, c.Names.ActionsStream()); err == nil {
		if info, err := st.Info(ctx); err == nil {
			fmt.Fprintf(&b, "actions stream: %d messages (seq %d..%d); ", info.State.Msgs, info.State.FirstSeq, info.State.LastSeq)
		}
		if cons, err := st.Consumer(ctx, c.Names.Workers()); err == nil {
			if ci, err := cons.Info(ctx); err == nil {
				fmt.Fprintf(&b, "consumer: pending %d, ack pending %d, redelivered %d, waiting pulls %d, delivered %d/%d; ",
					ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting, ci.Delivered.Stream, ci.AckFloor.Stream)
			}
		}
	}
	var buf bytes.Buffer
	n, err := cluster.ExportAudit(ctx, c, &buf)
	fmt.Fprintf(&b, "audit: %d records (%v), trace id attempt %v, verdict %v",
		n, err, bytes.Contains(buf.Bytes(), []byte(`"event_type":"action_attempt"`)) && bytes.Contains(buf.Bytes(), []byte(traceID)),
		strings.Count(buf.String(), traceID))
	return b.String()
}

// inProcess is the governed path in this process, as an embedder runs it: a
// Runtime of reg that audits to sink (and closes it when it is closed). A
// Runtime that cannot be made is a runner whose every call fails with why.
func inProcess(ctx context.Context, reg *pipeline.Registry, sink audit.Sink) pipeline.Runner {
	rt, err := wasmgate.New(ctx, wasmgate.WithAuditSink(sink),
		wasmgate.WithRegistry(func(context.Context, wasmgate.Engine) (*pipeline.Registry, error) { return reg, nil }))
	if err != nil {
		return failing{err}
	}
	return rt
}

// closeInProcess closes the runners inProcess made.
func closeInProcess(ctx context.Context, runners ...pipeline.Runner) {
	for _, r := range runners {
		if rt, ok := r.(*wasmgate.Runtime); ok {
			_ = rt.Close(context.WithoutCancel(ctx))
		}
	}
}

// failing is a runner that could not be made.
type failing struct{ err error }

func (f failing) Execute(context.Context, pipeline.ActionRequest) (pipeline.ActionResult, error) {
	return pipeline.ActionResult{}, f.err
}

func (failing) Actions() []string { return nil }
