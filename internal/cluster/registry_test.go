package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// registryConn connects to a fresh embedded server and sets the deployment up.
func registryConn(t *testing.T) *Conn {
	t.Helper()
	c, err := Connect(Options{URL: runServer(t), Name: t.Name()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	require.NoError(t, c.Setup(context.Background(), Layout{Memory: true}))
	return c
}

// fixture is the repository's fixture directory, absolute.
func fixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", name))
	require.NoError(t, err)
	return p
}

// writeRegistryConfig writes a registry configuration into a directory of t's, with
// the trim JS tool (and its sidecar manifest) beside it, and returns its path.
func writeRegistryConfig(t *testing.T, executors map[string]any, actions map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"trim.js", "trim.manifest.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "jstool", "testdata", "tools", f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "tools"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tools", f), b, 0o644))
	}
	raw, err := json.Marshal(map[string]any{"executors": executors, "actions": actions})
	require.NoError(t, err)
	path := filepath.Join(dir, "registry.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

// mixedConfig is testdata/registry.json with the trim JS tool added.
func mixedConfig(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(fixture(t, "registry.json"))
	require.NoError(t, err)
	var cfg struct {
		Executors map[string]map[string]any `json:"executors"`
		Actions   map[string]any            `json:"actions"`
	}
	require.NoError(t, json.Unmarshal(raw, &cfg))
	executors := map[string]any{}
	for id, src := range cfg.Executors {
		src["wasm"] = fixture(t, src["wasm"].(string))
		executors[id] = src
	}
	executors["text_trim"] = map[string]any{"js": "tools/trim.js"}
	cfg.Actions["text.trim"] = map[string]any{"executor": "text_trim", "version": "^1.2.0", "capabilities": []string{"TEXT"}}
	return writeRegistryConfig(t, executors, cfg.Actions)
}

func registryEngine(t *testing.T) sandbox.Engine { return enginetest.Engine(t, sandbox.EngineWazero) }

func executeAction(t *testing.T, reg *pipeline.Registry, action, payload string) pipeline.ActionResult {
	t.Helper()
	res, err := pipeline.New(reg, audit.NewMemorySink()).Execute(context.Background(),
		pipeline.ActionRequest{Action: action, Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return res
}

func modulesStore(t *testing.T, c *Conn) jetstream.ObjectStore {
	t.Helper()
	obs, err := c.JS.ObjectStore(context.Background(), c.Names.ModulesBucket())
	require.NoError(t, err)
	return obs
}

func TestRegistryPublishAndLoad(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	config := mixedConfig(t)

	pub, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)
	require.Len(t, pub.Executors, 5)
	for _, id := range []string{"upper", "sum", "sort", "textstats"} {
		wasm, err := os.ReadFile(fixture(t, id+".wasm"))
		require.NoError(t, err)
		assert.Equal(t, PublishedExecutor{Kind: "wasm", Digest: audit.Digest(wasm), Size: len(wasm), Uploaded: true}, pub.Executors[id], id)
	}
	trim := pub.Executors["text_trim"]
	assert.Equal(t, "js", trim.Kind)
	assert.True(t, trim.Uploaded)
	assert.NotZero(t, pub.Revision.KV)
	assert.Len(t, pub.Revision.Digest, 64)

	reg, rev, err := LoadPublished(ctx, c, registryEngine(t), "")
	require.NoError(t, err)
	assert.Equal(t, pub.Revision, rev)
	assert.Empty(t, reg.Problems())
	assert.Equal(t, []string{"math.sort", "math.sum", "text.stats", "text.trim", "text.upper"}, reg.Actions())

	actions, rev, err := PublishedActions(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, pub.Revision, rev)
	assert.Equal(t, reg.Actions(), actions)

	// What runs is what LoadRegistry runs from the configuration file
	// itself: the same output, the same executor identity.
	local, err := pipeline.LoadRegistry(ctx, config, registryEngine(t), js.Kind())
	require.NoError(t, err)
	for _, tc := range []struct{ action, payload, want string }{
		{"text.upper", `{"text":"hello"}`, `{"text":"HELLO"}`},
		{"math.sort", `{"numbers":[3,-1,2]}`, `{"count":3,"max":3,"min":-1,"sorted":[-1,2,3]}`},
		{"math.sum", `{"numbers":[1,2,39]}`, `{"sum":42}`},
		{"text.trim", `{"text":"  hi  "}`, `{"text":"hi"}`},
	} {
		res := executeAction(t, reg, tc.action, tc.payload)
		require.Equal(t, pipeline.StatusSuccess, res.Status, "%s: %v %s", tc.action, res.ReasonCodes, res.Message)
		assert.Equal(t, tc.want, string(res.Output), tc.action)
		want := executeAction(t, local, tc.action, tc.payload)
		assert.Equal(t, want.ExecutorID, res.ExecutorID, tc.action)
		assert.Equal(t, want.ExecutorVersion, res.ExecutorVersion, tc.action)
		assert.Equal(t, want.OutputDigest, res.OutputDigest, tc.action)
		assert.Equal(t, want.FuelUsed, res.FuelUsed, tc.action)
		le, _ := local.Executor(res.ExecutorID)
		pe, _ := reg.Executor(res.ExecutorID)
		assert.Equal(t, le.ModuleDigest(), pe.ModuleDigest(), tc.action)
		assert.Equal(t, le.Manifest(), pe.Manifest(), tc.action)
	}
}

// TestRegistryProblemsAsLoadRegistry: an executor that publishes but cannot
// be used blocks its requests with the reason code LoadRegistry gives it,
// and routes keep what they say ("capabilities": [] grants nothing,
// which is not the same as no check).
func TestRegistryProblemsAsLoadRegistry(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	raw, err := os.ReadFile(fixture(t, "registry_problems.json"))
	require.NoError(t, err)
	var cfg struct {
		Executors map[string]map[string]any `json:"executors"`
		Actions   map[string]any            `json:"actions"`
	}
	require.NoError(t, json.Unmarshal(raw, &cfg))
	executors := map[string]any{}
	for id, src := range cfg.Executors {
		if id == "missing" { // Publish refuses it: see TestRegistryPublishMissingModule
			continue
		}
		src["wasm"] = fixture(t, src["wasm"].(string))
		executors[id] = src
	}
	config := writeRegistryConfig(t, executors, cfg.Actions)
	_, err = Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)

	published, _, err := LoadPublished(ctx, c, registryEngine(t), "")
	require.NoError(t, err)
	local, err := pipeline.LoadRegistry(ctx, config, registryEngine(t), js.Kind())
	require.NoError(t, err)
	codes := func(problems []string) []string {
		var out []string
		for _, p := range problems {
			out = append(out, p[:strings.Index(p, " (")])
		}
		return out
	}
	assert.Equal(t, codes(local.Problems()), codes(published.Problems()))
	assert.Contains(t, codes(published.Problems()), "grants.nothing: EXECUTOR_CAPABILITY_MISMATCH")
	assert.Contains(t, codes(published.Problems()), "refused: EXECUTOR_INVALID")
	assert.Len(t, published.Problems(), 10)
}

func TestRegistryPublishTwiceUploadsNothing(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	config := mixedConfig(t)
	first, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)
	second, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)

	assert.Greater(t, second.Revision.KV, first.Revision.KV)
	assert.Equal(t, first.Revision.Digest, second.Revision.Digest)
	for id, e := range second.Executors {
		assert.False(t, e.Uploaded, id)
		assert.Equal(t, first.Executors[id].Digest, e.Digest, id)
	}
	_, rev, err := PublishedActions(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, second.Revision, rev)
}

func TestRegistryTamperedObjectIsRefused(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	config := mixedConfig(t)
	pub, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)
	upper := pub.Executors["upper"].Digest
	trim := pub.Executors["text_trim"].Digest
	obs := modulesStore(t, c)
	sum, err := os.ReadFile(fixture(t, "sum.wasm"))
	require.NoError(t, err)
	// Another valid module under upper's name, and another tool under trim's.
	_, err = obs.PutBytes(ctx, upper, sum)
	require.NoError(t, err)
	_, err = obs.PutBytes(ctx, trim, []byte(`{"entry":"evil.js","export":"","manifest":{"executor_id":"text_trim","version":"1.2.0","capabilities":["TEXT"],"limits":{}},"source":"export function execute(){return {text:'evil'}}"}`))
	require.NoError(t, err)

	reg, _, err := LoadPublished(ctx, c, registryEngine(t), t.TempDir())
	require.NoError(t, err)
	for action, digest := range map[string]string{"text.upper": upper, "text.trim": trim} {
		res := executeAction(t, reg, action, `{"text":"hello"}`)
		assert.Equal(t, pipeline.StatusBlocked, res.Status, action)
		assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorInvalid}, res.ReasonCodes, action)
		assert.Contains(t, res.Message, "digest mismatch", action)
		assert.Contains(t, res.Message, digest, action)
		assert.Empty(t, res.Output, action)
	}
	res := executeAction(t, reg, "math.sum", `{"numbers":[1,2]}`)
	assert.Equal(t, pipeline.StatusSuccess, res.Status)
	assert.Equal(t, `{"sum":3}`, string(res.Output))

	// Publishing again repairs the objects.
	again, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)
	assert.True(t, again.Executors["upper"].Uploaded)
	assert.True(t, again.Executors["text_trim"].Uploaded)
	assert.False(t, again.Executors["sum"].Uploaded)
	reg, _, err = LoadPublished(ctx, c, registryEngine(t), "")
	require.NoError(t, err)
	assert.Empty(t, reg.Problems())
	assert.Equal(t, `{"text":"HELLO"}`, string(executeAction(t, reg, "text.upper", `{"text":"hello"}`).Output))
}

func TestRegistryLoadUsesCache(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	pub, err := Publish(ctx, c, fixture(t, "registry.json"), jstool.Store{})
	require.NoError(t, err)
	cache := t.TempDir()
	_, _, err = LoadPublished(ctx, c, registryEngine(t), cache)
	require.NoError(t, err)
	for id, e := range pub.Executors {
		b, err := os.ReadFile(filepath.Join(cache, "objects", e.Digest))
		require.NoError(t, err, id)
		assert.Equal(t, e.Digest, audit.Digest(b), id)
	}

	// Gone from the store: served from the cache.
	obs := modulesStore(t, c)
	sum := pub.Executors["sum"].Digest
	require.NoError(t, obs.Delete(ctx, sum))
	reg, _, err := LoadPublished(ctx, c, registryEngine(t), cache)
	require.NoError(t, err)
	assert.Empty(t, reg.Problems())
	assert.Equal(t, `{"sum":3}`, string(executeAction(t, reg, "math.sum", `{"numbers":[1,2]}`).Output))

	// A corrupted cache file is detected and fetched again.
	upper := pub.Executors["upper"].Digest
	upperFile := filepath.Join(cache, "objects", upper)
	require.NoError(t, os.WriteFile(upperFile, []byte("corrupted"), 0o644))
	reg, _, err = LoadPublished(ctx, c, registryEngine(t), cache)
	require.NoError(t, err)
	assert.Equal(t, `{"text":"HELLO"}`, string(executeAction(t, reg, "text.upper", `{"text":"hello"}`).Output))
	b, err := os.ReadFile(upperFile)
	require.NoError(t, err)
	assert.Equal(t, upper, audit.Digest(b))

	// Corrupted in the cache and gone from the store: not found, never run.
	require.NoError(t, os.WriteFile(filepath.Join(cache, "objects", sum), []byte("corrupted"), 0o644))
	reg, _, err = LoadPublished(ctx, c, registryEngine(t), cache)
	require.NoError(t, err)
	res := executeAction(t, reg, "math.sum", `{"numbers":[1,2]}`)
	assert.Equal(t, pipeline.StatusBlocked, res.Status)
	assert.Equal(t, []pipeline.ReasonCode{pipeline.ExecutorNotFound}, res.ReasonCodes)
	assert.Contains(t, res.Message, sum)
	assert.Equal(t, `{"text":"HELLO"}`, string(executeAction(t, reg, "text.upper", `{"text":"hello"}`).Output))
}

func TestRegistryWatchSeesNewRevisions(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	config := fixture(t, "registry.json")
	first, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)

	wctx, stop := context.WithCancel(ctx)
	revs := make(chan Revision, 8)
	done := make(chan error, 1)
	go func() { done <- WatchRegistry(wctx, c, func(r Revision) { revs <- r }) }()
	next := func() Revision {
		t.Helper()
		select {
		case r := <-revs:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no revision within 10s")
			return Revision{}
		}
	}
	assert.Equal(t, first.Revision, next(), "the latest revision comes first")
	second, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)
	assert.Equal(t, second.Revision, next())

	stop()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("WatchRegistry did not return when its context ended")
	}
}

func TestRegistryPublishRefusesBrokenExecutors(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken.js"), []byte("export function execute( {"), 0o644))
	for name, tc := range map[string]struct {
		src  map[string]any
		want []string
	}{
		"missing module":  {map[string]any{"wasm": "no_such_module.wasm"}, []string{`executor "ghost"`, "no_such_module.wasm"}},
		"missing JS tool": {map[string]any{"js": "no_such_tool.js"}, []string{`executor "ghost"`, "no_such_tool.js"}},
		"JS syntax error": {map[string]any{"js": filepath.Join(dir, "broken.js")}, []string{`executor "ghost"`, "cannot bundle", "broken.js"}},
		"package not installed": {map[string]any{"package": "left-pad@1.3.0", "tool": "leftPad"},
			[]string{`executor "ghost"`, "left-pad@1.3.0", "not in the tool store"}},
	} {
		t.Run(name, func(t *testing.T) {
			config := writeRegistryConfig(t, map[string]any{"upper": map[string]any{"wasm": fixture(t, "upper.wasm")}, "ghost": tc.src},
				map[string]any{"x": map[string]any{"executor": "ghost", "version": "*"}})
			_, err := Publish(ctx, c, config, jstool.Store{Dir: t.TempDir()})
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			// Nothing was published.
			_, _, err = PublishedActions(ctx, c)
			assert.ErrorIs(t, err, ErrNoRegistry)
		})
	}
}

func TestRegistryNeverPublished(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	_, _, err := LoadPublished(ctx, c, registryEngine(t), "")
	assert.ErrorIs(t, err, ErrNoRegistry)
	_, _, err = PublishedActions(ctx, c)
	assert.ErrorIs(t, err, ErrNoRegistry)

	// Without Setup there is no bucket, which is no registry either.
	bare, err := Connect(Options{URL: runServer(t)})
	require.NoError(t, err)
	defer bare.Close()
	_, _, err = LoadPublished(ctx, bare, registryEngine(t), "")
	assert.True(t, errors.Is(err, ErrNoRegistry), "%v", err)
}

// TestRegistryPublishesFuelBeyond2to53: a limit JSON numbers cannot hold
// exactly in a double (fuel 4e18, as testdata/rep's hang) publishes and
// loads as the configuration says.
func TestRegistryPublishesFuelBeyond2to53(t *testing.T) {
	ctx := context.Background()
	c := registryConn(t)
	config := writeRegistryConfig(t, map[string]any{"sum": map[string]any{"wasm": fixture(t, "sum.wasm")}},
		map[string]any{"math.sum": json.RawMessage(`{"executor":"sum","version":"^1.0.0","limits":{"fuel":4000000000000000000,"timeout_ms":1000}}`)})
	_, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)
	reg, _, err := LoadPublished(ctx, c, registryEngine(t), "")
	require.NoError(t, err)
	res := executeAction(t, reg, "math.sum", `{"numbers":[1,2]}`)
	assert.Equal(t, `{"sum":3}`, string(res.Output))
	local, err := pipeline.LoadRegistry(ctx, config, registryEngine(t), js.Kind())
	require.NoError(t, err)
	assert.Equal(t, executeAction(t, local, "math.sum", `{"numbers":[1,2]}`).FuelUsed, res.FuelUsed)
}
