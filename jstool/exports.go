package jstool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/wasmgate/wasmgate/runtime"
)

// ToolExports lists the names under which bundle b holds tools, sorted:
// each named export that loads as a tool (an object with execute, or a
// factory), each property of the default export that does (a CommonJS
// package's module.exports = {tool, ...}), and "default" when the default
// export is itself a tool (a package that is one tool). These are names a
// call's Export resolves, and each is confirmed by loading it in the
// sandbox on engine, as a call would.
//
// # Errors
//
// A bundle that does not bundle again or whose listing fails; the engine's
// errors (ErrNoEngine, an *AdmissionError).
func ToolExports(ctx context.Context, engine runtime.Engine, b Bundle) ([]string, error) {
	names, err := exportNames(ctx, engine, b)
	if err != nil {
		return nil, err
	}
	var tools []string
	for _, name := range names {
		_, err := Load(ctx, engine, Spec{Bundle: b, Export: name, Manifest: runtime.Manifest{ExecutorID: "probe", Version: "0.0.0"}})
		switch {
		case err == nil:
			tools = append(tools, name)
		case errors.Is(err, runtime.ErrNotAdmitted):
			// Not a tool.
		default:
			return nil, err
		}
	}
	sort.Strings(tools)
	return tools, nil
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
func exportNames(ctx context.Context, engine runtime.Engine, b Bundle) ([]string, error) {
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
	out, err := RunScript(ctx, engine, probe, ScriptOptions{Limits: LoadLimits})
	if err != nil {
		return nil, err
	}
	if out.Kind != runtime.Completed {
		return nil, fmt.Errorf("%s: listing its exports stopped: %s (%s)", b.Entry, out.Kind, out.Message)
	}
	var names []string
	if err := json.Unmarshal(out.Output, &names); err != nil {
		return nil, fmt.Errorf("%s: listing its exports: %w", b.Entry, err)
	}
	return names, nil
}
