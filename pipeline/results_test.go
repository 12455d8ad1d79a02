package pipeline

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Digest-only results carry the verdict and the digests, never the output,
// the executor's log or a message that quotes it; the audit record is the
// same as in full mode.
func TestDigestOnlyResults(t *testing.T) {
	secret := "sk-secret-in-the-output"
	cases := []struct {
		name    string
		outcome *sandbox.Outcome
		payload string
		status  Status
		message string // the digest-only message
	}{
		{"success", nil, `{"k":"` + secret + `"}`, StatusSuccess, ""},
		{"the executor's failure", &sandbox.Outcome{Kind: sandbox.Failed, Message: "bad input " + secret, Stderr: []byte(secret)}, `{}`, StatusFailed, withheld},
		{"output that is not JSON", &sandbox.Outcome{Kind: sandbox.OutputNotJSON, Message: "unexpected " + secret}, `{}`, StatusFailed, withheld},
		{"the pipeline's own refusal", nil, `{"l":[` + `1,2,3,4,5,6,7,8,9,10,11` + `]}`, StatusBlocked, "payload has a list of 11 items; max_list_items is 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			results := map[Results]ActionResult{}
			var records []audit.Record
			for _, mode := range []Results{ResultsFull, ResultsDigestOnly} {
				exec := textExecutor()
				exec.manifest.Limits.MaxListItems = 10
				exec.outcome = c.outcome
				reg := NewRegistry()
				require.NoError(t, reg.AddExecutor("text_upper", exec))
				require.NoError(t, reg.AddAction("upper", Route{Executor: "text_upper", Version: "*"}))
				sink := audit.NewMemorySink()
				p := New(reg, sink, WithResults(mode))
				// A clock that stands still: the records' durations (and so
				// their hashes) cannot differ because one mode ran slower.
				p.now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
				res, err := p.Execute(context.Background(),
					ActionRequest{Action: "upper", Payload: json.RawMessage(c.payload), TraceID: "00000000-0000-4000-8000-000000000001", TsUTC: "2026-01-01T00:00:00Z"})
				require.NoError(t, err)
				results[mode] = res
				records = append(records, sink.Verdicts()...)
			}
			full, digest := results[ResultsFull], results[ResultsDigestOnly]
			assert.Equal(t, c.status, digest.Status)
			assert.Equal(t, full.ReasonCodes, digest.ReasonCodes)
			assert.Equal(t, full.OutputDigest, digest.OutputDigest, "the digest stays")
			assert.Equal(t, full.InputDigest, digest.InputDigest)
			assert.Nil(t, digest.Output)
			assert.Empty(t, digest.Log)
			assert.Equal(t, c.message, digest.Message)
			b, err := json.Marshal(digest)
			require.NoError(t, err)
			assert.NotContains(t, string(b), secret, "nothing the executor wrote leaves the pipeline")
			require.Len(t, records, 2)
			assert.Equal(t, records[0], records[1], "the audit record does not depend on the mode")
		})
	}
	for _, s := range []string{"full", "digest-only"} {
		r, err := ParseResults(s)
		require.NoError(t, err)
		assert.Equal(t, s, r.String())
	}
	_, err := ParseResults("none")
	assert.EqualError(t, err, `results mode "none": want full or digest-only`)
}
