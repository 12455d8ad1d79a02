package mcpgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Policy is what the gateway lets a script do.
type Policy struct {
	// Allow lists the tools a script may call: "SERVER.TOOL" (the server's
	// name in the configuration, the tool's own name) or "SERVER.*". None:
	// nothing is allowed; a call to a tool outside it is refused BLOCKED.
	Allow []string
	// MaxCalls bounds the calls one script run (one WithBudget context)
	// makes to the servers; 0 means DefaultMaxCalls.
	MaxCalls int
	// CallTimeout bounds one call, from sending it to its answer; 0 means
	// DefaultCallTimeout.
	CallTimeout time.Duration
}

// The policy's defaults: a script that calls a hundred tools is a loop gone
// wrong more often than a plan, and 30 s is the patience MCP clients
// commonly give a tool call.
const (
	DefaultMaxCalls    = 100
	DefaultCallTimeout = 30 * time.Second
)

// CallCapability is the capability every gateway executor declares: a
// call that leaves the sandbox for an MCP server. The action of an allowed
// tool grants it; that of a tool outside Policy.Allow grants nothing, so
// the pipeline refuses its calls BLOCKED with EXECUTOR_CAPABILITY_MISMATCH,
// audited, before anything is sent.
const CallCapability = "MCP_CALL"

// Tool is one tool of one server, as the gateway offers it.
type Tool struct {
	// Server is the server's name (its key in the configuration), Name the
	// tool's own name.
	Server, Name string
	// Action is the registry action name: Server + "__" + Name; a script
	// calls it as tools.<server>.<camelName>.
	Action string
	// Description is the tool's, for the declarations' doc comments.
	Description string
	// InputSchema and OutputSchema are the tool's JSON Schemas;
	// OutputSchema is nil when the tool declares none.
	InputSchema, OutputSchema json.RawMessage
	// Allowed says whether the policy lets scripts call it.
	Allowed bool
}

// Gateway is a set of connected MCP servers and the executors their tools
// are. It is safe for concurrent use.
type Gateway struct {
	policy  Policy
	allow   []allowPattern
	servers []*server // sorted by name

	mu       sync.Mutex // guards runtimes and every server's tools
	runtimes []*wasmgate.Runtime
	closed   bool

	stop      context.CancelFunc
	refreshes sync.WaitGroup
	// refreshed receives the server's name after each refresh of its
	// tools (for tests; sends never block).
	refreshed chan string
}

// server is one connected server.
type server struct {
	name    string
	version string // the executors' version: the server's, or 0.0.0
	session *mcp.ClientSession
	stderr  *tailBuffer // a command server's stderr, for errors
	changed chan struct{}

	tools    []Tool // guarded by Gateway.mu; sorted by Action
	execs    map[string]*toolExecutor
	problems []string
}

type allowPattern struct{ server, tool string } // tool "*": any

// Connect starts (or opens) every server of cfg with the official Go SDK's
// client and lists its tools. Each server's tool list is kept current
// while the gateway is open: a notifications/tools/list_changed makes the
// gateway list it again, and change every Runtime it is registered with.
// ctx bounds the connecting only.
//
// # Errors
//
// An error naming the server when it cannot be started or reached, does
// not complete the MCP handshake, or does not list its tools (within
// p.CallTimeout); an error naming the pattern when p.Allow holds one that
// is not SERVER.TOOL or SERVER.* of a configured server. The servers
// started so far are closed again.
func Connect(ctx context.Context, cfg Config, p Policy) (*Gateway, error) {
	if p.MaxCalls < 0 {
		return nil, fmt.Errorf("mcp gateway: a call budget of %d: want 0 (the default, %d) or more", p.MaxCalls, DefaultMaxCalls)
	}
	if p.CallTimeout < 0 {
		return nil, fmt.Errorf("mcp gateway: a call timeout of %s: want 0 (the default, %s) or more", p.CallTimeout, DefaultCallTimeout)
	}
	if p.MaxCalls == 0 {
		p.MaxCalls = DefaultMaxCalls
	}
	if p.CallTimeout == 0 {
		p.CallTimeout = DefaultCallTimeout
	}
	allow, err := parseAllow(p.Allow, cfg)
	if err != nil {
		return nil, err
	}
	p.Allow = append([]string(nil), p.Allow...)
	runCtx, stop := context.WithCancel(context.Background())
	g := &Gateway{policy: p, allow: allow, stop: stop, refreshed: make(chan string, 64)}
	names := make([]string, 0, len(cfg.Servers))
	for name := range cfg.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s, err := g.connect(ctx, name, cfg.Servers[name])
		if err != nil {
			_ = g.Close()
			return nil, err
		}
		g.servers = append(g.servers, s)
	}
	for _, s := range g.servers {
		g.refreshes.Add(1)
		go g.watch(runCtx, s)
	}
	return g, nil
}

// parseAllow checks the policy's patterns against the configured servers.
func parseAllow(patterns []string, cfg Config) ([]allowPattern, error) {
	var out []allowPattern
	for _, p := range patterns {
		srv, tool, ok := strings.Cut(p, ".")
		if !ok || srv == "" || tool == "" {
			return nil, fmt.Errorf("--mcp-allow %q: want SERVER.TOOL (a tool's own name) or SERVER.* (every tool of the server)", p)
		}
		if _, known := cfg.Servers[srv]; !known {
			return nil, fmt.Errorf("--mcp-allow %q: no server %q in --mcp-servers (it has: %s)", p, srv, strings.Join(serverNames(cfg), ", "))
		}
		out = append(out, allowPattern{srv, tool})
	}
	return out, nil
}

func serverNames(cfg Config) []string {
	names := make([]string, 0, len(cfg.Servers))
	for n := range cfg.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (g *Gateway) allowed(server, tool string) bool {
	for _, a := range g.allow {
		if a.server == server && (a.tool == "*" || a.tool == tool) {
			return true
		}
	}
	return false
}

// connect starts one server and lists its tools.
func (g *Gateway) connect(ctx context.Context, name string, sc ServerConfig) (*server, error) {
	s := &server{name: name, changed: make(chan struct{}, 1)}
	client := mcp.NewClient(&mcp.Implementation{Name: "wasmgate-mcpgateway", Version: "1.0.0"}, &mcp.ClientOptions{
		// The gateway offers servers nothing (no roots, sampling or
		// elicitation): a script's calls are all that flows.
		Capabilities: &mcp.ClientCapabilities{},
		// The SDK calls this from its reading loop: listing again there
		// would wait on that loop, so the watcher does it.
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.changed <- struct{}{}:
			default: // a refresh is pending already
			}
		},
	})
	var transport mcp.Transport
	if sc.Command != "" {
		cmd := exec.Command(sc.Command, sc.Args...)
		cmd.Env = serverEnv(sc.Env)
		s.stderr = &tailBuffer{max: 4096}
		cmd.Stderr = s.stderr
		transport = &mcp.CommandTransport{Command: cmd}
	} else {
		transport = &mcp.StreamableClientTransport{Endpoint: sc.URL, HTTPClient: &http.Client{Transport: headerTransport{sc.Headers}}}
	}
	cctx, cancel := context.WithTimeout(ctx, g.policy.CallTimeout)
	defer cancel()
	session, err := client.Connect(cctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("MCP server %q (%s): cannot connect: %w%s", name, describeServer(sc), err, s.stderr.suffix())
	}
	s.session = session
	s.version = "0.0.0"
	if info := session.InitializeResult().ServerInfo; info != nil && semver.MatchString(info.Version) {
		s.version = info.Version
	}
	tools, problems, err := g.list(cctx, s)
	if err != nil {
		_ = session.Close()
		return nil, fmt.Errorf("MCP server %q (%s): cannot list its tools: %w%s", name, describeServer(sc), err, s.stderr.suffix())
	}
	s.setTools(g, tools, problems)
	return s, nil
}

var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

func describeServer(sc ServerConfig) string {
	if sc.Command != "" {
		return "command " + strings.Join(append([]string{sc.Command}, sc.Args...), " ")
	}
	return sc.URL
}

// defaultEnv are the variables of wasmgate's environment a command server
// gets, as MCP clients commonly pass them: what a program needs to run.
var defaultEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "LANG"}

func serverEnv(extra map[string]string) []string {
	var env []string
	for _, k := range defaultEnv {
		if v, ok := os.LookupEnv(k); ok {
			if _, over := extra[k]; !over {
				env = append(env, k+"="+v)
			}
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+extra[k])
	}
	return env
}

// headerTransport adds a server's configured headers to every request.
type headerTransport struct{ headers map[string]string }

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// list lists a server's tools, as the gateway offers them: those whose
// action name or script path cannot be formed are left out, each with a
// problem saying why.
func (g *Gateway) list(ctx context.Context, s *server) ([]Tool, []string, error) {
	var tools []Tool
	var problems []string
	paths := map[string]string{} // tools.<ns>.<name> → tool
	for t, err := range s.session.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		tool := Tool{Server: s.name, Name: t.Name, Action: s.name + "__" + t.Name, Description: t.Description, Allowed: g.allowed(s.name, t.Name)}
		if tool.InputSchema, err = rawSchema(t.InputSchema); err != nil {
			problems = append(problems, fmt.Sprintf("MCP server %q: tool %q is left out: its inputSchema: %v", s.name, t.Name, err))
			continue
		}
		if tool.OutputSchema, err = rawSchema(t.OutputSchema); err != nil {
			problems = append(problems, fmt.Sprintf("MCP server %q: tool %q is left out: its outputSchema: %v", s.name, t.Name, err))
			continue
		}
		if why := unnameable(tool.Action); why != "" {
			problems = append(problems, fmt.Sprintf("MCP server %q: tool %q is left out: %s", s.name, t.Name, why))
			continue
		}
		ns, name, _ := jstool.ToolPath(tool.Action)
		at := "tools." + ns + "." + name
		if other, dup := paths[at]; dup {
			problems = append(problems, fmt.Sprintf("MCP server %q: tool %q is left out: it would be %s, as tool %q is", s.name, t.Name, at, other))
			continue
		}
		paths[at] = t.Name
		tools = append(tools, tool)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Action < tools[j].Action })
	return tools, problems, nil
}

// unnameable says why an action name cannot be registered or reached from
// a script ("" when it can).
func unnameable(action string) string {
	if len(action) > 128 {
		return fmt.Sprintf("its action name %q is longer than 128 characters", action)
	}
	for _, r := range action {
		if r < 0x21 || r > 0x7e {
			return fmt.Sprintf("its action name %q holds a character other than printable ASCII", action)
		}
	}
	if _, name, ok := jstool.ToolPath(action); !ok || name == "" {
		return "its name has no letter or digit to call it by"
	}
	return ""
}

// rawSchema is a tool's schema as JSON; nil when it declares none.
func rawSchema(schema any) (json.RawMessage, error) {
	if schema == nil {
		return nil, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// setTools makes tools the server's, with their executors. The caller
// holds g.mu, or is connecting (nothing else sees s yet).
func (s *server) setTools(g *Gateway, tools []Tool, problems []string) {
	s.tools, s.problems = tools, problems
	s.execs = make(map[string]*toolExecutor, len(tools))
	ids := map[string]bool{}
	for _, t := range tools {
		e := newToolExecutor(g, s, t)
		// Two tool names may make one id (get-sum, get_sum): the second
		// takes a suffix from its action's digest.
		if ids[e.manifest.ExecutorID] {
			e.manifest.ExecutorID += "_" + audit.Digest([]byte(t.Action))[:8]
		}
		ids[e.manifest.ExecutorID] = true
		s.execs[t.Action] = e
	}
}

// watch refreshes s's tools whenever the server says they changed, until
// the gateway closes.
func (g *Gateway) watch(ctx context.Context, s *server) {
	defer g.refreshes.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		}
		lctx, cancel := context.WithTimeout(ctx, g.policy.CallTimeout)
		tools, problems, err := g.list(lctx, s)
		cancel()
		if err != nil {
			// The previous list stands; the next notification tries again.
			continue
		}
		g.mu.Lock()
		if !g.closed {
			old := s.execs
			s.setTools(g, tools, problems)
			g.applyLocked(func(reg *pipeline.Registry) error {
				for action, e := range old {
					reg.RemoveAction(action)
					reg.RemoveExecutor(e.manifest.ExecutorID)
				}
				return s.install(reg)
			})
		}
		g.mu.Unlock()
		select {
		case g.refreshed <- s.name:
		default:
		}
	}
}

// applyLocked changes every registered Runtime's registry; a Runtime that
// is closed is forgotten. The caller holds g.mu.
func (g *Gateway) applyLocked(change func(reg *pipeline.Registry) error) {
	kept := g.runtimes[:0]
	for _, rt := range g.runtimes {
		err := rt.ChangeRegistry(context.Background(), func(_ context.Context, reg *pipeline.Registry, _ sandbox.Engine) error {
			return change(reg)
		})
		if errors.Is(err, wasmgate.ErrClosed) {
			continue
		}
		kept = append(kept, rt)
	}
	g.runtimes = kept
}

// install adds s's executors and actions to reg.
func (s *server) install(reg *pipeline.Registry) error {
	for _, t := range s.tools {
		e := s.execs[t.Action]
		if err := reg.AddExecutor(e.manifest.ExecutorID, e); err != nil {
			return fmt.Errorf("MCP server %q, tool %q: %w", s.name, t.Name, err)
		}
		granted := []string{}
		if t.Allowed {
			granted = []string{CallCapability}
		}
		if err := reg.AddAction(t.Action, pipeline.Route{Executor: e.manifest.ExecutorID, Version: "*", Capabilities: granted}); err != nil {
			return fmt.Errorf("MCP server %q, tool %q: %w (rename the server in --mcp-servers, or the action in --config)", s.name, t.Name, err)
		}
	}
	return nil
}

// Tools lists every server's tools as they stand, sorted by Action.
func (g *Gateway) Tools() []Tool {
	g.mu.Lock()
	defer g.mu.Unlock()
	var tools []Tool
	for _, s := range g.servers {
		tools = append(tools, s.tools...)
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Action < tools[j].Action })
	return tools
}

// Problems lists the tools left out, each with why (a name a script cannot
// call, two names that camel-case alike, a schema that is not JSON).
func (g *Gateway) Problems() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var problems []string
	for _, s := range g.servers {
		problems = append(problems, s.problems...)
	}
	return problems
}

// Policy is the gateway's policy, its defaults filled in.
func (g *Gateway) Policy() Policy { return g.policy }

// Register adds every tool of every server to rt's registry, as an
// executor (named after the server and tool) and an action
// SERVER__TOOL, routed so that only the tools the policy allows can run;
// and keeps them current while the gateway is open, as the servers'
// lists change.
//
// # Errors
//
// As rt.ChangeRegistry's: an action or executor of that name is
// registered already (a --config action SERVER__TOOL); rt is unchanged
// then.
func (g *Gateway) Register(rt *wasmgate.Runtime) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("mcp gateway: Register after Close")
	}
	err := rt.ChangeRegistry(context.Background(), func(_ context.Context, reg *pipeline.Registry, _ sandbox.Engine) error {
		for _, s := range g.servers {
			if err := s.install(reg); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	g.runtimes = append(g.runtimes, rt)
	return nil
}

// Close closes every server's session (a command server's stdin is
// closed, and the process stopped if it does not exit). The executors
// registered stay, and their calls fail.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	if g.stop != nil {
		g.stop()
	}
	g.refreshes.Wait()
	var errs []error
	for _, s := range g.servers {
		if s.session != nil {
			if err := s.session.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
				errs = append(errs, fmt.Errorf("MCP server %q: %w", s.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

// suffix is what the server wrote to its stderr, for an error message.
func (b *tailBuffer) suffix() string {
	if b == nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	text := string(bytes.TrimSpace(b.buf))
	if text == "" {
		return ""
	}
	return "; its stderr ends: " + text
}
