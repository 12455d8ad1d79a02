package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"golang.org/x/mod/sumdb/note"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/audit/transparency"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

const logHelp = `Usage:
  wasmgate log LOG --audit-key KEYFILE [--addr 127.0.0.1:7381] [--log-format text|json]
  wasmgate log --nats URL [--nats-prefix P] --mirror FILE --audit-key KEYFILE [--addr ...]

Publishes the audit log LOG, which another process writes (a serve, rep,
mcp or run with --audit FILE), as a C2SP transparency log, read-only:
GET /checkpoint (a checkpoint signed with KEYFILE, re-signed every second
while records are added) and GET /tile/<L>/<N>[.p/<W>] and
/tile/entries/<N>[.p/<W>] as C2SP tlog-tiles lays them out, so that a
standard client, monitor, mirror or witness reads it. The routes need no
key: what a log publishes is public.

KEYFILE is a signer key made by 'wasmgate audit keygen --origin ORIGIN
--out KEYFILE'; its name is the log's origin. The verifier key to give
verifiers is logged at start, with the address. The tree's hashes are kept
beside the log, in LOG.tlog.

The server follows a log that grows by appends: every complete line is
signed as it appears. A log cut back or rewritten below a signed
checkpoint is refused, naming the record.

With --nats, it publishes a NATS deployment's audit chain live: it keeps
a local copy of the chain in FILE (created, mode 0600, if missing),
appends each record as the workers store it, fsyncs it, and publishes
FILE; no checkpoint covers a record before it is on disk. A FILE that
exists must be a copy of the chain's first records (its last line is
compared with the stream's record of its seq; anything else is refused),
so a restart continues where the last run stopped. A FILE ending in a
torn line (a crash mid-append) is refused: 'wasmgate audit repair FILE'
cuts it back. One process at a time may keep a FILE.

Flags:
`

// checkpointInterval is how often a published log is re-signed while it
// grows (C2SP tlog-tiles logs: at least every second).
const checkpointInterval = time.Second

func (e env) logCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("log", e.stderr)
	addr := fs.String("addr", "127.0.0.1:7381", "address to listen on")
	keyFile := fs.String("audit-key", "", "sign checkpoints with this signer key ('wasmgate audit keygen'); required")
	logFormat := fs.String("log-format", "text", "log format on stderr: text or json")
	var nf natsFlags
	nf.register(fs, "publish this NATS JetStream deployment's audit chain, copied to --mirror as it grows")
	mirror := fs.String("mirror", "", "with --nats: the local copy of the chain to keep and publish")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), logHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil:
		return e.fail("log", &usageError{err.Error()})
	case nf.set() && len(pos) > 0:
		return e.fail("log", usagef("--nats publishes the deployment's chain, copied to --mirror FILE: no log argument (%q)", pos[0]))
	case nf.set() && *mirror == "":
		return e.fail("log", usagef("--nats needs --mirror FILE: the local copy of the chain that is published"))
	case !nf.set() && *mirror != "":
		return e.fail("log", usagef("--mirror keeps a copy of a NATS deployment's chain: give --nats URL too"))
	case !nf.set() && len(pos) != 1:
		return e.fail("log", usagef("want one audit log (wasmgate log LOG --audit-key KEYFILE), got %d arguments", len(pos)))
	case *keyFile == "":
		return e.fail("log", usagef("--audit-key KEYFILE is required: make one with 'wasmgate audit keygen --origin ORIGIN --out KEYFILE'"))
	case *logFormat != "text" && *logFormat != "json":
		return e.fail("log", usagef("--log-format must be text or json, not %q", *logFormat))
	}
	signer, vkey, err := checkpointSignerFile(*keyFile)
	if err != nil {
		return e.fail("log", err)
	}
	var handler slog.Handler = slog.NewTextHandler(e.stderr, nil)
	if *logFormat == "json" {
		handler = slog.NewJSONHandler(e.stderr, nil)
	}
	if nf.set() {
		return e.logNATS(ctx, nf, *mirror, signer, vkey, *addr, handler)
	}

	if _, err := os.Stat(pos[0]); err != nil {
		return e.fail("log", fmt.Errorf("audit log: %w", err))
	}
	tree, err := transparency.Open(pos[0])
	if err != nil {
		return e.fail("log", err)
	}
	defer tree.Close()
	// Every complete line of a log another process writes is signed (nil):
	// a FileSink writes a record's line whole and fsyncs before it answers.
	published, stop, err := publishLog(ctx, tree, signer, nil)
	if err != nil {
		return e.fail("log", err)
	}
	defer stop()
	if err := servePublished(ctx, *addr, published, handler, "log", pos[0], "origin", signer.Name(), "vkey", vkey); err != nil {
		return e.fail("log", err)
	}
	return exitSuccess
}

// servePublished serves published on addr until ctx ends, logging the
// listening line (with attrs) and, at the end, the size it stopped at.
func servePublished(ctx context.Context, addr string, published *transparency.Server, handler slog.Handler, attrs ...any) error {
	logger := slog.New(handler)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usagef("--addr: %v", err)
	}
	hs := &http.Server{
		Handler:           withLogRoutes(published, http.HandlerFunc(notALogRoute)),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(handler, slog.LevelWarn),
	}
	logger.Info("listening", append(append([]any{"url", "http://" + ln.Addr().String()}, attrs...), "size", published.Size())...)
	if err := serveUntilDone(ctx, hs, ln, 10*time.Second); err != nil {
		return err
	}
	if err := published.Err(); err != nil {
		logger.Warn("the last checkpoint refresh failed", "error", err)
	}
	logger.Info("stopped", "size", published.Size())
	return nil
}

// notALogRoute answers what a published log does not serve.
func notALogRoute(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not found: this server publishes an audit log at /checkpoint, /tile/<L>/<N>[.p/<W>] and /tile/entries/<N>[.p/<W>] (C2SP tlog-tiles)", http.StatusNotFound)
}

// checkpointSignerFile reads a note signer key (the file 'wasmgate audit
// keygen' writes) and returns the signer and its verifier key, for the
// operator to hand to verifiers.
//
// # Errors
//
// One naming the file and what to do, when it cannot be read or does not
// hold an Ed25519 signer key in golang.org/x/mod/sumdb/note's encoding
// (a verifier key given by mistake is named as such).
func checkpointSignerFile(path string) (note.Signer, string, error) {
	return signerKeyFile("audit-key", path)
}

// publishLog signs a first checkpoint of tree and re-signs it every
// second while the log grows, until stop is called (which waits for the
// refreshing goroutine) or ctx ends. durable is as transparency.NewServer's.
func publishLog(ctx context.Context, tree *transparency.Tree, signer note.Signer, durable func() int64) (*transparency.Server, func(), error) {
	srv, err := transparency.NewServer(tree, signer, durable)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Run(ctx, checkpointInterval)
	}()
	return srv, func() { cancel(); <-done }, nil
}

// withLogRoutes serves the transparency log's routes (/checkpoint,
// /tile/...) with log and everything else with next. The log's routes are
// outside next's API key and origin checks on purpose: a transparency log
// is read by anyone (monitors, mirrors, witnesses, a verifier fetching a
// proof), and it holds digests only, never a payload.
func withLogRoutes(log http.Handler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !transparency.Handles(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		// Public and read-only: any web page may read it.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		log.ServeHTTP(w, r)
	})
}

// openRuntimeWithLog is openRuntime for a command that also publishes its
// --audit log as it grows (serve --audit-key): it opens the log's FileSink
// itself, so that the log's tree signs no more than the sink made durable,
// and hands it to the Runtime, which owns it (Close closes it).
func openRuntimeWithLog(ctx context.Context, f runtimeFlags, build func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error)) (*wg.Runtime, *audit.FileSink, error) {
	if err := checkLockWait(f.lockWait); err != nil {
		return nil, nil, err
	}
	sink, err := audit.OpenFile(f.audit, audit.WithLockWait(f.lockWait))
	if err != nil {
		return nil, nil, auditLogError(err, f.audit)
	}
	f.audit = ""
	rt, err := openRuntime(ctx, f, build, wg.WithAuditSink(sink))
	if err != nil {
		sink.Close()
		return nil, nil, err
	}
	return rt, sink, nil
}

// fileSinkDurable is what a tree following sink's log may sign: the log's
// size after its last durable record.
func fileSinkDurable(sink *audit.FileSink) func() int64 {
	return func() int64 {
		_, size := sink.Durable()
		return size
	}
}
