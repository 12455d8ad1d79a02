package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// Classify is the one table fronts map from: every verdict the pipeline
// gives, by its reason codes and whether the executor ran.
func TestClassify(t *testing.T) {
	cases := []struct {
		codes []ReasonCode
		ran   bool
		stage Stage
		kind  FailureKind
	}{
		{nil, true, StageOutput, FailureNone},
		{[]ReasonCode{NonJSONPayload}, false, StageInput, FailureInput},
		{[]ReasonCode{InputSchemaInvalid}, false, StageInput, FailureInput},
		{[]ReasonCode{LimitExceeded, PayloadTooLarge}, false, StageInput, FailureInput},
		{[]ReasonCode{LimitExceeded, DepthExceeded, ListTooLong}, false, StageInput, FailureInput},
		{[]ReasonCode{ActionUnknown}, false, StageLoad, FailureNotFound},
		{[]ReasonCode{ExecutorNotFound}, false, StageLoad, FailureNotFound},
		{[]ReasonCode{ExecutorInvalid}, false, StageLoad, FailureToolInvalid},
		{[]ReasonCode{ActionVersionMissing}, false, StageLoad, FailureRefused},
		{[]ReasonCode{ActionVersionInvalid}, false, StageLoad, FailureRefused},
		{[]ReasonCode{ExecutorVersionMissing}, false, StageLoad, FailureRefused},
		{[]ReasonCode{ExecutorVersionIncompatible}, false, StageLoad, FailureRefused},
		{[]ReasonCode{ExecutorCapabilityMissing}, false, StageLoad, FailureRefused},
		{[]ReasonCode{ExecutorCapabilityMismatch}, false, StageLoad, FailureRefused},
		{[]ReasonCode{LimitExceeded, MemoryExhausted}, false, StageLoad, FailureLimit},
		{[]ReasonCode{LimitExceeded, MemoryExhausted}, true, StageRun, FailureLimit},
		{[]ReasonCode{LimitExceeded, FuelExhausted}, true, StageRun, FailureLimit},
		{[]ReasonCode{LimitExceeded, StackExhausted}, true, StageRun, FailureLimit},
		{[]ReasonCode{ExecutorTimeout}, true, StageRun, FailureTimeout},
		{[]ReasonCode{ExecutorTimeout}, false, StageRun, FailureTimeout},
		{[]ReasonCode{ExecutorException}, true, StageRun, FailureException},
		{[]ReasonCode{ExecutorException, OutputNotJSON}, true, StageOutput, FailureException},
		{[]ReasonCode{LimitExceeded, OutputTooLarge}, true, StageOutput, FailureLimit},
		{[]ReasonCode{LimitExceeded, PayloadTooLarge}, true, StageOutput, FailureLimit},
		{[]ReasonCode{LimitExceeded, DepthExceeded}, true, StageOutput, FailureLimit},
		{[]ReasonCode{OutputSchemaInvalid}, true, StageOutput, FailureOutputInvalid},
		{[]ReasonCode{AuditLogFailed}, false, StageAudit, FailureAudit},
		{[]ReasonCode{ExecutorException, AuditLogFailed}, true, StageAudit, FailureAudit},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.codes, c.ran), func(t *testing.T) {
			stage, kind := Classify(c.codes, c.ran)
			assert.Equal(t, c.stage, stage)
			assert.Equal(t, c.kind, kind)
		})
	}
}

// failingAfter is a sink that takes n records and fails on the next.
type failingAfter struct {
	audit.Sink
	n int
}

func (f *failingAfter) Append(ctx context.Context, r audit.Record) (audit.Record, error) {
	if f.n == 0 {
		return audit.Record{}, fmt.Errorf("disk full")
	}
	f.n--
	return f.Sink.Append(ctx, r)
}

// Every verdict carries its stage, its kind of failure and whether its
// message quotes the executor, set by the pipeline, in both results modes;
// none of them reaches the JSON form or the audit record.
func TestVerdictCarriesItsClassification(t *testing.T) {
	notATool := &sandbox.Outcome{Kind: sandbox.Failed, Message: "TOOL_INVALID: the factory returned 3", Invalid: true}
	threw := &sandbox.Outcome{Kind: sandbox.Failed, Message: "Error: boom"}
	deepOutput := &sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(strings.Repeat("[", 11) + strings.Repeat("]", 11))}
	cases := []struct {
		name      string
		action    string
		payload   string
		outcome   *sandbox.Outcome
		sinkTake  int // records the sink takes before failing; -1: all
		stage     Stage
		kind      FailureKind
		quotes    bool
		digestMsg string
	}{
		{"success", "upper", `{}`, nil, -1, StageOutput, FailureNone, false, ""},
		{"input limit", "upper", "[" + strings.Repeat("[", 11) + strings.Repeat("]", 11) + "]", nil, -1, StageInput, FailureInput, false, "payload nests 12 levels; max_depth is 10"},
		{"output limit", "upper", `{}`, deepOutput, -1, StageOutput, FailureLimit, false, "output nests 11 levels; max_depth is 10"},
		{"unknown action", "nope", `{}`, nil, -1, StageLoad, FailureNotFound, false, `action "nope" is not registered`},
		{"tool export missing", "missing_export", `{}`, nil, -1, StageLoad, FailureNotFound, false, `executor "missing_export": TOOL_NOT_FOUND: tool.js: no export "nope"`},
		{"not admitted", "refused", `{}`, nil, -1, StageLoad, FailureToolInvalid, false, `executor "refused": runtime: module not admitted: imports env.f`},
		{"a factory that gave no tool", "upper", `{}`, notATool, -1, StageRun, FailureToolInvalid, true, "TOOL_INVALID: " + withheld},
		{"an exception", "upper", `{}`, threw, -1, StageRun, FailureException, true, withheld},
		{"the attempt not written", "upper", `{}`, nil, 0, StageAudit, FailureAudit, false, "audit record could not be written, so nothing was executed: disk full"},
		{"the verdict not written after an exception", "upper", `{}`, threw, 1, StageAudit, FailureAudit, true, withheld},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, mode := range []Results{ResultsFull, ResultsDigestOnly} {
				exec := textExecutor()
				exec.outcome = c.outcome
				reg := NewRegistry()
				require.NoError(t, reg.AddExecutor("text_upper", exec))
				require.NoError(t, reg.AddUnadmitted("missing_export", ToolNotFound(&jstool.LoadError{Tool: "tool.js", Code: jstool.ErrToolNotFound, Msg: `no export "nope"`})))
				require.NoError(t, reg.AddUnadmitted("refused", fmt.Errorf("%w: imports env.f", sandbox.ErrNotAdmitted)))
				for _, a := range []string{"upper", "missing_export", "refused"} {
					id := a
					if a == "upper" {
						id = "text_upper"
					}
					require.NoError(t, reg.AddAction(a, Route{Executor: id, Version: "*"}))
				}
				var sink audit.Sink = audit.NewMemorySink()
				if c.sinkTake >= 0 {
					sink = &failingAfter{Sink: sink, n: c.sinkTake}
				}
				res, err := New(reg, sink, WithResults(mode)).Execute(context.Background(), ActionRequest{Action: c.action, Payload: json.RawMessage(c.payload)})
				require.NoError(t, err)
				assert.Equal(t, c.stage, res.Stage, mode)
				assert.Equal(t, c.kind, res.Failure, mode)
				assert.Equal(t, c.quotes, res.QuotesExecutor, mode)
				if mode == ResultsDigestOnly {
					assert.Equal(t, c.digestMsg, res.Message)
				}
				b, err := json.Marshal(res)
				require.NoError(t, err)
				for _, field := range []string{`"stage"`, `"failure"`, `"quotes`, `"Stage"`, `"Failure"`} {
					assert.NotContains(t, string(b), field, "the JSON form is the protocols'")
				}
			}
		})
	}
}
