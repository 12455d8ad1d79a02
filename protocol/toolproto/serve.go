package toolproto

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
)

// MaxRequestBytes bounds the request the tool side reads.
const MaxRequestBytes = 64 << 20

// ServeConfig is the tool side of one run.
type ServeConfig struct {
	// ToolsDir is where the tool's manifest is found (DIR/**/manifest.json).
	ToolsDir string
	// ToolID is the tool to run.
	ToolID string
	// Engine runs the tool.
	Engine runtime.Engine
	// Sink receives the run's audit record (audit.NewDiscardSink() to check
	// and drop it).
	Sink audit.Sink
	// Stdin holds the ToolRequest, read to EOF.
	Stdin io.Reader
	// Stdout receives the events, and nothing else.
	Stdout io.Writer
}

// Serve is the tool side of the protocol: it reads the request, writes
// started, runs the tool through the pipeline with the request's input as
// the payload (JS tools get context.config as the env of factories), writes
// the tool's console lines as log events, and ends with one result or error
// event, which it returns (ExitCode gives the exit code that goes with it).
// The run's timeout (Timeout) is the execution's wall-clock limit.
//
// # Errors
//
// Only when Stdout cannot be written.
func Serve(ctx context.Context, cfg ServeConfig) (Event, error) {
	s := &serving{cfg: cfg, w: NewWriter(cfg.Stdout, cfg.ToolID)}
	return s.serve(ctx)
}

type serving struct {
	cfg ServeConfig
	w   *Writer
}

func (s *serving) serve(ctx context.Context) (Event, error) {
	var m *Manifest
	cat, lookErr := Discover(s.cfg.ToolsDir)
	if lookErr == nil {
		m, lookErr = cat.Lookup(s.cfg.ToolID)
	}
	raw, readErr := io.ReadAll(io.LimitReader(s.cfg.Stdin, MaxRequestBytes+1))
	var req *Request
	reqErr := readErr
	switch {
	case readErr != nil:
		reqErr = fmt.Errorf("cannot read the request: %v", readErr)
	case len(raw) > MaxRequestBytes:
		reqErr = fmt.Errorf("the request is larger than %d bytes", MaxRequestBytes)
	default:
		req, reqErr = ParseRequest(raw)
	}
	timeout := Timeout(m, req)
	if _, err := s.w.Write(EventStarted, StartedFor(m, timeout)); err != nil {
		return Event{}, err
	}

	var merr *ManifestError
	switch {
	case errors.As(lookErr, &merr):
		return s.fail(CodeToolInvalid, false, lookErr.Error())
	case lookErr != nil:
		return s.fail(CodeToolNotFound, false, lookErr.Error())
	case reqErr != nil:
		return s.fail(CodeInvalidRequest, false, reqErr.Error())
	case req.Context.ToolID != "" && req.Context.ToolID != s.cfg.ToolID:
		return s.fail(CodeInvalidRequest, false, fmt.Sprintf("context.toolId is %q, but this is tool %q", req.Context.ToolID, s.cfg.ToolID))
	}
	if missing := m.MissingConfig(req.Context.Config); len(missing) > 0 {
		quoted := make([]string, len(missing))
		for i, k := range missing {
			quoted[i] = fmt.Sprintf("%q", k)
		}
		noun := "key"
		if len(missing) > 1 {
			noun = "keys"
		}
		return s.write(EventError, ErrorPayload{Code: CodeMissingConfig, Recoverable: true, Keys: missing,
			Message: fmt.Sprintf("context.config lacks the required %s %s", noun, strings.Join(quoted, ", "))})
	}
	return s.execute(ctx, m, req, timeout)
}

// StartedFor is the payload of the started event of a run of m (nil when
// the tool was not found) held to timeout.
func StartedFor(m *Manifest, timeout time.Duration) StartedPayload {
	p := StartedPayload{TimeoutMs: timeout.Milliseconds()}
	if m != nil {
		p.Name, p.Version, p.Runtime = m.Name, m.Version, string(m.Runtime)
	}
	return p
}

func (s *serving) execute(ctx context.Context, m *Manifest, req *Request, timeout time.Duration) (Event, error) {
	src := pipeline.ExecutorSource{Wasm: m.EntryPath()}
	if m.Runtime == RuntimeJS {
		src = pipeline.ExecutorSource{JS: m.EntryPath()}
		if len(req.Context.Config) > 0 {
			var env bytes.Buffer
			_ = json.Compact(&env, req.Context.Config)
			ctx = jstool.WithEnv(ctx, env.Bytes())
		}
	}
	reg, err := pipeline.RegistryForSource(ctx, s.cfg.Engine, src, "", runtime.Limits{TimeoutMs: timeout.Milliseconds()})
	switch {
	case errors.Is(err, os.ErrNotExist):
		return s.fail(CodeToolInvalid, false, fmt.Sprintf("%s: entry: %v", m.File, err))
	case err != nil:
		return s.fail(CodeInternalError, false, fmt.Sprintf("cannot load the tool: %v", err))
	}
	input := req.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	res, err := pipeline.New(reg, s.cfg.Sink).Execute(ctx, pipeline.ActionRequest{Action: reg.Actions()[0], Payload: input})
	if err != nil && res.Status == "" {
		return s.fail(CodeInternalError, false, err.Error())
	}
	for _, line := range logLines(res.Log) {
		if _, err := s.w.Write(EventLog, line); err != nil {
			return Event{}, err
		}
	}
	v := verdictOf(res)
	switch {
	case err != nil && ctx.Err() != nil:
		return s.write(EventError, ErrorPayload{Code: CodeCancelled, Message: "the run was cancelled: " + err.Error(), Verdict: &v})
	case err != nil:
		return s.write(EventError, ErrorPayload{Code: CodeInternalError, Message: err.Error(), Verdict: &v})
	case res.Status == pipeline.StatusSuccess:
		out := res.Output
		if len(out) == 0 {
			out = json.RawMessage("null")
		}
		return s.write(EventResult, ResultPayload{Output: out, Verdict: v})
	}
	p := errorFor(res, timeout)
	p.Verdict = &v
	return s.write(EventError, p)
}

// errorFor maps a result that is not SUCCESS to an error event: its code is
// the first reason code (the specific limit rather than LIMIT_EXCEEDED),
// and a timeout is the guardrail's RUNNER_TIMEOUT.
func errorFor(res pipeline.ActionResult, timeout time.Duration) ErrorPayload {
	codes := res.ReasonCodes
	has := func(c pipeline.ReasonCode) bool { return slices.Contains(codes, c) }
	if has(pipeline.ExecutorTimeout) {
		return ErrorPayload{Code: CodeRunnerTimeout, Message: timeoutMessage(timeout)}
	}
	code := pipeline.ExecutorException
	if len(codes) > 0 {
		code = codes[0]
	}
	if code == pipeline.LimitExceeded && len(codes) > 1 {
		code = codes[1]
	}
	// The caller can send another input, or handle the tool's own error.
	inputRefused := has(pipeline.NonJSONPayload) || has(pipeline.LimitExceeded) && strings.HasPrefix(res.Message, "payload ")
	return ErrorPayload{Code: string(code), Message: res.Message, Recoverable: res.Status == pipeline.StatusFailed || inputRefused}
}

func timeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("the tool ran longer than its timeoutMs of %d ms", timeout.Milliseconds())
}

// logLines splits a tool's console output into log payloads; a JS tool's
// console.warn and console.error lines carry the prefixes "warn: " and
// "error: ".
func logLines(log string) []LogPayload {
	if log == "" {
		return nil
	}
	var out []LogPayload
	for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
		p := LogPayload{Level: LevelInfo, Message: line}
		for _, level := range []string{LevelWarn, LevelError} {
			if rest, ok := strings.CutPrefix(line, level+": "); ok {
				p = LogPayload{Level: level, Message: rest}
			}
		}
		out = append(out, p)
	}
	return out
}

func (s *serving) fail(code string, recoverable bool, msg string) (Event, error) {
	return s.write(EventError, ErrorPayload{Code: code, Message: msg, Recoverable: recoverable})
}

func (s *serving) write(typ EventType, payload any) (Event, error) {
	return s.w.Write(typ, payload)
}
