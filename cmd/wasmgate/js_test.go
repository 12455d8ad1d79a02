package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func jsTool(name string) string {
	return filepath.Join("..", "..", "jstool", "testdata", "tools", name)
}

func TestRunJS(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		status string
		codes  []string
		output string
		msg    string
	}{
		{"TypeScript tool", []string{"--js", jsTool("typed.ts"), "--input", `{"words":["a","abc"]}`},
			exitSuccess, "SUCCESS", []string{}, `{"count":2,"longest":"abc"}`, ""},
		{"sidecar manifest", []string{"--js", jsTool("trim.js"), "--input", `{"text":" a "}`},
			exitSuccess, "SUCCESS", []string{}, `{"text":"a"}`, ""},
		{"named export", []string{"--js", jsTool("package_shape.js"), "--tool", "upper", "--input", `{"s":"ab"}`},
			exitSuccess, "SUCCESS", []string{}, `{"s":"AB"}`, ""},
		{"thrown error", []string{"--js", jsTool("throws.js"), "--input", `{"reason":"r"}`},
			exitFailed, "FAILED", []string{"EXECUTOR_EXCEPTION"}, "", "Error: cannot do that: r"},
		{"not JSON", []string{"--js", jsTool("returns_bigint.js"), "--input", `{}`},
			exitFailed, "FAILED", []string{"EXECUTOR_EXCEPTION", "OUTPUT_NOT_JSON"}, "", `output is not JSON: a bigint at key "big"`},
		{"endless loop", []string{"--js", jsTool("endless.js"), "--fuel", "1000000", "--input", `{}`},
			exitBlocked, "BLOCKED", []string{"LIMIT_EXCEEDED", "FUEL_EXHAUSTED"}, "", "fuel exhausted"},
		{"missing export", []string{"--js", jsTool("trim.js"), "--tool", "nope", "--input", `{}`},
			exitBlocked, "BLOCKED", []string{"EXECUTOR_INVALID"}, "", "TOOL_NOT_FOUND"},
		{"syntax error", []string{"--js", jsTool("syntax_error.js"), "--input", `{}`},
			exitBlocked, "BLOCKED", []string{"EXECUTOR_INVALID"}, "", "syntax_error.js:2:10: Expected"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"run"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			res := parseResult(t, r)
			assert.Equal(t, tt.status, res.Status)
			assert.Equal(t, tt.codes, res.ReasonCodes)
			if tt.output != "" {
				assert.JSONEq(t, tt.output, string(res.Output))
			}
			assert.Contains(t, res.Message, tt.msg)
		})
	}
}

func TestRunJSShowsTheLog(t *testing.T) {
	r := wasmgate(t, "", "run", "--js", jsTool("profile.js"), "--input", `{}`)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"log":"profile {\"checked\":true}\nerror: to the log too\n"`)
}

// storeWith lays out a tool store holding one bundled package, as `tools
// add` leaves it, without npm.
func storeWith(t *testing.T, name, version, bundle, packageJSON string) string {
	t.Helper()
	dir := t.TempDir()
	entry := filepath.Join(dir, strings.Replace(name, "/", "+", 1)+"@"+version)
	pkgDir := filepath.Join(entry, "node_modules", filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(pkgDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(entry, "bundle.mjs"), []byte(bundle), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(pkgDir, "package.json"), []byte(packageJSON), 0o644))
	return dir
}

func TestRunPackage(t *testing.T) {
	store := storeWith(t, "@acme/text-tools", "2.1.0",
		`export default { shout: { execute: ({ s }) => ({ s: s.toUpperCase() + "!" }) } };`,
		`{"name":"@acme/text-tools","version":"2.1.0","wasmgate":{"capabilities":["text"]}}`)
	r := wasmgate(t, "", "run", "--package", "@acme/text-tools@2.1.0", "--tool", "shout", "--tools-dir", store, "--input", `{"s":"hi"}`)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	res := parseResult(t, r)
	assert.JSONEq(t, `{"s":"HI!"}`, string(res.Output))
	assert.Equal(t, "acme_text_tools__shout", res.ExecutorID)
	assert.Equal(t, "2.1.0", res.ExecutorVersion)

	// Neither pkg.whisper nor pkg.default.whisper: pkg.default is taken,
	// and it has no execute.
	r = wasmgate(t, "", "run", "--package", "@acme/text-tools@2.1.0", "--tool", "whisper", "--tools-dir", store, "--input", `{"s":"hi"}`)
	assert.Equal(t, exitBlocked, r.code)
	assert.Contains(t, parseResult(t, r).Message, "TOOL_INVALID: @acme/text-tools@2.1.0: the default export is an object with no execute function, not a tool")

	// The package form replays like any executor.
	corpus := corpusFile(t, `{"payload":{"s":"a"}}`, `{"payload":{"s":1}}`)
	r = wasmgate(t, "", "replay", "--package", "@acme/text-tools@2.1.0", "--tool", "shout", "--tools-dir", store, "--corpus", corpus, "--json",
		"--engines", strings.Join(comparedEngines(), ","))
	require.Equal(t, exitSuccess, r.code, r.stderr)
	rep := parseReplay(t, r)
	require.Len(t, rep.Requests, 2)
	assert.Equal(t, "SUCCESS", rep.Requests[0].Status)
	assert.Equal(t, "FAILED", rep.Requests[1].Status, "1 has no toUpperCase")
	assert.Empty(t, rep.Divergences)

	store = storeWith(t, "plain", "1.0.0", `export const x = 1;`, `{"name":"plain","version":"1.0.0"}`)
	r = wasmgate(t, "", "run", "--package", "plain@1.0.0", "--tool", "shout", "--tools-dir", store, "--input", `{}`)
	assert.Equal(t, exitBlocked, r.code)
	res = parseResult(t, r)
	assert.Equal(t, []string{"EXECUTOR_INVALID"}, res.ReasonCodes)
	assert.Contains(t, res.Message, `TOOL_NOT_FOUND: plain@1.0.0: the tool exports no "shout" (nor a default export)`)
}

// TestToolsAddPackageNotFound asks the npm registry for a package that does
// not exist.
func TestToolsAddPackageNotFound(t *testing.T) {
	r := wasmgate(t, "", "tools", "add", "--tools-dir", t.TempDir(), "wasmgate-no-such-package-zz9@1.0.0")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "wasmgate tools add: PACKAGE_NOT_FOUND: npm has no package wasmgate-no-such-package-zz9@1.0.0")
}

func TestRegistryWithJSTools(t *testing.T) {
	cfg := writeFile(t, "registry.json", `{
  "executors": {
    "text_trim": {"js": "`+filepath.ToSlash(mustAbs(t, jsTool("trim.js")))+`"},
    "greeter":   {"js": "`+filepath.ToSlash(mustAbs(t, jsTool("default_object.js")))+`"}
  },
  "actions": {
    "text.trim":  {"executor": "text_trim", "version": "^1.2.0", "capabilities": ["TEXT"]},
    "text.greet": {"executor": "greeter", "version": "*"}
  }
}`)
	r := wasmgate(t, "", "run", "--config", cfg, "--action", "text.trim", "--input", `{"text":" x "}`)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.JSONEq(t, `{"text":"x"}`, string(parseResult(t, r).Output))

	// greeter's file carries no manifest: it is the registry's "greeter",
	// version 0.0.0, as when it is run directly (issue 24).
	r = wasmgate(t, "", "run", "--config", cfg, "--action", "text.greet", "--input", `{"name":"a"}`)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	res := parseResult(t, r)
	assert.Equal(t, "greeter", res.ExecutorID)
	assert.Equal(t, "0.0.0", res.ExecutorVersion)
	assert.JSONEq(t, `{"greeting":"hello a"}`, string(res.Output))
}

// TestRunJSLoadingRunsOutOfMemory is issue 24 through the command line: a
// tool too big for --memory-pages while loading is BLOCKED LIMIT_EXCEEDED
// MEMORY_EXHAUSTED (exit 3), and the message says what to raise; a package
// whose package.json's "wasmgate" field sets the memory loads in it too.
func TestRunJSLoadingRunsOutOfMemory(t *testing.T) {
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("export const parts = [\n")
	for i := range 1500 {
		// Distinct strings: the engine keeps one copy of equal literals.
		src.WriteString(`  "` + strconv.Itoa(i) + strings.Repeat(" wasmgate", 111) + `",` + "\n")
	}
	src.WriteString("];\nexport function execute() { return { parts: parts.length }; }\n")
	src.WriteString("export const count = { execute };\n")
	file := filepath.Join(dir, "big.js")
	require.NoError(t, os.WriteFile(file, []byte(src.String()), 0o644))

	r := wasmgate(t, "", "run", "--js", file, "--memory-pages", "64", "--input", `{}`)
	assert.Equal(t, exitBlocked, r.code, r.stderr)
	res := parseResult(t, r)
	assert.Equal(t, []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}, res.ReasonCodes)
	assert.Regexp(t, `^executor "big": MEMORY_EXHAUSTED: .*big\.js: loading the tool ran out of memory: memory_pages is 64 \(4 MiB\), `+
		`its memory had grown to [0-9.]+ MiB when more was refused; set --memory-pages above 64 \(e\.g\. 128\)$`, res.Message)

	r = wasmgate(t, "", "run", "--js", file, "--input", `{}`)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.JSONEq(t, `{"parts":1500}`, string(parseResult(t, r).Output))

	store := storeWith(t, "big-tools", "1.0.0", src.String(),
		`{"name":"big-tools","version":"1.0.0","wasmgate":{"limits":{"memory_pages":64}}}`)
	r = wasmgate(t, "", "run", "--package", "big-tools@1.0.0", "--tool", "count", "--tools-dir", store, "--input", `{}`)
	assert.Equal(t, exitBlocked, r.code, r.stderr)
	res = parseResult(t, r)
	assert.Equal(t, []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"}, res.ReasonCodes)
	assert.Contains(t, res.Message, "memory_pages is 64 (4 MiB)")

	r = wasmgate(t, "", "run", "--package", "big-tools@1.0.0", "--tool", "count", "--tools-dir", store, "--memory-pages", "1024", "--input", `{}`)
	require.Equal(t, exitSuccess, r.code, "the flag beats the package's memory: %s", r.stderr)
	assert.JSONEq(t, `{"parts":1500}`, string(parseResult(t, r).Output))
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	require.NoError(t, err)
	return a
}

func TestReplayJS(t *testing.T) {
	corpus := corpusFile(t,
		`{"payload":{"words":["x","yy"]}}`,
		`{"payload":{"seed":3}}`,
	)
	r := wasmgate(t, "", "replay", "--js", jsTool("typed.ts"), "--corpus", corpus, "--runs", "3", "--json",
		"--engines", strings.Join(comparedEngines(), ","))
	require.Equal(t, exitSuccess, r.code, r.stderr)
	rep := parseReplay(t, r)
	assert.Empty(t, rep.Divergences)
	require.Len(t, rep.Requests, 2)
	assert.Equal(t, "SUCCESS", rep.Requests[0].Status)
	assert.Equal(t, "FAILED", rep.Requests[1].Status)

	r = wasmgate(t, "", "replay", "--js", jsTool("profile.js"), "--corpus", corpus, "--runs", "3", "--json",
		"--engines", strings.Join(comparedEngines(), ","))
	require.Equal(t, exitSuccess, r.code, "Math.random is seeded by the input, Date is fixed: %s", r.stderr)
}
