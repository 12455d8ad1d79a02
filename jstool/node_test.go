package jstool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// nodeTool is a fixture of the Node profile, relative to the tools
// directory run reads.
func nodeTool(name string) string { return filepath.Join("..", "node", name) }

// runNode runs a tool fixture in node, as wasmgate runs it: params in, the
// result's JSON out.
func runNode(t *testing.T, file, params string) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	cmd := exec.Command(node, "run_node.mjs", file)
	cmd.Dir = filepath.Join("testdata", "node")
	cmd.Stdin = strings.NewReader(params)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	return out
}

func TestNodeBuiltinsGiveWhatNodeGives(t *testing.T) {
	testenv.GuestOnly(t)
	res := run(t, engine(t, sandbox.EngineWazero), nodeTool("builtins.mjs"), "", `{}`, sandbox.Limits{Fuel: 4_000_000_000})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	var got, want map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(res.Output, &got))
	require.NoError(t, json.Unmarshal(runNode(t, "builtins.mjs", `{}`), &want))
	require.NotEmpty(t, want)
	for key, w := range want {
		if key == "path" {
			// path.resolve starts from the working directory, "/" in the
			// sandbox; the rest must agree.
			var g, n []json.RawMessage
			require.NoError(t, json.Unmarshal(got[key], &g))
			require.NoError(t, json.Unmarshal(w, &n))
			require.Len(t, g, len(n))
			assert.Equal(t, `"/x/y"`, string(g[1]))
			for i := range n {
				if i != 1 {
					assert.JSONEq(t, string(n[i]), string(g[i]), "path %d", i)
				}
			}
			continue
		}
		assert.JSONEq(t, string(w), string(got[key]), key)
	}
}

func TestNodeProfileIsDeterministicOnEveryEngine(t *testing.T) {
	type result struct {
		Random map[string]json.RawMessage `json:"random"`
		Time   struct {
			Slept int64   `json:"slept"`
			Now   string  `json:"now"`
			Perf  float64 `json:"perf"`
			HR    []int64 `json:"hr"`
		} `json:"time"`
		Order []string `json:"order"`
	}
	ctx := context.Background()
	b, err := jstool.BundleFile(filepath.Join("testdata", "node", "determinism.mjs"))
	require.NoError(t, err)
	execute := func(tool *jstool.Tool, params string) sandbox.Outcome {
		in := []byte(params)
		out, err := tool.Execute(ctx, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in), Limits: sandbox.Limits{TimeoutMs: 120_000, Fuel: 1_000_000_000}})
		require.NoError(t, err)
		require.Equal(t, sandbox.Completed, out.Kind, out.Message)
		return out
	}
	var first sandbox.Outcome
	var wazero *jstool.Tool
	for _, name := range enginetest.JSEnginesCompared() {
		// Each engine loads the tool itself and runs it twice from its
		// snapshot.
		tool, err := jstool.Load(ctx, engine(t, name), jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "determinism", Version: "1.0.0"}})
		require.NoError(t, err, name)
		if name == sandbox.EngineWazero {
			wazero = tool
		}
		for range 2 {
			out := execute(tool, `{"text":"hello"}`)
			if first.Output == nil {
				first = out
				continue
			}
			assert.Equal(t, string(first.Output), string(out.Output), name)
			assert.Equal(t, first.FuelUsed, out.FuelUsed, name)
		}
	}
	var r result
	require.NoError(t, json.Unmarshal(first.Output, &r))
	// The clock moved by exactly what the timers waited.
	assert.Equal(t, int64(1300), r.Time.Slept)
	assert.Equal(t, "2000-01-01T00:00:01.300Z", r.Time.Now)
	assert.Equal(t, 1300.0, r.Time.Perf)
	assert.Equal(t, []int64{946684801, 300000000}, r.Time.HR)
	assert.Equal(t, []string{"immediate@0", "t250@250", "interval@400", "interval@800", "t1000@1000", "interval@1200"}, r.Order)

	// Another input draws other random values; its timers run the same.
	other := execute(wazero, `{"text":"other"}`)
	var o result
	require.NoError(t, json.Unmarshal(other.Output, &o))
	for k, v := range r.Random {
		assert.NotEqual(t, string(v), string(o.Random[k]), k)
	}
	assert.Equal(t, r.Order, o.Order)
}

func TestNodeTimers(t *testing.T) {
	e := engine(t, sandbox.EngineWazero)
	res := run(t, e, nodeTool("timers.mjs"), "order", `{}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	// Deadline order, ties in the order they were set; a cleared timer
	// never fires; an unref()'d one does not keep the loop alive.
	assert.JSONEq(t, `{"seen":["zero","iv1","a10","b10","iv2","iv3","c30"],"elapsed":50}`, string(res.Output))

	res = run(t, e, nodeTool("timers.mjs"), "sleepy", `{}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"elapsed":1000,"now":"2000-01-01T00:00:01.000Z"}`, string(res.Output))

	res = run(t, e, nodeTool("timers.mjs"), "forever", `{}`, sandbox.Limits{Fuel: 20_000_000})
	assert.Equal(t, pipeline.StatusBlocked, res.Status)
	assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}, res.ReasonCodes)

	res = run(t, e, nodeTool("timers.mjs"), "throws", `{}`, sandbox.Limits{})
	assert.Equal(t, pipeline.StatusFailed, res.Status)
	assert.True(t, strings.HasPrefix(res.Message, "RangeError: from a timer"), res.Message)

	res = run(t, e, nodeTool("timers.mjs"), "settles", `{}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"done":true}`, string(res.Output))
}

func TestNodeProcessEnvIsTheCallsEnvFrozen(t *testing.T) {
	ctx := context.Background()
	b, err := jstool.BundleFile(filepath.Join("testdata", "node", "env.mjs"))
	require.NoError(t, err)
	tool, err := jstool.Load(ctx, engine(t, sandbox.EngineWazero), jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "env", Version: "1.0.0"}})
	require.NoError(t, err)
	in := []byte(`{}`)
	for _, c := range []struct{ env, want string }{
		{`{"API_KEY":"k-1","REGION":"eu"}`, `{"key":"k-1","frozen":true,"keys":["API_KEY","REGION"],"assigned":"TypeError","platform":"linux","cwd":"/","argv":2,"version":"string"}`},
		{``, `{"key":null,"frozen":true,"keys":[],"assigned":"TypeError","platform":"linux","cwd":"/","argv":2,"version":"string"}`},
	} {
		var env []byte
		if c.env != "" {
			env = []byte(c.env)
		}
		out, err := tool.ExecuteWithEnv(ctx, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in)}, env)
		require.NoError(t, err)
		require.Equal(t, sandbox.Completed, out.Kind, out.Message)
		assert.JSONEq(t, c.want, string(out.Output))
	}
}

func TestNodeIOModulesLoadAndRefuse(t *testing.T) {
	e := engine(t, sandbox.EngineWazero)
	res := run(t, e, nodeTool("denied.mjs"), "", `{}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	const why = " (wasmgate runs code without network, file system or processes)"
	assert.JSONEq(t, `{
		"sync": "ERR_ACCESS_DENIED: Access to this API has been restricted: fs.readFileSync()`+why+`",
		"exec": "ERR_ACCESS_DENIED: Access to this API has been restricted: child_process.execSync()`+why+`",
		"server": "ERR_ACCESS_DENIED: Access to this API has been restricted: http.createServer()`+why+`",
		"promise": "ERR_ACCESS_DENIED: Access to this API has been restricted: fs/promises.readFile()`+why+`",
		"callback": "ERR_ACCESS_DENIED: Access to this API has been restricted: fs.readFile()`+why+`",
		"fetch": "ERR_ACCESS_DENIED: Access to this API has been restricted: fetch(\"https://example.com/\")`+why+`",
		"constants": 4, "status": "Not Found", "isMainThread": true
	}`, string(res.Output))

	res = run(t, e, nodeTool("unused_fs.mjs"), "", `{"text":"ok"}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, `{"text":"OK"}`, string(res.Output))
}

func TestNodeProcessExitEndsATool(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), nodeTool("exits.mjs"), "", `{}`, sandbox.Limits{})
	assert.Equal(t, pipeline.StatusFailed, res.Status)
	assert.True(t, strings.HasPrefix(res.Message, "Error: process.exit(3) ended the tool before it returned a result"), res.Message)
}

// TestNodeBundleHoldsOnlyWhatItUses: a tool that names no built-in bundles
// as it did before there were any; one that names Buffer gets the buffer
// module and nothing else.
func TestNodeBundleHoldsOnlyWhatItUses(t *testing.T) {
	trim, err := jstool.BundleFile(filepath.Join("testdata", "bench", "trim.js"))
	require.NoError(t, err)
	assert.NotContains(t, string(trim.Source), "wasmgate-node")
	assert.NotContains(t, string(trim.Source), "__wasmgate_node_global_")

	b, err := jstool.BundleFile(filepath.Join("testdata", "node", "unused_fs.mjs"))
	require.NoError(t, err)
	assert.Contains(t, string(b.Source), "// wasmgate-node:node:fs\n")
	assert.NotContains(t, string(b.Source), "node:buffer")

	b, err = jstool.BundleFile(filepath.Join("testdata", "node", "env.mjs"))
	require.NoError(t, err)
	for _, in := range []string{"// wasmgate-node:node:process\n", "// wasmgate-node:node:events\n", `define("process", require_node_process());`} {
		assert.Contains(t, string(b.Source), in)
	}
	for _, out := range []string{"node:buffer", "node:url", "node:stream", "node:util", "__wasmgate_node_global_"} {
		assert.NotContains(t, string(b.Source), out)
	}
}
