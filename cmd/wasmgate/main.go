// Command wasmgate runs pure executors in WebAssembly under governance.
//
//	wasmgate run --wasm FILE [--input JSON | --input-file FILE | stdin] [flags]
//	wasmgate run --js FILE [--tool EXPORT] [--input JSON | ...]
//	wasmgate run --package NAME@VERSION --tool EXPORT [--input JSON | ...]
//	wasmgate run --py FILE [--py-path DIR]... [--py-class NAME] [--input JSON | ...]
//	wasmgate python FILE [ARGS...]
//	wasmgate run --config FILE --action NAME [--input JSON | ...]
//	wasmgate tools add NAME@VERSION
//	wasmgate serve [--addr HOST:PORT] [--config FILE] [--audit FILE] [flags]
//	wasmgate tool run ID [--json] [--tools DIR] | wasmgate tool serve-stdio ID
//	wasmgate rep --config FILE
//	wasmgate script FILE.ts [--config FILE]
//	wasmgate inspect FILE
//	wasmgate pack --manifest M.json IN.wasm -o OUT.wasm
//	wasmgate audit verify FILE | wasmgate audit repair FILE
//	wasmgate audit verify --nats URL | wasmgate audit export --nats URL
//	wasmgate publish --nats URL --config FILE
//	wasmgate worker --nats URL [--concurrency N]
//	wasmgate replay --wasm FILE | --js FILE | --package P --tool T | --py FILE | --config FILE --corpus REQUESTS.jsonl [flags]
//
// Exit codes: 0 SUCCESS, 1 FAILED, 2 usage error, 3 BLOCKED, 4 internal error,
// 5 divergence (replay).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Exit codes.
const (
	exitSuccess  = 0
	exitFailed   = 1
	exitUsage    = 2
	exitBlocked  = 3
	exitInternal = 4
	// exitDivergence: a replay found results that differ.
	exitDivergence = 5
)

const usage = `wasmgate runs pure executors in WebAssembly under governance.

Usage:
  wasmgate run --wasm FILE [--input JSON | --input-file FILE] [flags]   run a module (input from stdin if no --input*)
  wasmgate run --js FILE [--tool EXPORT] [--input JSON | ...]          run a JavaScript/TypeScript tool
  wasmgate run --package NAME@VERSION --tool EXPORT [--input ...]     run a tool from an npm package
  wasmgate run --py FILE [--py-path DIR]... [--py-class NAME] [...]   run a Python executor (a module with execute, or an executor class)
  wasmgate run --config FILE --action NAME [--input JSON | ...]         run an action through a registry
  wasmgate tools add NAME@VERSION                                       install and bundle an npm package of tools
  wasmgate serve [--addr 127.0.0.1:8080] [--config FILE] [--audit FILE] serve the HTTP executor protocol v1.0
  wasmgate tool run ID [--json] [--tools DIR] [--input JSON]            run a tool by the NDJSON tool protocol v1
  wasmgate tool serve-stdio ID [--tools DIR]                            the tool side of that protocol (NDJSON on stdout)
  wasmgate rep --config FILE [--audit FILE]                             the JSON-RPC 2.0 runtime (flow graphs) on stdio
  wasmgate mcp --config FILE [--audit FILE]                             every action as a Model Context Protocol tool, on stdio
  wasmgate script FILE.ts [--config FILE] [--audit FILE]                type-check and run a TypeScript toolscript calling registered actions
  wasmgate types --config FILE [--out DIR]                              write TypeScript declarations of a registry's tools for toolscripts
  wasmgate node [--audit FILE] [flags] FILE [ARGS...]                   run a Node program as node would, sandboxed (stdin, stdout, exit status)
  wasmgate python [--audit FILE] [flags] FILE [ARGS...]                 run a Python program as python3 would, sandboxed (stdin, stdout, exit status)
  wasmgate inspect FILE                                                 show profile, imports, exports, manifest, digest
  wasmgate pack --manifest M.json IN.wasm -o OUT.wasm                   embed a manifest in a module
  wasmgate audit verify FILE | --nats URL                               check an audit log's hash chain; name attempts without a verdict
  wasmgate audit export --nats URL > log.jsonl                          write a cluster's audit chain as JSON Lines
  wasmgate audit repair FILE                                            cut a torn last line back to the last complete record
  wasmgate log LOG --audit-key KEYFILE [--addr 127.0.0.1:7381]          publish an audit log as a transparency log (/checkpoint, /tile/...)
  wasmgate replay --wasm FILE|--js FILE|--py FILE|--config FILE --corpus R.jsonl  re-run requests on every engine; report divergences
  wasmgate publish --nats URL --config FILE                             put a registry, its modules and tools in a NATS JetStream deployment
  wasmgate worker --nats URL [--concurrency N]                          execute a NATS deployment's requests (serve, rep and run take --nats)
  wasmgate witness --key FILE --log VKEY --state DIR | witness keygen   cosign transparency log checkpoints that grow append-only (C2SP tlog-witness)

Exit codes: 0 SUCCESS, 1 FAILED, 2 usage error, 3 BLOCKED, 4 internal error,
            5 divergence (replay: results differ between runs, engines or the audit log).
Run 'wasmgate COMMAND -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command may touch: its streams.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := env{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return e.runCmd(ctx, rest)
	case "inspect":
		return e.inspectCmd(rest)
	case "pack":
		return e.packCmd(rest)
	case "audit":
		return e.auditCmd(ctx, rest)
	case "replay":
		return e.replayCmd(ctx, rest)
	case "tools":
		return e.toolsCmd(ctx, rest)
	case "serve":
		return e.serveCmd(ctx, rest)
	case "tool":
		return e.toolCmd(ctx, rest)
	case "rep":
		return e.repCmd(ctx, rest)
	case "mcp":
		return e.mcpCmd(ctx, rest)
	case "types":
		return e.typesCmd(ctx, rest)
	case "script":
		return e.scriptCmd(ctx, rest)
	case "node":
		return e.nodeCmd(ctx, rest)
	case "python":
		return e.pythonCmd(ctx, rest)
	case "worker":
		return e.workerCmd(ctx, rest)
	case "publish":
		return e.publishCmd(ctx, rest)
	case "witness":
		return e.witnessCmd(ctx, rest)
	case "log":
		return e.logCmd(ctx, rest)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitSuccess
	}
	fmt.Fprintf(stderr, "wasmgate: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}

// usageError marks a problem with how the command was called (exit 2).
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// engineUsage documents --engine with the engines of this build.
var engineUsage = "Wasm engine: " + engineList()

// engineList names the engines of this build, comma-separated.
func engineList() string {
	names := make([]string, 0, len(sandbox.Engines()))
	for _, e := range sandbox.Engines() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ")
}

// fail prints err and returns the exit code for it: 2 for usage errors, 4 for
// everything else.
func (e env) fail(name string, err error) int {
	fmt.Fprintf(e.stderr, "wasmgate %s: %v\n", name, err)
	var u *usageError
	if errors.As(err, &u) || errors.Is(err, flag.ErrHelp) {
		return exitUsage
	}
	return exitInternal
}

// parseInterleaved parses flags that may come before or after positional
// arguments ("pack IN.wasm -o OUT.wasm"), returning the positionals.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// resultsUsage documents --results on every command that has it.
const resultsUsage = "what results carry: full, or digest-only (the verdict and digests: no output, log or message quoting the executor)"

// limitFlags are the flags that set a limit, by the limit's name.
var limitFlags = map[string]string{
	"timeout-ms": "timeout_ms", "max-payload-bytes": "max_payload_bytes", "max-depth": "max_depth",
	"max-list-items": "max_list_items", "fuel": "fuel", "memory-pages": "memory_pages",
	"max-output-bytes": "max_output_bytes",
}

// zeroLimits applies the limit flags given as 0: such a limit is zero (a
// list limit of 0 admits no list items), not "the default", which is
// leaving the flag out; a limit that would admit nothing at zero is a usage
// error naming the flag.
func zeroLimits(fs *flag.FlagSet, l sandbox.Limits) (sandbox.Limits, error) {
	var err error
	fs.Visit(func(f *flag.Flag) {
		name, ok := limitFlags[f.Name]
		if !ok || err != nil || f.Value.String() != "0" {
			return
		}
		if l, err = l.SetZero(name); err != nil {
			err = usagef("--%s 0 would admit nothing: leave the flag out for the default", f.Name)
		}
	})
	return l, err
}

// flagSet reports whether the command line set the flag name (given as
// anything, zero included), as opposed to leaving its default.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("wasmgate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
