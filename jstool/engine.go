package jstool

import (
	"embed"
	"io/fs"
	"sync"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// The engine module is fetched at a pinned version by
// scripts/fetch-quickjs.sh and embedded from engine/ (see engine/README.md).
//
//go:embed engine
var engineFS embed.FS

// ErrNoEngine is returned when this build carries no QuickJS engine module.
const ErrNoEngine = sentinel.Error("jstool: this wasmgate was built without the QuickJS engine (run scripts/fetch-quickjs.sh, or make build, then rebuild)")

var embedded = sync.OnceValues(func() ([]byte, error) {
	b, err := fs.ReadFile(engineFS, "engine/quickjs.wasm")
	if err != nil {
		return nil, ErrNoEngine
	}
	return b, nil
})

// EngineModule returns the embedded QuickJS engine module.
//
// # Errors
//
// ErrNoEngine when the build did not embed it.
func EngineModule() ([]byte, error) { return embedded() }
