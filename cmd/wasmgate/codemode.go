package main

import (
	"context"
	"flag"
	"io"
	"slices"

	wg "github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/internal/mcpgateway"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/toolscript"
	"github.com/wasmgate/wasmgate/internal/tscheck"
	"github.com/wasmgate/wasmgate/protocol/mcp"
)

// connectRuntime starts the gateway (nil without --mcp-servers) and
// registers its servers' tools as actions of rt (SERVER__TOOL).
func (f gatewayFlags) connectRuntime(ctx context.Context, rt *wg.Runtime, warn io.Writer, command string) (*mcpgateway.Gateway, error) {
	gw, err := f.connect(ctx, warn, command)
	if err != nil || gw == nil {
		return nil, err
	}
	if err := gw.Register(rt); err != nil {
		gw.Close()
		return nil, usagef("--mcp-servers %s: %v", f.servers, err)
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
	c.gateway.register(fs, true)
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
	return c.gateway.check()
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
