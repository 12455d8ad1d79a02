package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The executor contract's privacy rule (../shared/seeds/004_…, rule 6): with
// --results digest-only, no front lets raw output or the executor's own
// text out; verdicts and digests still do.

func TestRunDigestOnly(t *testing.T) {
	t.Parallel()
	full := parseResult(t, wasmgate(t, "", "run", "--wasm", td("upper.wasm"), "--input", `{"text":"secret words"}`))
	r := wasmgate(t, "", "run", "--wasm", td("upper.wasm"), "--input", `{"text":"secret words"}`, "--results", "digest-only")
	require.Equal(t, exitSuccess, r.code, r.stderr)
	res := parseResult(t, r)
	assert.Equal(t, "SUCCESS", res.Status)
	assert.Nil(t, res.Output)
	assert.NotContains(t, r.stdout, "SECRET")
	require.NotNil(t, res.OutputDigest)
	assert.Equal(t, *full.OutputDigest, *res.OutputDigest, "the digest is the same")

	r = wasmgate(t, "", "run", "--js", jsTool("throws.js"), "--input", `{"reason":"secret reason"}`, "--results", "digest-only")
	require.Equal(t, exitFailed, r.code, r.stderr)
	res = parseResult(t, r)
	assert.Equal(t, []string{"EXECUTOR_EXCEPTION"}, res.ReasonCodes)
	assert.Equal(t, "the executor's message is withheld: results are digest-only", res.Message)
	assert.NotContains(t, r.stdout+r.stderr, "secret reason")

	r = wasmgate(t, "", "run", "--wasm", td("upper.wasm"), "--input", `{}`, "--results", "none")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `--results: results mode "none": want full or digest-only`)
}

func TestServeDigestOnly(t *testing.T) {
	t.Parallel()
	store := toolStore(t, storePackage{"acme-tools", "1.0.0", acmeTools, `{"name":"acme-tools","version":"1.0.0"}`})
	srv := startServe(t, nil, "--tools-dir", store, "--results", "digest-only")
	c := newProtocolClient(srv.url, "")
	r, tr := c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", "shout", `{"s":"secret"}`))
	requireSuccess(t, r, tr, `null`)
	assert.NotContains(t, string(r.body), "SECRET")
	var v struct {
		Wasmgate struct {
			OutputDigest *string `json:"outputDigest"`
		} `json:"wasmgate"`
	}
	require.NoError(t, json.Unmarshal(r.body, &v))
	assert.NotNil(t, v.Wasmgate.OutputDigest, "the verdict keeps the digest")

	r, tr = c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", "boom", `{}`))
	requireToolError(t, r, tr, "TOOL_EXECUTION_ERROR", "the executor's message is withheld: results are digest-only")
	assert.NotContains(t, string(r.body), "Error: boom", "the tool's own text")
	r, tr = c.execute(t, "/execute-tool", call("acme-tools", "1.0.0", "broken", `{}`))
	requireToolError(t, r, tr, "TOOL_INVALID", "withheld")
	assert.NotContains(t, string(r.body), "config")

	info := c.do(t, http.MethodGet, "/info", "")
	assert.Contains(t, string(info.body), `"results":"digest-only"`)
}

func TestToolDigestOnly(t *testing.T) {
	t.Parallel()
	tools := td("toolproto/tools")
	r := wasmgateProcess(t, "", "tool", "run", "text-slug", "--tools", tools, "--json", "--input", `{"title":"Secret Title"}`, "--results", "digest-only")
	require.Equal(t, 0, r.code, r.stderr)
	var types []string
	var result map[string]string
	for line := range strings.Lines(r.stdout) {
		var e struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		types = append(types, e.Type)
		if e.Type == "result" {
			require.NoError(t, json.Unmarshal(e.Payload, &result))
		}
	}
	assert.Equal(t, []string{"started", "result"}, types, "no log events: the tool's console is its own text")
	assert.Len(t, result["output_digest"], 64)
	assert.Len(t, result, 1)
	assert.NotContains(t, strings.ToLower(r.stdout+r.stderr), "secret")

	r = wasmgateProcess(t, "", "tool", "run", "pat-check", "--tools", tools, "--json", "--input", `{"prId":42}`,
		"--config", `{"azdo.token":"expired-pat"}`, "--results", "digest-only")
	require.Equal(t, 1, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last struct {
		Type    string `json:"type"`
		Payload struct {
			Code        string `json:"code"`
			Message     string `json:"message"`
			Recoverable bool   `json:"recoverable"`
		} `json:"payload"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	assert.Equal(t, "error", last.Type)
	assert.Equal(t, "AUTH_FAILED", last.Payload.Code, "the tool's code is the protocol's, not its text")
	assert.True(t, last.Payload.Recoverable)
	assert.Equal(t, "the executor's message is withheld: results are digest-only", last.Payload.Message)
	assert.NotContains(t, r.stdout+r.stderr, "PAT expired")
	assert.NotContains(t, r.stdout+r.stderr, "reviewing PR")

	// A Python tool: neither what it prints nor what it raises leaves the
	// run.
	r = wasmgateProcess(t, "", "tool", "run", "word-count", "--tools", tools, "--json", "--input", `{"text":"Secret words"}`, "--results", "digest-only")
	require.Equal(t, 0, r.code, r.stderr)
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	assert.Regexp(t, `^\{"type":"result","ts":"[^"]+","toolId":"word-count","payload":\{"output_digest":"[0-9a-f]{64}"\}\}$`, lines[len(lines)-1])
	assert.Empty(t, r.stderr, "no print on stderr")
	r = wasmgateProcess(t, "", "tool", "run", "word-count", "--tools", tools, "--json", "--input", `{"text":"..."}`, "--results", "digest-only")
	require.Equal(t, 1, r.code, r.stderr)
	lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	assert.Equal(t, "EXECUTOR_EXCEPTION", last.Payload.Code)
	assert.Equal(t, "the executor's message is withheld: results are digest-only", last.Payload.Message)
	assert.NotContains(t, r.stdout+r.stderr, "no words")
}

func TestRepDigestOnly(t *testing.T) {
	t.Parallel()
	c := startRep(t, nil, "--config", repTraceMindConfig(), "--results", "digest-only")
	plant := repExample(t, "plant-monitor.ir.json")
	inputs := map[string]any{"endpoint": "opc.tcp://localhost:4840", "nodes": []string{"ns=2;i=2"}}
	p := c.finish(c.startRun(map[string]any{"ir": plant, "inputs": inputs}))
	require.Equal(t, "completed", p.Status, "%+v", p.Error)
	assert.Empty(t, p.Summary.Outputs, "the steps' outputs stay inside the run")
	// No step output leaves the run (the switch's case, a label of the IR,
	// says which edge was taken, as the steps that ran do).
	for _, field := range []string{"simulated", "threshold", "target_node", "ns=2;i=2"} {
		assert.NotContains(t, string(p.raw), field, "no step output leaves the run")
	}
	digests := 0
	for _, e := range p.Events {
		if e.Type == "step" && e.State == "succeeded" && len(e.Result) > 0 {
			var v struct {
				OutputDigest *string `json:"output_digest"`
			}
			require.NoError(t, json.Unmarshal(e.Result, &v))
			if v.OutputDigest != nil {
				digests++
			}
		}
	}
	assert.Equal(t, 4, digests, "read, decide, write and emit_1 report their output digests")
}
