//go:build !wasmtime

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Without the wasmtime build tag, --engine wasmtime is a usage error that
// says how to get it.
func TestEngineWasmtimeNotInThisBuild(t *testing.T) {
	const want = `engine "wasmtime" is not in this build: rebuild with -tags wasmtime (cgo; see README)`
	r := wasmgate(t, "", "run", "--wasm", td("echo.wasm"), "--engine", "wasmtime", "--input", "{}")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--engine: "+want)
	r = wasmgate(t, "", "replay", "--wasm", td("sum.wasm"), "--corpus", td("corpus.jsonl"), "--engines", "wazero,wasmtime")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--engines: "+want)
}
