package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/cluster"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

type runFlags struct {
	src                       sourceFlags
	action                    string
	input, inputFile, audit   string
	engine, cacheDir, traceID string
	limits                    sandbox.Limits
	results                   string
	auditLockWait             time.Duration
	nats                      natsFlags
	timeout                   time.Duration
}

func (e env) runCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("run", e.stderr)
	var f runFlags
	f.src.register(fs, "run")
	f.src.raiseMemory = "--memory-pages"
	fs.StringVar(&f.action, "action", "", "action name (default: the executor id with --wasm, --js, --package or --py)")
	fs.StringVar(&f.input, "input", "", "payload as JSON text")
	fs.StringVar(&f.inputFile, "input-file", "", "read the payload from this file")
	fs.StringVar(&f.audit, "audit", "", "append the audit record to this JSON Lines file")
	fs.DurationVar(&f.auditLockWait, "audit-lock-wait", audit.DefaultLockWait, auditLockWaitUsage)
	fs.StringVar(&f.engine, "engine", string(sandbox.EngineWazero), engineUsage)
	fs.StringVar(&f.cacheDir, "cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	fs.StringVar(&f.traceID, "trace-id", "", "trace id (UUID) of the request (default: random)")
	fs.StringVar(&f.results, "results", "full", resultsUsage)
	f.nats.register(fs, "send the request to the workers of this NATS JetStream deployment (with --action; instead of --wasm, --js, --package or --config)")
	fs.DurationVar(&f.timeout, "nats-timeout", time.Minute, "with --nats: how long to wait for the verdict (the request's deadline)")
	pretty := fs.Bool("pretty", false, "indent the printed result (the output is then re-indented too)")
	fs.Int64Var(&f.limits.TimeoutMs, "timeout-ms", 0, "wall-clock limit in milliseconds (default: manifest, else 1000 for a Wasm module, 250000 for a JS tool)")
	fs.Var(uint32Flag{&f.limits.MemoryPages}, "memory-pages", "memory limit in 64 KiB pages, loading a JS tool included (default: manifest, else 256 for a Wasm module, 2048 for a JS tool)")
	fs.Int64Var(&f.limits.MaxPayloadBytes, "max-payload-bytes", 0, "limit on canonical input and output bytes (default: manifest, else 65536)")
	fs.Uint64Var(&f.limits.Fuel, "fuel", 0, "instruction budget (default: manifest, else what the time limit covers: 60000000 a millisecond for a Wasm module; 80000 for a JS tool, 20 billion at its default time, a tenth of what QuickJS burns in that time on a loaded machine)")
	fs.IntVar(&f.limits.MaxDepth, "max-depth", 0, "JSON nesting limit (default: manifest, else 16)")
	fs.IntVar(&f.limits.MaxListItems, "max-list-items", 0, "longest-list limit (default: manifest, else 1000)")
	fs.Int64Var(&f.limits.MaxOutputBytes, "max-output-bytes", 0, "output size limit (default: manifest, else 65536)")
	if _, err := parseInterleaved(fs, args); err != nil {
		return e.fail("run", &usageError{err.Error()})
	}
	var err error
	if f.limits, err = zeroLimits(fs, f.limits); err != nil {
		return e.fail("run", err)
	}
	var res pipeline.ActionResult
	if f.nats.set() {
		if err := notWith(fs, "wasm", "js", "package", "py", "py-path", "py-class", "tool", "tools-dir", "config", "audit", "engine", "timeout-ms", "memory-pages",
			"max-payload-bytes", "fuel", "max-depth", "max-list-items", "max-output-bytes"); err != nil {
			return e.fail("run", err)
		}
		res, err = e.executeNATS(ctx, f)
	} else {
		res, err = e.execute(ctx, f)
	}
	if err != nil && res.Status == "" {
		return e.fail("run", err)
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	if *pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(res); err != nil {
		return e.fail("run", err)
	}
	if err != nil {
		// A verdict was reached and audited, but something outside the
		// executor failed (the engine, or a cancellation).
		return e.fail("run", err)
	}
	switch res.Status {
	case pipeline.StatusSuccess:
		return exitSuccess
	case pipeline.StatusFailed:
		return exitFailed
	}
	return exitBlocked
}

// executeNATS sends the request to a deployment's workers.
func (e env) executeNATS(ctx context.Context, f runFlags) (pipeline.ActionResult, error) {
	var none pipeline.ActionResult
	switch {
	case f.action == "":
		return none, usagef("--nats needs --action NAME")
	case f.input != "" && f.inputFile != "":
		return none, usagef("--input and --input-file are exclusive")
	case f.timeout <= 0:
		return none, usagef("--nats-timeout must be positive")
	}
	results, err := pipeline.ParseResults(f.results)
	if err != nil {
		return none, usagef("--results: %v", err)
	}
	payload, err := e.readPayload(f)
	if err != nil {
		return none, err
	}
	c, err := f.nats.connect(ctx, "run")
	if err != nil {
		return none, err
	}
	defer c.Close()
	client, err := cluster.NewClient(ctx, c, cluster.ClientOptions{Results: results})
	if errors.Is(err, cluster.ErrNoRegistry) {
		return none, usagef("%v: publish one first (wasmgate publish --nats %s --config FILE)", err, f.nats.o.URL)
	}
	if err != nil {
		return none, err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	res, err := client.Execute(ctx, pipeline.ActionRequest{Action: f.action, Payload: payload, TraceID: f.traceID})
	if errors.Is(err, pipeline.ErrInvalidRequest) {
		return none, usagef("%v", err)
	}
	return res, err
}

func (e env) execute(ctx context.Context, f runFlags) (pipeline.ActionResult, error) {
	var none pipeline.ActionResult
	if err := f.src.check(); err != nil {
		return none, err
	}
	switch {
	case f.src.config != "" && f.action == "":
		return none, usagef("--config needs --action NAME")
	case f.input != "" && f.inputFile != "":
		return none, usagef("--input and --input-file are exclusive")
	}
	if err := f.limits.Validate(); err != nil {
		return none, usagef("%v", err)
	}
	results, err := pipeline.ParseResults(f.results)
	if err != nil {
		return none, usagef("--results: %v", err)
	}
	engineName, err := sandbox.ParseEngineName(f.engine)
	if err != nil {
		return none, usagef("--engine: %v", err)
	}
	payload, err := e.readPayload(f)
	if err != nil {
		return none, err
	}

	rf := runtimeFlags{engine: engineName, cacheDir: f.cacheDir, audit: f.audit, lockWait: f.auditLockWait, results: results}
	rt, err := openRuntime(ctx, rf, func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
		return e.loadRegistry(ctx, engine, f.src, f.action, f.limits,
			func(problem string) { fmt.Fprintf(e.stderr, "wasmgate run: warning: %s\n", problem) })
	})
	if err != nil {
		return none, err
	}
	defer rt.Close(ctx)

	action := f.action
	if action == "" {
		action = rt.Actions()[0]
	}
	res, err := rt.Execute(ctx, wg.ActionRequest{Action: action, Payload: payload, TraceID: f.traceID})
	if errors.Is(err, wg.ErrInvalidRequest) {
		return none, usagef("%v", err)
	}
	return res, err
}

func (e env) readPayload(f runFlags) ([]byte, error) {
	switch {
	case f.input != "":
		return []byte(f.input), nil
	case f.inputFile != "":
		b, err := os.ReadFile(f.inputFile)
		if err != nil {
			return nil, usagef("--input-file: %v", err)
		}
		return b, nil
	}
	if f, ok := e.stdin.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil, usagef("no payload: give --input JSON, --input-file FILE, or pipe JSON on stdin")
		}
	}
	b, err := io.ReadAll(e.stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the payload from stdin: %w", err)
	}
	return b, nil
}

// uint32Flag is a flag.Value for an unsigned 32-bit count.
type uint32Flag struct{ p *uint32 }

func (u uint32Flag) String() string {
	if u.p == nil {
		return "0"
	}
	return fmt.Sprint(*u.p)
}

func (u uint32Flag) Set(s string) error {
	var v uint64
	if _, err := fmt.Sscan(s, &v); err != nil || v > 1<<32-1 || fmt.Sprint(v) != s {
		return fmt.Errorf("%q is not a page count", s)
	}
	*u.p = uint32(v)
	return nil
}

// cacheDir resolves where compiled code is kept across runs: the flag, else
// $WASMGATE_CACHE_DIR, else wasmgate/ in the user's cache directory; "off"
// (in either) disables the cache. A large guest (a Go program, the JS
// engine) compiles in seconds and loads from the cache in milliseconds.
func cacheDir(flag string) string {
	dir := flag
	if dir == "" {
		dir = os.Getenv("WASMGATE_CACHE_DIR")
	}
	if dir == "off" {
		return ""
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "wasmgate")
	}
	return dir
}

// pathsFlag is a repeatable flag of directories.
type pathsFlag []string

func (p *pathsFlag) String() string { return strings.Join(*p, ",") }

func (p *pathsFlag) Set(s string) error {
	if s == "" {
		return errors.New("want a directory")
	}
	*p = append(*p, s)
	return nil
}

// sourceFlags say where the executors of a command come from: one executor
// (--wasm, --js or --package, with --tool) or a registry file (--config).
type sourceFlags struct {
	wasm, js, pkg, tool, toolsDir, config string
	// py, pyPath and pyClass name a Python executor: its file, the
	// directories of its dependencies, its executor class.
	py, pyClass string
	pyPath      pathsFlag
	// raiseMemory is the command's flag that raises a single executor's
	// memory limit, if it has one, for the message of a JS tool that runs
	// out of memory while loading.
	raiseMemory string
}

func (f *sourceFlags) register(fs *flag.FlagSet, verb string) {
	fs.StringVar(&f.wasm, "wasm", "", "Wasm module to "+verb)
	fs.StringVar(&f.js, "js", "", "JavaScript or TypeScript tool (.js .mjs .cjs .ts .mts .cts) to "+verb)
	fs.StringVar(&f.pkg, "package", "", "npm package NAME@VERSION whose tool to "+verb+" (added to the tool store if missing; needs --tool)")
	fs.StringVar(&f.tool, "tool", "", "the tool's export, with --js or --package (default with --js: the module's execute, else its default export)")
	fs.StringVar(&f.py, "py", "", "Python executor (.py) to "+verb+": a module with execute(input), or an executor class (--py-class)")
	fs.Var(&f.pyPath, "py-path", "a directory of pure-Python dependencies (a site-packages) --py imports from, after its own directory (repeatable)")
	fs.StringVar(&f.pyClass, "py-class", "", "the executor class of --py (default: its function execute, else its one class with executor_id and execute)")
	fs.StringVar(&f.toolsDir, "tools-dir", "", "tool store for --package (default: $WASMGATE_TOOLS_DIR, else the user cache directory)")
	fs.StringVar(&f.config, "config", "", "registry configuration (JSON) mapping actions to executors")
}

// single reports whether the command runs one executor rather than a
// registry.
func (f sourceFlags) single() bool { return f.config == "" }

// check insists on exactly one source.
func (f sourceFlags) check() error {
	var set []string
	for _, s := range []struct{ name, v string }{{"--wasm", f.wasm}, {"--js", f.js}, {"--package", f.pkg}, {"--py", f.py}, {"--config", f.config}} {
		if s.v != "" {
			set = append(set, s.name)
		}
	}
	switch {
	case len(set) == 0:
		return usagef("one of --wasm FILE, --js FILE, --package NAME@VERSION, --py FILE or --config FILE is required")
	case len(set) > 1:
		return usagef("%s are exclusive", strings.Join(set, " and "))
	case f.pkg != "" && f.tool == "":
		return usagef("--package needs --tool EXPORT")
	case f.tool != "" && f.js == "" && f.pkg == "":
		return usagef("--tool applies to --js and --package only")
	case f.py == "" && (f.pyClass != "" || len(f.pyPath) > 0):
		return usagef("--py-class and --py-path apply to --py only")
	}
	return nil
}

// flagName is the flag that named the single executor.
func (f sourceFlags) flagName() string {
	switch {
	case f.wasm != "":
		return "--wasm"
	case f.js != "":
		return "--js"
	case f.py != "":
		return "--py"
	}
	return "--package"
}

func (f sourceFlags) store() jstool.Store {
	if f.toolsDir != "" {
		return jstool.Store{Dir: f.toolsDir}
	}
	return jstool.Store{Dir: jstool.DefaultStoreDir()}
}

// loadRegistry builds the registry of a command on engine, turning missing
// code or an unusable configuration into usage errors. A package not yet in
// the tool store is added first. warn, when not nil, receives the
// configuration's broken routes.
func (e env) loadRegistry(ctx context.Context, engine sandbox.Engine, f sourceFlags, action string, limits sandbox.Limits, warn func(string)) (*pipeline.Registry, error) {
	if f.single() {
		if f.pkg != "" {
			if err := e.ensureInstalled(ctx, f.store(), f.pkg); err != nil {
				return nil, err
			}
		}
		src := pipeline.ExecutorSource{Wasm: f.wasm, JS: f.js, Package: f.pkg, Tool: f.tool, ToolsDir: f.store().Dir,
			Python: f.py, PythonPath: f.pyPath, Class: f.pyClass}
		// limits are the command's flags, which loading a JS tool takes
		// its memory from as its calls do.
		src.RaiseMemory = f.raiseMemory
		reg, err := pipeline.RegistryForSource(ctx, engine, src, action, limits, executorKinds...)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, jstool.ErrNotInstalled) {
			return nil, usagef("%s: %v", f.flagName(), err)
		}
		return reg, err
	}
	reg, err := pipeline.LoadRegistry(ctx, f.config, engine, executorKinds...)
	if err != nil {
		// The configuration the user named is unusable.
		return nil, usagef("--config: %v", err)
	}
	if warn != nil {
		for _, p := range reg.Problems() {
			warn(p)
		}
	}
	return reg, nil
}

// ensureInstalled adds spec to the tool store unless it is there already.
func (e env) ensureInstalled(ctx context.Context, store jstool.Store, spec string) error {
	_, err := store.Get(spec)
	if !errors.Is(err, jstool.ErrNotInstalled) {
		if errors.Is(err, jstool.ErrInvalidSpec) {
			return usagef("--package: %v", err)
		}
		return err
	}
	fmt.Fprintf(e.stderr, "wasmgate: adding %s to the tool store %s\n", spec, store.Dir)
	_, err = store.Add(ctx, spec)
	return toolsError(err)
}

// toolsError makes a package that does not exist, a bad spec, or a
// package that does not bundle (a syntax error, an import outside its
// tree) a usage error: the user named something that cannot be added.
func toolsError(err error) error {
	var be *jstool.BundleError
	if errors.Is(err, jstool.ErrPackageNotFound) || errors.Is(err, jstool.ErrInvalidSpec) || errors.As(err, &be) {
		return usagef("%v", err)
	}
	return err
}
