package main

import (
	"os"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// packCmd embeds a manifest into a module's wasmgate.manifest section, for
// toolchains that cannot emit custom sections.
func (e env) packCmd(args []string) int {
	fs := newFlagSet("pack", e.stderr)
	manifest := fs.String("manifest", "", "manifest JSON file (required)")
	out := fs.String("o", "", "output module (required)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("pack", &usageError{err.Error()})
	}
	switch {
	case *manifest == "":
		return e.fail("pack", usagef("--manifest M.json is required"))
	case *out == "":
		return e.fail("pack", usagef("-o OUT.wasm is required"))
	case len(pos) != 1:
		return e.fail("pack", usagef("want exactly one input module, got %d arguments", len(pos)))
	}
	m, err := os.ReadFile(*manifest)
	if err != nil {
		return e.fail("pack", usagef("%v", err))
	}
	wasm, err := os.ReadFile(pos[0])
	if err != nil {
		return e.fail("pack", usagef("%v", err))
	}
	packed, err := sandbox.PackManifest(wasm, m)
	if err != nil {
		return e.fail("pack", usagef("%s: %v", *manifest, err))
	}
	if err := os.WriteFile(*out, packed, 0o644); err != nil {
		return e.fail("pack", err)
	}
	return exitSuccess
}
