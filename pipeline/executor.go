package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Executor runs one kind of action. Wasm modules and (later) JS tools both
// implement it; the pipeline treats them alike.
//
// Implementations must be safe for concurrent use: Execute is called from
// many goroutines at once, and each call must run in isolation.
type Executor interface {
	// Manifest is the executor's identity, capabilities and limits.
	Manifest() sandbox.Manifest
	// ModuleDigest is the BLAKE3 digest identifying the executor's code,
	// recorded in every audit record.
	ModuleDigest() string
	// Execute runs once on canonical input. Everything the executor can
	// cause is reported in the Outcome; an error means no verdict could be
	// reached (the caller cancelled, or the engine failed).
	Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error)
}

// WasmExecutor is an Executor backed by an admitted Wasm module.
type WasmExecutor struct {
	module      sandbox.Module
	manifest    sandbox.Manifest
	hasManifest bool
}

// LoadWasm admits and compiles a Wasm executor on engine. The executor's
// manifest comes from the module's wasmgate.manifest section; a module
// without one gets the manifest fallback (see ManifestFromFile).
//
// # Errors
//
// An error matching sandbox.ErrNotAdmitted when admission refuses the module.
func LoadWasm(ctx context.Context, engine sandbox.Engine, wasm []byte, fallback sandbox.Manifest) (*WasmExecutor, error) {
	mod, err := engine.Load(ctx, wasm)
	if err != nil {
		return nil, err
	}
	e := &WasmExecutor{module: mod, manifest: fallback}
	if m := mod.Info().Manifest; m != nil {
		e.manifest, e.hasManifest = *m, true
	}
	return e, nil
}

// Manifest implements Executor.
func (e *WasmExecutor) Manifest() sandbox.Manifest { return e.manifest }

// HasManifest reports whether the module carries its own manifest.
func (e *WasmExecutor) HasManifest() bool { return e.hasManifest }

// ModuleDigest implements Executor.
func (e *WasmExecutor) ModuleDigest() string { return e.module.Info().Digest }

// Info describes the module as admission saw it.
func (e *WasmExecutor) Info() sandbox.ModuleInfo { return e.module.Info() }

// Execute implements Executor.
func (e *WasmExecutor) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	return e.module.Run(ctx, in)
}

var nonIDChars = regexp.MustCompile(`[^a-z0-9_]+`)

// ManifestFromFile is the manifest of a module that carries none: an id
// derived from the file name, version 0.0.0, no capabilities, and the given
// limits.
func ManifestFromFile(path string, limits sandbox.Limits) sandbox.Manifest {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return sandbox.Manifest{ExecutorID: executorIDFrom(base), Version: "0.0.0", Limits: limits}
}

// executorIDFrom makes a valid executor id of a name.
func executorIDFrom(name string) string {
	id := strings.Trim(nonIDChars.ReplaceAllString(strings.ToLower(name), "_"), "_")
	switch {
	case id == "":
		id = "executor"
	case id[0] < 'a' || id[0] > 'z':
		id = "x_" + id
	}
	return id
}

// describe names an executor in messages.
func describe(m sandbox.Manifest) string {
	if m.Version == "" {
		return fmt.Sprintf("executor %q", m.ExecutorID)
	}
	return fmt.Sprintf("executor %q %s", m.ExecutorID, m.Version)
}
