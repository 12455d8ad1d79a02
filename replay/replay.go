// Package replay checks determinism: it runs every request of a corpus
// several times on several runtimes (one per engine), each run in a fresh
// instance, compares the results field by field, and checks them against an
// audit log. It is what `wasmgate replay` runs.
//
// It drives each runtime through its public API: every run is a
// Runtime.DryRun, whose audit records are kept in memory for that run only,
// so a replay records nothing.
package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// DefaultRuns is how many times Run runs each request on each runtime when
// Config.Runs is 0.
const DefaultRuns = 3

// Request is one request of a replay corpus.
type Request struct {
	// Line names the request in reports: its 1-based line in the corpus
	// file. Zero means the request's position in the corpus, from 1.
	Line int
	// Request is executed as given, except that an empty TraceID becomes
	// TraceID(Line) and an empty TsUTC becomes 2000-01-01T00:00:00Z, so
	// that every run of it is recorded alike and presents the same request
	// (a Python executor class reads both).
	Request wasmgate.ActionRequest
}

// Config says what Run runs, where, and what it checks against.
type Config struct {
	// Corpus is the requests to replay.
	Corpus []Request
	// Runtimes are what the corpus is replayed on, each through its own
	// registry: typically one per engine, made with the same registry
	// options (wasmgate.WithEngine tells them apart). Their engines must
	// differ. Their audit sinks and results modes are not used: a replay
	// records nothing. The caller keeps them and closes them; Run holds
	// each open (its Close waits) until it returns.
	Runtimes []*wasmgate.Runtime
	// Runs is how many times each request runs on each runtime; 0 means
	// DefaultRuns.
	Runs int
	// Audit, when not nil, is an audit log to check the replay against: its
	// verdicts (action_audit records; attempts are skipped). Its chain is
	// not verified here: verify it first (audit.Verify). An empty, non-nil
	// slice is an empty log.
	Audit []audit.Record
	// Progress, when set, is told each time a request has finished all its
	// runs, with the number finished and the corpus size. Calls come from
	// one goroutine at a time, in increasing order of done.
	Progress func(done, total int)
}

// Report is everything a replay found. Its JSON form, with the field
// names below, is what `wasmgate replay --json` prints.
type Report struct {
	Summary Summary `json:"summary"`
	// Requests has one entry per corpus request, in corpus order.
	Requests []RequestResult `json:"requests"`
	// Divergences lists every field that differed: first between runs, in
	// corpus order, then between the audit log and the runs, in log order.
	Divergences []Divergence `json:"divergences"`
	// NotInCorpus lists the audited requests the corpus does not hold
	// (informational: they are not divergences).
	NotInCorpus []AuditRef `json:"not_in_corpus"`
}

// Diverged reports whether anything differed: between runs, or between the
// runs and the audit log.
func (r Report) Diverged() bool { return len(r.Divergences) > 0 }

// Summary counts what a replay did and found.
type Summary struct {
	Requests int                  `json:"requests"`
	Runs     int                  `json:"runs"`
	Engines  []sandbox.EngineName `json:"engines"`
	// Executions is Requests × Runs × len(Engines).
	Executions int `json:"executions"`
	// Agreeing, Divergent and TimingDependent count requests by the
	// verdict on their runs; they add up to Requests. How the runs compare
	// with the audit log is counted in Audit.
	Agreeing        int `json:"agreeing"`
	Divergent       int `json:"divergent"`
	TimingDependent int `json:"timing_dependent"`
	// Audit is nil when no audit log was given.
	Audit *AuditSummary `json:"audit"`
}

// AuditSummary counts the audit records a replay checked.
type AuditSummary struct {
	// Records counts the log's verdicts (action_audit records): one per
	// action. Attempts are not compared.
	Records int `json:"records"`
	// Checked counts the records whose request is in the corpus; each of
	// them either Matched every run or Mismatched at least one.
	Checked     int `json:"checked"`
	Matched     int `json:"matched"`
	Mismatched  int `json:"mismatched"`
	NotInCorpus int `json:"not_in_corpus"`
}

// Verdict is what became of one request across all its runs.
type Verdict string

const (
	// Agrees: every run gave the same status, reason codes, output
	// digest, fuel used and module digest.
	Agrees Verdict = "agree"
	// Diverges: at least one of those fields differed.
	Diverges Verdict = "diverge"
	// TimingDependent: every run ended in EXECUTOR_TIMEOUT. A timeout
	// depends on the wall clock, so agreement proves little: the runs are
	// compared on status and reason codes only (fuel is not compared), and
	// the request is counted apart rather than as agreeing.
	TimingDependent Verdict = "timing_dependent"
)

// RequestResult is one corpus request and the result of its first run on
// the first engine.
type RequestResult struct {
	Line         int                   `json:"line"`
	Action       string                `json:"action"`
	TraceID      string                `json:"trace_id"`
	InputDigest  string                `json:"input_digest"`
	EnvDigest    *string               `json:"env_digest"`
	Verdict      Verdict               `json:"verdict"`
	Status       wasmgate.Status       `json:"status"`
	ReasonCodes  []wasmgate.ReasonCode `json:"reason_codes"`
	OutputDigest *string               `json:"output_digest"`
	FuelUsed     uint64                `json:"fuel_used"`
	ModuleDigest string                `json:"module_digest"`
}

// DivergenceKind says what disagreed.
type DivergenceKind string

const (
	// DivergenceRuns: runs of the same request disagree.
	DivergenceRuns DivergenceKind = "replay"
	// DivergenceAudit: the runs do not all reproduce an audited record.
	DivergenceAudit DivergenceKind = "audit"
)

// Divergence is one field of one request that did not come out the same
// everywhere.
type Divergence struct {
	Kind    DivergenceKind `json:"kind"`
	Line    int            `json:"line"`
	Action  string         `json:"action"`
	TraceID string         `json:"trace_id"`
	// AuditSeq is the audited record's seq, for DivergenceAudit.
	AuditSeq uint64 `json:"audit_seq,omitempty"`
	// Field is status, reason_codes, output_digest, fuel_used,
	// module_digest, or (against an audit log) env_digest.
	Field string `json:"field"`
	// Values are the distinct values seen, in order of first sight, each
	// with where it was seen.
	Values []DivergentValue `json:"values"`
}

// DivergentValue is one of the values a divergent field took.
type DivergentValue struct {
	// Value is the field's value as JSON, as in an ActionResult.
	Value   json.RawMessage `json:"value"`
	Sources []Source        `json:"sources"`
}

// Source is where a value was seen: one run on one engine, or an audit
// record.
type Source struct {
	Engine sandbox.EngineName `json:"engine,omitempty"`
	// Run counts from 1 on each engine.
	Run      int    `json:"run,omitempty"`
	AuditSeq uint64 `json:"audit_seq,omitempty"`
}

func (s Source) String() string {
	if s.Engine == "" {
		return fmt.Sprintf("audit seq %d", s.AuditSeq)
	}
	return fmt.Sprintf("%s run %d", s.Engine, s.Run)
}

// AuditRef names an audited request.
type AuditRef struct {
	Seq         uint64  `json:"seq"`
	Action      string  `json:"action"`
	TraceID     string  `json:"trace_id"`
	InputDigest string  `json:"input_digest"`
	EnvDigest   *string `json:"env_digest"`
}

// TraceID is the trace id Run gives a corpus request that has none:
// a fixed UUID that carries the request's line number, the same on every run
// and every replay.
func TraceID(line int) string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", line)
}

// fixedTsUTC is the ts_utc Run gives a corpus request that has none: the
// instant the sandbox's clocks read, the same on every run and every
// replay. Without one, each run would get the time it arrived, which an
// executor that is given the request (a Python executor class) sees.
const fixedTsUTC = "2000-01-01T00:00:00Z"

// Run runs every corpus request cfg.Runs times on every runtime, each run
// in a fresh instance through a pipeline of the runtime's registry, and
// compares the results per request: status, reason codes, output digest,
// fuel used (except for runs that timed out) and module digest (of the
// executor that served the request, as its audit record names it). With
// cfg.Audit it then checks every audited verdict whose action and input
// digest match a corpus request (the one with the same env digest too, if
// there is one): each run must give the record's status, reason codes,
// output digest, module digest and env digest (fuel is not compared with
// the log: it may change with the metering, for the same module). Records
// with no such request are listed as not in the corpus.
//
// A replay records nothing: each run's audit record goes to a memory sink
// and is read back for its module digest.
//
// # Errors
//
// An error for an unusable cfg (no runtimes, two runtimes on the same
// engine, negative Runs), and wasmgate.ErrClosed for a runtime that is
// closed. pipeline.ErrInvalidRequest, naming the corpus line, for a request
// whose trace_id, ts_utc or env is malformed; nothing runs then. An error
// naming the request, engine and run when an execution gave no verdict:
// pipeline.ErrInternal when the engine failed, ctx's error when ctx was
// cancelled. Divergences are not errors: they are in the report.
//
// # Notes
//
// Executions run concurrently, up to GOMAXPROCS at a time. The report does
// not depend on their order; only results that hang on the wall clock
// (EXECUTOR_TIMEOUT) can depend on the load.
func Run(ctx context.Context, cfg Config) (Report, error) {
	runs := cfg.Runs
	if runs == 0 {
		runs = DefaultRuns
	}
	switch {
	case runs < 0:
		return Report{}, fmt.Errorf("replay: runs is %d, want at least 1", cfg.Runs)
	case len(cfg.Runtimes) == 0:
		return Report{}, errors.New("replay: no runtimes")
	}
	names := make([]sandbox.EngineName, len(cfg.Runtimes))
	for i, rt := range cfg.Runtimes {
		if slices.Contains(cfg.Runtimes[:i], rt) {
			return Report{}, fmt.Errorf("replay: runtime %d is runtime %d again", i+1, slices.Index(cfg.Runtimes, rt)+1)
		}
		if rt.Actions() == nil {
			// Only a closed runtime (or one New did not make) lists no
			// actions at all, not even none.
			return Report{}, fmt.Errorf("replay: runtime %d: %w", i+1, wasmgate.ErrClosed)
		}
		names[i] = rt.Engine()
		if slices.Contains(names[:i], names[i]) {
			return Report{}, fmt.Errorf("replay: engine %s is listed twice", names[i])
		}
	}
	corpus, err := prepareCorpus(cfg.Corpus)
	if err != nil {
		return Report{}, err
	}

	results, err := runCorpus(ctx, corpus, cfg.Runtimes, names, runs, cfg.Progress)
	if err != nil {
		return Report{}, err
	}

	rep := Report{
		Summary: Summary{
			Requests: len(corpus), Runs: runs, Engines: names,
			Executions: len(corpus) * runs * len(names),
		},
		Requests:    make([]RequestResult, len(corpus)),
		Divergences: []Divergence{},
		NotInCorpus: []AuditRef{},
	}
	for i, req := range corpus {
		obs := results[i]
		first := obs[0]
		rr := RequestResult{
			Line: req.Line, Action: req.Request.Action, TraceID: req.Request.TraceID,
			InputDigest: first.inputDigest, EnvDigest: first.envDigest, Status: first.status, ReasonCodes: first.reasons,
			OutputDigest: first.outputDigest, FuelUsed: first.fuel, ModuleDigest: first.moduleDigest,
		}
		divs := compareRuns(obs, replayFields)
		switch {
		case len(divs) > 0:
			rr.Verdict = Diverges
			rep.Summary.Divergent++
		case first.timedOut():
			rr.Verdict = TimingDependent
			rep.Summary.TimingDependent++
		default:
			rr.Verdict = Agrees
			rep.Summary.Agreeing++
		}
		rep.Requests[i] = rr
		for _, d := range divs {
			d.Kind, d.Line, d.Action, d.TraceID = DivergenceRuns, req.Line, req.Request.Action, req.Request.TraceID
			rep.Divergences = append(rep.Divergences, d)
		}
	}
	if cfg.Audit != nil {
		rep.checkAudit(cfg.Audit, results)
	}
	return rep, nil
}

// prepareCorpus numbers the requests, gives each a trace id and a time,
// and checks every envelope before anything runs.
func prepareCorpus(in []Request) ([]Request, error) {
	out := make([]Request, len(in))
	for i, r := range in {
		if r.Line == 0 {
			r.Line = i + 1
		}
		if r.Request.TraceID == "" {
			r.Request.TraceID = TraceID(r.Line)
		}
		if r.Request.TsUTC == "" {
			r.Request.TsUTC = fixedTsUTC
		}
		if err := r.Request.Validate(); err != nil {
			return nil, fmt.Errorf("corpus line %d: %w", r.Line, err)
		}
		out[i] = r
	}
	return out, nil
}

// replayed is what one run gave, as far as a replay compares it.
type replayed struct {
	source       Source
	status       pipeline.Status
	reasons      []pipeline.ReasonCode
	inputDigest  string
	envDigest    *string
	outputDigest *string
	fuel         uint64
	moduleDigest string
}

func (o *replayed) timedOut() bool {
	return o.status == pipeline.StatusBlocked && slices.Contains(o.reasons, pipeline.ExecutorTimeout)
}

// runCorpus executes every run of every request and returns, per request,
// the runs engine by engine, run by run.
func runCorpus(ctx context.Context, corpus []Request, rts []*wasmgate.Runtime, names []sandbox.EngineName, runs int, progress func(done, total int)) ([][]replayed, error) {
	perRequest := len(rts) * runs
	total := len(corpus) * perRequest
	results := make([][]replayed, len(corpus))
	remaining := make([]atomic.Int32, len(corpus))
	for i := range corpus {
		results[i] = make([]replayed, perRequest)
		remaining[i].Store(int32(perRequest))
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next     atomic.Int64
		failOnce sync.Once
		failure  error
		mu       sync.Mutex // serializes progress calls
		done     int
		wg       sync.WaitGroup
	)
	for range min(goruntime.GOMAXPROCS(0), total) {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := int(next.Add(1) - 1)
				if n >= total {
					return
				}
				req, slot := n/perRequest, n%perRequest
				engine, run := slot/runs, slot%runs
				o, err := replayOnce(ctx, rts[engine], corpus[req].Request)
				if err != nil {
					failOnce.Do(func() {
						failure = fmt.Errorf("replay: corpus line %d (%s) on %s, run %d: %w",
							corpus[req].Line, corpus[req].Request.Action, names[engine], run+1, err)
						cancel()
					})
					return
				}
				o.source = Source{Engine: names[engine], Run: run + 1}
				results[req][slot] = o
				if remaining[req].Add(-1) == 0 && progress != nil {
					mu.Lock()
					done++
					progress(done, len(corpus))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if failure != nil {
		return nil, failure
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return results, nil
}

// replayOnce executes req once, recording nothing; the verdict's record
// gives the module digest.
func replayOnce(ctx context.Context, rt *wasmgate.Runtime, req pipeline.ActionRequest) (replayed, error) {
	res, rec, err := rt.DryRun(ctx, req)
	if err != nil {
		return replayed{}, err
	}
	return replayed{
		status: res.Status, reasons: res.ReasonCodes, inputDigest: res.InputDigest, envDigest: rec.EnvDigest,
		outputDigest: res.OutputDigest, fuel: res.FuelUsed, moduleDigest: rec.ModuleDigest,
	}, nil
}

// replayField is one compared field. value returns its JSON value, or false
// when the field is not compared for that result.
type replayField struct {
	name  string
	value func(o *replayed) (any, bool)
}

var (
	fieldStatus       = replayField{"status", func(o *replayed) (any, bool) { return o.status, true }}
	fieldReasonCodes  = replayField{"reason_codes", func(o *replayed) (any, bool) { return o.reasons, true }}
	fieldOutputDigest = replayField{"output_digest", func(o *replayed) (any, bool) { return o.outputDigest, true }}
	fieldModuleDigest = replayField{"module_digest", func(o *replayed) (any, bool) { return o.moduleDigest, true }}
	fieldEnvDigest    = replayField{"env_digest", func(o *replayed) (any, bool) { return o.envDigest, true }}
	// Fuel is not compared for a timeout: how far the guest got depends on
	// the wall clock.
	fieldFuelUsed = replayField{"fuel_used", func(o *replayed) (any, bool) { return o.fuel, !o.timedOut() }}

	// replayFields are compared between runs.
	replayFields = []replayField{fieldStatus, fieldReasonCodes, fieldOutputDigest, fieldFuelUsed, fieldModuleDigest}
	// auditFields are compared between an audit record and the runs. The
	// env digest is the same on every run of a request, so it is compared
	// with the log only.
	auditFields = []replayField{fieldStatus, fieldReasonCodes, fieldOutputDigest, fieldModuleDigest, fieldEnvDigest}
)

// compareRuns returns a Divergence (Field and Values only) for every field
// that does not have one value across obs, in the order of fields.
func compareRuns(obs []replayed, fields []replayField) []Divergence {
	var out []Divergence
	for _, f := range fields {
		var values []DivergentValue
		index := map[string]int{}
		for i := range obs {
			v, ok := f.value(&obs[i])
			if !ok {
				continue
			}
			raw, _ := json.Marshal(v) // strings, numbers and lists of strings: cannot fail
			k, seen := index[string(raw)]
			if !seen {
				k = len(values)
				index[string(raw)] = k
				values = append(values, DivergentValue{Value: raw})
			}
			values[k].Sources = append(values[k].Sources, obs[i].source)
		}
		if len(values) > 1 {
			out = append(out, Divergence{Field: f.name, Values: values})
		}
	}
	return out
}

// checkAudit compares every audited verdict with the runs of the corpus
// request of the same action, input digest and env digest, or failing
// that, of the same action and input digest (so that an env the corpus
// lost or changed shows as an env_digest divergence): the first such
// request.
func (rep *Report) checkAudit(records []audit.Record, results [][]replayed) {
	type key struct{ action, input, env string }
	byRequest := map[key]int{}
	byInput := map[key]int{}
	for i, rr := range rep.Requests {
		if rr.InputDigest == "" {
			continue
		}
		k := key{rr.Action, rr.InputDigest, deref(rr.EnvDigest)}
		if _, dup := byRequest[k]; !dup {
			byRequest[k] = i
		}
		k.env = ""
		if _, dup := byInput[k]; !dup {
			byInput[k] = i
		}
	}
	sum := &AuditSummary{}
	for _, rec := range records {
		if rec.EventType == audit.EventActionAttempt {
			continue
		}
		sum.Records++
		i, ok := byRequest[key{rec.Action, rec.InputDigest, deref(rec.EnvDigest)}]
		if !ok {
			i, ok = byInput[key{rec.Action, rec.InputDigest, ""}]
		}
		if !ok || rec.InputDigest == "" {
			sum.NotInCorpus++
			rep.NotInCorpus = append(rep.NotInCorpus, AuditRef{Seq: rec.Seq, Action: rec.Action, TraceID: rec.TraceID, InputDigest: rec.InputDigest, EnvDigest: rec.EnvDigest})
			continue
		}
		sum.Checked++
		reasons := make([]pipeline.ReasonCode, len(rec.ReasonCodes))
		for j, c := range rec.ReasonCodes {
			reasons[j] = pipeline.ReasonCode(c)
		}
		audited := replayed{
			source: Source{AuditSeq: rec.Seq}, status: pipeline.Status(rec.Status), reasons: reasons, inputDigest: rec.InputDigest,
			envDigest: rec.EnvDigest, outputDigest: rec.OutputDigest, fuel: rec.FuelUsed, moduleDigest: rec.ModuleDigest,
		}
		divs := compareRuns(append([]replayed{audited}, results[i]...), auditFields)
		if len(divs) == 0 {
			sum.Matched++
			continue
		}
		sum.Mismatched++
		rr := rep.Requests[i]
		for _, d := range divs {
			d.Kind, d.Line, d.Action, d.TraceID, d.AuditSeq = DivergenceAudit, rr.Line, rr.Action, rr.TraceID, rec.Seq
			rep.Divergences = append(rep.Divergences, d)
		}
	}
	rep.Summary.Audit = sum
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// String names the divergence in one line: the request, the field, and each
// value with where it was seen, e.g.
//
//	line 3 (math.sum): fuel_used differs: 120 on wazero runs 1-3; 121 on wazero-interp runs 1-3
func (d Divergence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "line %d (%s)", d.Line, d.Action)
	if d.Kind == DivergenceAudit {
		fmt.Fprintf(&b, " vs audit seq %d", d.AuditSeq)
	}
	fmt.Fprintf(&b, ": %s differs: ", d.Field)
	for i, v := range d.Values {
		if i > 0 {
			b.WriteString("; ")
		}
		b.Write(v.Value)
		b.WriteString(describeSources(v.Sources))
	}
	return b.String()
}

// describeSources says where a value was seen: " in audit seq 4",
// " on wazero runs 1-3, wazero-interp run 2", or both joined by "and".
func describeSources(srcs []Source) string {
	var audits []string
	var engines []sandbox.EngineName
	runs := map[sandbox.EngineName][]int{}
	for _, s := range srcs {
		if s.Engine == "" {
			audits = append(audits, s.String())
			continue
		}
		if _, ok := runs[s.Engine]; !ok {
			engines = append(engines, s.Engine)
		}
		runs[s.Engine] = append(runs[s.Engine], s.Run)
	}
	var parts []string
	if len(audits) > 0 {
		parts = append(parts, " in "+strings.Join(audits, ", "))
	}
	if len(engines) > 0 {
		on := make([]string, len(engines))
		for i, e := range engines {
			rs := runs[e]
			word := "run"
			if len(rs) > 1 {
				word = "runs"
			}
			on[i] = fmt.Sprintf("%s %s %s", e, word, runList(rs))
		}
		parts = append(parts, " on "+strings.Join(on, ", "))
	}
	return strings.Join(parts, " and")
}

// runList writes run numbers compactly: 1-3,5.
func runList(rs []int) string {
	rs = slices.Clone(rs)
	slices.Sort(rs)
	var b strings.Builder
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(rs[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(rs[j]))
		}
		i = j + 1
	}
	return b.String()
}
