package jshost

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/wasmgate/wasmgate/internal/host"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/zeebo/blake3"
)

// The QuickJS glue: the six env.host_* imports of the quickjs-wasi engine
// module, and the drivers that load a tool into a fresh engine and run it.
//
// The engine is driven through its qjs_* exports. Values cross the boundary
// only as the engine's own handles (pointers into its memory, owned by the
// engine) and as UTF-8 strings the host writes or reads there; no Go value
// ever enters the guest. Everything the host asks of the engine runs inside
// the instrumented module, so it is metered and deterministic like the tool.

// QuickJSModule is the import module of the engine's host functions.
const QuickJSModule = "env"

//go:embed quickjs_prelude.js
var quickJSPrelude []byte

var i32 = []host.ValueType{host.I32}

func i32s(n int) []host.ValueType {
	out := make([]host.ValueType, n)
	for i := range out {
		out[i] = host.I32
	}
	return out
}

// QuickJSPreludeDigest is the BLAKE3 digest of the prelude, part of a JS
// tool's identity.
func QuickJSPreludeDigest() string { return preludeDigest() }

// QuickJSGlue is what admission lets the QuickJS engine import and requires
// it to export.
func QuickJSGlue() host.Glue {
	return host.Glue{
		Name: "quickjs",
		Imports: []host.Function{
			{Module: QuickJSModule, Name: "host_get_timezone_offset", Params: i32s(2), Results: i32, Call: hostTimezoneOffset},
			{Module: QuickJSModule, Name: "host_interrupt", Results: i32, Call: hostInterrupt},
			{Module: QuickJSModule, Name: "host_promise_rejection", Params: i32s(3), CallInstance: hostPromiseRejection},
			{Module: QuickJSModule, Name: "host_module_normalize", Params: i32s(2), Results: i32, CallInstance: hostModuleNormalize},
			{Module: QuickJSModule, Name: "host_module_load", Params: i32s(2), Results: i32, CallInstance: hostModuleLoad},
			{Module: QuickJSModule, Name: "host_call", Params: i32s(5), Results: i32, CallInstance: hostCall},
		},
		Exports: []host.Export{
			{Name: host.ExportInitialize},
			{Name: "malloc", Params: i32s(1), Results: i32},
			{Name: "free", Params: i32s(1)},
			{Name: "qjs_init", Results: i32},
			{Name: "qjs_set_module_loader", Params: i32s(1)},
			{Name: "qjs_set_interrupt_handler", Params: i32s(1)},
			{Name: "qjs_set_promise_rejection_handler", Params: i32s(1)},
			{Name: "qjs_eval", Params: i32s(4), Results: i32},
			{Name: "qjs_call", Params: i32s(4), Results: i32},
			{Name: "qjs_get_prop_uint32", Params: i32s(2), Results: i32},
			{Name: "qjs_get_undefined", Results: i32},
			{Name: "qjs_new_string", Params: i32s(2), Results: i32},
			{Name: "qjs_get_string_len", Params: i32s(2), Results: i32},
			{Name: "qjs_free_cstring", Params: i32s(1)},
			{Name: "qjs_free_value", Params: i32s(1)},
			{Name: "qjs_is_exception", Params: i32s(1), Results: i32},
			{Name: "qjs_get_exception", Results: i32},
			{Name: "qjs_is_job_pending", Results: i32},
			{Name: "qjs_execute_pending_job", Results: i32},
			{Name: "qjs_new_error", Results: i32},
			{Name: "qjs_set_prop_string", Params: i32s(3), Results: i32},
			{Name: "qjs_throw", Params: i32s(1), Results: i32},
			{Name: "qjs_run_gc"},
			{Name: "qjs_new_host_function", Params: i32s(3), Results: i32},
			{Name: "qjs_get_bool", Params: i32s(1), Results: i32},
			{Name: "qjs_get_true", Results: i32},
			{Name: "qjs_get_false", Results: i32},
		},
	}
}

// The engine's evaluation flags (QuickJS's JS_EVAL_*).
const (
	evalGlobal = 0
	evalModule = 1 << 0
)

// JSModules are the modules a tool may import: its own bundle, by name. The
// engine's module loader resolves nothing else.
type JSModules map[string][]byte

type jsModulesKey struct{}

// WithJSModules returns ctx carrying the modules of the tool being loaded.
func WithJSModules(ctx context.Context, m JSModules) context.Context {
	return context.WithValue(ctx, jsModulesKey{}, m)
}

func jsModulesFrom(ctx context.Context) JSModules {
	m, _ := ctx.Value(jsModulesKey{}).(JSModules)
	return m
}

// hostTimezoneOffset: every tool runs in UTC.
func hostTimezoneOffset(_ context.Context, _ host.Memory, stack []uint64) { stack[0] = 0 }

// hostInterrupt stops JavaScript at its next interrupt check once the
// execution's deadline has passed (the instrumented fuel meter is the
// backstop for code that never reaches one).
func hostInterrupt(ctx context.Context, _ host.Memory, stack []uint64) {
	stack[0] = 0
	if ctx.Err() != nil {
		stack[0] = 1
	}
}

// hostPromiseRejection is called when a promise is rejected with no handler
// (stack[2] 0), and when a handler is then attached (1), once the engine's
// rejection handler is set, which only programs do (QuickJSProgram): it
// hands the promise, the reason and the flag to the prelude's rejection
// function the ctx carries (rejectionTracker), and releases the two values
// it was handed, as the engine expects.
func hostPromiseRejection(ctx context.Context, caller host.Instance, stack []uint64) {
	vm := jsVM{caller}
	if t, _ := ctx.Value(rejectionTrackerKey{}).(*rejectionTracker); t != nil && t.fn != 0 {
		handled := t.no
		if uint32(stack[2]) != 0 {
			handled = t.yes
		}
		v, err := vm.callFunction(ctx, t.fn, t.undefined, uint32(stack[0]), uint32(stack[1]), handled)
		if err != nil {
			panic(err)
		}
		vm.mustCall(ctx, "qjs_free_value", uint64(v))
	}
	vm.mustCall(ctx, "qjs_free_value", stack[0])
	vm.mustCall(ctx, "qjs_free_value", stack[1])
}

// rejectionTracker is the prelude's rejection function (fn, 0 until the
// prelude has given it) and the values it is called with.
type rejectionTracker struct{ fn, undefined, yes, no uint32 }

type rejectionTrackerKey struct{}

func hostModuleNormalize(ctx context.Context, caller host.Instance, stack []uint64) {
	vm := jsVM{caller}
	namePtr := uint32(stack[1])
	stack[0] = 0
	name, ok := vm.cString(namePtr)
	if !ok {
		vm.throw(ctx, "module name is not a readable string")
		return
	}
	if _, ok := jsModulesFrom(ctx)[name]; !ok {
		vm.throw(ctx, fmt.Sprintf("cannot import %q: a tool can import only what is bundled into it", name))
		return
	}
	stack[0] = uint64(vm.mustCString(ctx, name))
}

func hostModuleLoad(ctx context.Context, caller host.Instance, stack []uint64) {
	vm := jsVM{caller}
	namePtr, lenPtr := uint32(stack[0]), uint32(stack[1])
	stack[0] = 0
	name, ok := vm.cString(namePtr)
	if !ok {
		vm.throw(ctx, "module name is not a readable string")
		return
	}
	src, ok := jsModulesFrom(ctx)[name]
	if !ok {
		vm.throw(ctx, fmt.Sprintf("cannot import %q: a tool can import only what is bundled into it", name))
		return
	}
	ptr := vm.mustCString(ctx, string(src))
	if !host.WriteUint32(caller.Memory(), lenPtr, uint32(len(src))) {
		panic(&host.GuestError{Msg: "host_module_load: length pointer outside memory"})
	}
	stack[0] = uint64(ptr)
}

// JSHostFunction is the behaviour behind a host function of the engine (a
// JavaScript function made by qjs_new_host_function, dispatched by name):
// it gets the call's arguments as strings and returns a string, or an error
// that the engine throws as an Error carrying its text.
//
// The ctx it gets carries neither the host functions nor the modules of the
// calling engine, so that nothing it runs (another tool, through the
// pipeline) inherits them.
type JSHostFunction func(ctx context.Context, args []string) (string, error)

// JSHostFunctions are host functions by name.
type JSHostFunctions map[string]JSHostFunction

type jsHostFunctionsKey struct{}

// WithJSHostFunctions returns ctx carrying the behaviour of the host
// functions an execution may call. Without them host_call refuses every
// call; a tool's execution has only its console's log function (see
// QuickJSRun), which its own code cannot reach.
func WithJSHostFunctions(ctx context.Context, fns JSHostFunctions) context.Context {
	return context.WithValue(ctx, jsHostFunctionsKey{}, fns)
}

func jsHostFunctionsFrom(ctx context.Context) JSHostFunctions {
	m, _ := ctx.Value(jsHostFunctionsKey{}).(JSHostFunctions)
	return m
}

// maxHostFunctionName bounds the names host_call reads.
const maxHostFunctionName = 256

// maxHostArgs bounds the arguments of one host function call.
const maxHostArgs = 16

// hostCall runs the host function the engine names, when ctx carries one of
// that name (see WithJSHostFunctions), and refuses the call otherwise: a
// tool's code reaches nothing outside the engine. Its arguments are borrowed from the
// engine's trampoline; the string value it returns is handed over to it.
func hostCall(ctx context.Context, caller host.Instance, stack []uint64) {
	vm := jsVM{caller}
	namePtr, nameLen, argc, argv := uint32(stack[0]), uint32(stack[1]), uint32(stack[3]), uint32(stack[4])
	stack[0] = 0
	name := "?"
	if b, ok := caller.Memory().Read(namePtr, min(nameLen, maxHostFunctionName)); ok {
		name = string(b)
	}
	fn, ok := jsHostFunctionsFrom(ctx)[name]
	if !ok || nameLen > maxHostFunctionName {
		vm.throw(ctx, fmt.Sprintf("host function %q is not available: tools cannot call the host", name))
		return
	}
	if argc > maxHostArgs {
		vm.throw(ctx, fmt.Sprintf("host function %q: %d arguments, at most %d", name, argc, maxHostArgs))
		return
	}
	args := make([]string, argc)
	for i := range argc {
		p, ok := host.ReadUint32(caller.Memory(), argv+4*i)
		if !ok {
			panic(&host.GuestError{Msg: "host_call: argument vector outside memory"})
		}
		s, n, ok, err := vm.readString(ctx, p, maxState)
		if err != nil {
			panic(err)
		}
		if !ok {
			vm.throw(ctx, fmt.Sprintf("host function %q: argument %d is %d bytes, at most %d", name, i, n, maxState))
			return
		}
		args[i] = string(s)
	}
	out, err := fn(WithJSModules(WithJSHostFunctions(ctx, nil), nil), args)
	if err != nil {
		vm.throw(ctx, fmt.Sprintf("%s: %v", name, err))
		return
	}
	stack[0] = uint64(vm.mustString(ctx, out))
}

// newHostFunction makes the JavaScript function that calls the host
// function name through host_call.
func (vm jsVM) newHostFunction(ctx context.Context, name string) (uint32, error) {
	p, err := vm.alloc(ctx, []byte(name))
	if err != nil {
		return 0, err
	}
	f, err := vm.call(ctx, "qjs_new_host_function", uint64(p), uint64(len(name)), 0)
	if err != nil {
		return 0, err
	}
	if _, err := vm.call(ctx, "free", uint64(p)); err != nil {
		return 0, err
	}
	if f == 0 {
		return 0, errEngineOutOfMemory
	}
	return f, vm.checkException(ctx, f)
}

// jsVM drives one engine instance through its exports.
type jsVM struct{ inst host.Instance }

func (vm jsVM) call(ctx context.Context, name string, params ...uint64) (uint32, error) {
	res, err := vm.inst.Call(ctx, name, params...)
	if err != nil {
		return 0, err
	}
	if len(res) == 0 {
		return 0, nil
	}
	return uint32(res[0]), nil
}

// mustCall is call for host functions, which cannot return an error: a
// failure (a trap, the fuel running out) unwinds the whole guest call.
func (vm jsVM) mustCall(ctx context.Context, name string, params ...uint64) uint32 {
	r, err := vm.call(ctx, name, params...)
	if err != nil {
		panic(err)
	}
	return r
}

// mustCString writes s as a NUL-terminated string into memory the engine
// allocated (and will free).
func (vm jsVM) mustCString(ctx context.Context, s string) uint32 {
	p, err := vm.cStringAlloc(ctx, s)
	if err != nil {
		panic(err)
	}
	return p
}

func (vm jsVM) cStringAlloc(ctx context.Context, s string) (uint32, error) {
	return vm.alloc(ctx, append([]byte(s), 0))
}

// alloc copies b into memory the engine allocates; the caller frees it.
func (vm jsVM) alloc(ctx context.Context, b []byte) (uint32, error) {
	p, err := vm.call(ctx, "malloc", uint64(max(len(b), 1)))
	if err != nil {
		return 0, err
	}
	if p == 0 {
		return 0, errEngineOutOfMemory
	}
	if !vm.inst.Memory().Write(p, b) {
		return 0, &host.GuestError{Msg: "malloc returned memory outside the engine's memory"}
	}
	return p, nil
}

// errEngineOutOfMemory: the engine could not allocate what the host asked
// for (the memory limit was reached).
var errEngineOutOfMemory = &host.GuestFailure{Msg: "InternalError: out of memory"}

// maxCString bounds the C strings the host reads from the engine (module
// names).
const maxCString = 4096

func (vm jsVM) cString(p uint32) (string, bool) {
	mem := vm.inst.Memory()
	n := min(mem.Size()-min(p, mem.Size()), maxCString)
	b, ok := mem.Read(p, n)
	if !ok {
		return "", false
	}
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", false
	}
	return string(b[:i]), true
}

// throw raises a JavaScript Error with message in the engine, for a host
// function that then returns 0 to signal it.
func (vm jsVM) throw(ctx context.Context, message string) {
	e := vm.mustCall(ctx, "qjs_new_error")
	msg := vm.mustString(ctx, message)
	key := vm.mustCString(ctx, "message")
	vm.mustCall(ctx, "qjs_set_prop_string", uint64(e), uint64(key), uint64(msg))
	vm.mustCall(ctx, "free", uint64(key))
	vm.mustCall(ctx, "qjs_free_value", uint64(msg))
	vm.mustCall(ctx, "qjs_throw", uint64(e))
	vm.mustCall(ctx, "qjs_free_value", uint64(e))
}

func (vm jsVM) mustString(ctx context.Context, s string) uint32 {
	v, err := vm.newString(ctx, s)
	if err != nil {
		panic(err)
	}
	return v
}

// newString makes a JavaScript string value of s.
func (vm jsVM) newString(ctx context.Context, s string) (uint32, error) {
	p, err := vm.alloc(ctx, []byte(s))
	if err != nil {
		return 0, err
	}
	v, err := vm.call(ctx, "qjs_new_string", uint64(p), uint64(len(s)))
	if err != nil {
		return 0, err
	}
	if _, err := vm.call(ctx, "free", uint64(p)); err != nil {
		return 0, err
	}
	if v == 0 {
		return 0, errEngineOutOfMemory
	}
	return v, nil
}

// readString copies out the string value v (at most limit bytes; longer
// strings report their length and ok == false).
func (vm jsVM) readString(ctx context.Context, v uint32, limit int) (s []byte, n int, ok bool, err error) {
	lenPtr, err := vm.call(ctx, "malloc", 4)
	if err != nil {
		return nil, 0, false, err
	}
	if lenPtr == 0 {
		return nil, 0, false, errEngineOutOfMemory
	}
	defer vm.call(ctx, "free", uint64(lenPtr))
	cstr, err := vm.call(ctx, "qjs_get_string_len", uint64(v), uint64(lenPtr))
	if err != nil {
		return nil, 0, false, err
	}
	if cstr == 0 {
		return nil, 0, false, errEngineOutOfMemory
	}
	defer vm.call(ctx, "qjs_free_cstring", uint64(cstr))
	mem := vm.inst.Memory()
	l, ok := host.ReadUint32(mem, lenPtr)
	if !ok {
		return nil, 0, false, &host.GuestError{Msg: "string length outside memory"}
	}
	if int64(l) > int64(limit) {
		return nil, int(l), false, nil
	}
	b, ok := mem.Read(cstr, l)
	if !ok {
		return nil, 0, false, &host.GuestError{Msg: "string outside memory"}
	}
	return append([]byte(nil), b...), int(l), true, nil
}

// eval evaluates code and returns the value (or the exception) handle.
func (vm jsVM) eval(ctx context.Context, code []byte, filename string, flags uint64) (uint32, error) {
	src, err := vm.alloc(ctx, append(append(make([]byte, 0, len(code)+1), code...), 0))
	if err != nil {
		return 0, err
	}
	name, err := vm.cStringAlloc(ctx, filename)
	if err != nil {
		return 0, err
	}
	v, err := vm.call(ctx, "qjs_eval", uint64(src), uint64(len(code)), uint64(name), flags)
	if err != nil {
		return 0, err
	}
	if _, err := vm.call(ctx, "free", uint64(src)); err != nil {
		return 0, err
	}
	if _, err := vm.call(ctx, "free", uint64(name)); err != nil {
		return 0, err
	}
	return v, vm.checkException(ctx, v)
}

// checkException turns an exception value into a GuestFailure carrying the
// exception's text.
func (vm jsVM) checkException(ctx context.Context, v uint32) error {
	exc, err := vm.call(ctx, "qjs_is_exception", uint64(v))
	if err != nil || exc == 0 {
		return err
	}
	return vm.pendingException(ctx)
}

// pendingException takes the engine's pending exception as a GuestFailure
// carrying its text.
func (vm jsVM) pendingException(ctx context.Context) error {
	e, err := vm.call(ctx, "qjs_get_exception")
	if err != nil {
		return err
	}
	text, _, _, err := vm.readString(ctx, e, maxMessage)
	if err != nil {
		return err
	}
	return &host.GuestFailure{Msg: string(text)}
}

// maxMessage bounds an error message read from the engine.
const maxMessage = 4096

// callFunction calls fn(args...) with this = undefined.
func (vm jsVM) callFunction(ctx context.Context, fn, undefined uint32, args ...uint32) (uint32, error) {
	argv := uint32(0)
	if len(args) > 0 {
		b := make([]byte, 4*len(args))
		for i, a := range args {
			binary.LittleEndian.PutUint32(b[4*i:], a)
		}
		var err error
		if argv, err = vm.alloc(ctx, b); err != nil {
			return 0, err
		}
	}
	v, err := vm.call(ctx, "qjs_call", uint64(fn), uint64(undefined), uint64(len(args)), uint64(argv))
	if err != nil {
		return 0, err
	}
	if argv != 0 {
		if _, err := vm.call(ctx, "free", uint64(argv)); err != nil {
			return 0, err
		}
	}
	return v, vm.checkException(ctx, v)
}

// drainJobs runs the engine until nothing is left to run, as Node's event
// loop does: after each thing it ran, the prelude's tick (tick) runs the
// process.nextTick queue, then the promise jobs run until there are none,
// and only then does tick fire the pending immediates or the next timer on
// the virtual clock; it ends when tick reports that nothing keeps the loop
// alive. A timer loop that never ends runs out of fuel or time like any
// other loop.
func (vm jsVM) drainJobs(ctx context.Context, l loop) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		pending, err := vm.call(ctx, "qjs_is_job_pending")
		if err != nil {
			return err
		}
		arg := l.no
		if pending != 0 {
			arg = l.yes
		}
		v, err := vm.callFunction(ctx, l.tick, l.undefined, arg)
		if err != nil {
			return err
		}
		more, err := vm.call(ctx, "qjs_get_bool", uint64(v))
		if err != nil {
			return err
		}
		if err := vm.free(ctx, v); err != nil {
			return err
		}
		if more == 0 {
			return nil
		}
		if err := vm.runJobs(ctx); err != nil {
			return err
		}
	}
}

// runJobs runs the engine's job queue (promise reactions) until it is empty.
func (vm jsVM) runJobs(ctx context.Context) error {
	for {
		pending, err := vm.call(ctx, "qjs_is_job_pending")
		if err != nil || pending == 0 {
			return err
		}
		r, err := vm.call(ctx, "qjs_execute_pending_job")
		if err != nil {
			return err
		}
		if int32(r) < 0 {
			// A job threw: the glue's own reactions never do, so this is
			// the engine interrupted at the deadline.
			if err := ctx.Err(); err != nil {
				return err
			}
			return vm.pendingException(ctx)
		}
	}
}

// preludeFns are the handles of the prelude's functions (its completion
// value, in this order), and of undefined.
type preludeFns struct {
	load, run, take, script, main, attach, tick, init, program uint32
	// undefined, yes and no are the engine's undefined, true and false,
	// kept for the life of the engine.
	undefined, yes, no uint32
}

// loop is what drainJobs needs: the prelude's tick and the constants it is
// called with.
type loop struct{ tick, undefined, yes, no uint32 }

// free releases the handles in fns.
func (vm jsVM) free(ctx context.Context, fns ...uint32) error {
	for _, v := range fns {
		if _, err := vm.call(ctx, "qjs_free_value", uint64(v)); err != nil {
			return err
		}
	}
	return nil
}

// boot initializes a fresh engine, evaluates the prelude and hands it the
// Node host function (JSNodeFunction), whose behaviour ctx must carry; it
// returns the prelude's functions (init already released).
func (vm jsVM) boot(ctx context.Context) (p preludeFns, err error) {
	if _, err := vm.call(ctx, host.ExportInitialize); err != nil {
		return p, err
	}
	if r, err := vm.call(ctx, "qjs_init"); err != nil || r != 0 {
		return p, errors.Join(err, fmt.Errorf("quickjs: qjs_init returned %d", int32(r)))
	}
	for _, setting := range []string{"qjs_set_module_loader", "qjs_set_interrupt_handler"} {
		if _, err := vm.call(ctx, setting, 1); err != nil {
			return p, err
		}
	}
	for _, c := range []struct {
		h    *uint32
		name string
	}{{&p.undefined, "qjs_get_undefined"}, {&p.yes, "qjs_get_true"}, {&p.no, "qjs_get_false"}} {
		if *c.h, err = vm.call(ctx, c.name); err != nil {
			return p, err
		}
	}
	all, err := vm.eval(ctx, quickJSPrelude, "wasmgate:prelude", evalGlobal)
	if err != nil {
		return p, fmt.Errorf("quickjs: the prelude failed: %w", err)
	}
	for i, h := range []*uint32{&p.load, &p.run, &p.take, &p.script, &p.main, &p.attach, &p.tick, &p.init, &p.program} {
		if *h, err = vm.call(ctx, "qjs_get_prop_uint32", uint64(all), uint64(i)); err != nil {
			return p, err
		}
	}
	fn, err := vm.newHostFunction(ctx, JSNodeFunction)
	if err != nil {
		return p, err
	}
	if _, err := vm.callFunction(ctx, p.init, p.undefined, fn); err != nil {
		return p, err
	}
	return p, vm.free(ctx, all, fn, p.init)
}

// withNodeFunction returns ctx whose host functions include JSNodeFunction
// besides those ctx already carries.
func withNodeFunction(ctx context.Context) context.Context {
	fns := JSHostFunctions{JSNodeFunction: nodeOps}
	for name, fn := range jsHostFunctionsFrom(ctx) {
		fns[name] = fn
	}
	return WithJSHostFunctions(ctx, fns)
}

// JSTool is a tool as the glue loads it.
type JSTool struct {
	// Name is the module name of the bundle (shown in stack traces).
	Name string
	// Source is the bundled ES module.
	Source []byte
	// Export selects the tool among the module's exports ("" = the module
	// itself, or its default export).
	Export string
}

// JSEntry is what the load driver leaves for the run driver: handles of the
// prelude's functions inside the snapshot, and what the tool says of itself.
type JSEntry struct {
	run, take, tick, undefined, yes, no uint32
	// Info is what the tool says of itself (see JSToolInfo).
	Info JSToolInfo
}

func (e JSEntry) loop() loop { return loop{e.tick, e.undefined, e.yes, e.no} }

// JSToolInfo is what a tool object says of itself, in the shape the ai
// package's tool() gives it, as loading found it: its title and
// description, and its input schema (inputSchema, or parameters) and
// output schema (outputSchema) converted to JSON Schema in the sandbox by
// the library that made them (zod 3 and 4, Standard JSON Schema, the ai
// package's jsonSchema(), or a plain JSON Schema object). A factory's tool
// exists only in an execution: a factory says nothing.
type JSToolInfo struct {
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema and OutputSchema are JSON Schemas (an object or a
	// boolean, at most 256 KiB), nil when the tool has none or it could
	// not be converted.
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Notes say why something the tool has is missing here: a getter
	// that threw, a conversion that failed, a schema too large.
	Notes []string `json:"notes,omitempty"`
}

// jsInfo is the prelude's account of the tool (take()'s info), each
// schema as JSON text.
type jsInfo struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Input       *string  `json:"input"`
	Output      *string  `json:"output"`
	Notes       []string `json:"notes"`
}

// toolInfo is what the account says, schemas that are not JSON Schemas
// left out with a note.
func (i *jsInfo) toolInfo() JSToolInfo {
	if i == nil {
		return JSToolInfo{}
	}
	t := JSToolInfo{Title: i.Title, Description: i.Description, Notes: i.Notes}
	for _, s := range []struct {
		name string
		text *string
		dst  *json.RawMessage
	}{{"input", i.Input, &t.InputSchema}, {"output", i.Output, &t.OutputSchema}} {
		if s.text == nil {
			continue
		}
		b := []byte(*s.text)
		if !json.Valid(b) || (b[0] != '{' && *s.text != "true" && *s.text != "false") {
			t.Notes = append(t.Notes, fmt.Sprintf("the %s schema is not a JSON Schema (an object or a boolean)", s.name))
			continue
		}
		*s.dst = b
	}
	return t
}

// jsLoaded is the load driver's output.
type jsLoaded struct {
	K       string    `json:"k"` // "ok", or a ToolLoadError kind
	Message string    `json:"message,omitempty"`
	Entry   [6]uint32 `json:"entry"`
	JSToolInfo
}

// ParseJSLoad decodes the load driver's output: the entry of a loaded tool,
// with what the tool says of itself, or a *ToolLoadError saying why the
// tool could not be loaded.
func ParseJSLoad(b []byte) (JSEntry, error) {
	var l jsLoaded
	if err := json.Unmarshal(b, &l); err != nil {
		return JSEntry{}, fmt.Errorf("quickjs: load driver output: %w", err)
	}
	if l.K != "ok" {
		return JSEntry{}, &ToolLoadError{Kind: l.K, Message: l.Message}
	}
	return JSEntry{run: l.Entry[0], take: l.Entry[1], tick: l.Entry[2], undefined: l.Entry[3], yes: l.Entry[4], no: l.Entry[5],
		Info: l.JSToolInfo}, nil
}

func (l jsLoaded) encode() []byte {
	b, _ := json.Marshal(l)
	return b
}

// ToolLoadError says why a tool could not be loaded into the engine: it
// threw while its module was evaluated (Kind "error"), its export was not
// found ("notfound"), or it has no execute ("invalid").
type ToolLoadError struct {
	Kind    string
	Message string
}

func (e *ToolLoadError) Error() string { return e.Message }

// QuickJSLoad returns the driver that initializes a fresh engine, evaluates
// the prelude and the tool, and resolves the tool's export. The instance it
// leaves behind is what gets snapshotted. Its output (see ParseJSLoad) is the
// JSEntry the run driver needs, or the tool's problem: a tool that throws
// while loading, or lacks its export, still completes the driver, so that
// only the engine's own failures (limits, traps) are errors.
func QuickJSLoad(tool JSTool) func(ctx context.Context, inst host.Instance) ([]byte, error) {
	return func(ctx context.Context, inst host.Instance) ([]byte, error) {
		vm := jsVM{inst}
		ctx = withNodeFunction(WithJSModules(ctx, JSModules{tool.Name: tool.Source}))
		p, err := vm.boot(ctx)
		if err != nil {
			return nil, err
		}
		if err := vm.free(ctx, p.script, p.main, p.program); err != nil {
			return nil, err
		}
		entry := JSEntry{run: p.run, take: p.take, tick: p.tick, undefined: p.undefined, yes: p.yes, no: p.no}
		load, attach := p.load, p.attach

		ns, err := vm.eval(ctx, tool.Source, tool.Name, evalModule)
		var fail *host.GuestFailure
		if errors.As(err, &fail) {
			return jsLoaded{K: "error", Message: fail.Msg}.encode(), nil
		}
		if err != nil {
			return nil, err
		}
		name, err := vm.newString(ctx, tool.Export)
		if err != nil {
			return nil, err
		}
		if _, err := vm.callFunction(ctx, load, entry.undefined, ns, name); err != nil {
			return nil, err
		}
		for _, v := range []uint32{ns, name, load} {
			if _, err := vm.call(ctx, "qjs_free_value", uint64(v)); err != nil {
				return nil, err
			}
		}
		if err := vm.drainJobs(ctx, entry.loop()); err != nil {
			return nil, err
		}
		st, err := vm.take(ctx, entry)
		if err != nil {
			return nil, err
		}
		switch st.K {
		case "ok":
		case "pending":
			return jsLoaded{K: "error", Message: "the tool's top-level await never settles"}.encode(), nil
		default:
			return jsLoaded{K: st.K, Message: st.Message}.encode(), nil
		}
		// The console's log function is bound only now, so that the tool's
		// top-level code logs nothing (as before any execution) and its
		// engine holds no host function before it is admitted. The function
		// reaches the host only through the prelude's console.
		logFn, err := vm.newHostFunction(ctx, jsToolLog)
		if err != nil {
			return nil, err
		}
		if _, err := vm.callFunction(ctx, attach, entry.undefined, logFn); err != nil {
			return nil, err
		}
		for _, v := range []uint32{logFn, attach} {
			if _, err := vm.call(ctx, "qjs_free_value", uint64(v)); err != nil {
				return nil, err
			}
		}
		// Collect the garbage of loading, so that every execution starts
		// from the smallest heap.
		if _, err := vm.call(ctx, "qjs_run_gc"); err != nil {
			return nil, err
		}
		return jsLoaded{K: "ok", Entry: [6]uint32{entry.run, entry.take, entry.tick, entry.undefined, entry.yes, entry.no},
			JSToolInfo: st.Info.toolInfo()}.encode(), nil
	}
}

// jsState is the prelude's report (take()).
type jsState struct {
	K       string  `json:"k"`
	Output  *string `json:"output"`
	Message string  `json:"message"`
	// Name, Text, Code and Recoverable describe an Error the tool threw
	// (K "error"): its name, its message, and its code and recoverable
	// properties when they are a string and a boolean.
	Name        string  `json:"name"`
	Text        string  `json:"text"`
	Code        *string `json:"code"`
	Recoverable *bool   `json:"recoverable"`
	// Info is what a tool says of itself, in the report that ends loading
	// it.
	Info *jsInfo `json:"info"`
}

// exception is what the report says of an exception that ended the run,
// nil when it did not end in one.
func (st jsState) exception() *JSException {
	switch st.K {
	case "error":
		e := &JSException{Name: st.Name, Message: st.Text, Description: st.Message, Recoverable: st.Recoverable}
		if st.Name == "" && st.Text == "" {
			e.Message = st.Message // a thrown value that is not an Error
		}
		if st.Code != nil {
			e.Code = *st.Code
		}
		return e
	case "invalid":
		// A factory that gave no tool: the export is not a tool after all.
		no := false
		return &JSException{Message: st.Message, Description: "TOOL_INVALID: " + st.Message, Code: "TOOL_INVALID", Recoverable: &no}
	}
	return nil
}

// result is what the prelude's report means for the host: the output (empty
// for none) or the failure. what names the guest in messages ("tool",
// "script").
func (st jsState) result(what string, maxOutput int) ([]byte, error) {
	switch st.K {
	case "ok":
		if st.Output == nil {
			return nil, nil
		}
		if len(*st.Output) > maxOutput {
			return nil, host.ErrOutputTooLarge
		}
		return []byte(*st.Output), nil
	case "none":
		return nil, nil
	case "notjson":
		return nil, &host.OutputNotJSONError{Msg: st.Message}
	case "pending":
		return nil, &host.GuestFailure{Msg: "the " + what + "'s promise never settled: nothing was left to run it (no pending job or timer; the sandbox has no I/O)"}
	case "invalid":
		return nil, &host.GuestFailure{Msg: "TOOL_INVALID: " + st.Message, Invalid: true}
	case "error":
		return nil, &host.GuestFailure{Msg: st.Message}
	}
	return nil, fmt.Errorf("quickjs: the prelude reported the unknown state %q", st.K)
}

// maxState bounds what take() may return: the output limit plus the log and
// room for the envelope.
const maxState = 64 << 20

func (vm jsVM) take(ctx context.Context, entry JSEntry) (jsState, error) {
	v, err := vm.callFunction(ctx, entry.take, entry.undefined)
	if err != nil {
		return jsState{}, err
	}
	b, n, ok, err := vm.readString(ctx, v, maxState)
	if err != nil {
		return jsState{}, err
	}
	if !ok {
		return jsState{}, fmt.Errorf("%w (%d bytes)", host.ErrOutputTooLarge, n)
	}
	var st jsState
	if err := json.Unmarshal(b, &st); err != nil {
		return jsState{}, fmt.Errorf("quickjs: the prelude's state is not JSON: %w", err)
	}
	return st, nil
}

// JSCall is one execution's request to a loaded tool.
type JSCall struct {
	// Input is the canonical JSON input (the tool's params).
	Input []byte
	// Env is the request's env as JSON (nil means {}): configuration for
	// factories, never audited.
	Env []byte
	// Seed seeds Math.random.
	Seed [32]byte
	// MaxOutput bounds the output.
	MaxOutput int
	// Log, when set, receives each console call of the tool as it is
	// made, on the goroutine running the execution (which waits for it).
	// It changes nothing in the execution.
	Log func(JSLogEntry)
}

// JSResult is what an execution of a tool produced besides its output.
type JSResult struct {
	// Log is the tool's console output (bounded; never audited): a line per
	// console call, its message and data, prefixed "warn: " or "error: "
	// for those levels.
	Log string
	// Exception describes the exception that ended the execution, nil when
	// it did not end in one (never audited).
	Exception *JSException
}

// JSLogEntry is one console call of a tool.
type JSLogEntry struct {
	// Level is "debug" (console.debug, trace), "info" (log, info), "warn"
	// or "error".
	Level string
	// Message is the call's arguments shown and joined by spaces, or, for
	// console.log("message", {...}), the message alone.
	Message string
	// Data is the JSON of the object in console.log("message", {...}), nil
	// for other calls.
	Data json.RawMessage
}

// JSException is what an exception that ended a tool's execution says of
// itself, for the caller only: its text may be anything the tool chose.
type JSException struct {
	// Name and Message are the Error's own (Message is the whole
	// description for a thrown value that is not an Error).
	Name, Message string
	// Description is the name, message and the tool's stack frames, as the
	// execution's failure message carries them.
	Description string
	// Code is the Error's code property when it is a string ("TOOL_INVALID"
	// for a factory that gave no tool).
	Code string
	// Recoverable is the Error's recoverable property when it is a boolean.
	Recoverable *bool
}

// jsToolLog is the host function a tool's console writes through: its
// arguments are the level, the message and the data's JSON (or ""); it
// returns "full" once the log is full, else "".
const jsToolLog = "wasmgate.log"

// maxJSLog bounds a tool's console log (JSResult.Log).
const maxJSLog = 64 << 10

// jsLogTruncated ends a log that reached maxJSLog.
const jsLogTruncated = "[log truncated at 64 KiB]"

// jsConsole receives one execution's console calls: it keeps the bounded
// log and hands each entry to emit as it comes. What it does depends only
// on the calls, never on emit, so that observing an execution changes
// nothing the guest sees (its fuel above all).
type jsConsole struct {
	log  strings.Builder
	full bool
	emit func(JSLogEntry)
}

func (c *jsConsole) write(_ context.Context, args []string) (string, error) {
	if len(args) != 3 {
		return "", fmt.Errorf("want level, message and data, got %d arguments", len(args))
	}
	if c.full {
		return "full", nil
	}
	e := JSLogEntry{Level: args[0], Message: args[1]}
	line := e.Message
	if args[2] != "" {
		e.Data = json.RawMessage(args[2])
		line += " " + args[2]
	}
	prefix := ""
	if e.Level == "warn" || e.Level == "error" {
		prefix = e.Level + ": "
	}
	line = prefix + line + "\n"
	if room := maxJSLog - c.log.Len(); len(line) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut-- // never half a character
		}
		c.log.WriteString(line[:cut])
		c.log.WriteString("\n" + jsLogTruncated + "\n")
		c.full = true
		// The entry's message as far as it fits, then the notice.
		if fits := room - len(prefix); fits > 0 {
			c.send(JSLogEntry{Level: e.Level, Message: strings.ToValidUTF8(e.Message[:min(fits, len(e.Message))], "")})
		}
		c.send(JSLogEntry{Level: "warn", Message: jsLogTruncated})
		return "full", nil
	}
	c.log.WriteString(line)
	c.send(e)
	return "", nil
}

func (c *jsConsole) send(e JSLogEntry) {
	if c.emit != nil {
		c.emit(e)
	}
}

// QuickJSRun returns the driver of one execution of the tool loaded as entry,
// in an instance started from the snapshot taken after loading. The output
// is the tool's result as JSON, or empty when it returned undefined. A
// thrown exception is a *GuestFailure (described in res.Exception), a
// result with no JSON form an *OutputNotJSONError, and the tool's console
// log is left in res, each call handed to call.Log as it is made.
func QuickJSRun(entry JSEntry, call JSCall, res *JSResult) func(ctx context.Context, inst host.Instance) ([]byte, error) {
	return func(ctx context.Context, inst host.Instance) ([]byte, error) {
		vm := jsVM{inst}
		console := &jsConsole{emit: call.Log}
		defer func() { res.Log = console.log.String() }()
		// The log function reaches the host only through the prelude's
		// console, the Node function only through its wrappers.
		ctx = withNodeFunction(WithJSHostFunctions(ctx, JSHostFunctions{jsToolLog: console.write}))
		env := []byte("{}")
		if len(call.Env) > 0 {
			// One line: the prelude splits its argument at newlines.
			var compact bytes.Buffer
			if err := json.Compact(&compact, call.Env); err != nil {
				return nil, fmt.Errorf("quickjs: env is not JSON: %w", err)
			}
			env = compact.Bytes()
		}
		arg := make([]byte, 0, 66+len(env)+len(call.Input))
		arg = hex.AppendEncode(arg, call.Seed[:])
		arg = append(append(append(arg, '\n'), env...), '\n')
		arg = append(arg, call.Input...)
		a, err := vm.newString(ctx, string(arg))
		if err != nil {
			return nil, err
		}
		if _, err := vm.callFunction(ctx, entry.run, entry.undefined, a); err != nil {
			return nil, interrupted(ctx, err)
		}
		if err := vm.drainJobs(ctx, entry.loop()); err != nil {
			return nil, interrupted(ctx, err)
		}
		st, err := vm.take(ctx, entry)
		if err != nil {
			return nil, err
		}
		res.Exception = st.exception()
		return st.result("tool", call.MaxOutput)
	}
}

// interrupted reports an exception raised because the deadline passed (the
// engine's interrupt handler) as the deadline itself.
func interrupted(ctx context.Context, err error) error {
	var fail *host.GuestFailure
	if errors.As(err, &fail) && ctx.Err() != nil && strings.Contains(fail.Msg, "interrupted") {
		return ctx.Err()
	}
	return err
}

var preludeDigest = sync.OnceValue(func() string {
	sum := blake3.Sum256(quickJSPrelude)
	return hex.EncodeToString(sum[:])
})
