package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// fakeExecutor answers every execution with a fixed outcome, or echoes the
// input when outcome is nil.
type fakeExecutor struct {
	manifest sandbox.Manifest
	outcome  *sandbox.Outcome
	err      error
	calls    int
	mu       sync.Mutex
	lastIn   sandbox.Input
}

func (f *fakeExecutor) Manifest() sandbox.Manifest { return f.manifest }
func (f *fakeExecutor) ModuleDigest() string       { return strings.Repeat("ab", 32) }
func (f *fakeExecutor) Execute(_ context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	f.mu.Lock()
	f.calls++
	f.lastIn = in
	f.mu.Unlock()
	if f.err != nil {
		return sandbox.Outcome{}, f.err
	}
	if f.outcome != nil {
		return *f.outcome, nil
	}
	return sandbox.Outcome{Kind: sandbox.Completed, Output: in.Bytes, FuelUsed: 7}, nil
}

func textExecutor() *fakeExecutor {
	return &fakeExecutor{manifest: sandbox.Manifest{
		ExecutorID: "text_upper", Version: "1.2.0", Capabilities: []string{"TEXT"},
		Limits: sandbox.Limits{MaxPayloadBytes: 10000, MaxDepth: 10, MaxListItems: 100},
	}}
}

func newTestPipeline(t *testing.T, routes map[string]Route, execs map[string]Executor) (*Pipeline, *audit.MemorySink) {
	t.Helper()
	reg := NewRegistry()
	for id, e := range execs {
		require.NoError(t, reg.AddExecutor(id, e))
	}
	for a, r := range routes {
		require.NoError(t, reg.AddAction(a, r))
	}
	sink := audit.NewMemorySink()
	return New(reg, sink), sink
}

func TestReasonCodes(t *testing.T) {
	noVersion := textExecutor()
	noVersion.manifest.Version = ""
	execs := map[string]Executor{
		"text_upper":  textExecutor(),
		"unversioned": noVersion,
	}
	routes := map[string]Route{
		"upper":          {Executor: "text_upper", Version: "^1.0.0", Capabilities: []string{"text"}},
		"no_version":     {Executor: "text_upper"},
		"bad_version":    {Executor: "text_upper", Version: "one point oh"},
		"ghost":          {Executor: "ghost", Version: "*"},
		"unversioned":    {Executor: "unversioned", Version: "*"},
		"too_new":        {Executor: "text_upper", Version: "^2.0.0"},
		"needs_net":      {Executor: "text_upper", Version: "*", Capabilities: []string{"TEXT", "NET"}},
		"grants_nothing": {Executor: "text_upper", Version: "*", Capabilities: []string{}},
	}
	deep := strings.Repeat("[", 15) + strings.Repeat("]", 15)
	tests := []struct {
		name    string
		action  string
		payload string
		status  Status
		codes   []ReasonCode
	}{
		{"success", "upper", `{"text":"hi"}`, StatusSuccess, nil},
		{"invalid json", "upper", `{"text":`, StatusBlocked, []ReasonCode{NonJSONPayload}},
		{"duplicate keys", "upper", `{"a":1,"a":2}`, StatusBlocked, []ReasonCode{NonJSONPayload}},
		{"integer beyond 2^53", "upper", `{"n":9007199254740993}`, StatusBlocked, []ReasonCode{NonJSONPayload}},
		{"lone surrogate", "upper", `{"s":"\ud800"}`, StatusBlocked, []ReasonCode{NonJSONPayload}},
		{"empty payload", "upper", ``, StatusBlocked, []ReasonCode{NonJSONPayload}},
		{"non-json checked before unknown action", "nope", `{`, StatusBlocked, []ReasonCode{NonJSONPayload}},
		{"unknown action", "nope", `{}`, StatusBlocked, []ReasonCode{ActionUnknown}},
		{"route without version", "no_version", `{}`, StatusBlocked, []ReasonCode{ActionVersionMissing}},
		{"route with invalid range", "bad_version", `{}`, StatusBlocked, []ReasonCode{ActionVersionInvalid}},
		{"executor not registered", "ghost", `{}`, StatusBlocked, []ReasonCode{ExecutorNotFound}},
		{"executor without version", "unversioned", `{}`, StatusBlocked, []ReasonCode{ExecutorVersionMissing}},
		{"executor version outside range", "too_new", `{}`, StatusBlocked, []ReasonCode{ExecutorVersionIncompatible}},
		{"capability missing", "needs_net", `{}`, StatusBlocked, []ReasonCode{ExecutorCapabilityMissing}},
		{"capability not granted", "grants_nothing", `{}`, StatusBlocked, []ReasonCode{ExecutorCapabilityMismatch}},
		{"payload too large (20 KB vs 10000)", "upper", `{"text":"` + strings.Repeat("x", 20000) + `"}`, StatusBlocked, []ReasonCode{LimitExceeded, PayloadTooLarge}},
		{"depth 15 vs 10", "upper", deep, StatusBlocked, []ReasonCode{LimitExceeded, DepthExceeded}},
		{"list of 200 vs 100", "upper", "[" + strings.TrimSuffix(strings.Repeat("1,", 200), ",") + "]", StatusBlocked, []ReasonCode{LimitExceeded, ListTooLong}},
		{"every input limit at once", "upper", "[" + strings.Repeat(`"`+strings.Repeat("y", 100)+`",`, 150) + deep + "]", StatusBlocked, []ReasonCode{LimitExceeded, PayloadTooLarge, DepthExceeded, ListTooLong}},
		{"nesting beyond the parser cap", "upper", strings.Repeat("[", audit.MaxNesting+1) + strings.Repeat("]", audit.MaxNesting+1), StatusBlocked, []ReasonCode{LimitExceeded, DepthExceeded}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, sink := newTestPipeline(t, routes, execs)
			res, err := p.Execute(context.Background(), ActionRequest{Action: tt.action, Payload: json.RawMessage(tt.payload)})
			require.NoError(t, err)
			assert.Equal(t, tt.status, res.Status, res.Message)
			if tt.codes == nil {
				tt.codes = []ReasonCode{}
			}
			assert.Equal(t, tt.codes, res.ReasonCodes, res.Message)
			if tt.status != StatusSuccess {
				assert.NotEmpty(t, res.Message)
				assert.Nil(t, res.Output)
				assert.Nil(t, res.OutputDigest)
			}
			recs := sink.Verdicts()
			require.Len(t, recs, 1, "every action is audited")
			assert.Equal(t, string(res.Status), recs[0].Status)
			assert.Equal(t, len(res.ReasonCodes), len(recs[0].ReasonCodes))
			// Only the success ran an executor; refusals record no attempt.
			all := sink.Records()
			if tt.status == StatusSuccess {
				require.Len(t, all, 2)
				assert.Equal(t, audit.EventActionAttempt, all[0].EventType)
				assert.Equal(t, all[0].Hash, *recs[0].AttemptHash)
			} else {
				assert.Len(t, all, 1, "a refusal runs nothing: no attempt")
				assert.Nil(t, recs[0].AttemptHash)
			}
		})
	}
}

func TestOutcomeMapping(t *testing.T) {
	tests := []struct {
		name    string
		outcome sandbox.Outcome
		status  Status
		codes   []ReasonCode
	}{
		{"completed with output", sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(`{"b":1, "a":2}`)}, StatusSuccess, []ReasonCode{}},
		{"completed without output", sandbox.Outcome{Kind: sandbox.Completed}, StatusSuccess, []ReasonCode{}},
		{"executor error", sandbox.Outcome{Kind: sandbox.Failed, Message: "boom"}, StatusFailed, []ReasonCode{ExecutorException}},
		{"output not json", sandbox.Outcome{Kind: sandbox.Completed, Output: []byte("not json")}, StatusFailed, []ReasonCode{ExecutorException, OutputNotJSON}},
		{"fuel", sandbox.Outcome{Kind: sandbox.FuelExhausted}, StatusBlocked, []ReasonCode{LimitExceeded, FuelExhausted}},
		{"stack", sandbox.Outcome{Kind: sandbox.StackExhausted}, StatusBlocked, []ReasonCode{LimitExceeded, StackExhausted}},
		{"memory", sandbox.Outcome{Kind: sandbox.MemoryExhausted}, StatusBlocked, []ReasonCode{LimitExceeded, MemoryExhausted}},
		{"output too large in the host", sandbox.Outcome{Kind: sandbox.OutputTooLarge}, StatusBlocked, []ReasonCode{LimitExceeded, OutputTooLarge}},
		{"timeout", sandbox.Outcome{Kind: sandbox.Timeout}, StatusBlocked, []ReasonCode{ExecutorTimeout}},
		{"output deeper than max_depth", sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(strings.Repeat("[", 11) + strings.Repeat("]", 11))}, StatusBlocked, []ReasonCode{LimitExceeded, DepthExceeded}},
		{"output beyond max_payload_bytes", sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(`"` + strings.Repeat("z", 10001) + `"`)}, StatusBlocked, []ReasonCode{LimitExceeded, PayloadTooLarge}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := textExecutor()
			e.outcome = &tt.outcome
			p, sink := newTestPipeline(t, map[string]Route{"upper": {Executor: "text_upper", Version: "*"}}, map[string]Executor{"text_upper": e})
			res, err := p.Execute(context.Background(), ActionRequest{Action: "upper", Payload: json.RawMessage(`{}`)})
			require.NoError(t, err)
			assert.Equal(t, tt.status, res.Status)
			assert.Equal(t, tt.codes, res.ReasonCodes)
			rec := sink.Verdicts()[0]
			if tt.status == StatusSuccess && len(tt.outcome.Output) > 0 {
				require.NotNil(t, res.OutputDigest)
				canon, err := audit.Canonicalize(tt.outcome.Output)
				require.NoError(t, err)
				assert.Equal(t, string(canon.Bytes), string(res.Output), "the caller gets the canonical output")
				assert.Equal(t, audit.Digest(canon.Bytes), *res.OutputDigest)
				assert.Equal(t, res.OutputDigest, rec.OutputDigest)
			} else {
				assert.Nil(t, res.OutputDigest)
				assert.Nil(t, rec.OutputDigest)
				assert.Empty(t, res.Output)
			}
		})
	}
}

func TestOutputLimitsUseCanonicalBytes(t *testing.T) {
	e := textExecutor()
	e.manifest.Limits.MaxOutputBytes = 8
	// 9 bytes as written, 7 canonical: within the limit.
	e.outcome = &sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(`{ "a" : 1 }`)}
	p, _ := newTestPipeline(t, map[string]Route{"x": {Executor: "text_upper", Version: "*"}}, map[string]Executor{"text_upper": e})
	res, err := p.Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, res.Status)
	assert.Equal(t, `{"a":1}`, string(res.Output))

	e.outcome = &sandbox.Outcome{Kind: sandbox.Completed, Output: []byte(`{"ab":12}`)}
	res, err = p.Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, StatusBlocked, res.Status)
	assert.Equal(t, []ReasonCode{LimitExceeded, OutputTooLarge}, res.ReasonCodes)
}

func TestInputDigestIgnoresKeyOrderAndWhitespace(t *testing.T) {
	e := textExecutor()
	p, _ := newTestPipeline(t, map[string]Route{"x": {Executor: "text_upper", Version: "*"}}, map[string]Executor{"text_upper": e})
	var digests []string
	for _, payload := range []string{
		`{"a":1,"b":[true,null,"é"]}`,
		"{\n  \"b\" : [ true , null , \"\\u00e9\" ],\n  \"a\" : 1.0\n}",
		`{"b":[true,null,"é"],"a":10e-1}`,
	} {
		res, err := p.Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(payload)})
		require.NoError(t, err)
		require.Equal(t, StatusSuccess, res.Status)
		digests = append(digests, res.InputDigest)
	}
	assert.Equal(t, digests[0], digests[1])
	assert.Equal(t, digests[0], digests[2])
	assert.Equal(t, audit.Digest([]byte(`{"a":1,"b":[true,null,"é"]}`)), digests[0])
	assert.Equal(t, `{"a":1,"b":[true,null,"é"]}`, string(e.lastIn.Bytes), "the executor sees canonical input")
}

func TestRouteLimitsOverrideManifest(t *testing.T) {
	e := textExecutor() // manifest: max_payload_bytes 10000
	p, _ := newTestPipeline(t,
		map[string]Route{"x": {Executor: "text_upper", Version: "*", Limits: sandbox.Limits{MaxPayloadBytes: 10}}},
		map[string]Executor{"text_upper": e})
	res, err := p.Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(`{"text":"hello"}`)})
	require.NoError(t, err)
	assert.Equal(t, []ReasonCode{LimitExceeded, PayloadTooLarge}, res.ReasonCodes)
	assert.Equal(t, 0, e.calls, "a blocked input never reaches the executor")
}

// failingSink refuses every record.
type failingSink struct{}

func (failingSink) Append(context.Context, audit.Record) (audit.Record, error) {
	return audit.Record{}, errors.New("disk full")
}
func (failingSink) Close() error { return nil }

func TestAuditFailureBlocksTheResult(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.AddExecutor("text_upper", textExecutor()))
	require.NoError(t, reg.AddAction("x", Route{Executor: "text_upper", Version: "*"}))
	res, err := New(reg, failingSink{}).Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	assert.Equal(t, StatusBlocked, res.Status)
	assert.Equal(t, []ReasonCode{AuditLogFailed}, res.ReasonCodes)
	assert.Nil(t, res.Output, "no output leaves without its audit record")
	assert.Nil(t, res.OutputDigest)
	assert.Contains(t, res.Message, "disk full")
}

func TestRequestEnvelope(t *testing.T) {
	p, sink := newTestPipeline(t, map[string]Route{"x": {Executor: "text_upper", Version: "*"}}, map[string]Executor{"text_upper": textExecutor()})
	ctx := context.Background()

	res, err := p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`1`),
		TraceID: "0b4c6a8e-4a57-4f1e-9d3c-2f5e8b7a1c90", TsUTC: "2026-11-21T10:00:00Z"})
	require.NoError(t, err)
	assert.Equal(t, "0b4c6a8e-4a57-4f1e-9d3c-2f5e8b7a1c90", res.TraceID)
	assert.Equal(t, "2026-11-21T10:00:00Z", res.TsUTC)
	assert.Equal(t, res.TraceID, sink.Verdicts()[0].TraceID)

	res, err = p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`1`)})
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, res.TraceID)
	assert.NotEmpty(t, res.TsUTC)

	_, err = p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`1`), TraceID: "not-a-uuid"})
	assert.ErrorIs(t, err, ErrInvalidRequest)
	assert.ErrorContains(t, err, "trace_id")
	_, err = p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`1`), TsUTC: "2026-11-21T10:00:00+02:00"})
	assert.ErrorIs(t, err, ErrInvalidRequest)
	assert.ErrorContains(t, err, "UTC")
	assert.Len(t, sink.Verdicts(), 2, "malformed envelopes are refused before anything is recorded")
}

func TestCallerCancellationIsAudited(t *testing.T) {
	e := textExecutor()
	e.err = context.Canceled
	p, sink := newTestPipeline(t, map[string]Route{"x": {Executor: "text_upper", Version: "*"}}, map[string]Executor{"text_upper": e})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`1`)})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, StatusBlocked, res.Status)
	assert.Equal(t, []ReasonCode{ExecutorTimeout}, res.ReasonCodes)
	require.Len(t, sink.Verdicts(), 1)
}

func TestEngineFailureFailsClosed(t *testing.T) {
	e := textExecutor()
	e.err = errors.New("engine exploded")
	p, sink := newTestPipeline(t, map[string]Route{"x": {Executor: "text_upper", Version: "*"}}, map[string]Executor{"text_upper": e})
	res, err := p.Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(`1`)})
	require.ErrorIs(t, err, ErrInternal)
	assert.Equal(t, StatusFailed, res.Status)
	assert.Equal(t, []ReasonCode{ExecutorException}, res.ReasonCodes)
	require.Len(t, sink.Verdicts(), 1)
}

func TestVersionRanges(t *testing.T) {
	tests := []struct {
		rng     string
		version string
		want    bool
	}{
		{"*", "0.0.1", true},
		{"1.2.3", "1.2.3", true},
		{"1.2.3", "1.2.4", false},
		{"=1.2.3", "1.2.3", true},
		{"^1.2.3", "1.9.0", true},
		{"^1.2.3", "2.0.0", false},
		{"^1.2.3", "1.2.2", false},
		{"^0.2.3", "0.2.9", true},
		{"^0.2.3", "0.3.0", false},
		{"^0.0.3", "0.0.4", false},
		{"~1.2.3", "1.2.9", true},
		{"~1.2.3", "1.3.0", false},
		{">=1.0.0 <2.0.0", "1.99.0", true},
		{">=1.0.0 <2.0.0", "2.0.0", false},
		{">1.0.0", "1.0.0", false},
		{"<=1.0.0", "1.0.0", true},
	}
	for _, tt := range tests {
		r, err := parseRange(tt.rng)
		require.NoError(t, err, tt.rng)
		v, err := parseVersion(tt.version)
		require.NoError(t, err)
		assert.Equal(t, tt.want, r.matches(v), "%s matches %s", tt.version, tt.rng)
	}
	for _, bad := range []string{"", "1.2", "v1.2.3", "^1.x", ">=1.0.0 <2", "01.2.3", "1.2.3-beta"} {
		_, err := parseRange(bad)
		assert.Error(t, err, bad)
	}
}

func TestManifestFromFile(t *testing.T) {
	for path, want := range map[string]string{
		"testdata/echo.wasm":     "echo",
		"/x/My-Tool.v2.wasm":     "my_tool_v2",
		"3d-render.wasm":         "x_3d_render",
		"__.wasm":                "executor",
		"Upper_Case--Thing.wasm": "upper_case_thing",
	} {
		m := ManifestFromFile(path, sandbox.Limits{})
		assert.Equal(t, want, m.ExecutorID, path)
		assert.True(t, sandbox.ValidExecutorID(m.ExecutorID), "%q from %s", m.ExecutorID, path)
		assert.Equal(t, "0.0.0", m.Version)
	}
}
