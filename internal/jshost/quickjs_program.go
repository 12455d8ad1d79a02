package jshost

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"github.com/wasmgate/wasmgate/internal/host"
	"strings"
	"unicode/utf8"
)

// Programs (wasmgate node): a bundled Node program run once in a fresh
// engine, as node runs a file. Its streams reach the host through two host
// functions whose behaviour the caller puts in the ctx
// (WithJSHostFunctions); the engine itself still has no I/O.

// The host functions a program's engine is given.
const (
	// JSProgramWrite receives what the program writes, as it writes it: its
	// arguments are the file descriptor ("1" stdout, "2" stderr), the kind
	// of data ("s": text; "b": bytes, one character per byte, see
	// JSProgramBytes) and the data. It returns "". A host that refuses more
	// output panics with ErrOutputTooLarge, which stops the engine.
	JSProgramWrite = "wasmgate.write"
	// JSProgramExit ends the program with the exit status in its argument
	// (decimal, 0 to 255). It never returns: the host function panics with
	// an *ExitError, which stops the engine where it is, so that nothing of
	// the program runs after process.exit whatever it catches.
	JSProgramExit = "wasmgate.exit"
)

// JSProgram is a program as the glue runs it.
type JSProgram struct {
	// Name is the module name of the bundle (shown in stack traces).
	Name string
	// Source is the bundled ES module.
	Source []byte
	// Argv is process.argv.
	Argv []string
	// Stdin is what process.stdin reads.
	Stdin []byte
	// Seed seeds Math.random.
	Seed [32]byte
}

// JSProgramBytes decodes the data of a write of kind "b" (a character per
// byte) or "s" (text) into the bytes the program wrote. Text is written
// as Node writes a string: UTF-8, each lone surrogate (which the engine
// hands over as its three-byte WTF-8 form) as U+FFFD.
func JSProgramBytes(kind, data string) []byte {
	if kind == "b" {
		out := make([]byte, 0, len(data))
		for _, r := range data {
			out = append(out, byte(r))
		}
		return out
	}
	if utf8.ValidString(data) {
		return []byte(data)
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); {
		if data[i] == 0xed && i+2 < len(data) && data[i+1] >= 0xa0 && data[i+1] <= 0xbf {
			out = append(out, "\uFFFD"...)
			i += 3
			continue
		}
		r, n := utf8.DecodeRuneInString(data[i:])
		out = utf8.AppendRune(out, r)
		i += n
	}
	return out
}

// latin1 is b as a string of one character per byte (U+0000 to U+00FF),
// the form in which bytes cross into the engine.
func latin1(b []byte) string {
	var s strings.Builder
	s.Grow(len(b) + len(b)/4)
	for _, c := range b {
		s.WriteRune(rune(c))
	}
	return s.String()
}

// QuickJSProgram returns the driver that runs a program in a fresh engine:
// it evaluates the prelude, gives the program its host functions, argv and
// stdin, evaluates the program's module and runs the event loop until
// nothing is left to run, then ends the program as Node does at that point
// (the "exit" listeners, then the status process.exitCode says).
//
// The program always ends through JSProgramExit: the driver returns the
// *ExitError that host function raised (status 0 included), or what
// stopped the engine first (a limit, ErrOutputTooLarge from the write host
// function). An uncaught exception is written to stderr by the prelude, as
// Node writes it, and is exit status 1.
func QuickJSProgram(prog JSProgram) func(ctx context.Context, inst host.Instance) ([]byte, error) {
	return func(ctx context.Context, inst host.Instance) ([]byte, error) {
		vm := jsVM{inst}
		tracker := &rejectionTracker{}
		ctx = withNodeFunction(WithJSModules(ctx, JSModules{prog.Name: prog.Source}))
		ctx = context.WithValue(ctx, rejectionTrackerKey{}, tracker)
		p, err := vm.boot(ctx)
		if err != nil {
			return nil, err
		}
		entry := JSEntry{take: p.take, tick: p.tick, undefined: p.undefined, yes: p.yes, no: p.no}
		if err := vm.free(ctx, p.load, p.run, p.script, p.main, p.attach); err != nil {
			return nil, err
		}
		var args []uint32
		for _, name := range []string{JSProgramWrite, JSProgramExit} {
			f, err := vm.newHostFunction(ctx, name)
			if err != nil {
				return nil, err
			}
			args = append(args, f)
		}
		argv, err := json.Marshal(prog.Argv)
		if err != nil {
			return nil, err
		}
		for _, s := range []string{string(argv), latin1(prog.Stdin), hex.EncodeToString(prog.Seed[:])} {
			v, err := vm.newString(ctx, s)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		fns, err := vm.callFunction(ctx, p.program, p.undefined, args...)
		if err != nil {
			return nil, err
		}
		if err := vm.free(ctx, append(args, p.program)...); err != nil {
			return nil, err
		}
		var start, finish, rejection uint32
		for i, h := range []*uint32{&start, &finish, &rejection} {
			if *h, err = vm.call(ctx, "qjs_get_prop_uint32", uint64(fns), uint64(i)); err != nil {
				return nil, err
			}
		}
		if err := vm.free(ctx, fns); err != nil {
			return nil, err
		}
		// Rejections no handler takes are the prelude's to track, as Node
		// tracks them: from here on the engine reports each one.
		*tracker = rejectionTracker{fn: rejection, undefined: entry.undefined, yes: entry.yes, no: entry.no}
		if _, err := vm.call(ctx, "qjs_set_promise_rejection_handler", 1); err != nil {
			return nil, err
		}

		ns, err := vm.eval(ctx, prog.Source, prog.Name, evalModule)
		if err != nil {
			// The module did not even start (the engine refused its
			// syntax): bundling normally catches that first.
			return nil, interrupted(ctx, err)
		}
		if _, err := vm.callFunction(ctx, start, entry.undefined, ns); err != nil {
			return nil, interrupted(ctx, err)
		}
		if err := vm.free(ctx, ns, start); err != nil {
			return nil, err
		}
		if err := vm.drainJobs(ctx, entry.loop()); err != nil {
			return nil, interrupted(ctx, err)
		}
		if _, err := vm.callFunction(ctx, finish, entry.undefined); err != nil {
			return nil, interrupted(ctx, err)
		}
		// finish ends in JSProgramExit, which never returns.
		return nil, &host.GuestFailure{Msg: "the program did not exit"}
	}
}
