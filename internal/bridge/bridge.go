// Package bridge lets the module's own packages reach what a
// *wasmgate.Runtime owns without making it part of the public API: package
// wasmgate sets Acquire when it is initialized, and package replay calls it
// to run a corpus on each runtime's registry through pipelines of its own.
package bridge

import (
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
)

// Parts are what a runtime owns that replay needs.
type Parts struct {
	Engine   runtime.EngineName
	Registry *pipeline.Registry
}

// Acquire returns the parts of rt, a *wasmgate.Runtime, and keeps rt open
// (its Close waits) until release is called. The error matches
// wasmgate.ErrClosed when rt is closed or was not made by wasmgate.New.
//
// Package wasmgate sets it in its init, which has run by the time any
// package that imports wasmgate calls it.
var Acquire func(rt any) (p Parts, release func(), err error)
