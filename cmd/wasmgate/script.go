package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/toolscript"
	"github.com/wasmgate/wasmgate/internal/tscheck"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

var scriptUsage = `Usage: wasmgate script FILE.ts [--config FILE] [--mcp-servers FILE [--mcp-allow SERVER.TOOL ...]] [--audit FILE] [--no-check] [--emit-types DIR] [flags]

Runs a TypeScript or JavaScript program once in the sandbox. It imports the
registered actions of --config as functions:

  import { tools } from "toolscript";
  const { sum } = await tools.math.sum({ numbers: [1, 2, 3] });   // action math.sum
  export default { sum };                                          // printed as JSON

An action is tools.NAMESPACE.name: the part before its first "." or "__" is the
namespace, the rest the name, in camelCase (github__create_issue is
tools.github.createIssue). A call resolves to the action's output, or rejects
with an Error carrying status, reasonCodes and traceId. The script's result is
its default export, awaited (a function is called with no arguments first).

A TypeScript script is type-checked first, with TypeScript's own compiler
(TypeScript ` + tscheck.Version + `, fetched from the npm registry at a pinned version
and hash the first time, into the user cache), against declarations of the
registry's tools made from their input and output JSON Schemas and the ES2023
library (no DOM, no Node I/O): every error is printed as FILE:LINE:COL: error
TSCODE: MESSAGE and nothing runs (exit 2). --no-check skips it; --emit-types DIR
writes the declarations for an editor (as 'wasmgate types' does).

The script is untrusted: bundling and the type check read only its own tree
(the nearest directory up from it holding package.json, else its own, and the
node_modules packages found from there, links resolved), and an import, an
import type or a /// <reference> reaching anything else is refused (exit 2).
The type check runs under --check-timeout and --check-memory-mb; a check that
passes either stops, and nothing runs (exit 2).

With --mcp-servers FILE (the {"mcpServers": {NAME: {"command", "args", "env"} |
{"url", "headers"}}} file MCP clients use), the tools of those MCP servers
join the actions, started (stdio) or opened (streamable HTTP) before the
script is bundled: tools.NAME.camelTool(args) calls the server's tool
(get-sum is tools.NAME.getSum), typed from its inputSchema and outputSchema,
and resolves to its structuredContent when it declares an outputSchema, else
to its CallToolResult; an isError result or a transport failure rejects with
an Error naming the server, the tool and the message. Only the tools
--mcp-allow names may be called (SERVER.TOOL or SERVER.*; none by default):
any other call is refused BLOCKED (EXECUTOR_CAPABILITY_MISMATCH, audited,
nothing sent). --mcp-max-calls bounds the calls of one run (past it: BLOCKED
LIMIT_EXCEEDED, FUEL_EXHAUSTED), --mcp-timeout each call (BLOCKED
EXECUTOR_TIMEOUT). The last line on stderr counts the run's MCP calls by
verdict.

Every tool call is a governed, audited action (one trace id per run). console.log
goes to stdout, console.warn and console.error to stderr. An uncaught exception,
and a promise rejection no handler takes (even after the result settled), ends
the script with its message and stack (exit 1). Exit codes: 0 done, 1 the script
threw, 2 usage, bundling or type errors (nothing ran), 3 the script reached its
limits, 4 internal error.

Flags:
`

// scriptCmd runs a toolscript: `wasmgate script FILE.ts [flags]`.
func (e env) scriptCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("script", e.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), scriptUsage)
		fs.PrintDefaults()
	}
	var config, auditFile, engineFlag, cacheDirFlag string
	limits := sandbox.Limits{MemoryPages: jstool.ScriptLimits().MemoryPages}
	fs.StringVar(&config, "config", "", "registry configuration (JSON) whose actions the script calls (default: none)")
	fs.StringVar(&auditFile, "audit", "", "append one audit record per tool call to this JSON Lines file")
	auditLockWait := fs.Duration("audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	fs.StringVar(&engineFlag, "engine", string(sandbox.EngineWazero), engineUsage)
	fs.StringVar(&cacheDirFlag, "cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	fs.Int64Var(&limits.TimeoutMs, "timeout-ms", jstool.ScriptLimits().TimeoutMs, "the script's wall-clock limit in milliseconds, tool calls included")
	fs.Uint64Var(&limits.Fuel, "fuel", jstool.ScriptLimits().Fuel, "the script's instruction budget (tool calls have their own)")
	fs.Var(uint32Flag{&limits.MemoryPages}, "memory-pages", "the script's memory limit in 64 KiB pages")
	noCheck := fs.Bool("no-check", false, "run a TypeScript script without type-checking it first")
	checkTimeout := fs.Duration("check-timeout", tscheck.DefaultTimeout, "the type check's wall-clock bound: a check that takes longer stops, and nothing runs")
	checkMemoryMB := fs.Int64("check-memory-mb", tscheck.DefaultMaxMemory>>20, "the type check's memory bound in MiB (the compiler's resident memory, and its output): a check that needs more stops, and nothing runs")
	var gf gatewayFlags
	gf.register(fs, true)
	emitTypes := fs.String("emit-types", "", "write the declarations of the registry's tools (toolscript.d.ts, wasmgate-env.d.ts, tsconfig.json) into this directory; with no FILE, only that")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("script", &usageError{err.Error()})
	}
	if len(files) > 1 || (len(files) == 0 && *emitTypes == "") {
		return e.fail("script", usagef("want one script FILE (.ts .mts .cts .js .mjs .cjs), got %d arguments", len(files)))
	}
	if limits, err = zeroLimits(fs, limits); err != nil {
		return e.fail("script", err)
	}
	if err := limits.Validate(); err != nil {
		return e.fail("script", usagef("%v", err))
	}
	engineName, err := sandbox.ParseEngineName(engineFlag)
	if err != nil {
		return e.fail("script", usagef("--engine: %v", err))
	}
	if *checkTimeout <= 0 {
		return e.fail("script", usagef("--check-timeout %s: want a positive duration (e.g. 30s); --no-check skips the check", *checkTimeout))
	}
	if *checkMemoryMB <= 0 || *checkMemoryMB > 1<<30 {
		return e.fail("script", usagef("--check-memory-mb %d: want a positive number of MiB up to %d; --no-check skips the check", *checkMemoryMB, 1<<30))
	}
	checker := tscheck.Default()
	checker.Timeout, checker.MaxMemory = *checkTimeout, *checkMemoryMB<<20

	// The registry is loaded once, on the Runtime's engine; the audit log
	// is opened only once the script has bundled and type-checked.
	var reg *pipeline.Registry
	rt, openAudit, err := openRuntimeAuditLater(ctx, runtimeFlags{engine: engineName, cacheDir: cacheDirFlag, audit: auditFile, lockWait: *auditLockWait},
		func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
			reg = pipeline.NewRegistry()
			if config == "" {
				return reg, nil
			}
			loaded, err := e.loadRegistry(ctx, engine, sourceFlags{config: config}, "", sandbox.Limits{},
				func(problem string) { fmt.Fprintf(e.stderr, "wasmgate script: warning: %s\n", problem) })
			reg = loaded
			return loaded, err
		})
	if err != nil {
		return e.fail("script", err)
	}
	defer rt.Close(ctx)

	// The MCP servers' tools join the registry before anything is bundled
	// or declared.
	var cat actionCatalog = reg
	gw, err := gf.connect(ctx, e.stderr, "script")
	if err != nil {
		return e.fail("script", err)
	}
	var counter *gatewayCounter
	if gw != nil {
		defer gw.Close()
		if err := gw.Register(rt); err != nil {
			return e.fail("script", usagef("--mcp-servers: %v", err))
		}
		cat, counter = rt, newGatewayCounter(gw)
	}

	if *emitTypes != "" {
		types, err := typeFiles(cat)
		if err != nil {
			return e.fail("script", usagef("%v", err))
		}
		if err := writeTypes(*emitTypes, types); err != nil {
			return e.fail("script", err)
		}
		if len(files) == 0 {
			return exitSuccess
		}
	}

	// One path with Code Mode's run_script: bundling finds syntax and
	// type-stripping errors, type-checking type errors, before anything
	// runs (and before the audit log is touched).
	runner := toolscript.Runner{Host: rt, Tools: cat, Limits: limits, BeforeRun: openAudit}
	if !*noCheck {
		runner.Checker = &checker
	}
	if counter != nil {
		runner.WrapCall = counter.wrap
	}
	if wd, err := os.Getwd(); err == nil {
		runner.Cwd = wd // the toolscript text: "the directory from which toolscript was invoked"
	}
	res, err := runner.Run(ctx, toolscript.Script{File: files[0]}, e.stdout, e.stderr)
	var be *jstool.BundleError
	switch {
	case errors.As(err, &be), errors.Is(err, os.ErrNotExist):
		return e.fail("script", usagef("%v", err))
	case err != nil:
		return e.fail("script", checkError(err, files[0], checker))
	case len(res.TypeErrors) > 0:
		e.printTypeErrors(files[0], res.TypeErrors)
		return exitUsage
	}
	if counter != nil && res.Ran {
		defer fmt.Fprintln(e.stderr, counter.line())
	}
	out := res.Outcome
	switch out.Kind {
	case sandbox.Completed:
		if len(out.Output) > 0 {
			fmt.Fprintf(e.stdout, "%s\n", out.Output)
		}
		return exitSuccess
	case sandbox.Failed, sandbox.OutputNotJSON:
		fmt.Fprintf(e.stderr, "wasmgate script: %s\n", out.Message)
		return exitFailed
	}
	fmt.Fprintf(e.stderr, "wasmgate script: %s\n", toolscript.Stopped(out, res.Limits, func(name string) string { return "--" + name }))
	return exitBlocked
}
