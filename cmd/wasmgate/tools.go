package main

import (
	"context"
	"fmt"

	"github.com/wasmgate/wasmgate/jstool"
)

const toolsHelp = `Usage:
  wasmgate tools add NAME@VERSION [--tools-dir DIR]

Installs an npm package into the local tool store with npm (--ignore-scripts,
no dev dependencies, 60 s limit) and bundles it for the JS engine. Its tools
then run with 'wasmgate run --package NAME@VERSION --tool EXPORT' or from a
registry entry {"package": "NAME@VERSION", "tool": "EXPORT"}.

A package or version npm does not have is PACKAGE_NOT_FOUND (exit 2).

Flags:
`

func (e env) toolsCmd(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] != "add" {
		fmt.Fprint(e.stderr, toolsHelp)
		return exitUsage
	}
	fs := newFlagSet("tools add", e.stderr)
	dir := fs.String("tools-dir", "", "tool store (default: $WASMGATE_TOOLS_DIR, else the user cache directory)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), toolsHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return e.fail("tools add", &usageError{err.Error()})
	}
	if len(pos) != 1 {
		return e.fail("tools add", usagef("want one NAME@VERSION, got %d arguments", len(pos)))
	}
	store := jstool.Store{Dir: *dir}
	if store.Dir == "" {
		store.Dir = jstool.DefaultStoreDir()
	}
	inst, err := store.Add(ctx, pos[0])
	if err != nil {
		return e.fail("tools add", toolsError(err))
	}
	fmt.Fprintf(e.stdout, "added %s@%s (bundle %d bytes) to %s\n", inst.Name, inst.Version, len(inst.Bundle.Source), inst.Dir)
	return exitSuccess
}
