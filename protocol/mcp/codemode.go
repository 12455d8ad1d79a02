package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/toolscript"
	"github.com/wasmgate/wasmgate/jstool"
)

// Code Mode: instead of one tool per action, the server offers one tool,
// run_script, whose argument is a TypeScript program calling the actions as
// functions, and whose description declares them. An agent then writes one
// script where it would have made many calls, and reads one result.

// runScriptTool is Code Mode's one tool.
const runScriptTool = "run_script"

// scriptName is what messages (type errors, stack frames) call the script.
const scriptName = "script.ts"

// CodeMode configures the server's one tool in Code Mode.
type CodeMode struct {
	// Runner runs the scripts: `wasmgate script`'s path, on the script's
	// text, with no tree.
	Runner toolscript.Runner
	// Described are the tools the description declares (nil: the
	// Runner's): the registry's actions and the server tools a script may
	// call, leaving out those a policy refuses.
	Described toolscript.Tools
}

// codeModeOutput is the outputSchema of run_script: the script's result
// and its console output.
const codeModeOutput = `{"type":"object","properties":{` +
	`"result":{"description":"the script's default export, awaited, as JSON (null when it exported nothing)"},` +
	`"stdout":{"type":"string","description":"console.log, info and debug, one line per call"},` +
	`"stderr":{"type":"string","description":"console.warn and console.error, one line per call"}},` +
	`"required":["result","stdout","stderr"]}`

const codeModeInput = `{"type":"object","properties":{"script":{"type":"string",` +
	`"description":"a TypeScript module: import { tools } from \"toolscript\"; … export default RESULT"}},` +
	`"required":["script"],"additionalProperties":false}`

// codeModeDefinition is run_script's tools/list entry, its description
// carrying the declarations of described.
func codeModeDefinition(described toolscript.Tools) (*sdk.Tool, error) {
	decls, err := toolscript.Declarations(described)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("Runs one TypeScript program (a toolscript) in wasmgate's sandbox and returns its result. ")
	b.WriteString("Write one script that does the whole task instead of calling tools one by one: ")
	b.WriteString("import { tools } from \"toolscript\", await the calls (each is a governed, audited action; a call that fails or is refused rejects with an Error carrying status and reasonCodes), ")
	b.WriteString("and `export default` the result (JSON). The script is type-checked first (strict, ES2023; a type error runs nothing); ")
	b.WriteString("it has no network, file system, environment or timers, and imports nothing but \"toolscript\" and Node's built-ins. ")
	b.WriteString("console.log goes to stdout, console.error to stderr. The tools, declared:\n\n```ts\n")
	b.Write(bytes.TrimSpace(decls[jstool.DeclarationsFile]))
	b.WriteString("\n```\n")
	return &sdk.Tool{
		Name:         runScriptTool,
		Title:        "Run a toolscript",
		Description:  b.String(),
		InputSchema:  json.RawMessage(codeModeInput),
		OutputSchema: json.RawMessage(codeModeOutput),
		// No hints: the script is as pure as the tools it calls, and an
		// MCP server's tools among them reach the world.
		Annotations: &sdk.ToolAnnotations{Title: "Run a toolscript"},
	}, nil
}

// refreshCodeMode offers run_script, or replaces it when its declarations
// changed (the registry, or a server's tools).
func (s *Server) refreshCodeMode() error {
	cm := s.cfg.CodeMode
	described := cm.Described
	if described == nil {
		described = cm.Runner.Tools
	}
	if described == nil {
		described = cm.Runner.Host
	}
	def, err := codeModeDefinition(described)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(def)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.tools[runScriptTool]; ok && old.key == string(raw) {
		return nil
	}
	s.sdk.AddTool(def, s.runScript)
	s.tools[runScriptTool] = offered{tool: Tool{Name: runScriptTool}, key: string(raw)}
	return nil
}

// scriptMeta is run_script's verdict beside its result, in _meta under
// "wasmgate/script": how far the script got, how many tool calls it made
// and the trace id their audit records share.
type scriptMeta struct {
	// Stage is "bundle", "check" or "run": where the script stopped, or
	// "run" for one that ran to its end.
	Stage string `json:"stage"`
	// Outcome is the run's (completed, failed, fuel_exhausted, …).
	Outcome string `json:"outcome,omitempty"`
	Calls   int    `json:"calls"`
	TraceID string `json:"trace_id,omitempty"`
}

// runScript is run_script's handler: one script, run as `wasmgate script`
// runs a file.
func (s *Server) runScript(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args struct {
		Script *string `json:"script"`
	}
	if len(bytes.TrimSpace(req.Params.Arguments)) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return errorResult(fmt.Sprintf(`run_script: the arguments are not {"script": "…"}: %v`, err), nil), nil
		}
	}
	if args.Script == nil || strings.TrimSpace(*args.Script) == "" {
		return errorResult(`run_script: no script: give {"script": "import { tools } from \"toolscript\"; … export default RESULT"}`, nil), nil
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

	lim := s.cfg.CodeMode.Runner.Limits.WithDefaults(jstool.ScriptLimits())
	stdout := &boundedBuffer{max: int(lim.MaxOutputBytes)}
	stderr := &boundedBuffer{max: int(lim.MaxOutputBytes)}
	res, err := s.cfg.CodeMode.Runner.Run(ctx, toolscript.Script{Name: scriptName, Text: *args.Script}, stdout, stderr)
	meta := scriptMeta{Stage: "run", Calls: res.Calls, TraceID: res.TraceID}
	var be *jstool.BundleError
	switch {
	case errors.As(err, &be):
		meta.Stage = "bundle"
		return scriptError("the script does not bundle, nothing was run: "+strings.Join(be.Problems, "; "), meta, nil, nil), nil
	case err != nil && !res.Ran:
		// The check could not run (a file outside the script, a bound).
		meta.Stage = "check"
		return scriptError(fmt.Sprintf("the script was not run: %v", err), meta, nil, nil), nil
	case err != nil:
		// The client cancelled, --max-execution-time passed, or the
		// engine failed.
		return scriptError(fmt.Sprintf("the script was stopped: %v", err), meta, stdout, stderr), nil
	case len(res.TypeErrors) > 0:
		meta.Stage = "check"
		lines := make([]string, len(res.TypeErrors))
		for i, d := range res.TypeErrors {
			lines[i] = d.String()
		}
		noun := "errors"
		if len(lines) == 1 {
			noun = "error"
		}
		return scriptError(fmt.Sprintf("%d type %s, nothing was run:\n%s", len(lines), noun, strings.Join(lines, "\n")), meta, nil, nil), nil
	}
	out := res.Outcome
	meta.Outcome = out.Kind.String()
	s.cfg.Logger.Info("mcp: run_script", "outcome", meta.Outcome, "calls", res.Calls, "trace_id", res.TraceID)
	switch out.Kind {
	case sandbox.Completed:
	case sandbox.Failed:
		return scriptError("the script threw: "+out.Message, meta, stdout, stderr), nil
	case sandbox.OutputNotJSON:
		return scriptError("the script's result has no JSON form: "+out.Message, meta, stdout, stderr), nil
	default:
		return scriptError(toolscript.Stopped(out, res.Limits, func(name string) string { return name }), meta, stdout, stderr), nil
	}
	result := json.RawMessage(out.Output)
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	structured, err := json.Marshal(struct {
		Result json.RawMessage `json:"result"`
		Stdout string          `json:"stdout"`
		Stderr string          `json:"stderr"`
	}{result, stdout.String(), stderr.String()})
	if err != nil {
		return nil, err
	}
	return &sdk.CallToolResult{
		Meta:              sdk.Meta{"wasmgate/script": meta},
		Content:           []sdk.Content{&sdk.TextContent{Text: string(structured)}},
		StructuredContent: json.RawMessage(structured),
	}, nil
}

// scriptError is an isError result saying why, followed by the console
// output the script wrote before it stopped.
func scriptError(why string, meta scriptMeta, stdout, stderr *boundedBuffer) *sdk.CallToolResult {
	text := why
	if stdout != nil && stdout.Len() > 0 {
		text += "\n\nstdout:\n" + stdout.String()
	}
	if stderr != nil && stderr.Len() > 0 {
		text += "\n\nstderr:\n" + stderr.String()
	}
	return errorResult(text, sdk.Meta{"wasmgate/script": meta})
}

// boundedBuffer keeps the first max bytes written to it, so that a
// script's console cannot grow a result without end; it notes what it
// dropped.
type boundedBuffer struct {
	bytes.Buffer
	max     int
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	room := max(b.max-b.Buffer.Len(), 0)
	if room < len(p) {
		b.dropped += len(p) - room
		p = p[:room]
	}
	b.Buffer.Write(p)
	return n, nil
}

func (b *boundedBuffer) String() string {
	if b.dropped > 0 {
		return b.Buffer.String() + fmt.Sprintf("… (%d more bytes not kept)", b.dropped)
	}
	return b.Buffer.String()
}
