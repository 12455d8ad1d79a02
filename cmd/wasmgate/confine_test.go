package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/enginetest"
)

// Issue 23, item 1: code's imports resolve only inside its own tree, on
// every front that bundles it.

// hostSecret is what the file outside a test's tree holds.
const hostSecret = "s3cret-outside-the-tree"

// treeRule is how a refusal states the rule for code whose root is its
// entry's directory.
func treeRule(noun string) string {
	return `imports must stay inside the ` + noun + `'s tree: "." (the nearest directory up from the entry holding package.json, else the entry's own) and the node_modules packages found from there, links resolved; `
}

// outsideTree lays out dir/secret.json (outside the tree) and dir/proj
// (the tree, with a package.json) holding files, and returns dir/proj.
func outsideTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret.json"), []byte(`{"apiKey":"`+hostSecret+`"}`), 0o644))
	proj := filepath.Join(dir, "proj")
	files["package.json"] = `{"name":"proj","version":"1.0.0"}`
	for name, content := range files {
		file := filepath.Join(proj, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
		if target, ok := strings.CutPrefix(content, "->"); ok {
			require.NoError(t, os.Symlink(target, file))
			continue
		}
		require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
	}
	return proj
}

func TestRunJSRefusesImportsOutsideTheTree(t *testing.T) {
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Skip("this host has no /etc/passwd")
	}
	tests := []struct {
		name, file, src, problem string
		extra                    map[string]string
	}{
		{"text import of /etc/passwd", "tool.js",
			"import t from \"/etc/passwd\" with { type: \"text\" };\nexport default () => ({ t });\n",
			`tool.js:1:15: ` + treeRule("tool") + `"/etc/passwd" is outside it`, nil},
		{"JSON import through ..", "tool.ts",
			"import k from \"../secret.json\";\nexport default () => k;\n",
			`tool.ts:1:15: ` + treeRule("tool") + `"../secret.json" is outside it`, nil},
		{"require through ..", "tool.cjs",
			"module.exports = () => require(\"../secret.json\");\n",
			`tool.cjs:1:32: ` + treeRule("tool") + `"../secret.json" is outside it`, nil},
		{"a link pointing out", "tool.js",
			"import k from \"./conf.json\";\nexport default () => k;\n",
			`tool.js:1:15: ` + treeRule("tool") + `"./conf.json" is outside it (it resolves to ../secret.json)`,
			map[string]string{"conf.json": "->../secret.json"}},
	}
	for _, engine := range engineNames() {
		for _, tt := range tests {
			t.Run(engine+"/"+tt.name, func(t *testing.T) {
				files := map[string]string{tt.file: tt.src}
				for k, v := range tt.extra {
					files[k] = v
				}
				tool := filepath.Join(outsideTree(t, files), tt.file)
				r := wasmgate(t, "", "run", "--engine", engine, "--js", tool, "--input", `{}`)
				assert.Equal(t, exitBlocked, r.code, r.stderr)
				res := parseResult(t, r)
				assert.Equal(t, "BLOCKED", res.Status)
				assert.Equal(t, []string{"EXECUTOR_INVALID"}, res.ReasonCodes)
				assert.Equal(t, `executor "tool": cannot bundle `+tool+": "+tt.problem, res.Message)
				assert.NotContains(t, r.stdout, hostSecret)
			})
		}
	}
}

func TestRegistryRefusesAJSExecutorReadingHostFiles(t *testing.T) {
	tool := filepath.Join(outsideTree(t, map[string]string{
		"tool.mjs": "export default async () => (await import(\"../secret.json\")).default;\n",
	}), "tool.mjs")
	cfg := writeFile(t, "registry.json", `{
  "executors": {"leaky": {"js": "`+filepath.ToSlash(tool)+`"}},
  "actions": {"leak": {"executor": "leaky", "version": "*"}}
}`)
	r := wasmgate(t, "", "run", "--config", cfg, "--action", "leak", "--input", `{}`)
	assert.Equal(t, exitBlocked, r.code, r.stderr)
	res := parseResult(t, r)
	assert.Equal(t, "BLOCKED", res.Status)
	assert.Equal(t, []string{"EXECUTOR_INVALID"}, res.ReasonCodes)
	assert.Equal(t, `executor "leaky": cannot bundle `+tool+": tool.mjs:1:42: "+treeRule("tool")+`"../secret.json" is outside it`, res.Message)
	assert.NotContains(t, r.stdout+r.stderr, hostSecret)
}

func TestNodeRefusesImportsOutsideTheTree(t *testing.T) {
	prog := filepath.Join(outsideTree(t, map[string]string{
		"prog.js": "const k = require(\"../secret.json\");\nconsole.log(k.apiKey);\n",
	}), "prog.js")
	r := wasmgate(t, "", "node", prog)
	assert.Equal(t, exitUsage, r.code)
	assert.Empty(t, r.stdout, "nothing ran")
	assert.Equal(t, "wasmgate node: cannot bundle "+prog+": prog.js:1:19: "+treeRule("program")+`"../secret.json" is outside it`+"\n", r.stderr)
}

func TestScriptRefusesImportsOutsideTheTree(t *testing.T) {
	script := filepath.Join(outsideTree(t, map[string]string{
		"main.ts": "import k from \"../secret.json\" with { type: \"json\" };\nexport default k;\n",
	}), "main.ts")
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := wasmgate(t, "", "script", script, "--audit", log)
	assert.Equal(t, exitUsage, r.code)
	assert.Empty(t, r.stdout, "nothing ran")
	assert.Equal(t, "wasmgate script: cannot bundle "+script+": main.ts:1:15: "+treeRule("script")+`"../secret.json" is outside it`+"\n", r.stderr)
	assert.NoFileExists(t, log, "nothing was audited")
}

func TestRunJSAllowsImportsInsideTheTree(t *testing.T) {
	tool := filepath.Join(outsideTree(t, map[string]string{
		"src/tool.ts":                   "import { word } from \"dep\";\nimport k from \"../data/k.json\";\nimport n from \"./note.txt\" with { type: \"text\" };\nexport function execute() { return { s: word + k.k + n }; }\n",
		"src/note.txt":                  "->../data/note.txt",
		"data/k.json":                   `{"k":"-json"}`,
		"data/note.txt":                 "-note",
		"node_modules/dep/package.json": `{"name":"dep","version":"1.0.0","main":"index.js"}`,
		"node_modules/dep/index.js":     "exports.word = \"dep\";\n",
	}), "src", "tool.ts")
	for _, name := range enginetest.JSEngines() {
		engine := string(name)
		t.Run(engine, func(t *testing.T) {
			r := wasmgate(t, "", "run", "--engine", engine, "--js", tool, "--input", `{}`)
			require.Equal(t, exitSuccess, r.code, r.stdout+r.stderr)
			assert.JSONEq(t, `{"s":"dep-json-note"}`, string(parseResult(t, r).Output))
		})
	}
}

// Issue 23, item 4: the type check reads only the script's tree and runs
// under bounds.

func TestScriptTypeCheckRefusesFilesOutsideTheTree(t *testing.T) {
	// Bundling drops type-only imports and reference directives, so these
	// reach the type check, which refuses them before checking anything.
	for _, tt := range []struct{ name, src, spec string }{
		{"import type", "import type { Key } from \"../types.ts\";\nexport const k: Key = { apiKey: \"x\" };\nexport default 1;\n", "../types.ts"},
		{"reference directive", "/// <reference path=\"../ref.d.ts\" />\nexport default refd.apiKey;\n", "../ref.d.ts"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proj := outsideTree(t, map[string]string{"main.ts": tt.src})
			dir := filepath.Dir(proj)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "types.ts"), []byte(`export type Key = { apiKey: "`+hostSecret+`" };`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "ref.d.ts"), []byte(`declare var refd: { apiKey: "`+hostSecret+`" };`), 0o644))
			script := filepath.Join(proj, "main.ts")
			log := filepath.Join(t.TempDir(), "audit.jsonl")

			r := wasmgate(t, "", "script", script, "--audit", log)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout, "nothing ran")
			assert.Equal(t, "wasmgate script: cannot type-check "+script+": "+script+": "+treeRule("script")+`"`+tt.spec+`" is outside it: nothing was run`+"\n", r.stderr)
			assert.NoFileExists(t, log, "nothing was audited")
		})
	}
}

// pathologicalScript keeps the type checker going until a bound stops it.
var pathologicalScript = filepath.Join("..", "..", "internal", "tscheck", "testdata", "pathological.ts")

func TestScriptTypeCheckBounds(t *testing.T) {
	tests := []struct {
		name   string
		flags  []string
		stderr string
	}{
		// Each case puts the other bound out of reach, so the one named is
		// the only one that can stop the compiler.
		{"time", []string{"--check-timeout", "500ms", "--check-memory-mb", "65536"},
			"wasmgate script: type-checking " + pathologicalScript + " took longer than --check-timeout 500ms: the compiler was stopped and nothing was run (raise --check-timeout, or --no-check skips the check)\n"},
		{"memory", []string{"--check-timeout", "10m", "--check-memory-mb", "256"},
			"wasmgate script: type-checking " + pathologicalScript + " needed more than --check-memory-mb 256: the compiler was stopped and nothing was run (raise --check-memory-mb, or --no-check skips the check)\n"},
		{"bad timeout", []string{"--check-timeout", "0s"},
			"wasmgate script: --check-timeout 0s: want a positive duration (e.g. 30s); --no-check skips the check\n"},
		{"bad memory", []string{"--check-memory-mb", "-1"},
			"wasmgate script: --check-memory-mb -1: want a positive number of MiB up to 1073741824; --no-check skips the check\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := wasmgate(t, "", append([]string{"script", pathologicalScript}, tt.flags...)...)
			assert.Equal(t, exitUsage, r.code)
			assert.Empty(t, r.stdout)
			assert.Equal(t, tt.stderr, r.stderr)
		})
	}
}

// copyTree makes dst a copy of the directory src for a tool's tree: files
// hard-linked where the file system allows (a 30 MB node_modules in a few
// milliseconds), else copied; links inside it made again as they are.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		if os.Link(path, target) == nil {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	require.NoError(t, err)
}

// npmServing serves one package version (files under package/ in its
// tarball) as an npm registry, and points npm at it with a cache and
// configuration of the test's own.
func npmServing(t *testing.T, name, version string, files map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH")
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, file := range slices.Sorted(maps.Keys(files)) {
		body := []byte(files[file])
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "package/" + file, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	tarball := buf.Bytes()
	sum := sha512.Sum512(tarball)

	mux := http.NewServeMux()
	reg := httptest.NewServer(mux)
	t.Cleanup(reg.Close)
	tarballPath := "/-/" + name + "-" + version + ".tgz"
	mux.HandleFunc("GET "+tarballPath, func(w http.ResponseWriter, r *http.Request) { w.Write(tarball) })
	mux.HandleFunc("GET /"+name, func(w http.ResponseWriter, r *http.Request) {
		var manifest map[string]any
		assert.NoError(t, json.Unmarshal([]byte(files["package.json"]), &manifest))
		manifest["dist"] = map[string]any{"tarball": reg.URL + tarballPath, "integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:])}
		w.Header().Set("Content-Type", "application/json")
		assert.NoError(t, json.NewEncoder(w).Encode(map[string]any{
			"name": name, "versions": map[string]any{version: manifest}, "dist-tags": map[string]string{"latest": version},
		}))
	})
	userConfig := filepath.Join(t.TempDir(), "npmrc")
	require.NoError(t, os.WriteFile(userConfig, nil, 0o644))
	t.Setenv("npm_config_registry", reg.URL+"/")
	t.Setenv("npm_config_cache", t.TempDir())
	t.Setenv("npm_config_userconfig", userConfig)
}

func TestToolStoreRefusesAPackageReadingHostFiles(t *testing.T) {
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Skip("this host has no /etc/passwd")
	}
	npmServing(t, "leaky", "1.0.0", map[string]string{
		"package.json": `{"name": "leaky", "version": "1.0.0", "type": "module", "exports": "./index.js"}`,
		"index.js":     "import t from \"/etc/passwd\" with { type: \"text\" };\nexport default { execute: () => ({ t }) };\n",
	})
	refusal := `add leaky@1.0.0: cannot bundle leaky@1.0.0: node_modules/leaky/index.js:1:15: imports must stay inside the package's tree: "." (the directory the packages are installed in) and the node_modules packages found from there, links resolved; "/etc/passwd" is outside it`

	store := t.TempDir()
	r := wasmgate(t, "", "tools", "add", "leaky@1.0.0", "--tools-dir", store)
	assert.Equal(t, exitUsage, r.code)
	assert.Equal(t, "wasmgate tools add: "+refusal+"\n", r.stderr)
	entries, err := os.ReadDir(store)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was installed")

	// run --package adds a missing package the same way, and runs nothing.
	r = wasmgate(t, "", "run", "--package", "leaky@1.0.0", "--tool", "default", "--tools-dir", store, "--input", `{}`)
	assert.Equal(t, exitUsage, r.code)
	assert.Empty(t, r.stdout, "no verdict: nothing ran")
	assert.Equal(t, "wasmgate: adding leaky@1.0.0 to the tool store "+store+"\nwasmgate run: "+refusal+"\n", r.stderr)
}
