package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/cluster"
)

const auditHelp = `Usage:
  wasmgate audit verify FILE
  wasmgate audit verify --nats URL [--nats-prefix P]
  wasmgate audit export --nats URL [--nats-prefix P] > log.jsonl
  wasmgate audit repair FILE [--lock-wait 10s]
  wasmgate audit keygen|checkpoint|prove|consistency ... (below)

verify checks an audit log: every line canonical JSON with exactly its
record's members, each hash matching its record, seq counting up from 1,
each prev naming the record before, and each verdict (action_audit) that
names an attempt (attempt_hash) answering an earlier action_attempt and
repeating its action, executor, module, input and env digests, trace_id
and ts_utc. It prints "ok" with the counts, then every attempt no verdict
answers, by line: an execution that never ended in a verdict (the process
stopped while it ran, or its verdict could not be written), or one still
running if the log is live. Logs written before attempts existed verify.
Exit codes: 0 the chain is intact (unanswered attempts or not), 1 a line is
broken (FILE:LINE: reason, on stderr), 2 usage error or unreadable file.

repair cuts a torn last line (an append cut short by a crash or a full disk,
which 'run --audit' and 'serve' refuse to extend) back to the end of the last
complete record. The cut bytes are kept first, in FILE.torn-<UTC time>. A log
that is intact is left alone; one broken anywhere else is not changed (that
is evidence, not a torn append): exit 1, naming the line. It waits for a log
another process holds, as --audit does.
Exit codes: 0 repaired or nothing to repair, 1 broken before its end, 2
usage error, 4 the repair itself failed.
`

// auditCmd holds the audit log subcommands.
func (e env) auditCmd(ctx context.Context, args []string) int {
	if len(args) == 0 {
		return e.fail("audit", usagef("usage: wasmgate audit verify FILE | wasmgate audit repair FILE | wasmgate audit export --nats URL ('wasmgate audit -h' for more)"))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, auditHelp+tlogHelp)
		return exitSuccess
	case "verify":
		return e.auditVerifyCmd(ctx, args[1:])
	case "export":
		return e.auditExportCmd(ctx, args[1:])
	case "repair":
		return e.auditRepairCmd(args[1:])
	case "keygen":
		return e.auditKeygenCmd(args[1:])
	case "checkpoint":
		return e.auditCheckpointCmd(args[1:])
	case "prove":
		return e.auditProveCmd(args[1:])
	case "consistency":
		return e.auditConsistencyCmd(args[1:])
	}
	return e.fail("audit", usagef("unknown subcommand %q (verify, repair, export, keygen, checkpoint, prove, consistency)", args[0]))
}

func (e env) auditFlagSet(name string) *flag.FlagSet {
	fs := newFlagSet(name, e.stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), auditHelp+tlogHelp) }
	return fs
}

// oneFile parses a subcommand's flags around its one argument, the log.
func oneFile(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil:
		return "", &usageError{err.Error()}
	case len(pos) != 1:
		return "", usagef("want exactly one audit log file, got %d arguments", len(pos))
	}
	return pos[0], nil
}

func (e env) auditVerifyCmd(ctx context.Context, args []string) int {
	const name = "audit verify"
	fs := e.auditFlagSet(name)
	var nf natsFlags
	nf.register(fs, "verify the audit chain of this NATS JetStream deployment instead of a file")
	cpFile := fs.String("checkpoint", "", "also check that the log's first records give this signed checkpoint's root (needs --vkey)")
	proofFile := fs.String("proof", "", "verify this .tlog-proof for a record (--entry, or the log's line at its index; needs --vkey)")
	entryFile := fs.String("entry", "", "with --proof: a file holding the record's line")
	vkeyFile := fs.String("vkey", "", "the log's verifier key file (audit keygen prints it)")
	var wf witnessFlags
	wf.register(fs)
	var (
		path string
		log  io.Reader
		err  error
	)
	pos, perr := parseInterleaved(fs, args)
	if perr != nil {
		return e.fail(name, &usageError{perr.Error()})
	}
	if *cpFile != "" || *proofFile != "" {
		switch {
		case nf.set():
			return e.fail(name, usagef("--checkpoint and --proof check a log file or a record: export the deployment's chain first (audit export --nats)"))
		case *cpFile != "" && *proofFile != "":
			return e.fail(name, usagef("give --checkpoint or --proof, not both"))
		case *cpFile != "" && len(pos) != 1:
			return e.fail(name, usagef("--checkpoint needs exactly one audit log file, got %d arguments", len(pos)))
		case len(pos) > 1:
			return e.fail(name, usagef("want at most one audit log file, got %d arguments", len(pos)))
		}
		if len(pos) == 1 {
			path = pos[0]
		}
		return e.auditVerifyTlog(name, path, *cpFile, *proofFile, *entryFile, *vkeyFile, wf)
	}
	if nf.set() {
		if len(pos) > 0 {
			return e.fail(name, usagef("--nats verifies the deployment's chain: no file argument (%q)", pos[0]))
		}
		c, err := nf.connect(ctx, "audit verify")
		if err != nil {
			return e.fail(name, err)
		}
		defer c.Close()
		path = c.Names.AuditStream()
		pr, pw := io.Pipe()
		go func() {
			_, err := cluster.ExportAudit(ctx, c, pw)
			pw.CloseWithError(err)
		}()
		log = pr
	} else {
		if len(pos) != 1 {
			return e.fail(name, usagef("want exactly one audit log file, got %d arguments", len(pos)))
		}
		path = pos[0]
		f, err := os.Open(path)
		if err != nil {
			return e.fail(name, usagef("%v", err))
		}
		defer f.Close()
		log = f
	}
	rep, err := audit.Verify(log)
	var ce *audit.ChainError
	if errors.As(err, &ce) {
		fmt.Fprintf(e.stderr, "%s:%d: %s\n", path, ce.Line, ce.Reason)
		if ce.Torn {
			fmt.Fprintf(e.stderr, "%s: 'wasmgate audit repair %s' cuts a torn last line back to the last complete record\n", path, path)
		}
		return exitFailed
	}
	if err != nil {
		return e.fail(name, err)
	}
	fmt.Fprintf(e.stdout, "%s: ok, %s (%s, %s), hash chain intact\n",
		path, count(rep.Records, "record"), count(rep.Attempts, "attempt"), count(rep.Records-rep.Attempts, "verdict"))
	for _, a := range rep.Unanswered {
		fmt.Fprintf(e.stdout, "%s:%d: attempt seq %d (%s, trace_id %s) has no verdict: the execution never ended in one (the process stopped, or the verdict could not be written), or is still running\n",
			path, a.Line, a.Seq, a.Action, a.TraceID)
	}
	return exitSuccess
}

func (e env) auditExportCmd(ctx context.Context, args []string) int {
	const name = "audit export"
	fs := e.auditFlagSet(name)
	var nf natsFlags
	nf.register(fs, "the NATS JetStream deployment whose audit chain to write (required)")
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil:
		return e.fail(name, &usageError{err.Error()})
	case len(pos) > 0:
		return e.fail(name, usagef("unexpected argument %q: the log goes to stdout (> log.jsonl)", pos[0]))
	case !nf.set():
		return e.fail(name, usagef("--nats URL is required"))
	}
	c, err := nf.connect(ctx, "audit export")
	if err != nil {
		return e.fail(name, err)
	}
	defer c.Close()
	w := bufio.NewWriterSize(e.stdout, 256<<10)
	n, err := cluster.ExportAudit(ctx, c, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return e.fail(name, err)
	}
	fmt.Fprintf(e.stderr, "wasmgate audit export: %s from %s\n", count(int(n), "record"), c.Names.AuditStream())
	return exitSuccess
}

func (e env) auditRepairCmd(args []string) int {
	const name = "audit repair"
	fs := e.auditFlagSet(name)
	wait := fs.Duration("lock-wait", audit.DefaultLockWait, "how long to wait for a log another process holds")
	path, err := oneFile(fs, args)
	if err != nil {
		return e.fail(name, err)
	}
	if *wait < 0 {
		return e.fail(name, usagef("--lock-wait must be 0 or more, got %s", *wait))
	}
	rep, err := audit.Repair(path, audit.WithLockWait(*wait))
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintf(e.stderr, "%s:%d: %s\n%s: not repaired: only a torn last line is cut, and this log is broken before its end (%s before line %d intact); nothing was changed\n",
			path, ce.Line, ce.Reason, path, count(rep.Records, "record"), ce.Line)
		return exitFailed
	case errors.Is(err, os.ErrNotExist):
		return e.fail(name, usagef("%v", err))
	case err != nil:
		return e.fail(name, err)
	case rep.CutLine == 0:
		fmt.Fprintf(e.stdout, "%s: nothing to repair: %s, hash chain intact\n", path, count(rep.Records, "record"))
	default:
		fmt.Fprintf(e.stdout, "%s: cut the torn line %d (%d bytes) back to the end of record %d; the cut bytes are in %s\n",
			path, rep.CutLine, rep.CutBytes, rep.Records, rep.TornPath)
	}
	return exitSuccess
}

// auditLockWaitUsage documents --audit-lock-wait, the flag of every command
// that appends to an --audit log.
const auditLockWaitUsage = "how long to wait for an --audit log another process is appending to before giving up (0: not at all)"

// checkLockWait refuses a negative --audit-lock-wait.
func checkLockWait(lockWait time.Duration) error {
	if lockWait < 0 {
		return usagef("--audit-lock-wait must be 0 or more, got %s", lockWait)
	}
	return nil
}

// auditLogError says what to do about an --audit log that could not be
// opened because it is torn or another process holds it.
func auditLogError(err error, path string) error {
	switch {
	case errors.Is(err, audit.ErrTornTail):
		return fmt.Errorf("%w; run 'wasmgate audit repair %s' to cut it back to its last complete record", err, path)
	case errors.Is(err, audit.ErrLocked):
		return fmt.Errorf("%w: another process is appending to it (--audit-lock-wait sets how long to wait)", err)
	}
	return err
}

// count writes n things: "1 record", "2 records".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
