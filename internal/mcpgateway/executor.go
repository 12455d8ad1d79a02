package mcpgateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// toolExecutor is one server tool as a pipeline.Executor: the pipeline
// checks a call's arguments (limits, the tool's input schema), writes the
// attempt record, runs Execute, checks the result (the output schema) and
// writes the verdict, as for any executor.
type toolExecutor struct {
	g        *Gateway
	s        *server
	tool     Tool
	manifest sandbox.Manifest
	digest   string
}

var _ pipeline.Executor = (*toolExecutor)(nil)

func newToolExecutor(g *Gateway, s *server, t Tool) *toolExecutor {
	return &toolExecutor{
		g: g, s: s, tool: t,
		manifest: sandbox.Manifest{
			ExecutorID:   pipeline.ExecutorIDFrom("mcp_" + t.Server + "_" + t.Name),
			Version:      s.version,
			Capabilities: []string{CallCapability},
			Limits:       sandbox.Limits{TimeoutMs: g.policy.CallTimeout.Milliseconds()},
			Description:  t.Description,
			InputSchema:  t.InputSchema,
			OutputSchema: resultSchema(t),
		},
		digest: definitionDigest(t),
	}
}

// callToolResult is the schema of what a tool without an outputSchema
// gives a script, its CallToolResult: loose enough for every content type,
// so that the pipeline's check of it never fails a call, and precise enough
// to type result.content[i].text in a script.
const callToolResult = `{"type":"object","required":["content"],"properties":{` +
	`"content":{"type":"array","items":{"type":"object","required":["type"],"properties":{` +
	`"type":{"type":"string"},"text":{"type":"string"},"data":{"type":"string"},"mimeType":{"type":"string"},"uri":{"type":"string"}}}},` +
	`"structuredContent":{},"isError":{"type":"boolean"}}}`

// resultSchema is the output schema of a tool's executor: the tool's own,
// or that of a CallToolResult.
func resultSchema(t Tool) json.RawMessage {
	if t.OutputSchema != nil {
		return t.OutputSchema
	}
	return json.RawMessage(callToolResult)
}

// definitionDigest identifies a tool's definition as the audit's
// module_digest: what was called is the server's tool of that name with
// those schemas (the server's code is not ours to digest).
func definitionDigest(t Tool) string {
	def, _ := json.Marshal(struct {
		Server       string          `json:"server"`
		Tool         string          `json:"tool"`
		InputSchema  json.RawMessage `json:"input_schema"`
		OutputSchema json.RawMessage `json:"output_schema"`
	}{t.Server, t.Name, orNull(t.InputSchema), orNull(t.OutputSchema)})
	if c, err := audit.Canonicalize(def); err == nil {
		def = c.Bytes
	}
	return audit.Digest(def)
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// Manifest implements pipeline.Executor.
func (e *toolExecutor) Manifest() sandbox.Manifest { return e.manifest }

// ModuleDigest implements pipeline.Executor.
func (e *toolExecutor) ModuleDigest() string { return e.digest }

// Execute implements pipeline.Executor: one tools/call through the
// server's session, within the call's timeout and the script's budget.
func (e *toolExecutor) Execute(ctx context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	who := fmt.Sprintf("MCP server %q, tool %q", e.tool.Server, e.tool.Name)
	if b, ok := ctx.Value(budgetKey{}).(*budget); ok {
		if !b.take(e.g.policy.MaxCalls) {
			// The budget is the gateway's fuel: a deterministic count,
			// so the verdict is LIMIT_EXCEEDED, FUEL_EXHAUSTED.
			return sandbox.Outcome{Kind: sandbox.FuelExhausted, Message: fmt.Sprintf(
				"%s: not called: the script has made its %d MCP gateway calls (raise --mcp-max-calls)", who, e.g.policy.MaxCalls)}, nil
		}
	}
	timeout := time.Duration(in.Limits.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = e.g.policy.CallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := e.s.session.CallTool(cctx, &mcp.CallToolParams{Name: e.tool.Name, Arguments: json.RawMessage(in.Bytes)})
	switch {
	case err != nil && ctx.Err() != nil:
		return sandbox.Outcome{}, fmt.Errorf("%s: %w", who, ctx.Err())
	case err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded):
		return sandbox.Outcome{Kind: sandbox.Timeout, Message: fmt.Sprintf("%s: no answer within %s (--mcp-timeout)", who, timeout)}, nil
	case err != nil:
		return sandbox.Outcome{Kind: sandbox.Failed, Message: fmt.Sprintf("%s: %v", who, err)}, nil
	case res.IsError:
		return sandbox.Outcome{Kind: sandbox.Failed, Message: fmt.Sprintf("%s: %s", who, resultText(res))}, nil
	}
	var out []byte
	if e.tool.OutputSchema != nil {
		if res.StructuredContent == nil {
			return sandbox.Outcome{Kind: sandbox.Failed, Message: fmt.Sprintf("%s: the tool declares an outputSchema but returned no structuredContent", who)}, nil
		}
		out, err = json.Marshal(res.StructuredContent)
	} else {
		out, err = json.Marshal(res)
	}
	if err != nil {
		return sandbox.Outcome{Kind: sandbox.OutputNotJSON, Message: fmt.Sprintf("%s: %v", who, err)}, nil
	}
	return sandbox.Outcome{Kind: sandbox.Completed, Output: out}, nil
}

// resultText is what a tool said in an error result: its text contents.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		return "the tool reported an error (isError) without a text"
	}
	return strings.Join(parts, "\n")
}

type budgetKey struct{}

// budget counts one script's calls to the servers.
type budget struct {
	mu   sync.Mutex
	made int
}

func (b *budget) take(max int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.made >= max {
		return false
	}
	b.made++
	return true
}

// WithBudget returns a context carrying a fresh call budget: the calls the
// gateway's executors run under it (a script's, whose tool calls all take
// this context) draw from it, and the first past Policy.MaxCalls is
// refused BLOCKED with LIMIT_EXCEEDED, FUEL_EXHAUSTED, unsent. Calls
// under a context without one are not counted: each is a request its
// front governs on its own.
func WithBudget(ctx context.Context) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{})
}

// CallsMade is how many calls were sent to the servers under ctx's budget
// (0 without one).
func CallsMade(ctx context.Context) int {
	b, ok := ctx.Value(budgetKey{}).(*budget)
	if !ok {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.made
}
