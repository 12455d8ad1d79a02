package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
)

// npmCLIDir is the CLI corpus: npm packages that ship a command-line
// program computing from its arguments and stdin, chosen by download rank,
// pinned by a lock file; cases.json holds each run's arguments and stdin.
var npmCLIDir = td("nodecli-npm")

// npmCLICase is one entry of cases.json.
type npmCLICase struct {
	Name      string   `json:"name"`
	Package   string   `json:"package"`
	Rank      int      `json:"rank"`
	Downloads int      `json:"downloads_a_month"`
	Bin       string   `json:"bin"`
	Args      []string `json:"args"`
	Stdin     string   `json:"stdin"`
}

// npmCLIDifferences are the CLI corpus runs whose stdout, stderr or exit
// status under wasmgate node, at the default limits, is not node's, each
// with its cause. The test fails when another run differs and when one of
// these starts to agree, so the list stays true as the causes get fixed;
// docs/JAVASCRIPT.md repeats it.
var npmCLIDifferences = map[string]string{
	// The bundle is one ES module, so every module in it runs in strict
	// mode, where node runs CommonJS sloppy.
	"regjsparser": "its bin assigns an undeclared variable (`result = parse(...)`), which node's sloppy CommonJS allows and the bundle's strict mode refuses: `ReferenceError: result is not defined`, exit 1",
	// Code the bundler cannot see.
	"prettier": "its bin loads the CLI through `new Function(\"module\", \"return import(module)\")`, an import made from code built at run time, which bundling cannot see: `cannot import \"../internal/legacy-cli.mjs\"`, exit 1",
}

// npmCLIFast are the runs a plain `go test` makes (make compat runs all,
// WASMGATE_COMPAT=full): the three most downloaded programs, so that every
// run checks the corpus's harness and the commonest kind of CLI.
var npmCLIFast = map[string]bool{"semver": true, "uuid": true, "js-yaml": true}

// npmCLIDefaultLimits are `wasmgate node`'s flags for the default limits
// with fuel, not the clock, binding: the default fuel, and a clock ten times
// what that fuel lasts at QuickJS's slowest measured rate (3 billion units
// a second, docs/BENCHMARKS.md Issue 14), so that no verdict depends on the
// machine's load.
func npmCLIDefaultLimits() []string {
	fuel := jstool.ProgramLimits().Fuel
	return []string{"--fuel", strconv.FormatUint(fuel, 10), "--timeout-ms", strconv.FormatUint(fuel/300_000, 10)}
}

// TestNPMCLIsMatchNode runs each program of the CLI corpus under wasmgate
// node and under node with the same arguments and stdin, and compares
// stdout, stderr and the exit status byte for byte. node runs with an
// environment of TZ=UTC alone, as wasmgate's programs see none and UTC.
// WASMGATE_COMPAT_CLI_TABLE=FILE (with WASMGATE_COMPAT=full) writes the results
// as a Markdown table.
func TestNPMCLIsMatchNode(t *testing.T) {
	testenv.GuestOnly(t)
	if testing.Short() {
		t.Skip("the CLI corpus runs npm programs under wasmgate node and node")
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	if _, err := os.Stat(filepath.Join(npmCLIDir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatalf("the CLI corpus is not installed (make testdata-js runs npm ci in %s): %v", npmCLIDir, err)
	}
	raw, err := os.ReadFile(filepath.Join(npmCLIDir, "cases.json"))
	require.NoError(t, err)
	var cases []npmCLICase
	require.NoError(t, json.Unmarshal(raw, &cases))
	packages := map[string]bool{}
	names := map[string]bool{}
	for _, c := range cases {
		packages[c.Package] = true
		names[c.Name] = true
	}
	require.GreaterOrEqual(t, len(packages), 20, "the corpus holds at least 20 programs")
	for name := range npmCLIDifferences {
		assert.True(t, names[name], "npmCLIDifferences names %q, which cases.json lacks", name)
	}
	full := os.Getenv("WASMGATE_COMPAT") == "full"

	var (
		mu      sync.Mutex
		results = map[string]bool{}
	)
	t.Run("runs", func(t *testing.T) {
		for _, c := range cases {
			if !full && !npmCLIFast[c.Name] {
				continue
			}
			t.Run(c.Name, func(t *testing.T) {
				prog := npmCLIProgram(t, c)
				want := npmCLIInNode(t, nodeBin, prog, c)
				got := wasmgate(t, c.Stdin, append(append(append([]string{"node"}, npmCLIDefaultLimits()...), filepath.Join(npmCLIDir, prog)), c.Args...)...)
				same := want == got
				cause, known := npmCLIDifferences[c.Name]
				switch {
				case same && known:
					t.Errorf("%s now gives what node gives: remove it from npmCLIDifferences (%s)", c.Name, cause)
				case !same && !known:
					t.Errorf("%s differs from node\nnode:     exit %d\nstdout: %.1500q\nstderr: %.1500q\nwasmgate: exit %d\nstdout: %.1500q\nstderr: %.1500q",
						c.Name, want.code, want.stdout, want.stderr, got.code, got.stdout, got.stderr)
				}
				mu.Lock()
				defer mu.Unlock()
				results[c.Name] = same
			})
		}
	})
	identical := 0
	for _, same := range results {
		if same {
			identical++
		}
	}
	t.Logf("%d of %d runs give what node gives", identical, len(results))
	if path := os.Getenv("WASMGATE_COMPAT_CLI_TABLE"); path != "" {
		var b bytes.Buffer
		b.WriteString("| Run | Package | Rank (downloads a month) | Result | Cause |\n|---|---|---|---|---|\n")
		for _, c := range cases {
			same, ran := results[c.Name]
			if !ran {
				continue
			}
			result := map[bool]string{true: "identical", false: "differs"}[same]
			fmt.Fprintf(&b, "| %s | `%s` | %d (%.1fM) | %s | %s |\n", c.Name, c.Package, c.Rank, float64(c.Downloads)/1e6, result, npmCLIDifferences[c.Name])
		}
		require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
	}
}

// npmCLIProgram is the file the case's bin names, relative to the corpus's
// directory: the target of node_modules/.bin's link, the file the
// package's "bin" field maps the command to (what npx runs).
func npmCLIProgram(t *testing.T, c npmCLICase) string {
	t.Helper()
	link := filepath.Join("node_modules", ".bin", c.Bin)
	target, err := os.Readlink(filepath.Join(npmCLIDir, link))
	require.NoError(t, err, "%s: the corpus has no program %s", c.Name, c.Bin)
	return filepath.Join(filepath.Dir(link), target)
}

// npmCLIInNode runs prog under node with the case's arguments and stdin,
// in the corpus's directory, as a user who installed the packages there
// would.
func npmCLIInNode(t *testing.T, nodeBin, prog string, c npmCLICase) runResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, append([]string{prog}, c.Args...)...)
	cmd.Dir = npmCLIDir
	cmd.Env = []string{"TZ=UTC"}
	cmd.Stdin = strings.NewReader(c.Stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := 0
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return runResult{code: code, stdout: out.String(), stderr: errb.String()}
}
