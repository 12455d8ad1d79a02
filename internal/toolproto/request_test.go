package toolproto

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRequest(t *testing.T) {
	req, err := ParseRequest([]byte(` {"context":{"toolId":"fake","config":{"apiKey":"k","timeoutMs":1500},"workspaceRoot":"/w","extra":1},"input":{"a":[1]},"future":true} `))
	require.NoError(t, err)
	assert.Equal(t, RequestContext{ToolID: "fake", Config: json.RawMessage(`{"apiKey":"k","timeoutMs":1500}`), WorkspaceRoot: "/w"}, req.Context)
	assert.JSONEq(t, `{"a":[1]}`, string(req.Input))
	assert.Equal(t, 1500*time.Millisecond, Timeout(nil, req))

	req, err = ParseRequest([]byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, &Request{}, req)

	for _, tt := range []struct{ raw, msg string }{
		{``, `stdin is empty; send a ToolRequest {"context": {"toolId", "config", "workspaceRoot"}, "input": ...}`},
		{`not json`, "the request is not a JSON object"},
		{`[1]`, "the request is not a JSON object"},
		{`{"input":}`, "the request is not JSON: invalid character '}' looking for beginning of value"},
		{`{} {}`, "the request holds more than one JSON value"},
		{`{"context":[]}`, "context must be a JSON object"},
		{`{"context":{"toolId":7}}`, "context.toolId must be a string"},
		{`{"context":{"workspaceRoot":true}}`, "context.workspaceRoot must be a string"},
		{`{"context":{"config":"k=v"}}`, "context.config must be a JSON object"},
		{`{"context":{"config":{"timeoutMs":-1}}}`, "context.config.timeoutMs must be a positive whole number of milliseconds, not -1"},
		{`{"context":{"config":{"timeoutMs":"1s"}}}`, `context.config.timeoutMs must be a positive whole number of milliseconds, not "1s"`},
	} {
		_, err := ParseRequest([]byte(tt.raw))
		assert.EqualError(t, err, tt.msg, tt.raw)
	}
}

func TestTimeoutPrecedence(t *testing.T) {
	m := &Manifest{TimeoutMs: 2000}
	withConfig, err := ParseRequest([]byte(`{"context":{"config":{"timeoutMs":500}}}`))
	require.NoError(t, err)
	without, err := ParseRequest([]byte(`{"context":{"config":{}}}`))
	require.NoError(t, err)

	assert.Equal(t, 500*time.Millisecond, Timeout(m, withConfig), "the request's config first")
	assert.Equal(t, 2000*time.Millisecond, Timeout(m, without), "then the manifest")
	assert.Equal(t, 30*time.Second, Timeout(&Manifest{}, without), "then the default")
	assert.Equal(t, 30*time.Second, Timeout(nil, nil))
}

func TestNewRequest(t *testing.T) {
	raw, err := NewRequest("fake", json.RawMessage(`{"k": "v"}`), json.RawMessage(`{"a": 1}`), "/w")
	require.NoError(t, err)
	assert.Equal(t, `{"context":{"toolId":"fake","config":{"k":"v"},"workspaceRoot":"/w"},"input":{"a":1}}`, string(raw))

	raw, err = NewRequest("fake", nil, nil, "")
	require.NoError(t, err)
	assert.Equal(t, `{"context":{"toolId":"fake"}}`, string(raw))

	_, err = NewRequest("fake", json.RawMessage(`[1]`), nil, "")
	assert.EqualError(t, err, "the config is not a JSON object")
	_, err = NewRequest("fake", nil, json.RawMessage(`{`), "")
	assert.EqualError(t, err, "the input is not JSON")
	_, err = NewRequest("fake", json.RawMessage(`{"timeoutMs":0}`), nil, "")
	assert.EqualError(t, err, "context.config.timeoutMs must be a positive whole number of milliseconds, not 0")
}
