package pipeline

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/sentinel"
	"github.com/wasmgate/wasmgate/internal/traceid"
)

// ErrInvalidRequest is matched by errors about the request envelope itself
// (a malformed trace_id or ts_utc), which cannot even be audited faithfully.
const ErrInvalidRequest = sentinel.Error("pipeline: invalid request")

// ErrInternal is matched by errors from a failing engine, as opposed to a
// failing executor.
const ErrInternal = sentinel.Error("pipeline: internal error")

// ErrBusy is matched by the error of a Runner that refused an action for
// want of capacity (a cluster whose queue is full): nothing was recorded,
// and the caller may retry.
const ErrBusy = sentinel.Error("pipeline: busy")

// Pipeline executes actions under governance. It is safe for concurrent use.
type Pipeline struct {
	registry *Registry
	sink     audit.Sink
	now      func() time.Time
	results  Results
}

// New returns a pipeline that resolves actions through registry and audits
// every action to sink: a verdict per action, and before an executor runs,
// an attempt. There is no pipeline without a sink (use audit.NewMemorySink
// to keep records in memory).
func New(registry *Registry, sink audit.Sink, opts ...Option) *Pipeline {
	p := &Pipeline{registry: registry, sink: sink, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Registry is the registry the pipeline resolves actions through.
func (p *Pipeline) Registry() *Registry { return p.registry }

// Actions lists the registry's actions, sorted.
func (p *Pipeline) Actions() []string { return p.registry.Actions() }

// Runner executes actions under governance: a *Pipeline in this process,
// or a cluster.Client through workers elsewhere, with the same results.
type Runner interface {
	// Execute runs one action; see Pipeline.Execute.
	Execute(ctx context.Context, req ActionRequest) (ActionResult, error)
	// Actions lists the actions it serves, sorted.
	Actions() []string
}

var _ Runner = (*Pipeline)(nil)

// Execute runs one action and returns its verdict.
//
// The action is audited write-ahead: once the request has passed every check
// that needs no executor code (canonical payload, a resolved executor, input
// limits, the input schema), an attempt record is appended, and only then does the executor
// run; its verdict record, naming the attempt, is durable before Execute
// returns. Refusals that run nothing have a verdict and no attempt. If the
// attempt cannot be written (the audit log is failing), nothing runs and
// the result is BLOCKED with AUDIT_LOG_FAILED; if the verdict cannot be, the
// result is BLOCKED with AUDIT_LOG_FAILED too and carries no output.
//
// # Errors
//
// ErrInvalidRequest for a malformed trace_id or ts_utc, or an env that is
// not a canonicalizable JSON object: nothing is audited then. An error wrapping
// ctx.Err() when the caller cancelled the execution; such an action is
// still audited (BLOCKED, EXECUTOR_TIMEOUT) and the returned result says so.
// ErrInternal when the engine failed; the action is audited as FAILED.
func (p *Pipeline) Execute(ctx context.Context, req ActionRequest) (ActionResult, error) {
	res, err := p.execute(ctx, req)
	return p.results.Present(res), err
}

func (p *Pipeline) execute(ctx context.Context, req ActionRequest) (ActionResult, error) {
	res, start, err := p.begin(req.Action, req.TraceID, req.TsUTC)
	if err != nil {
		return ActionResult{}, err
	}
	var tr trail
	if tr.env, err = canonicalEnv(req.Env); err != nil {
		return ActionResult{}, err
	}
	if tr.env != nil {
		res.EnvDigest = audit.Digest(tr.env)
	}
	runErr := p.govern(ctx, req, &res, &tr)
	return p.finish(ctx, res, start, &tr, runErr)
}

// begin starts an action's result: its trace id and timestamp, the
// request's or new ones.
func (p *Pipeline) begin(action, traceID, tsUTC string) (ActionResult, time.Time, error) {
	start := p.now()
	res := ActionResult{Action: action, TraceID: traceID, TsUTC: tsUTC, ReasonCodes: []ReasonCode{}}
	if res.TraceID == "" {
		res.TraceID = traceid.New()
	} else if !traceid.Valid(res.TraceID) {
		return ActionResult{}, start, fmt.Errorf("%w: trace_id %q is not a UUID", ErrInvalidRequest, traceID)
	}
	if res.TsUTC == "" {
		res.TsUTC = start.UTC().Format(time.RFC3339Nano)
	} else if err := checkTimestamp(res.TsUTC); err != nil {
		return ActionResult{}, start, err
	}
	return res, start, nil
}

// finish records the verdict: the one place an action's verdict record is
// appended. A verdict that cannot be written makes the result BLOCKED with
// AUDIT_LOG_FAILED, without its output.
func (p *Pipeline) finish(ctx context.Context, res ActionResult, start time.Time, tr *trail, runErr error) (ActionResult, error) {
	res.DurationMs = p.now().Sub(start).Milliseconds()
	p.classify(&res, tr)
	if tr.unwritten {
		// Nothing ran, and a log that could not take the attempt would not
		// take the verdict either.
		return res, nil
	}
	rec, err := p.sink.Append(context.WithoutCancel(ctx), auditRecord(res, tr))
	if err != nil {
		res.Status = StatusBlocked
		res.ReasonCodes = append(res.ReasonCodes, AuditLogFailed)
		res.Output, res.OutputDigest = nil, nil
		res.Message = fmt.Sprintf("audit record could not be written: %v", err)
		p.classify(&res, tr)
		return res, runErr
	}
	// A DiscardSink numbers records it keeps nowhere: no proof could be
	// fetched for that index.
	if _, discarded := p.sink.(*audit.DiscardSink); !discarded && rec.Seq > 0 {
		index := rec.Seq - 1
		res.AuditIndex = &index
	}
	return res, runErr
}

// classify sets the verdict's Stage and Failure (Classify), keeping what
// the pipeline knew more precisely than the reason codes say.
func (p *Pipeline) classify(res *ActionResult, tr *trail) {
	stage, kind := Classify(res.ReasonCodes, tr.attempt != nil)
	res.Stage = stage
	if !refines(res.Failure, kind) {
		res.Failure = kind
	}
}

// trail is what an action's audit records hold beyond its result.
type trail struct {
	env          []byte        // the request's env, canonical; nil when it had none
	moduleDigest string        // of the executor resolved, if any
	schemaDigest string        // of its schemas; empty when it declares none
	attempt      *audit.Record // as stored, once written: the executor may run
	unwritten    bool          // the attempt could not be written: nothing ran
}

// govern fills res with the verdict, and tr with what the audit needs. It
// returns an error only when the caller cancelled the execution.
func (p *Pipeline) govern(ctx context.Context, req ActionRequest, res *ActionResult, tr *trail) error {
	input, canonErr := audit.Canonicalize(req.Payload)
	tooDeep := errors.Is(canonErr, audit.ErrTooDeep)
	if canonErr != nil && !tooDeep {
		block(res, StatusBlocked, fmt.Sprintf("payload is not canonicalizable JSON: %v", canonErr), NonJSONPayload)
		return nil
	}
	var inputDigest [32]byte
	if !tooDeep {
		inputDigest = audit.DigestBytes(input.Bytes)
		res.InputDigest = hex.EncodeToString(inputDigest[:])
	}

	exec, limits, schemas, ref := p.registry.resolve(req.Action)
	if ref != nil {
		if ref.exec != nil {
			identify(res, ref.exec, &tr.moduleDigest)
			tr.schemaDigest = schemasOf(ref.exec.Manifest()).digest
		} else {
			res.ExecutorID = ref.executorID
		}
		block(res, StatusBlocked, ref.msg, append([]ReasonCode{ref.code}, ref.also...)...)
		res.Failure = ref.failure
		return nil
	}
	identify(res, exec, &tr.moduleDigest)
	tr.schemaDigest = schemas.digest

	if tooDeep {
		block(res, StatusBlocked, fmt.Sprintf("payload nests deeper than %d levels", audit.MaxNesting), LimitExceeded, DepthExceeded)
		return nil
	}
	if codes, msg := checkShape("payload", input, limits, false); len(codes) > 0 {
		block(res, StatusBlocked, msg, codes...)
		return nil
	}
	if schemas.input != nil {
		if ptr, reason, ok := validate(schemas.input, input.Bytes); !ok {
			// The caller's to fix: nothing runs.
			block(res, StatusBlocked, schemaMismatch("payload", "input", ptr, reason), InputSchemaInvalid)
			return nil
		}
	}

	if dl, ok := ctx.Deadline(); ok && !p.now().Before(dl) {
		// The caller's deadline passed before the executor could start
		// (the request waited in a queue): refused unrun.
		block(res, StatusBlocked, "the request's deadline passed before it could run", ExecutorTimeout)
		return nil
	}
	if !p.writeAhead(ctx, res, tr) {
		return nil
	}
	out, err := run(ctx, exec, sandbox.Input{Bytes: input.Bytes, Digest: inputDigest, Limits: limits}, tr.env,
		sandbox.Request{Action: res.Action, TraceID: res.TraceID, TsUTC: res.TsUTC})
	return judge(ctx, res, out, err, func() error { return p.deliver(res, out.Output, limits, schemas.output) })
}

// writeAhead appends the attempt record, before any executor code runs, so
// that an execution that never ends in a verdict (the process dies) still
// leaves a trace, and a failing log refuses before anything runs. It
// reports whether the executor may run; when not, res says why.
func (p *Pipeline) writeAhead(ctx context.Context, res *ActionResult, tr *trail) bool {
	a, err := p.sink.Append(context.WithoutCancel(ctx), attemptRecord(res, tr))
	if err != nil {
		block(res, StatusBlocked, fmt.Sprintf("audit record could not be written, so nothing was executed: %v", err), AuditLogFailed)
		tr.unwritten = true
		return false
	}
	tr.attempt = &a
	return true
}

// judge is the one place an execution's outcome becomes a verdict: out and
// err are what the executor's run returned; completed delivers the output
// of a run that completed. It returns an error only when the caller
// cancelled the execution or the engine failed.
func judge(ctx context.Context, res *ActionResult, out sandbox.Outcome, err error, completed func() error) error {
	if err != nil {
		if ctx.Err() != nil {
			block(res, StatusBlocked, fmt.Sprintf("cancelled by the caller: %v", err), ExecutorTimeout)
			return err
		}
		// The engine failed. Nothing proves the executor innocent, so the
		// action fails closed; the error is returned too, so the caller
		// knows it was internal.
		block(res, StatusFailed, err.Error(), ExecutorException)
		return fmt.Errorf("%w: %w", ErrInternal, err)
	}
	res.FuelUsed = out.FuelUsed
	if len(out.Stderr) > 0 {
		res.Log = string(out.Stderr)
	}
	switch out.Kind {
	case sandbox.Completed:
		return completed()
	case sandbox.Failed:
		block(res, StatusFailed, out.Message, ExecutorException)
		res.QuotesExecutor = true
		if out.Invalid {
			res.Failure = FailureToolInvalid
		}
	case sandbox.OutputNotJSON:
		block(res, StatusFailed, out.Message, ExecutorException, OutputNotJSON)
		res.QuotesExecutor = true
	case sandbox.FuelExhausted:
		block(res, StatusBlocked, out.Message, LimitExceeded, FuelExhausted)
	case sandbox.StackExhausted:
		block(res, StatusBlocked, out.Message, LimitExceeded, StackExhausted)
	case sandbox.MemoryExhausted:
		block(res, StatusBlocked, out.Message, LimitExceeded, MemoryExhausted)
	case sandbox.OutputTooLarge:
		block(res, StatusBlocked, out.Message, LimitExceeded, OutputTooLarge)
	case sandbox.Timeout:
		block(res, StatusBlocked, out.Message, ExecutorTimeout)
	default:
		return fmt.Errorf("pipeline: unknown outcome %v", out.Kind)
	}
	return nil
}

// deliver checks the output (its limits, then its schema when the
// executor declares one) and, when it passes, attaches it to res.
func (p *Pipeline) deliver(res *ActionResult, output []byte, limits sandbox.Limits, schema *jsonschema.Schema) error {
	res.Status = StatusSuccess
	if len(output) == 0 {
		if schema != nil {
			// No value cannot match a schema (not even true's): the
			// executor promised an output.
			block(res, StatusFailed, "output does not match the output schema: the executor returned no output", OutputSchemaInvalid)
			return nil
		}
		return nil // no output (None): SUCCESS with a null output digest
	}
	canon, err := audit.Canonicalize(output)
	if errors.Is(err, audit.ErrTooDeep) {
		block(res, StatusBlocked, fmt.Sprintf("output nests deeper than %d levels", audit.MaxNesting), LimitExceeded, DepthExceeded)
		return nil
	}
	if err != nil {
		block(res, StatusFailed, fmt.Sprintf("output is not JSON: %v", err), ExecutorException, OutputNotJSON)
		res.QuotesExecutor = true // the error may quote the output
		return nil
	}
	if codes, msg := checkShape("output", canon, limits, true); len(codes) > 0 {
		block(res, StatusBlocked, msg, codes...)
		return nil
	}
	if schema != nil {
		if ptr, reason, ok := validate(schema, canon.Bytes); !ok {
			block(res, StatusFailed, schemaMismatch("output", "output", ptr, reason), OutputSchemaInvalid)
			res.QuotesExecutor = true // the reason may quote the output
			return nil
		}
	}
	d := audit.Digest(canon.Bytes)
	res.Output, res.OutputDigest = canon.Bytes, &d
	return nil
}

// checkShape applies the JSON limits to a canonical value. It reports every
// limit crossed, in reason-code order, after LIMIT_EXCEEDED.
func checkShape(what string, c audit.Canonical, l sandbox.Limits, isOutput bool) ([]ReasonCode, string) {
	var codes []ReasonCode
	var msg string
	note := func(code ReasonCode, format string, args ...any) {
		if codes == nil {
			codes = []ReasonCode{LimitExceeded}
			msg = fmt.Sprintf(format, args...)
		}
		codes = append(codes, code)
	}
	if int64(len(c.Bytes)) > l.MaxPayloadBytes {
		note(PayloadTooLarge, "%s is %d canonical bytes; max_payload_bytes is %d", what, len(c.Bytes), l.MaxPayloadBytes)
	}
	if c.Depth > l.MaxDepth {
		note(DepthExceeded, "%s nests %d levels; max_depth is %d", what, c.Depth, l.MaxDepth)
	}
	if c.LongestList > l.MaxListItems {
		note(ListTooLong, "%s has a list of %d items; max_list_items is %d", what, c.LongestList, l.MaxListItems)
	}
	if isOutput && int64(len(c.Bytes)) > l.MaxOutputBytes {
		note(OutputTooLarge, "%s is %d canonical bytes; max_output_bytes is %d", what, len(c.Bytes), l.MaxOutputBytes)
	}
	return codes, msg
}

func block(res *ActionResult, status Status, msg string, codes ...ReasonCode) {
	res.Status = status
	res.ReasonCodes = append(res.ReasonCodes[:0], codes...)
	res.Message = msg
	res.Output, res.OutputDigest = nil, nil
	res.Failure = FailureNone // Classify's, when the verdict is final
}

func identify(res *ActionResult, e Executor, moduleDigest *string) {
	m := e.Manifest()
	res.ExecutorID, res.ExecutorVersion = m.ExecutorID, m.Version
	*moduleDigest = e.ModuleDigest()
}

// envExecutor is an Executor that takes the request's env: a JS tool,
// whose factory gets it as its configuration.
type envExecutor interface {
	ExecuteWithEnv(ctx context.Context, in sandbox.Input, env []byte) (sandbox.Outcome, error)
}

// requestExecutor is an Executor whose code gets the whole request beside
// its payload: a Python executor class, whose execute(req) reads
// req.action, req.trace_id and req.ts_utc.
type requestExecutor interface {
	ExecuteRequest(ctx context.Context, in sandbox.Input, req sandbox.Request) (sandbox.Outcome, error)
}

// run executes exec once. The env goes to executors that take one, as the
// canonical bytes its digest was taken over: the request's env reaches an
// executor through here only, so the env a tool sees is the env audited.
// req goes to executors that take the request.
func run(ctx context.Context, exec Executor, in sandbox.Input, env []byte, req sandbox.Request) (sandbox.Outcome, error) {
	if e, ok := exec.(envExecutor); ok {
		return e.ExecuteWithEnv(ctx, in, env)
	}
	if e, ok := exec.(requestExecutor); ok {
		return e.ExecuteRequest(ctx, in, req)
	}
	return exec.Execute(ctx, in)
}

// canonicalEnv is the canonical form of a request's env, nil when it has
// none (absent or null).
func canonicalEnv(env []byte) ([]byte, error) {
	if len(bytes.TrimSpace(env)) == 0 {
		return nil, nil
	}
	c, err := audit.Canonicalize(env)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: env is not canonicalizable JSON: %w", ErrInvalidRequest, err)
	case string(c.Bytes) == "null":
		return nil, nil
	case c.Bytes[0] != '{':
		return nil, fmt.Errorf("%w: env must be a JSON object", ErrInvalidRequest)
	}
	return c.Bytes, nil
}

// attemptRecord is the record written before the executor runs: what is
// about to run on what, as digests.
func attemptRecord(res *ActionResult, tr *trail) audit.Record {
	return audit.Record{
		EventType:       audit.EventActionAttempt,
		Action:          res.Action,
		ExecutorID:      res.ExecutorID,
		ExecutorVersion: res.ExecutorVersion,
		ModuleDigest:    tr.moduleDigest,
		TraceID:         res.TraceID,
		TsUTC:           res.TsUTC,
		InputDigest:     res.InputDigest,
		EnvDigest:       optional(res.EnvDigest),
		SchemaDigest:    optional(tr.schemaDigest),
		DigestAlg:       audit.DigestAlg,
	}
}

// auditRecord is the verdict's record.
func auditRecord(res ActionResult, tr *trail) audit.Record {
	codes := make([]string, len(res.ReasonCodes))
	for i, c := range res.ReasonCodes {
		codes[i] = string(c)
	}
	r := audit.Record{
		EventType:       audit.EventActionAudit,
		Action:          res.Action,
		ExecutorID:      res.ExecutorID,
		ExecutorVersion: res.ExecutorVersion,
		ModuleDigest:    tr.moduleDigest,
		Status:          string(res.Status),
		ReasonCodes:     codes,
		TraceID:         res.TraceID,
		TsUTC:           res.TsUTC,
		DurationMs:      res.DurationMs,
		FuelUsed:        res.FuelUsed,
		InputDigest:     res.InputDigest,
		EnvDigest:       optional(res.EnvDigest),
		OutputDigest:    res.OutputDigest,
		ExitCode:        res.ExitCode,
		SchemaDigest:    optional(tr.schemaDigest),
		DigestAlg:       audit.DigestAlg,
	}
	if tr.attempt != nil {
		r.AttemptHash = &tr.attempt.Hash
	}
	return r
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Validate checks the request's envelope as Execute does before anything is
// recorded: a trace_id that is empty or a UUID, a ts_utc that is empty or an
// RFC 3339 timestamp in UTC, and an env that is absent, null or a JSON
// object with a canonical form. The payload is not checked: a payload that
// is not JSON is a verdict (NON_JSON_PAYLOAD), not an error.
//
// # Errors
//
// ErrInvalidRequest, saying what is wrong.
func (r ActionRequest) Validate() error {
	if r.TraceID != "" && !traceid.Valid(r.TraceID) {
		return fmt.Errorf("%w: trace_id %q is not a UUID", ErrInvalidRequest, r.TraceID)
	}
	if r.TsUTC != "" {
		if err := checkTimestamp(r.TsUTC); err != nil {
			return err
		}
	}
	_, err := canonicalEnv(r.Env)
	return err
}

func checkTimestamp(ts string) error {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return fmt.Errorf("%w: ts_utc %q is not an RFC 3339 timestamp", ErrInvalidRequest, ts)
	}
	if _, off := t.Zone(); off != 0 {
		return fmt.Errorf("%w: ts_utc %q is not in UTC", ErrInvalidRequest, ts)
	}
	return nil
}

// NewTraceID returns a random (version 4) UUID: the trace id of a request
// that brings none.
func NewTraceID() string { return traceid.New() }

// Host is what a front runs on: a Runner whose registry can change while it
// runs, over one engine and one audit sink (*wasmgate.Runtime implements
// it). A front asks it to execute, to add what its callers name (a tool of
// an npm package) and to load code on its engine; it never holds an engine
// or a sink of its own, so every front audits to the same log.
type Host interface {
	Runner
	// ChangeRegistry changes the registry on a copy that replaces it
	// whole, for the executions that start afterwards.
	ChangeRegistry(ctx context.Context, change func(ctx context.Context, reg *Registry, engine sandbox.Engine) error) error
	// ExecuteOn runs req on reg instead of the host's registry, audited as
	// Execute audits; reg is not kept.
	ExecuteOn(ctx context.Context, req ActionRequest, reg *Registry) (ActionResult, error)
	// RunProgram runs prog as Pipeline.RunProgram does, audited as Execute
	// audits.
	RunProgram(ctx context.Context, prog Executor, req ProgramRequest) (ActionResult, error)
	// UseEngine calls use with the host's engine, to load code on it.
	UseEngine(ctx context.Context, use func(ctx context.Context, engine sandbox.Engine) error) error
	// Executor is the usable executor the registry holds as id;
	// Executors lists their ids.
	Executor(id string) (Executor, bool)
	Executors() []string
	// Results is what results carry back.
	Results() Results
	// Health is nil while the audit sink accepts records, else why not
	// (audit.HealthReporter): every action is refused meanwhile.
	Health() error
}

// errToolTaken: ShareTool found the tool's action or executor id holding
// something else.
var errToolTaken = errors.New("the name is taken")

// ShareTool adds a tool a front loaded for its callers (a tool of an npm
// package) to h's registry, as action routed by route to e, so that every
// front of h serves it as one action. It returns nil when the tool is
// shared (added now, or by another front before: the same executor under
// the same route); otherwise, when the action or executor id is taken by
// something else (another version of the package, an action of the
// deployment's own), a registry of the tool alone, for the front to run it
// on (Host.ExecuteOn) as it ran before there was one registry.
//
// # Errors
//
// The registry's, for an action name or route it refuses.
func ShareTool(ctx context.Context, h Host, action string, route Route, e Executor) (*Registry, error) {
	own := NewRegistry()
	if err := own.AddExecutor(route.Executor, e); err != nil {
		return nil, err
	}
	if err := own.AddAction(action, route); err != nil {
		return nil, err
	}
	err := h.ChangeRegistry(ctx, func(_ context.Context, reg *Registry, _ sandbox.Engine) error {
		cur, had := reg.executors[route.Executor]
		have, routed := reg.actions[action]
		switch {
		case had && cur.exec != e, routed && !sameRoute(have, route):
			return errToolTaken
		case had && routed:
			return nil
		}
		if !had {
			reg.executors[route.Executor] = executorSlot{exec: e}
		}
		reg.actions[action] = route
		return nil
	})
	switch {
	case errors.Is(err, errToolTaken):
		return own, nil
	case err != nil:
		return nil, err
	}
	return nil, nil
}

func sameRoute(a, b Route) bool {
	return a.Executor == b.Executor && a.Version == b.Version && a.Limits == b.Limits && slices.Equal(a.Capabilities, b.Capabilities)
}
