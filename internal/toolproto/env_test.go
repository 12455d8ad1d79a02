package toolproto

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// TestConfigIsAuditedAsEnvDigest: a JS tool's context.config is audited as
// the digest of its canonical form, in the attempt and the verdict, and
// never as keys or values; a config that cannot be digested is refused
// before anything runs or is recorded.
func TestConfigIsAuditedAsEnvDigest(t *testing.T) {
	s := serve(t, fixtures, "pat-check", `{"context":{"config":{ "azdo.token" : "good-token-77" }},"input":{"prId":1}}`)
	require.Equal(t, EventResult, s.terminal.Type, "%+v", s.terminal)
	require.Len(t, s.records, 1)
	want := audit.Digest([]byte(`{"azdo.token":"good-token-77"}`))
	require.NotNil(t, s.records[0].EnvDigest)
	assert.Equal(t, want, *s.records[0].EnvDigest)
	b, err := json.Marshal(s.records[0])
	require.NoError(t, err)
	assert.NotContains(t, string(b), "good-token-77")

	s = serve(t, fixtures, "pat-check", `{"context":{"config":{"azdo.token":"a","azdo.token":"b"}},"input":{"prId":1}}`)
	require.Equal(t, EventError, s.terminal.Type)
	var p ErrorPayload
	require.NoError(t, json.Unmarshal(s.terminal.Payload, &p))
	assert.Equal(t, CodeInvalidRequest, p.Code)
	assert.True(t, p.Recoverable, "the caller fixes its config")
	assert.Contains(t, p.Message, "env is not canonicalizable JSON: audit: duplicate object key")
	assert.Empty(t, s.records, "nothing ran, nothing was recorded")
}
