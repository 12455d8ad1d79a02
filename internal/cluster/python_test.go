package cluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/py"
)

// TestRegistryPublishesPythonExecutors: a Python executor class with its
// own package and a python_path dependency, and a function executor with a
// sidecar manifest, published and loaded by a worker, run as they run from
// the configuration file itself: the same output, fuel and identity.
func TestRegistryPublishesPythonExecutors(t *testing.T) {
	if testenv.Race {
		t.Skip("CPython under the race detector is too slow; the plain pass of make test runs this test (PY_RACE_FREE_TESTS)")
	}
	ctx := context.Background()
	c := registryConn(t)
	dir := t.TempDir()
	for name, body := range map[string]string{
		"wc/wordcount.py":                   "",
		"wc/wordkit/__init__.py":            "",
		"wc/site/stopwords/__init__.py":     "",
		"fn/double.py":                      "def execute(x):\n    return {'double': x['n'] * 2}\n",
		"fn/double.manifest.json":           `{"executor_id":"double","version":"3.1.0","capabilities":[],"limits":{}}`,
		"fn/unrelated/not_a_package/big.py": "never taken: not a package",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if body == "" {
			b, err := os.ReadFile(filepath.Join("..", "..", "guests", "python", "wordcount", filepath.FromSlash(name[len("wc/"):])))
			require.NoError(t, err)
			body = string(b)
		}
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	config := filepath.Join(dir, "registry.json")
	require.NoError(t, os.WriteFile(config, []byte(`{
		"executors": {
			"word_count": {"python": "wc/wordcount.py", "python_path": ["wc/site"], "class": "WordCount"},
			"double": {"python": "fn/double.py"}},
		"actions": {
			"text.words": {"executor": "word_count", "version": "^1.0.0"},
			"math.double": {"executor": "double", "version": "^3.0.0"}}}`), 0o644))

	pub, err := Publish(ctx, c, config, jstool.Store{})
	require.NoError(t, err)
	assert.Equal(t, "python", pub.Executors["word_count"].Kind)
	assert.Equal(t, "python", pub.Executors["double"].Kind)

	reg, _, err := LoadPublished(ctx, c, registryEngine(t), "")
	require.NoError(t, err)
	assert.Empty(t, reg.Problems())
	local, err := pipeline.LoadRegistry(ctx, config, registryEngine(t), py.Kind())
	require.NoError(t, err)
	for _, tc := range []struct{ action, payload, want string }{
		{"text.words", `{"text":"the cat and the hat and the cat","top":1}`, `{"distinct":2,"top":[["cat",2]],"words":3}`},
		{"math.double", `{"n":21}`, `{"double":42}`},
	} {
		res := executeAction(t, reg, tc.action, tc.payload)
		require.Equal(t, pipeline.StatusSuccess, res.Status, "%s: %v %s", tc.action, res.ReasonCodes, res.Message)
		assert.Equal(t, tc.want, string(res.Output), tc.action)
		want := executeAction(t, local, tc.action, tc.payload)
		assert.Equal(t, want.ExecutorVersion, res.ExecutorVersion, tc.action)
		assert.Equal(t, want.FuelUsed, res.FuelUsed, tc.action)
		le, _ := local.Executor(res.ExecutorID)
		pe, _ := reg.Executor(res.ExecutorID)
		assert.Equal(t, le.ModuleDigest(), pe.ModuleDigest(), tc.action)
		assert.Equal(t, le.Manifest(), pe.Manifest(), tc.action)
	}
}

// TestPythonArtifactStaysInItsTree: an artifact naming a file outside its
// roots is refused before anything is written.
func TestPythonArtifactStaysInItsTree(t *testing.T) {
	for _, p := range []string{"/app/../etc/x.py", "/etc/passwd", "/lib/2/x.py", "/lib/01/x.py", "/app/", "/app/a//b.py"} {
		b, err := canonicalArtifact(pyArtifact{Entry: "tool.py", Paths: 1, Files: map[string]string{p: ""}})
		require.NoError(t, err)
		_, _, err = pythonSourceOf("d", b)
		require.Error(t, err, p)
		assert.Contains(t, err.Error(), "is outside the tree", p)
	}
	b, err := canonicalArtifact(pyArtifact{Entry: "../tool.py", Files: map[string]string{}})
	require.NoError(t, err)
	_, _, err = pythonSourceOf("d", b)
	require.ErrorContains(t, err, `entry "../tool.py", 0 paths: not an executor's`)
}
