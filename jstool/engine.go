package jstool

import _ "embed"

// The engine module is committed in engine/ (npm's quickjs-wasi at the
// version and hashes scripts/fetch-quickjs.sh pins, which CI fetches again
// and compares) and embedded by name: a build without it does not compile,
// so every program that links this package can run JS, with no make step.
//
//go:embed engine/quickjs.wasm
var engineModule []byte

// EngineModule returns the embedded QuickJS engine module. The caller must
// not change it. The error is always nil; it is kept for the callers that
// check it.
func EngineModule() ([]byte, error) { return engineModule, nil }
