// Package mcpgateway connects to MCP servers and offers their tools as
// actions of a Runtime. This is a stand-in with the package's interface
// only, so that Code Mode builds against it; the real package replaces it.
package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/wasmgate/wasmgate"
)

// Built reports whether this is the real gateway: tests that need real MCP
// servers run only when it is.
const Built = false

var errNotBuilt = errors.New("mcpgateway: not built yet")

type ServerConfig struct {
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

type Config struct{ Servers map[string]ServerConfig }

func LoadConfig(path string) (Config, error) { return Config{}, errNotBuilt }

type Policy struct {
	Allow       []string
	MaxCalls    int
	CallTimeout time.Duration
}

type Tool struct {
	Server, Name, Action, Description string
	InputSchema, OutputSchema         json.RawMessage
	Allowed                           bool
}

type Gateway struct{}

func Connect(ctx context.Context, cfg Config, p Policy) (*Gateway, error) { return nil, errNotBuilt }

func (g *Gateway) Tools() []Tool { return nil }

func (g *Gateway) Register(rt *wasmgate.Runtime) error { return errNotBuilt }

func WithBudget(ctx context.Context) context.Context { return ctx }

func (g *Gateway) Close() error { return errNotBuilt }
