package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
)

const nodeUsage = `Usage: wasmgate node [flags] FILE [ARGS...]

Runs a Node program (CommonJS or ES module, .js .mjs .cjs .ts .mts .cts; what
it requires or imports, relative files and node_modules beside it, is bundled
at load) once in the sandbox, as node runs it: it works where a tool runner
spawns "node FILE". Flags come before FILE; what follows FILE is the
program's (process.argv.slice(2)).

- process.stdin is this process's stdin, read to its end before the program
  starts (at most --max-payload-bytes).
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
	def := jstool.ProgramLimits
	limits := runtime.Limits{MemoryPages: def.MemoryPages}
	fs.StringVar(&auditFile, "audit", "", "append the run's audit records to this JSON Lines file")
	auditLockWait := fs.Duration("audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	fs.StringVar(&engineFlag, "engine", string(runtime.EngineWazero), engineUsage)
	fs.StringVar(&cacheDirFlag, "cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	fs.Int64Var(&limits.TimeoutMs, "timeout-ms", def.TimeoutMs, "the program's wall-clock limit in milliseconds")
	fs.Uint64Var(&limits.Fuel, "fuel", def.Fuel, "the program's instruction budget")
	fs.Var(uint32Flag{&limits.MemoryPages}, "memory-pages", "the program's memory limit in 64 KiB pages")
	fs.Int64Var(&limits.MaxPayloadBytes, "max-payload-bytes", def.MaxPayloadBytes, "the most stdin the program may be given, in bytes")
	fs.Int64Var(&limits.MaxOutputBytes, "max-output-bytes", def.MaxOutputBytes, "the most the program may write to stdout, and to stderr, in bytes each")
	if err := fs.Parse(args); err != nil {
		return e.fail("node", &usageError{err.Error()})
	}
	if fs.NArg() == 0 {
		return e.fail("node", usagef("want a program FILE (.js .mjs .cjs .ts .mts .cts), then its arguments"))
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
	engineName, err := runtime.ParseEngineName(engineFlag)
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
	abs, err := filepath.Abs(file)
	if err != nil {
		return e.fail("node", err)
	}

	var sink audit.Sink = audit.NewMemorySink()
	if auditFile != "" {
		fsink, err := openAuditLog(auditFile, *auditLockWait)
		if err != nil {
			return e.fail("node", err)
		}
		sink = fsink
	}
	defer sink.Close()

	engine, err := runtime.NewEngine(ctx, runtime.NewConfig().WithEngine(engineName).WithCompilationCacheDir(cacheDir(cacheDirFlag)))
	if err != nil {
		return e.fail("node", err)
	}
	defer engine.Close(ctx)

	engineWasm, err := jstool.EngineModule()
	if err != nil {
		return e.fail("node", err)
	}
	rec := nodeRecord{Action: "node", TraceID: newTraceID(), start: time.Now(), ModuleDigest: jstool.ProgramDigest(engineWasm, bundle)}
	stdin, tooLarge, err := readStdin(e.stdin, lim.MaxPayloadBytes)
	if err != nil {
		return e.fail("node", fmt.Errorf("reading stdin: %w", err))
	}
	if tooLarge {
		// Nothing ran: a verdict without an attempt.
		rec.verdict(ctx, sink, pipeline.StatusBlocked, nil, pipeline.LimitExceeded, pipeline.PayloadTooLarge)
		fmt.Fprintf(e.stderr, "wasmgate node: stdin is larger than --max-payload-bytes %d\n", lim.MaxPayloadBytes)
		return exitBlocked
	}
	rec.InputDigest = audit.Digest(stdin)
	if err := rec.attempt(ctx, sink); err != nil {
		fmt.Fprintf(e.stderr, "wasmgate node: the audit record could not be written, so nothing ran: %v\n", err)
		return exitBlocked
	}

	res, err := jstool.RunProgram(ctx, engine, bundle, jstool.ProgramOptions{
		Limits: limits,
		Argv:   append([]string{"/usr/local/bin/node", abs}, progArgs...),
		Stdin:  stdin,
		Stdout: e.stdout,
		Stderr: e.stderr,
		Engine: engineWasm,
	})
	rec.FuelUsed = res.FuelUsed
	var out *string
	if len(res.Stdout) > 0 {
		d := audit.Digest(res.Stdout)
		out = &d
	}
	if err != nil {
		code := pipeline.ExecutorException
		status := pipeline.StatusFailed
		if ctx.Err() != nil {
			status, code = pipeline.StatusBlocked, pipeline.ExecutorTimeout
		}
		rec.verdict(ctx, sink, status, out, code)
		return e.fail("node", err)
	}

	var reason string
	switch res.Kind {
	case runtime.Completed:
		if err := rec.verdict(ctx, sink, pipeline.StatusSuccess, out); err != nil {
			fmt.Fprintf(e.stderr, "wasmgate node: the audit record could not be written: %v\n", err)
			return exitBlocked
		}
		return exitSuccess
	case runtime.Failed:
		if err := rec.verdict(ctx, sink, pipeline.StatusFailed, out, pipeline.ExecutorException); err != nil {
			fmt.Fprintf(e.stderr, "wasmgate node: the audit record could not be written: %v\n", err)
			return exitBlocked
		}
		if res.ExitCode > 0 {
			return res.ExitCode
		}
		// The engine refused the module before it ran: say why.
		fmt.Fprintf(e.stderr, "wasmgate node: %s\n", res.Message)
		return exitFailed
	case runtime.FuelExhausted:
		reason = fmt.Sprintf("the program ran out of fuel (--fuel %d)", lim.Fuel)
		err = rec.verdict(ctx, sink, pipeline.StatusBlocked, out, pipeline.LimitExceeded, pipeline.FuelExhausted)
	case runtime.Timeout:
		reason = fmt.Sprintf("the program ran out of time (--timeout-ms %d)", lim.TimeoutMs)
		err = rec.verdict(ctx, sink, pipeline.StatusBlocked, out, pipeline.ExecutorTimeout)
	case runtime.MemoryExhausted:
		reason = fmt.Sprintf("the program ran out of memory (--memory-pages %d)", lim.MemoryPages)
		err = rec.verdict(ctx, sink, pipeline.StatusBlocked, out, pipeline.LimitExceeded, pipeline.MemoryExhausted)
	case runtime.StackExhausted:
		reason = "the program recursed too deeply"
		err = rec.verdict(ctx, sink, pipeline.StatusBlocked, out, pipeline.LimitExceeded, pipeline.StackExhausted)
	case runtime.OutputTooLarge:
		reason = fmt.Sprintf("the program wrote more than --max-output-bytes %d to stdout or stderr", lim.MaxOutputBytes)
		err = rec.verdict(ctx, sink, pipeline.StatusBlocked, out, pipeline.LimitExceeded, pipeline.OutputTooLarge)
	default:
		reason = fmt.Sprintf("the program stopped: %s: %s", res.Kind, res.Message)
		err = rec.verdict(ctx, sink, pipeline.StatusFailed, out, pipeline.ExecutorException)
	}
	if err != nil {
		reason += fmt.Sprintf("; the audit record could not be written: %v", err)
	}
	fmt.Fprintf(e.stderr, "wasmgate node: %s\n", reason)
	return exitBlocked
}

// readStdin reads r to its end, at most max bytes; tooLarge says there was
// more. A terminal is not read: a program run by hand without input gets
// an empty stdin rather than a wait for one.
func readStdin(r io.Reader, max int64) (b []byte, tooLarge bool, err error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			return nil, false, nil
		}
	}
	b, err = io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > max {
		return nil, true, nil
	}
	return b, false, nil
}

// nodeRecord is what a program run's audit records say: the pipeline's
// record form, for an action whose input and output are bytes (the stdin
// and the stdout) rather than canonical JSON.
type nodeRecord struct {
	Action, TraceID, ModuleDigest, InputDigest string
	FuelUsed                                   uint64
	start                                      time.Time
	attempted                                  *audit.Record
}

// nodeExecutorVersion is the Node version the program sees (process.version).
const nodeExecutorVersion = "20.0.0"

func (r *nodeRecord) base(event string) audit.Record {
	return audit.Record{
		EventType:       event,
		Action:          r.Action,
		ExecutorID:      "node",
		ExecutorVersion: nodeExecutorVersion,
		ModuleDigest:    r.ModuleDigest,
		TraceID:         r.TraceID,
		TsUTC:           r.start.UTC().Format(time.RFC3339Nano),
		InputDigest:     r.InputDigest,
		DigestAlg:       audit.DigestAlg,
	}
}

func (r *nodeRecord) attempt(ctx context.Context, sink audit.Sink) error {
	a, err := sink.Append(context.WithoutCancel(ctx), r.base(audit.EventActionAttempt))
	if err == nil {
		r.attempted = &a
	}
	return err
}

func (r *nodeRecord) verdict(ctx context.Context, sink audit.Sink, status pipeline.Status, output *string, codes ...pipeline.ReasonCode) error {
	v := r.base(audit.EventActionAudit)
	v.Status = string(status)
	v.ReasonCodes = make([]string, len(codes))
	for i, c := range codes {
		v.ReasonCodes[i] = string(c)
	}
	v.DurationMs = time.Since(r.start).Milliseconds()
	v.FuelUsed = r.FuelUsed
	v.OutputDigest = output
	if r.attempted != nil {
		v.AttemptHash = &r.attempted.Hash
	}
	_, err := sink.Append(context.WithoutCancel(ctx), v)
	return err
}

// newTraceID returns a random (version 4) UUID.
func newTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
