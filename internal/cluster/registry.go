package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/py"
)

// RegistryFormat names the format of the registry document Publish puts in
// RegistryBucket. A document of another format is refused rather than
// guessed at.
const RegistryFormat = "wasmgate.registry/1"

// ErrNoRegistry is matched by the error of reading a registry that was never
// published (or whose key or bucket is gone).
var ErrNoRegistry = errors.New("cluster: no registry is published")

// Revision identifies one published registry document.
type Revision struct {
	// KV is the document's revision in RegistryBucket. Every Publish
	// makes a new one, even of an unchanged registry.
	KV uint64
	// Digest is the BLAKE3 digest of the document's bytes (canonical JSON):
	// equal digests are equal registries.
	Digest string
}

// Published is what Publish did.
type Published struct {
	// Revision is the registry document it put.
	Revision Revision
	// Executors are the published executors by id.
	Executors map[string]PublishedExecutor
}

// PublishedExecutor is one executor's artifact as Publish stored it.
type PublishedExecutor struct {
	// Kind is "wasm" (the module's bytes), "js" (a JS tool artifact: its
	// bundled source, export and manifest as canonical JSON) or "python" (a
	// Python executor's tree, entry, class and sidecar manifest as
	// canonical JSON).
	Kind string
	// Digest is the BLAKE3 digest of the artifact, and its object's name
	// in ModulesBucket.
	Digest string
	// Size is the artifact's length in bytes.
	Size int
	// Uploaded says the artifact was put in ModulesBucket by this Publish;
	// false means an object with its name and content was there already.
	Uploaded bool
}

// Artifact kinds, as the registry document names them.
const (
	kindWasm   = "wasm"
	kindJS     = "js"
	kindPython = "python"
)

// registryDoc is the published registry document.
type registryDoc struct {
	Format    string                 `json:"format"`
	Executors map[string]artifactRef `json:"executors"`
	Actions   map[string]routeDoc    `json:"actions"`
}

// artifactRef names an executor's artifact: exactly one of the fields, a
// digest.
type artifactRef struct {
	Wasm   string `json:"wasm,omitempty"`
	JS     string `json:"js,omitempty"`
	Python string `json:"python,omitempty"`
}

func (a artifactRef) kindDigest() (kind, digest string, err error) {
	var kinds []string
	for _, k := range []struct{ kind, digest string }{{kindWasm, a.Wasm}, {kindJS, a.JS}, {kindPython, a.Python}} {
		if k.digest != "" {
			kind, digest = k.kind, k.digest
			kinds = append(kinds, fmt.Sprintf("%q", k.kind))
		}
	}
	switch len(kinds) {
	case 0:
		return "", "", errors.New(`names no artifact: want "wasm", "js" or "python"`)
	case 1:
		return kind, digest, nil
	}
	return "", "", fmt.Errorf("names %s: want one", strings.Join(kinds, " and "))
}

// routeDoc is a pipeline.Route as the document keeps it: capabilities
// given as [] (grant nothing) stay apart from capabilities left out (no
// check), which Route's omitempty would merge.
type routeDoc struct {
	Executor     string          `json:"executor"`
	Version      string          `json:"version"`
	Capabilities *[]string       `json:"capabilities,omitempty"`
	Limits       *sandbox.Limits `json:"limits,omitempty"`
}

func routeDocOf(r pipeline.Route) (routeDoc, error) {
	d := routeDoc{Executor: r.Executor, Version: r.Version}
	if r.Capabilities != nil {
		caps := r.Capabilities
		d.Capabilities = &caps
	}
	raw, err := json.Marshal(r.Limits)
	if err != nil {
		return routeDoc{}, err
	}
	if string(raw) != "{}" {
		l := r.Limits
		d.Limits = &l
	}
	return d, nil
}

func (d routeDoc) route() pipeline.Route {
	r := pipeline.Route{Executor: d.Executor, Version: d.Version}
	if d.Capabilities != nil {
		r.Capabilities = *d.Capabilities
	}
	if d.Limits != nil {
		r.Limits = *d.Limits
	}
	return r
}

// jsArtifact is a JS tool as published: everything jstool.Load needs but the
// engine module.
type jsArtifact struct {
	// Entry names what was bundled, for messages: the file relative to the
	// registry configuration, or the package's name@version.
	Entry string `json:"entry"`
	// Export selects the tool among the bundle's exports.
	Export   string           `json:"export"`
	Manifest sandbox.Manifest `json:"manifest"`
	// Source is the bundled ES module.
	Source string `json:"source"`
}

// Publish publishes the registry of the configuration file configPath (the
// format of pipeline.LoadRegistry) to c's deployment: every executor
// becomes one artifact, put in ModulesBucket under its BLAKE3 digest unless
// it is there already, and then the registry document naming them by
// digest is put in RegistryBucket under RegistryKey. A Wasm executor's
// artifact is its module's bytes; a JS tool's (a file, or a package in
// store) is canonical JSON holding its bundled source, export and manifest,
// so that workers need neither the file nor npm. c.Setup must have been
// called.
//
// # Errors
//
// The configuration file's own errors (pipeline.ReadRegistryFile); an
// executor whose code is missing, does not bundle or has an invalid
// manifest, named in the error (nothing is put then: a registry with a
// broken executor helps nobody); and NATS errors. Artifacts are put
// before the document, so a failed Publish leaves the published registry
// as it was.
//
// # Notes
//
// The module is not admitted on an engine here: a worker that refuses it
// blocks its requests with EXECUTOR_INVALID, as LoadRegistry would.
// Objects are never deleted, since older revisions name them.
func Publish(ctx context.Context, c *Conn, configPath string, store jstool.Store) (out Published, err error) {
	err = retryUnavailable(ctx, func() error {
		out, err = publish(ctx, c, configPath, store)
		return err
	})
	return out, err
}

func publish(ctx context.Context, c *Conn, configPath string, store jstool.Store) (Published, error) {
	cfg, err := pipeline.ReadRegistryFile(configPath)
	if err != nil {
		return Published{}, fmt.Errorf("publish: %w", err)
	}
	configDir, err := filepath.Abs(filepath.Dir(configPath))
	if err != nil {
		return Published{}, fmt.Errorf("publish %s: %w", configPath, err)
	}
	type artifact struct {
		kind  string
		bytes []byte
	}
	artifacts := map[string]artifact{}
	for _, id := range registryKeys(cfg.Executors) {
		src := cfg.Executors[id]
		if src.Package != "" && src.ToolsDir == "" {
			src.ToolsDir = store.Dir
		}
		kind, b, err := artifactOf(src, id, configDir)
		if err != nil {
			return Published{}, fmt.Errorf("publish %s: executor %q: %w", configPath, id, err)
		}
		artifacts[id] = artifact{kind, b}
	}

	obs, err := c.JS.ObjectStore(ctx, c.Names.ModulesBucket())
	if err != nil {
		return Published{}, fmt.Errorf("publish: object store %s: %w", c.Names.ModulesBucket(), err)
	}
	kv, err := c.JS.KeyValue(ctx, c.Names.RegistryBucket())
	if err != nil {
		return Published{}, fmt.Errorf("publish: key-value bucket %s: %w", c.Names.RegistryBucket(), err)
	}
	out := Published{Executors: map[string]PublishedExecutor{}}
	doc := registryDoc{Format: RegistryFormat, Executors: map[string]artifactRef{}, Actions: map[string]routeDoc{}}
	for _, id := range registryKeys(artifacts) {
		a := artifacts[id]
		digest := audit.Digest(a.bytes)
		uploaded, err := putObject(ctx, obs, digest, a.bytes)
		if err != nil {
			return Published{}, fmt.Errorf("publish: executor %q: object %s in %s: %w", id, digest, c.Names.ModulesBucket(), err)
		}
		out.Executors[id] = PublishedExecutor{Kind: a.kind, Digest: digest, Size: len(a.bytes), Uploaded: uploaded}
		switch a.kind {
		case kindWasm:
			doc.Executors[id] = artifactRef{Wasm: digest}
		case kindPython:
			doc.Executors[id] = artifactRef{Python: digest}
		default:
			doc.Executors[id] = artifactRef{JS: digest}
		}
	}
	for name, r := range cfg.Actions {
		if doc.Actions[name], err = routeDocOf(r); err != nil {
			return Published{}, fmt.Errorf("publish %s: action %q: %w", configPath, name, err)
		}
	}
	raw, err := canonicalArtifact(doc)
	if err != nil {
		return Published{}, fmt.Errorf("publish %s: registry document: %w", configPath, err)
	}
	rev, err := kv.Put(ctx, RegistryKey, raw)
	if err != nil {
		return Published{}, fmt.Errorf("publish: key %s of %s: %w", RegistryKey, c.Names.RegistryBucket(), err)
	}
	out.Revision = Revision{KV: rev, Digest: audit.Digest(raw)}
	return out, nil
}

// artifactOf turns an executor of a registry file into the bytes Publish
// stores.
func artifactOf(src pipeline.ExecutorSource, id, configDir string) (kind string, b []byte, err error) {
	if src.Wasm != "" {
		b, err := os.ReadFile(src.Wasm)
		if err != nil {
			return "", nil, fmt.Errorf("module: %w", err)
		}
		return kindWasm, b, nil
	}
	if src.Python != "" {
		b, err := pythonArtifactOf(src)
		if err != nil {
			return "", nil, err
		}
		return kindPython, b, nil
	}
	// The executor id alone is the manifest of a tool that carries none,
	// as in pipeline.LoadRegistry.
	bundle, man, err := js.Resolve(src, sandbox.Manifest{ExecutorID: id})
	if err != nil {
		return "", nil, err
	}
	if !utf8.Valid(bundle.Source) {
		return "", nil, fmt.Errorf("the bundle of %s is not valid UTF-8", bundle.Entry)
	}
	entry := bundle.Entry
	if src.JS != "" {
		// Where the publisher keeps the file is nobody else's business.
		if rel, err := filepath.Rel(configDir, src.JS); err == nil {
			entry = filepath.ToSlash(rel)
		} else {
			entry = filepath.Base(src.JS)
		}
	}
	b, err = canonicalArtifact(jsArtifact{Entry: entry, Export: src.Tool, Manifest: man, Source: string(bundle.Source)})
	if err != nil {
		return "", nil, fmt.Errorf("the artifact of %s: %w", bundle.Entry, err)
	}
	return kindJS, b, nil
}

func canonicalArtifact(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	c, err := audit.Canonicalize(raw)
	if err != nil {
		// A limit beyond 2^53 (fuel) has no canonical form (RFC 8785
		// numbers are doubles); encoding/json is deterministic for these
		// structs and maps (keys sorted), so the bytes still name one
		// document.
		return raw, nil
	}
	return c.Bytes, nil
}

// putObject puts b under name unless an object of that name holds the same
// bytes already (by the SHA-256 digest the object store keeps, so nothing
// is downloaded); an object of that name with other bytes (tampered with)
// is replaced.
func putObject(ctx context.Context, obs jetstream.ObjectStore, name string, b []byte) (uploaded bool, err error) {
	info, err := obs.GetInfo(ctx, name)
	switch {
	case err == nil:
		h := sha256.New()
		h.Write(b)
		if info.Size == uint64(len(b)) && info.Digest == jetstream.GetObjectDigestValue(h) {
			return false, nil
		}
	case !errors.Is(err, jetstream.ErrObjectNotFound):
		return false, err
	}
	if _, err := obs.PutBytes(ctx, name, b); err != nil {
		return false, err
	}
	return true, nil
}

// latestRegistry reads and decodes the latest registry document.
func latestRegistry(ctx context.Context, c *Conn) (registryDoc, Revision, error) {
	bucket := c.Names.RegistryBucket()
	kv, err := c.JS.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return registryDoc{}, Revision{}, fmt.Errorf("%w: key-value bucket %s does not exist", ErrNoRegistry, bucket)
	}
	if err != nil {
		return registryDoc{}, Revision{}, fmt.Errorf("registry: key-value bucket %s: %w", bucket, err)
	}
	e, err := kv.Get(ctx, RegistryKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return registryDoc{}, Revision{}, fmt.Errorf("%w: no key %s in %s", ErrNoRegistry, RegistryKey, bucket)
	}
	if err != nil {
		return registryDoc{}, Revision{}, fmt.Errorf("registry: key %s of %s: %w", RegistryKey, bucket, err)
	}
	rev := Revision{KV: e.Revision(), Digest: audit.Digest(e.Value())}
	var doc registryDoc
	dec := json.NewDecoder(bytes.NewReader(e.Value()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return registryDoc{}, rev, fmt.Errorf("registry revision %d in %s: %w", rev.KV, bucket, err)
	}
	if doc.Format != RegistryFormat {
		return registryDoc{}, rev, fmt.Errorf("registry revision %d in %s: format %q, want %q", rev.KV, bucket, doc.Format, RegistryFormat)
	}
	return doc, rev, nil
}

// LoadPublished loads the latest published registry on engine, as
// pipeline.LoadRegistry loads a configuration file: every executor is
// registered (a usable one, or one whose requests are BLOCKED), then every
// action.
//
// Each artifact is fetched by digest, from cacheDir/objects/DIGEST when
// that file is there and still has that digest, else from ModulesBucket,
// and then written there (atomically, by renaming a complete file);
// cacheDir "" keeps no cache. The BLAKE3 digest of the bytes is checked
// wherever they come from: an artifact that does not match is never run,
// and its executor's requests are BLOCKED with EXECUTOR_INVALID, the
// message naming the digests. An artifact missing from the bucket makes
// its executor's requests BLOCKED with EXECUTOR_NOT_FOUND.
//
// # Errors
//
// ErrNoRegistry when no registry was published; a document that is not
// of RegistryFormat; NATS errors other than a missing object; a cache
// that cannot be written.
func LoadPublished(ctx context.Context, c *Conn, engine sandbox.Engine, cacheDir string) (reg *pipeline.Registry, rev Revision, err error) {
	err = retryUnavailable(ctx, func() error {
		reg, rev, err = loadPublished(ctx, c, engine, cacheDir)
		return err
	})
	return reg, rev, err
}

func loadPublished(ctx context.Context, c *Conn, engine sandbox.Engine, cacheDir string) (*pipeline.Registry, Revision, error) {
	doc, rev, err := latestRegistry(ctx, c)
	if err != nil {
		return nil, Revision{}, err
	}
	obs, err := c.JS.ObjectStore(ctx, c.Names.ModulesBucket())
	if err != nil {
		return nil, Revision{}, fmt.Errorf("registry revision %d: object store %s: %w", rev.KV, c.Names.ModulesBucket(), err)
	}
	f := artifactFetcher{obs: obs, bucket: c.Names.ModulesBucket(), cacheDir: cacheDir}
	r := pipeline.NewRegistry(js.Kind(), py.Kind())
	for _, id := range registryKeys(doc.Executors) {
		kind, digest, err := doc.Executors[id].kindDigest()
		if err != nil {
			return nil, Revision{}, fmt.Errorf("registry revision %d: executor %q %w", rev.KV, id, err)
		}
		b, err := f.fetch(ctx, digest)
		var refusal artifactRefused
		switch {
		case errors.Is(err, jetstream.ErrObjectNotFound):
			err = r.AddMissing(id, err)
		case errors.As(err, &refusal):
			err = r.AddUnadmitted(id, err)
		case err != nil:
			return nil, Revision{}, fmt.Errorf("registry revision %d: executor %q: %w", rev.KV, id, err)
		default:
			var src pipeline.ExecutorSource
			var done func()
			if src, done, err = sourceOf(kind, digest, b); err != nil {
				err = r.AddUnadmitted(id, err)
			} else {
				err = r.AddSource(ctx, engine, id, src)
				done()
			}
		}
		if err != nil {
			return nil, Revision{}, fmt.Errorf("registry revision %d: %w", rev.KV, err)
		}
	}
	for _, name := range registryKeys(doc.Actions) {
		if err := r.AddAction(name, doc.Actions[name].route()); err != nil {
			return nil, Revision{}, fmt.Errorf("registry revision %d: %w", rev.KV, err)
		}
	}
	return r, rev, nil
}

// sourceOf is the executor source of a verified artifact, and what to call
// once it is loaded (a Python tree is laid out in a directory of its own
// for the load, and removed after).
func sourceOf(kind, digest string, b []byte) (pipeline.ExecutorSource, func(), error) {
	switch kind {
	case kindWasm:
		return pipeline.ExecutorSource{Module: b}, func() {}, nil
	case kindPython:
		return pythonSourceOf(digest, b)
	}
	var a jsArtifact
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return pipeline.ExecutorSource{}, nil, fmt.Errorf("JS tool artifact %s: %w", digest, err)
	}
	if err := a.Manifest.Limits.Validate(); err != nil {
		return pipeline.ExecutorSource{}, nil, fmt.Errorf("JS tool artifact %s: manifest: %w", digest, err)
	}
	return pipeline.ExecutorSource{
		Bundle:   &pipeline.Bundle{Source: []byte(a.Source), Entry: a.Entry},
		Manifest: &a.Manifest,
		Tool:     a.Export,
	}, func() {}, nil
}

// artifactRefused is an artifact that must not be run: its bytes do not
// have the digest it is named by, or the name is no digest.
type artifactRefused struct{ msg string }

func (e artifactRefused) Error() string { return e.msg }

// artifactFetcher fetches artifacts by digest.
type artifactFetcher struct {
	obs      jetstream.ObjectStore
	bucket   string
	cacheDir string
}

func (f artifactFetcher) fetch(ctx context.Context, digest string) ([]byte, error) {
	if !isArtifactDigest(digest) {
		// Never a file name either: it could walk out of the cache.
		return nil, artifactRefused{fmt.Sprintf("artifact name %q is not a BLAKE3 digest", digest)}
	}
	var path string
	if f.cacheDir != "" {
		path = filepath.Join(f.cacheDir, "objects", digest)
		if b, err := os.ReadFile(path); err == nil {
			if audit.Digest(b) == digest {
				return b, nil
			}
			// Corrupted: fetched again below, and replaced.
			_ = os.Remove(path)
		}
	}
	b, err := f.obs.GetBytes(ctx, digest)
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		return nil, artifactRefused{fmt.Sprintf("object %s in %s is corrupt (its chunks do not match the object store's own SHA-256): digest mismatch, refused", digest, f.bucket)}
	}
	if err != nil {
		return nil, fmt.Errorf("object %s in %s: %w", digest, f.bucket, err)
	}
	if got := audit.Digest(b); got != digest {
		return nil, artifactRefused{fmt.Sprintf("object %s in %s has BLAKE3 digest %s: digest mismatch, refused", digest, f.bucket, got)}
	}
	if path != "" {
		if err := writeCacheFile(path, b); err != nil {
			return nil, fmt.Errorf("artifact cache: %w", err)
		}
	}
	return b, nil
}

// writeCacheFile writes b to path by renaming a complete file into place,
// so that a reader never sees part of it.
func writeCacheFile(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func isArtifactDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// PublishedActions returns the sorted action names of the latest published
// registry, for fronts that dispatch requests without loading executors.
//
// # Errors
//
// As LoadPublished's, for the document.
func PublishedActions(ctx context.Context, c *Conn) (actions []string, rev Revision, err error) {
	err = retryUnavailable(ctx, func() error {
		actions, rev, err = publishedActions(ctx, c)
		return err
	})
	return actions, rev, err
}

func publishedActions(ctx context.Context, c *Conn) ([]string, Revision, error) {
	doc, rev, err := latestRegistry(ctx, c)
	if err != nil {
		return nil, Revision{}, err
	}
	return registryKeys(doc.Actions), rev, nil
}

// WatchRegistry calls fn with the latest published revision when the watch
// starts (if there is one), then with every revision published after it, in
// order, until ctx ends; then it returns nil. A worker compares the
// revision with the one it loaded and reloads when it differs: delivering
// the latest first leaves no gap between a load and the watch. Deleting the
// registry key is not a revision (fn is not called). fn runs on
// WatchRegistry's goroutine; a slow fn delays the next call, never skips it.
//
// # Errors
//
// When the watch cannot start (the bucket does not exist: c.Setup was not
// called), or the server ends it.
func WatchRegistry(ctx context.Context, c *Conn, fn func(Revision)) error {
	bucket := c.Names.RegistryBucket()
	kv, err := c.JS.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("watch registry: key-value bucket %s: %w", bucket, err)
	}
	w, err := kv.Watch(ctx, RegistryKey)
	if err != nil {
		return fmt.Errorf("watch registry: key %s of %s: %w", RegistryKey, bucket, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			switch {
			case !ok && ctx.Err() != nil:
				return nil
			case !ok:
				return fmt.Errorf("watch registry: the watch of %s ended", bucket)
			case e == nil || e.Operation() != jetstream.KeyValuePut:
				// nil marks the end of the initial value.
				continue
			}
			fn(Revision{KV: e.Revision(), Digest: audit.Digest(e.Value())})
		}
	}
}

func registryKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
