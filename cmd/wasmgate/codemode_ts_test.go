package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tsCodeMode is what codemode.mjs saw of a server in Code Mode.
type tsCodeMode struct {
	Transport             string          `json:"transport"`
	Tools                 []string        `json:"tools"`
	Description           string          `json:"description"`
	OutputSchema          json.RawMessage `json:"outputSchema"`
	OK, TypeError, Thrown struct {
		IsError           bool            `json:"isError"`
		Text              string          `json:"text"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Calls             *int            `json:"calls"`
	}
}

// runTSCodeMode runs codemode.mjs with args under node.
func runTSCodeMode(t *testing.T, args ...string) tsCodeMode {
	t.Helper()
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the TypeScript SDK client needs node (Node 20 or later) on PATH")
	require.FileExists(t, filepath.Join(tsClientDir, "node_modules", ".package-lock.json"),
		"the TypeScript SDK is not installed: run `make testdata-js` (npm ci in %s)", tsClientDir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(tsClientDir, "codemode.mjs")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr.String())
	var sum tsCodeMode
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &sum), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	return sum
}

// The official TypeScript SDK client against `wasmgate mcp --code-mode`,
// which it starts over stdio: one tool, a script's result as structured
// content (which the SDK checks against the declared outputSchema), a type
// error and a throw as isError.
func TestCodeModeTSClientStdio(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	sum := runTSCodeMode(t, "stdio", binary, "mcp", "--code-mode", "--config", td("registry.json"), "--audit", logPath)
	assertTSCodeMode(t, sum)
	rep := verifyLog(t, logPath)
	assert.EqualValues(t, 4, rep.Records, "the two calls of the one script that ran, an attempt and a verdict each")
}

// The same against /mcp on `wasmgate serve --code-mode`, over streamable
// HTTP with the API key.
func TestCodeModeTSClientServe(t *testing.T) {
	s := startServe(t, []string{"EXECUTOR_API_KEY=sekret"}, "--code-mode", "--config", td("registry.json"))
	assertTSCodeMode(t, runTSCodeMode(t, "http", s.url+"/mcp", "sekret"))
}

// assertTSCodeMode checks what codemode.mjs saw, on either transport.
func assertTSCodeMode(t *testing.T, sum tsCodeMode) {
	t.Helper()
	assert.Equal(t, []string{"run_script"}, sum.Tools)
	assert.Contains(t, sum.Description, "sum(params: {\n        numbers: number[];")
	assert.JSONEq(t, codeModeOutputSchema, string(sum.OutputSchema))

	assert.False(t, sum.OK.IsError, sum.OK.Text)
	assert.JSONEq(t, `{"result":{"sum":12,"text":"TOTAL 12"},"stdout":"sum is 12\n","stderr":""}`, string(sum.OK.StructuredContent))
	assert.JSONEq(t, string(sum.OK.StructuredContent), sum.OK.Text)
	require.NotNil(t, sum.OK.Calls)
	assert.Equal(t, 2, *sum.OK.Calls)

	assert.True(t, sum.TypeError.IsError)
	assert.Equal(t, "1 type error, nothing was run:\nscript.ts:2:40: error TS2322: Type 'string' is not assignable to type 'number[]'.", sum.TypeError.Text)

	assert.True(t, sum.Thrown.IsError)
	// Positions are in the bundle (docs/JAVASCRIPT.md).
	assert.Regexp(t, `^the script threw: Error: no luck\n    at <anonymous> \(script\.ts:[0-9]+:[0-9]+\)$`, sum.Thrown.Text)
}

// codeModeOutputSchema is run_script's outputSchema.
const codeModeOutputSchema = `{"type":"object","properties":{` +
	`"result":{"description":"the script's default export, awaited, as JSON (null when it exported nothing)"},` +
	`"stdout":{"type":"string","description":"console.log, info and debug, one line per call"},` +
	`"stderr":{"type":"string","description":"console.warn and console.error, one line per call"}},` +
	`"required":["result","stdout","stderr"]}`
