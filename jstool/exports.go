package jstool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// ToolExports lists, sorted, the names under which bundle b may hold tools:
// each named export whose value has an execute function or is a function
// (a factory), each such property of the default export (a CommonJS
// package's module.exports = {tool, ...}), and "default" when the default
// export itself has execute (a package that is one tool). These are names
// a call's Export resolves. The module is evaluated in the sandbox on
// engine to find them; loading a name as a tool (Load) is what confirms it
// (a class, say, is a function but not a tool).
//
// # Errors
//
// A bundle that does not bundle again or whose listing fails; the engine's
// errors (an *AdmissionError).
func ToolExports(ctx context.Context, engine sandbox.Engine, b Bundle) ([]string, error) {
	return exportNames(ctx, engine, b)
}

// probeModule is the name the probe script imports the bundle as.
const probeModule = "wasmgate-probe-tools"

// probeScript lists, in the sandbox, the names that may be tools: the
// module's named exports and its default export's own properties whose
// values have an execute function or are functions (factories), and
// "default" when the default export has execute.
const probeScript = `import * as ns from "` + probeModule + `";
const maybeTool = (v) => v != null && (typeof v.execute === "function" || typeof v === "function");
const names = new Set();
for (const k of Object.keys(ns)) if (k !== "default" && maybeTool(ns[k])) names.add(k);
const d = ns.default;
if (d != null && typeof d.execute === "function") names.add("default");
else if (d != null && (typeof d === "object" || typeof d === "function")) {
  for (const k of Object.keys(d)) if (maybeTool(d[k])) names.add(k);
}
export default [...names].sort();
`

// exportNames runs probeScript over b in the sandbox.
func exportNames(ctx context.Context, engine sandbox.Engine, b Bundle) ([]string, error) {
	dir, err := os.MkdirTemp("", "wasmgate-probe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	entry := filepath.Join(dir, "probe.mjs")
	if err := os.WriteFile(entry, []byte(probeScript), 0o600); err != nil {
		return nil, err
	}
	probe, err := BundleFileWith(entry, map[string]string{probeModule: string(b.Source)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Entry, err)
	}
	// Listing evaluates the whole bundle, as loading does: loading's
	// budget, in a tool's default memory.
	lim := LoadLimits()
	lim.MemoryPages = defaultMemoryPages
	out, err := RunScript(ctx, engine, probe, ScriptOptions{Limits: lim})
	if err != nil {
		return nil, err
	}
	if out.Kind != sandbox.Completed {
		return nil, fmt.Errorf("%s: listing its exports stopped: %s (%s)", b.Entry, out.Kind, out.Message)
	}
	var names []string
	if err := json.Unmarshal(out.Output, &names); err != nil {
		return nil, fmt.Errorf("%s: listing its exports: %w", b.Entry, err)
	}
	return names, nil
}
