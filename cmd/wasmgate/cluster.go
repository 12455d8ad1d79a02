package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"time"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// natsFlags are the flags of every command that can reach a NATS deployment.
type natsFlags struct {
	o        cluster.Options
	replicas int
}

func (f *natsFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&f.o.URL, "nats", "", what+" (nats://host:4222; several comma-separated)")
	fs.StringVar(&f.o.Prefix, "nats-prefix", cluster.DefaultPrefix, "names the deployment's subjects, streams and buckets, so tenants can share a cluster")
	fs.StringVar(&f.o.Creds, "nats-creds", "", "NATS user credentials file")
	fs.StringVar(&f.o.NKey, "nats-nkey", "", "NATS nkey seed file")
	fs.StringVar(&f.o.TLSCert, "nats-tls-cert", "", "client certificate for NATS TLS")
	fs.StringVar(&f.o.TLSKey, "nats-tls-key", "", "key of --nats-tls-cert")
	fs.StringVar(&f.o.TLSCA, "nats-tls-ca", "", "CA certificate NATS servers are checked against")
	fs.IntVar(&f.replicas, "nats-replicas", 1, "replicas of the streams and buckets this command creates (3 to survive a server of a cluster)")
}

func (f natsFlags) set() bool { return f.o.URL != "" }

// connect connects and makes sure the streams and buckets exist.
func (f natsFlags) connect(ctx context.Context, name string) (*cluster.Conn, error) {
	if f.replicas < 1 {
		return nil, usagef("--nats-replicas must be at least 1")
	}
	if _, err := cluster.NewNames(f.o.Prefix); err != nil {
		return nil, usagef("--nats-prefix: %v", err)
	}
	o := f.o
	o.Name = "wasmgate " + name
	c, err := cluster.Connect(o)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Setup(sctx, cluster.Layout{Replicas: f.replicas}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// notWith reports the first of the flags given that --nats replaces.
func notWith(fs *flag.FlagSet, names ...string) error {
	for _, n := range names {
		if flagSet(fs, n) {
			return usagef("--%s does not apply with --nats: the workers hold the registry and the audit chain (publish the registry with 'wasmgate publish')", n)
		}
	}
	return nil
}

const workerHelp = `Usage: wasmgate worker --nats URL [flags]

Executes the action requests of a NATS JetStream deployment: pulls them from
the work-queue stream, runs each through the governed pipeline on the
registry 'wasmgate publish' put there (reloaded when a new one is published),
appends attempt and verdict to the deployment's one audit chain, answers the
requester, and only then acknowledges the request. A worker that dies leaves
its requests to another after --ack-wait; the chain keeps one verdict per
request. Stops on SIGINT/SIGTERM after the executions under way.

Flags:
`

func (e env) workerCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("worker", e.stderr)
	var nf natsFlags
	nf.register(fs, "NATS server URL (required)")
	conc := fs.Int("concurrency", 0, "requests executed at once (default: one per CPU)")
	ackWait := fs.Duration("ack-wait", 30*time.Second, "how long a request may go without a sign of life before it is delivered to another worker")
	maxAck := fs.Int("max-ack-pending", 1000, "requests taken and not yet acknowledged, across all workers")
	engineName := fs.String("engine", string(sandbox.EngineWazero), engineUsage)
	cache := fs.String("cache-dir", "", "keep fetched modules and compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	logFormat := fs.String("log-format", "text", "log format on stderr: text or json")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), workerHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil:
		return e.fail("worker", &usageError{err.Error()})
	case len(pos) > 0:
		return e.fail("worker", usagef("unexpected argument %q", pos[0]))
	case !nf.set():
		return e.fail("worker", usagef("--nats URL is required"))
	case *conc < 0:
		return e.fail("worker", usagef("--concurrency must be positive"))
	case *ackWait < time.Second:
		return e.fail("worker", usagef("--ack-wait must be at least 1s"))
	case *maxAck < 1:
		return e.fail("worker", usagef("--max-ack-pending must be at least 1"))
	case *logFormat != "text" && *logFormat != "json":
		return e.fail("worker", usagef("--log-format must be text or json, not %q", *logFormat))
	}
	name, err := sandbox.ParseEngineName(*engineName)
	if err != nil {
		return e.fail("worker", usagef("--engine: %v", err))
	}
	var handler slog.Handler = slog.NewTextHandler(e.stderr, nil)
	if *logFormat == "json" {
		handler = slog.NewJSONHandler(e.stderr, nil)
	}
	logger := slog.New(handler)
	c, err := nf.connect(ctx, "worker")
	if err != nil {
		return e.fail("worker", err)
	}
	defer c.Close()
	// The worker runs on the one Runtime, audited to the deployment's
	// chain; it loads the published registry into it.
	sink, err := cluster.OpenAuditSink(ctx, c, cluster.AuditOptions{})
	if err != nil {
		return e.fail("worker", err)
	}
	rt, err := openRuntime(ctx, runtimeFlags{engine: name, cacheDir: *cache}, noRegistry, wg.WithAuditSink(sink))
	if err != nil {
		_ = sink.Close()
		return e.fail("worker", err)
	}
	defer rt.Close(context.WithoutCancel(ctx))
	fetchDir := ""
	if dir := cacheDir(*cache); dir != "" {
		fetchDir = dir + "/cluster-" + c.Names.Prefix
	}
	w, err := cluster.NewWorker(ctx, c, rt, sink, cluster.WorkerOptions{
		Concurrency: *conc, AckWait: *ackWait, MaxAckPending: *maxAck, CacheDir: fetchDir, Logger: logger,
	})
	if errors.Is(err, cluster.ErrNoRegistry) {
		return e.fail("worker", usagef("%v: publish one first (wasmgate publish --nats %s --config FILE)", err, nf.o.URL))
	}
	if err != nil {
		return e.fail("worker", err)
	}
	rev := w.Revision()
	logger.Info("worker ready", "nats", c.NC.ConnectedUrl(), "prefix", c.Names.Prefix, "registry_revision", rev.KV,
		"registry_digest", rev.Digest, "audit_seq", w.Sink().Seq(), "concurrency", *conc)
	if err := w.Run(ctx); err != nil {
		return e.fail("worker", err)
	}
	logger.Info("stopped: executions under way finished")
	return exitSuccess
}

const publishHelp = `Usage: wasmgate publish --nats URL --config FILE [flags]

Uploads a registry to a NATS JetStream deployment: every module and JS tool
it names (a JS tool bundled first, a package tool from the tool store) goes
to the Object Store bucket under the BLAKE3 digest of its bytes, and the
registry, naming them by digest, becomes a new revision of the KV bucket's
"registry" key. Workers load it (verifying every digest) and reload when a
new revision is put.

Flags:
`

func (e env) publishCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("publish", e.stderr)
	var nf natsFlags
	nf.register(fs, "NATS server URL (required)")
	config := fs.String("config", "", "registry configuration (JSON) to publish (required)")
	toolsDir := fs.String("tools-dir", "", "tool store of the registry's packages (default: $WASMGATE_TOOLS_DIR, else the user cache directory)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), publishHelp)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	switch {
	case err != nil:
		return e.fail("publish", &usageError{err.Error()})
	case len(pos) > 0:
		return e.fail("publish", usagef("unexpected argument %q", pos[0]))
	case !nf.set():
		return e.fail("publish", usagef("--nats URL is required"))
	case *config == "":
		return e.fail("publish", usagef("--config FILE is required"))
	}
	c, err := nf.connect(ctx, "publish")
	if err != nil {
		return e.fail("publish", err)
	}
	defer c.Close()
	pub, err := cluster.Publish(ctx, c, *config, sourceFlags{toolsDir: *toolsDir}.store())
	if err != nil {
		return e.fail("publish", err)
	}
	printPublished(e, c, pub)
	return exitSuccess
}

func printPublished(e env, c *cluster.Conn, pub cluster.Published) {
	ids := make([]string, 0, len(pub.Executors))
	for id := range pub.Executors {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	uploaded := 0
	for _, id := range ids {
		x := pub.Executors[id]
		state := "already there"
		if x.Uploaded {
			state = "uploaded"
			uploaded++
		}
		fmt.Fprintf(e.stdout, "  %-24s %-4s %s  %8d bytes  %s\n", id, x.Kind, x.Digest, x.Size, state)
	}
	fmt.Fprintf(e.stdout, "published registry revision %d (digest %s) to %s: %s, %d uploaded\n",
		pub.Revision.KV, pub.Revision.Digest, c.Names.RegistryBucket(), count(len(ids), "executor"), uploaded)
}
