package jstool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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

// webTool is a fixture of the web globals' tests (testdata/web), relative
// to the tools directory run reads.
func webTool(name string) string { return filepath.Join("..", "web", name) }

// webPackages says whether make testdata-js installed testdata/web's
// packages (showdown, undici), which some fixtures import.
func webPackages(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("testdata", "web", "node_modules", ".package-lock.json")); err != nil {
		t.Skip("testdata/web's packages are not installed (make testdata-js)")
	}
}

// TestWebGlobalsMatchNode runs each fixture in wasmgate and in node, both
// from {}: the same JSON, byte for byte once canonical. They cover
// MessageChannel, MessagePort and BroadcastChannel (shapes, errors,
// listeners, transfers, close events, and the order of messages against
// timers, immediates, promise jobs and process.nextTick), structuredClone
// of every type it clones and each error it throws, node:worker_threads'
// exports, the legacy RegExp statics after each kind of match,
// util.types.isProxy and its siblings, showdown
// converting headings (which read RegExp.$1) and undici loading.
func TestWebGlobalsMatchNode(t *testing.T) {
	testenv.GuestOnly(t)
	e := engine(t, sandbox.EngineWazero)
	for _, c := range []struct {
		file     string
		packages bool
	}{
		{file: "order.mjs"},
		{file: "ports.mjs"},
		{file: "broadcast.mjs"},
		{file: "clone.mjs"},
		{file: "worker_threads.mjs"},
		{file: "regexp_statics.mjs"},
		{file: "util_types.mjs"},
		{file: "showdown.mjs", packages: true},
		{file: "undici.mjs", packages: true},
	} {
		t.Run(c.file, func(t *testing.T) {
			if c.packages {
				webPackages(t)
			}
			res := run(t, e, webTool(c.file), "", `{}`, sandbox.Limits{})
			require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
			want := runNode(t, webTool(c.file), `{}`)
			assert.JSONEq(t, string(want), string(res.Output))
		})
	}
}

// TestWebMessagingIsDeterministicOnEveryEngine: the message order and the
// clones come out the same, for the same fuel, on every engine and run.
func TestWebMessagingIsDeterministicOnEveryEngine(t *testing.T) {
	ctx := context.Background()
	for _, file := range []string{"order.mjs", "clone.mjs"} {
		b, err := jstool.BundleFile(filepath.Join("testdata", "web", file))
		require.NoError(t, err)
		var first sandbox.Outcome
		for _, name := range enginetest.JSEnginesCompared() {
			tool, err := jstool.Load(ctx, engine(t, name), jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "web", Version: "1.0.0"}})
			require.NoError(t, err, name)
			for range 2 {
				in := []byte(`{}`)
				out, err := tool.Execute(ctx, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in), Limits: sandbox.Limits{TimeoutMs: 120_000, Fuel: 5_000_000_000}})
				require.NoError(t, err, name)
				require.Equal(t, sandbox.Completed, out.Kind, "%s: %s", name, out.Message)
				if first.Output == nil {
					first = out
					continue
				}
				assert.Equal(t, string(first.Output), string(out.Output), "%s: %s", file, name)
				assert.Equal(t, first.FuelUsed, out.FuelUsed, "%s: %s", file, name)
			}
		}
	}
}

// TestUndiciRefusesAsNetDoes: undici's request and fetch reach node:net,
// which refuses to connect; fetch wraps the refusal as it wraps a
// connection error.
func TestUndiciRefusesAsNetDoes(t *testing.T) {
	webPackages(t)
	res := run(t, engine(t, sandbox.EngineWazero), webTool("undici.mjs"), "", `{"call":true}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	var out struct {
		Request []string `json:"request"`
		Fetch   []string `json:"fetch"`
	}
	require.NoError(t, json.Unmarshal(res.Output, &out))
	const denied = "Access to this API has been restricted: net.connect() (wasmgate runs code without network, file system or processes)"
	assert.Equal(t, []string{"ERR_ACCESS_DENIED", denied}, out.Request)
	assert.Equal(t, []string{"TypeError", "fetch failed", "ERR_ACCESS_DENIED", "Error: " + denied}, out.Fetch)
}

// TestLegacyRegExpStaticsOnlyWhereNamed: a bundle whose code names a
// legacy RegExp static (or indexes RegExp) gets the module that keeps
// them; one that does not pays nothing, and its RegExp.prototype.exec is
// the engine's.
func TestLegacyRegExpStaticsOnlyWhereNamed(t *testing.T) {
	const module = "// wasmgate-node:wasmgate:internal/regexp_statics\n"
	for _, c := range []struct {
		source string
		named  bool
	}{
		{`export const execute = () => /a(b)/.exec("ab")[1];`, false},
		{`export const execute = () => { /a(b)/.exec("ab"); return RegExp.$1; };`, true},
		{`export const execute = () => { /a(b)/.exec("ab"); return RegExp["$&"]; };`, true},
		{`export const execute = () => { "ab".match(/b/); return RegExp.lastMatch + RegExp.leftContext; };`, true},
		{`export const execute = () => { /a/.test("a"); return RegExp . input; };`, true},
	} {
		path := filepath.Join(t.TempDir(), "tool.mjs")
		require.NoError(t, os.WriteFile(path, []byte(c.source), 0o600))
		b, err := jstool.BundleFile(path)
		require.NoError(t, err)
		if c.named {
			assert.Contains(t, string(b.Source), module, c.source)
		} else {
			assert.NotContains(t, string(b.Source), module, c.source)
		}
	}
}
