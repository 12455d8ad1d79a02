package jstool

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
)

func TestParseSpec(t *testing.T) {
	valid := []struct{ spec, name, version string }{
		{"is-number@7.0.0", "is-number", "7.0.0"},
		{"@scope/name@1.2.3", "@scope/name", "1.2.3"},
		{"@types/node@20.11.5", "@types/node", "20.11.5"},
		{"lodash.merge@4.6.2", "lodash.merge", "4.6.2"},
		{"a_b-c.d@0.0.1-beta.2", "a_b-c.d", "0.0.1-beta.2"},
		{"x@^1.2", "x", "^1.2"},
		{"x@~1.2.3", "x", "~1.2.3"},
		{"x@1.x", "x", "1.x"},
		{"x@*", "x", "*"},
		{"x@1.0.0+build.5", "x", "1.0.0+build.5"},
		{"x@latest", "x", "latest"},
		{"3d@next", "3d", "next"},
	}
	for _, tc := range valid {
		t.Run(tc.spec, func(t *testing.T) {
			name, version, err := ParseSpec(tc.spec)
			require.NoError(t, err)
			assert.Equal(t, tc.name, name)
			assert.Equal(t, tc.version, version)
		})
	}

	invalid := []struct{ spec, err string }{
		{"", `empty; want NAME@VERSION`},
		{"is-number", `no version; want NAME@VERSION, such as is-number@7.0.0`},
		{"@scope/name", `no version; want NAME@VERSION, such as is-number@7.0.0`},
		{"is-number@", `empty version; want NAME@VERSION, such as is-number@7.0.0`},
		{"../x@1.0.0", `package name "../x" has a "/" outside a scope`},
		{"..@1.0.0", `package name ".." has a part starting with "."`},
		{"a/b/c@1", `package name "a/b/c" has a "/" outside a scope`},
		{"@scope/a/b@1", `package name "@scope/a/b" has a "/" outside a scope`},
		{"@scope@1", `scoped package name "@scope" has no "/"; want @scope/name`},
		{"@/x@1", `package name "@/x" has an empty part`},
		{"@../x@1", `package name "@../x" has a part starting with "."`},
		{".hidden@1.0.0", `package name ".hidden" has a part starting with "."`},
		{"_private@1.0.0", `package name "_private" has a part starting with "_"`},
		{"-flag@1.0.0", `package name "-flag" may only contain a-z, 0-9, ".", "_" and "-", starting with a letter or digit`},
		{"Is-Number@7.0.0", `package name "Is-Number" has uppercase letters`},
		{"is number@7.0.0", `package name "is number" may only contain a-z, 0-9, ".", "_" and "-", starting with a letter or digit`},
		{"x$(id)@1.0.0", `package name "x$(id)" may only contain a-z, 0-9, ".", "_" and "-", starting with a letter or digit`},
		{"node_modules@1.0.0", `package name "node_modules" is reserved by npm`},
		{strings.Repeat("a", 215) + "@1.0.0", `package name is 215 characters long; npm allows at most 214`},
		{"x@1.0.0; rm -rf /", `version "1.0.0; rm -rf /" is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)`},
		{"x@$(id)", `version "$(id)" is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)`},
		{"x@>=1.0.0 <2", `version ">=1.0.0 <2" is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)`},
		{"x@1 || 2", `version "1 || 2" is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)`},
		{"x@-1.0.0", `version "-1.0.0" is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)`},
		{"x@../../etc", `version "../../etc" is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)`},
		{"x@file:../y", `version "file:../y" is not a semver version (1.2.3), range (^1.2, ~1.2.3, 1.x) or dist-tag (latest)`},
	}
	for _, tc := range invalid {
		t.Run("invalid "+tc.spec, func(t *testing.T) {
			_, _, err := ParseSpec(tc.spec)
			require.ErrorIs(t, err, ErrInvalidSpec)
			assert.EqualError(t, err, "INVALID_SPEC: "+strconv.Quote(tc.spec)+": "+tc.err)
		})
	}
}

func TestDefaultStoreDir(t *testing.T) {
	t.Setenv("WASMGATE_TOOLS_DIR", "/srv/tools")
	assert.Equal(t, "/srv/tools", DefaultStoreDir())

	t.Setenv("WASMGATE_TOOLS_DIR", "")
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	assert.Equal(t, filepath.Join(cache, "wasmgate", "tools"), DefaultStoreDir())
}

func TestStoreGetNotInstalled(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	for _, spec := range []string{"is-number@7.0.0", "is-number@^7", "@scope/tool@latest"} {
		t.Run(spec, func(t *testing.T) {
			inst, err := store.Get(spec)
			assert.Nil(t, inst)
			require.ErrorIs(t, err, ErrNotInstalled)
			assert.EqualError(t, err, "NOT_INSTALLED: "+spec+" is not in the tool store "+store.Dir+"; run: wasmgate tools add "+spec)
		})
	}
}

func TestStoreAddWithoutNpm(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	t.Setenv("PATH", t.TempDir())
	_, err := store.Add(context.Background(), "is-number@7.0.0")
	require.ErrorIs(t, err, exec.ErrNotFound)
	assert.ErrorContains(t, err, "add is-number@7.0.0: npm is needed to install packages and is not on PATH: ")
	assertStoreEntries(t, store)
}

func TestStoreAddInvalidSpec(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	_, err := store.Add(context.Background(), "x@1.0.0; rm -rf /")
	require.ErrorIs(t, err, ErrInvalidSpec)
	_, err = store.Get("../x@1.0.0")
	require.ErrorIs(t, err, ErrInvalidSpec)
}

// The tests below install from a registry served by the test, through npm.

// greetingPackage is a version of an ES module package with a default and
// a named export.
func greetingPackage(version string) fakePackage {
	return fakePackage{name: "greeting", version: version, files: map[string]string{
		"package.json": `{"name": "greeting", "version": "` + version + `", "type": "module", "exports": "./index.js"}`,
		"index.js":     "export const version = \"" + version + "\";\nexport default (name) => `hello ${name}`;\n",
	}}
}

func TestStoreAdd(t *testing.T) {
	useRegistry(t, greetingPackage("1.0.0"))
	store := Store{Dir: t.TempDir()}

	inst, err := store.Add(context.Background(), "greeting@1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "greeting", inst.Name)
	assert.Equal(t, "1.0.0", inst.Version)
	assert.Equal(t, filepath.Join(store.Dir, "greeting@1.0.0"), inst.Dir)
	assert.Equal(t, "greeting@1.0.0", inst.Bundle.Entry)
	assert.Contains(t, string(inst.Bundle.Source), "var greeting_default = /* @__PURE__ */ __name((name) => `hello ${name}`, \"default\");")
	assert.JSONEq(t, `{"name": "greeting", "version": "1.0.0", "type": "module", "exports": "./index.js"}`, string(inst.PackageJSON))
	onDisk, err := os.ReadFile(filepath.Join(inst.Dir, "bundle.mjs"))
	require.NoError(t, err)
	assert.Equal(t, inst.Bundle.Source, onDisk)
	assert.Equal(t, `["hello ann","1.0.0"]`, evalModule(t, inst.Bundle.Source, `[ns.default("ann"), ns.version]`))
	assertStoreEntries(t, store, "greeting@1.0.0")

	// Without npm, a second Add and a Get can only use what is installed.
	marker := filepath.Join(inst.Dir, "marker")
	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	t.Setenv("PATH", t.TempDir())

	again, err := store.Add(context.Background(), "greeting@1.0.0")
	require.NoError(t, err)
	assert.Equal(t, inst, again)
	assert.FileExists(t, marker)

	got, err := store.Get("greeting@1.0.0")
	require.NoError(t, err)
	assert.Equal(t, inst, got)
}

func TestStoreAddRangeRecordsExactVersion(t *testing.T) {
	useRegistry(t, greetingPackage("1.0.0"), greetingPackage("1.1.0"), greetingPackage("2.0.0-rc.1"))
	store := Store{Dir: t.TempDir()}

	inst, err := store.Add(context.Background(), "greeting@^1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "1.1.0", inst.Version)
	assert.Equal(t, filepath.Join(store.Dir, "greeting@1.1.0"), inst.Dir)
	assertStoreEntries(t, store, "greeting@1.1.0", "specs")

	t.Setenv("PATH", t.TempDir())
	for _, spec := range []string{"greeting@^1.0.0", "greeting@1.1.0"} {
		got, err := store.Get(spec)
		require.NoError(t, err, spec)
		assert.Equal(t, inst, got, spec)
	}
	_, err = store.Get("greeting@latest")
	require.ErrorIs(t, err, ErrNotInstalled)
}

func TestStoreAddScopedPackage(t *testing.T) {
	useRegistry(t, fakePackage{name: "@acme/slug", version: "0.3.0", files: map[string]string{
		"package.json": `{"name": "@acme/slug", "version": "0.3.0", "main": "index.js"}`,
		"index.js":     "module.exports = (s) => s.toLowerCase().replace(/[^a-z0-9]+/g, \"-\");\n",
	}})
	store := Store{Dir: t.TempDir()}

	inst, err := store.Add(context.Background(), "@acme/slug@0.3.0")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(store.Dir, "@acme+slug@0.3.0"), inst.Dir)
	assert.Equal(t, "@acme/slug@0.3.0", inst.Bundle.Entry)
	assert.Equal(t, `"hello-world"`, evalModule(t, inst.Bundle.Source, `ns.default("Hello World")`))

	got, err := store.Get("@acme/slug@0.3.0")
	require.NoError(t, err)
	assert.Equal(t, inst, got)
}

func TestStoreAddPackageNotFound(t *testing.T) {
	useRegistry(t, greetingPackage("1.0.0"))
	store := Store{Dir: t.TempDir()}

	tests := []struct{ spec, err string }{
		{"no-such-package@1.0.0", "PACKAGE_NOT_FOUND: npm has no package no-such-package@1.0.0"},
		{"greeting@9.9.9", "PACKAGE_NOT_FOUND: npm has no version 9.9.9 of package greeting"},
		{"greeting@^3", "PACKAGE_NOT_FOUND: npm has no version ^3 of package greeting"},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			inst, err := store.Add(context.Background(), tc.spec)
			assert.Nil(t, inst)
			require.ErrorIs(t, err, ErrPackageNotFound)
			assert.EqualError(t, err, tc.err)
		})
	}
	assertStoreEntries(t, store)
}

func TestStoreAddBundleErrorLeavesNothing(t *testing.T) {
	useRegistry(t, fakePackage{name: "reads-files", version: "1.0.0", files: map[string]string{
		"package.json": `{"name": "reads-files", "version": "1.0.0", "main": "index.js"}`,
		"index.js":     "module.exports = (p) => p +;\n",
	}})
	store := Store{Dir: t.TempDir()}

	_, err := store.Add(context.Background(), "reads-files@1.0.0")
	var bundleErr *BundleError
	require.ErrorAs(t, err, &bundleErr)
	assert.EqualError(t, err, `add reads-files@1.0.0: cannot bundle reads-files@1.0.0: node_modules/reads-files/index.js:1:28: Unexpected ";"`)
	assertStoreEntries(t, store)

	_, err = store.Get("reads-files@1.0.0")
	require.ErrorIs(t, err, ErrNotInstalled)
}

func TestStoreAddConcurrently(t *testing.T) {
	useRegistry(t, greetingPackage("1.0.0"))
	store := Store{Dir: t.TempDir()}

	const adds = 4
	var wg sync.WaitGroup
	installed := make([]*Installed, adds)
	errs := make([]error, adds)
	for i := range adds {
		wg.Go(func() { installed[i], errs[i] = store.Add(context.Background(), "greeting@1.0.0") })
	}
	wg.Wait()

	for i := range adds {
		require.NoError(t, errs[i])
		assert.Equal(t, installed[0], installed[i])
	}
	assertStoreEntries(t, store, "greeting@1.0.0")
}

func TestStoreAddTimeout(t *testing.T) {
	requireNpm(t)
	hung := make(chan struct{})
	registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hung:
		}
	}))
	t.Cleanup(registry.Close)
	t.Cleanup(func() { close(hung) }) // runs first, so Close does not wait
	npmEnv(t, registry.URL)

	saved := installTimeout
	installTimeout = time.Second
	t.Cleanup(func() { installTimeout = saved })

	store := Store{Dir: t.TempDir()}
	_, err := store.Add(context.Background(), "greeting@1.0.0")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.EqualError(t, err, "add greeting@1.0.0: npm install did not finish within the 1 s install limit: context deadline exceeded")
	assertStoreEntries(t, store)
}

func TestStoreAddCancelled(t *testing.T) {
	useRegistry(t, greetingPackage("1.0.0"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	store := Store{Dir: t.TempDir()}
	_, err := store.Add(ctx, "greeting@1.0.0")
	require.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, "add greeting@1.0.0: npm install stopped: context canceled")
	assertStoreEntries(t, store)
}

// The tests below use the public npm registry, with small packages pinned
// to versions that cannot change. They need npm, and fail if the registry
// cannot be reached.

func TestStoreAddFromNpm(t *testing.T) {
	requireNpm(t)
	t.Setenv("npm_config_cache", t.TempDir())
	store := Store{Dir: t.TempDir()}

	t.Run("commonjs", func(t *testing.T) {
		inst, err := store.Add(context.Background(), "is-number@7.0.0")
		require.NoError(t, err)
		assert.Equal(t, "7.0.0", inst.Version)
		assert.Contains(t, string(inst.Bundle.Source), "// node_modules/is-number/index.js\n")
		assert.Contains(t, string(inst.Bundle.Source), "export {\n  wasmgate_package_entry_default as default\n};")
		assert.Equal(t, `[["default"],true,false]`,
			evalModule(t, inst.Bundle.Source, `[Object.keys(ns), ns.default("42"), ns.default("x")]`))
	})
	t.Run("module", func(t *testing.T) {
		inst, err := store.Add(context.Background(), "escape-string-regexp@5.0.0")
		require.NoError(t, err)
		assert.Equal(t, "5.0.0", inst.Version)
		assert.Contains(t, string(inst.Bundle.Source), "var wasmgate_package_entry_default = escapeStringRegexp;")
		assert.Equal(t, `[["default"],"a\\.b\\*"]`,
			evalModule(t, inst.Bundle.Source, `[Object.keys(ns), ns.default("a.b*")]`))
	})
	t.Run("no such package", func(t *testing.T) {
		_, err := store.Add(context.Background(), "wasmgate-no-such-package-zz9@1.0.0")
		require.ErrorIs(t, err, ErrPackageNotFound)
		assert.EqualError(t, err, "PACKAGE_NOT_FOUND: npm has no package wasmgate-no-such-package-zz9@1.0.0")
	})
	t.Run("no such version", func(t *testing.T) {
		_, err := store.Add(context.Background(), "is-number@99.99.99")
		require.ErrorIs(t, err, ErrPackageNotFound)
		assert.EqualError(t, err, "PACKAGE_NOT_FOUND: npm has no version 99.99.99 of package is-number")
	})
	assertStoreEntries(t, store, "escape-string-regexp@5.0.0", "is-number@7.0.0")
}

// assertStoreEntries checks the names in the store directory, so that no
// half-finished install is left behind.
func assertStoreEntries(t *testing.T, store Store, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(store.Dir)
	if os.IsNotExist(err) {
		entries, err = nil, nil
	}
	require.NoError(t, err)
	got := []string{}
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want == nil {
		want = []string{}
	}
	sort.Strings(want)
	assert.Equal(t, want, got)
}

func requireNpm(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH")
	}
}

// npmEnv points npm at registry, with a cache and configuration of the
// test's own.
func npmEnv(t *testing.T, registry string) {
	t.Helper()
	userConfig := filepath.Join(t.TempDir(), "npmrc")
	require.NoError(t, os.WriteFile(userConfig, nil, 0o644))
	t.Setenv("npm_config_registry", registry+"/")
	t.Setenv("npm_config_cache", t.TempDir())
	t.Setenv("npm_config_userconfig", userConfig)
}

// fakePackage is one version of a package the test registry serves.
type fakePackage struct {
	name, version string
	files         map[string]string // path in the package → contents
}

// useRegistry serves pkgs as an npm registry and points npm at it.
func useRegistry(t *testing.T, pkgs ...fakePackage) {
	t.Helper()
	requireNpm(t)
	mux := http.NewServeMux()
	registry := httptest.NewServer(mux)
	t.Cleanup(registry.Close)

	packuments := map[string]map[string]any{}
	for _, pkg := range pkgs {
		tarball := packageTarball(t, pkg.files)
		sum := sha512.Sum512(tarball)
		tarballPath := "/-/" + strings.ReplaceAll(pkg.name, "/", "-") + "-" + pkg.version + ".tgz"
		mux.HandleFunc("GET "+tarballPath, func(w http.ResponseWriter, r *http.Request) { w.Write(tarball) })

		var manifest map[string]any
		require.NoError(t, json.Unmarshal([]byte(pkg.files["package.json"]), &manifest))
		manifest["dist"] = map[string]any{
			"tarball":   registry.URL + tarballPath,
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum[:]),
		}
		doc, ok := packuments[pkg.name]
		if !ok {
			doc = map[string]any{"name": pkg.name, "versions": map[string]any{}, "dist-tags": map[string]string{}}
			packuments[pkg.name] = doc
		}
		doc["versions"].(map[string]any)[pkg.version] = manifest
		if !strings.Contains(pkg.version, "-") {
			doc["dist-tags"].(map[string]string)["latest"] = pkg.version
		}
	}
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		// npm asks for a scoped package as /@scope%2fname.
		doc, ok := packuments[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error": "Not found"}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		assert.NoError(t, json.NewEncoder(w).Encode(doc))
	})
	npmEnv(t, registry.URL)
}

// packageTarball is a package as npm publishes it: a gzipped tar of files
// under package/.
func packageTarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)

	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range names {
		body := []byte(files[name])
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write(body)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// scriptedPackages are a package and its dependency whose every install
// lifecycle script would write a file named after the script into dir.
func scriptedPackages(dir string) []fakePackage {
	scripts := func() string {
		s := map[string]string{}
		for _, name := range []string{"preinstall", "install", "postinstall", "prepare"} {
			s[name] = "node -e \"require('fs').writeFileSync(process.argv[1], 'ran')\" " + filepath.Join(dir, "$npm_package_name-"+name)
		}
		raw, _ := json.Marshal(s)
		return string(raw)
	}
	return []fakePackage{
		{name: "scripted", version: "1.0.0", files: map[string]string{
			"package.json": `{"name": "scripted", "version": "1.0.0", "type": "module", "exports": "./index.js",
				"dependencies": {"scripted-dep": "1.0.0"}, "scripts": ` + scripts() + `}`,
			"index.js": "import dep from \"scripted-dep\";\nexport default () => dep;\n",
		}},
		{name: "scripted-dep", version: "1.0.0", files: map[string]string{
			"package.json": `{"name": "scripted-dep", "version": "1.0.0", "type": "module", "exports": "./index.js", "scripts": ` + scripts() + `}`,
			"index.js":     "export default \"dep\";\n",
		}},
	}
}

// TestStoreAddRunsNoPackageScripts: installing a package (what `tools add`
// and serve's on-demand installs do) runs none of its lifecycle scripts,
// nor its dependencies'. A control install with npm's defaults shows the
// scripts would have written their files.
func TestStoreAddRunsNoPackageScripts(t *testing.T) {
	marks := t.TempDir()
	useRegistry(t, scriptedPackages(marks)...)

	store := Store{Dir: t.TempDir()}
	inst, err := store.Add(context.Background(), "scripted@1.0.0")
	require.NoError(t, err)
	assert.Equal(t, `"dep"`, evalModule(t, inst.Bundle.Source, `ns.default()`))
	written, err := os.ReadDir(marks)
	require.NoError(t, err)
	assert.Empty(t, written, "no lifecycle script may run")

	// The control: npm's own defaults run them.
	project := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"private": true}`), 0o644))
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "scripted@1.0.0")
	cmd.Dir = project
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.FileExists(t, filepath.Join(marks, "scripted-postinstall"))
	assert.FileExists(t, filepath.Join(marks, "scripted-dep-postinstall"))
}
