// Package js is the JavaScript executor kind: JavaScript and TypeScript
// tools, and npm packages of the tool store, run by the QuickJS engine (a
// Wasm module embedded in this module) with Node's pure built-ins, under
// the same governance as any Wasm executor.
//
// The pipeline loads Wasm modules itself; a program that also runs JS
// gives it this kind, and only such a program links the bundler, the
// engine and the Node library:
//
//	rt, err := wasmgate.New(ctx, wasmgate.WithKind(js.Kind()),
//		wasmgate.WithExecutor("slugify", wasmgate.ExecutorSource{JS: "slugify.ts"}),
//		wasmgate.WithAction("text.slug", wasmgate.Route{Executor: "slugify", Version: "^1.0.0"}))
//
// Without it, a JS tool or package in a registry fails to load with an
// error that names this package (pipeline.ErrNoKind).
package js

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Kind returns the JavaScript kind: it loads an ExecutorSource's JS (a .js,
// .mjs, .cjs, .ts, .mts or .cts file, bundled with what it imports, its
// manifest from the sidecar file NAME.manifest.json), Package (NAME@VERSION
// of the tool store, its manifest from its package.json) and Bundle (a tool
// bundled already, with its Manifest).
func Kind() pipeline.Kind { return kind{} }

type kind struct{}

func (kind) Name() string { return "JavaScript" }

func (kind) Loads(src pipeline.ExecutorSource) bool {
	return src.JS != "" || src.Package != "" || src.Bundle != nil
}

func (kind) Load(ctx context.Context, engine sandbox.Engine, src pipeline.ExecutorSource, fallback sandbox.Manifest) (pipeline.Executor, error) {
	b, man, err := Resolve(src, fallback)
	if err != nil {
		return nil, err
	}
	if src.Defaults != (sandbox.Limits{}) {
		src.Limits = append(src.Limits, man.Limits.WithDefaults(src.Defaults))
	}
	t, err := jstool.Load(ctx, engine, jstool.Spec{Bundle: b, Export: src.Tool, Manifest: man, CallLimits: src.Limits})
	var le *jstool.LoadError
	if errors.As(err, &le) && le.Code == jstool.ErrLoadMemoryExhausted {
		return nil, raiseMemory{err: err, how: memorySetting(src), pages: le.MemoryPages}
	}
	if errors.Is(err, jstool.ErrToolNotFound) {
		return nil, pipeline.ToolNotFound(err)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Resolve returns the bundle and manifest of the JS tool src names (JS,
// Package or Bundle), as loading it would, without an engine: a JS file
// bundled (jstool.BundleFile) with its sidecar manifest, a package's
// bundle from its tool store with the manifest its package.json makes. It
// is how a tool is turned into bytes to publish. fallback is the manifest
// of a tool that carries none (a registry gives the executor id alone).
//
// # Errors
//
// When src names no JS tool (a Wasm module, nothing, more than one piece of
// code). Missing code matches os.ErrNotExist (files) or
// jstool.ErrNotInstalled (packages), and is pipeline.MissingCode's; code
// that does not bundle, or whose manifest is not valid, matches
// sandbox.ErrNotAdmitted.
func Resolve(src pipeline.ExecutorSource, fallback sandbox.Manifest) (jstool.Bundle, sandbox.Manifest, error) {
	n := 0
	for _, set := range []bool{src.Wasm != "", src.Module != nil, src.JS != "", src.Package != "", src.Bundle != nil} {
		if set {
			n++
		}
	}
	switch {
	case n != 1 || !(kind{}).Loads(src):
		return jstool.Bundle{}, sandbox.Manifest{}, errors.New(`js: the source must name one JS tool: exactly one of "js", "package" or a bundle`)
	case src.Package != "" && src.Tool == "":
		return jstool.Bundle{}, sandbox.Manifest{}, errors.New(`js: a "package" needs the "tool" export to run`)
	case src.Bundle != nil && src.Manifest == nil:
		return jstool.Bundle{}, sandbox.Manifest{}, errors.New("js: a JS bundle needs its manifest")
	case src.Bundle != nil:
		return jstool.Bundle{Source: src.Bundle.Source, Entry: src.Bundle.Entry}, *src.Manifest, nil
	case src.JS != "":
		if _, err := os.Stat(src.JS); errors.Is(err, os.ErrNotExist) {
			return jstool.Bundle{}, sandbox.Manifest{}, pipeline.MissingCode(err)
		}
		b, err := jstool.BundleFile(src.JS)
		if err != nil {
			return jstool.Bundle{}, sandbox.Manifest{}, pipeline.Refused(err)
		}
		man, err := sidecarManifest(src.JS, fallback)
		if err != nil {
			return jstool.Bundle{}, sandbox.Manifest{}, pipeline.Refused(err)
		}
		return b, man, nil
	}
	dir := src.ToolsDir
	if dir == "" {
		dir = jstool.DefaultStoreDir()
	}
	inst, err := jstool.Store{Dir: dir}.Get(src.Package)
	if errors.Is(err, jstool.ErrNotInstalled) {
		return jstool.Bundle{}, sandbox.Manifest{}, pipeline.MissingCode(err)
	}
	if err != nil {
		return jstool.Bundle{}, sandbox.Manifest{}, pipeline.Refused(err)
	}
	man, err := packageManifest(inst, src.Tool, fallback)
	if err != nil {
		return jstool.Bundle{}, sandbox.Manifest{}, pipeline.Refused(err)
	}
	return inst.Bundle, man, nil
}

// raiseMemory is a JS tool's running out of memory while loading, with
// how its user raises the limit.
type raiseMemory struct {
	err   error
	how   string
	pages uint32
}

func (r raiseMemory) Error() string {
	if r.pages >= sandbox.MaxMemoryPages {
		return fmt.Sprintf("%v; that is all a memory can hold (4 GiB)", r.err)
	}
	return fmt.Sprintf("%v; set %s above %d (e.g. %d)", r.err, r.how, r.pages, min(2*uint64(r.pages), sandbox.MaxMemoryPages))
}
func (r raiseMemory) Unwrap() error { return r.err }

// Is lets the pipeline see the limit, not the code, in the refusal.
func (r raiseMemory) Is(target error) bool { return target == pipeline.ErrLoadMemoryExhausted }

// memorySetting names the setting that raises the memory limit of the JS
// tool src names.
func memorySetting(s pipeline.ExecutorSource) string {
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

// sidecarManifest reads a JS tool's manifest from the file next to it with
// the same base name and the extension .manifest.json (tool.ts →
// tool.manifest.json); without one the tool gets fallback.
func sidecarManifest(file string, fallback sandbox.Manifest) (sandbox.Manifest, error) {
	path := sidecarPath(file)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fallback, nil
	}
	if err != nil {
		return sandbox.Manifest{}, err
	}
	m, err := sandbox.ParseManifest(raw)
	if err != nil {
		return sandbox.Manifest{}, fmt.Errorf("manifest %s: %w", path, err)
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
func packageManifest(inst *jstool.Installed, export string, fallback sandbox.Manifest) (sandbox.Manifest, error) {
	var pkg struct {
		Wasmgate json.RawMessage `json:"wasmgate"`
	}
	if err := json.Unmarshal(inst.PackageJSON, &pkg); err != nil {
		return sandbox.Manifest{}, fmt.Errorf("package.json of %s@%s: %w", inst.Name, inst.Version, err)
	}
	m := sandbox.Manifest{
		ExecutorID: pipeline.ExecutorIDFrom(inst.Name + "__" + export),
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
		return sandbox.Manifest{}, fmt.Errorf("package.json of %s@%s: \"wasmgate\": %w", inst.Name, inst.Version, err)
	}
	base, _ := json.Marshal(m)
	merged := map[string]json.RawMessage{}
	_ = json.Unmarshal(base, &merged)
	for k, v := range fields {
		merged[k] = v
	}
	raw, _ := json.Marshal(merged)
	out, err := sandbox.ParseManifest(raw)
	if err != nil {
		return sandbox.Manifest{}, fmt.Errorf("package.json of %s@%s: \"wasmgate\": %w", inst.Name, inst.Version, err)
	}
	return out, nil
}
