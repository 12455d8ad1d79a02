package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Options say how to reach a NATS deployment. Credentials, nkeys and TLS go
// through the NATS client's own options.
type Options struct {
	// URL is one server URL or several, comma-separated.
	URL string
	// Prefix names subjects, streams and buckets (DefaultPrefix when empty).
	Prefix string
	// Creds is a user credentials file (JWT and nkey seed).
	Creds string
	// NKey is an nkey seed file.
	NKey string
	// TLSCert and TLSKey are a client certificate and its key, TLSCA the
	// CA that signs the servers' certificates. Any of them turns TLS on.
	TLSCert, TLSKey, TLSCA string
	// Name is the connection's name, as servers list it.
	Name string
}

// Conn is a connection to a deployment: the NATS connection, its
// JetStream context and the deployment's names.
type Conn struct {
	NC    *nats.Conn
	JS    jetstream.JetStream
	Names Names
}

// Connect connects to o.URL. The connection reconnects by itself for as
// long as it is open (a server of a cluster going away is not an error).
func Connect(o Options) (*Conn, error) {
	names, err := NewNames(o.Prefix)
	if err != nil {
		return nil, err
	}
	if o.URL == "" {
		return nil, errors.New("nats: no server URL")
	}
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if o.Name != "" {
		opts = append(opts, nats.Name(o.Name))
	}
	if o.Creds != "" {
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("nats nkey %s: %w", o.NKey, err)
		}
		opts = append(opts, opt)
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("nats TLS: a client certificate needs its key, and a key its certificate")
	}
	if o.TLSCert != "" {
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	nc, err := nats.Connect(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats %s: %w", o.URL, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats %s: %w", o.URL, err)
	}
	return &Conn{NC: nc, JS: js, Names: names}, nil
}

// Close drains nothing: it closes the connection.
func (c *Conn) Close() { c.NC.Close() }

// Layout is how Setup creates the streams and buckets.
type Layout struct {
	// Replicas of every stream and bucket (1 when zero; 3 for a cluster
	// that must survive a server).
	Replicas int
	// MaxQueued bounds the requests queued and not yet acknowledged
	// (DefaultMaxQueued when zero); a publish beyond it is refused, and
	// fronts answer that the service is busy.
	MaxQueued int64
	// DedupWindow is how long JetStream remembers a message id to drop a
	// repeated publish (DefaultDedupWindow when zero). Retried requests and
	// audit records are deduplicated within it; beyond it, the request
	// index (RequestsBucket) answers a request id that has a verdict with
	// that verdict, whatever its age (see Worker).
	DedupWindow time.Duration
	// Memory keeps the streams in memory rather than on disk (tests).
	Memory bool
}

// Defaults of Layout.
const (
	DefaultMaxQueued   = 100_000
	DefaultDedupWindow = 10 * time.Minute
)

// Setup creates the deployment's streams and buckets that do not exist yet,
// as l says; the ones that exist are left as they are (the first command
// to reach a deployment lays it out; change a layout with the nats CLI).
// Workers, fronts and publish all call it.
//
// Each attempt is bounded by setupAttempt: a request sent while a new
// cluster elects its meta leader may never be answered, and an attempt
// that waited on it for all of ctx would leave no time to ask again.
func (c *Conn) Setup(ctx context.Context, l Layout) error {
	return retryUnavailable(ctx, func() error {
		actx, cancel := context.WithTimeout(ctx, setupAttempt)
		defer cancel()
		return c.setup(actx, l)
	})
}

// setupAttempt bounds one attempt of Setup: creating four replicated
// streams on a loaded machine takes a few seconds at worst.
const setupAttempt = 10 * time.Second

func (c *Conn) setup(ctx context.Context, l Layout) error {
	if l.Replicas <= 0 {
		l.Replicas = 1
	}
	if l.MaxQueued <= 0 {
		l.MaxQueued = DefaultMaxQueued
	}
	if l.DedupWindow <= 0 {
		l.DedupWindow = DefaultDedupWindow
	}
	storage := jetstream.FileStorage
	if l.Memory {
		storage = jetstream.MemoryStorage
	}
	n := c.Names
	streams := []jetstream.StreamConfig{{
		Name:        n.ActionsStream(),
		Description: "wasmgate action requests, one message per request, the trace id its message id",
		Subjects:    []string{n.ActionsSubjects()},
		Retention:   jetstream.WorkQueuePolicy,
		MaxMsgs:     l.MaxQueued,
		Discard:     jetstream.DiscardNew,
		Duplicates:  l.DedupWindow,
		Storage:     storage,
		Replicas:    l.Replicas,
	}, {
		Name:        n.AuditStream(),
		Description: "wasmgate audit chain, one record per message, stream sequence = record seq",
		Subjects:    []string{n.AuditSubject()},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		Duplicates:  l.DedupWindow,
		DenyDelete:  true,
		DenyPurge:   true,
		Storage:     storage,
		Replicas:    l.Replicas,
	}}
	for _, cfg := range streams {
		if err := c.setupStream(ctx, cfg); err != nil {
			return err
		}
	}
	_, err := c.JS.ObjectStore(ctx, n.ModulesBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = c.JS.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: n.ModulesBucket(), Description: "wasmgate modules and JS tool bundles, named by BLAKE3 digest",
			Storage: storage, Replicas: l.Replicas,
		})
	}
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
		return fmt.Errorf("nats: object store %s: %w", n.ModulesBucket(), err)
	}
	_, err = c.JS.KeyValue(ctx, n.RegistryBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		_, err = c.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: n.RegistryBucket(), Description: "wasmgate registry, every published revision kept",
			History: 64, Storage: storage, Replicas: l.Replicas,
		})
	}
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("nats: key-value bucket %s: %w", n.RegistryBucket(), err)
	}
	_, err = c.JS.KeyValue(ctx, n.RequestsBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		// No TTL, no size bound: an id must name its request for ever,
		// and an entry dropped would let it run again.
		_, err = c.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: n.RequestsBucket(), Description: "wasmgate request index: each request id's claim, then its verdict's seq and the answer given",
			History: 1, Storage: storage, Replicas: l.Replicas,
		})
	}
	if err != nil && !errors.Is(err, jetstream.ErrBucketExists) && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("nats: key-value bucket %s: %w", n.RequestsBucket(), err)
	}
	return nil
}

// errCodeSubjectsOverlap is JetStream's error code for a stream whose
// subjects another stream of the account holds.
const errCodeSubjectsOverlap jetstream.ErrorCode = 10065

// setupStream creates the stream cfg names unless it exists, and refuses one
// that exists with other subjects, or another stream holding its subjects:
// either belongs to another deployment, and sharing it would mix their
// requests or chains.
func (c *Conn) setupStream(ctx context.Context, cfg jetstream.StreamConfig) error {
	st, err := c.JS.Stream(ctx, cfg.Name)
	if err == nil {
		if got := st.CachedInfo().Config.Subjects; !slices.Equal(got, cfg.Subjects) {
			return fmt.Errorf("nats: stream %s holds subjects %s where prefix %q wants %s: it is another deployment's; "+
				"choose another --nats-prefix, or remove that stream if nothing needs it", cfg.Name, strings.Join(got, ", "), c.Names.Prefix, strings.Join(cfg.Subjects, ", "))
		}
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("nats: stream %s: %w", cfg.Name, err)
	}
	_, err = c.JS.CreateStream(ctx, cfg)
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeSubjectsOverlap {
		holder, herr := c.JS.StreamNameBySubject(ctx, cfg.Subjects[0])
		switch {
		case herr != nil:
			return fmt.Errorf("nats: stream %s: its subjects %s are held by another stream: it is another deployment's; choose another --nats-prefix: %w",
				cfg.Name, strings.Join(cfg.Subjects, ", "), err)
		case holder == strings.ReplaceAll(cfg.Name, "-", "_"):
			// The name a wasmgate before this one gave it.
			return fmt.Errorf("nats: stream %s: its subjects %s are held by stream %s, the name wasmgate gave it before stream names kept '-' "+
				"(prefixes differing only in '-' and '_' shared their streams then): let this deployment's workers empty the queue, "+
				"export its chain, and remove its streams to lay it out again (see docs/CLUSTER.md, \"Tenants\"): %w",
				cfg.Name, strings.Join(cfg.Subjects, ", "), holder, err)
		}
		return fmt.Errorf("nats: stream %s: its subjects %s are held by stream %s, another deployment's: choose another --nats-prefix: %w",
			cfg.Name, strings.Join(cfg.Subjects, ", "), holder, err)
	}
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("nats: stream %s: %w", cfg.Name, err)
	}
	return nil
}
