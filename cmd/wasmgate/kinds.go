package main

import (
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/py"
)

// executorKinds are the kinds of executor code the command loads beside Wasm
// modules, wherever it builds a registry: the command runs JS tools and npm
// packages everywhere (a library program that does not pass js.Kind() does
// not link the bundler and the engine), and Python executors (CPython,
// which a program that does not pass py.Kind() does not carry).
var executorKinds = []pipeline.Kind{js.Kind(), py.Kind()}
