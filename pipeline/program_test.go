package pipeline

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// TestRunProgram: a program's stdin and stdout are bytes, digested as
// they are; its exit status decides SUCCESS or FAILED and is in the
// verdict; a limit is BLOCKED as for any executor; a stdin over
// max_payload_bytes runs nothing.
func TestRunProgram(t *testing.T) {
	prog := func(out sandbox.Outcome) *fakeExecutor {
		return &fakeExecutor{manifest: sandbox.Manifest{ExecutorID: "node", Version: "20.0.0", Limits: sandbox.Limits{MaxPayloadBytes: 10}}, outcome: &out}
	}
	stdin := []byte("not json\n")
	exit := func(n int) *int { return &n }
	for _, c := range []struct {
		name   string
		out    sandbox.Outcome
		status Status
		codes  []ReasonCode
		exit   *int
		stdout string
	}{
		{"exit 0", sandbox.Outcome{Kind: sandbox.Completed, Output: []byte("out\n"), FuelUsed: 9}, StatusSuccess, []ReasonCode{}, exit(0), "out\n"},
		{"exit 3", sandbox.Outcome{Kind: sandbox.Failed, Message: "exit status 3", ExitCode: 3}, StatusFailed, []ReasonCode{ExecutorException}, exit(3), ""},
		{"out of fuel", sandbox.Outcome{Kind: sandbox.FuelExhausted, Output: []byte("partial"), ExitCode: -1}, StatusBlocked, []ReasonCode{LimitExceeded, FuelExhausted}, nil, "partial"},
		{"out of time", sandbox.Outcome{Kind: sandbox.Timeout, ExitCode: -1}, StatusBlocked, []ReasonCode{ExecutorTimeout}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sink := audit.NewMemorySink()
			p := New(NewRegistry(), sink)
			e := prog(c.out)
			res, err := p.RunProgram(context.Background(), e, ProgramRequest{Action: "node", Stdin: stdin})
			require.NoError(t, err)
			assert.Equal(t, c.status, res.Status)
			assert.Equal(t, c.codes, res.ReasonCodes)
			assert.Equal(t, c.exit, res.ExitCode)
			assert.Equal(t, audit.Digest(stdin), res.InputDigest, "the stdin's bytes, not a canonical form")
			assert.Equal(t, stdin, e.lastIn.Bytes)
			assert.Equal(t, int64(10), e.lastIn.Limits.MaxPayloadBytes, "the manifest's limit")
			assert.Nil(t, res.Output, "the program wrote its stdout itself")
			if c.stdout == "" {
				assert.Nil(t, res.OutputDigest)
			} else {
				require.NotNil(t, res.OutputDigest)
				assert.Equal(t, audit.Digest([]byte(c.stdout)), *res.OutputDigest)
			}
			recs := sink.Records()
			require.Len(t, recs, 2, "an attempt, then the verdict")
			assert.Equal(t, audit.EventActionAttempt, recs[0].EventType)
			assert.Equal(t, &recs[0].Hash, recs[1].AttemptHash)
			assert.Equal(t, c.exit, recs[1].ExitCode)
			assert.Equal(t, string(c.status), recs[1].Status)
			assert.Equal(t, res.OutputDigest, recs[1].OutputDigest)
		})
	}

	t.Run("stdin too large", func(t *testing.T) {
		sink := audit.NewMemorySink()
		e := prog(sandbox.Outcome{Kind: sandbox.Completed})
		res, err := New(NewRegistry(), sink).RunProgram(context.Background(), e, ProgramRequest{Action: "node", Stdin: []byte("12345678901")})
		require.NoError(t, err)
		assert.Equal(t, StatusBlocked, res.Status)
		assert.Equal(t, []ReasonCode{LimitExceeded, PayloadTooLarge}, res.ReasonCodes)
		assert.Empty(t, res.InputDigest, "a stdin cut short has no honest digest")
		assert.Zero(t, e.calls, "nothing ran")
		recs := sink.Records()
		require.Len(t, recs, 1, "a verdict, no attempt")
		assert.Nil(t, recs[0].AttemptHash)
	})
}
