// Package toolscript runs a toolscript once, the one path `wasmgate script`
// (a file and its tree) and Code Mode's run_script (text, with no tree) share:
// bundle it, type-check it against the declarations of the actions it may
// call, and run it in the engine, each of its tool calls a governed, audited
// action under one trace id and one call budget.
package toolscript

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/wasmgate/wasmgate/internal/mcpgateway"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/tscheck"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Tools are the actions a script may call, with what declares them: a
// *pipeline.Registry, a *wasmgate.Runtime.
type Tools interface {
	Actions() []string
	ActionManifest(action string) (sandbox.Manifest, bool)
}

// Host runs the script's engine and its tool calls: a *wasmgate.Runtime.
type Host interface {
	pipeline.Runner
	ActionManifest(action string) (sandbox.Manifest, bool)
	UseEngine(ctx context.Context, use func(ctx context.Context, engine sandbox.Engine) error) error
}

// Script is one script: a file (File), or text (Text) that Name names.
type Script struct {
	// File is the script's path; its imports stay in its tree.
	File string
	// Name is a script given as text's file name (script.ts), whose
	// extension says whether it is TypeScript; Text is its source. It has
	// no tree: it imports "toolscript" and Node's built-ins only.
	Name, Text string
}

// name is how messages call s.
func (s Script) name() string {
	if s.File != "" {
		return s.File
	}
	return s.Name
}

// Typed reports whether s is TypeScript, which is type-checked.
func (s Script) Typed() bool {
	switch strings.ToLower(filepath.Ext(s.name())) {
	case ".ts", ".mts", ".cts":
		return true
	}
	return false
}

// Runner runs scripts on a Host.
type Runner struct {
	Host Host
	// Tools are what scripts call and are checked against (nil: the
	// Host's actions).
	Tools Tools
	// Checker type-checks a TypeScript script first; nil skips the check.
	Checker *tscheck.Checker
	// Limits are the script's own (zero fields: jstool.ScriptLimits()).
	Limits sandbox.Limits
	// Cwd is the directory the script runs from, what its Deno.cwd() says
	// ("": "/", as for a script an agent sends).
	Cwd string
	// WrapCall, when set, wraps the calls the script makes (the CLI counts
	// its MCP gateway calls there).
	WrapCall func(jstool.ToolCaller) jstool.ToolCaller
	// BeforeRun, when set, is called once the script bundled and checked,
	// before it runs: what may be done only for a script that runs (the
	// CLI opens its audit log there). Its error stops the run.
	BeforeRun func() error
}

// Result is what became of a script.
type Result struct {
	// TypeErrors are the type checker's errors: when there are any,
	// nothing ran (Outcome is zero).
	TypeErrors []tscheck.Diagnostic
	// Outcome is the run's: Completed with the result as JSON in Output
	// (empty for undefined), Failed with the exception and its stack, or
	// the limit reached.
	Outcome sandbox.Outcome
	// Ran is whether the script started running: it bundled, checked,
	// and BeforeRun let it.
	Ran bool
	// Limits are the limits the script ran under, defaults applied.
	Limits sandbox.Limits
	// Calls is how many tool calls the script made; TraceID is the one
	// trace id they share ("" when it made none).
	Calls   int
	TraceID string
}

// Run bundles, type-checks and runs s, console.log written to stdout and
// console.warn and console.error to stderr as the script runs.
//
// # Errors
//
// A *jstool.BundleError when the script does not bundle (a syntax error,
// an import that does not resolve or leaves its tree); a file that cannot
// be read is the os error wrapped (errors.Is fs.ErrNotExist). From the
// check: a *tscheck.TreeError, or an error matching tscheck.ErrTimeBound or
// tscheck.ErrMemoryBound. BeforeRun's error; an engine failure. In each
// case nothing ran.
func (r Runner) Run(ctx context.Context, s Script, stdout, stderr io.Writer) (Result, error) {
	tools := r.Tools
	if tools == nil {
		tools = r.Host
	}
	res := Result{Limits: r.Limits.WithDefaults(jstool.ScriptLimits())}

	// Bundling finds syntax and type-stripping errors before anything
	// runs; type-checking, type errors.
	var bundle jstool.Bundle
	var err error
	if s.File != "" {
		bundle, err = jstool.BundleScript(s.File, tools.Actions())
	} else {
		bundle, err = jstool.BundleScriptText(s.Name, s.Text, tools.Actions())
	}
	if err != nil {
		return res, err
	}
	if r.Checker != nil && s.Typed() {
		decls, err := Declarations(tools)
		if err != nil {
			return res, err
		}
		if s.File != "" {
			res.TypeErrors, err = r.Checker.Check(ctx, s.File, decls)
		} else {
			res.TypeErrors, err = r.Checker.CheckText(ctx, s.Name, s.Text, decls)
		}
		if err != nil {
			return res, fmt.Errorf("type-checking %s: %w", s.name(), err)
		}
		if len(res.TypeErrors) > 0 {
			return res, nil
		}
	}

	if r.BeforeRun != nil {
		if err := r.BeforeRun(); err != nil {
			return res, err
		}
	}
	res.Ran = true
	caller := &caller{host: r.Host}
	// A fresh budget of gateway calls for this run, whichever front runs it.
	ctx = mcpgateway.WithBudget(ctx)
	call := jstool.ToolCaller(caller.call)
	if r.WrapCall != nil {
		call = r.WrapCall(call)
	}
	err = r.Host.UseEngine(ctx, func(ctx context.Context, engine sandbox.Engine) (err error) {
		res.Outcome, err = jstool.RunScript(ctx, engine, bundle, jstool.ScriptOptions{
			Limits: r.Limits,
			Call:   call,
			Cwd:    r.Cwd,
			Stdout: stdout,
			Stderr: stderr,
		})
		return err
	})
	res.Calls, res.TraceID = int(caller.calls.Load()), caller.traceID
	return res, err
}

// caller runs a script's tool calls through host, all under one trace id:
// the one the pipeline gives the first call. The engine makes the calls one
// at a time.
type caller struct {
	host    pipeline.Runner
	traceID string
	calls   atomic.Int64
}

func (c *caller) call(ctx context.Context, action string, params json.RawMessage) (jstool.ToolCallResult, error) {
	c.calls.Add(1)
	res, err := c.host.Execute(ctx, pipeline.ActionRequest{Action: action, Payload: params, TraceID: c.traceID})
	if cerr := ctx.Err(); cerr != nil {
		// The script is being stopped (its deadline, a signal).
		return jstool.ToolCallResult{}, cerr
	}
	if res.Status == "" {
		return jstool.ToolCallResult{}, err
	}
	// An engine failure (pipeline.ErrInternal) is audited as FAILED: the
	// script gets that verdict, and its message says why.
	c.traceID = res.TraceID
	codes := make([]string, len(res.ReasonCodes))
	for i, code := range res.ReasonCodes {
		codes[i] = string(code)
	}
	return jstool.ToolCallResult{Status: string(res.Status), ReasonCodes: codes, TraceID: res.TraceID,
		Output: res.Output, Message: res.Message}, nil
}

// Declarations are the declaration files a script of tools is checked
// against: toolscript.d.ts (every action a typed function, from its
// executor's schemas) and wasmgate-env.d.ts (the engine's globals).
//
// # Errors
//
// When two actions map to the same function.
func Declarations(tools Tools) (map[string][]byte, error) {
	decl, err := jstool.ToolscriptDeclarations(ActionTypes(tools))
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		jstool.DeclarationsFile: []byte(decl),
		jstool.EnvironmentFile:  []byte(jstool.EnvironmentDeclarations),
	}, nil
}

// ActionTypes describes tools' actions for the declarations.
func ActionTypes(tools Tools) []jstool.ActionType {
	var types []jstool.ActionType
	for _, a := range tools.Actions() {
		m, _ := tools.ActionManifest(a)
		types = append(types, jstool.ActionType{Action: a, Description: m.Description, InputSchema: m.InputSchema, OutputSchema: m.OutputSchema})
	}
	return types
}

// Stopped says why a run stopped at a limit (or otherwise did not
// complete or throw), naming each limit as limit(name) does: the CLI names
// its flags ("--fuel"), an MCP client reads the limit's name.
func Stopped(out sandbox.Outcome, lim sandbox.Limits, limit func(name string) string) string {
	switch out.Kind {
	case sandbox.FuelExhausted:
		return fmt.Sprintf("the script ran out of fuel (%s %d)", limit("fuel"), lim.Fuel)
	case sandbox.Timeout:
		return fmt.Sprintf("the script ran out of time (%s %d)", limit("timeout-ms"), lim.TimeoutMs)
	case sandbox.MemoryExhausted:
		return fmt.Sprintf("the script ran out of memory (%s %d): %s", limit("memory-pages"), lim.MemoryPages, out.Message)
	case sandbox.StackExhausted:
		return fmt.Sprintf("the script recursed too deeply: %s", out.Message)
	case sandbox.OutputTooLarge:
		return fmt.Sprintf("the script's result is larger than %d bytes", lim.MaxOutputBytes)
	default:
		return fmt.Sprintf("the script stopped: %s: %s", out.Kind, out.Message)
	}
}
