package pyhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Tool is Python code loaded as an executor: the interpreter's snapshot
// with the code imported, called once per execution in a fresh (or
// recycled) instance.
type Tool struct {
	reactor  sandbox.Reactor
	snap     *sandbox.Snapshot
	entry    entry
	digest   string
	manifest sandbox.Manifest
	// declared is what the executor class says of itself (its attributes,
	// as manifest JSON), nil for a function.
	declared []byte
	// request: the code is an executor class, whose execute gets the whole
	// request.
	request  bool
	loadFuel uint64
	loadOut  sandbox.Outcome
}

// Load starts the interpreter on c and snapshots it with the code loaded,
// under lim (LoadLimits's where lim leaves a field unset).
//
// # Errors
//
// A *LoadError when the code cannot be loaded (its import raised, it has no
// executor, its class's attributes are not a manifest), and the loading's
// own errors: the module not admitted, the load running out of its limits.
func Load(ctx context.Context, engine sandbox.Engine, c Code, lim sandbox.Limits) (*Tool, error) {
	r, err := engine.LoadReactor(ctx, module, Glue())
	if err != nil {
		return nil, fmt.Errorf("the CPython module: %w", err)
	}
	id, err := digest(r.Info().Digest, c)
	if err != nil {
		return nil, err
	}
	snap, e, out, err := snapshot(ctx, r, c, lim.WithDefaults(LoadLimits()))
	if err != nil {
		return nil, err
	}
	if out.Kind != sandbox.Completed {
		if out.Kind == sandbox.Failed && out.Invalid {
			return nil, &LoadError{Msg: out.Message}
		}
		return nil, &OutcomeError{Outcome: out}
	}
	t := &Tool{reactor: r, snap: snap, entry: e, digest: id, loadFuel: out.FuelUsed, loadOut: out}
	if len(e.Manifest) > 0 && string(e.Manifest) != "null" {
		t.declared, t.request = e.Manifest, true
	}
	return t, nil
}

// stackPointer is the global that holds CPython's C stack pointer, as
// sandbox.PrepareInterpreter exports it (global 0, the only mutable one).
const stackPointer = sandbox.InterpreterGlobalPrefix + "0"

// OutcomeError is a load that stopped at a limit or failed in the
// interpreter itself.
type OutcomeError struct{ Outcome sandbox.Outcome }

func (e *OutcomeError) Error() string {
	return fmt.Sprintf("loading the Python code stopped: %s (%s)", e.Outcome.Kind, e.Outcome.Message)
}

// Declared is the manifest (JSON) the executor class declares by its
// attributes, nil for a function executor.
func (t *Tool) Declared() []byte { return t.declared }

// ModuleDigest identifies the executor (Digest).
func (t *Tool) ModuleDigest() string { return t.digest }

// LoadFuel is the fuel loading took (not charged to executions).
func (t *Tool) LoadFuel() uint64 { return t.loadFuel }

// SnapshotBytes is the size of the memory every call starts from.
func (t *Tool) SnapshotBytes() int { return t.snap.MemoryBytes() }

// Run calls the code once on in (canonical JSON; for a program, its
// arguments and stdin as ProgramInput lays them out), with req for an
// executor class.
func (t *Tool) Run(ctx context.Context, in sandbox.Input, req sandbox.Request) (sandbox.Outcome, error) {
	if t.request {
		head, err := requestHeader(req)
		if err != nil {
			return sandbox.Outcome{}, err
		}
		in.Bytes = append(head, in.Bytes...)
	}
	return t.reactor.Run(ctx, t.snap, in, sandbox.Driver(t.entry.call))
}

// requestHeaderBytes is the size of the header an executor class's call
// reads before the payload (boot.py's _WG_HEAD): fixed, so that reading it
// costs the same fuel whatever the request's action, trace id and time.
const requestHeaderBytes = 1024

// requestHeader is req as JSON, padded with spaces to requestHeaderBytes.
func requestHeader(req sandbox.Request) ([]byte, error) {
	head, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if len(head) > requestHeaderBytes {
		return nil, fmt.Errorf("pyhost: the request's action, trace id and time take %d bytes as JSON; at most %d fit", len(head), requestHeaderBytes)
	}
	b := make([]byte, requestHeaderBytes, requestHeaderBytes+64)
	copy(b, head)
	for i := len(head); i < len(b); i++ {
		b[i] = ' '
	}
	return b, nil
}

// ProgramInput lays out a program's stdin for Run: its arguments (argv[0]
// the program's path) before the bytes it reads.
func ProgramInput(argv []string, stdin []byte) ([]byte, error) {
	a, err := json.Marshal(argv)
	if err != nil {
		return nil, err
	}
	if len(a) > 9_999_999_999 {
		return nil, errors.New("pyhost: the arguments are too long")
	}
	b := fmt.Appendf(nil, "%010d", len(a))
	b = append(b, a...)
	return append(b, stdin...), nil
}

// LoadLimits are the limits loading runs under where the caller sets none:
// starting CPython and importing code is heavier than any call.
func LoadLimits() sandbox.Limits {
	return sandbox.Limits{TimeoutMs: 120_000, Fuel: 400_000_000_000, MemoryPages: 8192, MaxOutputBytes: 1 << 20}
}

// DefaultLimits are a Python executor's limits where its route, manifest
// and caller set none: sandbox.DefaultLimits() but for fuel, time and
// memory, which CPython needs more of (docs/PYTHON.md has the measures).
func DefaultLimits() sandbox.Limits {
	d := sandbox.DefaultLimits().WithFuelPerMs(fuelPerMs)
	d.Fuel, d.TimeoutMs, d.MemoryPages = defaultFuel, defaultTimeoutMs, defaultMemoryPages
	return d
}

const (
	defaultFuel      = 20_000_000_000
	defaultTimeoutMs = 250_000
	fuelPerMs        = defaultFuel / defaultTimeoutMs
	// defaultMemoryPages (128 MiB).
	defaultMemoryPages = 2048
)
