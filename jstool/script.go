package jstool

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/confine"
	"github.com/wasmgate/wasmgate/internal/jshost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Toolscripts: a TypeScript or JavaScript program run once in the engine,
// which calls registered actions as functions. The sandbox is a tool's (no
// network, file system, environment, timers); what a script adds is the
// virtual module "toolscript", whose tools reach the host through one host
// function, and a console written as it happens.

// ToolscriptModule is the name scripts import their tools from.
const ToolscriptModule = "toolscript"

// ToolPath is where action appears under the toolscript module's tools: the
// part of the action before its first "." or "__" is the namespace, the rest
// the name, each in camelCase (split at every character other than a letter
// or a digit, the words after the first capitalized):
//
//	github__create_issue → tools.github.createIssue
//	math.sum             → tools.math.sum
//	text.word-count      → tools.text.wordCount
//	my_tools.a.b         → tools.myTools.aB
//
// An action with neither separator, or whose namespace or name would be
// empty, is a function at the top: "echo" → tools.echo, "ping." →
// tools.ping. ok is false when no name can be formed (an action made of
// separators only).
func ToolPath(action string) (namespace, name string, ok bool) {
	i, width := len(action), 0
	if j := strings.Index(action, "."); j >= 0 {
		i, width = j, 1
	}
	if j := strings.Index(action, "__"); j >= 0 && j < i {
		i, width = j, 2
	}
	if width > 0 {
		namespace, name = camelCase(action[:i]), camelCase(action[i+width:])
		if namespace != "" && name != "" {
			return namespace, name, true
		}
	}
	name = camelCase(action)
	return "", name, name != ""
}

// camelCase joins the words of s (runs of ASCII letters and digits): the
// first as it is, the others with their first letter in upper case.
func camelCase(s string) string {
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for i := 1; i < len(words); i++ {
		words[i] = strings.ToUpper(words[i][:1]) + words[i][1:]
	}
	return strings.Join(words, "")
}

// ToolscriptSource generates the toolscript module for actions. It exports
// tools (also its default export): frozen objects without prototypes,
// holding one function per action, at ToolPath(action), and nothing else, so
// calling an action that is not registered is a TypeError
// (tools.math.nope is not a function). A tool function takes the action's
// params (undefined means {}) and returns a promise of the action's output
// (undefined when it produced none), or rejects with a ToolCallError. The
// module also exports actions, the registered action names, sorted.
//
// # Errors
//
// A *BundleError when two actions map to the same path, or an action to
// none.
func ToolscriptSource(actions []string) (string, error) {
	actions = append([]string(nil), actions...)
	sort.Strings(actions)
	namespaces := map[string]map[string]string{} // namespace → name → action
	top := map[string]string{}                   // name → action
	var problems []string
	for _, a := range actions {
		ns, name, ok := ToolPath(a)
		if !ok {
			problems = append(problems, fmt.Sprintf("action %q has no name under tools", a))
			continue
		}
		where, at := top, "tools."+name
		if ns != "" {
			if namespaces[ns] == nil {
				namespaces[ns] = map[string]string{}
			}
			where, at = namespaces[ns], "tools."+ns+"."+name
		}
		if other, dup := where[name]; dup {
			problems = append(problems, fmt.Sprintf("actions %q and %q both map to %s", other, a, at))
			continue
		}
		where[name] = a
	}
	for name, a := range top {
		if _, clash := namespaces[name]; clash {
			problems = append(problems, fmt.Sprintf("action %q maps to tools.%s, which holds other actions", a, name))
		}
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		for i, p := range problems {
			problems[i] = ToolscriptModule + ": " + p
		}
		return "", &BundleError{Entry: ToolscriptModule, Problems: problems}
	}

	var b strings.Builder
	b.WriteString(toolscriptPreamble)
	b.WriteString("export const tools = Object.freeze({ __proto__: null,\n")
	for _, name := range sortedKeys(top) {
		fmt.Fprintf(&b, "  %s: tool(%s, %s),\n", quote(name), quote("tools."+name), quote(top[name]))
	}
	for _, ns := range sortedKeys(namespaces) {
		fmt.Fprintf(&b, "  %s: Object.freeze({ __proto__: null,\n", quote(ns))
		for _, name := range sortedKeys(namespaces[ns]) {
			fmt.Fprintf(&b, "    %s: tool(%s, %s),\n", quote(name), quote("tools."+ns+"."+name), quote(namespaces[ns][name]))
		}
		b.WriteString("  }),\n")
	}
	b.WriteString("});\n")
	quoted := make([]string, len(actions))
	for i, a := range actions {
		quoted[i] = quote(a)
	}
	fmt.Fprintf(&b, "export const actions = Object.freeze([%s]);\n", strings.Join(quoted, ", "))
	b.WriteString("export default tools;\n")
	return b.String(), nil
}

// toolscriptPreamble finds the prelude's callTool, which exists only in an
// engine run by RunScript, and makes the tool functions.
const toolscriptPreamble = `// The toolscript module, generated by wasmgate from the registry.
const callTool = globalThis[Symbol.for("wasmgate.toolscript")];
function tool(label, action) {
  const f = (params) => typeof callTool === "function" ? callTool(label, action, params)
    : Promise.reject(new Error(label + ": tools can be called only in a script run by wasmgate script"));
  Object.defineProperty(f, "name", { value: label });
  return Object.freeze(f);
}
`

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// BundleScript bundles a script (a .ts, .mts, .js or .mjs file and
// everything it imports), with the toolscript module generated for actions.
//
// # Errors
//
// As BundleFile, and a *BundleError from ToolscriptSource.
func BundleScript(file string, actions []string) (Bundle, error) {
	src, err := ToolscriptSource(actions)
	if err != nil {
		return Bundle{}, err
	}
	return bundleFileWith(file, map[string]string{ToolscriptModule: src}, "script")
}

// BundleScriptText bundles a script given as text, not as a file (Code
// Mode's run_script): name is what messages call it, and its extension
// (.ts, .mts, .js, .mjs, …) says whether types are stripped. The script has
// no tree: it may import the toolscript module generated for actions and
// Node's built-ins, and nothing from the host's file system, not even a
// relative file.
//
// # Errors
//
// A *BundleError as BundleScript's, and for an import of any host file.
func BundleScriptText(name, source string, actions []string) (Bundle, error) {
	loader, ok := bundleExtensions[filepath.Ext(name)]
	if !ok || filepath.Base(name) != name {
		return Bundle{}, &BundleError{Entry: name, Problems: []string{
			fmt.Sprintf("%s: a script's name is a plain file name ending in .js, .mjs, .cjs, .ts, .mts or .cts", name),
		}}
	}
	src, err := ToolscriptSource(actions)
	if err != nil {
		return Bundle{}, err
	}
	// The working directory is an empty one of its own, so that no
	// resolution starts anywhere near the host's files; the confinement
	// refuses whatever esbuild would read all the same.
	work, err := os.MkdirTemp("", "wasmgate-script-")
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", name, err)
	}
	defer os.RemoveAll(work)
	if work, err = filepath.EvalSymlinks(work); err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", name, err)
	}
	opts := bundleOptions(work)
	opts.Stdin = &api.StdinOptions{Contents: source, Sourcefile: name, Loader: loader}
	opts.Plugins = append([]api.Plugin{virtualModulesPlugin(map[string]string{ToolscriptModule: src})}, opts.Plugins...)
	return build(name, opts, confinement{tree: confine.Text(""), noun: "script"})
}

// scriptLimits is ScriptLimits's value, of which callers get copies.
var scriptLimits = sandbox.Limits{
	TimeoutMs:      30_000,
	Fuel:           30_000 * fuelPerMs,
	MemoryPages:    1024,
	MaxOutputBytes: 10 << 20,
}

// ScriptLimits returns a script's limits where ScriptOptions.Limits sets none:
// a script is a program that waits on tools, not a tool, so its budget is
// generous: its time, and the fuel that time covers (fuelPerMs). Only fuel,
// time, memory and the size of the result apply.
// The caller gets a copy.
func ScriptLimits() sandbox.Limits { return scriptLimits }

// ToolCallResult is what a script's tool call gets back: the verdict of the
// action it called.
type ToolCallResult struct {
	// Status is SUCCESS, FAILED or BLOCKED.
	Status string `json:"status"`
	// ReasonCodes are the verdict's reason codes (empty for SUCCESS).
	ReasonCodes []string `json:"reason_codes"`
	// TraceID is the call's trace id.
	TraceID string `json:"trace_id"`
	// Output is the action's output (JSON), absent when it had none.
	Output json.RawMessage `json:"output,omitempty"`
	// Message says why a call did not succeed.
	Message string `json:"message,omitempty"`
}

// ToolCaller performs a script's tool call of action with params (JSON
// text, as the script gave it). An error (the caller cancelled, an engine
// failed) is thrown into the script as an Error carrying its text.
type ToolCaller func(ctx context.Context, action string, params json.RawMessage) (ToolCallResult, error)

// ScriptOptions say how RunScript runs a script.
type ScriptOptions struct {
	// Limits are the script's own limits (zero fields: ScriptLimits()). The
	// actions it calls run under theirs, within the script's deadline.
	Limits sandbox.Limits
	// Call performs the tool calls; nil refuses them.
	Call ToolCaller
	// Stdout receives console.log, info, debug and trace; Stderr
	// console.warn and error, each call one line, as the script runs (nil:
	// discarded).
	Stdout, Stderr io.Writer
	// Engine is the QuickJS engine module; nil means the embedded one.
	Engine []byte
	// Cwd is what the script's Deno.cwd() says: the directory it was run
	// from ("" is "/"). Deno.env holds TOOLSCRIPT_GATEWAY_URL alone.
	Cwd string
}

// GatewayURL is what a script reads as TOOLSCRIPT_GATEWAY_URL. The
// toolscript text's scripts import their tools over HTTP from a gateway at
// that URL; here the "toolscript" module is bundled in and each call is a
// host call, so there is no HTTP gateway to reach: the name is in the
// .invalid domain, which never resolves (RFC 2606), and is the same on
// every machine.
const GatewayURL = "http://toolscript.invalid"

// RunScript runs a bundled script once, in a fresh engine instance, and
// returns its Outcome: Completed with the script's result as JSON in Output
// (empty when it is undefined), Failed when it threw (Message is the
// exception's name, message and the script's stack frames, positions in the
// bundle), OutputNotJSON when its result has no JSON form, or the limit it
// reached.
//
// The result is the module's default export, awaited; when it is a
// function, what calling it with no arguments gives, awaited. Math.random
// is seeded from the bundle's digest, so a script draws the same numbers on
// every run.
//
// # Errors
//
// An *AdmissionError when the
// engine module is refused; an error when ctx is cancelled or the engine
// failed.
func RunScript(ctx context.Context, engine sandbox.Engine, b Bundle, opts ScriptOptions) (sandbox.Outcome, error) {
	wasm := opts.Engine
	if wasm == nil {
		var err error
		if wasm, err = EngineModule(); err != nil {
			return sandbox.Outcome{}, err
		}
	}
	reactor, err := engine.LoadReactor(ctx, wasm, jshost.QuickJSGlue())
	if err != nil {
		return sandbox.Outcome{}, fmt.Errorf("the QuickJS engine module: %w", err)
	}
	name := path.Base(b.Entry)
	if name == "" || name == "." || name == "/" {
		name = "script.js"
	}
	lim := opts.Limits.WithDefaults(ScriptLimits())
	in := sandbox.Input{Digest: audit.DigestBytes(b.Source), Limits: lim}
	ctx = jshost.WithJSHostFunctions(ctx, jshost.JSHostFunctions{
		jshost.JSScriptCall:    opts.call,
		jshost.JSScriptConsole: opts.console,
	})
	cwd := opts.Cwd
	if cwd == "" {
		cwd = "/"
	}
	drive := jshost.QuickJSScript(jshost.JSScript{Name: name, Source: b.Source, Seed: in.Digest, MaxOutput: int(lim.MaxOutputBytes),
		Env: map[string]string{"TOOLSCRIPT_GATEWAY_URL": GatewayURL}, Cwd: cwd})
	return reactor.Run(ctx, nil, in, sandbox.Driver(drive))
}

func (o ScriptOptions) call(ctx context.Context, args []string) (string, error) {
	if len(args) != 2 {
		return "", fmt.Errorf("want 2 arguments (action, params), got %d", len(args))
	}
	if o.Call == nil {
		return "", fmt.Errorf("this script has no tools to call")
	}
	res, err := o.Call(ctx, args[0], json.RawMessage(args[1]))
	if err != nil {
		return "", err
	}
	if res.ReasonCodes == nil {
		res.ReasonCodes = []string{}
	}
	out, err := json.Marshal(res)
	return string(out), err
}

func (o ScriptOptions) console(_ context.Context, args []string) (string, error) {
	if len(args) != 2 {
		return "", fmt.Errorf("want 2 arguments (stream, text), got %d", len(args))
	}
	w := o.Stdout
	if args[0] == "err" {
		w = o.Stderr
	}
	if w != nil {
		// A console that cannot be written to (a closed pipe) does not
		// stop the script.
		_, _ = io.WriteString(w, args[1])
	}
	return "", nil
}
