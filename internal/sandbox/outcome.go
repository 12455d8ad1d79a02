package sandbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/sys"

	"github.com/wasmgate/wasmgate/internal/host"
)

// OutcomeKind is what became of one execution, as far as the engine can
// tell. Package pipeline maps each kind to a status and reason codes.
type OutcomeKind int

const (
	// Completed: the guest returned normally (ABI v1 status 0, or a
	// command that exited 0 or returned from _start).
	Completed OutcomeKind = iota
	// Failed: the guest reported an error (ABI v1 status 1, a nonzero exit)
	// or trapped. Message says which.
	Failed
	// FuelExhausted: the instruction budget ran out.
	FuelExhausted
	// StackExhausted: the call depth limit was reached.
	StackExhausted
	// MemoryExhausted: the guest needed more memory (linear memory and
	// tables together) than memory_pages allows and failed because of it.
	MemoryExhausted
	// Timeout: timeout_ms passed before the guest finished.
	Timeout
	// OutputTooLarge: the guest produced more than max_output_bytes.
	OutputTooLarge
	// OutputNotJSON: the guest's result has no JSON form (a JS tool
	// returned a function, a BigInt or a cycle).
	OutputNotJSON
)

var outcomeNames = [...]string{"completed", "failed", "fuel_exhausted", "stack_exhausted", "memory_exhausted", "timeout", "output_too_large", "output_not_json"}

func (k OutcomeKind) String() string {
	if int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Outcome is the result of one execution.
type Outcome struct {
	Kind OutcomeKind
	// Output is the guest's output when Kind is Completed; empty means the
	// guest produced none.
	Output []byte
	// Message explains a non-Completed outcome. For Failed it may hold the
	// guest's own error text: show it to the caller, never audit it.
	Message string
	// Invalid is set on a Failed outcome whose guest proved, when called,
	// not to be an executor at all (a JS factory that gave no tool), so
	// that callers tell it from an exception without reading Message.
	Invalid bool
	// FuelUsed is the instruction budget consumed.
	FuelUsed uint64
	// Stderr is the guest's bounded diagnostic output (WASI guests).
	Stderr []byte
	// ExitCode is, for a program run (a Node program, jstool.Program), the
	// exit status it ended with when it ended by itself (Completed: 0;
	// Failed: another), and -1 when a limit stopped it. Other executors
	// leave it 0.
	ExitCode int
}

// runState is what the host observed during one execution, beyond the error
// the engine returned.
type runState struct {
	memoryRefused bool   // a memory.grow or table.grow was refused because of memory_pages
	fuelLeft      int64  // the fuel global when the guest stopped
	interrupted   bool   // the host drove the fuel global negative (deadline or cancellation)
	depth         uint32 // the call depth when the guest stopped
	maxDepth      uint32 // the module's call-depth limit (0: MaxCallDepth)
}

// depthLimit is the call-depth limit the module was instrumented with.
func (st runState) depthLimit() uint32 {
	if st.maxDepth == 0 {
		return MaxCallDepth
	}
	return st.maxDepth
}

// classify turns the error of an execution into an Outcome. It is the one
// place traps, exits and limit breaches are told apart. parent is the
// caller's context: when it is done, the run was cancelled rather than
// judged, and the error is returned instead.
func classify(parent context.Context, err error, st runState) (Outcome, error) {
	if err == nil {
		return Outcome{Kind: Completed}, nil
	}
	var exit *host.ExitError
	if errors.As(err, &exit) {
		if exit.Code == 0 {
			return Outcome{Kind: Completed}, nil
		}
		if st.memoryRefused {
			return Outcome{Kind: MemoryExhausted, Message: fmt.Sprintf("guest exited with code %d after a memory.grow or table.grow beyond memory_pages was refused", exit.Code)}, nil
		}
		return Outcome{Kind: Failed, Message: fmt.Sprintf("guest exited with code %d", exit.Code)}, nil
	}
	if errors.Is(err, host.ErrOutputTooLarge) {
		return Outcome{Kind: OutputTooLarge, Message: "output exceeds max_output_bytes"}, nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if perr := parent.Err(); perr != nil {
			return Outcome{}, fmt.Errorf("execution cancelled: %w", perr)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return Outcome{Kind: Timeout, Message: "timeout_ms elapsed"}, nil
		}
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		// Only wazero's own context watcher raises sys.ExitError here (our
		// WASI raises host.ExitError).
		if perr := parent.Err(); perr != nil {
			return Outcome{}, fmt.Errorf("execution cancelled: %w", perr)
		}
		return Outcome{Kind: Timeout, Message: "timeout_ms elapsed"}, nil
	}
	var notJSON *host.OutputNotJSONError
	if errors.As(err, &notJSON) {
		return Outcome{Kind: OutputNotJSON, Message: notJSON.Error()}, nil
	}
	var fail *host.GuestFailure
	if errors.As(err, &fail) {
		if st.memoryRefused {
			return Outcome{Kind: MemoryExhausted, Message: fail.Msg + " (after a memory.grow or table.grow beyond memory_pages was refused)"}, nil
		}
		return Outcome{Kind: Failed, Message: fail.Msg, Invalid: fail.Invalid}, nil
	}
	var ge *host.GuestError
	if errors.As(err, &ge) {
		return Outcome{Kind: Failed, Message: ge.Error()}, nil
	}
	// A trap is a verdict only when it ends the execution itself: a driver
	// that wraps one has made it a failure of its own (an engine failure).
	if trap, ok := err.(*trapError); ok {
		// The instrumented checks all trap with unreachable; the globals
		// say which limit it was. A guest's own trap happens with fuel left
		// (charges are checked before a block runs) and the depth in range.
		switch {
		case trap.code == trapStackOverflow && st.depth <= st.depthLimit():
			// The engine's native stack ran out before the depth limit
			// (frames larger than any toolchain emits).
			return Outcome{Kind: StackExhausted, Message: "call stack exhausted"}, nil
		case trap.code == trapInterrupted || st.interrupted || st.fuelLeft < interruptThreshold:
			if perr := parent.Err(); perr != nil {
				return Outcome{}, fmt.Errorf("execution cancelled: %w", perr)
			}
			return Outcome{Kind: Timeout, Message: "timeout_ms elapsed"}, nil
		case st.fuelLeft < 0 || trap.code == trapOutOfFuel:
			return Outcome{Kind: FuelExhausted, Message: "fuel exhausted"}, nil
		case st.depth > st.depthLimit() || trap.code == trapStackOverflow:
			return Outcome{Kind: StackExhausted, Message: fmt.Sprintf("call depth exceeded %d", st.depthLimit())}, nil
		case st.memoryRefused:
			return Outcome{Kind: MemoryExhausted, Message: "trap (" + string(trap.code) + ") after a memory.grow or table.grow beyond memory_pages was refused"}, nil
		}
		return Outcome{Kind: Failed, Message: "trap: " + string(trap.code)}, nil
	}
	if st.interrupted {
		// The host stopped the guest at its deadline, and a driver wrapped
		// what that caused in an error of its own (the QuickJS glue's
		// prelude, run at the start of each program, reports "the prelude
		// failed: … unreachable"): the deadline still ended the run. On a
		// loaded machine a short timeout_ms can pass before the tool's own
		// code starts.
		if perr := parent.Err(); perr != nil {
			return Outcome{}, fmt.Errorf("execution cancelled: %w", perr)
		}
		return Outcome{Kind: Timeout, Message: "timeout_ms elapsed"}, nil
	}
	return Outcome{}, fmt.Errorf("engine failure: %w", err)
}

// trapCode names a trap engine-neutrally, with the WebAssembly spec's names
// as wazero spells them.
type trapCode string

// The traps classify tells apart; the others (out of bounds memory access,
// integer divide by zero, ...) are ordinary executor exceptions and keep
// their engine-neutral name for the message.
const (
	trapUnreachable   trapCode = "unreachable"
	trapStackOverflow trapCode = "stack overflow"
	// trapInterrupted: the engine stopped the guest at the deadline
	// (wasmtime's epoch interruption).
	trapInterrupted trapCode = "interrupted"
	// trapOutOfFuel: the engine's own fuel ran out (wasmtime's native fuel,
	// in benchmarks only).
	trapOutOfFuel trapCode = "out of fuel"
)

// trapError is a trap in engine-neutral terms. Each engine turns its own trap
// errors into one before classify sees them, so that one place maps traps
// to outcomes whatever the engine.
type trapError struct {
	code trapCode
	// err is the engine's own error, with its stack trace.
	err error
}

func (t *trapError) Error() string { return t.err.Error() }

func (t *trapError) Unwrap() error { return t.err }
