package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/toolscript"
	"github.com/wasmgate/wasmgate/internal/tscheck"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

const typesUsage = `Usage: wasmgate types [--config FILE] [--mcp-servers FILE [--mcp-allow SERVER.TOOL ...]] [--out DIR]

Writes TypeScript declarations for the toolscripts of a registry into DIR
(default: the current directory):

  toolscript.d.ts     the module "toolscript": every registered action a typed
                      function, tools.NAMESPACE.name(params): Promise<result>,
                      from its executor's input and output JSON Schemas
                      (unknown where none is declared), its description as
                      its doc comment
  wasmgate-env.d.ts   what the script engine gives beyond the ES2023 library
                      (a console; no DOM, no Node I/O)
  tsconfig.json       the options 'wasmgate script' checks with (strict,
                      ES2023), so that an editor autocompletes and checks the
                      scripts in DIR the same way

With --mcp-servers, the tools of those MCP servers are declared too (as
'wasmgate script --mcp-servers' offers them): tools.SERVER.camelTool, typed
from each tool's inputSchema and outputSchema; the servers are started to
list them.

A tsconfig.json that wasmgate did not write is never overwritten.
'wasmgate script --emit-types DIR' writes the same files.

Flags:
`

func (e env) typesCmd(ctx context.Context, args []string) int {
	fs := newFlagSet("types", e.stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), typesUsage)
		fs.PrintDefaults()
	}
	config := fs.String("config", "", "registry configuration (JSON) whose actions are declared (required unless --mcp-servers is given)")
	var gf gatewayFlags
	gf.register(fs, false)
	out := fs.String("out", ".", "directory the declarations are written into")
	engineName := fs.String("engine", string(sandbox.EngineWazero), engineUsage)
	cache := fs.String("cache-dir", "", "keep compiled code in this directory across runs (default: $WASMGATE_CACHE_DIR, else the user cache directory; \"off\" to disable)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return e.fail("types", &usageError{err.Error()})
	}
	switch {
	case len(pos) > 0:
		return e.fail("types", usagef("unexpected argument %q", pos[0]))
	case *config == "" && gf.servers == "":
		return e.fail("types", usagef("--config FILE (or --mcp-servers FILE) is required: its actions are what is declared"))
	}
	name, err := sandbox.ParseEngineName(*engineName)
	if err != nil {
		return e.fail("types", usagef("--engine: %v", err))
	}
	// Nothing runs: the Runtime loads the registry, and audits nothing.
	var reg *pipeline.Registry
	rt, err := openRuntime(ctx, runtimeFlags{engine: name, cacheDir: *cache}, func(ctx context.Context, engine sandbox.Engine) (*pipeline.Registry, error) {
		if *config == "" {
			reg = pipeline.NewRegistry()
			return reg, nil
		}
		loaded, err := e.loadRegistry(ctx, engine, sourceFlags{config: *config}, "", sandbox.Limits{},
			func(problem string) { fmt.Fprintf(e.stderr, "wasmgate types: warning: %s\n", problem) })
		reg = loaded
		return loaded, err
	})
	if err != nil {
		return e.fail("types", err)
	}
	defer rt.Close(ctx)
	var cat actionCatalog = reg
	gw, err := gf.connect(ctx, e.stderr, "types")
	if err != nil {
		return e.fail("types", err)
	}
	if gw != nil {
		defer gw.Close()
		if err := gw.Register(rt); err != nil {
			return e.fail("types", usagef("--mcp-servers: %v", err))
		}
		cat = rt
	}
	files, err := typeFiles(cat)
	if err != nil {
		return e.fail("types", usagef("%v", err))
	}
	if err := writeTypes(*out, files); err != nil {
		return e.fail("types", err)
	}
	fmt.Fprintf(e.stderr, "wasmgate types: wrote %s, %s and %s in %s (%d actions)\n",
		jstool.DeclarationsFile, jstool.EnvironmentFile, tsconfigFile, *out, len(cat.Actions()))
	return exitSuccess
}

// declarations are the two declaration files of a registry's scripts.
func declarations(reg actionCatalog) (map[string][]byte, error) {
	return toolscript.Declarations(reg)
}

const tsconfigFile = "tsconfig.json"

// tsconfigMarker begins every tsconfig.json wasmgate writes (tsconfig
// files may hold comments): one without it is the user's, never replaced.
const tsconfigMarker = "// Written by wasmgate types"

// tsconfig is the editor's configuration for scripts beside the
// declarations: the options the checker of 'wasmgate script' uses.
var tsconfig = tsconfigMarker + ` from the registry: the options 'wasmgate script' type-checks with.
{
  "compilerOptions": {
    "strict": true,
    "noEmit": true,
    "target": "ES2023",
    "lib": ["ES2023"],
    "module": "ESNext",
    "moduleDetection": "force",
    "moduleResolution": "bundler",
    "types": [],
    "skipLibCheck": true,
    "allowImportingTsExtensions": true
  },
  "include": ["**/*.ts", "**/*.mts", "` + jstool.DeclarationsFile + `", "` + jstool.EnvironmentFile + `"]
}
`

// typeFiles are the files of wasmgate types.
func typeFiles(reg actionCatalog) (map[string][]byte, error) {
	files, err := declarations(reg)
	if err != nil {
		return nil, err
	}
	files[tsconfigFile] = []byte(tsconfig)
	return files, nil
}

// writeTypes writes files into dir, refusing to replace a tsconfig.json
// wasmgate did not write.
func writeTypes(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	existing, err := os.ReadFile(filepath.Join(dir, tsconfigFile))
	switch {
	case err == nil && !bytes.HasPrefix(existing, []byte(tsconfigMarker)):
		return usagef("%s exists and was not written by wasmgate: not replacing it (choose another --out, or add to it the \"paths\"/\"include\" of the declarations yourself)", filepath.Join(dir, tsconfigFile))
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// checkError is a usage error (exit 2) for a type check of script that
// could not run: the script reaches outside its tree, or a bound of the
// check stopped the compiler, naming the flag that raises it.
func checkError(err error, script string, c tscheck.Checker) error {
	var te *tscheck.TreeError
	switch {
	case errors.As(err, &te):
		return usagef("cannot type-check %s: %s: nothing was run", script, strings.Join(te.Problems, "; "))
	case errors.Is(err, tscheck.ErrTimeBound):
		return usagef("type-checking %s took longer than --check-timeout %s: the compiler was stopped and nothing was run (raise --check-timeout, or --no-check skips the check)", script, c.Timeout)
	case errors.Is(err, tscheck.ErrMemoryBound):
		return usagef("type-checking %s needed more than --check-memory-mb %d: the compiler was stopped and nothing was run (raise --check-memory-mb, or --no-check skips the check)", script, c.MaxMemory>>20)
	}
	return err
}

// printTypeErrors writes each error to the stderr as
// FILE:LINE:COL: error TSCODE: MESSAGE, then how many there were.
func (e env) printTypeErrors(script string, diags []tscheck.Diagnostic) {
	for _, d := range diags {
		fmt.Fprintln(e.stderr, d.String())
	}
	noun := "errors"
	if len(diags) == 1 {
		noun = "error"
	}
	fmt.Fprintf(e.stderr, "wasmgate script: %d type %s in %s: nothing was run (--no-check runs it unchecked)\n", len(diags), noun, script)
}
