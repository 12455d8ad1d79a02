package jstool

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/evanw/esbuild/pkg/api"
)

// What a program may find of its tree at run time, besides the modules
// bundled into it. Node programs read files of their own package (its
// package.json, for --version and for what they print) and load modules by
// a path known only when they run (require.resolve, a require made by
// module.createRequire, a built-in required by a name the bundler does not
// see). The bundle is the program's identity, so all of it is decided when
// the program is bundled, from the files bundling read, and travels in the
// bundle: nothing is read from the host once the program runs.
//
// - Files: the package.json of every directory, from each bundled module's
//   up to the tree's root, and every file a require.resolve of a literal
//   names, are embedded; fs reads them at their virtual paths (ProgramRoot).
//   Any other file is refused as node's permission model refuses a file it
//   was not granted.
// - Modules: a require() made by module.createRequire is bundled when its
//   specifier is a literal; at run time the require finds it by its
//   directory and specifier.
// - Built-ins: a require() of a built-in's name that the bundler could not
//   see as one ((cond ? x : require)("url")) finds the built-in when the
//   bundle holds it: BundleProgram adds to the bundle every built-in so
//   named in its code.

// programFilesMarker stands, in the bundle's setup module, for the files
// embedded in the bundle: it is replaced by their JSON once the build has
// shown which modules, and so which directories, the program has.
const programFilesMarker = "__wasmgate_program_files__"

// noteLoaded records a host file (links resolved) the build read as a module.
func (l *programLayout) noteLoaded(real string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.loaded[real] = true
}

// noteFile records a host file (links resolved) to embed.
func (l *programLayout) noteFile(real string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.named[real] = true
}

// embedded are the files the bundle carries, by virtual path, sorted: the
// package.json files of the directories from each loaded module's up to
// the top of the tree, and the files noted.
func (l *programLayout) embedded() ([]string, map[string]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	want := map[string]bool{}
	for f := range l.named {
		want[f] = true
	}
	seen := map[string]bool{}
	dirs := []string{l.root}
	for f := range l.loaded {
		dirs = append(dirs, filepath.Dir(f))
	}
	for _, d := range dirs {
		for ; !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			if _, inside := l.tree.Contains(d); !inside {
				break
			}
			file := filepath.Join(d, "package.json")
			if real, inside := l.tree.Contains(file); inside {
				if info, err := os.Stat(real); err == nil && info.Mode().IsRegular() {
					want[real] = true
				}
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	byPath := map[string]string{}
	for real := range want {
		byPath[l.virtual(real)] = real
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths, byPath, nil
}

// embedFiles puts the embedded files into the bundle's setup module, in
// place of programFilesMarker: a JSON object of the files' text by virtual
// path ("t"), and of the base64 of those that are not UTF-8 ("b").
func (l *programLayout) embedFiles(source []byte) ([]byte, error) {
	if n := bytes.Count(source, []byte(programFilesMarker)); n != 1 {
		return nil, fmt.Errorf("the program names %s, which wasmgate reserves for the files it embeds in a program's bundle: rename it", programFilesMarker)
	}
	paths, byPath, err := l.embedded()
	if err != nil {
		return nil, err
	}
	text, binary := map[string]string{}, map[string]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(byPath[p])
		if err != nil {
			return nil, fmt.Errorf("cannot embed %s in the program: %w", p, err)
		}
		if utf8.Valid(raw) {
			text[p] = string(raw)
		} else {
			binary[p] = base64.StdEncoding.EncodeToString(raw)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// encoding/json writes map keys sorted: the same tree gives the same
	// bytes, and so the same module digest.
	if err := enc.Encode(map[string]map[string]string{"t": text, "b": binary}); err != nil {
		return nil, err
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return bytes.Replace(source, []byte(programFilesMarker), data, 1), nil
}

// jsLiteral matches a string literal without escapes or substitutions,
// its text in the group that matched (1 to 3).
const jsLiteral = `(?:"([^"\\\n]*)"|'([^'\\\n]*)'|` + "`([^`\\\\$\\n]*)`)"

// literalText is the text of the literal that m (a match of a regexp
// built on jsLiteral, from group first) holds.
func literalText(code string, m []int, first int) (string, int, int) {
	for g := first; g < first+3; g++ {
		if m[2*g] >= 0 {
			return code[m[2*g]:m[2*g+1]], m[2*g] - 1, m[2*g+1] + 1
		}
	}
	return "", -1, -1
}

// requireResolveCall finds require.resolve of a literal with no options.
var requireResolveCall = regexp.MustCompile(`\brequire\s*\.\s*resolve\s*\(\s*` + jsLiteral + `\s*\)`)

// resolveCalls rewrites each require.resolve of a literal in code (the
// module real, transformed) as node would answer it: the file's virtual
// path, which is then embedded (programs resolve a file to read it); a
// built-in's name as it is; a specifier the tree lacks with its importer,
// for node's MODULE_NOT_FOUND with its require stack. A file outside the
// tree is refused, as an import of it is.
func (l *programLayout) resolveCalls(b api.PluginBuild, real, code string) (string, error) {
	var out strings.Builder
	last := 0
	for _, m := range requireResolveCall.FindAllStringSubmatchIndex(code, -1) {
		spec, start, end := literalText(code, m, 1)
		if start < 0 || IsNodeBuiltin(spec) {
			continue
		}
		r, err := l.resolveFrom(b, real, spec, api.ResolveJSRequireResolve)
		if err != nil {
			return "", err
		}
		value := spec + "\x00" + l.virtual(real)
		switch {
		case r == "":
		case strings.HasPrefix(r, "/"):
			value = r
		default:
			continue
		}
		out.WriteString(code[last:start])
		out.WriteString(jsString(value))
		last = end
	}
	if last == 0 {
		return code, nil
	}
	out.WriteString(code[last:])
	return out.String(), nil
}

// resolveFrom resolves spec as a require() in the host file real would:
// the virtual path of the file it names (noted for embedding when kind is
// a require.resolve), "" when nothing is there, or the path in another
// namespace (a built-in). A file outside the tree is refused.
func (l *programLayout) resolveFrom(b api.PluginBuild, real, spec string, kind api.ResolveKind) (string, error) {
	r := b.Resolve(spec, api.ResolveOptions{
		Importer: real, Namespace: "file", ResolveDir: filepath.Dir(real), Kind: kind, PluginData: missingMarker{},
	})
	if len(r.Errors) > 0 {
		return "", nil
	}
	if r.Namespace != "file" || r.External {
		return r.Namespace + ":" + r.Path, nil
	}
	file, inside := l.tree.Contains(r.Path)
	if !inside {
		return "", errors.New(l.tree.Refusal("program", spec, file, filepath.Dir(real)))
	}
	if kind == api.ResolveJSRequireResolve {
		l.noteFile(file)
	}
	return l.virtual(file), nil
}

// createRequireCall finds what module.createRequire makes, by the name it
// is given: const require = createRequire(import.meta.url), and the aliases
// bundlers give it (__prettierCreateRequire, module.createRequire).
var createRequireCall = regexp.MustCompile(`\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:[A-Za-z_$][\w$]*\s*\.\s*)?[A-Za-z_$]*[cC]reateRequire\s*\(`)

// requiresNamespace holds, for each module that calls what
// module.createRequire made, the module that bundles what those calls name
// (see createRequires).
const requiresNamespace = "wasmgate-program-requires"

// createdRequire is what one module's created require() calls name.
type createdRequire struct {
	real  string          // the module, on the host
	specs []string        // the specifiers, in the order first seen
	found map[string]bool // those that resolve
	paths map[string]string
}

// createRequires finds the literal specifiers that code (the module real,
// transformed) passes to a require function module.createRequire made,
// and, when there are any, imports from the module's first line a module
// that bundles them (requiresSource), so that the created require finds
// them when it runs. esm is the module's format.
func (l *programLayout) createRequires(b api.PluginBuild, real, code string, esm bool) (string, error) {
	var specs []string
	for _, m := range createRequireCall.FindAllStringSubmatch(code, -1) {
		name := regexp.QuoteMeta(m[1])
		calls := regexp.MustCompile(`(?:^|[^\w$.])` + name + `\s*(?:\.\s*resolve\s*)?\(\s*` + jsLiteral + `\s*\)`)
		for _, c := range calls.FindAllStringSubmatchIndex(code, -1) {
			if spec, start, _ := literalText(code, c, 1); start >= 0 && spec != "" && !slices.Contains(specs, spec) {
				specs = append(specs, spec)
			}
		}
	}
	if len(specs) == 0 {
		return code, nil
	}
	cr := createdRequire{real: real, specs: specs, found: map[string]bool{}, paths: map[string]string{}}
	for _, spec := range specs {
		if IsNodeBuiltin(spec) {
			cr.found[spec] = true
			continue
		}
		r, err := l.resolveFrom(b, real, spec, api.ResolveJSRequireCall)
		if err != nil {
			return "", err
		}
		if r != "" {
			cr.found[spec] = true
			if strings.HasPrefix(r, "/") {
				cr.paths[spec] = r
			}
		}
	}
	key := l.virtual(real)
	l.mu.Lock()
	l.requires[key] = cr
	l.mu.Unlock()
	specifier := requiresNamespace + ":" + key
	if esm {
		return prependStatement(code, "import "+jsString(specifier)+";\n"), nil
	}
	return prependStatement(code, "require("+jsString(specifier)+");\n"), nil
}

// requiresSource is the module that bundles what the module at virtual
// path key requires through module.createRequire, and registers each
// specifier with the directory it is resolved from: a function giving the
// module, and its path; or, for one that resolves nowhere, the importer,
// for node's MODULE_NOT_FOUND.
func (l *programLayout) requiresSource(key string) (string, string, error) {
	l.mu.Lock()
	cr, ok := l.requires[key]
	l.mu.Unlock()
	if !ok {
		return "", "", fmt.Errorf("no created require for %s", key)
	}
	var b strings.Builder
	b.WriteString("require(\"wasmgate:internal/program_tree\").register(" + jsString(path.Dir(key)) + ", {\n")
	for _, spec := range cr.specs {
		switch {
		case !cr.found[spec]:
			fmt.Fprintf(&b, "  %s: { importer: %s },\n", jsString(spec), jsString(key))
		case cr.paths[spec] != "":
			fmt.Fprintf(&b, "  %s: { path: %s, load: () => require(%s) },\n", jsString(spec), jsString(cr.paths[spec]), jsString(spec))
		default:
			fmt.Fprintf(&b, "  %s: { path: %s, load: () => require(%s) },\n", jsString(spec), jsString(spec), jsString(spec))
		}
	}
	b.WriteString("});\n")
	return b.String(), filepath.Dir(cr.real), nil
}

// prependStatement puts stmt before the first statement of code: after a
// hashbang and the directive prologue ("use strict" must stay first).
func prependStatement(code, stmt string) string {
	lines := strings.SplitAfter(code, "\n")
	i := 0
	for i < len(lines) {
		line := strings.TrimSpace(lines[i])
		if (i == 0 && strings.HasPrefix(line, "#!")) || line == "" || directive.MatchString(line) || strings.HasPrefix(line, "//") {
			i++
			continue
		}
		break
	}
	return strings.Join(lines[:i], "") + stmt + strings.Join(lines[i:], "")
}

// runtimeBuiltinCall finds a require() of a built-in by a literal name
// that the bundler left for the run time: called through another name or
// expression (self.require("url"), (webpack ? x : require)("url")). A
// require() the bundler saw is no longer a call of require in the bundle.
var runtimeBuiltinCall = regexp.MustCompile(`require\s*\)?\s*\(\s*["'](?:node:)?([a-z_]+(?:/[a-z_]+)?)["']\s*\)`)

// runtimeBuiltins are the built-ins that source requires by a literal name
// at run time (see runtimeBuiltinCall), sorted.
func runtimeBuiltins(source []byte) []string {
	var names []string
	for _, m := range runtimeBuiltinCall.FindAllSubmatch(source, -1) {
		name := string(m[1])
		if IsNodeBuiltin(name) && !(prefixOnly[name] && !bytes.Contains(m[0], []byte("node:"))) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// builtinsSource is the object that the setup module hands the program's
// require: a function giving each built-in in names.
func builtinsSource(names []string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, name := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: () => require(%s)", strconv.Quote(name), strconv.Quote("node:"+name))
	}
	b.WriteString("}")
	return b.String()
}
