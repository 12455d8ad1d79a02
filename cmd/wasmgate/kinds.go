package main

import (
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
)

// executorKinds are the kinds of executor code the command loads beside Wasm
// modules, wherever it builds a registry: the command runs JS tools and npm
// packages everywhere (a library program that does not pass js.Kind() does
// not link the bundler and the engine).
var executorKinds = []pipeline.Kind{js.Kind()}
