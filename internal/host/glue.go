package host

// Glue describes a kind of reactor module that the host drives export by
// export rather than through ABI v1 or _start: the QuickJS engine. Admission
// lets such a module import Imports (beyond the virtual WASI) and requires
// Exports; no other module may import them.
type Glue struct {
	// Name names the profile and the calling convention ("quickjs").
	Name string
	// Imports are the host functions the module may import.
	Imports []Function
	// Exports are the functions the host calls, with their signatures.
	Exports []Export
	// MaxCallDepth, when set, is the instrumented call-depth limit of the
	// module instead of the sandbox's default: for an interpreter whose
	// own recursion limits must bind first (CPython: each Python call made
	// through C takes a dozen Wasm frames).
	MaxCallDepth uint32
}

// Export is a function export the host calls.
type Export struct {
	Name            string
	Params, Results []ValueType
}

// GuestFailure is a guest's own report that it failed (an exception a tool
// threw, a status the guest returned): an executor exception, with the
// guest's message for the caller.
type GuestFailure struct {
	Msg string
	// Invalid: the guest proved, when called, not to be an executor at all
	// (a JS factory that gave no tool), rather than failing at its work.
	Invalid bool
}

func (e *GuestFailure) Error() string { return e.Msg }

// OutputNotJSONError is returned by a driver whose guest produced a value that
// has no JSON form (a function, a BigInt, a cycle).
type OutputNotJSONError struct{ Msg string }

func (e *OutputNotJSONError) Error() string { return "output is not JSON: " + e.Msg }
