package jstool

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/confine"
	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/jshost"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Programs: a Node program (wasmgate node FILE) run once in the engine, as
// node runs it. The sandbox is a tool's (no network, file system,
// environment, child processes; timers on the virtual clock); what a program
// adds is process.stdin, the stdin read before the start, process.stdout
// and process.stderr written to the real streams as they are written,
// process.argv, and an exit status.

// NodeVersion is the Node version a program sees (process.version, without
// its "v"), and the version of the executor "node" in the audit log.
const NodeVersion = "20.0.0"

// programLimits is ProgramLimits's value, of which callers get copies.
var programLimits = sandbox.Limits{
	TimeoutMs:       30_000,
	Fuel:            30_000 * fuelPerMs,
	MemoryPages:     1024,
	MaxPayloadBytes: 10 << 20,
	MaxOutputBytes:  10 << 20,
}.WithFuelPerMs(fuelPerMs)

// ProgramLimits returns a program's limits where ProgramOptions.Limits sets
// none: fuel, time and memory bound the run, MaxPayloadBytes the stdin and
// MaxOutputBytes each of stdout and stderr.
// An unset fuel is what the timeout covers (fuelPerMs a millisecond).
// The caller gets a copy.
func ProgramLimits() sandbox.Limits { return programLimits }

// BundleProgram bundles a program and everything it requires or imports,
// node_modules included, as node runs it: the entry may have any extension
// or none (a bin, with or without a "#!" line); .ts, .mts and .cts are
// TypeScript, anything else JavaScript, CommonJS or an ES module as node 20
// tells them apart (.mjs and .cjs, the nearest package.json's "type", else
// the syntax). Each module sees its virtual path (ProgramRoot): __dirname
// and __filename, import.meta.url, dirname and filename; a CommonJS entry
// is require.main. A require() or import() of a file or package the tree
// does not have bundles, and throws node's MODULE_NOT_FOUND (rejects with
// ERR_MODULE_NOT_FOUND) when it runs. The bundle always has the Buffer
// global, since process.stdin hands out Buffers.
//
// # Errors
//
// As BundleFile, except that a missing module is an error only when a
// static import names it (node refuses such a program before it starts).
func BundleProgram(file string) (Bundle, error) {
	info, err := os.Stat(file)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", file, err)
	}
	if info.IsDir() {
		return Bundle{}, &BundleError{Entry: file, Problems: []string{filepath.Base(file) + ": is a directory, not a file"}}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", file, err)
	}
	tree, err := confine.Entry(abs)
	if err != nil {
		return Bundle{}, fmt.Errorf("cannot bundle %s: %w", file, err)
	}
	layout, err := newProgramLayout(abs, tree)
	if err != nil {
		return Bundle{}, err
	}
	b, err := layout.build(file, abs, tree, nil)
	// Imports the tree does not have fail a build (or, in a try block, are
	// left for the runtime, which a build's failure does not show), and
	// built-ins required where the bundler cannot see it are left for the
	// runtime; only a program that has some pays for more builds, which
	// resolve each of them once more, or bundle those built-ins for its
	// require, until no new one shows.
	var missing []string
	for {
		more := false
		for _, s := range missingSpecifiers(b, err) {
			if !slices.Contains(missing, s) {
				missing = append(missing, s)
				more = true
			}
		}
		if err == nil {
			for _, name := range runtimeBuiltins(b.Source) {
				if !slices.Contains(layout.builtins, name) {
					layout.builtins = append(layout.builtins, name)
					more = true
				}
			}
			slices.Sort(layout.builtins)
		}
		if !more {
			break
		}
		b, err = layout.build(file, abs, tree, missing)
	}
	if err != nil {
		// The files the build read were transformed (each module's own
		// names): the same build of the files as written places the
		// problems where the user wrote them.
		var be *BundleError
		if errors.As(err, &be) {
			plain, perr := newProgramLayout(abs, tree)
			if perr != nil {
				return Bundle{}, perr
			}
			plain.plain = true
			if _, perr := plain.build(file, abs, tree, missing); perr != nil {
				err = perr
			}
		}
		return Bundle{}, err
	}
	if b.Source, err = layout.embedFiles(b.Source); err != nil {
		return Bundle{}, &BundleError{Entry: file, Problems: []string{err.Error()}}
	}
	b.Main = layout.main()
	b.metafile = ""
	return b, nil
}

// programEntryFile names the generated module a program's bundle starts
// from (the stdin of its build).
const programEntryFile = "wasmgate-program.js"

// build bundles the program, missing naming the specifiers that may not
// resolve (see programLayout.plugin).
func (l *programLayout) build(file, abs string, tree confine.Tree, missing []string) (Bundle, error) {
	opts := bundleOptions(filepath.Dir(abs))
	opts.Metafile = true
	// A program shows its functions' and classes' names (util.inspect of an
	// instance, an error's name, fn.name), which esbuild renames when two
	// modules use one name.
	opts.KeepNames = true
	// Node evaluates every module a program imports; esbuild would drop a
	// module imported for its effects alone when its package says
	// "sideEffects": false (uuid's bin imports its CLI so), and an unused
	// call marked pure, which node makes all the same. Programs keep both.
	opts.IgnoreAnnotations = true
	opts.Plugins = append(slices.Clip(opts.Plugins), l.plugin(missing))
	// The entry sets the program up (its console, require, paths), imports
	// the program, and names Buffer, which installs the global before the
	// program's first line runs.
	opts.Stdin = &api.StdinOptions{
		Contents:   "import \"wasmgate-program:setup\";\nimport " + strconv.Quote(abs) + ";\nexport const buffer = Buffer;\n",
		ResolveDir: filepath.Dir(abs),
		Sourcefile: programEntryFile,
		Loader:     api.LoaderJS,
	}
	return build(file, opts, confinement{tree: tree, noun: "program"})
}

// ProgramOptions say how a Program runs.
type ProgramOptions struct {
	// Argv is process.argv (by Node's convention the node binary, the
	// program's path, then its arguments).
	Argv []string
	// Stdout and Stderr receive what the program writes, as it writes it
	// (nil: discarded). Each is bounded by the run's MaxOutputBytes.
	Stdout, Stderr io.Writer
	// Engine is the QuickJS engine module; nil means the embedded one.
	Engine []byte
}

// Program is a bundled program as an executor, which the pipeline runs with
// RunProgram: each Execute runs it once, in a fresh engine instance, as node
// runs a file. in.Bytes is its stdin (in.Limits.MaxPayloadBytes bounds it;
// Execute does not check) and in.Digest their digest; in.Limits' unset
// fields come from ProgramLimits(), MaxOutputBytes bounding each of stdout
// and stderr. The Outcome is Completed for exit status 0, Failed for another
// status (an uncaught exception is status 1, written to stderr as Node
// writes it), or the limit the program reached; its Output is what the
// program wrote to stdout, and its ExitCode the status it ended with, -1
// when a limit stopped it. Math.random is seeded from the digests of the
// bundle and the stdin.
type Program struct {
	engine       sandbox.Engine
	bundle       Bundle
	opts         ProgramOptions
	manifest     sandbox.Manifest
	digest       string
	sourceDigest string
}

// NewProgram makes b an executor of identity m (its id and version, and
// the limits it runs under where a request sets none, before ProgramLimits())
// that runs on engine with opts' argv, streams and engine module.
func NewProgram(engine sandbox.Engine, b Bundle, m sandbox.Manifest, opts ProgramOptions) (*Program, error) {
	if opts.Engine == nil {
		wasm, err := EngineModule()
		if err != nil {
			return nil, err
		}
		opts.Engine = wasm
	}
	return &Program{engine: engine, bundle: b, opts: opts, manifest: m,
		digest: ProgramDigest(opts.Engine, b), sourceDigest: audit.Digest(b.Source)}, nil
}

// Manifest implements the pipeline's Executor.
func (p *Program) Manifest() sandbox.Manifest { return p.manifest }

// DefaultLimits are the limits a run gets where its request and the
// manifest set none: ProgramLimits().
func (p *Program) DefaultLimits() sandbox.Limits { return ProgramLimits() }

// ModuleDigest implements the pipeline's Executor: the engine module, the
// prelude and the bundle, together.
func (p *Program) ModuleDigest() string { return p.digest }

// Execute implements the pipeline's Executor: one run of the program.
//
// # Errors
//
// An error when the engine module is refused, ctx is cancelled or the
// engine failed.
func (p *Program) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	reactor, err := p.engine.LoadReactor(ctx, p.opts.Engine, jshost.QuickJSGlue())
	if err != nil {
		return sandbox.Outcome{}, fmt.Errorf("the QuickJS engine module: %w", err)
	}
	in.Limits = in.Limits.WithDefaults(ProgramLimits())
	name := filepath.Base(p.bundle.Entry)
	if name == "" || name == "." || name == "/" {
		name = "program.js"
	}
	w := &programStreams{limit: in.Limits.MaxOutputBytes, out: p.opts.Stdout, err: p.opts.Stderr, code: -1}
	seed := audit.DigestBytes([]byte(p.sourceDigest + hex.EncodeToString(in.Digest[:])))
	ctx = jshost.WithJSHostFunctions(ctx, jshost.JSHostFunctions{
		jshost.JSProgramWrite: w.write,
		jshost.JSProgramExit:  w.exit,
	})
	drive := jshost.QuickJSProgram(jshost.JSProgram{Name: name, Source: p.bundle.Source, Argv: p.opts.Argv, Stdin: in.Bytes, Seed: seed})
	out, err := reactor.Run(ctx, nil, sandbox.Input{Digest: in.Digest, Limits: in.Limits}, sandbox.Driver(drive))
	w.mu.Lock()
	defer w.mu.Unlock()
	out.Output, out.ExitCode = w.stdout.Bytes(), w.code
	if err != nil {
		return out, err
	}
	if out.Kind != sandbox.Completed && out.Kind != sandbox.Failed {
		out.ExitCode = -1 // a limit stopped it, whatever it was about to exit with
	}
	if out.Kind == sandbox.Failed && w.code > 0 {
		out.Message = fmt.Sprintf("exit status %d", w.code)
	}
	return out, nil
}

// ProgramDigest identifies a program: the engine module, wasmgate's prelude
// and the bundled source, together.
func ProgramDigest(engine []byte, b Bundle) string {
	var d []byte
	d = append(d, "wasmgate-js-program-v1\n"...)
	d = append(d, audit.Digest(engine)...)
	d = append(d, '\n')
	d = append(d, jshost.QuickJSPreludeDigest()...)
	d = append(d, '\n')
	d = append(d, audit.Digest(b.Source)...)
	return audit.Digest(d)
}

// programStreams are the host side of a program's streams: it writes each
// chunk through as it comes, keeps stdout for its digest, bounds both
// streams, and records the exit status.
type programStreams struct {
	mu       sync.Mutex
	limit    int64
	out, err io.Writer
	stdout   bytes.Buffer
	nerr     int64
	code     int
}

// errBadWrite: the prelude's write came with arguments it never sends.
var errBadWrite = errors.New("want fd (1 or 2), kind (s or b) and data")

func (s *programStreams) write(_ context.Context, args []string) (string, error) {
	if len(args) != 3 || (args[0] != "1" && args[0] != "2") || (args[1] != "s" && args[1] != "b") {
		return "", errBadWrite
	}
	b := jshost.JSProgramBytes(args[1], args[2])
	s.mu.Lock()
	defer s.mu.Unlock()
	w, n := s.out, int64(s.stdout.Len())
	if args[0] == "2" {
		w, n = s.err, s.nerr
	}
	if n+int64(len(b)) > s.limit {
		// Unwinds the engine: the program stops here.
		panic(host.ErrOutputTooLarge)
	}
	if args[0] == "1" {
		s.stdout.Write(b)
	} else {
		s.nerr += int64(len(b))
	}
	if w != nil {
		// A stream that cannot be written to (a closed pipe) does not stop
		// the program: its bytes count as written.
		_, _ = w.Write(b)
	}
	return "", nil
}

func (s *programStreams) exit(_ context.Context, args []string) (string, error) {
	code := 1
	if len(args) == 1 {
		if n, err := strconv.Atoi(args[0]); err == nil && n >= 0 && n <= 255 {
			code = n
		}
	}
	s.mu.Lock()
	s.code = code
	s.mu.Unlock()
	// Unwinds the engine: nothing of the program runs after this.
	panic(&host.ExitError{Code: uint32(code)})
}
