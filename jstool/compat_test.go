package jstool_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
)

// compatDir is the compatibility corpus: popular npm packages pinned by a
// lock file, one tool per package in its tools directory.
const compatDir = "testdata/compat"

// compatDifferences are the corpus tools whose output in wasmgate is not
// node's, each with the reason. The test fails when another tool differs and
// when one of these starts to agree, so the list stays true; docs/JAVASCRIPT.md
// repeats it.
var compatDifferences = map[string]string{
	"luxon":     "ReferenceError: Intl is not defined (QuickJS-NG is built without Intl, which luxon formats every date with)",
	"smol-toml": `String(date) ends "GMT+0000", without node's " (Coordinated Universal Time)": the zone's name comes from ICU data the engine lacks`,
}

// compatLimits are generous: the corpus is about what a tool computes, not
// about the limits it meets.
var compatLimits = runtime.Limits{
	TimeoutMs:      60_000,
	Fuel:           40_000_000_000,
	MemoryPages:    4096,
	MaxDepth:       64,
	MaxListItems:   100_000,
	MaxOutputBytes: 1 << 20,
}

// TestCompatibilityCorpus runs every tool of the corpus in wasmgate and in
// node with the same input, and compares the canonical outputs byte for
// byte.
func TestCompatibilityCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the compatibility corpus runs every package in wasmgate and in node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(compatDir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatalf("the compatibility corpus is not installed (make test runs npm ci in %s): %v", compatDir, err)
	}
	files, err := filepath.Glob(filepath.Join(compatDir, "tools", "*.mjs"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 40)
	for name := range compatDifferences {
		assert.FileExists(t, filepath.Join(compatDir, "tools", name+".mjs"), "compatDifferences names a tool the corpus lacks")
	}
	e := engine(t, runtime.EngineWazero)

	var (
		mu             sync.Mutex
		ran, identical int
	)
	t.Run("tools", func(t *testing.T) {
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".mjs")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				want := compatInNode(t, node, name)
				res := run(t, e, filepath.Join("..", "compat", "tools", name+".mjs"), "", `{}`, compatLimits)
				got := res.Output
				if res.Status != pipeline.StatusSuccess {
					got = []byte(string(res.Status) + ": " + res.Message)
				}
				reason, known := compatDifferences[name]
				same := bytes.Equal(want, got)
				switch {
				case same && known:
					t.Errorf("%s now gives what node gives: remove it from compatDifferences (%s)", name, reason)
				case !same && !known:
					t.Errorf("%s differs from node\nnode:     %s\nwasmgate: %s", name, want, got)
				}
				mu.Lock()
				defer mu.Unlock()
				ran++
				if same {
					identical++
				}
			})
		}
	})
	t.Logf("%d of %d tools give what node gives", identical, ran)
	if ran == len(files) {
		// The target holds for the whole corpus, not for a -run selection.
		assert.GreaterOrEqual(t, identical*100, ran*95, "%d of %d identical: the target is 95%%", identical, ran)
	}
}

// compatInNode runs the corpus tool name in node with the input {} and
// returns its result's canonical JSON. The zone is pinned to UTC, as it is
// in wasmgate.
func compatInNode(t *testing.T, node, name string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run_node.mjs", filepath.Join("..", "compat", "tools", name+".mjs"))
	cmd.Dir = filepath.Join("testdata", "node")
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.Stdin = strings.NewReader(`{}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	c, err := audit.Canonicalize(out)
	require.NoError(t, err, "node's output: %s", out)
	return c.Bytes
}
