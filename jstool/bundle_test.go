package jstool

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const bundleFixtures = "testdata/bundle"

// sandboxNote ends every message about a Node builtin.
func TestBundleFileStripsTypesAndKeepsTopLevelAwait(t *testing.T) {
	path := filepath.Join(bundleFixtures, "typed.ts")
	b, err := BundleFile(path)
	require.NoError(t, err)
	assert.Equal(t, path, b.Entry)

	src := string(b.Source)
	// The enum is inlined, the annotations are gone and the await stays
	// at the top level of the module.
	assert.Contains(t, src, `var config = await Promise.resolve({ mode: "LOUD" /* Loud */ });`)
	assert.Contains(t, src, "function greet(input) {\n  const who = input.name;\n")
	assert.Contains(t, src, "export {\n  greet as default\n};")
	for _, ts := range []string{"interface", "enum", ": string", ": Input", " as Mode"} {
		assert.NotContains(t, src, ts)
	}
}

func TestBundleFileInlinesImports(t *testing.T) {
	b, err := BundleFile(filepath.Join(bundleFixtures, "main.js"))
	require.NoError(t, err)

	src := string(b.Source)
	assert.Contains(t, src, "// lib/shout.js\nfunction shout(text) {")
	assert.Contains(t, src, "// lib/whisper.ts\nfunction whisper(text) {\n  return text.toLowerCase() + \"...\";")
	assert.Contains(t, src, "// main.js\nfunction run(input) {")
	assert.NotRegexp(t, regexp.MustCompile(`(?m)^\s*import\b`), src)
	assert.NotContains(t, src, "from \"")
}

func TestBundleFileErrors(t *testing.T) {
	tests := []struct {
		file     string
		problems []string
	}{
		{"syntax_error.js", []string{`syntax_error.js:3:13: Unexpected "*"`}},
		{"syntax_error.ts", []string{`syntax_error.ts:5:9: Expected ";" but found "x"`}},
		{"unresolved.js", []string{
			`unresolved.js:1:24: Could not resolve "./missing-helper.js"`,
			`unresolved.js:2:21: Could not resolve "left-pad"`,
		}},
		{"tool.py", []string{`tool.py: unsupported extension ".py" (want .js, .mjs, .cjs, .ts, .mts or .cts)`}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join(bundleFixtures, tc.file)
			b, err := BundleFile(path)
			assert.Empty(t, b.Source)

			var bundleErr *BundleError
			require.ErrorAs(t, err, &bundleErr)
			assert.Equal(t, path, bundleErr.Entry)
			assert.Equal(t, tc.problems, bundleErr.Problems)
			assert.EqualError(t, err, "cannot bundle "+path+": "+strings.Join(tc.problems, "; "))
		})
	}
}

func TestBundleFileMissing(t *testing.T) {
	path := filepath.Join(bundleFixtures, "no-such-tool.ts")
	_, err := BundleFile(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.EqualError(t, err, "cannot bundle "+path+": stat "+path+": no such file or directory")
}

func TestBundleFileIsDeterministic(t *testing.T) {
	rel := filepath.Join(bundleFixtures, "main.js")
	abs, err := filepath.Abs(rel)
	require.NoError(t, err)

	first, err := BundleFile(rel)
	require.NoError(t, err)
	second, err := BundleFile(rel)
	require.NoError(t, err)
	// Paths in the output are relative to the entry, so how the entry was
	// named does not matter either.
	third, err := BundleFile(abs)
	require.NoError(t, err)

	assert.Equal(t, first.Source, second.Source)
	assert.Equal(t, first.Source, third.Source)
	assert.NotContains(t, string(third.Source), abs)
}

func TestBundleFilePrefersBuiltinsToPackagesOfTheirName(t *testing.T) {
	// "events" is a Node built-in: as in Node, a bare "events" is the
	// built-in even when a package of that name is installed.
	b, err := BundleFile(filepath.Join(bundleFixtures, "userland", "tool.mjs"))
	require.NoError(t, err)
	assert.NotContains(t, string(b.Source), "// node_modules/events/events.js\n")
	assert.Contains(t, string(b.Source), "// wasmgate-node:node:events\n")
	assert.Contains(t, string(b.Source), "var tool_default = /* @__PURE__ */ __name(() => typeof import_events.EventEmitter, \"default\");")
}

func TestBundlePackage(t *testing.T) {
	dir := filepath.Join(bundleFixtures, "packages")
	tests := []struct {
		name     string
		entry    string
		contains []string
	}{
		{
			name:  "esm-pkg",
			entry: "esm-pkg@1.2.3",
			contains: []string{
				"// node_modules/esm-pkg/index.js\n",
				"var wasmgate_package_entry_default = greet;",
				"export {\n  add,\n  wasmgate_package_entry_default as default,\n  version\n};",
			},
		},
		{
			// CommonJS: the default export is module.exports.
			name:  "cjs-pkg",
			entry: "cjs-pkg@0.4.0",
			contains: []string{
				"// node_modules/cjs-pkg/index.js\n",
				`module.exports.mode = "production";`,
				"var ns = __toESM(require_cjs_pkg(), 1);\nvar wasmgate_package_entry_default = ns.default;",
				"export {\n  wasmgate_package_entry_default as default\n};",
			},
		},
		{
			// The "import" condition wins over "node" and "require".
			name:     "conditional-pkg",
			entry:    "conditional-pkg@2.0.0",
			contains: []string{"// node_modules/conditional-pkg/dist/esm.mjs\nvar build = \"esm\";"},
		},
		{
			// The "module" field wins over "main".
			name:     "@fixtures/scoped",
			entry:    "@fixtures/scoped@0.0.1",
			contains: []string{"// node_modules/@fixtures/scoped/esm.js\nvar kind = \"module field\";"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := BundlePackage(dir, tc.name)
			require.NoError(t, err)
			assert.Equal(t, tc.entry, b.Entry)
			for _, want := range tc.contains {
				assert.Contains(t, string(b.Source), want)
			}
			assert.NotRegexp(t, regexp.MustCompile(`(?m)^\s*import\b|\brequire\(`), string(b.Source))

			again, err := BundlePackage(dir, tc.name)
			require.NoError(t, err)
			assert.Equal(t, b.Source, again.Source)
		})
	}
}

func TestBundlePackageErrors(t *testing.T) {
	dir := filepath.Join(bundleFixtures, "packages")
	tests := []struct {
		name string
		err  string
	}{
		{"not-installed", `cannot bundle not-installed: wasmgate-package-entry.mjs:1:15: Could not resolve "not-installed"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BundlePackage(dir, tc.name)
			var bundleErr *BundleError
			require.ErrorAs(t, err, &bundleErr)
			assert.EqualError(t, err, tc.err)
		})
	}
}

// TestBundlesRunAsModules evaluates bundles in Node, as a stand-in for the
// engine: an ES module engine that offers nothing beyond the language.
func TestBundlesRunAsModules(t *testing.T) {
	packages := filepath.Join(bundleFixtures, "packages")
	tests := []struct {
		name   string
		bundle func() (Bundle, error)
		expr   string
		want   string
	}{
		{
			name:   "top-level await",
			bundle: func() (Bundle, error) { return BundleFile(filepath.Join(bundleFixtures, "typed.ts")) },
			expr:   `ns.default({ name: "ann" })`,
			want:   `"HELLO ann"`,
		},
		{
			name:   "imports",
			bundle: func() (Bundle, error) { return BundleFile(filepath.Join(bundleFixtures, "main.js")) },
			expr:   `ns.default({ text: "Hi" })`,
			want:   `"HI! hi..."`,
		},
		{
			name:   "esm package namespace",
			bundle: func() (Bundle, error) { return BundlePackage(packages, "esm-pkg") },
			expr:   `[Object.keys(ns).sort(), ns.default("bo"), ns.add(2, 3), ns.version]`,
			want:   `[["add","default","version"],"hello bo",5,"1.2.3"]`,
		},
		{
			name:   "cjs package namespace",
			bundle: func() (Bundle, error) { return BundlePackage(packages, "cjs-pkg") },
			expr:   `[Object.keys(ns), ns.default(2), ns.default.triple(2), ns.default.mode]`,
			want:   `[["default"],4,6,"production"]`,
		},
		{
			name:   "package needing a builtin loads",
			bundle: func() (Bundle, error) { return BundlePackage(packages, "needs-crypto") },
			expr:   `typeof ns.default`,
			want:   `"function"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.bundle()
			require.NoError(t, err)
			assert.Equal(t, tc.want, evalModule(t, b.Source, tc.expr))
		})
	}
}

// evalModule imports source as an ES module in Node and returns
// JSON.stringify(expr), with the module's namespace in scope as ns.
func evalModule(t *testing.T, source []byte, expr string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	module := filepath.Join(t.TempDir(), "bundle.mjs")
	require.NoError(t, os.WriteFile(module, source, 0o644))
	script := "const ns = await import(process.argv[1]);\nconsole.log(JSON.stringify(" + expr + "));\n"
	out, err := exec.Command(node, "--input-type=module", "--eval", script, "--", "file://"+filepath.ToSlash(module)).CombinedOutput()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("node: %v\n%s", err, out)
	}
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}
