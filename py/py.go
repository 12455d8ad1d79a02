// Package py is the Python executor kind: Python code run by CPython 3.12
// (a Wasm module embedded in this module, compiled for WASI) under the same
// governance as any Wasm executor. The code is a module with a function
// execute(input), or an executor class written to the executor contract
// (executor_id, version, capabilities, limits, execute(self, req)); what it
// imports comes from its own directory and the directories of its
// pure-Python dependencies, nothing else.
//
// The pipeline loads Wasm modules itself; a program that also runs Python
// gives it this kind, and only such a program carries the interpreter:
//
//	rt, err := wasmgate.New(ctx, wasmgate.WithKind(py.Kind()),
//		wasmgate.WithExecutor("text_stats", wasmgate.ExecutorSource{Python: "stats.py"}),
//		wasmgate.WithAction("text.stats", wasmgate.Route{Executor: "text_stats", Version: "^1.0.0"}))
//
// Without it, a Python executor in a registry fails to load with an error
// that names this package (pipeline.ErrNoKind).
package py

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmgate/wasmgate/internal/pyhost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Kind returns the Python kind: it loads an ExecutorSource's Python (a .py
// file, with PythonPath and Class). Loading starts the interpreter, imports
// the code and snapshots the result (cached on disk with the engine's
// compiled code), so that every call starts from the imported code in a
// fresh instance.
func Kind() pipeline.Kind { return kind{} }

type kind struct{}

func (kind) Name() string { return "Python" }

func (kind) Loads(src pipeline.ExecutorSource) bool { return src.Python != "" }

func (kind) Load(ctx context.Context, engine sandbox.Engine, src pipeline.ExecutorSource, fallback sandbox.Manifest) (pipeline.Executor, error) {
	files, roots, err := pyhost.Tree(src.Python, src.PythonPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, pipeline.MissingCode(err)
	case err != nil:
		return nil, pipeline.Refused(err)
	}
	module := strings.TrimSuffix(filepath.Base(src.Python), ".py")
	code := pyhost.Code{Files: files, Roots: roots, Mode: pyhost.ModeExecutor, Module: module, Class: src.Class}
	load := pyhost.LoadLimits()
	for _, l := range append([]sandbox.Limits{src.Defaults}, src.Limits...) {
		// Loading needs no less memory than a call: every call starts
		// from the memory loading left.
		load.MemoryPages = max(load.MemoryPages, l.MemoryPages)
	}
	t, err := pyhost.Load(ctx, engine, code, load)
	var le *pyhost.LoadError
	var oe *pyhost.OutcomeError
	switch {
	case errors.As(err, &le):
		return nil, pipeline.Refused(fmt.Errorf("python: %s: %w", src.Python, err))
	case errors.As(err, &oe) && oe.Outcome.Kind == sandbox.MemoryExhausted:
		return nil, loadMemory{err: fmt.Errorf("python: %s: %w", src.Python, err), pages: load.MemoryPages}
	case errors.As(err, &oe):
		return nil, pipeline.Refused(fmt.Errorf("python: %s: %w", src.Python, err))
	case err != nil:
		return nil, err
	}
	man, err := manifest(src, t, fallback)
	if err != nil {
		return nil, pipeline.Refused(err)
	}
	return &executor{tool: t, manifest: man}, nil
}

// manifest is a Python executor's manifest: its class's attributes, else
// the sidecar file NAME.manifest.json beside it (as for a JS tool), else
// fallback.
func manifest(src pipeline.ExecutorSource, t *pyhost.Tool, fallback sandbox.Manifest) (sandbox.Manifest, error) {
	if d := t.Declared(); d != nil {
		m, err := sandbox.ParseManifest(d)
		if err != nil {
			return sandbox.Manifest{}, fmt.Errorf("python: %s: the executor class's attributes are not a valid manifest: %w", src.Python, err)
		}
		return m, nil
	}
	path := strings.TrimSuffix(src.Python, ".py") + ".manifest.json"
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

// loadMemory is loading that ran out of memory: the pipeline blocks the
// executor's requests with MEMORY_EXHAUSTED, as its calls would be.
type loadMemory struct {
	err   error
	pages uint32
}

func (l loadMemory) Error() string {
	return fmt.Sprintf("%v; loading had memory_pages %d: raise \"memory_pages\" in the executor's limits", l.err, l.pages)
}
func (l loadMemory) Unwrap() error        { return l.err }
func (l loadMemory) Is(target error) bool { return target == pipeline.ErrLoadMemoryExhausted }

// executor is a loaded Python executor.
type executor struct {
	tool     *pyhost.Tool
	manifest sandbox.Manifest
}

func (e *executor) Manifest() sandbox.Manifest { return e.manifest }
func (e *executor) ModuleDigest() string       { return e.tool.ModuleDigest() }

// DefaultLimits are a Python executor's limits where its route, manifest and
// caller set none (pyhost.DefaultLimits).
func (e *executor) DefaultLimits() sandbox.Limits { return pyhost.DefaultLimits() }

func (e *executor) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	return e.tool.Run(ctx, in, sandbox.Request{})
}

// ExecuteRequest runs an executor class's execute(req) with the request's
// action, trace id and time.
func (e *executor) ExecuteRequest(ctx context.Context, in sandbox.Input, req sandbox.Request) (sandbox.Outcome, error) {
	return e.tool.Run(ctx, in, req)
}
