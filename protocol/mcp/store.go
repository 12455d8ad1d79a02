package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// StoreConfig says which tool store a StoreCatalog offers and how its tools
// run.
type StoreConfig struct {
	// Store holds the npm packages (wasmgate tools add).
	Store jstool.Store
	// Runtime runs and audits the tools' calls (a *wasmgate.Runtime): a
	// tool called becomes an action of it (pipeline.ShareTool), and its
	// results mode is what a call's result carries.
	Runtime pipeline.Host
	// Limits apply where a tool's manifest sets none, to loading the tool
	// (memory_pages) as to its calls.
	Limits sandbox.Limits
	// Allow, when set, says which packages may be offered (serve's
	// --npm-allow); nil offers every package.
	Allow func(pkg string) bool
	// Logger receives the catalog's progress: a line when loading starts,
	// per package loaded, per export that is not a tool (with why), per
	// package that cannot be offered, and when every package is loaded.
	Logger *slog.Logger
}

// StoreCatalog is the catalog of a tool store: for each package (its
// highest version), every tool it exports, named ToolName(PACKAGE + "/" +
// EXPORT) ("tpmjs_hello_helloWorld" for export helloWorld of @tpmjs/hello),
// or ToolName(PACKAGE) for a package whose default export is its one tool.
// A call runs as the HTTP front runs the same tool: action PACKAGE/EXPORT
// of the Runtime.
//
// It loads in the background (Run), one export at a time, so that a server
// offering it answers at once whatever the store holds: Tools lists what
// is loaded so far, Changes says when more is, and a call to a tool not yet
// loaded loads that one tool first, out of turn (Await, LoadTool). Finding
// a package's tools means loading each of its exports in the sandbox;
// what was found is recorded beside the package's bundle (catalog.json),
// keyed by the digests of its bundle and package.json, wasmgate's build and
// Limits, so that a later start reads the record instead: an export that is
// not a tool is not tried again, and a tool is loaded only when it is
// called. A record is written as loading goes, so a start cut short resumes
// where it stopped.
//
// A tool's executor is loaded once per process and kept once a call has
// asked for it; an export loaded only to be described is not kept, so a
// store of many packages does not hold a snapshot of each in memory.
type StoreCatalog struct {
	cfg StoreConfig
	// changes signals that Tools has more to list; wake that a listing
	// found packages to load. Each holds at most one signal.
	changes, wake chan struct{}
	// loadExecutor loads one export: pipeline.LoadExecutor, but in tests,
	// which count the loads or hold them back.
	loadExecutor func(ctx context.Context, src pipeline.ExecutorSource) (pipeline.Executor, error)

	mu      sync.Mutex
	scanned bool                                  // the store has been listed once
	listed  []string                              // NAME@VERSION of the packages offered, as last listed
	pkgs    map[string]*storePackage              // by NAME@VERSION
	loaded  map[string]string                     // NAME → the NAME@VERSION last loaded in full
	execs   map[string]*flight[pipeline.Executor] // by sourceKey
}

// packageState is how far a package of the catalog has loaded.
type packageState int

const (
	packageQueued packageState = iota
	packageLoading
	packageLoaded
	// packageFailed: it cannot be offered (its exports cannot be listed,
	// or an export failed to load for a reason other than not being a
	// tool); a later start tries again.
	packageFailed
	// packageIncomplete: its directory has no bundle (not a package the
	// store added); a later listing queues it again once it has one.
	packageIncomplete
)

// storePackage is one package of the catalog: what is known of its tools.
type storePackage struct {
	name, version string
	state         packageState
	// exports are the names that may be tools (jstool.ToolExports, or the
	// record), listed once.
	exports *flight[[]string]
	// tools are the exports found to be tools, notTools those found not to
	// be, with why.
	tools    map[string]Tool
	notTools map[string]string
}

func (p *storePackage) exact() string { return p.name + "@" + p.version }

// NewStoreCatalog returns the catalog of cfg.Store. Nothing is loaded until
// Run, or a call asks for a tool.
func NewStoreCatalog(cfg StoreConfig) *StoreCatalog {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &StoreCatalog{
		cfg:     cfg,
		changes: make(chan struct{}, 1),
		wake:    make(chan struct{}, 1),
		loadExecutor: func(ctx context.Context, src pipeline.ExecutorSource) (e pipeline.Executor, err error) {
			uerr := cfg.Runtime.UseEngine(ctx, func(ctx context.Context, engine sandbox.Engine) error {
				e, err = pipeline.LoadExecutor(ctx, engine, src, js.Kind())
				return nil
			})
			return e, errors.Join(uerr, err)
		},
		pkgs:   map[string]*storePackage{},
		loaded: map[string]string{},
		execs:  map[string]*flight[pipeline.Executor]{},
	}
}

// Tools lists the tools loaded so far, in the order of their packages'
// names, then of their exports. While a package loads, its tools so far
// are listed, or, when an earlier version of it was loaded in full, that
// version's. Listing looks at the store again: a package added since is
// queued for Run.
//
// # Errors
//
// When the store's directory cannot be read.
func (c *StoreCatalog) Tools(context.Context) ([]Tool, error) {
	if err := c.scan(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var tools []Tool
	for _, key := range c.listed {
		p := c.pkgs[key]
		if p.state != packageLoaded {
			if old, ok := c.pkgs[c.loaded[p.name]]; ok && old != p {
				p = old
			}
		}
		for _, export := range slices.Sorted(maps.Keys(p.tools)) {
			tools = append(tools, p.tools[export])
		}
	}
	return tools, nil
}

// Changes receives a value when Tools has more to list than when it was
// last called, or Status has changed (a package found incomplete is no
// longer loading).
func (c *StoreCatalog) Changes() <-chan struct{} { return c.changes }

func (c *StoreCatalog) changed() {
	select {
	case c.changes <- struct{}{}:
	default:
	}
}

// scan lists the store's packages and queues the ones not seen before.
func (c *StoreCatalog) scan() error {
	latest, err := c.cfg.Store.Latest()
	if err != nil {
		return fmt.Errorf("tool store %s: %w", c.cfg.Store.Dir, err)
	}
	latest = slices.DeleteFunc(latest, func(l jstool.Listed) bool { return c.cfg.Allow != nil && !c.cfg.Allow(l.Name) })
	queued := false
	var incomplete []*storePackage
	c.mu.Lock()
	c.scanned, c.listed = true, make([]string, len(latest))
	for i, l := range latest {
		key := l.Name + "@" + l.Version
		c.listed[i] = key
		p, ok := c.pkgs[key]
		switch {
		case !ok:
			c.pkgs[key] = &storePackage{name: l.Name, version: l.Version, exports: newFlight[[]string](),
				tools: map[string]Tool{}, notTools: map[string]string{}}
			queued = true
		case p.state == packageIncomplete:
			incomplete = append(incomplete, p)
		}
	}
	c.mu.Unlock()
	for _, p := range incomplete {
		if _, err := c.cfg.Store.Load(jstool.Listed{Name: p.name, Version: p.version}); !errors.Is(err, fs.ErrNotExist) {
			c.mu.Lock()
			if p.state == packageIncomplete {
				p.state, queued = packageQueued, true
			}
			c.mu.Unlock()
		}
	}
	if queued {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// StoreStatus is how far a StoreCatalog has loaded, over the packages it
// offers (the highest version of each that Allow lets through).
type StoreStatus struct {
	// State is "loading" while a package is yet to load, else "ready".
	State          string `json:"state"`
	Packages       int    `json:"packages"`
	PackagesLoaded int    `json:"packagesLoaded"`
	// PackagesFailed could not be offered (the log says why).
	PackagesFailed int `json:"packagesFailed"`
	// Tools are the tools listed.
	Tools int `json:"tools"`
}

// Status says how far the catalog has loaded.
func (c *StoreCatalog) Status() StoreStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := StoreStatus{State: "ready", Packages: len(c.listed)}
	if !c.scanned {
		s.State = "loading"
	}
	for _, key := range c.listed {
		p := c.pkgs[key]
		switch p.state {
		case packageIncomplete:
			s.Packages--
		case packageLoaded:
			s.PackagesLoaded++
		case packageFailed:
			s.PackagesFailed++
		default:
			s.State = "loading"
		}
		s.Tools += len(p.tools)
	}
	return s
}

// Run loads the catalog, one package at a time in the order of their
// names, then waits for packages added to the store (a Tools call finds
// them), until ctx is done. Each package is read from its record when it
// has one, else loaded export by export.
func (c *StoreCatalog) Run(ctx context.Context) {
	if err := c.scan(); err != nil {
		c.cfg.Logger.Warn("mcp: listing the tool store", "error", err)
	}
	idle, announced, start := false, false, time.Now()
	for {
		p := c.next()
		if p == nil {
			if !idle {
				s := c.Status()
				c.cfg.Logger.Info("mcp: tool store loaded", "dir", c.cfg.Store.Dir, "packages", s.Packages,
					"failed", s.PackagesFailed, "tools", s.Tools, "duration", time.Since(start).Round(time.Millisecond))
				idle = true
			}
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			}
			continue
		}
		if idle || !announced {
			s := c.Status()
			c.cfg.Logger.Info("mcp: loading the tool store in the background", "dir", c.cfg.Store.Dir,
				"packages", s.Packages-s.PackagesLoaded-s.PackagesFailed)
			idle, announced, start = false, true, time.Now()
		}
		c.loadPackage(ctx, p)
		if ctx.Err() != nil {
			return
		}
	}
}

// next is the first queued package offered, now loading; nil when none is.
func (c *StoreCatalog) next() *storePackage {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range c.listed {
		if p := c.pkgs[key]; p.state == packageQueued {
			p.state = packageLoading
			return p
		}
	}
	return nil
}

// loadPackage finds p's tools: from its record, then by loading each
// export the record does not cover.
func (c *StoreCatalog) loadPackage(ctx context.Context, p *storePackage) {
	start := time.Now()
	log := c.cfg.Logger.With("package", p.exact())
	inst, err := c.cfg.Store.Load(jstool.Listed{Name: p.name, Version: p.version})
	if errors.Is(err, fs.ErrNotExist) {
		// Removed, or not a complete package: a later listing looks again.
		c.mu.Lock()
		p.state = packageIncomplete
		c.mu.Unlock()
		log.Debug("mcp: not a complete package: its directory in the tool store has no bundle", "error", err)
		// The status changed: this was maybe the last package loading.
		c.changed()
		return
	}
	if err != nil {
		c.fail(log, p, err)
		return
	}
	key := recordKey(inst, c.cfg.Limits)
	rec, err := readRecord(inst.Dir, key)
	if err != nil {
		log.Warn("mcp: the package's catalog record cannot be read; loading its exports again", "error", err)
	}
	from := "record"
	if rec != nil {
		c.apply(p, rec)
	}
	if rec == nil || !rec.Complete {
		from = "sandbox"
		if !c.loadExports(ctx, log, p, inst, key) {
			return
		}
	}
	c.mu.Lock()
	p.state = packageLoaded
	c.loaded[p.name] = p.exact()
	tools, notTools := len(p.tools), len(p.notTools)
	c.mu.Unlock()
	log.Info("mcp: package loaded", "tools", tools, "not_tools", notTools, "from", from,
		"duration", time.Since(start).Round(time.Millisecond))
	c.changed()
}

// progressEvery is how many exports a package loads between two progress
// lines in the log, and two writes of its record.
const progressEvery = 25

// loadExports loads each export of p the catalog has not described yet,
// recording what it finds; false when p cannot be offered or ctx ended.
func (c *StoreCatalog) loadExports(ctx context.Context, log *slog.Logger, p *storePackage, inst *jstool.Installed, key string) bool {
	exports, err := c.exportsOf(ctx, p, inst)
	if err != nil {
		if ctx.Err() == nil {
			c.fail(log, p, err)
		}
		return false
	}
	written := true // nothing new to record yet
	done := 0
	for _, export := range exports {
		if c.described(p, export) {
			continue
		}
		_, err := c.describe(ctx, log, p, inst, export, false)
		if ctx.Err() != nil || err != nil {
			// What was found so far is kept for the next start, which
			// resumes there.
			if !written {
				c.writeRecord(log, p, inst, key, false)
			}
			if ctx.Err() == nil {
				c.fail(log, p, err)
			}
			return false
		}
		written = false
		if done++; done%progressEvery == 0 {
			log.Info("mcp: loading the package", "exports_loaded", done, "exports", len(exports))
			c.writeRecord(log, p, inst, key, false)
			written = true
		}
	}
	c.writeRecord(log, p, inst, key, true)
	return true
}

// described reports whether export of p is known to be a tool or not.
func (c *StoreCatalog) described(p *storePackage, export string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, tool := p.tools[export]
	_, notTool := p.notTools[export]
	return tool || notTool
}

// describe loads export of p to learn whether it is a tool, and its
// manifest: ok when it is one. An export that is not a tool is no error;
// a failure that says nothing of the export (the engine, the clock, ctx)
// is, and is not recorded.
func (c *StoreCatalog) describe(ctx context.Context, log *slog.Logger, p *storePackage, inst *jstool.Installed, export string, forCall bool) (ok bool, err error) {
	e, err := c.load(ctx, c.source(p.exact(), export), forCall)
	switch {
	case err != nil && notATool(err):
		c.mu.Lock()
		p.notTools[export] = err.Error()
		c.mu.Unlock()
		// A function that is not a tool (a class), or one that does not
		// load.
		log.Info("mcp: export not offered as a tool", "export", export, "error", err)
		return false, nil
	case err != nil:
		return false, err
	}
	c.mu.Lock()
	p.tools[export] = c.tool(inst.Name, inst.Version, export, e.Manifest())
	c.mu.Unlock()
	c.changed()
	return true, nil
}

// notATool reports whether a failure to load an export says that it is
// not a tool, whenever it is loaded under the same limits: it was not
// admitted (a class, an export that throws or runs out of memory or fuel
// while it loads). Loading's clock is a backstop set well beyond what its
// fuel lasts (jstool.LoadLimits()), so fuel, not the machine's load, ends a
// load that runs away.
func notATool(err error) bool {
	return errors.Is(err, sandbox.ErrNotAdmitted) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// apply takes what rec says of p's exports.
func (c *StoreCatalog) apply(p *storePackage, rec *catalogRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range rec.Tools {
		switch {
		case t.Manifest != nil:
			p.tools[t.Export] = c.tool(p.name, p.version, t.Export, *t.Manifest)
		default:
			p.notTools[t.Export] = t.NotATool
		}
	}
	if rec.Exports != nil && p.exports.start() {
		p.exports.set(rec.Exports, nil)
	}
}

// fail marks p as a package that cannot be offered (until the next start).
func (c *StoreCatalog) fail(log *slog.Logger, p *storePackage, err error) {
	c.mu.Lock()
	p.state = packageFailed
	c.mu.Unlock()
	log.Warn("mcp: package not offered", "error", err)
	c.changed()
}

// exportsOf lists the names under which p may hold tools, once for every
// caller.
func (c *StoreCatalog) exportsOf(ctx context.Context, p *storePackage, inst *jstool.Installed) ([]string, error) {
	c.mu.Lock()
	f := p.exports
	c.mu.Unlock()
	if f.start() {
		var names []string
		err := c.cfg.Runtime.UseEngine(ctx, func(ctx context.Context, engine sandbox.Engine) (err error) {
			names, err = jstool.ToolExports(ctx, engine, inst.Bundle)
			return err
		})
		if err != nil && ctx.Err() != nil {
			// Stopped, not failed: the callers waiting are told, and the
			// next one lists them again.
			c.mu.Lock()
			p.exports = newFlight[[]string]()
			c.mu.Unlock()
		}
		f.set(names, err)
	}
	return f.wait(ctx)
}

// tool is the Tool of export of package name@version, whose executor has
// manifest m.
func (c *StoreCatalog) tool(name, version, export string, m sandbox.Manifest) Tool {
	action := name + "/" + export
	if len(action) > 128 {
		action = action[:128]
	}
	return Tool{Name: storeToolName(name, export), Action: action, Manifest: m,
		Runner: &storeRunner{c: c, exact: name + "@" + version, export: export, action: action, id: m.ExecutorID}}
}

// storeToolName is the MCP name of export of package pkg.
func storeToolName(pkg, export string) string {
	if export == "default" {
		return ToolName(pkg) // a package that is one tool
	}
	return ToolName(pkg + "/" + export)
}

// Await loads the tool named name out of turn when it belongs to a package
// not loaded yet, ahead of the rest of the catalog: it lists that
// package's exports if they are not known, and loads the one export that
// has this name. It reports whether Tools now lists name's tool. A name no
// package of the store can give returns false at once.
func (c *StoreCatalog) Await(ctx context.Context, name string) bool {
	if err := c.scan(); err != nil {
		return false
	}
	c.mu.Lock()
	var candidates []*storePackage
	for _, key := range c.listed {
		p := c.pkgs[key]
		if p.hasTool(name) {
			c.mu.Unlock()
			return true
		}
		prefix := ToolName(p.name)
		if p.state != packageLoaded && p.state != packageFailed && (name == prefix || strings.HasPrefix(name, prefix+"_")) {
			candidates = append(candidates, p)
		}
	}
	c.mu.Unlock()
	for _, p := range candidates {
		log := c.cfg.Logger.With("package", p.exact())
		inst, err := c.cfg.Store.Load(jstool.Listed{Name: p.name, Version: p.version})
		if err != nil {
			continue
		}
		exports, err := c.exportsOf(ctx, p, inst)
		if err != nil {
			continue
		}
		for _, export := range exports {
			if storeToolName(p.name, export) != name {
				continue
			}
			if c.described(p, export) {
				c.mu.Lock()
				_, ok := p.tools[export]
				c.mu.Unlock()
				return ok
			}
			log.Info("mcp: loading a tool out of turn for a call", "export", export)
			ok, err := c.describe(ctx, log, p, inst, export, true)
			if err != nil {
				log.Warn("mcp: a tool called before it was listed did not load", "export", export, "error", err)
			}
			return ok
		}
	}
	return false
}

// hasTool reports whether p has a tool named name. c.mu is held.
func (p *storePackage) hasTool(name string) bool {
	for _, t := range p.tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// LoadTool loads the tool src names (a package of the tool store) for a
// call, or returns it loaded: once per process for every source that loads
// alike, whichever front asks first, and shared with the catalog's
// loading, so that a call waits for at most that one tool. Loading is not
// cancelled when ctx is (another caller may be waiting for the same
// tool); the wait is.
//
// # Errors
//
// pipeline.LoadExecutor's: an export that is not a tool matches
// sandbox.ErrNotAdmitted.
func (c *StoreCatalog) LoadTool(ctx context.Context, src pipeline.ExecutorSource) (pipeline.Executor, error) {
	return c.load(ctx, src, true)
}

// source is the source of export of the package exact, as the catalog
// loads it: Limits are the defaults of its calls, and of its loading.
func (c *StoreCatalog) source(exact, export string) pipeline.ExecutorSource {
	return pipeline.ExecutorSource{Package: exact, Tool: export, ToolsDir: c.cfg.Store.Dir, Defaults: c.cfg.Limits}
}

// sourceKey names what loading src derives from: two sources under one
// key load the same executor.
func sourceKey(src pipeline.ExecutorSource) string {
	b, _ := json.Marshal(struct {
		Package, Tool, ToolsDir, RaiseMemory string
		Limits                               []sandbox.Limits
		Defaults                             sandbox.Limits
	}{src.Package, src.Tool, src.ToolsDir, src.RaiseMemory, src.Limits, src.Defaults})
	return string(b)
}

// load loads src once for every concurrent caller, each waiting until ctx
// is done. forCall keeps the executor for the calls to come; an export
// loaded only to be described is dropped once loaded. A failure that may
// pass another time is never kept.
func (c *StoreCatalog) load(ctx context.Context, src pipeline.ExecutorSource, forCall bool) (pipeline.Executor, error) {
	key := sourceKey(src)
	c.mu.Lock()
	f, ok := c.execs[key]
	if !ok {
		f = newFlight[pipeline.Executor]()
		c.execs[key] = f
	}
	if forCall {
		f.keep = true
	}
	mine := f.start()
	c.mu.Unlock()
	if mine {
		// Whoever started the load, others may come to wait for it: the
		// first one leaving must not fail them. The catalog stops between
		// exports instead.
		e, err := c.loadExecutor(context.WithoutCancel(ctx), src)
		c.mu.Lock()
		if !f.keep || (err != nil && !notATool(err)) {
			delete(c.execs, key)
		}
		c.mu.Unlock()
		f.set(e, err)
	}
	return f.wait(ctx)
}

// storeRunner runs one tool of the catalog, loading its executor on the
// first call.
type storeRunner struct {
	c                         *StoreCatalog
	exact, export, action, id string

	mu     sync.Mutex
	loaded bool
	// own is the registry the tool runs on when it is not an action of the
	// Runtime (nil when it is): an export that is not a tool, or a name
	// another tool holds.
	own *pipeline.Registry
}

func (r *storeRunner) Actions() []string { return []string{r.action} }

func (r *storeRunner) Execute(ctx context.Context, req pipeline.ActionRequest) (pipeline.ActionResult, error) {
	own, err := r.load(ctx)
	if err != nil {
		return pipeline.ActionResult{}, err
	}
	if own != nil {
		return r.c.cfg.Runtime.ExecuteOn(ctx, req, own)
	}
	return r.c.cfg.Runtime.Execute(ctx, req)
}

// load makes the tool an action of the Runtime once its executor has
// loaded. A tool listed from a record that no longer loads is still a
// call: refused on a registry of its own, BLOCKED EXECUTOR_INVALID, and
// audited.
func (r *storeRunner) load(ctx context.Context) (*pipeline.Registry, error) {
	r.mu.Lock()
	loaded, own := r.loaded, r.own
	r.mu.Unlock()
	if loaded {
		return own, nil
	}
	e, err := r.c.LoadTool(ctx, r.c.source(r.exact, r.export))
	route := pipeline.Route{Executor: r.id, Version: "*", Limits: r.c.cfg.Limits}
	switch {
	case err != nil && notATool(err):
		own = pipeline.NewRegistry()
		if err := own.AddUnadmitted(r.id, err); err != nil {
			return nil, err
		}
		if err := own.AddAction(r.action, route); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		m := e.Manifest()
		route.Executor, route.Limits = m.ExecutorID, m.Limits.WithDefaults(r.c.cfg.Limits)
		if own, err = pipeline.ShareTool(ctx, r.c.cfg.Runtime, r.action, route, e); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.loaded {
		r.loaded, r.own = true, own
	}
	return r.own, nil
}

// flight is a value made once for every caller that waits for it.
type flight[T any] struct {
	mu      sync.Mutex
	started bool
	done    chan struct{}
	val     T
	err     error
	// keep: a call wants the value kept (StoreCatalog.load).
	keep bool
	// waiting counts the callers waiting (what a test waits for).
	waiting int
}

func newFlight[T any]() *flight[T] { return &flight[T]{done: make(chan struct{})} }

// start reports whether the caller is the one to make the value.
func (f *flight[T]) start() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started {
		return false
	}
	f.started = true
	return true
}

// set gives the value to every caller waiting, and to those to come; once.
func (f *flight[T]) set(v T, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.done:
		return
	default:
	}
	f.started, f.val, f.err = true, v, err
	close(f.done)
}

// value is the value once it is made.
func (f *flight[T]) value() (T, error) {
	select {
	case <-f.done:
		return f.val, f.err
	default:
		var zero T
		return zero, nil
	}
}

func (f *flight[T]) wait(ctx context.Context) (T, error) {
	f.mu.Lock()
	f.waiting++
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.waiting--
		f.mu.Unlock()
	}()
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
