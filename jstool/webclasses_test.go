package jstool_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// TestJSONParseErrorsAreNodes: JSON.parse refuses what node refuses with
// node's message, word for word: a table of malformed texts (each of V8's
// messages, and the context it quotes around a token at the start, middle
// and end of short and long texts), 400 texts broken at random by a seeded
// generator, non-string arguments, a reviver's own SyntaxError (left as
// thrown) and an argument whose toString is called once.
func TestJSONParseErrorsAreNodes(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), webTool("json_parse.mjs"), "", `{}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	want := runNode(t, webTool("json_parse.mjs"), `{}`)
	assert.JSONEq(t, string(want), string(res.Output))
}

// TestJSONParseWrapperOnlyWhereNamed: a bundle whose code never names JSON
// keeps the engine's JSON.parse (the bundle, its snapshot and its fuel are
// what they were); one that names it gets the wrapper.
func TestJSONParseWrapperOnlyWhereNamed(t *testing.T) {
	trim, err := jstool.BundleFile(filepath.Join("testdata", "bench", "trim.js"))
	require.NoError(t, err)
	assert.NotContains(t, string(trim.Source), "wasmgate:internal/json_parse")

	b, err := jstool.BundleFile(filepath.Join("testdata", "web", "json_parse.mjs"))
	require.NoError(t, err)
	assert.Contains(t, string(b.Source), "// wasmgate-node:wasmgate:internal/json_parse\n")
}

// TestNamesAreTheSources: functions and classes keep the names their
// source gives them, as in node, where the bundler would rename a
// top-level name two modules share (APIError2, helper2) and the globals
// whose modules collide (DOMException2, AbortController2).
func TestNamesAreTheSources(t *testing.T) {
	res := run(t, engine(t, sandbox.EngineWazero), webTool("names.mjs"), "", `{}`, sandbox.Limits{})
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	want := runNode(t, webTool("names.mjs"), `{}`)
	assert.JSONEq(t, string(want), string(res.Output))
}
