package jstool_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// compatDir is the compatibility corpus: npm packages chosen by download
// rank (corpus.tsv says which, with their category and rank; docs/JAVASCRIPT.md
// says how they were chosen), pinned by a lock file, one tool per package in
// its tools directory.
const compatDir = "testdata/compat"

// compatDifference is why a corpus tool's output in wasmgate is not node's.
type compatDifference struct {
	// cause is what differs and why, as docs/JAVASCRIPT.md's table says it.
	cause string
	// limits: the tool differs only at the default limits; with generous
	// ones (WASMGATE_COMPAT_LIMITS=generous) it gives what node gives.
	limits bool
}

// compatDifferences are the corpus tools whose output in wasmgate, at the
// default limits, is not node's. The test fails when another tool differs
// and when one of these starts to agree ("now gives what node gives: remove
// it"), so the list stays true as the causes get fixed; docs/JAVASCRIPT.md
// repeats it.
var compatDifferences = map[string]compatDifference{
	// The fetch API's classes throw when constructed.
	"ai":     {cause: "`Headers` throws when constructed: `TypeError: Headers is not available in the wasmgate sandbox` (generateText builds request headers even for a mock model)"},
	"openai": {cause: "`Headers` throws when constructed: `TypeError: Headers is not available in the wasmgate sandbox` (the error class reads the response's headers)"},
	// By design (JAVASCRIPT.md, Outcomes).
	"yargs-parser": {cause: "by design: a `NaN` in the result is `OUTPUT_NOT_JSON`, where node's `JSON.stringify` writes `null` (yargs-parser gives `NaN` for a non-numeric `--port`)"},
}

// compatGenerousLimits are what WASMGATE_COMPAT_LIMITS=generous runs the
// corpus at: about what a tool computes, not about the limits it meets.
var compatGenerousLimits = sandbox.Limits{
	TimeoutMs:      600_000,
	Fuel:           400_000_000_000,
	MemoryPages:    4096,
	MaxDepth:       64,
	MaxListItems:   100_000,
	MaxOutputBytes: 1 << 20,
}

// compatDefaultLimits are a JS tool's default limits, but for the clock:
// the corpus is judged at the defaults, and a verdict must not depend on
// the machine's load, so the clock is set to ten times what the default
// fuel lasts at QuickJS's slowest measured rate (3 billion units a second,
// docs/BENCHMARKS.md Issue 14): fuel always binds first.
func compatDefaultLimits() sandbox.Limits {
	l := sandbox.Limits{}.WithDefaults(new(jstool.Tool).DefaultLimits())
	l.TimeoutMs = int64(l.Fuel / 300_000)
	return l
}

// compatEntry is one line of corpus.tsv.
type compatEntry struct {
	tool, pkg, version, category string
	rank, downloads              int
}

// readCompatCorpus reads corpus.tsv: tool, package, version, category,
// overall download rank and monthly downloads, in rank order within each
// category.
func readCompatCorpus(t *testing.T) []compatEntry {
	t.Helper()
	f, err := os.Open(filepath.Join(compatDir, "corpus.tsv"))
	require.NoError(t, err)
	defer f.Close()
	var entries []compatEntry
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fields := strings.Split(sc.Text(), "\t")
		require.Len(t, fields, 6, "corpus.tsv line %d: want tool, package, version, category, rank, downloads", line)
		rank, err := strconv.Atoi(fields[4])
		require.NoError(t, err, "corpus.tsv line %d: rank", line)
		downloads, err := strconv.Atoi(fields[5])
		require.NoError(t, err, "corpus.tsv line %d: downloads", line)
		entries = append(entries, compatEntry{fields[0], fields[1], fields[2], fields[3], rank, downloads})
	}
	require.NoError(t, sc.Err())
	return entries
}

// compatFastSubset is the part of the corpus a plain `go test` runs (make
// compat runs all of it, WASMGATE_COMPAT=full): the most downloaded
// package of each category, so that every category is checked on every run
// while make test stays within its time (make compat takes minutes).
func compatFastSubset(entries []compatEntry) map[string]bool {
	subset := map[string]bool{}
	taken := map[string]bool{}
	for _, e := range entries { // corpus.tsv is in rank order within a category
		if !taken[e.category] {
			taken[e.category] = true
			subset[e.tool] = true
		}
	}
	return subset
}

// TestCompatibilityCorpus runs every tool of the corpus in wasmgate, at the
// default limits, and in node with the same input, and compares the
// canonical outputs byte for byte. Without WASMGATE_COMPAT=full it runs
// the fast subset; WASMGATE_COMPAT_LIMITS=generous runs at generous limits
// instead, where the tools that differ only at the defaults must agree;
// WASMGATE_COMPAT_TABLE=FILE writes the results as a Markdown table.
func TestCompatibilityCorpus(t *testing.T) {
	testenv.GuestOnly(t)
	if testing.Short() {
		t.Skip("the compatibility corpus runs npm packages in wasmgate and in node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(compatDir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatalf("the compatibility corpus is not installed (make testdata-js runs npm ci in %s): %v", compatDir, err)
	}
	entries := readCompatCorpus(t)
	require.GreaterOrEqual(t, len(entries), 120)
	files, err := filepath.Glob(filepath.Join(compatDir, "tools", "*.mjs"))
	require.NoError(t, err)
	listed := map[string]bool{}
	for _, e := range entries {
		listed[e.tool] = true
		assert.FileExists(t, filepath.Join(compatDir, "tools", e.tool+".mjs"), "corpus.tsv names a tool the corpus lacks")
	}
	for _, f := range files {
		assert.True(t, listed[strings.TrimSuffix(filepath.Base(f), ".mjs")], "%s is not in corpus.tsv", f)
	}
	for name := range compatDifferences {
		assert.True(t, listed[name], "compatDifferences names %s, which corpus.tsv lacks", name)
	}

	full := os.Getenv("WASMGATE_COMPAT") == "full"
	subset := compatFastSubset(entries)
	limits, generous := compatDefaultLimits(), os.Getenv("WASMGATE_COMPAT_LIMITS") == "generous"
	if generous {
		limits = compatGenerousLimits
	}
	e := engine(t, sandbox.EngineWazero)

	var (
		mu      sync.Mutex
		results = map[string]compatResult{}
	)
	t.Run("tools", func(t *testing.T) {
		for _, entry := range entries {
			if !full && !subset[entry.tool] {
				continue
			}
			t.Run(entry.tool, func(t *testing.T) {
				t.Parallel()
				want := compatInNode(t, node, entry.tool)
				res := run(t, e, filepath.Join("..", "compat", "tools", entry.tool+".mjs"), "", `{}`, limits)
				got := res.Output
				if res.Status != pipeline.StatusSuccess {
					got = []byte(fmt.Sprintf("%s %v: %s", res.Status, res.ReasonCodes, res.Message))
				}
				diff, known := compatDifferences[entry.tool]
				expectDiffer := known && !(generous && diff.limits)
				same := bytes.Equal(want, got)
				switch {
				case same && expectDiffer:
					t.Errorf("%s now gives what node gives: remove it from compatDifferences (%s)", entry.tool, diff.cause)
				case !same && !expectDiffer:
					t.Errorf("%s differs from node\nnode:     %.2000s\nwasmgate: %.2000s", entry.tool, want, got)
				}
				mu.Lock()
				defer mu.Unlock()
				results[entry.tool] = compatResult{same: same, status: res.Status, fuel: res.FuelUsed, got: got}
			})
		}
	})
	identical := 0
	for _, r := range results {
		if r.same {
			identical++
		}
	}
	t.Logf("%d of %d tools give what node gives (limits: %s)", identical, len(results), map[bool]string{false: "defaults", true: "generous"}[generous])
	if full && len(results) == len(entries) {
		// The target holds for the whole corpus, not for a subset or a -run selection.
		assert.GreaterOrEqual(t, identical*100, len(results)*95, "%d of %d identical: the target is 95%%", identical, len(results))
	}
	if path := os.Getenv("WASMGATE_COMPAT_TABLE"); path != "" {
		require.NoError(t, os.WriteFile(path, compatTable(entries, results), 0o644))
	}
}

// compatResult is what one corpus tool gave in wasmgate.
type compatResult struct {
	same   bool
	status pipeline.Status
	fuel   uint64
	got    []byte
}

// compatTable is the results as docs/JAVASCRIPT.md shows them: one row per
// package, by category and rank.
func compatTable(entries []compatEntry, results map[string]compatResult) []byte {
	var b bytes.Buffer
	b.WriteString("| Package | Category | Rank (downloads a month) | Result | Fuel | Cause |\n|---|---|---|---|---|---|\n")
	sorted := append([]compatEntry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].category < sorted[j].category })
	for _, e := range sorted {
		r, ran := results[e.tool]
		if !ran {
			continue
		}
		result, cause := "identical", ""
		if !r.same {
			result = "differs"
			if r.status != pipeline.StatusSuccess {
				result = string(r.status)
			}
			cause = compatDifferences[e.tool].cause
		}
		fmt.Fprintf(&b, "| `%s` %s | %s | %d (%.1fM) | %s | %.2g | %s |\n", e.pkg, e.version, e.category, e.rank, float64(e.downloads)/1e6, result, float64(r.fuel), cause)
	}
	return b.Bytes()
}

// compatInNode runs the corpus tool name in node with the input {} and
// returns its result's canonical JSON. Its environment is TZ=UTC alone: the
// zone is UTC, as in wasmgate, and the third-party code sees nothing of the
// machine's environment (a CI secret), as in wasmgate.
func compatInNode(t *testing.T, node, name string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "run_node.mjs", filepath.Join("..", "compat", "tools", name+".mjs"))
	cmd.Dir = filepath.Join("testdata", "node")
	cmd.Env = []string{"TZ=UTC"}
	cmd.Stdin = strings.NewReader(`{}`)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	c, err := audit.Canonicalize(out)
	require.NoError(t, err, "node's output: %s", out)
	return c.Bytes
}
