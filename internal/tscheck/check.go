package tscheck

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/wasmgate/wasmgate/internal/confine"
)

// toolscriptDecl is the declaration file that, when given, is where the
// module specifier "toolscript" resolves (compilerOptions.paths).
const toolscriptDecl = "toolscript.d.ts"

// tsconfig is the part of a tsconfig.json that Check writes.
type tsconfig struct {
	CompilerOptions compilerOptions `json:"compilerOptions"`
	Files           []string        `json:"files"`
}

// compilerOptions are the options every Check runs under. TypeScript 7 takes
// paths only from a tsconfig (there is no flag), and resolves a target that
// is an absolute path without baseUrl (which TypeScript 7 removed); so all
// options are in the file, and the command line only adds output format.
//
// libReplacement is false, as TypeScript 7's default, but said: with it the
// standard library would come from @typescript/lib-* packages in the
// node_modules above the configuration's directory, a temporary directory
// any local user can write above.
type compilerOptions struct {
	Strict                       bool                `json:"strict"`
	NoEmit                       bool                `json:"noEmit"`
	Target                       string              `json:"target"`
	Lib                          []string            `json:"lib,omitempty"`
	NoLib                        bool                `json:"noLib,omitempty"`
	LibReplacement               bool                `json:"libReplacement"`
	Module                       string              `json:"module"`
	ModuleDetection              string              `json:"moduleDetection"`
	ModuleResolution             string              `json:"moduleResolution"`
	Types                        []string            `json:"types"`
	SkipLibCheck                 bool                `json:"skipLibCheck"`
	AllowJS                      bool                `json:"allowJs"`
	CheckJS                      bool                `json:"checkJs"`
	NoUncheckedSideEffectImports bool                `json:"noUncheckedSideEffectImports"`
	AllowImportingTSExtensions   bool                `json:"allowImportingTsExtensions"`
	Paths                        map[string][]string `json:"paths,omitempty"`
}

// Check type-checks script (a .ts/.mts/.js file path; relative imports
// resolve from its directory) together with the declaration files decls
// (file name → content, e.g. "toolscript.d.ts" declaring `declare module
// "toolscript" {...}` or a module file mapped by paths, and
// "wasmgate-env.d.ts" with globals), under strict options and the ES2023
// standard library only (no DOM, no @types/node).
//
// It writes the decls and a tsconfig.json into a fresh temporary directory,
// runs the compiler with --noEmit and --pretty false, parses its output, and
// returns every error. The options are strict, noEmit, target ES2023, lib
// ["ES2023"], module ESNext, moduleDetection force (every script is a
// module, imports or not), moduleResolution bundler, types [],
// skipLibCheck, allowJs, checkJs false, noUncheckedSideEffectImports false,
// allowImportingTsExtensions, and paths {"toolscript": [the toolscript.d.ts
// written]} when decls holds toolscript.d.ts. The compiler reports syntax
// errors alone when there are any: type errors come once the script parses.
//
// No diagnostics and a nil error mean the script type-checks. A diagnostic
// names the script as the caller gave it, a declaration file by its name in
// decls, and a file the script imports by its path joined to the script's
// directory as given.
//
// Before the check, the compiler lists the files the check would read
// (--listFilesOnly): a file outside the script's tree makes a *TreeError,
// and the check does not run. The listing and the check together run under
// c's time bound, each under its memory bound.
//
// # Errors
//
// An error (not diagnostics) when the compiler cannot run: it cannot be
// fetched (Ensure), the script is not a readable file, a name in decls is not
// a plain file name ending in .ts, or the compiler's output is not the
// diagnostics it prints. A *TreeError when the script reaches outside its
// tree. An error matching ErrTimeBound or ErrMemoryBound when a bound stopped
// the compiler.
func (c Checker) Check(ctx context.Context, script string, decls map[string][]byte) ([]Diagnostic, error) {
	abs, err := filepath.Abs(script)
	if err != nil {
		return nil, fmt.Errorf("tscheck: script %q: %w", script, err)
	}
	if info, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("tscheck: script: %w", err)
	} else if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("tscheck: script %q is not a regular file", script)
	}
	tree, err := confine.Entry(abs)
	if err != nil {
		return nil, fmt.Errorf("tscheck: script: %w", err)
	}
	return c.check(ctx, script, abs, tree, decls)
}

// CheckText is Check for a script given as text, not as a file (Code
// Mode's run_script): name is a plain file name (script.ts) that
// diagnostics call it by. The script has no tree: it is written alone into
// a fresh directory, and any file it would make the compiler read beyond
// the declarations and the standard library is a *TreeError.
//
// # Errors
//
// As Check's, and an error for a name that is not a plain file name.
func (c Checker) CheckText(ctx context.Context, name, source string, decls map[string][]byte) ([]Diagnostic, error) {
	if err := checkDeclName(name); err != nil || strings.HasSuffix(name, ".d.ts") {
		return nil, fmt.Errorf("tscheck: script name %q: want a plain file name ending in .ts, .mts or .cts", name)
	}
	dir, err := os.MkdirTemp("", "wasmgate-script-")
	if err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, []byte(source), 0o600); err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}
	return c.check(ctx, name, file, confine.Text(file), decls)
}

// check checks the script at abs, named script in diagnostics, whose
// imports must stay in tree.
func (c Checker) check(ctx context.Context, script, abs string, tree confine.Tree, decls map[string][]byte) ([]Diagnostic, error) {
	names := make([]string, 0, len(decls))
	for name := range decls {
		if err := checkDeclName(name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	slices.Sort(names)

	bin, err := c.Ensure(ctx)
	if err != nil {
		return nil, err
	}

	work, err := os.MkdirTemp("", "wasmgate-tscheck-")
	if err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}
	defer os.RemoveAll(work)
	// The compiler prints paths relative to its working directory after
	// resolving links; resolving them here too (macOS's /var is a link)
	// keeps the mapping back to names exact.
	if work, err = filepath.EvalSymlinks(work); err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}

	config := tsconfig{
		CompilerOptions: compilerOptions{
			Strict: true,
			NoEmit: true,
			Target: "ES2023",
			Lib:    []string{"ES2023"},
			Module: "ESNext",
			// A toolscript is a module whether or not it imports or
			// exports anything, as the engine runs it (and as Deno
			// does): top-level await needs no `export {}`.
			ModuleDetection:              "force",
			ModuleResolution:             "bundler",
			Types:                        []string{},
			SkipLibCheck:                 true,
			AllowJS:                      true,
			CheckJS:                      false,
			NoUncheckedSideEffectImports: false,
			AllowImportingTSExtensions:   true,
		},
		Files: []string{abs},
	}
	for _, name := range names {
		file := filepath.Join(work, name)
		if err := os.WriteFile(file, decls[name], 0o644); err != nil {
			return nil, fmt.Errorf("tscheck: %w", err)
		}
		config.Files = append(config.Files, file)
		if name == toolscriptDecl {
			config.CompilerOptions.Paths = map[string][]string{"toolscript": {file}}
		}
	}
	configJSON, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}
	configFile := filepath.Join(work, "tsconfig.json")
	if err := os.WriteFile(configFile, configJSON, 0o644); err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}
	// The listing needs the script's files, not the standard library:
	// without it (noLib) the compiler lists in a quarter of the time (about
	// 11 ms against 45), and the library comes from the compiler's own
	// directory only (libReplacement false).
	listing := config
	listing.CompilerOptions.Lib, listing.CompilerOptions.NoLib = nil, true
	listingJSON, err := json.MarshalIndent(listing, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}
	listingFile := filepath.Join(work, "tsconfig.listing.json")
	if err := os.WriteFile(listingFile, listingJSON, 0o644); err != nil {
		return nil, fmt.Errorf("tscheck: %w", err)
	}

	names = append(names, "tsconfig.json", "tsconfig.listing.json")
	files := newFileNames(script, abs, work, names)

	// --singleThreaded: on a script this small, the compiler's parallel
	// parsing and checking costs more than it saves (BenchmarkCheck50Lines:
	// about 31 ms a Check without it, 26 ms with, on a 2-core machine).
	common := []string{"--pretty", "false", "--singleThreaded"}

	// What the check would read is the compiler's own list, not a scan of
	// the sources: a scanner would have to know every form that makes the
	// compiler read a file (import, import type, typeof import("…"),
	// /// <reference path> and types, JSDoc @import in JavaScript, a
	// package.json's types and typesVersions, export conditions) and follow
	// them across files by TypeScript's resolution rules, while the list is
	// exact by construction. Listing parses the files but checks nothing and
	// prints no diagnostic about them, so no content reaches anyone; it
	// runs under the same bounds. It costs a second start of the compiler.
	b := c.bounds(time.Now()) // after Ensure: a first download is not the check's time
	listed, _, _, err := run(ctx, b, script, bin, work, append([]string{"--project", listingFile, "--listFilesOnly", "--explainFiles"}, common...)...)
	if err != nil {
		return nil, err
	}
	if problems := outsideTree(string(listed), tree, files, filepath.Dir(bin)); len(problems) > 0 {
		return nil, &TreeError{Script: script, Problems: problems}
	}

	stdout, stderr, code, err := run(ctx, b, script, bin, work, append([]string{"--project", configFile, "--noEmit"}, common...)...)
	if err != nil {
		return nil, err
	}
	diags, err := parseDiagnostics(string(stdout), files.name)
	if err != nil {
		return nil, fmt.Errorf("tscheck: %w (%s)", err, compilerOutput(stdout, stderr))
	}
	// The compiler exits 1 (or 2) when it reports diagnostics and 0 when
	// there are none; anything else is the compiler failing.
	switch {
	case code == 0 && len(diags) == 0, (code == 1 || code == 2) && len(diags) > 0:
		return diags, nil
	default:
		return nil, fmt.Errorf("tscheck: the compiler exited with status %d and %d diagnostics (%s)", code, len(diags), compilerOutput(stdout, stderr))
	}
}

// bounds are c's bounds for a Check that begins at start.
func (c Checker) bounds(start time.Time) bounds {
	b := bounds{timeout: c.Timeout, maxMemory: c.MaxMemory}
	if b.timeout <= 0 {
		b.timeout = DefaultTimeout
	}
	if b.maxMemory <= 0 {
		b.maxMemory = DefaultMaxMemory
	}
	b.deadline = start.Add(b.timeout)
	return b
}

// explanation is the first line under a listed file that says which import
// brought it in (--explainFiles): `Imported via "SPEC" from file 'FILE'`,
// `Referenced via 'SPEC' from file 'FILE'`, `Type library referenced via
// 'SPEC' from file 'FILE'`, each perhaps followed by more.
var explanation = regexp.MustCompile(`^\s+(?:Imported|Referenced|Type library referenced) via (?:"([^"]*)"|'([^']*)') from file '(.*?)'`)

// outsideTree reads the compiler's --listFilesOnly --explainFiles output
// and returns a problem for each listed file that is neither in tree, nor
// one of the files in work (the declarations), nor the compiler's own
// standard library in libDir. A file is a line that is not indented and
// not a diagnostic; the indented lines under it say why it is read, which
// names the import in the problem when it can.
func outsideTree(listing string, tree confine.Tree, files fileNames, libDir string) []string {
	if real, err := filepath.EvalSymlinks(libDir); err == nil {
		libDir = real
	}
	base := filepath.Dir(files.script)
	var problems []string
	lines := strings.Split(listing, "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, "\r")
		if line == "" || strings.HasPrefix(line, " ") || locatedLine.MatchString(line) || globalLine.MatchString(line) {
			continue
		}
		file := filepath.FromSlash(line)
		if !filepath.IsAbs(file) {
			file = filepath.Join(files.work, file)
		}
		file = filepath.Clean(file)
		if filepath.Dir(file) == files.work && files.decls[filepath.Base(file)] {
			continue
		}
		resolved, ok := tree.Contains(file)
		if ok {
			continue
		}
		name := filepath.Base(resolved)
		if filepath.Dir(resolved) == libDir && strings.HasPrefix(name, "lib.") && strings.HasSuffix(name, ".d.ts") {
			continue
		}
		// Named by the import that brought it in, when the compiler says.
		importer, specifier := files.script, files.name(line)
		for _, why := range lines[i+1:] {
			if !strings.HasPrefix(why, " ") {
				break
			}
			if m := explanation.FindStringSubmatch(why); m != nil {
				importer, specifier = files.name(m[3]), m[1]+m[2]
				break
			}
		}
		problems = append(problems, importer+": "+tree.Refusal("script", specifier, resolved, base))
	}
	return problems
}

// checkDeclName refuses a decls name that is not a plain .ts file name in the
// directory Check writes.
func checkDeclName(name string) error {
	switch {
	case name == "" || name != filepath.Base(name) || !filepath.IsLocal(name) || strings.ContainsAny(name, `/\`):
		return fmt.Errorf("tscheck: declaration file name %q is not a plain file name", name)
	case !strings.HasSuffix(name, ".ts") && !strings.HasSuffix(name, ".mts") && !strings.HasSuffix(name, ".cts"):
		return fmt.Errorf("tscheck: declaration file name %q does not end in .d.ts (or .ts, .mts, .cts)", name)
	}
	return nil
}

// compilerOutput is what the compiler printed, for an error message.
func compilerOutput(stdout, stderr []byte) string {
	out := strings.TrimSpace(string(stdout) + "\n" + string(stderr))
	if out == "" {
		return "it printed nothing"
	}
	const max = 2000
	if len(out) > max {
		out = out[:max] + "…"
	}
	return "it printed: " + out
}

// fileNames maps the paths the compiler prints to the names a caller knows.
type fileNames struct {
	script     string            // the script as the caller gave it
	scriptPath map[string]bool   // the script's absolute path, before and after resolving links
	scriptDirs map[string]string // the script's directory (absolute, and resolved) → as the caller gave it
	work       string            // the directory holding decls, links resolved
	decls      map[string]bool   // the names written in work
}

// newFileNames is the mapping for a Check of script (at abs) with the files
// names written into work.
func newFileNames(script, abs, work string, names []string) fileNames {
	f := fileNames{
		script:     script,
		scriptPath: map[string]bool{abs: true},
		scriptDirs: map[string]string{filepath.Dir(abs): filepath.Dir(script)},
		work:       work,
		decls:      map[string]bool{},
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		f.scriptPath[real] = true
	}
	if real, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		f.scriptDirs[real] = filepath.Dir(script)
	}
	for _, name := range names {
		f.decls[name] = true
	}
	return f
}

// name is how a diagnostic names the file the compiler printed as printed
// (relative to work, or absolute): the script as given, a declaration file
// by its name, a file under the script's directory joined to that directory
// as given, anything else by its absolute path.
func (f fileNames) name(printed string) string {
	file := filepath.FromSlash(printed)
	if !filepath.IsAbs(file) {
		file = filepath.Join(f.work, file)
	}
	file = filepath.Clean(file)
	if f.scriptPath[file] {
		return f.script
	}
	if filepath.Dir(file) == f.work && f.decls[filepath.Base(file)] {
		return filepath.Base(file)
	}
	for dir, given := range f.scriptDirs {
		if rel, err := filepath.Rel(dir, file); err == nil && filepath.IsLocal(rel) {
			return filepath.Join(given, rel)
		}
	}
	return file
}

var (
	// locatedLine starts a diagnostic about a place in a file, as the
	// compiler prints it with --pretty false: FILE(LINE,COL): error TSCODE: MESSAGE.
	locatedLine = regexp.MustCompile(`^(.+?)\(([0-9]+),([0-9]+)\): (error|warning|message) TS([0-9]+): (.*)$`)
	// globalLine starts a diagnostic about no file (options, a missing
	// root file): error TSCODE: MESSAGE.
	globalLine = regexp.MustCompile(`^(error|warning|message) TS([0-9]+): (.*)$`)
)

// parseDiagnostics reads the errors in the compiler's --pretty false output,
// naming files through name. A line indented by two spaces continues the
// message before it (a chain of reasons, each level two spaces deeper);
// warnings and messages are not errors and are left out. Any other line is
// an error: the output is not what this parser knows.
func parseDiagnostics(out string, name func(string) string) ([]Diagnostic, error) {
	var diags []Diagnostic
	current := -1 // index in diags of the diagnostic continuation lines extend, -1 for none
	skipping := false
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "  "):
			if skipping {
				continue
			}
			if current < 0 {
				return nil, fmt.Errorf("the compiler's output continues a diagnostic before the first one: %q", line)
			}
			diags[current].Message += "\n" + line
			continue
		}
		var d Diagnostic
		var category string
		if m := locatedLine.FindStringSubmatch(line); m != nil {
			category = m[4]
			d.File = name(m[1])
			d.Line, _ = strconv.Atoi(m[2])
			d.Column, _ = strconv.Atoi(m[3])
			d.Code, _ = strconv.Atoi(m[5])
			d.Message = m[6]
		} else if m := globalLine.FindStringSubmatch(line); m != nil {
			category = m[1]
			d.Code, _ = strconv.Atoi(m[2])
			d.Message = m[3]
		} else {
			return nil, fmt.Errorf("the compiler's output has a line that is not a diagnostic: %q", line)
		}
		skipping = category != "error"
		if skipping {
			continue
		}
		diags = append(diags, d)
		current = len(diags) - 1
	}
	return diags, nil
}
