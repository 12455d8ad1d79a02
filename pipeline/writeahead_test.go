package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// peekingExecutor records, when it runs, what the audit sink holds.
type peekingExecutor struct {
	*fakeExecutor
	sink   *audit.MemorySink
	sawLog []audit.Record
	sawEnv []byte
}

func (p *peekingExecutor) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	p.sawLog = p.sink.Records()
	return p.fakeExecutor.Execute(ctx, in)
}

// envTaker is a peekingExecutor that takes an env, as JS tools do.
type envTaker struct{ *peekingExecutor }

func (e envTaker) ExecuteWithEnv(ctx context.Context, in sandbox.Input, env []byte) (sandbox.Outcome, error) {
	e.sawEnv = env
	return e.Execute(ctx, in)
}

func TestAttemptIsRecordedBeforeTheExecutorRuns(t *testing.T) {
	sink := audit.NewMemorySink()
	exec := &peekingExecutor{fakeExecutor: textExecutor(), sink: sink}
	reg := NewRegistry()
	require.NoError(t, reg.AddExecutor("text_upper", exec))
	require.NoError(t, reg.AddAction("upper", Route{Executor: "text_upper", Version: "*"}))
	res, err := New(reg, sink).Execute(context.Background(), ActionRequest{Action: "upper", Payload: json.RawMessage(`{"text":"hi"}`),
		TraceID: "0b4c6a8e-4a57-4f1e-9d3c-2f5e8b7a1c90", TsUTC: "2026-11-21T10:00:00Z"})
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res.Status)

	require.Len(t, exec.sawLog, 1, "when the executor ran, its attempt was already in the log")
	a := exec.sawLog[0]
	assert.Equal(t, audit.Record{
		EventType: audit.EventActionAttempt, Action: "upper", ExecutorID: "text_upper", ExecutorVersion: "1.2.0",
		ModuleDigest: exec.ModuleDigest(), TraceID: res.TraceID, TsUTC: res.TsUTC, InputDigest: res.InputDigest,
		DigestAlg: audit.DigestAlg, Seq: 1, Prev: audit.GenesisPrev, Hash: a.Hash,
	}, a, "digests and identifiers only")

	recs := sink.Records()
	require.Len(t, recs, 2)
	v := recs[1]
	assert.Equal(t, audit.EventActionAudit, v.EventType)
	require.NotNil(t, v.AttemptHash)
	assert.Equal(t, a.Hash, *v.AttemptHash, "the verdict names its attempt")
	assert.Equal(t, "SUCCESS", v.Status)
}

func TestFailingAuditLogRefusesBeforeRunning(t *testing.T) {
	exec := textExecutor()
	reg := NewRegistry()
	require.NoError(t, reg.AddExecutor("text_upper", exec))
	require.NoError(t, reg.AddAction("x", Route{Executor: "text_upper", Version: "*"}))
	res, err := New(reg, failingSink{}).Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	assert.Equal(t, StatusBlocked, res.Status)
	assert.Equal(t, []ReasonCode{AuditLogFailed}, res.ReasonCodes)
	assert.Nil(t, res.Output)
	assert.Nil(t, res.OutputDigest)
	assert.Equal(t, "audit record could not be written, so nothing was executed: disk full", res.Message)
	assert.Zero(t, exec.calls, "nothing ran")
}

// verdictFailingSink takes attempts and refuses verdicts: the log fails
// while the executor runs.
type verdictFailingSink struct{ *audit.MemorySink }

func (s verdictFailingSink) Append(ctx context.Context, r audit.Record) (audit.Record, error) {
	if r.EventType == audit.EventActionAudit {
		return audit.Record{}, errors.New("disk full")
	}
	return s.MemorySink.Append(ctx, r)
}

func TestAuditFailureAfterRunningBlocksTheResult(t *testing.T) {
	exec := textExecutor()
	reg := NewRegistry()
	require.NoError(t, reg.AddExecutor("text_upper", exec))
	require.NoError(t, reg.AddAction("x", Route{Executor: "text_upper", Version: "*"}))
	sink := verdictFailingSink{audit.NewMemorySink()}
	res, err := New(reg, sink).Execute(context.Background(), ActionRequest{Action: "x", Payload: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	assert.Equal(t, 1, exec.calls)
	assert.Equal(t, StatusBlocked, res.Status)
	assert.Equal(t, []ReasonCode{AuditLogFailed}, res.ReasonCodes)
	assert.Nil(t, res.Output, "no output leaves without its verdict in the log")
	assert.Nil(t, res.OutputDigest)
	assert.Contains(t, res.Message, "audit record could not be written: disk full")
	assert.Len(t, sink.Records(), 1, "the attempt stays, unanswered")
	assert.Nil(t, res.AuditIndex, "no verdict in the log, no leaf to prove")
}

// A verdict names its leaf in the log's Merkle tree (seq − 1), past the
// attempt and every record before it; a sink that keeps nothing gives none.
func TestVerdictNamesItsLeafIndex(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.AddExecutor("text_upper", textExecutor()))
	require.NoError(t, reg.AddAction("x", Route{Executor: "text_upper", Version: "*"}))
	ctx := context.Background()

	sink := audit.NewMemorySink()
	p := New(reg, sink)
	for _, want := range []uint64{1, 3} { // attempt 0, verdict 1; attempt 2, verdict 3
		res, err := p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`{"a":1}`)})
		require.NoError(t, err)
		require.NotNil(t, res.AuditIndex)
		assert.Equal(t, want, *res.AuditIndex)
		verdicts := sink.Verdicts()
		assert.Equal(t, verdicts[len(verdicts)-1].Seq-1, *res.AuditIndex)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		assert.Contains(t, string(b), fmt.Sprintf(`"audit_index":%d`, want))
	}
	// Refused before running: the verdict alone is recorded.
	res, err := p.Execute(ctx, ActionRequest{Action: "nope", Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	require.Equal(t, []ReasonCode{ActionUnknown}, res.ReasonCodes)
	require.NotNil(t, res.AuditIndex)
	assert.EqualValues(t, 4, *res.AuditIndex)

	res, err = New(reg, audit.NewDiscardSink()).Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	assert.Equal(t, StatusSuccess, res.Status)
	assert.Nil(t, res.AuditIndex, "a DiscardSink keeps no log")
	b, err := json.Marshal(res)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "audit_index")
}

func TestEnvIsAuditedAsADigest(t *testing.T) {
	sink := audit.NewMemorySink()
	exec := envTaker{&peekingExecutor{fakeExecutor: textExecutor(), sink: sink}}
	reg := NewRegistry()
	require.NoError(t, reg.AddExecutor("tool", exec))
	require.NoError(t, reg.AddAction("x", Route{Executor: "tool", Version: "*"}))
	p := New(reg, sink)
	ctx := context.Background()

	env := `{ "REGION": "eu-west-9z", "API_KEY": "sk_live_51H8" }`
	canonical := `{"API_KEY":"sk_live_51H8","REGION":"eu-west-9z"}`
	res, err := p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`{}`), Env: json.RawMessage(env)})
	require.NoError(t, err)
	require.Equal(t, StatusSuccess, res.Status)
	assert.Equal(t, canonical, string(exec.sawEnv), "the tool gets the canonical env, the bytes that were digested")
	want := audit.Digest([]byte(canonical))
	assert.Equal(t, want, res.EnvDigest)
	recs := sink.Records()
	require.Len(t, recs, 2)
	for _, r := range recs {
		require.NotNil(t, r.EnvDigest, r.EventType)
		assert.Equal(t, want, *r.EnvDigest, "both records carry the env digest")
	}
	var log bytes.Buffer
	_, err = sink.WriteTo(&log)
	require.NoError(t, err)
	for _, secret := range []string{"REGION", "eu-west-9z", "API_KEY", "sk_live"} {
		assert.NotContains(t, log.String(), secret, "never keys or values")
	}

	// No env, or null: no digest, and the tool gets none.
	for _, none := range []string{"", "null", " null "} {
		res, err = p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`{}`), Env: json.RawMessage(none)})
		require.NoError(t, err)
		assert.Empty(t, res.EnvDigest)
		assert.Nil(t, exec.sawEnv)
		assert.Nil(t, sink.Verdicts()[len(sink.Verdicts())-1].EnvDigest)
	}

	// An env that cannot be digested cannot be audited: refused, unrecorded.
	before := len(sink.Records())
	for env, msg := range map[string]string{
		`["a"]`:                      "env must be a JSON object",
		`{"a":1,"a":2}`:              "env is not canonicalizable JSON: audit: duplicate object key",
		`{"n":NaN}`:                  "env is not canonicalizable JSON",
		`"REGION=eu-west"`:           "env must be a JSON object",
		`{"n":12345678901234567890}`: "env is not canonicalizable JSON",
	} {
		_, err := p.Execute(ctx, ActionRequest{Action: "x", Payload: json.RawMessage(`{}`), Env: json.RawMessage(env)})
		require.ErrorIs(t, err, ErrInvalidRequest, env)
		assert.ErrorContains(t, err, msg, env)
	}
	assert.Len(t, sink.Records(), before)

	// An executor without a use for the env (a Wasm module) does not get
	// it; the request's env is audited all the same.
	plain := textExecutor()
	reg2 := NewRegistry()
	require.NoError(t, reg2.AddExecutor("plain", plain))
	require.NoError(t, reg2.AddAction("y", Route{Executor: "plain", Version: "*"}))
	sink2 := audit.NewMemorySink()
	res, err = New(reg2, sink2).Execute(ctx, ActionRequest{Action: "y", Payload: json.RawMessage(`{}`), Env: json.RawMessage(env)})
	require.NoError(t, err)
	assert.Equal(t, want, *sink2.Verdicts()[0].EnvDigest)
}
