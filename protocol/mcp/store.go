package mcp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
)

// StoreConfig says which tool store StoreTools lists and how its tools run.
type StoreConfig struct {
	// Store holds the npm packages (wasmgate tools add).
	Store jstool.Store
	// Engine runs the tools; Sink audits their calls.
	Engine runtime.Engine
	Sink   audit.Sink
	// Results is what a call's result carries (full by default).
	Results pipeline.Results
	// Limits apply where a tool's manifest sets none.
	Limits runtime.Limits
	// Allow, when set, says which packages may be offered (serve's
	// --npm-allow); nil offers every package.
	Allow func(pkg string) bool
	// Logger receives a line per package that cannot be offered.
	Logger *slog.Logger
}

// StoreTools is the catalog of a tool store: for each package (its highest
// version), every tool it exports, named ToolName(PACKAGE + "/" + EXPORT)
// ("tpmjs_hello_helloWorld" for export helloWorld of @tpmjs/hello), or
// ToolName(PACKAGE) for a package whose default export is its one tool. A call runs as the HTTP
// front runs the same tool: action PACKAGE/EXPORT, audited to Sink.
//
// A package is loaded once per version and kept; listing again only looks
// for packages added since.
func StoreTools(cfg StoreConfig) Catalog {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &storeCatalog{cfg: cfg, loaded: map[string][]Tool{}}
	return c.list
}

type storeCatalog struct {
	cfg    StoreConfig
	mu     sync.Mutex
	loaded map[string][]Tool // by NAME@VERSION
}

func (c *storeCatalog) list(ctx context.Context) ([]Tool, error) {
	// Only the names: a package is read and loaded once per version.
	pkgs, err := c.cfg.Store.Latest()
	if err != nil {
		return nil, fmt.Errorf("tool store %s: %w", c.cfg.Store.Dir, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var tools []Tool
	for _, l := range pkgs {
		if c.cfg.Allow != nil && !c.cfg.Allow(l.Name) {
			continue
		}
		key := l.Name + "@" + l.Version
		ts, ok := c.loaded[key]
		if !ok {
			inst, err := c.cfg.Store.Load(l)
			if errors.Is(err, fs.ErrNotExist) {
				continue // not (yet) a complete package
			}
			if err == nil {
				ts, err = c.load(ctx, inst)
			}
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				c.cfg.Logger.Warn("mcp: package not offered", "package", key, "error", err)
			}
			c.loaded[key] = ts
		}
		tools = append(tools, ts...)
	}
	return tools, nil
}

// load finds the tools of one package.
func (c *storeCatalog) load(ctx context.Context, inst *jstool.Installed) ([]Tool, error) {
	exports, err := jstool.ToolExports(ctx, c.cfg.Engine, inst.Bundle)
	if err != nil {
		return nil, err
	}
	var tools []Tool
	exact := inst.Name + "@" + inst.Version
	for _, export := range exports {
		e, err := pipeline.LoadExecutor(ctx, c.cfg.Engine, pipeline.ExecutorSource{Package: exact, Tool: export, ToolsDir: c.cfg.Store.Dir})
		if errors.Is(err, runtime.ErrNotAdmitted) {
			// A function that is not a tool (a class), or one that does
			// not load.
			c.cfg.Logger.Info("mcp: export not offered as a tool", "package", exact, "export", export, "error", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		action, name := inst.Name+"/"+export, inst.Name+"/"+export
		if export == "default" {
			name = inst.Name // a package that is one tool
		}
		if len(action) > 128 {
			action = action[:128]
		}
		m := e.Manifest()
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor(m.ExecutorID, e); err != nil {
			return nil, err
		}
		if err := reg.AddAction(action, pipeline.Route{Executor: m.ExecutorID, Version: "*", Limits: m.Limits.WithDefaults(c.cfg.Limits)}); err != nil {
			return nil, err
		}
		p := pipeline.New(reg, c.cfg.Sink, pipeline.WithResults(c.cfg.Results))
		tools = append(tools, Tool{Name: ToolName(name), Action: action, Runner: p, Manifest: m})
	}
	return tools, nil
}
