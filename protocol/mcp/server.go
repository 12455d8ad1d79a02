// Package mcp serves actions as Model Context Protocol tools, over stdio
// (`wasmgate mcp`) and streamable HTTP (`/mcp` on `wasmgate serve`), on the
// official Go SDK.
//
// Every tool is an action: tools/list gives its name, title, description,
// input and output schemas (from its executor's manifest, or for a JS tool
// from the tool itself) and annotations saying it is pure; tools/call is
// one governed execution through the pipeline, audited like a call through
// any other front. The pipeline enforces the schemas, so an invalid
// argument is BLOCKED INPUT_SCHEMA_INVALID, and audited, rather than
// refused by the protocol layer with no trace.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/traceid"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Tool is one tool a Server offers: an action, and the runner that executes
// it.
type Tool struct {
	// Name is the tool's MCP name ([A-Za-z0-9_.-], at most 128
	// characters; see ToolName).
	Name string
	// Action is the action Runner executes for a call.
	Action string
	// Runner executes the calls.
	Runner pipeline.Runner
	// Manifest is the executor's manifest: title, description and schemas.
	Manifest sandbox.Manifest
}

// Catalog lists the tools to offer. It is called when the server starts
// and on every Refresh; a tool that is no longer listed is withdrawn. It
// should answer at once: New waits for it (a tool store's catalog, which
// loads in the background, is Config.Store).
type Catalog func(ctx context.Context) ([]Tool, error)

// Admission bounds the calls running at once: it returns a release
// function once the call may run, or an error saying why it may not (the
// server is overloaded). Nil admits every call.
type Admission func(ctx context.Context) (release func(), err error)

// Config configures a Server. Catalog or Store is required.
type Config struct {
	Catalog Catalog
	// Store, when set, offers a tool store's tools too, as they load (the
	// catalog loads in the background: StoreCatalog.Run): tools/list
	// gives those loaded so far, Watch lists them again as more arrive
	// (and every client is sent notifications/tools/list_changed), and a
	// call naming a tool of a package not loaded yet loads that tool
	// first (StoreCatalog.Await).
	Store *StoreCatalog
	// Name and Version identify the server in the initialize handshake
	// (default "wasmgate", "dev").
	Name, Version string
	// Admit, when set, is asked before each call runs.
	Admit Admission
	// MaxExecutionTime bounds one call (default 60 s); an executor's own
	// timeout_ms applies within it.
	MaxExecutionTime time.Duration
	// ProgressAfter is how long a call runs before the server starts
	// sending progress notifications to a client that asked for them with
	// a progress token, one per ProgressEvery (defaults: 1 s, 1 s).
	ProgressAfter, ProgressEvery time.Duration
	// Logger receives a line per call and per change of the tool set
	// (default: discard).
	Logger *slog.Logger
	// MaxLineBytes bounds one message on stdio, a line (default
	// DefaultMaxLineBytes); see ServeStdio.
	MaxLineBytes int
	// CodeMode, when set, makes the server offer one tool, run_script,
	// in place of Catalog's and Store's (which must be nil): see CodeMode.
	CodeMode *CodeMode
}

// Server is an MCP server whose tools are actions. It is safe for
// concurrent use, and one Server serves any number of sessions.
type Server struct {
	cfg Config
	sdk *sdk.Server

	// refreshing serializes Refresh, so that an older listing is never
	// applied over a newer one.
	refreshing sync.Mutex
	mu         sync.Mutex
	tools      map[string]offered // by name
}

// offered is a tool as announced: what it was built from, to tell a change.
type offered struct {
	tool Tool
	key  string
}

// New returns a server offering the tools of cfg.Catalog.
//
// # Errors
//
// The catalog's error.
func New(ctx context.Context, cfg Config) (*Server, error) {
	switch {
	case cfg.CodeMode != nil && (cfg.Catalog != nil || cfg.Store != nil):
		return nil, errors.New("mcp: Code Mode offers run_script alone: no catalog or store with it")
	case cfg.CodeMode != nil && cfg.CodeMode.Runner.Host == nil:
		return nil, errors.New("mcp: Code Mode needs a Runner with a Host")
	case cfg.Catalog == nil && cfg.Store == nil && cfg.CodeMode == nil:
		return nil, errors.New("mcp: no catalog")
	}
	if cfg.Name == "" {
		cfg.Name = "wasmgate"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.MaxExecutionTime <= 0 {
		cfg.MaxExecutionTime = 60 * time.Second
	}
	if cfg.ProgressAfter <= 0 {
		cfg.ProgressAfter = time.Second
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	s := &Server{cfg: cfg, tools: map[string]offered{}}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: cfg.Name, Title: "wasmgate: governed, pure, audited tools", Version: cfg.Version},
		&sdk.ServerOptions{
			Instructions: instructions(cfg),
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
		})
	if cfg.Store != nil {
		s.sdk.AddReceivingMiddleware(s.awaitStoreTool)
	}
	if err := s.Refresh(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// instructions are what the server tells a client in initialize.
func instructions(cfg Config) string {
	if cfg.CodeMode != nil {
		return "One tool, run_script: write one TypeScript program that calls the declared tools and exports the result, " +
			"instead of calling tools one by one. It runs under fuel, time and memory limits, and every tool call is audited."
	}
	return "Every tool is pure (no I/O), runs under fuel, time and memory limits, and every call is audited. " +
		"A call that fails or is refused returns isError with its reason codes."
}

// SDK is the underlying SDK server.
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Refresh lists the catalog again: tools that appeared are added, tools
// that changed are replaced, tools that are gone are withdrawn, and every
// connected client is told the list changed (notifications/tools/list_changed).
func (s *Server) Refresh(ctx context.Context) error {
	s.refreshing.Lock()
	defer s.refreshing.Unlock()
	if s.cfg.CodeMode != nil {
		return s.refreshCodeMode()
	}
	var tools []Tool
	if s.cfg.Catalog != nil {
		var err error
		if tools, err = s.cfg.Catalog(ctx); err != nil {
			return err
		}
	}
	if s.cfg.Store != nil {
		more, err := s.cfg.Store.Tools(ctx)
		if err != nil {
			return err
		}
		tools = append(tools, more...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, t := range tools {
		if seen[t.Name] {
			s.cfg.Logger.Warn("mcp: two tools share a name; the first is offered", "tool", t.Name, "action", t.Action)
			continue
		}
		def, err := definition(t)
		if err != nil {
			s.cfg.Logger.Warn("mcp: tool not offered", "tool", t.Name, "action", t.Action, "error", err)
			continue
		}
		seen[t.Name] = true
		key := toolKey(def, t)
		if old, ok := s.tools[t.Name]; ok && old.key == key {
			continue
		}
		s.sdk.AddTool(def, s.handler(t))
		s.tools[t.Name] = offered{tool: t, key: key}
		s.cfg.Logger.Info("mcp: tool offered", "tool", t.Name, "action", t.Action)
	}
	var gone []string
	for name := range s.tools {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.sdk.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.tools, name)
		}
		s.cfg.Logger.Info("mcp: tools withdrawn", "tools", gone)
	}
	return nil
}

// Watch calls Refresh every interval, and whenever Config.Store has more
// tools to list, until ctx is done, logging its errors.
func (s *Server) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var changes <-chan struct{}
	if s.cfg.Store != nil {
		changes = s.cfg.Store.Changes()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-changes:
		}
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("mcp: listing tools", "error", err)
		}
	}
}

// awaitStoreTool lets a call name a tool of the tool store that is not
// listed yet: the store's catalog loads it out of turn, and the server
// lists it, before the SDK looks the name up (and answers -32602 for a
// name that is no tool).
func (s *Server) awaitStoreTool(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if r, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" && r.Params != nil && !s.offers(r.Params.Name) {
			if s.cfg.Store.Await(ctx, r.Params.Name) {
				if err := s.Refresh(ctx); err != nil {
					s.cfg.Logger.Warn("mcp: listing tools", "error", err)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// offers reports whether a tool named name is offered.
func (s *Server) offers(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tools[name]
	return ok
}

// Names lists the tools offered, sorted.
func (s *Server) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.tools))
	for n := range s.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// pure are the annotations of every tool: executors cannot reach the world,
// so a call reads nothing, changes nothing, and gives the same result again.
func pure(title string) *sdk.ToolAnnotations {
	no := false
	return &sdk.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no}
}

// definition is the tools/list entry of t.
func definition(t Tool) (*sdk.Tool, error) {
	if !validName.MatchString(t.Name) {
		return nil, fmt.Errorf("tool name %q is not 1 to 128 of [A-Za-z0-9_.-]", t.Name)
	}
	m := t.Manifest
	in, err := objectSchema(m.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input_schema: %w", err)
	}
	def := &sdk.Tool{
		Name:        t.Name,
		Title:       m.Title,
		Description: m.Description,
		InputSchema: in,
		Annotations: pure(m.Title),
	}
	switch {
	case def.Description != "":
	case m.ExecutorID != "" && m.Version != "":
		def.Description = fmt.Sprintf("Runs action %s (executor %s %s) in wasmgate's sandbox.", t.Action, m.ExecutorID, m.Version)
	default:
		def.Description = fmt.Sprintf("Runs action %s in wasmgate's sandbox.", t.Action)
	}
	if len(m.OutputSchema) > 0 {
		// MCP's outputSchema describes structuredContent, an object: a
		// schema for anything else is enforced by the pipeline but not
		// announced.
		if out, err := objectSchema(m.OutputSchema); err == nil && isObjectSchema(m.OutputSchema) {
			def.OutputSchema = out
		}
	}
	return def, nil
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// objectSchema is the input schema MCP announces: a tool's arguments are an
// object, so a schema without a type gets "type":"object", and one of
// another type cannot be a tool's.
func objectSchema(schema json.RawMessage) (json.RawMessage, error) {
	if len(schema) == 0 || string(schema) == "true" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	switch typ, ok := m["type"]; {
	case !ok:
		m["type"] = json.RawMessage(`"object"`)
	case string(typ) != `"object"`:
		return nil, fmt.Errorf(`its type is %s; a tool's arguments are an object (type "object")`, typ)
	}
	return json.Marshal(m)
}

func isObjectSchema(schema json.RawMessage) bool {
	var m struct {
		Type json.RawMessage `json:"type"`
	}
	return json.Unmarshal(schema, &m) == nil && string(m.Type) == `"object"`
}

// toolKey tells whether a tool changed between two listings.
func toolKey(def *sdk.Tool, t Tool) string {
	b, _ := json.Marshal(def)
	return t.Action + "\x00" + fmt.Sprintf("%p", t.Runner) + "\x00" + string(b)
}

// ToolName makes an MCP tool name of a name that may hold other characters
// (an npm package's "@scope/name"): every run of characters outside
// [A-Za-z0-9_.-] becomes "_", a leading "@" is dropped, and the result is
// cut to 128 characters.
func ToolName(name string) string {
	name = strings.TrimPrefix(name, "@")
	n := invalidRun.ReplaceAllString(name, "_")
	if len(n) > 128 {
		n = n[:128]
	}
	if n == "" {
		n = "_"
	}
	return n
}

var invalidRun = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// handler runs one call of t: one pipeline execution.
func (s *Server) handler(t Tool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		args := bytes.TrimSpace(req.Params.Arguments)
		if len(args) == 0 || string(args) == "null" {
			args = []byte("{}")
		}
		if s.cfg.Admit != nil {
			release, err := s.cfg.Admit(ctx)
			if err != nil {
				return errorResult(fmt.Sprintf("wasmgate is busy: %v; retry later", err), nil), nil
			}
			defer release()
		}
		ctx, cancel := context.WithTimeout(ctx, s.cfg.MaxExecutionTime)
		defer cancel()
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			stop := s.progress(ctx, req.Session, token, t.Name)
			defer stop()
		}
		res, err := t.Runner.Execute(ctx, pipeline.ActionRequest{
			Action:  t.Action,
			Payload: args,
			TraceID: traceIDFrom(req.Params.Meta),
		})
		s.cfg.Logger.Info("mcp: call", "tool", t.Name, "trace_id", res.TraceID, "status", res.Status, "reason_codes", res.ReasonCodes, "error", err)
		switch {
		case errors.Is(err, pipeline.ErrInvalidRequest):
			return errorResult(err.Error(), nil), nil
		case res.Status == "":
			if err == nil {
				err = errors.New("no verdict")
			}
			return errorResult(fmt.Sprintf("the call was not executed: %v", err), nil), nil
		}
		return toolResult(res), nil
	}
}

// progress sends a progress notification every ProgressEvery once the call
// has run ProgressAfter, until stop is called.
func (s *Server) progress(ctx context.Context, ss *sdk.ServerSession, token any, tool string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		timer := time.NewTimer(s.cfg.ProgressAfter)
		defer timer.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			elapsed := time.Since(start)
			err := ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(elapsed.Milliseconds()),
				Message:       fmt.Sprintf("%s: running for %s", tool, elapsed.Round(100*time.Millisecond)),
			})
			if err != nil {
				return
			}
			timer.Reset(s.cfg.ProgressEvery)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// toolResult is the CallToolResult of a verdict: on SUCCESS the output as
// structuredContent (when it is an object, as MCP requires) and as text;
// otherwise isError, with the status, reason codes and message as text. The
// verdict itself, without output, is in _meta under "wasmgate/result".
func toolResult(res pipeline.ActionResult) *sdk.CallToolResult {
	verdict := res
	verdict.Output, verdict.Log = nil, ""
	meta := sdk.Meta{"wasmgate/result": verdict}
	if res.Status != pipeline.StatusSuccess {
		codes := make([]string, len(res.ReasonCodes))
		for i, c := range res.ReasonCodes {
			codes[i] = string(c)
		}
		text := fmt.Sprintf("%s %s", res.Status, strings.Join(codes, ", "))
		if res.Message != "" {
			text += ": " + res.Message
		}
		return errorResult(text, meta)
	}
	out := res.Output
	if len(out) == 0 {
		out = json.RawMessage("null")
	}
	r := &sdk.CallToolResult{Meta: meta, Content: []sdk.Content{&sdk.TextContent{Text: string(out)}}}
	if out[0] == '{' {
		r.StructuredContent = out
	}
	return r
}

func errorResult(text string, meta sdk.Meta) *sdk.CallToolResult {
	return &sdk.CallToolResult{Meta: meta, IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// traceIDFrom is the trace id of a call whose _meta carries a W3C
// traceparent, in the UUID form the pipeline records; "" (a new id) when it
// carries none or an invalid one.
func traceIDFrom(meta sdk.Meta) string {
	tp, _ := meta["traceparent"].(string)
	id, _ := traceid.FromTraceparent(tp)
	return id
}

// RegistryTools is the catalog of a runner: one tool per action, named
// after it, with its executor's manifest when the runner knows it (a
// *pipeline.Pipeline does; a cluster client does not, and its tools are
// announced without schemas, which its workers enforce all the same).
// Actions whose executor cannot run (missing, refused) are listed too, as
// their calls are audited refusals: a client learns why from the call.
func RegistryTools(r pipeline.Runner) Catalog {
	return func(context.Context) ([]Tool, error) {
		d, _ := r.(describer)
		var tools []Tool
		for _, a := range r.Actions() {
			var m sandbox.Manifest
			if d != nil {
				m, _ = d.ActionManifest(a)
			}
			tools = append(tools, Tool{Name: ToolName(a), Action: a, Runner: r, Manifest: m})
		}
		return tools, nil
	}
}

// describer is a runner that knows its actions' manifests.
type describer interface {
	ActionManifest(action string) (sandbox.Manifest, bool)
}

// Catalogs lists the tools of several catalogs, in order.
func Catalogs(cs ...Catalog) Catalog {
	return func(ctx context.Context) ([]Tool, error) {
		var all []Tool
		for _, c := range cs {
			tools, err := c(ctx)
			if err != nil {
				return nil, err
			}
			all = append(all, tools...)
		}
		return all, nil
	}
}
