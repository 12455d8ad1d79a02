package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/tscheck"
)

// A TypeScript script is type-checked against the registry's declarations
// before anything runs: a type error is exit 2, with every error as
// FILE:LINE:COL, no tool called, the audit log untouched.
func TestScriptTypeCheck(t *testing.T) {
	tests := []struct {
		name, file string
		flags      []string
		code       int
		stdout     string
		stderr     string
		calls      int
	}{
		{"a type error in a tool's params", "typed_param_error.ts", nil, exitUsage, "",
			scriptFile("typed_param_error.ts") + ":5:53: error TS2322: Type 'string' is not assignable to type 'number'.\n" +
				"wasmgate script: 1 type error in " + scriptFile("typed_param_error.ts") + ": nothing was run (--no-check runs it unchecked)\n", 0},
		{"a wrong property on a tool's result", "typed_result_error.ts", nil, exitUsage, "",
			scriptFile("typed_result_error.ts") + ":6:32: error TS2339: Property 'total' does not exist on type '{ sum: number; }'.\n" +
				"wasmgate script: 1 type error in " + scriptFile("typed_result_error.ts") + ": nothing was run (--no-check runs it unchecked)\n", 0},
		{"Node I/O is not declared", "sandbox.ts", nil, exitUsage, "",
			scriptFile("sandbox.ts") + ":2:21: error TS2591: Cannot find name 'node:fs'.", 0},
		{"the pure web built-ins are declared", "web_builtins.ts", nil, exitSuccess,
			`{"host":"example.com","b":"1","n":3,"a":"eA==","c":{"d":1},"s":"hé"}` + "\n", "", 0},
		{"fetch is not", "uses_fetch.ts", nil, exitUsage, "",
			scriptFile("uses_fetch.ts") + ":2:23: error TS2304: Cannot find name 'fetch'.\n", 0},
		{"a typed script runs", "typed_ok.ts", nil, exitSuccess,
			"sum 6\n" + `{"sum":7,"text":"SUM 6","refused":"LIMIT_EXCEEDED,LIST_TOO_LONG"}` + "\n", "", 3},
		{"--no-check runs what does not type-check", "typed_result_error.ts", []string{"--no-check"}, exitSuccess,
			"{}\n", "", 1},
		{"an unhandled rejection fails the script", "unhandled_rejection.ts", nil, exitFailed, "",
			// Positions are in the bundle (docs/JAVASCRIPT.md): line 6 is
			// the source's line 3 after esbuild's three lines that keep
			// function names.
			"wasmgate script: RangeError: nobody awaited this\n    at forgotten (unhandled_rejection.ts:6:13)\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			r := wasmgate(t, "", append([]string{"script", scriptFile(tt.file), "--config", td("registry.json"), "--audit", log}, tt.flags...)...)
			assert.Equal(t, tt.code, r.code, r.stderr)
			assert.Equal(t, tt.stdout, r.stdout)
			assert.True(t, strings.HasPrefix(r.stderr, tt.stderr), "stderr: %s", r.stderr)
			if tt.code == exitUsage {
				_, err := os.Stat(log)
				assert.ErrorIs(t, err, os.ErrNotExist, "nothing ran: the audit log was not even opened")
				return
			}
			assert.Len(t, readRecords(t, log), tt.calls)
		})
	}
}

// wasmgate types writes declarations and a tsconfig.json with which the
// compiler itself (tsc --noEmit) checks a script beside them; script
// --emit-types writes the same.
func TestTypesCheckWithTsc(t *testing.T) {
	dir := t.TempDir()
	r := wasmgate(t, "", "types", "--config", td("registry.json"), "--out", dir)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	decl, err := os.ReadFile(filepath.Join(dir, "toolscript.d.ts"))
	require.NoError(t, err)
	assert.Contains(t, string(decl), "      /**\n       * Adds up a list of numbers.\n       *\n       * Action math.sum.\n       */\n"+
		"      sum(params: {\n        numbers: number[];\n        [key: string]: unknown;\n      }): Promise<{\n        sum: number;\n      }>;\n")

	tsc, err := tscheck.Default().Ensure(context.Background())
	require.NoError(t, err)
	check := func() (string, error) {
		cmd := exec.Command(tsc, "--noEmit", "--pretty", "false", "-p", dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ok, err := os.ReadFile(scriptFile("typed_ok.ts"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.ts"), ok, 0o644))
	out, err := check()
	assert.NoError(t, err, "tsc --noEmit on a correct script: %s", out)

	bad, err := os.ReadFile(scriptFile("typed_result_error.ts"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.ts"), bad, 0o644))
	out, err = check()
	assert.Error(t, err)
	assert.Contains(t, out, "main.ts(6,32): error TS2339: Property 'total' does not exist on type '{ sum: number; }'.")

	// A tsconfig.json wasmgate did not write is left alone.
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "tsconfig.json"), []byte(`{"compilerOptions":{}}`), 0o644))
	r = wasmgate(t, "", "script", "--emit-types", other, "--config", td("registry.json"))
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "tsconfig.json exists and was not written by wasmgate: not replacing it")

	// Into a new directory, script --emit-types writes the three files.
	fresh := filepath.Join(t.TempDir(), "types")
	r = wasmgate(t, "", "script", "--emit-types", fresh, "--config", td("registry.json"))
	require.Equal(t, exitSuccess, r.code, r.stderr)
	for _, f := range []string{"toolscript.d.ts", "wasmgate-env.d.ts", "tsconfig.json"} {
		assert.FileExists(t, filepath.Join(fresh, f))
	}
	again, err := os.ReadFile(filepath.Join(fresh, "toolscript.d.ts"))
	require.NoError(t, err)
	assert.Equal(t, string(decl), string(again))
}
