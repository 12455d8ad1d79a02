package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/protocol/mcp"
)

const mcpHelp = `Usage:
  wasmgate mcp --config FILE [--audit FILE] [--tools-dir DIR] [--engine E] [--cache-dir DIR]
  wasmgate mcp --code-mode [--config FILE] [--mcp-servers FILE [--mcp-allow SERVER.TOOL]...] [--audit FILE]

Serves every action of --config as a Model Context Protocol tool, on stdio
(newline-delimited JSON-RPC on stdin and stdout; logs go to stderr), for MCP
clients that start their servers as commands:

  {"mcpServers": {"wasmgate": {"command": "wasmgate",
    "args": ["mcp", "--config", "/path/to/registry.json", "--audit", "/path/to/audit.jsonl"]}}}

tools/list gives each action's name, title, description, inputSchema and
outputSchema (from its executor's manifest, or a JS tool's own schema), and
annotations readOnlyHint, idempotentHint true and openWorldHint,
destructiveHint false: executors are pure. With --tools-dir, every tool of
every npm package in that tool store (wasmgate tools add) is offered too,
named PACKAGE_EXPORT; a package added while the server runs is announced
with notifications/tools/list_changed. The store's tools load in the
background, so initialize is answered at once: tools/list gives those
loaded so far and grows (announced the same way), and a call to a tool not
listed yet loads that tool first. What each package offers is recorded in
the store (catalog.json beside its bundle), so that a later start lists it
without loading it again.

tools/call is one governed execution, audited (--audit FILE): the pipeline
checks the arguments against the input schema (BLOCKED
INPUT_SCHEMA_INVALID, naming the JSON pointer) and the output against the
output schema (FAILED OUTPUT_SCHEMA_INVALID). A success gives the output as
structuredContent (when it is an object) and as text; any other verdict
gives isError with "STATUS CODES: message". The verdict without its output
is in the result's _meta "wasmgate/result". A call that runs past 1 s
sends progress notifications when the client gave a progress token;
notifications/cancelled stops the execution (audited BLOCKED
EXECUTOR_TIMEOUT); a W3C traceparent in the request's _meta gives the
trace id.

A line over --max-line-bytes is discarded as it is read and answered with
a JSON-RPC error -32700 naming the limit; so is a line that is not JSON, one
that is not a JSON-RPC message gets -32600, and so does a batch where the
session's protocol version has none (2025-06-18 and later). The server reads
on after each.

With --code-mode, the server offers one tool instead, run_script: its
argument "script" is a TypeScript program (a toolscript, as 'wasmgate
script' runs: import { tools } from "toolscript"; ... export default RESULT)
and its description declares every action of --config and every tool of
--mcp-servers that --mcp-allow allows (toolscript.d.ts), so that an agent
writes one script instead of making many calls. The script is bundled
with no file system (it imports "toolscript" and Node's built-ins only),
type-checked (a type error runs nothing), and run under the script limits;
each tool call is a governed, audited action, and each run has its own
--mcp-max-calls budget. The result is structuredContent {result, stdout,
stderr} and the same as text; the type errors, the exception with its
stack, or the limit reached give isError. _meta "wasmgate/script" says how
far it got, how many calls it made and their trace id.

The same server is at /mcp on 'wasmgate serve' (streamable HTTP).

Flags:
`

func (e env) mcpCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("mcp", e.stderr)
	config := fs.String("config", "", "registry configuration (JSON): its actions are the tools")
	toolsDir := fs.String("tools-dir", "", "also offer every tool of the npm packages in this tool store")
	auditPath := fs.String("audit", "", "append every call's audit record to this JSON Lines file")
	auditLockWait := fs.Duration("audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	maxExec := fs.Duration("max-execution-time", 60*time.Second, "wall-clock limit of one tool call (an executor's timeout_ms applies within it)")
	engineName := fs.String("engine", string(sandbox.EngineWazero), engineUsage)
	cache := fs.String("cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	logFormat := fs.String("log-format", "text", "log format on stderr: text or json")
	maxLine := fs.Int("max-line-bytes", mcp.DefaultMaxLineBytes, "largest message (one line on stdin) accepted; a longer one is answered with a JSON-RPC error")
	var nf natsFlags
	nf.register(fs, "dispatch every call to the workers of this NATS JetStream deployment (instead of --config)")
	var cm codeModeFlags
	cm.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), mcpHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("mcp", &usageError{err.Error()})
	}
	switch {
	case len(pos) > 0:
		return e.fail("mcp", usagef("unexpected argument %q", pos[0]))
	case *maxExec <= 0:
		return e.fail("mcp", usagef("--max-execution-time must be positive"))
	case *maxLine <= 0:
		return e.fail("mcp", usagef("--max-line-bytes must be positive (leave it out for %d)", mcp.DefaultMaxLineBytes))
	case cm.check(fs, "nats", "tools-dir") != nil:
		return e.fail("mcp", cm.check(fs, "nats", "tools-dir"))
	case cm.on && *config == "" && cm.gateway.servers == "":
		return e.fail("mcp", usagef("--code-mode needs --config FILE or --mcp-servers FILE: their tools are what scripts call"))
	case nf.set():
		if err := notWith(fs, "config", "audit", "tools-dir"); err != nil {
			return e.fail("mcp", err)
		}
	case !cm.on && *config == "" && *toolsDir == "":
		return e.fail("mcp", usagef("--config FILE (or --tools-dir DIR, or --nats URL) is required: its actions are the tools"))
	}
	name, err := sandbox.ParseEngineName(*engineName)
	if err != nil {
		return e.fail("mcp", usagef("--engine: %v", err))
	}
	var logger *slog.Logger
	switch *logFormat {
	case "text":
		logger = slog.New(slog.NewTextHandler(e.stderr, nil))
	case "json":
		logger = slog.New(slog.NewJSONHandler(e.stderr, nil))
	default:
		return e.fail("mcp", usagef("--log-format must be text or json, not %q", *logFormat))
	}

	var catalogs []mcp.Catalog
	var storeCatalog *mcp.StoreCatalog
	var codeMode *mcp.CodeMode
	if nf.set() {
		runner, closeRunner, err := e.repRunner(ctx, nf, name, *cache, "", "", *auditLockWait, logger)
		if err != nil {
			return e.fail("mcp", err)
		}
		defer closeRunner()
		catalogs = append(catalogs, mcp.RegistryTools(runner))
	} else {
		build := noRegistry
		if *config != "" {
			build = func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
				return e.loadRegistry(ctx, engine, sourceFlags{config: *config}, "", sandbox.Limits{},
					func(problem string) { logger.Warn("registry problem", "problem", problem) })
			}
		}
		if *auditPath == "" {
			logger.Warn("no --audit file: audit records are checked and dropped")
		}
		rt, err := openRuntime(ctx, runtimeFlags{engine: name, cacheDir: *cache, audit: *auditPath, lockWait: *auditLockWait}, build)
		if err != nil {
			return e.fail("mcp", err)
		}
		defer rt.Close(context.WithoutCancel(ctx))
		if cm.on {
			gw, err := cm.gateway.connectRuntime(ctx, rt, e.stderr, "mcp")
			if err != nil {
				return e.fail("mcp", err)
			}
			if gw != nil {
				defer gw.Close()
			}
			codeMode = codeModeOf(rt, gw)
		} else if *config != "" {
			catalogs = append(catalogs, mcp.RegistryTools(registryOf(rt)))
		}
		if *toolsDir != "" {
			storeCatalog = mcp.NewStoreCatalog(mcp.StoreConfig{
				Store: jstool.Store{Dir: *toolsDir}, Runtime: rt,
				Limits: jstool.ServedLimits(*maxExec), Logger: logger,
			})
		}
	}
	var catalog mcp.Catalog
	if codeMode == nil {
		catalog = mcp.Catalogs(catalogs...)
	}
	srv, err := mcp.New(ctx, mcp.Config{
		CodeMode:         codeMode,
		Catalog:          catalog,
		Store:            storeCatalog,
		Version:          implementationVersion,
		MaxExecutionTime: *maxExec,
		Logger:           logger,
		MaxLineBytes:     *maxLine,
	})
	if err != nil {
		return e.fail("mcp", err)
	}
	if codeMode != nil && cm.gateway.servers != "" {
		// A server's tools change (tools/list_changed to the gateway):
		// run_script's declarations follow, announced the same way.
		stop := watchInBackground(ctx, srv)
		defer stop()
	}
	if storeCatalog != nil {
		// The store's tools load in the background, so that the client's
		// initialize is answered at once; tools/list grows as they load,
		// and as packages are added, announced with tools/list_changed.
		stop := loadInBackground(ctx, storeCatalog, srv)
		defer stop()
	}
	logger.Info("serving MCP on stdio", "tools", len(srv.Names()), "audit", *auditPath)
	if err := srv.ServeStdio(ctx, e.stdin, e.stdout); err != nil {
		return e.fail("mcp", err)
	}
	return exitSuccess
}

// watchInBackground keeps srv's tool list in step with its catalog until
// stop is called; stop returns once it has stopped.
func watchInBackground(ctx context.Context, srv *mcp.Server) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { srv.Watch(ctx, 2*time.Second) })
	return func() {
		cancel()
		wg.Wait()
	}
}

// loadInBackground loads the tool store's catalog and keeps srv's tool
// list in step with it until stop is called; stop returns once both have
// stopped, so that the engine is not closed under a load.
func loadInBackground(ctx context.Context, catalog *mcp.StoreCatalog, srv *mcp.Server) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { catalog.Run(ctx) })
	wg.Go(func() { srv.Watch(ctx, 2*time.Second) })
	return func() {
		cancel()
		wg.Wait()
	}
}
