package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/replay"
)

const replayHelp = `Usage:
  wasmgate replay --wasm FILE --corpus REQUESTS.jsonl [flags]
  wasmgate replay --js FILE [--tool EXPORT] --corpus REQUESTS.jsonl [flags]
  wasmgate replay --package NAME@VERSION --tool EXPORT --corpus REQUESTS.jsonl [flags]
  wasmgate replay --py FILE [--py-path DIR]... [--py-class NAME] --corpus REQUESTS.jsonl [flags]
  wasmgate replay --config FILE --corpus REQUESTS.jsonl [flags]

Runs every request of the corpus --runs times on every engine of --engines,
each run in a fresh instance, and compares per request: status, reason_codes,
output_digest, fuel_used and module_digest. With --audit, first verifies the
log's hash chain, then checks every audited request (action_audit record)
that is in the corpus (same action and input_digest, and the request with
the same env_digest if there is one): every run must give the audited
status, reason_codes, output_digest, module_digest and env_digest. Audited
requests that are not in the corpus are listed, not counted as divergences;
attempt records are not compared.

Results that end in EXECUTOR_TIMEOUT depend on the wall clock: they are
compared on status and reason_codes only (not fuel_used) and counted as
timing-dependent, not as agreeing.

Corpus: JSON Lines, one request per line, blank lines skipped:
  {"action":"math.sum","payload":{"numbers":[1,2]},"env":{...},"trace_id":"<UUID>","ts_utc":"<RFC 3339, UTC>"}
payload is required; env (a JSON object: what a JS tool's factory gets, as
HTTP env or NDJSON context.config) is optional; action is required with --config, and defaults to the
executor's action with --wasm, --js, --package or --py; a request without trace_id gets
00000000-0000-4000-8000-<its line number in 12 digits>, and one without ts_utc
2000-01-01T00:00:00Z (the sandbox's clock), so that every run presents the same
request: a Python executor class reads both. To replay an audit log of such an
executor, give each request the trace_id and ts_utc its record has.

Output: a summary table and every divergence; with --json, one JSON object:
  summary        {requests, runs, engines: [name], executions, agreeing, divergent,
                  timing_dependent, audit: null | {records, checked, matched,
                  mismatched, not_in_corpus}}
  requests       [{line, action, trace_id, input_digest, env_digest, verdict: "agree" | "diverge" |
                  "timing_dependent", status, reason_codes, output_digest, fuel_used,
                  module_digest}]   (the values of run 1 on the first engine)
  divergences    [{kind: "replay" | "audit", line, action, trace_id, audit_seq (kind
                  "audit" only), field, values: [{value, sources: [{engine, run} |
                  {audit_seq}]}]}]
  not_in_corpus  [{seq, action, trace_id, input_digest, env_digest}]
On a terminal, a progress line is shown on stderr for corpora of 20 requests
or more.

Exit codes: 0 everything agrees, 5 a divergence (each one is named),
2 usage error (bad flags, unreadable or malformed corpus or audit log,
unknown engine), 4 internal error.

Flags:
`

// progressMinRequests is the corpus size from which a terminal gets a
// progress line.
const progressMinRequests = 20

type replayFlags struct {
	src                    sourceFlags
	corpus, audit, engines string
	runs                   int
	json                   bool
}

func (e env) replayCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("replay", e.stderr)
	var f replayFlags
	f.src.register(fs, "replay the corpus on")
	fs.StringVar(&f.corpus, "corpus", "", "requests to replay, as JSON Lines")
	fs.IntVar(&f.runs, "runs", replay.DefaultRuns, "runs of each request on each engine")
	fs.StringVar(&f.engines, "engines", "all", "engines to compare, comma-separated ("+engineList()+"), or all")
	fs.StringVar(&f.audit, "audit", "", "audit log (JSON Lines) to check the replay against")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), replayHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("replay", &usageError{err.Error()})
	}
	if len(pos) > 0 {
		return e.fail("replay", usagef("unexpected argument %q", pos[0]))
	}
	rep, err := e.replay(ctx, f)
	if err != nil {
		return e.fail("replay", err)
	}
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
		// stdout is for the machine; name the divergences for people too.
		for _, d := range rep.Divergences {
			fmt.Fprintf(e.stderr, "wasmgate replay: divergence: %s\n", d)
		}
	} else {
		err = printReplay(e.stdout, rep)
	}
	if err != nil {
		return e.fail("replay", err)
	}
	if rep.Diverged() {
		return exitDivergence
	}
	return exitSuccess
}

func (e env) replay(ctx context.Context, f replayFlags) (replay.Report, error) {
	var none replay.Report
	if err := f.src.check(); err != nil {
		return none, err
	}
	switch {
	case f.corpus == "":
		return none, usagef("--corpus REQUESTS.jsonl is required")
	case f.runs < 1:
		return none, usagef("--runs must be at least 1, got %d", f.runs)
	}
	names, err := parseEngines(f.engines)
	if err != nil {
		return none, err
	}
	corpus, err := readCorpus(f.corpus, !f.src.single())
	if err != nil {
		return none, err
	}
	var records []audit.Record
	if f.audit != "" {
		if records, err = readAuditLog(f.audit); err != nil {
			return none, err
		}
	}

	// A runtime per engine, each with its own registry; the first one's
	// problems are warned about. With --wasm, --js, --package or --py, the first
	// registry tells the executor's action, which requests without one
	// default to.
	runtimes := make([]*wg.Runtime, len(names))
	var first *pipeline.Registry
	for i, name := range names {
		rt, err := wg.New(ctx, wg.WithEngine(name), wg.WithCompilationCacheDir(cacheDir("")),
			wg.WithRegistry(func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
				var warn func(string)
				if i == 0 {
					warn = func(problem string) { fmt.Fprintf(e.stderr, "wasmgate replay: warning: %s\n", problem) }
				}
				reg, err := e.loadRegistry(ctx, engine, f.src, "", sandbox.Limits{}, warn)
				if i == 0 {
					first = reg
				}
				return reg, err
			}))
		if err != nil {
			return none, err
		}
		defer rt.Close(ctx)
		runtimes[i] = rt
	}
	if f.src.single() {
		action := first.Actions()[0]
		for i := range corpus {
			if corpus[i].Request.Action == "" {
				corpus[i].Request.Action = action
			}
		}
	}

	cfg := replay.Config{Corpus: corpus, Runtimes: runtimes, Runs: f.runs, Audit: records}
	if len(corpus) >= progressMinRequests && isTerminal(e.stderr) {
		p := &progressLine{w: e.stderr}
		cfg.Progress = p.update
		defer p.clear()
	}
	rep, err := replay.Run(ctx, cfg)
	if errors.Is(err, wg.ErrInvalidRequest) {
		return none, usagef("--corpus %s: %v", f.corpus, err)
	}
	return rep, err
}

// parseEngines reads --engines: names separated by commas, or "all".
func parseEngines(s string) ([]sandbox.EngineName, error) {
	if strings.TrimSpace(s) == "all" {
		return sandbox.Engines(), nil
	}
	var names []sandbox.EngineName
	for _, part := range strings.Split(s, ",") {
		name, err := sandbox.ParseEngineName(strings.TrimSpace(part))
		if err != nil {
			return nil, usagef("--engines: %v", err)
		}
		if slices.Contains(names, name) {
			return nil, usagef("--engines: %s is listed twice", name)
		}
		names = append(names, name)
	}
	return names, nil
}

// corpusLine is one line of a corpus file: an ActionRequest whose members
// are told apart from absent ones.
type corpusLine struct {
	Action  *string         `json:"action"`
	Payload json.RawMessage `json:"payload"`
	Env     json.RawMessage `json:"env"`
	TraceID string          `json:"trace_id"`
	TsUTC   string          `json:"ts_utc"`
}

// readCorpus reads a JSON Lines corpus. Every problem is a usage error
// naming the file and line.
func readCorpus(path string, needAction bool) ([]replay.Request, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--corpus: %v", err)
	}
	var out []replay.Request
	for i, line := range bytes.Split(raw, []byte{'\n'}) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return usagef("--corpus %s:%d: %s", path, i+1, fmt.Sprintf(format, args...))
		}
		if line[0] != '{' {
			return nil, bad("not a JSON object")
		}
		var cl corpusLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cl); err != nil {
			return nil, bad("not a request object: %v", err)
		}
		if int(dec.InputOffset()) != len(line) {
			return nil, bad("more than one JSON value on the line")
		}
		if cl.Payload == nil {
			return nil, bad(`no "payload"`)
		}
		if cl.Action == nil && needAction {
			return nil, bad(`no "action" (every request needs one with --config)`)
		}
		if env := bytes.TrimSpace(cl.Env); len(env) > 0 && env[0] != '{' && string(env) != "null" {
			return nil, bad(`"env" must be a JSON object`)
		}
		req := wg.ActionRequest{Payload: cl.Payload, Env: cl.Env, TraceID: cl.TraceID, TsUTC: cl.TsUTC}
		if cl.Action != nil {
			req.Action = *cl.Action
		}
		out = append(out, replay.Request{Line: i + 1, Request: req})
	}
	if len(out) == 0 {
		return nil, usagef("--corpus %s: no requests", path)
	}
	return out, nil
}

// readAuditLog verifies an audit log's chain and returns its records. A
// log that does not verify is a usage error naming its first bad line.
func readAuditLog(path string) ([]audit.Record, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--audit: %v", err)
	}
	rep, err := audit.Verify(bytes.NewReader(raw))
	var ce *audit.ChainError
	if errors.As(err, &ce) {
		return nil, usagef("--audit %s:%d: %s (the log cannot be trusted; see 'wasmgate audit verify')", path, ce.Line, ce.Reason)
	}
	if err != nil {
		return nil, err
	}
	records := make([]audit.Record, 0, rep.Records)
	for line := range bytes.Lines(raw) {
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("audit log %s: a verified record does not decode: %w", path, err)
		}
		records = append(records, r)
	}
	return records, nil
}

// printReplay writes the human report: the summary table, then what needs a
// look.
func printReplay(w io.Writer, rep replay.Report) error {
	s := rep.Summary
	engines := make([]string, len(s.Engines))
	for i, e := range s.Engines {
		engines[i] = string(e)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(name string, v any) { fmt.Fprintf(tw, "%s\t%v\n", name, v) }
	row("requests", s.Requests)
	row("runs", s.Runs)
	row("engines", strings.Join(engines, ", "))
	row("executions", s.Executions)
	row("agreeing", s.Agreeing)
	row("divergent", s.Divergent)
	row("timing-dependent", s.TimingDependent)
	if a := s.Audit; a != nil {
		row("audit records", a.Records)
		row("audit checked", a.Checked)
		row("audit matched", a.Matched)
		row("audit mismatched", a.Mismatched)
		row("not in corpus", a.NotInCorpus)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	var b strings.Builder
	if len(rep.Divergences) > 0 {
		b.WriteString("\ndivergences:\n")
		for _, d := range rep.Divergences {
			fmt.Fprintf(&b, "  %s\n", d)
		}
	}
	if s.TimingDependent > 0 {
		b.WriteString("\ntiming-dependent (EXECUTOR_TIMEOUT: status and reason codes compared, fuel not):\n")
		for _, r := range rep.Requests {
			if r.Verdict == replay.TimingDependent {
				fmt.Fprintf(&b, "  line %d (%s)\n", r.Line, r.Action)
			}
		}
	}
	if len(rep.NotInCorpus) > 0 {
		b.WriteString("\nnot in corpus (audited, not replayed):\n")
		const most = 20
		for _, r := range rep.NotInCorpus[:min(most, len(rep.NotInCorpus))] {
			fmt.Fprintf(&b, "  audit seq %d (%s)\n", r.Seq, r.Action)
		}
		if n := len(rep.NotInCorpus) - most; n > 0 {
			fmt.Fprintf(&b, "  … and %d more (--json lists them all)\n", n)
		}
	}
	switch n := len(rep.Divergences); n {
	case 0:
		b.WriteString("\nok: every run agrees\n")
	case 1:
		b.WriteString("\nDIVERGED: 1 divergence\n")
	default:
		fmt.Fprintf(&b, "\nDIVERGED: %d divergences\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// isTerminal reports whether w is a terminal. A character device other
// than the null device counts as one: the standard library has no isatty,
// and this is as far as it goes without a dependency.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// progressLine keeps one line of a terminal updated with \r, at most ten
// times a second, and always for the last request.
type progressLine struct {
	w     io.Writer
	mu    sync.Mutex
	last  time.Time
	width int
}

func (p *progressLine) update(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	msg := fmt.Sprintf("replay: %d/%d requests", done, total)
	p.width = max(p.width, len(msg))
	fmt.Fprintf(p.w, "\r%-*s", p.width, msg)
}

// clear blanks the progress line, if one was written.
func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}
