package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/wasmgate/wasmgate/internal/mcpgateway"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// gatewayFlags are the flags of the commands that reach MCP servers'
// tools through the gateway (script, types).
type gatewayFlags struct {
	servers  string
	allow    stringList
	maxCalls int
	timeout  time.Duration
	calls    bool // the command makes calls: --mcp-max-calls and --mcp-timeout are its
}

func (f *gatewayFlags) register(fs *flag.FlagSet, calls bool) {
	fs.StringVar(&f.servers, "mcp-servers", "", `MCP servers whose tools join the actions, from a {"mcpServers": {NAME: {"command", "args", "env"} | {"url", "headers"}}} file: tools.NAME.camelTool`)
	fs.Var(&f.allow, "mcp-allow", "let scripts call this MCP tool: SERVER.TOOL (the tool's own name) or SERVER.* (repeatable; default none: every call is refused BLOCKED)")
	f.calls = calls
	if calls {
		fs.IntVar(&f.maxCalls, "mcp-max-calls", mcpgateway.DefaultMaxCalls, "the calls one script may make to MCP servers; the next is refused BLOCKED")
		fs.DurationVar(&f.timeout, "mcp-timeout", mcpgateway.DefaultCallTimeout, "the wall-clock limit of one MCP tool call (BLOCKED EXECUTOR_TIMEOUT past it)")
	}
}

// check refuses flags that cannot work, before anything is opened.
func (f gatewayFlags) check() error {
	switch {
	case f.servers == "" && len(f.allow) > 0:
		return usagef("--mcp-allow needs --mcp-servers FILE: the servers whose tools it allows")
	case f.calls && f.maxCalls < 1:
		return usagef("--mcp-max-calls %d: want 1 or more", f.maxCalls)
	case f.calls && f.timeout <= 0:
		return usagef("--mcp-timeout %s: want a positive duration (e.g. 30s)", f.timeout)
	}
	return nil
}

// connect starts the gateway when --mcp-servers is given (nil otherwise),
// writing what it leaves out to warn.
//
// # Errors
//
// A usage error (nothing ran) for a bad file, pattern or limit, and for a
// server that cannot be started or reached.
func (f gatewayFlags) connect(ctx context.Context, warn io.Writer, command string) (*mcpgateway.Gateway, error) {
	if err := f.check(); err != nil || f.servers == "" {
		return nil, err
	}
	cfg, err := mcpgateway.LoadConfig(f.servers)
	if err != nil {
		return nil, usagef("%v", err)
	}
	g, err := mcpgateway.Connect(ctx, cfg, mcpgateway.Policy{Allow: f.allow, MaxCalls: f.maxCalls, CallTimeout: f.timeout})
	if err != nil {
		return nil, usagef("%v: nothing was run", err)
	}
	for _, p := range g.Problems() {
		fmt.Fprintf(warn, "wasmgate %s: warning: %s\n", command, p)
	}
	return g, nil
}

// gatewayCounter counts a script's calls of gateway tools by verdict, for
// its verdict line.
type gatewayCounter struct {
	actions map[string]bool
	counts  map[string]int
	total   int
}

func newGatewayCounter(g *mcpgateway.Gateway) *gatewayCounter {
	c := &gatewayCounter{actions: map[string]bool{}, counts: map[string]int{}}
	for _, t := range g.Tools() {
		c.actions[t.Action] = true
	}
	return c
}

// wrap counts the calls call makes of gateway tools.
func (c *gatewayCounter) wrap(call jstool.ToolCaller) jstool.ToolCaller {
	return func(ctx context.Context, action string, params json.RawMessage) (jstool.ToolCallResult, error) {
		res, err := call(ctx, action, params)
		if c.actions[action] && res.Status != "" {
			c.total++
			c.counts[res.Status]++
		}
		return res, err
	}
}

// line is the script's verdict line about its gateway calls.
func (c *gatewayCounter) line() string {
	noun := "calls"
	if c.total == 1 {
		noun = "call"
	}
	return fmt.Sprintf("wasmgate script: %d MCP gateway %s (%d SUCCESS, %d FAILED, %d BLOCKED)",
		c.total, noun, c.counts["SUCCESS"], c.counts["FAILED"], c.counts["BLOCKED"])
}

// actionCatalog is what the declarations are made from: a registry, or a
// Runtime's registry as it stands (with the gateway's tools).
type actionCatalog interface {
	Actions() []string
	ActionManifest(action string) (sandbox.Manifest, bool)
}
