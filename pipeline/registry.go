package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Route says which executor serves an action and what the action requires of
// it.
type Route struct {
	// Executor is the id of the executor that serves the action.
	Executor string `json:"executor"`
	// Version is the range of executor versions the action accepts, e.g.
	// "^1.2.0" or ">=1.0.0 <2.0.0" or "*". Empty means the route is
	// incomplete: requests are BLOCKED with ACTION_VERSION_MISSING.
	Version string `json:"version"`
	// Capabilities, when set, is exactly what the action grants: the
	// executor must declare every one of them (else
	// EXECUTOR_CAPABILITY_MISSING) and nothing else (else
	// EXECUTOR_CAPABILITY_MISMATCH). Nil means no capability check.
	Capabilities []string `json:"capabilities,omitempty"`
	// Limits override the executor manifest's limits field by field.
	Limits sandbox.Limits `json:"limits,omitempty"`
}

// Registry maps actions to executors. Build it completely (Add*, or
// LoadRegistry) before the first Execute; afterwards it is read-only and safe
// for concurrent use. To change what a running pipeline serves, change a
// Clone and give it to a new pipeline (copy-on-write): an execution sees
// one registry from start to end.
type Registry struct {
	executors map[string]executorSlot
	actions   map[string]Route
	// kinds load the code AddSource is given that is not Wasm.
	kinds []Kind
}

type executorSlot struct {
	exec Executor
	// broken is why the executor cannot be used: it failed admission, or
	// its manifest does not match its registration.
	broken error
	// missing is set when the executor's code could not be found.
	missing error
}

// NewRegistry returns an empty registry whose AddSource loads Wasm, and the
// code of kinds (js.Kind() for JS tools and packages).
func NewRegistry(kinds ...Kind) *Registry {
	return &Registry{executors: map[string]executorSlot{}, actions: map[string]Route{}, kinds: kinds}
}

// Clone returns a registry with the same executors and routes, which can
// be changed without changing r.
func (r *Registry) Clone() *Registry {
	c := &Registry{executors: make(map[string]executorSlot, len(r.executors)), actions: make(map[string]Route, len(r.actions)), kinds: slices.Clone(r.kinds)}
	for id, s := range r.executors {
		c.executors[id] = s
	}
	for a, route := range r.actions {
		route.Capabilities = slices.Clone(route.Capabilities)
		c.actions[a] = route
	}
	return c
}

// RemoveExecutor unregisters the executor id, reporting whether it was
// registered. Routes to it stay, and block their requests with
// EXECUTOR_NOT_FOUND until another executor is registered as id.
func (r *Registry) RemoveExecutor(id string) bool {
	_, ok := r.executors[id]
	delete(r.executors, id)
	return ok
}

// RemoveAction unroutes action, reporting whether it was routed: its
// requests are ACTION_UNKNOWN until it is routed again.
func (r *Registry) RemoveAction(action string) bool {
	_, ok := r.actions[action]
	delete(r.actions, action)
	return ok
}

// AddExecutor registers e under id.
func (r *Registry) AddExecutor(id string, e Executor) error {
	return r.addSlot(id, executorSlot{exec: e})
}

func (r *Registry) addSlot(id string, s executorSlot) error {
	if _, dup := r.executors[id]; dup {
		return fmt.Errorf("executor %q is registered twice", id)
	}
	r.executors[id] = s
	return nil
}

// AddUnadmitted registers, as id, an executor whose code could not be
// admitted (err says why): the requests routed to it are BLOCKED with
// EXECUTOR_INVALID, and audited, rather than lost.
func (r *Registry) AddUnadmitted(id string, err error) error {
	return r.addSlot(id, executorSlot{broken: err})
}

// AddMissing registers, as id, an executor whose code could not be found
// (err says why): the requests routed to it are BLOCKED with
// EXECUTOR_NOT_FOUND, and audited, rather than lost.
func (r *Registry) AddMissing(id string, err error) error {
	return r.addSlot(id, executorSlot{missing: err})
}

// ExecutorIDFrom makes a valid executor id of a name (lowercase, with every
// run of other characters than [a-z0-9_] as one "_").
func ExecutorIDFrom(name string) string { return executorIDFrom(name) }

// Executor returns the usable executor registered as id.
func (r *Registry) Executor(id string) (Executor, bool) {
	s, ok := r.executors[id]
	if !ok || s.exec == nil {
		return nil, false
	}
	return s.exec, true
}

// AddAction routes action to an executor.
func (r *Registry) AddAction(action string, route Route) error {
	if err := validActionName(action); err != nil {
		return err
	}
	if _, dup := r.actions[action]; dup {
		return fmt.Errorf("action %q is registered twice", action)
	}
	r.actions[action] = route
	return nil
}

// Actions lists the registered action names, sorted.
func (r *Registry) Actions() []string {
	names := make([]string, 0, len(r.actions))
	for a := range r.actions {
		names = append(names, a)
	}
	sort.Strings(names)
	return names
}

func validActionName(a string) error {
	if a == "" || len(a) > 128 {
		return fmt.Errorf("action name %q must be 1 to 128 characters", a)
	}
	for _, c := range a {
		if c <= ' ' || c > '~' {
			return fmt.Errorf("action name %q may only hold printable ASCII without spaces", a)
		}
	}
	return nil
}

// refusal is a request blocked before execution.
type refusal struct {
	code ReasonCode
	// also are the codes that follow code (a limit's own code after
	// LIMIT_EXCEEDED).
	also []ReasonCode
	msg  string
	// exec is the executor when it is known, for the result's identity.
	exec Executor
	// executorID names the executor when it is registered but unusable.
	executorID string
	// failure refines the verdict's kind where the codes do not say it
	// (see Classify): a tool export that is missing.
	failure FailureKind
}

// codes are the refusal's reason codes, in order, for messages.
func (r *refusal) codes() string {
	out := string(r.code)
	for _, c := range r.also {
		out += " " + string(c)
	}
	return out
}

// resolve finds the executor for an action and checks the route's
// requirements, in the reason-code order of docs/DESIGN.md. It returns the
// executor's compiled schemas too: schemas that do not compile make it
// unusable (EXECUTOR_INVALID).
func (r *Registry) resolve(action string) (Executor, sandbox.Limits, *schemaSet, *refusal) {
	route, ok := r.actions[action]
	if !ok {
		return nil, sandbox.Limits{}, nil, &refusal{code: ActionUnknown, msg: fmt.Sprintf("action %q is not registered", action)}
	}
	if strings.TrimSpace(route.Version) == "" {
		return nil, sandbox.Limits{}, nil, &refusal{code: ActionVersionMissing, msg: fmt.Sprintf("action %q does not say which executor versions it accepts", action)}
	}
	want, err := parseRange(route.Version)
	if err != nil {
		return nil, sandbox.Limits{}, nil, &refusal{code: ActionVersionInvalid, msg: fmt.Sprintf("action %q: %v", action, err)}
	}
	slot, ok := r.executors[route.Executor]
	switch {
	case !ok:
		return nil, sandbox.Limits{}, nil, &refusal{code: ExecutorNotFound, msg: fmt.Sprintf("action %q routes to executor %q, which is not registered", action, route.Executor)}
	case slot.missing != nil:
		return nil, sandbox.Limits{}, nil, &refusal{code: ExecutorNotFound, executorID: route.Executor, msg: fmt.Sprintf("executor %q: %v", route.Executor, slot.missing)}
	case errors.Is(slot.broken, ErrLoadMemoryExhausted):
		// A tool that did not fit its memory_pages while loading is
		// refused as its calls would be: the limit, not the code.
		return nil, sandbox.Limits{}, nil, &refusal{code: LimitExceeded, also: []ReasonCode{MemoryExhausted}, executorID: route.Executor, msg: fmt.Sprintf("executor %q: %v", route.Executor, slot.broken)}
	case slot.broken != nil:
		ref := &refusal{code: ExecutorInvalid, executorID: route.Executor, msg: fmt.Sprintf("executor %q: %v", route.Executor, slot.broken)}
		if errors.As(slot.broken, new(toolNotFound)) {
			ref.failure = FailureNotFound
		}
		return nil, sandbox.Limits{}, nil, ref
	}
	m := slot.exec.Manifest()
	schemas := schemasOf(m)
	if schemas.err != nil {
		return nil, sandbox.Limits{}, nil, &refusal{code: ExecutorInvalid, exec: slot.exec, msg: fmt.Sprintf("%s: %v", describe(m), schemas.err)}
	}
	if m.Version == "" {
		return nil, sandbox.Limits{}, nil, &refusal{code: ExecutorVersionMissing, exec: slot.exec, msg: fmt.Sprintf("executor %q declares no version", m.ExecutorID)}
	}
	have, err := parseVersion(m.Version)
	if err != nil || !want.matches(have) {
		return nil, sandbox.Limits{}, nil, &refusal{code: ExecutorVersionIncompatible, exec: slot.exec, msg: fmt.Sprintf("action %q accepts versions %q; %s does not match", action, route.Version, describe(m))}
	}
	if route.Capabilities != nil {
		granted := make([]string, len(route.Capabilities))
		for i, c := range route.Capabilities {
			granted[i] = strings.ToUpper(c)
		}
		for _, c := range granted {
			if !m.HasCapability(c) {
				return nil, sandbox.Limits{}, nil, &refusal{code: ExecutorCapabilityMissing, exec: slot.exec, msg: fmt.Sprintf("action %q requires capability %s; %s does not declare it", action, c, describe(m))}
			}
		}
		for _, c := range m.Capabilities {
			if !slices.Contains(granted, c) {
				return nil, sandbox.Limits{}, nil, &refusal{code: ExecutorCapabilityMismatch, exec: slot.exec, msg: fmt.Sprintf("%s declares capability %s, which action %q does not grant", describe(m), c, action)}
			}
		}
	}
	limits := route.Limits.WithDefaults(m.Limits).WithDefaults(defaultLimits(slot.exec))
	return slot.exec, limits, schemas, nil
}

// defaulter is an Executor with defaults of its own for the limits its route
// and manifest leave unset: a JS tool, whose default fuel is sized for
// QuickJS rather than for compiled code.
type defaulter interface {
	DefaultLimits() sandbox.Limits
}

// defaultLimits are the limits exec runs under where its route and manifest
// set none.
func defaultLimits(exec Executor) sandbox.Limits {
	if d, ok := exec.(defaulter); ok {
		return d.DefaultLimits()
	}
	return sandbox.DefaultLimits()
}

// Problems lists, for every action, why requests to it would be blocked
// before running: a registry is loaded even when some routes are broken (each
// broken route blocks only its own requests, with its own reason code), and
// this is how a caller learns about them up front.
func (r *Registry) Problems() []string {
	var out []string
	for _, a := range r.Actions() {
		if _, _, _, ref := r.resolve(a); ref != nil {
			out = append(out, fmt.Sprintf("%s: %s (%s)", a, ref.codes(), ref.msg))
		}
	}
	return out
}

// Problem says why requests to action would be blocked before running, as
// Problems does, and "" when they would not.
func (r *Registry) Problem(action string) string {
	if _, _, _, ref := r.resolve(action); ref != nil {
		return fmt.Sprintf("%s: %s (%s)", action, ref.codes(), ref.msg)
	}
	return ""
}

// Route returns the route of action.
func (r *Registry) Route(action string) (Route, bool) {
	route, ok := r.actions[action]
	return route, ok
}

// Unusable says why the executor registered as id cannot run (its code is
// missing or was refused), and "" when it can or is not registered.
func (r *Registry) Unusable(id string) string {
	s := r.executors[id]
	switch {
	case s.missing != nil:
		return s.missing.Error()
	case s.broken != nil:
		return s.broken.Error()
	}
	return ""
}

// RegistryFile is the on-disk registry configuration.
type RegistryFile struct {
	// Executors map ids to their code; file paths are relative to the
	// configuration file.
	Executors map[string]ExecutorSource `json:"executors"`
	// Actions map action names to their routes.
	Actions map[string]Route `json:"actions"`
}

// ReadRegistryFile reads a registry configuration file as LoadRegistry does,
// without loading anything: for tools that turn its executors into bytes
// (publishing a registry). Wasm and JS paths come back absolute.
//
// # Errors
//
// The errors of the file itself that fail LoadRegistry: unreadable, not
// JSON, unknown fields, no actions, an executor naming no code or more
// than one. Code that is missing is not an error here.
func ReadRegistryFile(path string) (RegistryFile, error) {
	cfg, err := readRegistryFile(path)
	if err != nil {
		return RegistryFile{}, err
	}
	for id, src := range cfg.Executors {
		for _, p := range []*string{&src.Wasm, &src.JS} {
			if *p == "" {
				continue
			}
			if *p, err = filepath.Abs(*p); err != nil {
				return RegistryFile{}, fmt.Errorf("registry %s: executor %q: %w", path, id, err)
			}
		}
		cfg.Executors[id] = src
	}
	return cfg, nil
}

// readRegistryFile decodes and checks a registry configuration file, with
// its Wasm and JS paths joined to the file's directory.
func readRegistryFile(path string) (RegistryFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return RegistryFile{}, fmt.Errorf("registry: %w", err)
	}
	var cfg RegistryFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return RegistryFile{}, fmt.Errorf("registry %s: %w", path, err)
	}
	if len(cfg.Actions) == 0 {
		return RegistryFile{}, fmt.Errorf("registry %s: no actions", path)
	}
	dir := filepath.Dir(path)
	for _, id := range sortedKeys(cfg.Executors) {
		src := cfg.Executors[id]
		if err := src.check(); err != nil {
			return RegistryFile{}, fmt.Errorf("registry %s: executor %q %v", path, id, err)
		}
		paths := []*string{&src.Wasm, &src.JS, &src.Python}
		src.PythonPath = slices.Clone(src.PythonPath)
		for i := range src.PythonPath {
			paths = append(paths, &src.PythonPath[i])
		}
		for _, p := range paths {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(dir, *p)
			}
		}
		cfg.Executors[id] = src
	}
	return cfg, nil
}

// LoadRegistry reads a registry configuration file and loads every executor
// it names on engine: Wasm modules, and the code of kinds (js.Kind() for
// JS tools and packages). Paths are relative to the file's directory.
//
// Errors in the file itself (unreadable, not JSON, unknown fields, an
// executor without a module path) fail the load. A route or executor that is
// merely unusable (missing module, refused module, bad version range) is
// kept, and blocks its own requests with the matching reason code; see
// Problems. An executor whose kind is not in kinds fails the load
// (ErrNoKind).
func LoadRegistry(ctx context.Context, path string, engine sandbox.Engine, kinds ...Kind) (*Registry, error) {
	cfg, err := readRegistryFile(path)
	if err != nil {
		return nil, err
	}
	r := NewRegistry(kinds...)
	for _, id := range sortedKeys(cfg.Executors) {
		src := cfg.Executors[id]
		// The routes' limits reach loading: a JS tool loads in the largest
		// memory its calls will have.
		var routes []string
		for _, a := range sortedKeys(cfg.Actions) {
			if route := cfg.Actions[a]; route.Executor == id {
				src.Limits = append(src.Limits, route.Limits)
				routes = append(routes, strconv.Quote(a))
			}
		}
		switch len(routes) {
		case 0:
		case 1:
			src.RaiseMemory = fmt.Sprintf(`"memory_pages" in the "limits" of action %s in %s`, routes[0], path)
		default:
			src.RaiseMemory = fmt.Sprintf(`"memory_pages" in the "limits" of actions %s in %s`, strings.Join(routes, ", "), path)
		}
		if err := r.AddSource(ctx, engine, id, src); err != nil {
			return nil, err
		}
	}
	for _, a := range sortedKeys(cfg.Actions) {
		if err := r.AddAction(a, cfg.Actions[a]); err != nil {
			return nil, fmt.Errorf("registry %s: %w", path, err)
		}
	}
	return r, nil
}

// AddSource loads the executor src names on engine and registers it as id,
// as a registry file's executor entry is: a Wasm module without a manifest
// has no version (its requests are BLOCKED with EXECUTOR_VERSION_MISSING), a
// JS file without one is version 0.0.0; code that is missing, cannot be
// admitted, or declares another executor_id than id is registered all the
// same, and the requests routed to it are BLOCKED with EXECUTOR_NOT_FOUND or
// EXECUTOR_INVALID, or, for a JS tool that ran out of memory while loading,
// LIMIT_EXCEEDED and MEMORY_EXHAUSTED (see Problems). src.Limits are the
// limits of the routes to it, which loading a JS tool takes its memory from.
//
// # Errors
//
// When src names no code or more than one, when id is registered already,
// when the code cannot be read for another reason than its absence, and
// ErrNoKind when it is code of a kind the registry was not given
// (NewRegistry).
func (r *Registry) AddSource(ctx context.Context, engine sandbox.Engine, id string, src ExecutorSource) error {
	if err := src.check(); err != nil {
		return fmt.Errorf("executor %q %v", id, err)
	}
	if _, dup := r.executors[id]; dup {
		return fmt.Errorf("executor %q is registered twice", id)
	}
	slot, err := loadSlot(ctx, engine, id, src, r.kinds)
	if err != nil {
		return err
	}
	return r.addSlot(id, slot)
}

func loadSlot(ctx context.Context, engine sandbox.Engine, id string, src ExecutorSource, kinds []Kind) (executorSlot, error) {
	// A Wasm module without a manifest has no version: its requests are
	// blocked with EXECUTOR_VERSION_MISSING rather than guessing one
	// (`wasmgate pack` gives it one). A JS file without a sidecar manifest
	// is 0.0.0, as when it is run directly: a single file has nowhere else
	// to say a version, and 0.0.0 satisfies no range that asks for a
	// release (^1.0.0, >=0.1.0), only those that accept anything.
	fallback := sandbox.Manifest{ExecutorID: id}
	if src.JS != "" || src.Python != "" {
		fallback.Version = "0.0.0"
	}
	e, err := loadSource(ctx, engine, src, fallback, kinds)
	switch {
	case errors.Is(err, errMissingCode):
		return executorSlot{missing: err}, nil
	case errors.Is(err, sandbox.ErrNotAdmitted):
		return executorSlot{broken: err}, nil
	case err != nil:
		return executorSlot{}, fmt.Errorf("executor %q: %w", id, err)
	}
	if got := e.Manifest().ExecutorID; got != id {
		return executorSlot{broken: fmt.Errorf("%s declares executor_id %q, but is registered as %q", src.describe(), got, id)}, nil
	}
	return executorSlot{exec: e}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// LoadExecutor loads the executor src names: a Wasm module, or code of one
// of kinds (js.Kind() for JS tools and packages). Code without a manifest
// gets ManifestFromFile (a package: its package.json's).
//
// # Errors
//
// Missing code matches os.ErrNotExist (files) or jstool.ErrNotInstalled
// (packages); code that cannot be admitted matches sandbox.ErrNotAdmitted,
// and for JS tools jstool.ErrToolNotFound or jstool.ErrToolInvalid, or is a
// *jstool.BundleError. Code of a kind not in kinds matches ErrNoKind.
func LoadExecutor(ctx context.Context, engine sandbox.Engine, src ExecutorSource, kinds ...Kind) (Executor, error) {
	return loadSource(ctx, engine, src, sourceFallback(src), kinds)
}

func sourceFallback(src ExecutorSource) sandbox.Manifest {
	switch {
	case src.Wasm != "":
		return ManifestFromFile(src.Wasm, sandbox.Limits{})
	case src.Module != nil:
		return ManifestFromFile("module.wasm", sandbox.Limits{})
	case src.JS != "":
		return ManifestFromFile(src.JS, sandbox.Limits{})
	case src.Python != "":
		return ManifestFromFile(src.Python, sandbox.Limits{})
	case src.Bundle != nil && src.Manifest != nil:
		return *src.Manifest
	}
	return sandbox.Manifest{}
}

// RegistryForSource is the registry of one executor run directly (`wasmgate
// run --wasm`, `--js`, `--package`): one action, named action or, when
// empty, after the executor, routed to it with any version accepted and no
// capability check. Code without a manifest gets ManifestFromFile. limits
// override the manifest's field by field.
//
// Code that cannot be admitted (refused by admission, a tool that does not
// bundle or lacks its export) is still registered, so that running it yields
// a BLOCKED result with EXECUTOR_INVALID rather than no result.
//
// # Errors
//
// When the code does not exist (matching os.ErrNotExist for files and
// jstool.ErrNotInstalled for packages) or cannot be read, and ErrNoKind
// when it is code of a kind not in kinds (js.Kind() for JS tools and
// packages).
func RegistryForSource(ctx context.Context, engine sandbox.Engine, src ExecutorSource, action string, limits sandbox.Limits, kinds ...Kind) (*Registry, error) {
	if err := src.check(); err != nil {
		return nil, err
	}
	slot := executorSlot{}
	id := sourceFallback(src).ExecutorID
	src.Limits = []sandbox.Limits{limits}
	e, err := LoadExecutor(ctx, engine, src, kinds...)
	switch {
	case errors.Is(err, errMissingCode):
		return nil, err
	case errors.Is(err, sandbox.ErrNotAdmitted):
		slot.broken = err
		if id == "" {
			id = executorIDFrom(src.Package + "__" + src.Tool)
		}
	case err != nil:
		return nil, err
	default:
		slot.exec = e
		id = e.Manifest().ExecutorID
	}
	if action == "" {
		action = id
	}
	r := NewRegistry(kinds...)
	_ = r.addSlot(id, slot)
	if err := r.AddAction(action, Route{Executor: id, Version: "*", Limits: limits}); err != nil {
		return nil, err
	}
	return r, nil
}
