package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
)

// A verdict crosses to the front with its classification, which the
// result's JSON form leaves out, so that a front maps it as it would a
// verdict given in its own process.
func TestReplyCarriesTheClassification(t *testing.T) {
	res := pipeline.ActionResult{
		Action: "a", Status: pipeline.StatusFailed, ReasonCodes: []pipeline.ReasonCode{pipeline.ExecutorException},
		TraceID: "00000000-0000-4000-8000-000000000001", FuelUsed: 9, Message: "TOOL_INVALID: the factory returned 3",
		Stage: pipeline.StageRun, Failure: pipeline.FailureToolInvalid, QuotesExecutor: true,
		AuditIndex: new(uint64),
	}
	*res.AuditIndex = 41
	body := encodeReply(res, nil)
	assert.Contains(t, string(body), `"audit_index":41`, "the verdict's leaf index crosses to the front")
	got, err := decodeReply(body)
	require.NoError(t, err)
	assert.Equal(t, res, got)

	// A reply stored by a worker that did not send the classification is
	// classified from its reason codes.
	older := []byte(`{"result":{"action":"a","status":"BLOCKED","reason_codes":["LIMIT_EXCEEDED","PAYLOAD_TOO_LARGE"],"fuel_used":0}}`)
	got, err = decodeReply(older)
	require.NoError(t, err)
	assert.Equal(t, pipeline.StageInput, got.Stage)
	assert.Equal(t, pipeline.FailureInput, got.Failure)
}

// A verdict known only by its audit record is classified from it: a limit
// on the output once the executor ran (it used fuel), on the input before.
func TestAnswerOfARecordIsClassified(t *testing.T) {
	rec := audit.Record{Action: "a", Status: "BLOCKED", ReasonCodes: []string{"LIMIT_EXCEEDED", "DEPTH_EXCEEDED"}, FuelUsed: 120, Seq: 4}
	res, err := answerOf(rec, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, pipeline.StageOutput, res.Stage)
	assert.Equal(t, pipeline.FailureLimit, res.Failure)
	assert.False(t, res.QuotesExecutor)
	require.NotNil(t, res.AuditIndex, "the stored verdict's leaf index: seq 4 is leaf 3")
	assert.EqualValues(t, 3, *res.AuditIndex)

	rec.FuelUsed = 0
	res, err = answerOf(rec, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, pipeline.StageInput, res.Stage)
	assert.Equal(t, pipeline.FailureInput, res.Failure)
}
