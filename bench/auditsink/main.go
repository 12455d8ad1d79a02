// Command auditsink measures what the durable audit log costs `wasmgate
// serve`: the same Wasm action (math.sum of testdata/registry.json on
// {"numbers":[1,2]}), called by the same number of keep-alive clients, on
// two servers side by side — one with --audit FILE (a verdict returned only
// once its record is fsynced), one without an audit file (records checked
// and dropped) — in interleaved rounds, the order alternating, so that a
// noisy stretch of a shared machine falls on both. The figure is the median
// of the rounds' ratios, durable throughput / no-audit throughput.
//
// Every reply is checked (a 200 with success:true and {"sum":3}); at the
// end the durable log must hold an attempt and a verdict per call and
// `wasmgate audit verify` must accept it. When perf(1) may count the
// durable server's syscalls (root, or perf_event_paranoid allowing it), the
// records per fsync (fsync and fdatasync together) and per write are
// reported too.
//
// The details go to stderr; stdout gets one line, for `make bench`:
//
//	audit-durable-vs-none 0.83
//
// With -checkpoints it measures what publishing the log as a transparency
// log costs instead (issue 27): both servers keep a durable --audit log,
// one with --audit-key (its tree hashed beside the log and a checkpoint
// signed every second while it grows), one without; the figure is
// checkpoints-on throughput / off, and stdout gets
//
//	audit-checkpoints-vs-none 0.98
//
// The published checkpoint must verify and cover the log at the end.
//
// Run it from the module root (it builds the wasmgate command from there,
// unless -wasmgate names one already built):
//
//	go run ./bench/auditsink [-clients 8] [-rounds 6] [-duration 3s] [-wasmgate bin/wasmgate] [-checkpoints]
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
	"net/http"
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

	"golang.org/x/mod/sumdb/note"

	"github.com/wasmgate/wasmgate/audit/transparency"
	"github.com/wasmgate/wasmgate/bench/internal/gobuild"
	"github.com/wasmgate/wasmgate/bench/internal/report"
	"github.com/wasmgate/wasmgate/bench/internal/serveproc"
)

const (
	action = "math.sum"
	input  = `{"numbers":[1,2]}`
	output = `{"sum":3}`
	// target is the issue's: durable throughput at least 0.8x that without
	// an audit file.
	target = 0.8
	// checkpointsTarget is issue 27's: serving with checkpoints on at least
	// 0.95x the throughput with them off.
	checkpointsTarget = 0.95
	// checkpointsOrigin names the benchmark's log.
	checkpointsOrigin = "bench.wasmgate.example/audit"
)

type options struct {
	clients  int
	rounds   int
	duration time.Duration // per server and round
	warmup   int           // unmeasured calls per client and server first
	wasmgate string        // "" builds ./cmd/wasmgate
	perf     bool
	// checkpoints compares durable serving with --audit-key against
	// durable serving without.
	checkpoints bool
}

func main() {
	var o options
	flag.IntVar(&o.clients, "clients", 8, "concurrent clients (and each server's --max-concurrency)")
	flag.IntVar(&o.rounds, "rounds", 6, "rounds; each drives both servers for -duration, the order alternating")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "measured time of each server in each round")
	flag.IntVar(&o.warmup, "warmup", 50, "unmeasured calls per client and server first")
	flag.StringVar(&o.wasmgate, "wasmgate", "", "a wasmgate command already built (default: build ./cmd/wasmgate)")
	flag.BoolVar(&o.perf, "perf", true, "count the durable server's fsync, fdatasync and write syscalls with perf(1), when it can")
	flag.BoolVar(&o.checkpoints, "checkpoints", false, "compare durable serve with --audit-key (signed checkpoints, tiles) against durable serve without, instead of durable against no audit file")
	flag.Parse()
	if o.clients < 1 || o.rounds < 1 || o.duration <= 0 || o.warmup < 0 {
		fmt.Fprintln(os.Stderr, "auditsink: -clients, -rounds and -duration must be positive, -warmup at least 0")
		os.Exit(2)
	}
	ratio, err := run(context.Background(), o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "auditsink:", err)
		os.Exit(1)
	}
	if o.checkpoints {
		fmt.Printf("audit-checkpoints-vs-none %.2f\n", ratio)
		return
	}
	fmt.Printf("audit-durable-vs-none %.2f\n", ratio)
}

// variant is one server and what its calls came to.
type variant struct {
	name    string
	durable bool     // the measured server, whose syscalls perf counts
	log     string   // its --audit log, if any
	more    []string // its other flags
	srv     *serveproc.Server
	calls   int // warm-up included
	errors  int
	first   string
	// per measured round
	rates []float64
	// perf counts over the measured rounds (durable only)
	syncs, writes, perfRecords int64
	perfRounds                 int
}

func run(ctx context.Context, o options, w io.Writer) (float64, error) {
	if _, err := os.Stat("go.mod"); err != nil {
		return 0, errors.New("run it from the module root: it builds ./cmd/wasmgate and reads testdata/registry.json")
	}
	config, err := filepath.Abs(filepath.Join("testdata", "registry.json"))
	if err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp("", "wasmgate-auditsink-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	bin, err := gobuild.Wasmgate(ctx, o.wasmgate, tmp)
	if err != nil {
		return 0, err
	}
	perfOK := o.perf && perfWorks(ctx)

	// durable is the measured server, none the baseline.
	durable := &variant{name: "durable audit file", durable: true, log: filepath.Join(tmp, "audit.jsonl")}
	none := &variant{name: "no audit file"}
	goal, cols := target, "| round | durable (exec/s) | no audit file (exec/s) | durable / none |"
	var vkey string
	if o.checkpoints {
		skey, vk, err := transparency.GenerateKey(checkpointsOrigin)
		if err != nil {
			return 0, err
		}
		keyFile := filepath.Join(tmp, "log.key")
		if err := os.WriteFile(keyFile, []byte(skey+"\n"), 0o600); err != nil {
			return 0, err
		}
		vkey = vk
		durable.name, durable.more = "checkpoints on", []string{"--audit-key", keyFile}
		none.name, none.log = "checkpoints off", filepath.Join(tmp, "audit-off.jsonl")
		goal, cols = checkpointsTarget, "| round | checkpoints on (exec/s) | off (exec/s) | on / off |"
	}
	for _, v := range []*variant{durable, none} {
		args := []string{"serve", "--addr", "127.0.0.1:0", "--config", config, "--log-format", "json",
			"--max-concurrency", strconv.Itoa(o.clients), "--cache-dir", filepath.Join(tmp, "cache")}
		if v.log != "" {
			args = append(args, "--audit", v.log)
		}
		args = append(args, v.more...)
		v.srv, err = serveproc.Start(ctx, bin, args)
		if err != nil {
			return 0, err
		}
		defer v.srv.Stop()
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConns: 2 * o.clients, MaxIdleConnsPerHost: o.clients, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
	for _, v := range []*variant{durable, none} {
		if o.warmup == 0 {
			break
		}
		n, errs, first := drive(ctx, client, v.srv.URL, o.clients, 0, o.warmup*o.clients)
		v.calls += n
		if errs > 0 {
			return 0, fmt.Errorf("%s: the warm-up failed: %s", v.name, first)
		}
	}
	var ratios []float64
	for r := range o.rounds {
		order := []*variant{durable, none}
		if r%2 == 1 {
			order = []*variant{none, durable}
		}
		for _, v := range order {
			var p *perfRun
			if perfOK && v.durable {
				if p, err = startPerf(ctx, v.srv.Cmd.Process.Pid); err != nil {
					return 0, err
				}
			}
			start := time.Now()
			n, errs, first := drive(ctx, client, v.srv.URL, o.clients, o.duration, 0)
			elapsed := time.Since(start)
			if p != nil {
				syncs, writes, err := p.stop()
				if err != nil {
					return 0, err
				}
				v.syncs += syncs
				v.writes += writes
				v.perfRecords += 2 * int64(n) // an attempt and a verdict per call
				v.perfRounds++
			}
			v.calls += n
			v.errors += errs
			if v.first == "" {
				v.first = first
			}
			v.rates = append(v.rates, float64(n)/elapsed.Seconds())
		}
		ratios = append(ratios, durable.rates[r]/none.rates[r])
	}
	for _, v := range []*variant{durable, none} {
		if v.errors > 0 {
			return 0, fmt.Errorf("%s: %d errors, the first: %s", v.name, v.errors, v.first)
		}
	}
	var published string
	if o.checkpoints {
		// The last records are signed within a second of the load's end.
		if published, err = checkpointCovering(ctx, client, durable.srv.URL, vkey, 2*durable.calls); err != nil {
			return 0, err
		}
	}
	for _, v := range []*variant{durable, none} {
		if v.log == "" {
			continue
		}
		if err := v.srv.Stop(); err != nil {
			return 0, err
		}
		if err := checkLog(ctx, bin, v.log, v.calls); err != nil {
			return 0, fmt.Errorf("%s: %w", v.name, err)
		}
	}

	med := report.Median(ratios)
	fmt.Fprintf(w, "Machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, %s. `wasmgate serve --config testdata/registry.json`, %s on %s, %d keep-alive clients; %d rounds of %s per server, the order alternating.\n\n",
		report.CPUModel(), goruntime.NumCPU(), goruntime.GOMAXPROCS(0), goruntime.GOOS, goruntime.GOARCH, goruntime.Version(),
		action, input, o.clients, o.rounds, o.duration)
	fmt.Fprintln(w, cols)
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	for r, ratio := range ratios {
		fmt.Fprintf(w, "| %d | %s | %s | %.2fx |\n", r+1, report.Thousands(int64(durable.rates[r])), report.Thousands(int64(none.rates[r])), ratio)
	}
	fmt.Fprintf(w, "| median | %s | %s | **%.2fx** |\n\n", report.Thousands(int64(report.Median(durable.rates))), report.Thousands(int64(report.Median(none.rates))), med)
	if durable.perfRounds > 0 && durable.syncs > 0 {
		fmt.Fprintf(w, "Durable server, measured rounds (perf): %s records, %s fsync/fdatasync, %s writes: %.1f records per fsync, %.1f per write (writes include the server's request log on stderr).\n",
			report.Thousands(durable.perfRecords), report.Thousands(durable.syncs), report.Thousands(durable.writes),
			float64(durable.perfRecords)/float64(durable.syncs), float64(durable.perfRecords)/float64(durable.writes))
	} else if durable.perfRounds > 0 {
		fmt.Fprintln(w, "Records per fsync: perf counted no fsync or fdatasync of the durable server.")
	} else {
		fmt.Fprintln(w, "Records per fsync: not counted (perf(1) cannot count this process's syscalls here).")
	}
	word := "met"
	if med < goal {
		word = "missed"
	}
	if o.checkpoints {
		fmt.Fprintf(w, "The published checkpoint at the end, verified with the log's key, covers all %s records:\n\n%s\n", report.Thousands(int64(2*durable.calls)), published)
		fmt.Fprintf(w, "Target: checkpoints on ≥ %.2fx the throughput with them off — %s (%.2fx; rounds %s).\n", goal, word, med, formatRatios(ratios))
		return med, nil
	}
	fmt.Fprintf(w, "Target: durable ≥ %.1fx the throughput without an audit file — %s (%.2fx; rounds %s).\n", target, word, med, formatRatios(ratios))
	return med, nil
}

func formatRatios(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(s, ", ")
}

// drive runs clients goroutines calling the server at url for d (no bound
// when 0) or limit calls in all (no bound when 0), and returns the calls
// made, the errors and the first error.
func drive(ctx context.Context, client *http.Client, url string, clients int, d time.Duration, limit int) (calls, errs int, first string) {
	body := []byte(`{"packageName":"` + action + `","name":"` + action + `","params":` + input + `}`)
	var issued atomic.Int64
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			n, e, f := 0, 0, ""
			for {
				if limit > 0 && issued.Add(1) > int64(limit) {
					break
				}
				if d > 0 && !time.Now().Before(deadline) {
					break
				}
				n++
				if err := call(ctx, client, url, body); err != nil {
					if e == 0 {
						f = err.Error()
					}
					e++
				}
			}
			mu.Lock()
			calls, errs = calls+n, errs+e
			if first == "" {
				first = f
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return calls, errs, first
}

func call(ctx context.Context, client *http.Client, url string, body []byte) error {
	status, b, err := serveproc.ExecuteTool(ctx, client, url, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", status, bytes.TrimSpace(b))
	}
	var r struct {
		Success bool            `json:"success"`
		Output  json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("the reply is not the protocol's JSON: %w: %s", err, b)
	}
	if !r.Success || string(r.Output) != output {
		return fmt.Errorf("want success and %s, got %s", output, b)
	}
	return nil
}

// checkLog requires the log at path to hold an attempt and a verdict per
// call, and `wasmgate audit verify` to accept it.
func checkLog(ctx context.Context, bin, path string, calls int) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	verdicts := bytes.Count(raw, []byte(`"event_type":"action_audit"`))
	attempts := bytes.Count(raw, []byte(`"event_type":"action_attempt"`))
	if verdicts != calls || attempts != calls {
		return fmt.Errorf("durable audit: %d calls but %d verdicts and %d attempts in the log", calls, verdicts, attempts)
	}
	out, err := exec.CommandContext(ctx, bin, "audit", "verify", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("wasmgate audit verify: %w: %s", err, out)
	}
	return nil
}

// checkpointCovering polls the server's /checkpoint until one signed by
// vkey covers records, and returns its text.
func checkpointCovering(ctx context.Context, client *http.Client, url, vkey string, records int) (string, error) {
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return "", err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/checkpoint", nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return "", err
		}
		c, _, err := transparency.OpenCheckpoint(b, v)
		if err != nil {
			return "", fmt.Errorf("GET /checkpoint: %w: %s", err, b)
		}
		if c.Size == int64(records) {
			return string(b), nil
		}
		if c.Size > int64(records) || time.Now().After(deadline) {
			return "", fmt.Errorf("GET /checkpoint: size %d, the log has %d records", c.Size, records)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// perfEvents are the syscalls counted on the durable server.
const perfEvents = "syscalls:sys_enter_fsync,syscalls:sys_enter_fdatasync,syscalls:sys_enter_write,syscalls:sys_enter_pwrite64"

// perfWorks reports whether perf can count syscalls here.
func perfWorks(ctx context.Context) bool {
	if _, err := exec.LookPath("perf"); err != nil {
		return false
	}
	return exec.CommandContext(ctx, "perf", "stat", "-x", ",", "-e", perfEvents, "true").Run() == nil
}

// perfRun is perf counting a process's syscalls.
type perfRun struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

func startPerf(ctx context.Context, pid int) (*perfRun, error) {
	p := &perfRun{}
	p.cmd = exec.CommandContext(ctx, "perf", "stat", "-x", ",", "-e", perfEvents, "-p", strconv.Itoa(pid))
	p.cmd.Stderr = &p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	time.Sleep(200 * time.Millisecond) // attached before the round starts
	return p, nil
}

// stop ends the count and returns the fsyncs (fsync and fdatasync) and
// writes (write and pwrite64) it saw.
func (p *perfRun) stop() (syncs, writes int64, err error) {
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	_ = p.cmd.Wait()
	sc := bufio.NewScanner(&p.out)
	found := 0
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) < 3 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch f[2] {
		case "syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync":
			syncs += n
			found++
		case "syscalls:sys_enter_write", "syscalls:sys_enter_pwrite64":
			writes += n
			found++
		}
	}
	if found < 4 {
		return 0, 0, fmt.Errorf("perf stat gave no counts: %s", p.out.String())
	}
	return syncs, writes, nil
}
