package pyhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Programs: a Python program (wasmgate python FILE) run as python3 runs a
// file. The sandbox is an executor's (no network, no files outside the
// code's tree, no environment, fixed clocks); what a program adds is
// sys.argv, sys.stdin (the stdin read before the start), stdout and stderr
// written to the caller's streams as the program writes them, and an exit
// status.

// PythonVersion is the version of the interpreter (sys.version_info), and
// of the executor "python" in the audit log.
const PythonVersion = "3.12.0"

// programLimits is ProgramLimits's value, of which callers get copies.
//
// Measured (docs/PYTHON.md): a program that imports json, re, datetime,
// decimal and statistics and runs a loop of a million iterations uses 5.8
// billion units of fuel (3.5 s on wazero's compiler on the loaded 2-core
// machine) and needs 22 pages beyond the 467 of the snapshot it starts
// from (the 16 MiB buffer its C stack runs on included);
// a list of a million ints and a dict of 100,000 strings take 48 to 64 MiB,
// as in python3. The defaults give fuel 17 times the first and memory four
// times the second: a program may do more than an executor's call
// (DefaultLimits). Fuel, not the clock, ends runaway code, so that a
// verdict does not depend on the machine's load: the fastest-burning code
// measured (a bare loop, 2.6 billion units a second on wasmtime) spends
// the fuel in about 40 s, and the clock comes at the executors' rate
// (fuelPerMs), 25 times later than that.
var programLimits = sandbox.Limits{
	TimeoutMs:       programFuel / fuelPerMs,
	Fuel:            programFuel,
	MemoryPages:     4096,
	MaxPayloadBytes: 10 << 20,
	MaxOutputBytes:  10 << 20,
}

// programFuel is a program's default fuel.
const programFuel = 100_000_000_000

// ProgramLimits returns a program's limits where the request and the
// manifest set none: fuel, time and memory bound the run, MaxPayloadBytes
// the stdin and MaxOutputBytes each of stdout and stderr. The caller gets
// a copy.
func ProgramLimits() sandbox.Limits { return programLimits }

// ProgramCode is the code of the program file as python3 would run it:
// file's directory is its tree (AppRoot, sys.path[0]), and file is its
// main module at AppRoot/NAME.
//
// # Errors
//
// As Tree's.
func ProgramCode(file string) (Code, error) {
	files, roots, err := Tree(file, nil)
	if err != nil {
		return Code{}, err
	}
	return Code{Files: files, Roots: roots, Mode: ModeProgram, Main: AppRoot + "/" + filepath.Base(file)}, nil
}

// ProgramOptions say how a Program runs.
type ProgramOptions struct {
	// Args are the program's arguments, sys.argv[1:] (sys.argv[0] is the
	// program's virtual path, Code.Main).
	Args []string
	// Stdout and Stderr receive what the program writes, as it writes it
	// (nil: discarded). Each is bounded by the run's MaxOutputBytes.
	Stdout, Stderr io.Writer
}

// Program is a Python program as an executor, which the pipeline runs with
// RunProgram: each Execute runs it once, from the interpreter's snapshot
// with the program compiled, as python3 runs a file. in.Bytes is its stdin
// (in.Limits.MaxPayloadBytes bounds it; Execute does not check) and
// in.Digest their digest, which seeds its random numbers; in.Limits' unset
// fields come from ProgramLimits(), MaxOutputBytes bounding each of stdout
// and stderr.
//
// The Outcome is Completed for exit status 0, Failed for another status
// (an uncaught exception is status 1, its traceback on stderr; a program
// that does not compile is status 1, its SyntaxError on stderr), or the
// limit the program reached; its Output is what the program wrote to
// stdout, and its ExitCode the status it ended with, -1 when a limit or a
// fault of the interpreter stopped it.
type Program struct {
	tool     *Tool
	manifest sandbox.Manifest
	argv     []string
	stdout   io.Writer
	stderr   io.Writer
}

// NewProgram loads c (ModeProgram) on engine as an executor of identity m
// (its id and version, and the limits it runs under where a request sets
// none, before ProgramLimits()). The program is compiled here, once, into
// the snapshot every run starts from; none of its code runs until Execute.
//
// # Errors
//
// When c is not a program, and as Load's (a program that does not compile
// is no error: it fails when run, as in python3).
func NewProgram(ctx context.Context, engine sandbox.Engine, c Code, m sandbox.Manifest, opts ProgramOptions) (*Program, error) {
	if c.Mode != ModeProgram {
		return nil, fmt.Errorf("pyhost: NewProgram wants code of mode %q, not %q", ModeProgram, c.Mode)
	}
	if _, ok := c.Files[c.Main]; !ok {
		return nil, fmt.Errorf("pyhost: the program %s is not in its tree", c.Main)
	}
	t, err := Load(ctx, engine, c, sandbox.Limits{})
	if err != nil {
		return nil, err
	}
	argv := append([]string{c.Main}, opts.Args...)
	return &Program{tool: t, manifest: m, argv: argv, stdout: opts.Stdout, stderr: opts.Stderr}, nil
}

// Manifest implements the pipeline's Executor.
func (p *Program) Manifest() sandbox.Manifest { return p.manifest }

// DefaultLimits are the limits a run gets where its request and the
// manifest set none: ProgramLimits().
func (p *Program) DefaultLimits() sandbox.Limits { return ProgramLimits() }

// ModuleDigest implements the pipeline's Executor: the interpreter, the
// bootstrap and the program's tree (Digest).
func (p *Program) ModuleDigest() string { return p.tool.digest }

// Execute implements the pipeline's Executor: one run of the program.
//
// # Errors
//
// An error when ctx is cancelled or the engine failed.
func (p *Program) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	in.Limits = in.Limits.WithDefaults(ProgramLimits())
	b, err := ProgramInput(p.argv, in.Bytes)
	if err != nil {
		return sandbox.Outcome{}, err
	}
	var stdout []byte
	code := -1
	drive := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		sess := host.SessionFrom(ctx)
		// Set on every run, discarding when the caller gave no writer, so
		// that stderr is bounded alike whoever runs the program.
		sess.SetStreams(p.stdout, p.stderr)
		out, err := p.tool.entry.call(ctx, inst)
		stdout = sess.Stdout()
		var exit *host.ExitError
		switch {
		case errors.As(err, &exit):
			code = int(exit.Code)
		case err == nil:
			// The bootstrap ends every run with os._exit; a program
			// that replaced it returns here, as a program that ran to
			// its end.
			code = 0
		}
		return out, err
	}
	// The digest stays the stdin's: random numbers are seeded from what the
	// program reads, not from its arguments' layout.
	out, err := p.tool.reactor.Run(ctx, p.tool.snap, sandbox.Input{Bytes: b, Digest: in.Digest, Limits: in.Limits}, sandbox.Driver(drive))
	if err != nil {
		return out, err
	}
	out.Output = stdout
	switch {
	case out.Kind != sandbox.Completed && out.Kind != sandbox.Failed:
		out.ExitCode = -1 // a limit stopped it, whatever it was about to exit with
	case out.Kind == sandbox.Completed:
		out.ExitCode = 0
	default:
		out.ExitCode = code
		if code > 0 {
			out.Message = fmt.Sprintf("exit status %d", code)
		}
	}
	return out, nil
}
