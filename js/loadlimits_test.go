package js_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// bigTool writes, in a directory of its own, a JS tool whose source is
// about 1.5 MB of string literals: loading it needs more than 64 pages
// (4 MiB) of memory, and fits the default easily. With manifest, a
// sidecar manifest big.manifest.json holds it.
func bigTool(t *testing.T, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("const parts = [\n")
	line := strings.Repeat("wasmgate ", 111)
	for i := range 1500 {
		fmt.Fprintf(&b, "  %q,\n", fmt.Sprint(i)+line)
	}
	b.WriteString("];\nexport function execute() { return { parts: parts.length }; }\n")
	file := filepath.Join(dir, "big.js")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o644))
	if manifest != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "big.manifest.json"), []byte(manifest), 0o644))
	}
	return file
}

// outOfMemory is the message of a tool that ran out of memory while
// loading under 64 pages, up to what it says of how to raise the limit
// (how, quoted for the pattern).
func outOfMemory(file, how string) *regexp.Regexp {
	return regexp.MustCompile(`^executor "big": MEMORY_EXHAUSTED: ` + regexp.QuoteMeta(file) +
		`: loading the tool ran out of memory: memory_pages is 64 \(4 MiB\), its memory had grown to [0-9.]+ MiB when more was refused; set ` +
		how + ` above 64 \(e\.g\. 128\)$`)
}

func executeOnce(t *testing.T, reg *pipeline.Registry, action string) pipeline.ActionResult {
	t.Helper()
	res, err := pipeline.New(reg, audit.NewMemorySink()).Execute(context.Background(),
		pipeline.ActionRequest{Action: action, Payload: json.RawMessage(`{}`)})
	require.NoError(t, err)
	return res
}

// TestLoadingLimitsComeFromEveryFront is issue 24: a JS tool loads in the
// memory its calls will have, whoever sets it (a command's flags and a
// registry's routes over the manifest, a front's configuration under it),
// and running out of it while loading is BLOCKED LIMIT_EXCEEDED
// MEMORY_EXHAUSTED, with a message naming the limit, what was used and the
// setting that raises it.
func TestLoadingLimitsComeFromEveryFront(t *testing.T) {
	ctx := context.Background()
	engine := jsEngine(t)
	blocked := []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.MemoryExhausted}

	t.Run("the command's limits", func(t *testing.T) {
		file := bigTool(t, "")
		src := pipeline.ExecutorSource{JS: file, RaiseMemory: "--memory-pages"}
		reg, err := pipeline.RegistryForSource(ctx, engine, src, "act", sandbox.Limits{MemoryPages: 64}, js.Kind())
		require.NoError(t, err)
		res := executeOnce(t, reg, "act")
		assert.Equal(t, pipeline.StatusBlocked, res.Status)
		assert.Equal(t, blocked, res.ReasonCodes)
		assert.Regexp(t, outOfMemory(file, "--memory-pages"), res.Message)
		assert.Equal(t, []string{"act: LIMIT_EXCEEDED MEMORY_EXHAUSTED (" + res.Message + ")"}, reg.Problems())

		// At the defaults it loads and runs.
		reg, err = pipeline.RegistryForSource(ctx, engine, src, "act", sandbox.Limits{}, js.Kind())
		require.NoError(t, err)
		res = executeOnce(t, reg, "act")
		require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
		assert.JSONEq(t, `{"parts":1500}`, string(res.Output))
	})

	t.Run("the manifest's limits, and the command's over them", func(t *testing.T) {
		file := bigTool(t, `{"executor_id":"big","version":"1.0.0","limits":{"memory_pages":64}}`)
		reg, err := pipeline.RegistryForSource(ctx, engine, pipeline.ExecutorSource{JS: file}, "act", sandbox.Limits{}, js.Kind())
		require.NoError(t, err)
		res := executeOnce(t, reg, "act")
		assert.Equal(t, blocked, res.ReasonCodes)
		assert.Regexp(t, outOfMemory(file, regexp.QuoteMeta(`"memory_pages" in the "limits" of its manifest `+strings.TrimSuffix(file, ".js")+".manifest.json")), res.Message)

		reg, err = pipeline.RegistryForSource(ctx, engine, pipeline.ExecutorSource{JS: file}, "act", sandbox.Limits{MemoryPages: 1024}, js.Kind())
		require.NoError(t, err)
		res = executeOnce(t, reg, "act")
		assert.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	})

	t.Run("a registry's routes", func(t *testing.T) {
		file := bigTool(t, `{"executor_id":"big","version":"1.0.0","limits":{"memory_pages":64}}`)
		cfg := filepath.Join(t.TempDir(), "registry.json")
		write := func(routes string) {
			require.NoError(t, os.WriteFile(cfg, []byte(`{"executors":{"big":{"js":`+quote(file)+`}},"actions":{`+routes+`}}`), 0o644))
		}
		write(`"small":{"executor":"big","version":"*","limits":{"memory_pages":64,"fuel":1000000000}}`)
		reg, err := pipeline.LoadRegistry(ctx, cfg, engine, js.Kind())
		require.NoError(t, err)
		res := executeOnce(t, reg, "small")
		assert.Equal(t, blocked, res.ReasonCodes)
		assert.Regexp(t, outOfMemory(file, regexp.QuoteMeta(`"memory_pages" in the "limits" of action "small" in `+cfg)), res.Message)

		// A route's memory beats the manifest's at loading as at calls; a
		// route under the memory the tool loaded in is refused by its
		// calls, with how much the tool starts with.
		write(`"small":{"executor":"big","version":"*","limits":{"memory_pages":64}},"large":{"executor":"big","version":"*","limits":{"memory_pages":1024}}`)
		reg, err = pipeline.LoadRegistry(ctx, cfg, engine, js.Kind())
		require.NoError(t, err)
		res = executeOnce(t, reg, "large")
		require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
		assert.JSONEq(t, `{"parts":1500}`, string(res.Output))
		res = executeOnce(t, reg, "small")
		assert.Equal(t, blocked, res.ReasonCodes)
		assert.Regexp(t, `^the module's memory starts at [0-9]+ pages; memory_pages allows 64$`, res.Message)
	})

	t.Run("a front's configuration, under the manifest", func(t *testing.T) {
		file := bigTool(t, "")
		_, err := pipeline.LoadExecutor(ctx, engine, pipeline.ExecutorSource{JS: file, Defaults: sandbox.Limits{MemoryPages: 64, TimeoutMs: 5000}}, js.Kind())
		assert.ErrorIs(t, err, jstool.ErrLoadMemoryExhausted)
		assert.ErrorIs(t, err, sandbox.ErrNotAdmitted)

		file = bigTool(t, `{"executor_id":"big","version":"1.0.0","limits":{"memory_pages":1024}}`)
		e, err := pipeline.LoadExecutor(ctx, engine, pipeline.ExecutorSource{JS: file, Defaults: sandbox.Limits{MemoryPages: 64}}, js.Kind())
		require.NoError(t, err, "the manifest's memory wins over a front's default")
		assert.Equal(t, "big", e.Manifest().ExecutorID)
	})
}

// TestRegistryJSWithoutManifestIsVersionZero: a JS file a registry names,
// without a sidecar manifest, is version 0.0.0, as when it is run directly;
// a route asking for a release refuses it by its version.
func TestRegistryJSWithoutManifestIsVersionZero(t *testing.T) {
	ctx := context.Background()
	tool, err := filepath.Abs(filepath.Join("..", "jstool", "testdata", "tools", "default_object.js"))
	require.NoError(t, err)
	wasm, err := filepath.Abs(filepath.Join("..", "testdata", "nomanifest.wasm"))
	require.NoError(t, err)
	cfg := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(cfg, []byte(`{"executors":{"greeter":{"js":`+quote(tool)+`},"nomanifest":{"wasm":`+quote(wasm)+`}},
"actions":{"greet":{"executor":"greeter","version":"*"},"greet.v0":{"executor":"greeter","version":"0.0.0"},
"greet.v1":{"executor":"greeter","version":"^1.0.0"},"bare":{"executor":"nomanifest","version":"*"}}}`), 0o644))
	reg, err := pipeline.LoadRegistry(ctx, cfg, jsEngine(t), js.Kind())
	require.NoError(t, err)

	for _, action := range []string{"greet", "greet.v0"} {
		res, err := pipeline.New(reg, audit.NewMemorySink()).Execute(ctx,
			pipeline.ActionRequest{Action: action, Payload: json.RawMessage(`{"name":"Ada"}`)})
		require.NoError(t, err)
		require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
		assert.Equal(t, "greeter", res.ExecutorID)
		assert.Equal(t, "0.0.0", res.ExecutorVersion)
	}
	res := executeOnce(t, reg, "greet.v1")
	assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorVersionIncompatible}, res.ReasonCodes)
	assert.Equal(t, `action "greet.v1" accepts versions "^1.0.0"; executor "greeter" 0.0.0 does not match`, res.Message)

	// A Wasm module without a manifest still has no version there.
	res = executeOnce(t, reg, "bare")
	assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorVersionMissing}, res.ReasonCodes)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func jsEngine(t *testing.T) sandbox.Engine {
	t.Helper()
	ctx := context.Background()
	engine, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	require.NoError(t, err)
	t.Cleanup(func() { engine.Close(ctx) })
	return engine
}
