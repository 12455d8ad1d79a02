package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/wasmgate/wasmgate/audit"
)

// auditCmd holds the audit log subcommands.
func (e env) auditCmd(args []string) int {
	if len(args) == 0 || args[0] != "verify" {
		return e.fail("audit", usagef("usage: wasmgate audit verify FILE"))
	}
	fs := newFlagSet("audit verify", e.stderr)
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return e.fail("audit verify", &usageError{err.Error()})
	}
	if len(pos) != 1 {
		return e.fail("audit verify", usagef("want exactly one audit log file, got %d arguments", len(pos)))
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return e.fail("audit verify", usagef("%v", err))
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	var ce *audit.ChainError
	if errors.As(err, &ce) {
		fmt.Fprintf(e.stderr, "%s:%d: %s\n", pos[0], ce.Line, ce.Reason)
		return exitFailed
	}
	if err != nil {
		return e.fail("audit verify", err)
	}
	fmt.Fprintf(e.stdout, "%s: ok, %d records, hash chain intact\n", pos[0], rep.Records)
	return exitSuccess
}
