package jshost

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"github.com/wasmgate/wasmgate/internal/host"
)

// Scripts (wasmgate script): a bundled ES module run once in a fresh engine.
// Unlike a tool, a script reaches the host, through two host functions whose
// behaviour the caller puts in the ctx (WithJSHostFunctions); the engine
// itself still has no I/O, and every tool call it makes is the caller's to
// govern.

// The host functions a script's engine is given.
const (
	// JSScriptCall performs one tool call: its arguments are the action
	// and the params as JSON; it returns the call's result envelope, a JSON
	// object {"status", "reason_codes", "trace_id", "output"?, "message"?}.
	// The prelude turns the envelope into the output, or a thrown
	// ToolCallError.
	JSScriptCall = "wasmgate.call"
	// JSScriptConsole receives the script's console output as it is
	// written: its arguments are the stream ("out" for console.log, info,
	// debug and trace; "err" for console.warn and error) and the text, a
	// line ending in "\n". It returns "".
	JSScriptConsole = "wasmgate.console"
)

// JSScript is a script as the glue runs it.
type JSScript struct {
	// Name is the module name of the bundle (shown in stack traces).
	Name string
	// Source is the bundled ES module.
	Source []byte
	// Seed seeds Math.random.
	Seed [32]byte
	// MaxOutput bounds the script's result (its JSON).
	MaxOutput int
	// Env and Cwd are what the script reads as Deno.env and Deno.cwd(),
	// the toolscript text's execution context: nothing else of the host's
	// environment reaches it.
	Env map[string]string
	Cwd string
}

// QuickJSScript returns the driver that runs a script in a fresh engine:
// it evaluates the prelude, gives the script its host functions, evaluates
// the script's module and settles its result, the module's default export
// (awaited; when it is a function, what calling it with no arguments gives,
// awaited). The output is that result as JSON, or empty when it is
// undefined. An uncaught exception is a *GuestFailure with the exception's
// name, message and the script's stack frames, and so is a promise
// rejection no handler took once the jobs that could take it have run,
// even after the result settled; a result with no JSON form is an
// *OutputNotJSONError.
func QuickJSScript(script JSScript) func(ctx context.Context, inst host.Instance) ([]byte, error) {
	return func(ctx context.Context, inst host.Instance) ([]byte, error) {
		vm := jsVM{inst}
		tracker := &rejectionTracker{}
		ctx = withNodeFunction(WithJSModules(ctx, JSModules{script.Name: script.Source}))
		ctx = context.WithValue(ctx, rejectionTrackerKey{}, tracker)
		p, err := vm.boot(ctx)
		if err != nil {
			return nil, err
		}
		entry := JSEntry{take: p.take, tick: p.tick, undefined: p.undefined, yes: p.yes, no: p.no}
		undefined, load, run, setup, main := p.undefined, p.load, p.run, p.script, p.main
		if err := vm.free(ctx, p.attach); err != nil {
			return nil, err
		}
		// Only scripts get host functions: they are made here, never in a
		// tool's engine.
		var args []uint32
		for _, name := range []string{JSScriptCall, JSScriptConsole} {
			f, err := vm.newHostFunction(ctx, name)
			if err != nil {
				return nil, err
			}
			args = append(args, f)
		}
		seed, err := vm.newString(ctx, hex.EncodeToString(script.Seed[:]))
		if err != nil {
			return nil, err
		}
		args = append(args, seed)
		context, err := json.Marshal(struct {
			Env map[string]string `json:"env"`
			Cwd string            `json:"cwd"`
		}{script.Env, script.Cwd})
		if err != nil {
			return nil, err
		}
		contextJSON, err := vm.newString(ctx, string(context))
		if err != nil {
			return nil, err
		}
		args = append(args, contextJSON)
		rejection, err := vm.callFunction(ctx, setup, undefined, args...)
		if err != nil {
			return nil, err
		}
		for _, v := range append(args, load, run, setup) {
			if _, err := vm.call(ctx, "qjs_free_value", uint64(v)); err != nil {
				return nil, err
			}
		}
		// Rejections no handler takes are the prelude's to track: an
		// unhandled one fails the script (see the prelude's script).
		*tracker = rejectionTracker{fn: rejection, undefined: entry.undefined, yes: entry.yes, no: entry.no}
		if _, err := vm.call(ctx, "qjs_set_promise_rejection_handler", 1); err != nil {
			return nil, err
		}

		ns, err := vm.eval(ctx, script.Source, script.Name, evalModule)
		if err != nil {
			// The module did not even start (the engine refused its
			// syntax): bundling normally catches that first.
			return nil, interrupted(ctx, err)
		}
		if _, err := vm.callFunction(ctx, main, undefined, ns); err != nil {
			return nil, interrupted(ctx, err)
		}
		for _, v := range []uint32{ns, main} {
			if _, err := vm.call(ctx, "qjs_free_value", uint64(v)); err != nil {
				return nil, err
			}
		}
		if err := vm.drainJobs(ctx, entry.loop()); err != nil {
			return nil, interrupted(ctx, err)
		}
		st, err := vm.take(ctx, entry)
		if err != nil {
			return nil, err
		}
		return st.result("script", script.MaxOutput)
	}
}
