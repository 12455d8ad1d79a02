package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/pyhost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

const pythonUsage = `Usage: wasmgate python [flags] FILE [ARGS...]

Runs a Python program (FILE, a .py file) once in the sandbox, on CPython 3.12
compiled to WebAssembly, as python3 runs it: it works where a tool runner
spawns "python FILE". Flags come before FILE; what follows FILE is the
program's (sys.argv[1:]).

- The program sees its directory at /app: sys.argv[0] and __file__ are
  /app/FILE, and it imports its sibling modules and packages from there.
  Nothing else of the host is there: open() of any other path, and any
  write, raises OSError.
- sys.stdin is this process's stdin, read to its end before the program
  starts (at most --max-payload-bytes); input() reads it line by line.
- sys.stdout and sys.stderr write to this process's stdout and stderr as the
  program flushes them (at most --max-output-bytes each).
- sys.exit(code) sets the exit status; an uncaught exception prints its
  traceback on stderr and is exit status 1, as is a program that does not
  compile (its SyntaxError on stderr).
- No network, environment (os.environ is empty), subprocesses or threads;
  the clock is fixed at 2000-01-01T00:00:00Z, and random numbers come from a
  stream seeded from the stdin: the same program, arguments and stdin give
  the same output on every run.

It is one governed action: --fuel, --timeout-ms and --memory-pages bound it,
and --audit appends one verdict (after its attempt) whose input_digest is the
BLAKE3 digest of the stdin bytes and output_digest that of the stdout bytes.
Exit status: the program's own; when a limit stops it, 3 and a one-line
reason on stderr ("wasmgate python: ..."); 2 for a usage error or a FILE that
cannot be read (nothing ran), 4 for an internal error.

Flags:
`

// pythonCmd runs a Python program: `wasmgate python [flags] FILE [ARGS...]`.
func (e env) pythonCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("python", e.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), pythonUsage)
		fs.PrintDefaults()
	}
	var auditFile, engineFlag, cacheDirFlag string
	def := pyhost.ProgramLimits()
	var limits sandbox.Limits
	fs.StringVar(&auditFile, "audit", "", "append the run's audit records to this JSON Lines file")
	auditLockWait := fs.Duration("audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	fs.StringVar(&engineFlag, "engine", string(sandbox.EngineWazero), engineUsage)
	fs.StringVar(&cacheDirFlag, "cache-dir", "", "keep compiled code and the interpreter's snapshots in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	fs.Int64Var(&limits.TimeoutMs, "timeout-ms", 0, fmt.Sprintf("the program's wall-clock limit in milliseconds (default %d)", def.TimeoutMs))
	fs.Uint64Var(&limits.Fuel, "fuel", 0, fmt.Sprintf("the program's instruction budget (default %d)", def.Fuel))
	fs.Var(uint32Flag{&limits.MemoryPages}, "memory-pages", fmt.Sprintf("the program's memory limit in 64 KiB pages (default %d)", def.MemoryPages))
	fs.Int64Var(&limits.MaxPayloadBytes, "max-payload-bytes", 0, fmt.Sprintf("the most stdin the program may be given, in bytes (default %d)", def.MaxPayloadBytes))
	fs.Int64Var(&limits.MaxOutputBytes, "max-output-bytes", 0, fmt.Sprintf("the most the program may write to stdout, and to stderr, in bytes each (default %d)", def.MaxOutputBytes))
	if err := fs.Parse(args); err != nil {
		return e.fail("python", &usageError{err.Error()})
	}
	if fs.NArg() == 0 {
		return e.fail("python", usagef("want a program FILE (a .py file), then its arguments"))
	}
	file, progArgs := fs.Arg(0), fs.Args()[1:]
	var err error
	if limits, err = zeroLimits(fs, limits); err != nil {
		return e.fail("python", err)
	}
	if err := limits.Validate(); err != nil {
		return e.fail("python", usagef("%v", err))
	}
	lim := limits.WithDefaults(def)
	engineName, err := sandbox.ParseEngineName(engineFlag)
	if err != nil {
		return e.fail("python", usagef("--engine: %v", err))
	}

	// A program that cannot be read is refused before anything runs (and
	// before the audit log is touched), as python3 refuses it (exit 2).
	code, err := pyhost.ProgramCode(file)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return e.fail("python", usagef("cannot open %s: no such file", file))
	case errors.Is(err, pyhost.ErrTree):
		return e.fail("python", usagef("%v", err))
	case err != nil:
		return e.fail("python", usagef("cannot read %s: %v", file, err))
	}
	rt, err := openRuntime(ctx, runtimeFlags{engine: engineName, cacheDir: cacheDirFlag, audit: auditFile, lockWait: *auditLockWait}, noRegistry)
	if err != nil {
		return e.fail("python", err)
	}
	defer rt.Close(context.WithoutCancel(ctx))
	var prog *pyhost.Program
	err = rt.UseEngine(ctx, func(ctx context.Context, engine sandbox.Engine) (err error) {
		prog, err = pyhost.NewProgram(ctx, engine, code, sandbox.Manifest{ExecutorID: "python", Version: pyhost.PythonVersion}, pyhost.ProgramOptions{
			Args:   progArgs,
			Stdout: e.stdout,
			Stderr: e.stderr,
		})
		return err
	})
	if err != nil {
		return e.fail("python", err)
	}
	stdin, err := readStdin(e.stdin, lim.MaxPayloadBytes)
	if err != nil {
		return e.fail("python", fmt.Errorf("reading stdin: %w", err))
	}

	res, err := rt.RunProgram(ctx, prog, pipeline.ProgramRequest{Action: "python", Stdin: stdin, Limits: limits})
	switch {
	case err != nil:
		// Cancelled, or the engine failed: the verdict is audited, the
		// error says what happened.
		return e.fail("python", err)
	case res.ExitCode != nil:
		if res.Status == pipeline.StatusSuccess || *res.ExitCode > 0 {
			return *res.ExitCode
		}
	}
	if res.Status == pipeline.StatusFailed {
		// The interpreter itself faulted (a trap), or the engine refused
		// it: say why.
		fmt.Fprintf(e.stderr, "wasmgate python: %s\n", res.Message)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "wasmgate python: %s\n", programReason(res, lim))
	return exitBlocked
}
