package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/runtime"
)

// ExecutorSource says where an executor's code comes from: exactly one of Wasm,
// Module, JS, Package and Bundle. It is also the shape of an executor entry in
// a registry file (where Module and Bundle cannot be given).
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
	// Tool is the export that is the tool, for JS and Package: resolved
	// as pkg[tool], then pkg.default?.[tool], then pkg.default. Empty (JS
	// only) means the module itself when it exports execute, else its
	// default export.
	Tool string `json:"tool,omitempty"`
	// ToolsDir is the tool store for Package; empty means
	// jstool.DefaultStoreDir().
	ToolsDir string `json:"-"`
	// Bundle is a JS tool already bundled (ResolveJS, or fetched from where
	// a bundle was published), for executors given in Go. It needs
	// Manifest, and Tool selects its export as for JS.
	Bundle *jstool.Bundle `json:"-"`
	// Manifest is the manifest of Bundle, and only of Bundle.
	Manifest *runtime.Manifest `json:"-"`
	// Limits are the limits the executor's calls will run under over its
	// manifest's, where the caller knows them when loading (a command's
	// flags, a registry's routes to it, a front's configuration): a JS
	// tool loads in the largest memory_pages they give
	// (jstool.Spec.CallLimits).
	Limits []runtime.Limits `json:"-"`
	// Defaults are limits for where the manifest sets none, as a front's
	// configuration gives them (serve's and MCP's npm tools); a JS tool
	// loads in their memory_pages too when its manifest sets none.
	Defaults runtime.Limits `json:"-"`
	// RaiseMemory names, for the message of a JS tool that runs out of
	// memory while loading, the setting by which whoever gave this source
	// raises its memory limit (a command's "--memory-pages"); empty: the
	// tool's manifest (its sidecar file, its package.json).
	RaiseMemory string `json:"-"`
}

// check reports a source that names no code, or more than one.
func (s ExecutorSource) check() error {
	n := 0
	for _, v := range []string{s.Wasm, s.JS, s.Package} {
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
		return errors.New(`names no code: set one of "wasm", "js" or "package"`)
	case n > 1:
		return errors.New(`names more than one of "wasm", "js" and "package"`)
	case s.Package != "" && s.Tool == "":
		return errors.New(`a "package" needs the "tool" export to run`)
	case (s.Wasm != "" || s.Module != nil) && s.Tool != "":
		return errors.New(`"tool" applies to JS tools and packages only`)
	case s.Bundle != nil && s.Manifest == nil:
		return errors.New("a JS bundle needs its manifest")
	case s.Bundle == nil && s.Manifest != nil:
		return errors.New("a manifest is given for JS bundles only")
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

// loadSource loads an executor from src. fallback is the manifest of code
// that carries none. The error is errMissingCode-wrapped when the code is
// missing, and matches runtime.ErrNotAdmitted when the code is refused
// (admission, bundling, a tool without its export).
func loadSource(ctx context.Context, engine runtime.Engine, src ExecutorSource, fallback runtime.Manifest) (Executor, error) {
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
	b, man, err := ResolveJS(src, fallback)
	if err != nil {
		return nil, err
	}
	if src.Defaults != (runtime.Limits{}) {
		src.Limits = append(src.Limits, man.Limits.WithDefaults(src.Defaults))
	}
	return loadJS(ctx, engine, b, man, src)
}

// ResolveJS returns the bundle and manifest of the JS tool src names (JS,
// Package or Bundle), as loading it would, without an engine: a JS file
// bundled (jstool.BundleFile) with its sidecar manifest, a package's
// bundle from its tool store with the manifest its package.json makes. It
// is how a tool is turned into bytes to publish. fallback is the manifest
// of a tool that carries none (LoadRegistry gives the executor id alone).
//
// # Errors
//
// When src names no code, more than one, or Wasm. Missing code matches
// os.ErrNotExist (files) or jstool.ErrNotInstalled (packages); code that
// does not bundle, or whose manifest is not valid, matches
// runtime.ErrNotAdmitted.
func ResolveJS(src ExecutorSource, fallback runtime.Manifest) (jstool.Bundle, runtime.Manifest, error) {
	if err := src.check(); err != nil {
		return jstool.Bundle{}, runtime.Manifest{}, err
	}
	switch {
	case src.Wasm != "" || src.Module != nil:
		return jstool.Bundle{}, runtime.Manifest{}, fmt.Errorf("%s is not a JS tool", src.describe())
	case src.Bundle != nil:
		return *src.Bundle, *src.Manifest, nil
	case src.JS != "":
		if _, err := os.Stat(src.JS); errors.Is(err, os.ErrNotExist) {
			return jstool.Bundle{}, runtime.Manifest{}, missingCode{err}
		}
		b, err := jstool.BundleFile(src.JS)
		if err != nil {
			return jstool.Bundle{}, runtime.Manifest{}, refused(err)
		}
		man, err := sidecarManifest(src.JS, fallback)
		if err != nil {
			return jstool.Bundle{}, runtime.Manifest{}, refused(err)
		}
		return b, man, nil
	}
	dir := src.ToolsDir
	if dir == "" {
		dir = jstool.DefaultStoreDir()
	}
	inst, err := jstool.Store{Dir: dir}.Get(src.Package)
	if errors.Is(err, jstool.ErrNotInstalled) {
		return jstool.Bundle{}, runtime.Manifest{}, missingCode{err}
	}
	if err != nil {
		return jstool.Bundle{}, runtime.Manifest{}, refused(err)
	}
	man, err := packageManifest(inst, src.Tool, fallback)
	if err != nil {
		return jstool.Bundle{}, runtime.Manifest{}, refused(err)
	}
	return inst.Bundle, man, nil
}

func loadJS(ctx context.Context, engine runtime.Engine, b jstool.Bundle, man runtime.Manifest, src ExecutorSource) (Executor, error) {
	t, err := jstool.Load(ctx, engine, jstool.Spec{Bundle: b, Export: src.Tool, Manifest: man, CallLimits: src.Limits})
	var le *jstool.LoadError
	if errors.As(err, &le) && le.Code == jstool.ErrLoadMemoryExhausted {
		return nil, raiseMemory{err: err, how: src.memorySetting(), pages: le.MemoryPages}
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// raiseMemory is a JS tool's running out of memory while loading, with
// how its user raises the limit.
type raiseMemory struct {
	err   error
	how   string
	pages uint32
}

func (r raiseMemory) Error() string {
	if r.pages >= runtime.MaxMemoryPages {
		return fmt.Sprintf("%v; that is all a memory can hold (4 GiB)", r.err)
	}
	return fmt.Sprintf("%v; set %s above %d (e.g. %d)", r.err, r.how, r.pages, min(2*uint64(r.pages), runtime.MaxMemoryPages))
}
func (r raiseMemory) Unwrap() error { return r.err }

// memorySetting names the setting that raises the memory limit of the JS
// tool src names.
func (s ExecutorSource) memorySetting() string {
	switch {
	case s.RaiseMemory != "":
		return s.RaiseMemory
	case s.JS != "":
		return fmt.Sprintf(`"memory_pages" in the "limits" of its manifest %s`, sidecarPath(s.JS))
	case s.Package != "":
		return fmt.Sprintf(`"memory_pages" in the "limits" of the "wasmgate" field of the package.json of %s`, s.Package)
	}
	return `"memory_pages" in the "limits" of its manifest`
}

// notAdmitted is code that cannot be admitted as an executor (EXECUTOR_INVALID).
type notAdmitted struct{ err error }

func (r notAdmitted) Error() string { return r.err.Error() }
func (r notAdmitted) Unwrap() error { return r.err }
func (r notAdmitted) Is(target error) bool {
	return target == runtime.ErrNotAdmitted
}

func refused(err error) error {
	if errors.Is(err, runtime.ErrNotAdmitted) {
		return err
	}
	return notAdmitted{err}
}

// sidecarManifest reads a JS tool's manifest from the file next to it with
// the same base name and the extension .manifest.json (tool.ts →
// tool.manifest.json); without one the tool gets fallback.
func sidecarManifest(file string, fallback runtime.Manifest) (runtime.Manifest, error) {
	path := sidecarPath(file)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fallback, nil
	}
	if err != nil {
		return runtime.Manifest{}, err
	}
	m, err := runtime.ParseManifest(raw)
	if err != nil {
		return runtime.Manifest{}, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, nil
}

// sidecarPath is where the manifest of the JS file file is.
func sidecarPath(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".manifest.json"
}

// packageManifest is the manifest of a tool in an npm package: the executor
// id made of the package and export names, the package's version, and what
// the package.json's "wasmgate" field adds (capabilities, limits, or a
// whole manifest's fields).
func packageManifest(inst *jstool.Installed, export string, fallback runtime.Manifest) (runtime.Manifest, error) {
	var pkg struct {
		Wasmgate json.RawMessage `json:"wasmgate"`
	}
	if err := json.Unmarshal(inst.PackageJSON, &pkg); err != nil {
		return runtime.Manifest{}, fmt.Errorf("package.json of %s@%s: %w", inst.Name, inst.Version, err)
	}
	m := runtime.Manifest{
		ExecutorID: executorIDFrom(inst.Name + "__" + export),
		Version:    inst.Version,
		Limits:     fallback.Limits,
	}
	if fallback.ExecutorID != "" {
		m.ExecutorID = fallback.ExecutorID
	}
	if len(pkg.Wasmgate) == 0 {
		return m, nil
	}
	// The field may set any manifest field; what it leaves out comes from
	// the package.
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(pkg.Wasmgate, &fields); err != nil {
		return runtime.Manifest{}, fmt.Errorf("package.json of %s@%s: \"wasmgate\": %w", inst.Name, inst.Version, err)
	}
	base, _ := json.Marshal(m)
	merged := map[string]json.RawMessage{}
	_ = json.Unmarshal(base, &merged)
	for k, v := range fields {
		merged[k] = v
	}
	raw, _ := json.Marshal(merged)
	out, err := runtime.ParseManifest(raw)
	if err != nil {
		return runtime.Manifest{}, fmt.Errorf("package.json of %s@%s: \"wasmgate\": %w", inst.Name, inst.Version, err)
	}
	return out, nil
}
