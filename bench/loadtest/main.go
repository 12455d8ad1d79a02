// Command loadtest measures what serving a tool over HTTP costs: the same
// trivial JS tool, called by the same number of concurrent clients for the
// same time, once in-process through the pipeline and once through
// `wasmgate serve` over loopback HTTP with keep-alive connections. It prints
// a Markdown table for docs/BENCHMARKS.md.
//
// The tool is trim (execute({text}) → {text: text.trim()}) of a package
// trim-tools@1.0.0, laid out in a temporary tool store without npm, called
// on {"text":"  hello world  "}. Each call is checked: anything but a
// SUCCESS with the exact output (over HTTP: anything but a 200 with
// success:true and that output) is an error, and the command fails when
// there is any.
//
// Both paths run with a durable audit file (an fsync per group commit, as
// in production) and with the audit records checked and dropped; the server
// gets --max-concurrency of at least the clients, so that no call is refused
// by design. The two paths of one audit kind alternate in rounds, so that a
// noisy stretch of a shared machine falls on both.
//
// Run it from the module root (it builds the wasmgate command from there,
// unless -wasmgate names one already built, as `make loadtest` does):
//
//	go run ./bench/loadtest [-clients 8] [-duration 10s] [-max-requests N] [-rounds 5] [-wasmgate bin/wasmgate]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/bench/internal/gobuild"
	"github.com/wasmgate/wasmgate/bench/internal/report"
	"github.com/wasmgate/wasmgate/bench/internal/serveproc"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
)

const (
	packageName = "trim-tools"
	version     = "1.0.0"
	toolName    = "trim"
	trimBundle  = `export const trim = { execute: ({ text }) => ({ text: text.trim() }) };` + "\n"
	trimInput   = `{"text":"  hello world  "}`
	trimOutput  = `{"text":"hello world"}`
	// targetRatio is the target: HTTP within 2x of in-process.
	targetRatio = 2.0
)

// serverLimits are the limits `wasmgate serve` gives an npm tool whose
// manifest sets none (at its default --max-execution-time and
// --max-body-bytes), so that the in-process path runs the tool as the
// server does (fuel unset: a JS tool's default covers its timeout).
var serverLimits = sandbox.Limits{
	TimeoutMs: 60_000, MemoryPages: 1024,
	MaxPayloadBytes: 10 << 20, MaxOutputBytes: 10 << 20, MaxDepth: 64, MaxListItems: 100_000,
}

type options struct {
	clients     int
	duration    time.Duration // per path and audit kind
	maxRequests int           // per path and audit kind; 0 means no bound but the time
	rounds      int
	warmup      int    // unmeasured calls per client before the first round
	wasmgate    string // the command to serve with; "" builds ./cmd/wasmgate
}

func main() {
	var o options
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each path, for each audit kind")
	flag.IntVar(&o.maxRequests, "max-requests", 1_000_000, "at most this many measured calls of each path, for each audit kind (0: no bound but -duration)")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds the measured time is split into, the paths alternating")
	flag.IntVar(&o.warmup, "warmup", 20, "unmeasured calls per client first")
	flag.StringVar(&o.wasmgate, "wasmgate", "", "a wasmgate command already built (default: build ./cmd/wasmgate)")
	flag.Parse()
	if o.clients < 1 || o.rounds < 1 || o.duration <= 0 || o.maxRequests < 0 || o.warmup < 0 {
		fmt.Fprintln(os.Stderr, "loadtest: -clients, -rounds and -duration must be positive, -max-requests and -warmup at least 0")
		os.Exit(2)
	}
	start := time.Now()
	err := run(context.Background(), o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
	fmt.Printf("\n(loadtest took %.1f s)\n", time.Since(start).Seconds())
}

// auditKind is where both paths' audit records go.
type auditKind struct {
	name    string
	durable bool
}

var auditKinds = []auditKind{{"durable file", true}, {"checked and dropped", false}}

func run(ctx context.Context, o options, w io.Writer) error {
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the module root: it builds ./cmd/wasmgate")
	}
	tmp, err := os.MkdirTemp("", "wasmgate-loadtest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := gobuild.Wasmgate(ctx, o.wasmgate, tmp)
	if err != nil {
		return err
	}
	store := filepath.Join(tmp, "tools")
	if err := layOutStore(store); err != nil {
		return err
	}
	eng, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	if err != nil {
		return err
	}
	defer eng.Close(ctx)

	var loads []*load
	for _, kind := range auditKinds {
		in, closeIn, err := inProcess(ctx, eng, store, kind, tmp)
		if err != nil {
			return err
		}
		srv, err := startServer(ctx, bin, store, kind, tmp, o.clients)
		if err != nil {
			closeIn()
			return err
		}
		over := overHTTP(srv.URL, o.clients, kind)
		err = measure(ctx, o, in, over)
		closeIn()
		if stopErr := srv.Stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			return err
		}
		if kind.durable {
			// Every call, warm-up included, left its record in each log.
			if err := checkAuditCount(filepath.Join(tmp, "in-process.jsonl"), in); err != nil {
				return err
			}
			if err := checkAuditCount(srv.auditPath, over); err != nil {
				return err
			}
		}
		loads = append(loads, in, over)
	}

	fmt.Fprintf(w, "Machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s. %d clients; each path %s per audit kind, in %d alternating rounds.\n\n",
		report.CPUModel(), goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH, goruntime.Version(),
		o.clients, o.duration, o.rounds)
	printTable(w, loads)
	var failed []string
	for _, l := range loads {
		if l.errors > 0 {
			failed = append(failed, fmt.Sprintf("%s, %s audit: %d errors, the first: %s", l.path, l.audit, l.errors, l.firstError))
		}
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

// layOutStore writes the trim package into a tool store as `wasmgate tools
// add` leaves it, without npm.
func layOutStore(dir string) error {
	entry := filepath.Join(dir, packageName+"@"+version)
	pkgDir := filepath.Join(entry, "node_modules", packageName)
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		return err
	}
	return errors.Join(
		os.WriteFile(filepath.Join(entry, "bundle.mjs"), []byte(trimBundle), 0o644),
		os.WriteFile(filepath.Join(pkgDir, "package.json"), []byte(`{"name":"`+packageName+`","version":"`+version+`"}`), 0o644),
	)
}

// load is one path's calls and what came of them.
type load struct {
	path, audit string
	call        func(context.Context) error

	clients    int
	calls      int // all calls, warm-up included
	requests   int // measured calls
	errors     int
	firstError string
	elapsed    time.Duration // wall time of the measured rounds
	latencies  []time.Duration
}

func (l *load) throughput() float64 {
	if l.elapsed <= 0 {
		return 0
	}
	return float64(l.requests) / l.elapsed.Seconds()
}

// inProcess is the trim tool through a pipeline of this process, with the
// audit sink of kind.
func inProcess(ctx context.Context, eng sandbox.Engine, store string, kind auditKind, tmp string) (*load, func(), error) {
	src := pipeline.ExecutorSource{Package: packageName + "@" + version, Tool: toolName, ToolsDir: store}
	opts := []wasmgate.Option{
		wasmgate.WithEngine(eng.Name()),
		wasmgate.WithKind(js.Kind()),
		wasmgate.WithRegistry(func(ctx context.Context, e wasmgate.Engine) (*pipeline.Registry, error) {
			return pipeline.RegistryForSource(ctx, e, src, "", serverLimits, js.Kind())
		}),
	}
	if kind.durable {
		opts = append(opts, wasmgate.WithAuditFile(filepath.Join(tmp, "in-process.jsonl")))
	}
	rt, err := wasmgate.New(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	p := rt
	action := rt.Actions()[0]
	want := []byte(trimOutput)
	call := func(ctx context.Context) error {
		res, err := p.Execute(ctx, pipeline.ActionRequest{Action: action, Payload: json.RawMessage(trimInput)})
		switch {
		case err != nil:
			return err
		case res.Status != pipeline.StatusSuccess:
			return fmt.Errorf("%s %v: %s", res.Status, res.ReasonCodes, res.Message)
		case !bytes.Equal(res.Output, want):
			return fmt.Errorf("output %s, want %s", res.Output, want)
		}
		return nil
	}
	return &load{path: "in-process pipeline", audit: kind.name, call: call}, func() { rt.Close(context.WithoutCancel(ctx)) }, nil
}

// overHTTP is the trim tool through the server at url, from clients that
// keep their connections alive.
func overHTTP(url string, clients int, kind auditKind) *load {
	client := &http.Client{
		Timeout: time.Minute,
		Transport: &http.Transport{
			MaxIdleConns:        clients,
			MaxIdleConnsPerHost: clients,
			IdleConnTimeout:     time.Minute,
			DisableCompression:  true,
		},
	}
	body := []byte(`{"packageName":"` + packageName + `","version":"` + version + `","name":"` + toolName + `","params":` + trimInput + `}`)
	want := []byte(trimOutput)
	call := func(ctx context.Context) error {
		status, b, err := serveproc.ExecuteTool(ctx, client, url, body)
		if err != nil {
			return err
		}
		return checkReply(status, b, want)
	}
	return &load{path: "HTTP via `wasmgate serve`", audit: kind.name, call: call}
}

// checkReply accepts a 200 with success:true and exactly the output want.
func checkReply(status int, body, want []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(body))
	}
	var r struct {
		Success bool            `json:"success"`
		Output  json.RawMessage `json:"output"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("the reply is not the protocol's JSON: %w: %s", err, body)
	}
	switch {
	case !r.Success && r.Error != nil:
		return fmt.Errorf("%s: %s", r.Error.Code, r.Error.Message)
	case !r.Success:
		return fmt.Errorf("success false: %s", body)
	case !bytes.Equal(r.Output, want):
		return fmt.Errorf("output %s, want %s", r.Output, want)
	}
	return nil
}

// measure warms both loads up, then runs them in alternating rounds.
func measure(ctx context.Context, o options, loads ...*load) error {
	for _, l := range loads {
		l.clients = o.clients
		drive(ctx, l, o.clients, 0, o.warmup*o.clients, false)
		if l.errors > 0 {
			return fmt.Errorf("%s, %s audit: the warm-up failed: %s", l.path, l.audit, l.firstError)
		}
	}
	for r := range o.rounds {
		// The rounds' slices of the time add up to o.duration exactly.
		d := o.duration*time.Duration(r+1)/time.Duration(o.rounds) - o.duration*time.Duration(r)/time.Duration(o.rounds)
		for _, l := range loads {
			limit := 0
			if o.maxRequests > 0 {
				limit = o.maxRequests - l.requests
				if limit <= 0 {
					continue
				}
			}
			drive(ctx, l, o.clients, d, limit, true)
		}
	}
	return nil
}

// drive runs clients goroutines calling l for d (no bound when 0) and at
// most limit calls in all (no bound when 0; at least one bound is set).
// Measured calls count towards l's figures; every call counts in l.calls.
func drive(ctx context.Context, l *load, clients int, d time.Duration, limit int, measured bool) {
	var issued atomic.Int64
	var deadline time.Time
	if d > 0 {
		deadline = time.Now().Add(d)
	}
	type tally struct {
		latencies  []time.Duration
		errors     int
		firstError string
	}
	tallies := make([]tally, clients)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range tallies {
		t := &tallies[i]
		wg.Go(func() {
			for {
				if limit > 0 && issued.Add(1) > int64(limit) {
					return
				}
				now := time.Now()
				if !deadline.IsZero() && !now.Before(deadline) {
					return
				}
				err := l.call(ctx)
				t.latencies = append(t.latencies, time.Since(now))
				if err != nil {
					if t.errors == 0 {
						t.firstError = err.Error()
					}
					t.errors++
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, t := range tallies {
		l.calls += len(t.latencies)
		l.errors += t.errors
		if l.firstError == "" {
			l.firstError = t.firstError
		}
		if measured {
			l.requests += len(t.latencies)
			l.latencies = append(l.latencies, t.latencies...)
		}
	}
	if measured {
		l.elapsed += elapsed
	}
}

// checkAuditCount checks that the audit log at path holds one record per
// call of l.
func checkAuditCount(path string, l *load) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	// Every call ran the tool: an attempt and a verdict each.
	verdicts := bytes.Count(raw, []byte(`"event_type":"action_audit"`))
	attempts := bytes.Count(raw, []byte(`"event_type":"action_attempt"`))
	if verdicts != l.calls || attempts != l.calls {
		return fmt.Errorf("%s, %s audit: %d calls but %d verdicts and %d attempts in %s", l.path, l.audit, l.calls, verdicts, attempts, path)
	}
	return nil
}

// server is a `wasmgate serve` under load, with the audit log it writes
// (empty when it writes none).
type server struct {
	*serveproc.Server
	auditPath string
}

// startServer starts the binary bin serving store on a loopback port, with
// the audit kind, and returns once it listens.
func startServer(ctx context.Context, bin, store string, kind auditKind, tmp string, clients int) (*server, error) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--tools-dir", store, "--log-format", "json",
		"--max-concurrency", strconv.Itoa(clients), "--cache-dir", filepath.Join(tmp, "cache")}
	s := &server{}
	if kind.durable {
		s.auditPath = filepath.Join(tmp, "serve.jsonl")
		args = append(args, "--audit", s.auditPath)
	}
	var err error
	s.Server, err = serveproc.Start(ctx, bin, args)
	return s, err
}

// printTable prints the loads in pairs (in-process, then HTTP) per audit
// kind, with the ratio of their throughputs on the HTTP row.
func printTable(w io.Writer, loads []*load) {
	fmt.Fprintln(w, "| path | audit | clients | requests | errors | throughput (req/s) | p50 (µs) | p99 (µs) | in-process / HTTP throughput |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	var verdicts []string
	met := true
	for i := 0; i+1 < len(loads); i += 2 {
		in, over := loads[i], loads[i+1]
		ratio := in.throughput() / over.throughput()
		for _, l := range []*load{in, over} {
			cell := "1.00x"
			if l == over {
				cell = fmt.Sprintf("**%.2fx**", ratio)
			}
			fmt.Fprintf(w, "| %s | %s | %d | %s | %d | %s | %s | %s | %s |\n", l.path, l.audit, l.clients,
				report.Thousands(int64(l.requests)), l.errors, report.Thousands(int64(math.Round(l.throughput()))),
				report.Micros(report.Percentile(l.latencies, 50)), report.Micros(report.Percentile(l.latencies, 99)), cell)
		}
		verdicts = append(verdicts, fmt.Sprintf("%.2fx with the %s audit", ratio, in.audit))
		met = met && ratio <= targetRatio && in.errors == 0 && over.errors == 0
	}
	word := "met"
	if !met {
		word = "missed"
	}
	fmt.Fprintf(w, "\nTarget: HTTP throughput within %.0fx of in-process, zero errors — %s (%s).\n", targetRatio, word, strings.Join(verdicts, ", "))
}
