package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"time"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/internal/mcpgateway"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/toolscript"
	"github.com/wasmgate/wasmgate/internal/tscheck"
	"github.com/wasmgate/wasmgate/protocol/mcp"
)

// Defaults of the gateway's policy, for every command that takes
// --mcp-servers.
const (
	defaultMCPMaxCalls = 100
	defaultMCPTimeout  = 30 * time.Second
)

// gatewayFlags are the flags of the MCP servers a script may call through
// the gateway: --mcp-servers, --mcp-allow, --mcp-max-calls, --mcp-timeout.
type gatewayFlags struct {
	servers  string
	allow    stringList
	maxCalls int
	timeout  time.Duration
}

func (g *gatewayFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.servers, "mcp-servers", "", `MCP servers a script may call (tools.SERVER.tool), in the usual {"mcpServers": {NAME: {"command","args","env"} | {"url","headers"}}} file`)
	fs.Var(&g.allow, "mcp-allow", "a server tool scripts may call, SERVER.TOOL or SERVER.* (repeatable; default: none, every call BLOCKED and audited)")
	fs.IntVar(&g.maxCalls, "mcp-max-calls", defaultMCPMaxCalls, "server tool calls one script may make")
	fs.DurationVar(&g.timeout, "mcp-timeout", defaultMCPTimeout, "wall-clock limit of one server tool call")
}

// check refuses gateway flags that cannot work, naming the flag.
func (g gatewayFlags) check(fs *flag.FlagSet) error {
	switch {
	case g.maxCalls <= 0:
		return usagef("--mcp-max-calls %d: want a positive number of calls (leave it out for %d)", g.maxCalls, defaultMCPMaxCalls)
	case g.timeout <= 0:
		return usagef("--mcp-timeout %s: want a positive duration (leave it out for %s)", g.timeout, defaultMCPTimeout)
	case g.servers == "":
		for _, name := range []string{"mcp-allow", "mcp-max-calls", "mcp-timeout"} {
			if flagSet(fs, name) {
				return usagef("--%s needs --mcp-servers FILE: it governs the calls to those servers", name)
			}
		}
	}
	return nil
}

// connect connects to the servers of --mcp-servers and registers their
// tools as actions of rt (SERVER__TOOL); nil when there are none.
func (g gatewayFlags) connect(ctx context.Context, rt *wg.Runtime) (*mcpgateway.Gateway, error) {
	if g.servers == "" {
		return nil, nil
	}
	cfg, err := mcpgateway.LoadConfig(g.servers)
	if err != nil {
		return nil, usagef("--mcp-servers: %v", err)
	}
	gw, err := mcpgateway.Connect(ctx, cfg, mcpgateway.Policy{Allow: g.allow, MaxCalls: g.maxCalls, CallTimeout: g.timeout})
	if err != nil {
		return nil, fmt.Errorf("--mcp-servers %s: %w", g.servers, err)
	}
	if err := gw.Register(rt); err != nil {
		gw.Close()
		return nil, fmt.Errorf("--mcp-servers %s: %w", g.servers, err)
	}
	return gw, nil
}

// codeModeFlags are the flags of Code Mode on the MCP fronts.
type codeModeFlags struct {
	on      bool
	gateway gatewayFlags
}

func (c *codeModeFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.on, "code-mode", false, "offer one tool, run_script, that runs a TypeScript program calling the tools (declared in its description), instead of one tool per action")
	c.gateway.register(fs)
}

// check refuses what Code Mode cannot take: the gateway's flags without
// it, and the flags of tools a script cannot call (exclusive).
func (c codeModeFlags) check(fs *flag.FlagSet, exclusive ...string) error {
	if !c.on {
		for _, name := range []string{"mcp-servers", "mcp-allow", "mcp-max-calls", "mcp-timeout"} {
			if flagSet(fs, name) {
				return usagef("--%s needs --code-mode: server tools are offered to scripts (run_script), not one by one", name)
			}
		}
		return nil
	}
	for _, name := range exclusive {
		if flagSet(fs, name) {
			return usagef("--%s does not apply with --code-mode: scripts call the actions of --config and the tools of --mcp-servers", name)
		}
	}
	return c.gateway.check(fs)
}

// codeModeOf is the MCP server's Code Mode over rt, whose registry holds the
// gateway's tools when gw is not nil: run_script's description declares
// the registry's actions and the server tools the policy allows.
func codeModeOf(rt *wg.Runtime, gw *mcpgateway.Gateway) *mcp.CodeMode {
	checker := tscheck.Default()
	cm := &mcp.CodeMode{Runner: toolscript.Runner{Host: rt, Checker: &checker}}
	if gw != nil {
		cm.Described = allowedTools{rt: rt, gw: gw}
	}
	return cm
}

// allowedTools are rt's actions but the server tools the policy refuses,
// as the gateway lists them now (a server's list changes).
type allowedTools struct {
	rt *wg.Runtime
	gw *mcpgateway.Gateway
}

func (a allowedTools) Actions() []string {
	var refused []string
	for _, t := range a.gw.Tools() {
		if !t.Allowed {
			refused = append(refused, t.Action)
		}
	}
	return slices.DeleteFunc(a.rt.Actions(), func(action string) bool { return slices.Contains(refused, action) })
}

func (a allowedTools) ActionManifest(action string) (sandbox.Manifest, bool) {
	return a.rt.ActionManifest(action)
}
