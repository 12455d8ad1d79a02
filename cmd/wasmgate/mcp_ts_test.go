package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tsClientDir holds client.mjs, which drives an MCP server with the
// official TypeScript SDK client, and its npm packages, pinned by
// package-lock.json and installed by `make testdata-js`.
var tsClientDir = filepath.Join("..", "..", "protocol", "mcp", "testdata", "tsclient")

// tsSummary is the line client.mjs prints: what the TypeScript client saw.
type tsSummary struct {
	Transport string   `json:"transport"`
	Failures  []string `json:"failures"`
	Server    struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Tools   []string `json:"tools"`
	SumTool struct {
		InputSchema map[string]any `json:"inputSchema"`
		Annotations struct {
			ReadOnlyHint    *bool `json:"readOnlyHint"`
			IdempotentHint  *bool `json:"idempotentHint"`
			DestructiveHint *bool `json:"destructiveHint"`
			OpenWorldHint   *bool `json:"openWorldHint"`
		} `json:"annotations"`
	} `json:"sum_tool"`
	Valid, Invalid, Limit, Alive tsCall
	Cancel                       struct {
		TraceID string `json:"trace_id"`
		Error   string `json:"error"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"cancel"`
}

// tsCall is one tools/call as client.mjs saw it.
type tsCall struct {
	IsError           bool            `json:"isError"`
	Text              string          `json:"text"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Status            string          `json:"status"`
	ReasonCodes       []string        `json:"reason_codes"`
	TraceID           string          `json:"trace_id"`
	SentTraceID       string          `json:"sent_trace_id"`
}

// tsRegistry writes a registry of math.sum, text.upper and test.loop, an
// endless loop given 30 s and all the fuel it could want by its route, so
// that only a cancellation stops it within the test.
func tsRegistry(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(td(""))
	require.NoError(t, err)
	wasm := func(name string) string {
		b, err := json.Marshal(filepath.Join(dir, name))
		require.NoError(t, err)
		return string(b)
	}
	reg := fmt.Sprintf(`{
  "executors": {"sum": {"wasm": %s}, "upper": {"wasm": %s}, "loop": {"wasm": %s}},
  "actions": {
    "math.sum": {"executor": "sum", "version": ">=1.0.0 <2.0.0", "capabilities": ["MATH"]},
    "text.upper": {"executor": "upper", "version": "^1.0.0", "capabilities": ["TEXT"]},
    "test.loop": {"executor": "loop", "version": "^1.0.0", "capabilities": ["TEST"],
      "limits": {"timeout_ms": 30000, "fuel": 4000000000000000000}}
  }
}`, wasm("sum.wasm"), wasm("upper.wasm"), wasm("loop.wasm"))
	path := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(path, []byte(reg), 0o644))
	return path
}

// runTSClient runs client.mjs with args under node and returns its summary,
// insisting that every check it made passed.
func runTSClient(t *testing.T, args ...string) tsSummary {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the TypeScript SDK client needs node (Node 20 or later) on PATH")
	require.FileExists(t, filepath.Join(tsClientDir, "node_modules", ".package-lock.json"),
		"the TypeScript SDK is not installed: run `make testdata-js` (npm ci in %s)", tsClientDir)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(tsClientDir, "client.mjs")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var sum tsSummary
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &sum),
		"client.mjs (%v) printed no summary\nstdout: %s\nstderr: %s", runErr, stdout.String(), stderr.String())
	require.Empty(t, sum.Failures, "stderr: %s", stderr.String())
	require.NoError(t, runErr, "stderr: %s", stderr.String())
	return sum
}

// assertTSSummary checks what the TypeScript client saw of the registry of
// tsRegistry, on either transport.
func assertTSSummary(t *testing.T, sum tsSummary) {
	t.Helper()
	assert.Equal(t, "wasmgate", sum.Server.Name)
	assert.Equal(t, implementationVersion, sum.Server.Version)
	assert.Equal(t, []string{"math.sum", "test.loop", "text.upper"}, sum.Tools)

	assert.Equal(t, "object", sum.SumTool.InputSchema["type"])
	hints := sum.SumTool.Annotations
	yes, no := true, false
	assert.Equal(t, &yes, hints.ReadOnlyHint)
	assert.Equal(t, &yes, hints.IdempotentHint)
	assert.Equal(t, &no, hints.DestructiveHint)
	assert.Equal(t, &no, hints.OpenWorldHint)

	assert.False(t, sum.Valid.IsError)
	assert.JSONEq(t, `{"sum":42}`, string(sum.Valid.StructuredContent))
	assert.Equal(t, `{"sum":42}`, sum.Valid.Text)
	assert.Equal(t, "SUCCESS", sum.Valid.Status)
	assert.Equal(t, sum.Valid.SentTraceID, sum.Valid.TraceID, "the traceparent in _meta gives the trace id")

	assert.True(t, sum.Invalid.IsError)
	assert.Equal(t, "BLOCKED", sum.Invalid.Status)
	assert.Equal(t, []string{"INPUT_SCHEMA_INVALID"}, sum.Invalid.ReasonCodes)
	assert.Regexp(t, `^BLOCKED INPUT_SCHEMA_INVALID: .*/numbers/1`, sum.Invalid.Text)

	assert.True(t, sum.Limit.IsError)
	assert.Equal(t, []string{"LIMIT_EXCEEDED", "LIST_TOO_LONG"}, sum.Limit.ReasonCodes)
	assert.Equal(t, "BLOCKED LIMIT_EXCEEDED, LIST_TOO_LONG: payload has a list of 1001 items; max_list_items is 1000", sum.Limit.Text)

	// The SDK rejects an aborted call with its own error, code
	// RequestTimeout, after sending notifications/cancelled.
	assert.Equal(t, "McpError", sum.Cancel.Error)
	assert.Equal(t, -32001, sum.Cancel.Code)
	assert.Equal(t, "MCP error -32001: AbortError: This operation was aborted", sum.Cancel.Message)

	assert.False(t, sum.Alive.IsError, sum.Alive.Text)
	assert.JSONEq(t, `{"sum":3}`, string(sum.Alive.StructuredContent), "the server answers after a cancellation")
}

// assertCancelAudited checks that the call the client cancelled has its
// verdict in the log, BLOCKED EXECUTOR_TIMEOUT, and that every attempt in
// the log has its verdict.
func assertCancelAudited(t *testing.T, logPath, traceID string) {
	t.Helper()
	rec := findRecord(t, logPath, traceID, "test.loop")
	assert.Equal(t, "BLOCKED", rec.Status)
	assert.Equal(t, []string{"EXECUTOR_TIMEOUT"}, rec.ReasonCodes)
	assert.NotNil(t, rec.AttemptHash, "the loop ran: its attempt was recorded first")

	rep := verifyLog(t, logPath)
	assert.Empty(t, rep.Unanswered)
	// Attempts and verdicts of the valid call, the loop and the call after
	// it; verdicts alone of the two calls refused before they ran.
	assert.EqualValues(t, 8, rep.Records)
}

// The official TypeScript SDK client against `wasmgate mcp`, which it
// starts over stdio as a TypeScript MCP host would.
func TestMCPTSClientStdio(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	sum := runTSClient(t, "stdio", "--long-tool", "test.loop",
		binary, "mcp", "--config", tsRegistry(t), "--audit", logPath)
	assert.Equal(t, "stdio", sum.Transport)
	assertTSSummary(t, sum)
	// The client has closed the server's stdin and the server has exited:
	// every record is in the log.
	assertCancelAudited(t, logPath, sum.Cancel.TraceID)
}

// The official TypeScript SDK client against /mcp on `wasmgate serve`, over
// streamable HTTP with the API key.
func TestMCPTSClientServe(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	s := startServe(t, []string{"EXECUTOR_API_KEY=sekret"}, "--config", tsRegistry(t), "--audit", logPath)
	sum := runTSClient(t, "http", "--long-tool", "test.loop", s.url+"/mcp", "sekret")
	assert.Equal(t, "http", sum.Transport)
	assertTSSummary(t, sum)

	// serve drains the calls in flight on SIGTERM: once it has exited,
	// every record is in the log.
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Fatalf("wasmgate serve did not exit after SIGTERM:\n%s", s.logText())
	}
	assertCancelAudited(t, logPath, sum.Cancel.TraceID)
}
