package pipeline

import (
	"context"
	"errors"
	"os"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// ExecutorSource says where an executor's code comes from: exactly one of Wasm,
// Module, JS, Package and Bundle. It is also the shape of an executor entry in
// a registry file (where Module and Bundle cannot be given).
//
// Wasm and Module are loaded by the pipeline itself; every other field names
// code of an executor kind (see Kind) that the registry must be given: JS,
// Package and Bundle are the JavaScript kind's (package
// github.com/wasmgate/wasmgate/js).
type ExecutorSource struct {
	// Wasm is a Wasm module file.
	Wasm string `json:"wasm,omitempty"`
	// Module is a Wasm module's bytes, for executors given in Go rather
	// than as a file.
	Module []byte `json:"-"`
	// JS is a JavaScript or TypeScript file (.js .mjs .cjs .ts .mts .cts).
	JS string `json:"js,omitempty"`
	// Package is NAME@VERSION of an npm package in the tool store (added
	// with `wasmgate tools add`).
	Package string `json:"package,omitempty"`
	// Python is a Python file (.py): a module with a function
	// execute(input), or an executor class (Class). Its directory's modules
	// and packages, and PythonPath's, are what it can import.
	Python string `json:"python,omitempty"`
	// PythonPath are directories of pure-Python dependencies (a
	// site-packages) Python imports from, after the file's own directory.
	PythonPath []string `json:"python_path,omitempty"`
	// Class names the executor class in Python; empty: the module's
	// function execute, else its one class with executor_id and execute.
	Class string `json:"class,omitempty"`
	// Tool is the export that is the tool, for JS and Package: resolved
	// as pkg[tool], then pkg.default?.[tool], then pkg.default. Empty (JS
	// only) means the module itself when it exports execute, else its
	// default export.
	Tool string `json:"tool,omitempty"`
	// ToolsDir is the tool store for Package; empty means
	// jstool.DefaultStoreDir().
	ToolsDir string `json:"-"`
	// Bundle is a JS tool already bundled (js.Resolve, or fetched from
	// where a bundle was published), for executors given in Go. It needs
	// Manifest, and Tool selects its export as for JS.
	Bundle *Bundle `json:"-"`
	// Manifest is the manifest of Bundle, and only of Bundle.
	Manifest *sandbox.Manifest `json:"-"`
	// Limits are the limits the executor's calls will run under over its
	// manifest's, where the caller knows them when loading (a command's
	// flags, a registry's routes to it, a front's configuration): a JS
	// tool loads in the largest memory_pages they give
	// (jstool.Spec.CallLimits).
	Limits []sandbox.Limits `json:"-"`
	// Defaults are limits for where the manifest sets none, as a front's
	// configuration gives them (serve's and MCP's npm tools); a JS tool
	// loads in their memory_pages too when its manifest sets none.
	Defaults sandbox.Limits `json:"-"`
	// RaiseMemory names, for the message of a JS tool that runs out of
	// memory while loading, the setting by which whoever gave this source
	// raises its memory limit (a command's "--memory-pages"); empty: the
	// tool's manifest (its sidecar file, its package.json).
	RaiseMemory string `json:"-"`
}

// check reports a source that names no code, or more than one.
func (s ExecutorSource) check() error {
	n := 0
	for _, v := range []string{s.Wasm, s.JS, s.Package, s.Python} {
		if v != "" {
			n++
		}
	}
	if s.Module != nil {
		n++
	}
	if s.Bundle != nil {
		n++
	}
	switch {
	case n == 0:
		return errors.New(`names no code: set one of "wasm", "js", "package" or "python"`)
	case n > 1:
		return errors.New(`names more than one of "wasm", "js", "package" and "python"`)
	case s.Package != "" && s.Tool == "":
		return errors.New(`a "package" needs the "tool" export to run`)
	case (s.Wasm != "" || s.Module != nil) && s.Tool != "":
		return errors.New(`"tool" applies to JS tools and packages only`)
	case s.Bundle != nil && s.Manifest == nil:
		return errors.New("a JS bundle needs its manifest")
	case s.Bundle == nil && s.Manifest != nil:
		return errors.New("a manifest is given for JS bundles only")
	case s.Python != "" && s.Tool != "":
		return errors.New(`"tool" applies to JS tools and packages only; a Python executor class is named by "class"`)
	case s.Python == "" && (s.Class != "" || len(s.PythonPath) > 0):
		return errors.New(`"class" and "python_path" apply to Python executors ("python") only`)
	}
	return nil
}

// describe names the source in messages.
func (s ExecutorSource) describe() string {
	switch {
	case s.Wasm != "":
		return "module " + s.Wasm
	case s.Module != nil:
		return "the module given as bytes"
	case s.JS != "":
		return "JS tool " + s.JS
	case s.Bundle != nil:
		return "JS bundle " + s.Bundle.Entry
	case s.Python != "":
		return "Python executor " + s.Python
	}
	return "package " + s.Package
}

// errMissingCode is matched by the error of a source whose code is not
// there (a file that does not exist, a package not in the tool store):
// EXECUTOR_NOT_FOUND.
var errMissingCode = errors.New("executor code not found")

// missingCode wraps the error that says the code is not there.
type missingCode struct{ err error }

func (m missingCode) Error() string        { return m.err.Error() }
func (m missingCode) Unwrap() error        { return m.err }
func (m missingCode) Is(target error) bool { return target == errMissingCode }

// Bundle is an executor's code as its kind prepared it to be moved whole
// (for the JavaScript kind, a tool and everything it imports bundled into
// one ES module), for executors given in Go or fetched from where they were
// published.
type Bundle struct {
	// Source is the code.
	Source []byte
	// Entry names what was bundled (a file path, or name@version), for
	// messages.
	Entry string
}

// loadSource loads an executor from src: Wasm here, any other code by the
// kind in kinds that loads it. fallback is the manifest of code that
// carries none. The error is errMissingCode-wrapped when the code is
// missing, matches sandbox.ErrNotAdmitted when the code is refused
// (admission, bundling, a tool without its export), and ErrNoKind when no
// kind given loads it.
func loadSource(ctx context.Context, engine sandbox.Engine, src ExecutorSource, fallback sandbox.Manifest, kinds []Kind) (Executor, error) {
	if err := src.check(); err != nil {
		return nil, err
	}
	switch {
	case src.Wasm != "":
		wasm, err := os.ReadFile(src.Wasm)
		if errors.Is(err, os.ErrNotExist) {
			return nil, missingCode{err}
		}
		if err != nil {
			return nil, err
		}
		return LoadWasm(ctx, engine, wasm, fallback)
	case src.Module != nil:
		return LoadWasm(ctx, engine, src.Module, fallback)
	}
	k, err := kindOf(src, kinds)
	if err != nil {
		return nil, err
	}
	return k.Load(ctx, engine, src, fallback)
}

// notAdmitted is code that cannot be admitted as an executor (EXECUTOR_INVALID).
type notAdmitted struct{ err error }

func (r notAdmitted) Error() string { return r.err.Error() }
func (r notAdmitted) Unwrap() error { return r.err }
func (r notAdmitted) Is(target error) bool {
	return target == sandbox.ErrNotAdmitted
}

func refused(err error) error {
	if errors.Is(err, sandbox.ErrNotAdmitted) {
		return err
	}
	return notAdmitted{err}
}
