package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

const nodeUsage = `Usage: wasmgate node [flags] FILE [ARGS...]

Runs a Node program (CommonJS or ES module as node tells them, any extension
or none, a "#!" line allowed; what it requires or imports, relative files and
node_modules beside it, is bundled at load) once in the sandbox, as node runs
it: it works where a tool runner spawns "node FILE". Flags come before FILE;
what follows FILE is the program's (process.argv.slice(2)).

- The program sees its tree at /app (its root: the nearest directory up from
  FILE holding package.json): __dirname, import.meta.url, process.argv[1] and
  process.cwd() are paths there, never the host's.
- process.stdin is this process's stdin, read to its end before the program
  starts (at most --max-payload-bytes); fs.readFileSync(0) and /dev/stdin
  read it too, and readline reads it line by line.
- process.stdout, process.stderr and the console write to this process's
  stdout and stderr as the program writes (at most --max-output-bytes each).
- process.exit(code) and process.exitCode set the exit status; an uncaught
  exception is written to stderr and is exit status 1.
- No network, file system, environment, child processes; timers run on a
  virtual clock.

It is one governed action: --fuel, --timeout-ms and --memory-pages bound it,
and --audit appends one verdict (after its attempt) whose input_digest is the
BLAKE3 digest of the stdin bytes and output_digest that of the stdout bytes.
Exit status: the program's own; when a limit stops it, 3 and a one-line
reason on stderr ("wasmgate node: ..."); 2 for a usage or bundling error
(nothing ran), 4 for an internal error.

Flags:
`

// nodeCmd runs a Node program: `wasmgate node [flags] FILE [ARGS...]`.
func (e env) nodeCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("node", e.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), nodeUsage)
		fs.PrintDefaults()
	}
	var auditFile, engineFlag, cacheDirFlag string
	def := jstool.ProgramLimits()
	var limits sandbox.Limits
	fs.StringVar(&auditFile, "audit", "", "append the run's audit records to this JSON Lines file")
	auditLockWait := fs.Duration("audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	fs.StringVar(&engineFlag, "engine", string(sandbox.EngineWazero), engineUsage)
	fs.StringVar(&cacheDirFlag, "cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	fs.Int64Var(&limits.TimeoutMs, "timeout-ms", 0, fmt.Sprintf("the program's wall-clock limit in milliseconds (default %d)", def.TimeoutMs))
	fs.Uint64Var(&limits.Fuel, "fuel", 0, fmt.Sprintf("the program's instruction budget (default: what the time limit covers, %d at the default)", def.Fuel))
	fs.Var(uint32Flag{&limits.MemoryPages}, "memory-pages", fmt.Sprintf("the program's memory limit in 64 KiB pages (default %d)", def.MemoryPages))
	fs.Int64Var(&limits.MaxPayloadBytes, "max-payload-bytes", 0, fmt.Sprintf("the most stdin the program may be given, in bytes (default %d)", def.MaxPayloadBytes))
	fs.Int64Var(&limits.MaxOutputBytes, "max-output-bytes", 0, fmt.Sprintf("the most the program may write to stdout, and to stderr, in bytes each (default %d)", def.MaxOutputBytes))
	if err := fs.Parse(args); err != nil {
		return e.fail("node", &usageError{err.Error()})
	}
	if fs.NArg() == 0 {
		return e.fail("node", usagef("want a program FILE (JavaScript or TypeScript, CommonJS or an ES module), then its arguments"))
	}
	file, progArgs := fs.Arg(0), fs.Args()[1:]
	var err error
	if limits, err = zeroLimits(fs, limits); err != nil {
		return e.fail("node", err)
	}
	if err := limits.Validate(); err != nil {
		return e.fail("node", usagef("%v", err))
	}
	lim := limits.WithDefaults(def)
	engineName, err := sandbox.ParseEngineName(engineFlag)
	if err != nil {
		return e.fail("node", usagef("--engine: %v", err))
	}

	// Bundling finds syntax errors and missing modules before anything runs
	// (and before the audit log is touched).
	bundle, err := jstool.BundleProgram(file)
	var be *jstool.BundleError
	switch {
	case errors.As(err, &be), errors.Is(err, os.ErrNotExist):
		return e.fail("node", usagef("%v", err))
	case err != nil:
		return e.fail("node", err)
	}
	rt, err := openRuntime(ctx, runtimeFlags{engine: engineName, cacheDir: cacheDirFlag, audit: auditFile, lockWait: *auditLockWait}, noRegistry)
	if err != nil {
		return e.fail("node", err)
	}
	defer rt.Close(context.WithoutCancel(ctx))
	var prog *jstool.Program
	err = rt.UseEngine(ctx, func(_ context.Context, engine sandbox.Engine) (err error) {
		prog, err = jstool.NewProgram(engine, bundle, sandbox.Manifest{ExecutorID: "node", Version: jstool.NodeVersion}, jstool.ProgramOptions{
			// As node's, argv[1] is the program's absolute path, __filename of
			// its entry, but in the program's virtual tree (jstool.ProgramRoot):
			// the host's layout (the user's home, a server's paths) is not the
			// program's to see.
			Argv:   append([]string{"/usr/local/bin/node", bundle.Main}, progArgs...),
			Stdout: e.stdout,
			Stderr: e.stderr,
		})
		return err
	})
	if err != nil {
		return e.fail("node", err)
	}
	stdin, err := readStdin(e.stdin, lim.MaxPayloadBytes)
	if err != nil {
		return e.fail("node", fmt.Errorf("reading stdin: %w", err))
	}

	res, err := rt.RunProgram(ctx, prog, pipeline.ProgramRequest{Action: "node", Stdin: stdin, Limits: limits})
	switch {
	case err != nil:
		// Cancelled, or the engine failed: the verdict is audited, the
		// error says what happened.
		return e.fail("node", err)
	case res.ExitCode != nil:
		if res.Status == pipeline.StatusSuccess || *res.ExitCode > 0 {
			return *res.ExitCode
		}
	}
	if res.Status == pipeline.StatusFailed {
		// The engine refused the module before it ran: say why.
		fmt.Fprintf(e.stderr, "wasmgate node: %s\n", res.Message)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "wasmgate node: %s\n", programReason(res, lim))
	return exitBlocked
}

// programReason is the one line that says which limit stopped a program, by
// the flag that sets it.
func programReason(res pipeline.ActionResult, lim sandbox.Limits) string {
	has := func(c pipeline.ReasonCode) bool { return slices.Contains(res.ReasonCodes, c) }
	switch {
	case has(pipeline.AuditLogFailed):
		return res.Message
	case has(pipeline.PayloadTooLarge):
		return fmt.Sprintf("stdin is larger than --max-payload-bytes %d", lim.MaxPayloadBytes)
	case has(pipeline.FuelExhausted):
		return fmt.Sprintf("the program ran out of fuel (--fuel %d)", lim.Fuel)
	case has(pipeline.ExecutorTimeout):
		return fmt.Sprintf("the program ran out of time (--timeout-ms %d)", lim.TimeoutMs)
	case has(pipeline.MemoryExhausted):
		return fmt.Sprintf("the program ran out of memory (--memory-pages %d)", lim.MemoryPages)
	case has(pipeline.StackExhausted):
		return "the program recursed too deeply"
	case has(pipeline.OutputTooLarge):
		return fmt.Sprintf("the program wrote more than --max-output-bytes %d to stdout or stderr", lim.MaxOutputBytes)
	}
	return fmt.Sprintf("the program stopped: %s %v: %s", res.Status, res.ReasonCodes, res.Message)
}

// readStdin reads r to its end, or to one byte past max (the pipeline
// refuses a stdin longer than max, whatever its length). A terminal is not
// read: a program run by hand without input gets an empty stdin rather
// than a wait for one.
func readStdin(r io.Reader, max int64) ([]byte, error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	return io.ReadAll(io.LimitReader(r, max+1))
}
