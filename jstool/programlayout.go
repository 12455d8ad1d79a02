package jstool

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/wasmgate/wasmgate/internal/confine"
)

// A program's files, as the program sees them. Node shows a program where
// it lives (__dirname, __filename, import.meta.url, require.main.filename,
// process.argv[1], process.cwd()); wasmgate shows it the same tree at a fixed
// virtual place instead, so that nothing of the host's layout (a home
// directory, a server's paths) reaches the program, and so that a program
// prints the same paths wherever it is installed and run from.

// ProgramRoot is the virtual directory a program's tree is at: its root
// (the nearest directory up from the entry holding package.json, else the
// entry's own) is ProgramRoot, and every file of the tree is at its path
// below it. It is also the program's process.cwd().
const ProgramRoot = "/app"

// programLayout maps one program's host files to their virtual paths and
// decides each module's format as node does.
type programLayout struct {
	// plain: files are loaded as they are, untransformed (so that a
	// build's errors are placed in the files as written).
	plain bool
	tree  confine.Tree
	root  string // the tree's root on the host, links resolved
	entry string // the entry file on the host, links resolved

	mu    sync.Mutex
	types map[string]string // directory → "type" of the package.json governing it
	// What the program finds of its tree at run time (programfiles.go):
	// the host files the build read as modules, those to embed besides
	// their package.json files, the created requires by module, and the
	// built-ins required by a name the bundler did not see.
	loaded   map[string]bool
	named    map[string]bool
	requires map[string]createdRequire
	builtins []string
}

func newProgramLayout(abs string, tree confine.Tree) (*programLayout, error) {
	entry, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("cannot bundle %s: %w", abs, err)
	}
	root := tree.Root()
	if root == "" {
		// A program in the file system's root directory: its tree holds
		// nothing but the entry, which is then ProgramRoot's file.
		root = filepath.Dir(entry)
	}
	return &programLayout{tree: tree, root: root, entry: entry, types: map[string]string{},
		loaded: map[string]bool{}, named: map[string]bool{}, requires: map[string]createdRequire{}}, nil
}

// virtual is the path the program sees for the host file p (absolute). A
// file in an ancestor's node_modules is at that node_modules below the
// virtual root's parent, "/" at most.
func (l *programLayout) virtual(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	rel, err := filepath.Rel(l.root, p)
	if err != nil {
		return path.Join(ProgramRoot, filepath.Base(p))
	}
	return path.Join(ProgramRoot, filepath.ToSlash(rel))
}

// Main is the entry's virtual path: its __filename, import.meta.filename,
// and what process.argv[1] should be.
func (l *programLayout) main() string { return l.virtual(l.entry) }

// fileURL is Node's url.pathToFileURL(p).href for an absolute POSIX path:
// the characters a URL path may not hold raw, and "%", "\\" and the
// newline, carriage return and tab that pathToFileURL escapes, percent-encoded.
func fileURL(p string) string {
	var b strings.Builder
	b.WriteString("file://")
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c <= 0x20 || c >= 0x7f || strings.IndexByte("\"#%<>?`{}\\", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// packageType is the "type" of the package.json nearest up from dir inside
// the tree ("" when none says): what node reads to tell a .js file's format.
// Only package.json files of the tree are read.
func (l *programLayout) packageType(dir string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var seen []string
	t := ""
	for d := dir; ; d = filepath.Dir(d) {
		if cached, ok := l.types[d]; ok {
			t = cached
			break
		}
		seen = append(seen, d)
		file := filepath.Join(d, "package.json")
		if _, inside := l.tree.Contains(file); inside {
			if raw, err := os.ReadFile(file); err == nil {
				var pkg struct {
					Type string `json:"type"`
				}
				// A package.json node cannot parse stops node too; here it
				// says nothing about the format.
				_ = json.Unmarshal(raw, &pkg)
				t = pkg.Type
				if t == "" {
					t = "commonjs-default"
				}
				break
			}
		}
		if _, inside := l.tree.Contains(d); !inside || filepath.Dir(d) == d {
			break
		}
	}
	for _, d := range seen {
		l.types[d] = t
	}
	return t
}

// Markers: what the per-module transform replaces the module-specific names
// with, to be swapped for their values once the module's format is known.
const (
	markDirname  = "__wasmgate_dirname__"
	markFilename = "__wasmgate_filename__"
	markMeta     = "__wasmgate_meta__"
	markMetaURL  = "__wasmgate_meta_url__"
	markMetaDir  = "__wasmgate_meta_dirname__"
	markMetaFile = "__wasmgate_meta_filename__"
)

// moduleMarkers: import.meta itself is marked too, so that the format is
// told by the code's import.meta and not by the words in a string
// ("'import.meta' cannot be used outside of module code", in a parser).
var moduleMarkers = map[string]string{
	"__dirname":            markDirname,
	"__filename":           markFilename,
	"import.meta":          markMeta,
	"import.meta.url":      markMetaURL,
	"import.meta.dirname":  markMetaDir,
	"import.meta.filename": markMetaFile,
}

// commonJSNames are CommonJS's own names, which an ES module does not have
// in node ("typeof require" is "undefined" there) but esbuild gives every
// module: in an ES module that asks their type, the answer is node's.
var commonJSNames = map[string]string{
	"require": "__wasmgate_require__",
	"module":  "__wasmgate_module__",
	"exports": "__wasmgate_exports__",
}

// asksCommonJSType finds code that asks the type of a CommonJS name.
var asksCommonJSType = regexp.MustCompile(`typeof\s*\(?\s*(?:require|module|exports)\b`)

// esmSyntax finds what makes node 20 run a file of unknown format as an ES
// module: import or export statements, import.meta, a top-level await. It
// reads esbuild's printed output, where top-level statements start their
// line and nested ones are indented.
var esmSyntax = regexp.MustCompile(`(?m)^(?:import[\s{*"']|export[\s{*]|await\s|for await\s*\(|(?:const|let|var)\s[^\n]*=\s*await\s)|` + markMeta + `|` + markMetaURL + `|` + markMetaDir + `|` + markMetaFile)

// namesRequireResolve finds code that may call require.resolve.
var namesRequireResolve = regexp.MustCompile(`\brequire\s*\.\s*resolve\b`)

// directive is one line of a directive prologue as esbuild prints it.
var directive = regexp.MustCompile(`^(?:"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*');?$`)

// load is the OnLoad of a program's files: it gives a file whose extension
// esbuild does not know (a bin without one, "cli.run") to it as
// JavaScript, as node runs it; and it gives each module that names them its
// own __dirname and __filename (CommonJS) or import.meta.url, dirname and
// filename (ES modules), virtual paths. The entry, when it is CommonJS,
// also becomes require.main. A require.resolve of a literal becomes the
// path node would give, and a require made by module.createRequire finds
// what it names (programfiles.go). A file outside the tree is left to the
// confinement, which refuses it.
func (l *programLayout) load(b api.PluginBuild, args api.OnLoadArgs) (api.OnLoadResult, error) {
	real, inside := l.tree.Contains(args.Path)
	if !inside {
		return api.OnLoadResult{}, nil
	}
	l.noteLoaded(real)
	ext := filepath.Ext(args.Path)
	loader, known := bundleExtensions[ext]
	switch {
	case ext == ".node":
		// A native addon cannot run in the engine: requiring one throws,
		// as a failed dlopen does in node, and code that falls back to
		// JavaScript in a catch goes on.
		src := "throw Object.assign(new Error(" + jsString("Cannot load native addon "+l.virtual(real)+": wasmgate runs JavaScript only") + "), { code: \"ERR_DLOPEN_FAILED\" });\nmodule.exports = {};\n"
		return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS}, nil
	case !known && slices.Contains([]string{".json", ".jsx", ".tsx", ".txt", ".css"}, ext):
		return api.OnLoadResult{}, nil
	case !known:
		loader = api.LoaderJS
	}
	isEntry := real == l.entry
	if l.plain && known {
		return api.OnLoadResult{}, nil
	}
	raw, err := os.ReadFile(args.Path)
	if err != nil {
		return api.OnLoadResult{}, err
	}
	src := string(raw)
	names := false
	for name := range moduleMarkers {
		if strings.Contains(src, name) {
			names = true
			break
		}
	}
	asksType := asksCommonJSType.MatchString(src)
	resolves := namesRequireResolve.MatchString(src)
	creates := strings.Contains(src, "reateRequire")
	if l.plain || (!names && !asksType && !isEntry && !resolves && !creates) {
		if known {
			return api.OnLoadResult{}, nil
		}
		return api.OnLoadResult{Contents: &src, Loader: loader}, nil
	}
	define := moduleMarkers
	if asksType {
		define = maps.Clone(moduleMarkers)
		maps.Copy(define, commonJSNames)
	}
	res := api.Transform(src, api.TransformOptions{
		Loader:      loader,
		Sourcefile:  args.Path,
		TsconfigRaw: "{}",
		LogLevel:    api.LogLevelSilent,
		Define:      define,
		// The transform renames a function expression that shares its
		// variable's name ("const f = function f() {}"); fn.name must not
		// change.
		KeepNames: true,
	})
	if len(res.Errors) > 0 {
		// esbuild reads it again and reports the problem, placed.
		return api.OnLoadResult{Contents: &src, Loader: loader}, nil
	}
	code := string(res.Code)
	esm := l.isESM(real, code)
	file := l.virtual(real)
	dir := path.Dir(file)
	values := map[string]string{
		markMetaURL:  jsString(fileURL(file)),
		markMetaDir:  jsString(dir),
		markMetaFile: jsString(file),
	}
	if esm {
		// An ES module has no __dirname: node throws a ReferenceError.
		values[markDirname], values[markFilename] = "__dirname", "__filename"
	} else {
		values[markDirname], values[markFilename] = jsString(dir), jsString(file)
	}
	for marker, value := range values {
		code = strings.ReplaceAll(code, marker, value)
	}
	for name, marker := range commonJSNames {
		if esm {
			code = strings.ReplaceAll(code, "typeof "+marker, `"undefined"`)
		}
		code = strings.ReplaceAll(code, marker, name)
	}
	// A created require is read before require.resolve calls become
	// paths: its own resolve() names what it bundles by specifier.
	if creates {
		if code, err = l.createRequires(b, real, code, esm); err != nil {
			return api.OnLoadResult{}, err
		}
	}
	if resolves {
		if code, err = l.resolveCalls(b, real, code); err != nil {
			return api.OnLoadResult{}, err
		}
	}
	if isEntry && !esm {
		code = enterMain(code)
	}
	return api.OnLoadResult{Contents: &code, Loader: api.LoaderJS}, nil
}

// isESM tells a module's format as node 20 does: .mjs and .mts are ES
// modules, .cjs and .cts CommonJS; any other file is what the nearest
// package.json's "type" says, and without one, an ES module when its
// syntax is one (node 20's detection).
func (l *programLayout) isESM(real, code string) bool {
	switch filepath.Ext(real) {
	case ".mjs", ".mts":
		return true
	case ".cjs", ".cts":
		return false
	}
	switch l.packageType(filepath.Dir(real)) {
	case "module":
		return true
	case "commonjs":
		return false
	}
	return esmSyntax.MatchString(code)
}

// enterMain makes a CommonJS entry's module require.main: the call goes
// after the hashbang and the directive prologue ("use strict" must stay
// first to keep its meaning), before any code of the module.
func enterMain(code string) string {
	return prependStatement(code, "require(\"wasmgate:internal/program\").enter(module);\n")
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return strconv.Quote(s)
	}
	return string(b)
}

// programNamespace holds a program's generated modules: its setup, and
// the modules that stand for what the tree does not have.
const programNamespace = "wasmgate-program"

// missingMarker is the PluginData of the missing-modules plugin's own
// resolutions (build.Resolve runs every plugin again).
type missingMarker struct{}

// missingImport is what an import that the tree does not have becomes.
type missingImport struct {
	specifier, importer string // the importer's virtual path
}

// plugin is the program's plugin: its setup module (which the bundle's
// entry imports first), its files' loading (load), and, for the
// specifiers in missing, what a require() or import() of one that does not
// resolve becomes: a require() an external call that throws node's
// MODULE_NOT_FOUND when (if ever) it runs, an import() a module that
// rejects with ERR_MODULE_NOT_FOUND. A static import of a missing module
// still fails the bundle: node fails such a program before it starts.
func (l *programLayout) plugin(missing []string) api.Plugin {
	return api.Plugin{
		Name: "wasmgate-program",
		Setup: func(b api.PluginBuild) {
			b.OnResolve(api.OnResolveOptions{Filter: `^wasmgate-program:setup$`}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
				return api.OnResolveResult{Path: "setup", Namespace: programNamespace}, nil
			})
			b.OnResolve(api.OnResolveOptions{Filter: "^" + requiresNamespace + ":"}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
				return api.OnResolveResult{Path: strings.TrimPrefix(args.Path, requiresNamespace+":"), Namespace: requiresNamespace}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: requiresNamespace}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				src, dir, err := l.requiresSource(args.Path)
				if err != nil {
					return api.OnLoadResult{}, err
				}
				return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS, ResolveDir: dir}, nil
			})
			if len(missing) > 0 {
				quoted := make([]string, len(missing))
				for i, m := range missing {
					quoted[i] = regexp.QuoteMeta(m)
				}
				b.OnResolve(api.OnResolveOptions{Filter: "^(?:" + strings.Join(quoted, "|") + ")$"}, func(args api.OnResolveArgs) (api.OnResolveResult, error) {
					if _, ours := args.PluginData.(missingMarker); ours || args.Namespace != "file" {
						return api.OnResolveResult{}, nil
					}
					if args.Kind != api.ResolveJSRequireCall && args.Kind != api.ResolveJSRequireResolve && args.Kind != api.ResolveJSDynamicImport {
						return api.OnResolveResult{}, nil
					}
					r := b.Resolve(args.Path, api.ResolveOptions{
						Importer: args.Importer, Namespace: args.Namespace, ResolveDir: args.ResolveDir,
						Kind: args.Kind, PluginData: missingMarker{}, With: args.With,
					})
					if len(r.Errors) == 0 {
						return api.OnResolveResult{}, nil
					}
					importer := l.virtual(args.Importer)
					if args.Kind == api.ResolveJSDynamicImport {
						return api.OnResolveResult{Path: args.Path, Namespace: programNamespace,
							PluginData: missingImport{specifier: args.Path, importer: importer}}, nil
					}
					// The runtime's require (wasmgate:internal/program) reads
					// the importer after the NUL, for node's require stack.
					return api.OnResolveResult{Path: args.Path + "\x00" + importer, External: true}, nil
				})
			}
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: programNamespace}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				if m, ok := args.PluginData.(missingImport); ok {
					src := missingModule(m)
					return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS}, nil
				}
				setup, err := json.Marshal(map[string]any{"cwd": ProgramRoot, "main": l.main(), "esm": l.entryESM()})
				if err != nil {
					return api.OnLoadResult{}, err
				}
				// The files are put in once the build is done (embedFiles).
				src := "require(\"wasmgate:internal/program\").setup(" + string(setup) + ", " + builtinsSource(l.builtins) + ", " + programFilesMarker + ");\n"
				return api.OnLoadResult{Contents: &src, Loader: api.LoaderJS, ResolveDir: l.root}, nil
			})
			b.OnLoad(api.OnLoadOptions{Filter: ".*", Namespace: "file"}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				return l.load(b, args)
			})
		},
	}
}

// entryESM is the entry's format (see isESM).
func (l *programLayout) entryESM() bool {
	raw, err := os.ReadFile(l.entry)
	if err != nil {
		return false
	}
	loader, ok := bundleExtensions[filepath.Ext(l.entry)]
	if !ok {
		loader = api.LoaderJS
	}
	res := api.Transform(string(raw), api.TransformOptions{Loader: loader, TsconfigRaw: "{}", LogLevel: api.LogLevelSilent})
	return l.isESM(l.entry, string(res.Code))
}

// missingModule is the ES module an import() of a missing module loads:
// it throws node's error, so the import() rejects with it.
func missingModule(m missingImport) string {
	var msg string
	switch {
	case strings.HasPrefix(m.specifier, "/"):
		msg = "Cannot find module '" + m.specifier + "' imported from " + m.importer
	case strings.HasPrefix(m.specifier, "./"), strings.HasPrefix(m.specifier, "../"), m.specifier == ".", m.specifier == "..":
		msg = "Cannot find module '" + path.Join(path.Dir(m.importer), m.specifier) + "' imported from " + m.importer
	default:
		name := m.specifier
		if parts := strings.SplitN(name, "/", 3); strings.HasPrefix(name, "@") && len(parts) >= 2 {
			name = parts[0] + "/" + parts[1]
		} else {
			name = parts[0]
		}
		msg = "Cannot find package '" + name + "' imported from " + m.importer
	}
	return "throw Object.assign(new Error(" + jsString(msg) + "), { code: \"ERR_MODULE_NOT_FOUND\" });\nexport {};\n"
}

// couldNotResolve finds the specifier in esbuild's message for an import
// that does not resolve.
var couldNotResolve = regexp.MustCompile(`Could not resolve ("(?:[^"\\]|\\.)*")`)

// missingSpecifiers are the specifiers of the imports a first build could
// not resolve: its errors, and the require() calls in a try block that
// esbuild left for the runtime (external in its metafile).
func missingSpecifiers(b Bundle, err error) []string {
	var found []string
	add := func(s string) {
		if !slices.Contains(found, s) {
			found = append(found, s)
		}
	}
	if be, ok := err.(*BundleError); ok {
		for _, p := range be.Problems {
			if m := couldNotResolve.FindStringSubmatch(p); m != nil {
				if s, err := strconv.Unquote(m[1]); err == nil {
					add(s)
				}
			}
		}
		return found
	}
	if b.metafile == "" {
		return nil
	}
	var meta struct {
		Inputs map[string]struct {
			Imports []struct {
				Path     string `json:"path"`
				Kind     string `json:"kind"`
				External bool   `json:"external"`
			} `json:"imports"`
		} `json:"inputs"`
	}
	if json.Unmarshal([]byte(b.metafile), &meta) != nil {
		return nil
	}
	for _, in := range meta.Inputs {
		for _, imp := range in.Imports {
			// A path with a NUL is one the program's plugin made external.
			if imp.External && !strings.Contains(imp.Path, "\x00") &&
				(imp.Kind == "require-call" || imp.Kind == "require-resolve" || imp.Kind == "dynamic-import") {
				add(imp.Path)
			}
		}
	}
	slices.Sort(found)
	return found
}
