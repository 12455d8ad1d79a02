package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToolscriptScenarios runs the scenarios of the toolscript text
// (Sandbox Environment, TypeScript Support, Top-Level Await) that no other
// test covers, named as the text names them. docs/STDIO.md maps every
// scenario of the text to the test that covers it, or says why it does not
// apply (Deno's import map and gateway URL: "toolscript" is a module of the
// bundle and a tool call a host call).
func TestToolscriptScenarios(t *testing.T) {
	tests := []struct {
		requirement, scenario string
		file                  string
		flags                 []string
		code                  int
		stdout                string
		stderr                []string // in this order; nil: empty
	}{
		// fetch and process are not declared for the checker (I/O is not
		// a toolscript's), so the script runs unchecked.
		{"Sandbox Environment", "Network restrictions, Environment variable restrictions", "environment.ts", []string{"--no-check"}, exitSuccess,
			`{"env":["TOOLSCRIPT_GATEWAY_URL"],"network":"Access to this API has been restricted: fetch(\"https://example.com/\") (wasmgate runs code without network, file system or processes)"}` + "\n", nil},
		{"TypeScript Support", "ES modules", "imports_module.ts", nil, exitSuccess, `{"doubled":42}` + "\n", nil},
		// Neither import nor export: still a module, for the checker too.
		{"Top-Level Await", "Top-level await", "top_level_await.ts", nil, exitSuccess, "42\n", nil},
		{"Top-Level Await", "Promise handling", "returns_promise.ts", nil, exitSuccess, `{"late":true}` + "\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.requirement+"/"+tt.scenario, func(t *testing.T) {
			t.Parallel()
			r := wasmgate(t, "", append([]string{"script", scriptFile(tt.file), "--config", td("registry.json")}, tt.flags...)...)
			require.Equal(t, tt.code, r.code, "stderr: %s", r.stderr)
			assert.Equal(t, tt.stdout, r.stdout)
			if tt.stderr == nil {
				assert.Empty(t, r.stderr)
			}
			rest := r.stderr
			for _, want := range tt.stderr {
				i := strings.Index(rest, want)
				require.GreaterOrEqual(t, i, 0, "stderr lacks %q: %s", want, r.stderr)
				rest = rest[i+len(want):]
			}
		})
	}
}

// TestToolscriptExecutionContext: the toolscript text's "Execution
// Context" and "Environment variable restrictions". A script reads
// TOOLSCRIPT_GATEWAY_URL as a Deno script does (Deno.env.get) and as a Node
// one would (process.env), the only variable either holds; Deno.cwd() is
// the directory the script was run from; nothing else (no version, no
// timestamp) is put into its environment.
func TestToolscriptExecutionContext(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	r := wasmgate(t, "", "script", scriptFile("execution_context.ts"))
	require.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, `{"gateway":"http://toolscript.invalid","deno":{"TOOLSCRIPT_GATEWAY_URL":"http://toolscript.invalid"},"node":{"TOOLSCRIPT_GATEWAY_URL":"http://toolscript.invalid"},"cwd":`+strconv.Quote(wd)+`,"denoKeys":["cwd","env"],"home":false}`+"\n", r.stdout)
	assert.Empty(t, r.stderr)
}
