package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// TestActionRequestValidate checks the envelope as Execute does, without
// running anything: what a replay checks for its whole corpus first.
func TestActionRequestValidate(t *testing.T) {
	tests := []struct {
		name string
		req  pipeline.ActionRequest
		want string // "" when valid
	}{
		{"empty envelope", pipeline.ActionRequest{}, ""},
		{"full envelope", pipeline.ActionRequest{TraceID: "4b1c2d3e-5f60-4718-8a9b-0c1d2e3f4a5b", TsUTC: "2026-01-02T03:04:05.5Z", Env: json.RawMessage(` {"K": 1} `)}, ""},
		{"null env", pipeline.ActionRequest{Env: json.RawMessage(`null`)}, ""},
		{"payload not JSON is a verdict, not an error", pipeline.ActionRequest{Payload: json.RawMessage(`{"a":`)}, ""},
		{"trace id", pipeline.ActionRequest{TraceID: "abc"}, `pipeline: invalid request: trace_id "abc" is not a UUID`},
		{"timestamp", pipeline.ActionRequest{TsUTC: "yesterday"}, `pipeline: invalid request: ts_utc "yesterday" is not an RFC 3339 timestamp`},
		{"timestamp not UTC", pipeline.ActionRequest{TsUTC: "2026-01-02T03:04:05+01:00"}, `pipeline: invalid request: ts_utc "2026-01-02T03:04:05+01:00" is not in UTC`},
		{"env an array", pipeline.ActionRequest{Env: json.RawMessage(`["K"]`)}, "pipeline: invalid request: env must be a JSON object"},
		{"env with a key twice", pipeline.ActionRequest{Env: json.RawMessage(`{"K":1,"K":2}`)}, "pipeline: invalid request: env is not canonicalizable JSON: audit: duplicate object key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, pipeline.ErrInvalidRequest)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestRegistryAddSource registers executors as a registry file's entries
// are: code that is missing or refused is kept, and blocks its requests.
func TestRegistryAddSource(t *testing.T) {
	ctx := context.Background()
	engine, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	require.NoError(t, err)
	defer engine.Close(ctx)
	wasm, err := os.ReadFile("../testdata/upper.wasm")
	require.NoError(t, err)

	reg := pipeline.NewRegistry()
	require.NoError(t, reg.AddSource(ctx, engine, "upper", pipeline.ExecutorSource{Module: wasm}))
	require.NoError(t, reg.AddSource(ctx, engine, "missing", pipeline.ExecutorSource{Wasm: "../testdata/nope.wasm"}))
	require.NoError(t, reg.AddSource(ctx, engine, "other", pipeline.ExecutorSource{Wasm: "../testdata/sum.wasm"}))
	assert.EqualError(t, reg.AddSource(ctx, engine, "upper", pipeline.ExecutorSource{Module: wasm}), `executor "upper" is registered twice`)
	assert.EqualError(t, reg.AddSource(ctx, engine, "x", pipeline.ExecutorSource{Module: wasm, Tool: "t"}), `executor "x" "tool" applies to JS tools and packages only`)
	assert.EqualError(t, reg.AddSource(ctx, engine, "x", pipeline.ExecutorSource{}), `executor "x" names no code: set one of "wasm", "js", "package" or "python"`)
	for action, id := range map[string]string{"text.upper": "upper", "gone": "missing", "misnamed": "other"} {
		require.NoError(t, reg.AddAction(action, pipeline.Route{Executor: id, Version: "*"}))
	}
	assert.Equal(t, []string{
		`gone: EXECUTOR_NOT_FOUND (executor "missing": open ../testdata/nope.wasm: no such file or directory)`,
		`misnamed: EXECUTOR_INVALID (executor "other": module ../testdata/sum.wasm declares executor_id "sum", but is registered as "other")`,
	}, reg.Problems())

	e, ok := reg.Executor("upper")
	require.True(t, ok)
	assert.Equal(t, "upper", e.Manifest().ExecutorID, "the module's bytes, with its own manifest")
}
