package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunLimitFlagsZero checks that a limit flag given as 0 is zero, not
// the default (leaving the flag out is the default), and that a limit that
// would admit nothing at zero is a usage error naming the flag.
func TestRunLimitFlagsZero(t *testing.T) {
	t.Parallel()
	input := `{"numbers":[3,1]}`
	for _, c := range []struct {
		flag  string
		codes []string
	}{
		{"--max-list-items", []string{"LIMIT_EXCEEDED", "LIST_TOO_LONG"}},
		{"--max-depth", []string{"LIMIT_EXCEEDED", "DEPTH_EXCEEDED"}},
		{"--max-output-bytes", []string{"LIMIT_EXCEEDED", "OUTPUT_TOO_LARGE"}},
	} {
		r := wasmgate(t, "", "run", "--wasm", td("sort.wasm"), "--input", input, c.flag, "0")
		require.Equal(t, exitBlocked, r.code, "%s 0: %s", c.flag, r.stderr)
		res := parseResult(t, r)
		assert.Equal(t, "BLOCKED", res.Status, c.flag)
		assert.Equal(t, c.codes, res.ReasonCodes, c.flag)
	}
	// Without the flags, the same input passes.
	r := wasmgate(t, "", "run", "--wasm", td("sort.wasm"), "--input", input)
	require.Equal(t, exitSuccess, r.code, r.stderr)

	for _, flag := range []string{"--fuel", "--timeout-ms", "--memory-pages", "--max-payload-bytes"} {
		r := wasmgate(t, "", "run", "--wasm", td("sort.wasm"), "--input", input, flag, "0")
		assert.Equal(t, exitUsage, r.code, flag)
		assert.Equal(t, "wasmgate run: "+flag+" 0 would admit nothing: leave the flag out for the default\n", r.stderr)
	}
	r = wasmgate(t, "", "script", td("scripts/combine.ts"), "--fuel", "0")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--fuel 0 would admit nothing")
}
