package main

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// inspectReport is what `wasmgate inspect` prints.
type inspectReport struct {
	File     string `json:"file"`
	Admitted bool   `json:"admitted"`
	// Problem says why admission refused the module.
	Problem string `json:"problem,omitempty"`
	sandbox.ModuleInfo
}

// inspectCmd prints what admission sees in a module. Exit 0 when the module
// is admitted, 3 when it is refused (as a run of it would be BLOCKED).
func (e env) inspectCmd(args []string) int {
	fs := newFlagSet("inspect", e.stderr)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("inspect", &usageError{err.Error()})
	}
	if len(pos) != 1 {
		return e.fail("inspect", usagef("want exactly one module file, got %d arguments", len(pos)))
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return e.fail("inspect", usagef("%v", err))
	}
	info, err := sandbox.Inspect(wasm)
	rep := inspectReport{File: pos[0], Admitted: err == nil, ModuleInfo: info}
	if err != nil {
		if !errors.Is(err, sandbox.ErrNotAdmitted) {
			return e.fail("inspect", err)
		}
		rep.Problem = err.Error()
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return e.fail("inspect", err)
	}
	if !rep.Admitted {
		return exitBlocked
	}
	return exitSuccess
}
