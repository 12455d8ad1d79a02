package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/protocol/toolproto"
	"github.com/wasmgate/wasmgate/runtime"
)

const toolHelp = `Usage:
  wasmgate tool run ID [--json] [--tools DIR] [--input JSON] [--config JSON]
                       [--max-output-bytes N] [--max-events N] [--audit FILE]
  wasmgate tool serve-stdio ID [--tools DIR] [--audit FILE]

The NDJSON tool protocol v1. A tool is a directory DIR/**/ID/manifest.json
(default DIR: ./tools) with manifestVersion 1, id (kebab-case, the
directory's name), version, name, description, runtime ("wasm" or "js"),
entry (its .wasm module or .js/.ts tool, relative to the manifest), and
optionally requiredConfig, optionalConfig (lists of config keys),
timeoutMs and tags.

"tool serve-stdio" is the tool side: it reads one ToolRequest
  {"context": {"toolId": ID, "config": {...}, "workspaceRoot": DIR}, "input": ...}
from stdin, runs the tool sandboxed, limited and audited through the
pipeline (JS tools get config as the env of factories), and writes NDJSON
events {type, ts, toolId, payload} to stdout: started, log (the tool's
console lines), then one result or error.

"tool run" is the runner: it sends the request on its stdin (or the one
--input and --config make) to "tool serve-stdio" in a child process and
prints its events, for a person or, with --json, as the NDJSON lines they
are. It kills the child and ends with a non-recoverable error when the run
takes longer than timeoutMs (RUNNER_TIMEOUT: config key timeoutMs, else the
manifest's, else 30000), or the child writes more than --max-output-bytes
(RUNNER_MAX_OUTPUT_BYTES) or --max-events events (RUNNER_MAX_EVENTS).

Exit codes: 0 result, 1 recoverable error, 2 any other error event (or a
usage error), 4 when wasmgate itself fails outside the protocol (an audit
log that cannot be opened, output that cannot be written; the runner
reports a tool side that exits without a terminal event as TOOL_CRASHED).
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
	tools, audit string
}

func (f *toolFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.tools, "tools", "tools", "directory of the tools (DIR/**/manifest.json)")
	fs.StringVar(&f.audit, "audit", "", "append the run's audit record to this JSON Lines file (default: checked and dropped)")
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
	child := []string{"tool", "serve-stdio", id, "--tools", f.tools}
	if f.audit != "" {
		child = append(child, "--audit", f.audit)
	}
	emit := toolproto.Pretty(e.stdout)
	if *asJSON {
		emit = toolproto.Passthrough(e.stdout)
	}
	terminal, err := toolproto.Run(ctx, toolproto.RunConfig{
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
	return toolproto.ExitCode(terminal)
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
	id, err := parseTool(fs, args)
	if err != nil {
		return e.fail(name, err)
	}
	var sink audit.Sink = audit.NewDiscardSink()
	if f.audit != "" {
		fsink, err := audit.OpenFile(f.audit)
		if err != nil {
			return e.fail(name, err)
		}
		sink = fsink
	}
	defer sink.Close()
	engine, err := runtime.NewEngine(ctx, runtime.NewConfig().WithCompilationCacheDir(cacheDir("")))
	if err != nil {
		return e.fail(name, err)
	}
	defer engine.Close(ctx)
	terminal, err := toolproto.Serve(ctx, toolproto.ServeConfig{
		ToolsDir: filepath.Clean(f.tools), ToolID: id, Engine: engine, Sink: sink,
		Stdin: e.stdin, Stdout: e.stdout,
	})
	if err != nil {
		return e.fail(name, err)
	}
	return toolproto.ExitCode(terminal)
}
