package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/weborigin"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/protocol/httpexec"
	"github.com/wasmgate/wasmgate/protocol/mcp"
)

const serveHelp = `Usage:
  wasmgate serve [--addr 127.0.0.1:8080] [--config FILE] [--tools-dir DIR] [--audit FILE [--audit-key KEYFILE]]
                 [--npm-allow PATTERN,...] [--max-concurrency N] [--queue-wait D]
                 [--log-format text|json] [--auth-all] [--results full|digest-only]
                 [--cors-origin ORIGIN]... [--mcp-idle-timeout D] [--mcp-max-sessions N]

Serves the HTTP executor protocol v1.0: GET /health, POST /execute-tool,
GET /info (also under /api/), and GET /metrics (Prometheus). A request's
packageName names an action or executor of --config, or an npm package of
JS tools, installed into the tool store on first use: with --config, only
the packages --npm-allow names (none by default); without it, any. Every call runs in a
fresh sandbox and is audited (--audit FILE; without it records are checked
and dropped). When EXECUTOR_API_KEY is set, POST /execute-tool needs
"Authorization: Bearer <key>" (/health, /info and /metrics stay open, as the
protocol's OpenAPI description has it; --auth-all guards them too). SIGTERM
or SIGINT stops accepting requests and waits for the calls in flight.

With --audit-key (a signer key made by 'wasmgate audit keygen'), the
--audit log is also published as a C2SP transparency log: GET /checkpoint
(signed with the key, re-signed every second while records are added;
it covers only records the log made durable) and GET /tile/<L>/<N>[.p/<W>]
and /tile/entries/<N>[.p/<W>] (C2SP tlog-tiles). These routes need no key,
even with --auth-all: a transparency log is read by anyone, and the
records hold digests, never payloads. Each result names its verdict's
record (audit_index; auditIndex in the protocol's "wasmgate" member), whose
proof 'wasmgate audit prove LOG --seq INDEX+1' prints.

Web pages: POST /execute-tool takes Content-Type application/json only
(415 otherwise). Without EXECUTOR_API_KEY, a request from a web page (one
with an Origin header) is refused with 403 on every route, so that no web
site the user visits can run tools here, unless --cors-origin lists its
origin. With a key, pages are served as the protocol says.

/mcp serves the same tools over the Model Context Protocol (streamable
HTTP; see 'wasmgate mcp -h' and docs/MCP.md): the registry's actions, or
the cluster's with --nats, and the tool store's packages --npm-allow lets
run. The store's catalog loads in the background: the server answers at
once, /health says how far the catalog is (wasmgate.catalog), and a call
to a tool not loaded yet loads that tool first. /mcp always needs the key
when EXECUTOR_API_KEY is set, and its calls take their slots from the same
admission as /execute-tool. It refuses, key or not, a web page whose
origin --cors-origin does not list (pages of this machine on a loopback
address are served), bodies over --max-body-bytes, and JSON-RPC batches
where the session's protocol version has none; a session unused for
--mcp-idle-timeout ends, and beyond --mcp-max-sessions open at once a new
one is refused with 503 and Retry-After. With --code-mode, /mcp offers one
tool, run_script, that runs a TypeScript program calling the registry's
actions and the tools of --mcp-servers (see 'wasmgate mcp -h').

Flags:
`

// implementationVersion is reported by /health and /info.
const implementationVersion = "0.4.0"

func (e env) serveCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("serve", e.stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	config := fs.String("config", "", "registry configuration (JSON): its actions and executors are served by name")
	toolsDir := fs.String("tools-dir", "", "tool store for npm packages (default: $WASMGATE_TOOLS_DIR, else the user cache directory)")
	auditPath := fs.String("audit", "", "append every call's audit record to this JSON Lines file")
	auditLockWait := fs.Duration("audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	auditKey := fs.String("audit-key", "", "publish the --audit log as a transparency log (/checkpoint, /tile/...), its checkpoints signed with this signer key ('wasmgate audit keygen')")
	maxConc := fs.Int("max-concurrency", 0, "tool calls running at once (default: 4 per CPU)")
	queueWait := fs.Duration("queue-wait", httpexec.DefaultQueueWait, "how long a call may wait for a slot before it is refused with 503")
	queueLength := fs.Int("queue-length", httpexec.DefaultQueueLength, "calls that may wait for a slot at once (each holds its request body)")
	npmAllow := fs.String("npm-allow", "", "npm packages a request may name beyond the registry: comma-separated patterns on package names (@tpmjs/*; * for any). Default: none with --config, * without")
	logFormat := fs.String("log-format", "text", "log format on stderr: text or json")
	engineName := fs.String("engine", string(sandbox.EngineWazero), engineUsage)
	cache := fs.String("cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	maxBody := fs.Int64("max-body-bytes", httpexec.DefaultMaxBodyBytes, "largest request body accepted")
	maxExec := fs.Duration("max-execution-time", httpexec.DefaultMaxExecutionTime, "wall-clock limit of one tool call, advertised by /info (the protocol asks for at least 60s; less is for tests)")
	resultsFlag := fs.String("results", "full", resultsUsage)
	authAll := fs.Bool("auth-all", false, "require EXECUTOR_API_KEY on every route (/health, /info, /metrics too), not only on /execute-tool")
	var corsOrigins originsFlag
	fs.Var(&corsOrigins, "cors-origin", "a web origin (scheme://host[:port]) whose pages may call this server without EXECUTOR_API_KEY, and /mcp with or without it; repeat the flag for each")
	mcpIdle := fs.Duration("mcp-idle-timeout", mcp.DefaultIdleTimeout, "end an MCP session (/mcp) no request has used for this long")
	mcpMaxSessions := fs.Int("mcp-max-sessions", mcp.DefaultMaxSessions, "MCP sessions (/mcp) open at once; beyond, a new one is refused with 503 and Retry-After")
	var nf natsFlags
	nf.register(fs, "dispatch every call to the workers of this NATS JetStream deployment instead of executing it here")
	var cm codeModeFlags
	cm.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("serve", &usageError{err.Error()})
	}
	switch {
	case len(pos) > 0:
		return e.fail("serve", usagef("unexpected argument %q", pos[0]))
	case *logFormat != "text" && *logFormat != "json":
		return e.fail("serve", usagef("--log-format must be text or json, not %q", *logFormat))
	case *maxConc < 0:
		return e.fail("serve", usagef("--max-concurrency must be positive"))
	case *queueWait <= 0:
		return e.fail("serve", usagef("--queue-wait must be positive (leave it out for 2s)"))
	case *queueLength <= 0:
		return e.fail("serve", usagef("--queue-length must be positive (leave it out for %d)", httpexec.DefaultQueueLength))
	case *maxBody <= 0:
		return e.fail("serve", usagef("--max-body-bytes must be positive"))
	case *maxExec < time.Second:
		return e.fail("serve", usagef("--max-execution-time must be at least 1s"))
	case *authAll && os.Getenv("EXECUTOR_API_KEY") == "":
		return e.fail("serve", usagef("--auth-all needs a key: set EXECUTOR_API_KEY"))
	case *mcpIdle <= 0:
		return e.fail("serve", usagef("--mcp-idle-timeout must be positive (leave it out for %s)", mcp.DefaultIdleTimeout))
	case *mcpMaxSessions <= 0:
		return e.fail("serve", usagef("--mcp-max-sessions must be positive (leave it out for %d)", mcp.DefaultMaxSessions))
	}
	if nf.set() {
		if err := notWith(fs, "config", "audit", "audit-key", "npm-allow", "tools-dir"); err != nil {
			return e.fail("serve", err)
		}
	}
	var checkpointSigner note.Signer
	var checkpointVKey string
	if *auditKey != "" {
		if *auditPath == "" {
			return e.fail("serve", usagef("--audit-key publishes the --audit log: give --audit FILE too"))
		}
		if checkpointSigner, checkpointVKey, err = checkpointSignerFile(*auditKey); err != nil {
			return e.fail("serve", err)
		}
	}
	name, err := sandbox.ParseEngineName(*engineName)
	if err != nil {
		return e.fail("serve", usagef("--engine: %v", err))
	}
	results, err := pipeline.ParseResults(*resultsFlag)
	if err != nil {
		return e.fail("serve", usagef("--results: %v", err))
	}
	var allow []string // nil: the server's default (none with a registry, any without)
	if flagSet(fs, "npm-allow") {
		allow = []string{}
		for p := range strings.SplitSeq(*npmAllow, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if err := httpexec.ValidNPMPattern(p); err != nil {
				return e.fail("serve", usagef("--npm-allow: %v", err))
			}
			allow = append(allow, p)
		}
	}
	if _, err := jstool.EngineModule(); err != nil {
		fmt.Fprintf(e.stderr, "wasmgate serve: warning: %v; npm tools cannot run\n", err)
	}

	var handler slog.Handler = slog.NewTextHandler(e.stderr, nil)
	if *logFormat == "json" {
		handler = slog.NewJSONHandler(e.stderr, nil)
	}
	logger := slog.New(handler)

	build := noRegistry
	if *config != "" {
		build = func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
			return e.loadRegistry(ctx, engine, sourceFlags{config: *config}, "", sandbox.Limits{},
				func(problem string) { logger.Warn("registry problem", "problem", problem) })
		}
		if allow == nil {
			// A deployment with a registry serves what it registered.
			allow = []string{}
		}
	}
	var runner pipeline.Runner
	if nf.set() {
		c, err := nf.connect(ctx, "serve")
		if err != nil {
			return e.fail("serve", err)
		}
		defer c.Close()
		client, err := cluster.NewClient(ctx, c, cluster.ClientOptions{Results: results})
		if errors.Is(err, cluster.ErrNoRegistry) {
			return e.fail("serve", usagef("%v: publish one first (wasmgate publish --nats %s --config FILE)", err, nf.o.URL))
		}
		if err != nil {
			return e.fail("serve", err)
		}
		defer client.Close()
		runner = client
		logger.Info("dispatching to NATS workers", "nats", c.NC.ConnectedUrl(), "prefix", c.Names.Prefix, "actions", len(client.Actions()))
	}
	rf := runtimeFlags{engine: name, cacheDir: *cache, audit: *auditPath, lockWait: *auditLockWait, results: results}
	if runner == nil && *auditPath == "" {
		logger.Warn("no --audit file: audit records are checked and dropped")
	}
	// With the cluster, the workers audit every call, to the cluster's
	// chain; the Runtime here only reports the engine (--audit is refused).
	var rt *wg.Runtime
	var sink *audit.FileSink
	if checkpointSigner != nil {
		rt, sink, err = openRuntimeWithLog(ctx, rf, build)
	} else {
		rt, err = openRuntime(ctx, rf, build)
	}
	if err != nil {
		return e.fail("serve", err)
	}
	defer rt.Close(context.WithoutCancel(ctx))
	var published *transparency.Server
	if sink != nil {
		// The tree follows what the sink made durable: a checkpoint never
		// covers a record a failed fsync may still cut back.
		tree, err := transparency.OpenFollowing(*auditPath)
		if err != nil {
			return e.fail("serve", err)
		}
		defer tree.Close()
		var stop func()
		if published, stop, err = publishLog(ctx, tree, checkpointSigner, fileSinkDurable(sink)); err != nil {
			return e.fail("serve", err)
		}
		defer stop()
	}

	store := sourceFlags{toolsDir: *toolsDir}.store()
	// /mcp offers the same tools: the registry's actions (or the
	// cluster's), and the tool store's packages the server may run. Its
	// calls take their slots from the server's admission.
	var srv *httpexec.Server
	var codeMode *mcp.CodeMode
	catalog := []mcp.Catalog{}
	switch {
	case runner != nil:
		catalog = append(catalog, mcp.RegistryTools(runner))
	case cm.on:
		// /mcp offers run_script alone; /execute-tool serves as ever.
		gw, err := cm.gateway.connectRuntime(ctx, rt, e.stderr, "serve")
		if err != nil {
			return e.fail("serve", err)
		}
		if gw != nil {
			defer gw.Close()
		}
		codeMode = codeModeOf(rt, gw)
	case *config != "":
		catalog = append(catalog, mcp.RegistryTools(registryOf(rt)))
	}
	// The tool store's catalog loads in the background, once the server
	// answers: finding a package's tools means loading each export, for
	// seconds to minutes per package on first sight.
	var storeCatalog *mcp.StoreCatalog
	var loadTool func(context.Context, pipeline.ExecutorSource) (pipeline.Executor, error)
	var catalogStatus func() httpexec.CatalogStatus
	if runner == nil {
		storeCatalog = mcp.NewStoreCatalog(mcp.StoreConfig{
			Store: store, Runtime: rt,
			Limits: jstool.ServedLimits(*maxExec), Logger: logger,
			Allow: func(pkg string) bool { return srv != nil && srv.NPMAllows(pkg) },
		})
		loadTool = storeCatalog.LoadTool
		catalogStatus = func() httpexec.CatalogStatus { return httpexec.CatalogStatus(storeCatalog.Status()) }
	}
	mcpCfg := mcp.Config{Catalog: mcp.Catalogs(catalog...), Store: storeCatalog}
	if codeMode != nil {
		mcpCfg = mcp.Config{CodeMode: codeMode}
	}
	mcpSrv, err := mcp.New(ctx, mcp.Config{
		CodeMode:         mcpCfg.CodeMode,
		Catalog:          mcpCfg.Catalog,
		Store:            mcpCfg.Store,
		Version:          implementationVersion,
		Admit:            func(ctx context.Context) (func(), error) { return srv.Admit(ctx) },
		MaxExecutionTime: *maxExec,
		Logger:           logger,
	})
	if err != nil {
		return e.fail("serve", err)
	}
	srv = httpexec.NewServer(httpexec.Config{
		Runtime:               rt,
		Runner:                runner,
		Store:                 store,
		LoadTool:              loadTool,
		Catalog:               catalogStatus,
		APIKey:                os.Getenv("EXECUTOR_API_KEY"),
		AuthAll:               *authAll,
		CORSOrigins:           corsOrigins,
		MaxConcurrency:        *maxConc,
		QueueLength:           *queueLength,
		QueueWait:             *queueWait,
		NPMAllow:              allow,
		MaxBodyBytes:          *maxBody,
		MaxExecutionTime:      *maxExec,
		ImplementationVersion: implementationVersion,
		Logger:                logger,
		MCP: mcpSrv.HTTPHandler(mcp.HTTPConfig{
			AllowedOrigins: corsOrigins,
			MaxBodyBytes:   *maxBody,
			IdleTimeout:    *mcpIdle,
			MaxSessions:    *mcpMaxSessions,
		}),
	})
	if storeCatalog != nil {
		// The store's packages the server may run (srv says which), listed
		// before it answers, so that /health says from the first request
		// what is still to load.
		if err := mcpSrv.Refresh(ctx); err != nil {
			logger.Warn("mcp: listing the tool store", "error", err)
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return e.fail("serve", usagef("--addr: %v", err))
	}
	var routes http.Handler = srv
	if published != nil {
		routes = withLogRoutes(published, srv)
	}
	hs := &http.Server{
		Handler:           routes,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A call may install a package (60 s) and then run (up to
		// --max-execution-time), plus the queue.
		WriteTimeout:   *maxExec + 90*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(handler, slog.LevelWarn),
	}
	logger.Info("listening", "url", "http://"+ln.Addr().String(), "tools_dir", store.Dir,
		"npm_allow", strings.Join(srv.NPMAllowed(), ","),
		"auth", authScope(os.Getenv("EXECUTOR_API_KEY") != "", *authAll), "audit", *auditPath,
		"cors_origins", strings.Join(corsOrigins, ","))
	if published != nil {
		logger.Info("publishing the audit log", "checkpoint", "http://"+ln.Addr().String()+"/checkpoint",
			"origin", checkpointSigner.Name(), "vkey", checkpointVKey, "size", published.Size())
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if storeCatalog != nil {
		// The store's packages load in the background once the server
		// answers, and so does every package added while it runs:
		// tools/list grows, announced with tools/list_changed.
		stop := loadInBackground(ctx, storeCatalog, mcpSrv)
		defer stop()
	}
	select {
	case err := <-served:
		return e.fail("serve", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: no new requests; waiting for the calls in flight")
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), *maxExec+90*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return e.fail("serve", fmt.Errorf("shutdown: %w", err))
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return e.fail("serve", err)
	}
	logger.Info("stopped")
	return exitSuccess
}

// authScope says in the listening line what the API key guards.
func authScope(key, all bool) string {
	switch {
	case !key:
		return "none"
	case all:
		return "all routes"
	}
	return "/execute-tool"
}

// originsFlag collects the web origins of a repeated flag, each checked as
// it is given (exit 2 naming the bad one).
type originsFlag []string

func (o *originsFlag) String() string { return strings.Join(*o, ",") }

func (o *originsFlag) Set(v string) error {
	origin, err := weborigin.Parse(v)
	if err != nil {
		return err
	}
	*o = append(*o, origin)
	return nil
}
