package jstool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/wasmgate/wasmgate/internal/confine"
)

// Bundle is a tool's code as the engine evaluates it: one ES module with
// every import resolved and inlined.
type Bundle struct {
	// Source is the bundled ES module.
	Source []byte
	// Entry names what was bundled (a file path, or name@version), for messages.
	Entry string
	// Main is, for a program (BundleProgram), its entry's path as the
	// program sees it (under ProgramRoot): its __filename, and what its
	// process.argv[1] should be. Empty for a tool.
	Main string

	// metafile is esbuild's metafile, for a build that asked for one.
	metafile string
}

// BundleError says why a tool could not be bundled: a syntax or type-stripping
// error, an unresolvable import, or an import outside the tool's tree.
type BundleError struct {
	Entry string
	// Problems are "file:line:col: message", the file relative to the
	// entry's directory (or to the store entry for a package) and line and
	// column counted from 1.
	Problems []string
}

func (e *BundleError) Error() string {
	return "cannot bundle " + e.Entry + ": " + strings.Join(e.Problems, "; ")
}

// bundleExtensions are the entry files BundleFile accepts, with the loader
// for each: the engine runs JavaScript, and esbuild strips TypeScript types.
var bundleExtensions = map[string]api.Loader{
	".js":  api.LoaderJS,
	".mjs": api.LoaderJS,
	".cjs": api.LoaderJS,
	".ts":  api.LoaderTS,
	".mts": api.LoaderTS,
	".cts": api.LoaderTS,
}

// BundleFile bundles a .js, .mjs, .cjs, .ts, .mts or .cts file and everything it imports.
//
// # Errors
//
// A file with another extension, a syntax error, an import that does not
// resolve, an import that resolves outside the tool's tree (its nearest
// directory holding package.json, else its own directory, and the
// node_modules packages found from there, links resolved) is a *BundleError
// (a Node built-in bundles as wasmgate's: see docs/JAVASCRIPT.md for what
// works and what refuses). A file that cannot
// be read is the os error wrapped, so errors.Is(err, fs.ErrNotExist) holds
// for a missing file.
func BundleFile(path string) (Bundle, error) { return BundleFileWith(path, nil) }

// BundleFileWith is BundleFile with virtual modules: an import of a name in
// virtual (exactly that name: "toolscript", not "toolscript/x") resolves to the
// JavaScript source it maps to, before anything installed or built in of
// that name. Problems in a virtual module are reported as
// "wasmgate-virtual:NAME:line:col: message".
func BundleFileWith(path string, virtual map[string]string) (Bundle, error) {
	return bundleFileWith(path, virtual, "tool")
}

// bundleFileWith is BundleFileWith with noun naming the code in a refusal
// ("tool", "script").
func bundleFileWith(path string, virtual map[string]string, noun string) (Bundle, error) {
	ext := filepath.Ext(path)
	if _, ok := bundleExtensions[ext]; !ok {
		return Bundle{}, &BundleError{Entry: path, Problems: []string{
			fmt.Sprintf("%s: unsupported extension %q (want .js, .mjs, .cjs, .ts, .mts or .cts)", filepath.Base(path), ext),
		}}
	}
	info, err := os.Stat(path)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", path, err)
	}
	if info.IsDir() {
		return Bundle{}, &BundleError{Entry: path, Problems: []string{filepath.Base(path) + ": is a directory, not a file"}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", path, err)
	}

	tree, err := confine.Entry(abs)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", path, err)
	}
	opts := bundleOptions(filepath.Dir(abs))
	opts.EntryPoints = []string{abs}
	if len(virtual) > 0 {
		opts.Plugins = append([]api.Plugin{virtualModulesPlugin(virtual)}, opts.Plugins...)
	}
	return build(path, opts, confinement{tree: tree, noun: noun})
}

// virtualNamespace holds the virtual modules of BundleFileWith.
const virtualNamespace = "wasmgate-virtual"

// virtualModulesPlugin resolves the names in modules to their sources.
func virtualModulesPlugin(modules map[string]string) api.Plugin {
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, regexp.QuoteMeta(name))
	}
	sort.Strings(names)
	filter := "^(" + strings.Join(names, "|") + ")$"
	return api.Plugin{
		Name: "wasmgate-virtual-modules",
		Setup: func(b api.PluginBuild) {
			b.OnResolve(api.OnResolveOptions{Filter: filter}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
				return api.OnResolveResult{Path: args.Path, Namespace: virtualNamespace}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: virtualNamespace}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				src, ok := modules[args.Path]
				if !ok {
					return api.OnLoadResult{}, fmt.Errorf("no virtual module %q", args.Path)
				}
				return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS}, nil
			})
		},
	}
}

// packageEntryFile names the generated module that BundlePackage bundles;
// the .mjs extension makes esbuild import CommonJS the way Node does, with
// module.exports as the default export.
const packageEntryFile = "wasmgate-package-entry.mjs"

// BundlePackage bundles an installed npm package: dir is the directory whose node_modules holds it, name the package name.
//
// The bundle's namespace is the package's: its named exports and its default
// export. For a CommonJS package the default export is module.exports, and
// there are no named exports, because esbuild cannot know them before the
// code runs.
//
// # Errors
//
// Anything that stops the package from bundling is a *BundleError, including
// a package that is not installed in dir and an import that resolves outside
// dir and the node_modules directories found from it (links resolved).
func BundlePackage(dir, name string) (Bundle, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", name, err)
	}
	entry := name
	if version := installedVersion(abs, name); version != "" {
		entry = name + "@" + version
	}

	quoted, err := json.Marshal(name)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", name, err)
	}
	// export * does not carry the default export, so it is passed on by hand.
	source := fmt.Sprintf("export * from %s;\nimport * as ns from %s;\nexport default ns.default;\n", quoted, quoted)

	tree, err := confine.Dir(abs)
	if err != nil {
		return Bundle{}, &BundleError{Entry: entry, Problems: []string{fmt.Sprintf("%s is not installed in %s: %v", name, dir, err)}}
	}
	opts := bundleOptions(abs)
	opts.Stdin = &api.StdinOptions{
		Contents:   source,
		ResolveDir: abs,
		Sourcefile: packageEntryFile,
		Loader:     api.LoaderJS,
	}
	return build(entry, opts, confinement{tree: tree, noun: "package"})
}

// installedVersion is the version in dir/node_modules/name/package.json, or
// "" when that cannot be read.
func installedVersion(dir, name string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(raw, &pkg) != nil {
		return ""
	}
	return pkg.Version
}

// bundleOptions are the esbuild options for one tool, with workDir the
// directory that file names in messages and comments are relative to, so
// the output does not depend on where the tool lives.
func bundleOptions(workDir string) api.BuildOptions {
	return api.BuildOptions{
		AbsWorkingDir: workDir,
		Bundle:        true,
		Write:         false,
		Format:        api.FormatESModule,
		// Neutral assumes neither Node nor a browser, which matches the
		// engine: plain ECMAScript and nothing else.
		Platform: api.PlatformNeutral,
		// ES2022 keeps top-level await, which the engine supports.
		Target:     api.ES2022,
		MainFields: []string{"module", "main"},
		// "import" and "default" are always active for import statements;
		// "module" picks the ESM build of packages that publish one.
		Conditions: []string{"module"},
		Loader:     bundleExtensions,
		Define: map[string]string{
			"process.env.NODE_ENV": `"production"`,
			"global":               "globalThis",
		},
		// Only errors matter, and they are read from the result.
		LogLevel: api.LogLevelSilent,
		// With a raw tsconfig esbuild reads no tsconfig.json or
		// jsconfig.json at all: one in the tool's tree could "extends" a
		// file anywhere on the host, or map "paths" out of the tree, and
		// esbuild follows both without asking a plugin. The options it would
		// take from one (paths aliases, JSX factories, legacy decorators)
		// are not read; docs/JAVASCRIPT.md says so.
		TsconfigRaw: "{}",
		// Functions and classes keep the names their source gives them, as
		// in node: esbuild renames a top-level name two modules share
		// (@anthropic-ai/sdk's APIError became APIError2), and code shows
		// and tests names (an error's name, util.inspect, constructor.name).
		// It costs the compatibility corpus 2.2% more loading fuel and 0.7%
		// more call fuel in all (a tool that makes many closures per call up
		// to twice its fuel: each gets its name set); docs/BENCHMARKS.md.
		KeepNames: true,
		Plugins:   []api.Plugin{nodeBuiltinsPlugin},
	}
}

// confinement is the tree a build's imports must stay in, and the noun
// naming the code in a refusal ("tool", "script", "program", "package").
type confinement struct {
	tree confine.Tree
	noun string
}

// confinePluginName names the confinement's plugin, and so its errors among
// esbuild's.
const confinePluginName = "wasmgate-confine"

// confineMarker is the PluginData of the precise plugin's own resolution of
// an import (build.Resolve runs every plugin again), which it lets through
// to esbuild's resolver instead of checking again.
type confineMarker struct{}

// plugin refuses every host file outside the tree before esbuild reads it:
// an absolute path, a ".." leaving the root, /proc or /dev, a link pointing
// out, whatever the import's form (import, "with { type }", require,
// import() with a literal or a pattern, require.resolve). workDir is the
// directory the build's messages name files relative to.
//
// Its OnLoad is the gate: esbuild reads every module from the host through
// the namespace "file", so a refusal there stops the read, and the error
// is placed at the import that led to the file. That gate alone knows the
// file but not the import's specifier, so a build it refuses is built
// again with precise set: an OnResolve then resolves each import as
// esbuild would (build.Resolve) and refuses by specifier. build.Resolve
// makes a fresh resolver on every call, which made bundling the
// compatibility corpus 3.3 times slower, so only code already refused pays
// for it.
func (c confinement) plugin(workDir string, precise bool) api.Plugin {
	return api.Plugin{
		Name: confinePluginName,
		Setup: func(b api.PluginBuild) {
			if precise {
				b.OnResolve(api.OnResolveOptions{Filter: ".*"}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
					if _, ours := args.PluginData.(confineMarker); ours {
						return api.OnResolveResult{}, nil
					}
					r := b.Resolve(args.Path, api.ResolveOptions{
						Importer:   args.Importer,
						Namespace:  args.Namespace,
						ResolveDir: args.ResolveDir,
						Kind:       args.Kind,
						PluginData: confineMarker{},
						With:       args.With,
					})
					// An import that does not resolve, or not to a host
					// file, reads nothing: esbuild resolves it again and
					// reports its own error, word for word.
					if len(r.Errors) > 0 || r.External || r.Namespace != "file" {
						return api.OnResolveResult{}, nil
					}
					if resolved, ok := c.tree.Contains(r.Path); !ok {
						return api.OnResolveResult{}, errors.New(c.tree.Refusal(c.noun, args.Path, resolved, workDir))
					}
					return api.OnResolveResult{}, nil
				})
			}
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: "file"}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				if resolved, ok := c.tree.Contains(args.Path); !ok {
					// The file, named as the build's messages name files.
					file := args.Path
					if base, err := filepath.EvalSymlinks(workDir); err == nil {
						if rel, err := filepath.Rel(base, file); err == nil {
							file = rel
						}
					}
					return api.OnLoadResult{}, errors.New(c.tree.Refusal(c.noun, file, resolved, workDir))
				}
				return api.OnLoadResult{}, nil
			})
		},
	}
}

// withPlugin is opts with p added after its plugins: the built-ins and
// virtual modules resolve first, and never name a host file.
func withPlugin(opts api.BuildOptions, p api.Plugin) api.BuildOptions {
	opts.Plugins = append(slices.Clip(opts.Plugins), p)
	return opts
}

// refused reports whether the confinement refused a file in result.
func refused(result api.BuildResult) bool {
	for _, msg := range result.Errors {
		if msg.PluginName == confinePluginName {
			return true
		}
	}
	return false
}

// build runs esbuild and turns its errors into a *BundleError.
//
// Node's globals (Buffer, process, URL, crypto, …) come from the built-ins,
// each only when the code names it, and so do the engine features of
// nodeFeatures (the legacy RegExp statics). A build renames every free reference
// to a global not yet provided (and globalThis.NAME of namedThroughGlobalThis)
// into a marker; when markers are found, the
// code is built again with a first module that installs those globals on
// globalThis (and whatever the built-ins that brought in name), until no
// marker is left.
func build(entry string, opts api.BuildOptions, c confinement) (Bundle, error) {
	var installed, features []string
	for {
		o := opts
		o.Define = make(map[string]string, len(opts.Define)+len(nodeGlobals))
		for k, v := range opts.Define {
			o.Define[k] = v
		}
		for _, g := range nodeGlobals {
			if !slices.Contains(installed, g.name) {
				o.Define[g.name] = globalMarker(g.name)
				if namedThroughGlobalThis[g.name] {
					o.Define["globalThis."+g.name] = globalMarker(g.name)
				}
			}
		}
		o.Inject = slices.Clone(features)
		if len(installed) > 0 {
			o.Inject = append(o.Inject, globalsInstaller+strings.Join(installed, ","))
		}
		b, err := buildOnce(entry, o, c)
		if err != nil {
			return Bundle{}, err
		}
		more := false
		for _, f := range nodeFeatures {
			if !slices.Contains(features, f.module) && f.named.Match(b.Source) {
				features = append(features, f.module)
				more = true
			}
		}
		for _, g := range nodeGlobals {
			if !slices.Contains(installed, g.name) && bytes.Contains(b.Source, []byte(globalMarker(g.name))) {
				installed = append(installed, g.name)
				more = true
			}
		}
		if !more {
			return b, nil
		}
	}
}

// namedThroughGlobalThis are the globals that globalThis.NAME names as
// much as NAME does: libraries test for Web Crypto as globalThis.crypto
// (@noble/hashes takes its random bytes there). Not the others: the
// built-ins read globalThis.Buffer and globalThis.process on purpose, so as
// not to bring those modules into every bundle that uses them.
var namedThroughGlobalThis = map[string]bool{"crypto": true, "Crypto": true, "CryptoKey": true, "SubtleCrypto": true}

// globalMarker is what build renames a free reference to a Node global to.
func globalMarker(name string) string { return "__wasmgate_node_global_" + name + "__" }

func buildOnce(entry string, opts api.BuildOptions, c confinement) (Bundle, error) {
	result := api.Build(withPlugin(opts, c.plugin(opts.AbsWorkingDir, false)))
	if refused(result) {
		result = api.Build(withPlugin(opts, c.plugin(opts.AbsWorkingDir, true)))
	}
	if len(result.Errors) > 0 {
		problems := make([]string, 0, len(result.Errors))
		for _, msg := range result.Errors {
			problems = append(problems, problem(msg))
		}
		return Bundle{}, &BundleError{Entry: entry, Problems: problems}
	}
	if len(result.OutputFiles) != 1 {
		// One entry without an output file gives one file; anything else
		// means the code imported something that is not JavaScript (CSS).
		paths := make([]string, 0, len(result.OutputFiles))
		for _, f := range result.OutputFiles {
			paths = append(paths, f.Path)
		}
		return Bundle{}, &BundleError{Entry: entry, Problems: []string{
			fmt.Sprintf("bundling gave %d output files (%s), want one JavaScript module", len(paths), strings.Join(paths, ", ")),
		}}
	}
	return Bundle{Source: result.OutputFiles[0].Contents, Entry: entry, metafile: result.Metafile}, nil
}

// problem formats one esbuild message as "file:line:col: text", the column
// counted from 1 like the line.
func problem(msg api.Message) string {
	loc := msg.Location
	if loc == nil {
		return msg.Text
	}
	file := loc.File
	if loc.Namespace != "" && loc.Namespace != "file" {
		file = loc.Namespace + ":" + file
	}
	return fmt.Sprintf("%s:%d:%d: %s", file, loc.Line, loc.Column+1, msg.Text)
}
