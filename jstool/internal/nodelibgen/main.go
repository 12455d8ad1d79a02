// Command nodelibgen bundles the third-party libraries behind wasmgate's
// Node built-ins (installed from npm by scripts/build-nodelib.sh into
// jstool/nodelib/node_modules, pinned by its lock file) into one CommonJS
// file each under jstool/nodelib/dist, which package jstool embeds. A
// library's imports of Node built-ins (require("buffer"), "util/",
// "process/") are left as require("node:NAME"), so that every tool bundle
// resolves them to the one copy of each built-in wasmgate provides: a
// single Buffer class, a single process.
//
//	go run ./jstool/internal/nodelibgen jstool/nodelib
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// libs are the bundles: dist/NAME.js is the library file it names, with
// everything it requires inlined except Node built-ins.
var libs = map[string]struct {
	entry   string // relative to node_modules
	license string // the package directory whose LICENSE is copied
	// define replaces globals the library names, as esbuild's define.
	define map[string]string
}{
	"buffer": {"buffer/index.js", "buffer", nil},
	"events": {"events/events.js", "events", nil},
	"path":   {"path-browserify/index.js", "path-browserify", nil},
	"util":   {"util/util.js", "util", nil},
	// inspect asks whether a value is a URL of every object it shows:
	// naming the URL global would put the WHATWG URL parser (about a
	// second to load) into every bundle that formats a value.
	"inspect":          {"node-inspect-extracted/dist/inspect.js", "node-inspect-extracted", map[string]string{"URL": "globalThis.URL"}},
	"url":              {"url/url.js", "url", nil},
	"whatwg-url":       {"whatwg-url/index.js", "whatwg-url", nil},
	"querystring":      {"querystring-es3/index.js", "querystring-es3", nil},
	"string_decoder":   {"string_decoder/lib/string_decoder.js", "string_decoder", nil},
	"punycode":         {"punycode/punycode.js", "punycode", nil},
	"assert":           {"assert/build/assert.js", "assert", nil},
	"stream":           {"readable-stream/lib/stream.js", "readable-stream", nil},
	"zlib":             {"browserify-zlib/lib/index.js", "browserify-zlib", nil},
	"abort-controller": {"abort-controller/dist/abort-controller.js", "abort-controller", nil},
	// util.parseArgs: Node's own implementation, published by its authors
	// as a library (node:util wraps its errors in Node's shapes).
	"parseargs": {"@pkgjs/parseargs/index.js", "@pkgjs/parseargs", nil},
}

// builtins are the names a library may require that are Node's: they stay
// require("node:NAME") in the bundle.
var builtins = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`assert buffer child_process console constants crypto dgram dns domain
		events fs http http2 https net os path process punycode querystring readline stream
		string_decoder sys timers tls tty url util vm worker_threads zlib`) {
		builtins[n] = true
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nodelibgen DIR (the directory holding node_modules)")
		os.Exit(2)
	}
	if err := generate(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "nodelibgen:", err)
		os.Exit(1)
	}
}

func generate(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	modules := filepath.Join(abs, "node_modules")
	dist := filepath.Join(abs, "dist")
	if err := clearDist(dist); err != nil {
		return err
	}
	names := make([]string, 0, len(libs))
	for name := range libs {
		names = append(names, name)
	}
	sort.Strings(names)
	var licenses strings.Builder
	for _, name := range names {
		lib := libs[name]
		res := api.Build(api.BuildOptions{
			EntryPoints:   []string{filepath.Join(modules, lib.entry)},
			AbsWorkingDir: abs,
			Bundle:        true,
			Write:         false,
			Format:        api.FormatCommonJS,
			// The browser builds of these libraries are the ones written
			// for an engine without Node (package.json "browser" fields).
			Platform:          api.PlatformBrowser,
			Target:            api.ES2022,
			MinifyWhitespace:  true,
			MinifySyntax:      true,
			LegalComments:     api.LegalCommentsNone,
			LogLevel:          api.LogLevelSilent,
			Plugins:           []api.Plugin{keepBuiltins},
			Define:            lib.define,
			Charset:           api.CharsetUTF8,
			TreeShaking:       api.TreeShakingTrue,
			IgnoreAnnotations: false,
		})
		if len(res.Errors) > 0 {
			var msgs []string
			for _, m := range res.Errors {
				where := ""
				if m.Location != nil {
					where = fmt.Sprintf("%s:%d: ", m.Location.File, m.Location.Line)
				}
				msgs = append(msgs, where+m.Text)
			}
			return fmt.Errorf("%s: %s", name, strings.Join(msgs, "; "))
		}
		if len(res.OutputFiles) != 1 {
			return fmt.Errorf("%s: %d output files", name, len(res.OutputFiles))
		}
		header := fmt.Sprintf("// %s, bundled by wasmgate's nodelibgen from %s (see LICENSES.txt).\n", name, lib.entry)
		if err := writeFile(filepath.Join(dist, name+".js"), append([]byte(header), res.OutputFiles[0].Contents...)); err != nil {
			return err
		}
		license, err := readLicense(filepath.Join(modules, lib.license))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(&licenses, "==== %s (dist/%s.js) ====\n%s\n\n", lib.license, name, strings.TrimSpace(license))
	}
	if err := generateIntl(modules, dist, &licenses); err != nil {
		return fmt.Errorf("intl: %w", err)
	}
	return writeFile(filepath.Join(dist, "LICENSES.txt"), []byte(licenses.String()))
}

// keepBuiltins leaves a library's imports of Node built-ins to the tool
// bundle: "buffer", "util/" and "node:buffer" become require("node:buffer").
var keepBuiltins = api.Plugin{
	Name: "keep-node-builtins",
	Setup: func(b api.PluginBuild) {
		// JSON data (tr46's mapping table) is parsed by JSON.parse, which
		// the engine does natively, many times faster than evaluating it as
		// an object literal.
		b.OnLoad(api.OnLoadOptions{Filter: `\.json$`}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
			raw, err := os.ReadFile(args.Path)
			if err != nil {
				return api.OnLoadResult{}, err
			}
			quoted, err := json.Marshal(string(raw))
			if err != nil {
				return api.OnLoadResult{}, err
			}
			src := "module.exports = JSON.parse(" + string(quoted) + ");"
			return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS}, nil
		})
		b.OnResolve(api.OnResolveOptions{Filter: `^(node:)?[a-z_-]+/?$`}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
			name := strings.TrimSuffix(strings.TrimPrefix(args.Path, "node:"), "/")
			if name == "abort-controller" {
				// The global AbortController's library: one copy, whose
				// browser build would read a global the engine lacks.
				return api.OnResolveResult{Path: "wasmgate:lib/abort-controller", External: true}, nil
			}
			if !builtins[name] {
				return api.OnResolveResult{}, nil
			}
			return api.OnResolveResult{Path: "node:" + name, External: true}, nil
		})
	},
}

func readLicense(pkgDir string) (string, error) {
	for _, name := range []string{"LICENSE", "LICENSE.md", "LICENSE.txt", "LICENSE-MIT.txt", "License.md", "license", "LICENCE"} {
		if b, err := os.ReadFile(filepath.Join(pkgDir, name)); err == nil {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("no license file in %s", pkgDir)
}

// clearDist removes everything in dist but its README.md: dist is committed
// and embedded whole (go:embed nodelib/dist), so a file an older generator
// wrote and this one does not must not stay to be embedded.
func clearDist(dist string) error {
	entries, err := os.ReadDir(dist)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "README.md" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dist, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// writeFile replaces path atomically, so an interrupted build never leaves
// half a file for go:embed.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
