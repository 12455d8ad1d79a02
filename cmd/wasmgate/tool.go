package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/toolproto"
	"github.com/wasmgate/wasmgate/pipeline"
)

const toolHelp = `Usage:
  wasmgate tool run ID [--json] [--tools DIR] [--input JSON] [--config JSON]
                       [--max-output-bytes N] [--max-events N] [--audit FILE]
  wasmgate tool serve-stdio ID [--tools DIR] [--audit FILE] [--verdict] [--results full|digest-only]

The NDJSON tool protocol v1. A tool is a directory with a manifest.json
under DIR (default DIR: ./tools) with manifestVersion 1, id (kebab-case),
version, name, description, runtime ("wasm", "js", "node" or "python"),
entry (its .wasm module, .js/.ts tool or .py executor, relative to the
manifest), and optionally requiredConfig, optionalConfig (lists of config
keys), timeoutMs and tags; a "python" tool also pythonPath (directories of
its pure-Python dependencies, relative to the manifest) and pythonClass
(its executor class; default: the module's execute(input)).
Tools of runtime "node" are Node programs that read the request on stdin
and write their own events: they run sandboxed as "wasmgate node" runs a
program, each event checked before it is passed on.

"tool serve-stdio" is the tool side: it writes a started event
{"meta": {name, version, runtime}}, reads one ToolRequest to EOF from stdin
  {"context": {"toolId": ID, "config": {...}, "workspaceRoot": DIR}, "input": ...}
runs the tool sandboxed, limited and audited through the pipeline (JS tools
get config as the env of factories), and writes NDJSON events
{type, ts, toolId, payload} to stdout: a log event for each console call of
a JS tool while it runs ({level, message, data?}), then one result (the
tool's output itself; a value that is not an object as {"value": ...}) or
error ({message, code, recoverable}). Diagnostics go to stderr: a Wasm
tool's stderr, what a Python tool prints, the stack of an exception, and
with --verdict the governance verdict. It exits 0 after a result and 1 after an error event.

"tool run" is the runner: it sends the request on its stdin (or the one
--input and --config make) to "tool serve-stdio" in a child process and
prints its events, for a person (with the verdict on stderr) or, with
--json, as the NDJSON lines they are. It stops the child (SIGTERM, then
SIGKILL) and ends with a RUNNER_GUARDRAIL error when the run takes longer
than timeoutMs (config key timeoutMs, else the manifest's, else 30000), or
the child writes more than --max-output-bytes to stdout or --max-events
events; a child that ends without a result or error event is TOOL_CRASH.

Exit codes of "tool run": 0 result, 1 the tool's error event, 2 the
runner's own error event (RUNNER_GUARDRAIL, TOOL_CRASH,
RUNNER_PROTOCOL_ERROR, CANCELLED) or a usage error, 4 when wasmgate itself
fails outside the protocol (output that cannot be written).
`

func (e env) toolCmd(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(e.stderr, toolHelp)
		return exitUsage
	}
	switch args[0] {
	case "run":
		return e.toolRunCmd(ctx, args[1:])
	case "serve-stdio":
		return e.toolServeCmd(ctx, args[1:])
	}
	return e.fail("tool", usagef("unknown subcommand %q (run, serve-stdio)", args[0]))
}

// toolFlags are the flags of both sides.
type toolFlags struct {
	tools, audit, results string
	auditLockWait         time.Duration
}

func (f *toolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tools, "tools", "tools", "directory of the tools (DIR/**/manifest.json)")
	fs.StringVar(&f.audit, "audit", "", "append the run's audit record to this JSON Lines file (default: checked and dropped)")
	fs.DurationVar(&f.auditLockWait, "audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	fs.StringVar(&f.results, "results", "full", resultsUsage+"; digest-only: the result payload is {\"output_digest\": …}, no log events")
}

// parseTool parses a subcommand's flags around its one argument, the tool id.
func parseTool(fs *flag.FlagSet, args []string) (string, error) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), toolHelp+"\nFlags of "+fs.Name()+":\n")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil:
		return "", &usageError{err.Error()}
	case len(pos) != 1:
		return "", usagef("give one tool ID")
	}
	return pos[0], nil
}

func (e env) toolRunCmd(ctx context.Context, args []string) int {
	const name = "tool run"
	fs := newFlagSet(name, e.stderr)
	var f toolFlags
	f.register(fs)
	asJSON := fs.Bool("json", false, "print the NDJSON events as they are")
	input := fs.String("input", "", "the tool's input as JSON (with --input or --config, the request is made from them, not read from stdin)")
	config := fs.String("config", "", "the request's context.config as a JSON object")
	maxBytes := fs.Int64("max-output-bytes", toolproto.DefaultMaxOutputBytes, "guardrail: bytes the tool side may write, stdout and stderr together")
	maxEvents := fs.Int("max-events", toolproto.DefaultMaxEvents, "guardrail: events the tool side may write")
	id, err := parseTool(fs, args)
	if err != nil {
		return e.fail(name, err)
	}
	if _, err := pipeline.ParseResults(f.results); err != nil {
		return e.fail(name, usagef("--results: %v", err))
	}
	switch {
	case *maxBytes <= 0:
		return e.fail(name, usagef("--max-output-bytes must be positive"))
	case *maxEvents <= 0:
		return e.fail(name, usagef("--max-events must be positive"))
	}
	req, err := e.toolRequest(id, *input, *config)
	if err != nil {
		return e.fail(name, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return e.fail(name, fmt.Errorf("cannot find the wasmgate executable to run the tool side: %w", err))
	}
	child := []string{"tool", "serve-stdio", id, "--tools", f.tools, "--results", f.results}
	if f.audit != "" {
		child = append(child, "--audit", f.audit, "--audit-lock-wait", f.auditLockWait.String())
	}
	emit := toolproto.Passthrough(e.stdout)
	if !*asJSON {
		// The person sees the verdict too, on stderr with the other
		// diagnostics; programs read it from the audit log.
		emit = toolproto.Pretty(e.stdout)
		child = append(child, "--verdict")
	}
	end, err := toolproto.Run(ctx, toolproto.RunConfig{
		ToolsDir:   f.tools,
		ToolID:     id,
		Request:    req,
		Command:    func() *exec.Cmd { return exec.Command(exe, child...) },
		Stderr:     e.stderr,
		Guardrails: toolproto.Guardrails{MaxOutputBytes: *maxBytes, MaxEvents: *maxEvents},
		Emit:       emit,
	})
	if err != nil {
		return e.fail(name, err)
	}
	return end.ExitCode()
}

// toolRequest is the request of `tool run`: made from --input and
// --config, else read from stdin as it is.
func (e env) toolRequest(id, input, config string) ([]byte, error) {
	if input != "" || config != "" {
		if input != "" && !json.Valid([]byte(input)) {
			return nil, usagef("--input is not JSON")
		}
		wd, _ := os.Getwd()
		req, err := toolproto.NewRequest(id, json.RawMessage(config), json.RawMessage(input), wd)
		if err != nil {
			return nil, usagef("--config: %v", err)
		}
		return req, nil
	}
	if f, ok := e.stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, usagef("no request: pipe a ToolRequest on stdin, or give --input JSON [--config JSON]")
		}
	}
	b, err := io.ReadAll(io.LimitReader(e.stdin, toolproto.MaxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the request from stdin: %w", err)
	}
	return b, nil
}

func (e env) toolServeCmd(ctx context.Context, args []string) int {
	const name = "tool serve-stdio"
	fs := newFlagSet(name, e.stderr)
	var f toolFlags
	f.register(fs)
	verdict := fs.Bool("verdict", false, "also write the run's governance verdict to stderr, for a person")
	id, err := parseTool(fs, args)
	if err != nil {
		return e.fail(name, err)
	}
	results, err := pipeline.ParseResults(f.results)
	if err != nil {
		return e.fail(name, usagef("--results: %v", err))
	}
	cfg := toolproto.ServeConfig{
		ToolsDir: filepath.Clean(f.tools), ToolID: id,
		Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, Verdict: *verdict,
	}
	// From here on every problem is an error event: the runner on the
	// other side reads stdout, and exits 2 or more mean a crash.
	refuse := func(code string, recoverable bool, msg string) int {
		terminal, err := toolproto.Refuse(cfg, code, recoverable, msg)
		if err != nil {
			return e.fail(name, err)
		}
		return toolproto.ExitCode(terminal)
	}
	rt, err := openRuntime(ctx, runtimeFlags{engine: sandbox.EngineWazero, audit: f.audit, lockWait: f.auditLockWait, results: results}, noRegistry)
	switch {
	case err != nil && f.audit != "" && !errors.Is(err, wg.ErrInvalidOption):
		// The audit log is what fails to open, but for an engine that
		// cannot start (its compilation cache directory cannot be made),
		// which the tool side cannot tell apart from here.
		return refuse(string(pipeline.AuditLogFailed), true, err.Error())
	case err != nil:
		return refuse(toolproto.CodeInternalError, false, err.Error())
	}
	defer rt.Close(context.WithoutCancel(ctx))
	cfg.Runtime = rt
	terminal, err := toolproto.Serve(ctx, cfg)
	if err != nil {
		return e.fail(name, err)
	}
	return toolproto.ExitCode(terminal)
}
