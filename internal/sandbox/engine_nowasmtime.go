//go:build !wasmtime

package sandbox

import "context"

// wasmtimeBuilt reports whether this build includes the wasmtime engine
// (build tag wasmtime; it needs cgo and wasmtime's static library).
const wasmtimeBuilt = false

func newWasmtimeEngine(context.Context, Config) (Engine, error) {
	return nil, &engineNotBuiltError{name: EngineWasmtime}
}
