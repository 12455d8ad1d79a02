package toolproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/py"
)

// MaxRequestBytes bounds the request the tool side keeps; the rest of a
// longer one is read and dropped.
const MaxRequestBytes = 64 << 20

// ServeConfig is the tool side of one run.
type ServeConfig struct {
	// ToolsDir is where the tool's manifest is found (DIR/**/manifest.json).
	ToolsDir string
	// ToolID is the tool to run.
	ToolID string
	// Runtime runs the tool and audits the run (a *wasmgate.Runtime, whose
	// records may be checked and dropped). The tool runs on a registry of
	// its own (Host.ExecuteOn), since the request sets its timeout. The
	// Runtime's results mode is what the events carry: with
	// pipeline.ResultsDigestOnly, nothing the tool wrote leaves the run:
	// the result payload is {"output_digest": …} ({} for no output), no
	// log events are written, an error's message never quotes the tool
	// (its code stays), and no stack or stderr reaches Stderr.
	Runtime pipeline.Host
	// Stdin holds the ToolRequest, read to EOF.
	Stdin io.Reader
	// Stdout receives the events, and nothing else.
	Stdout io.Writer
	// Stderr receives diagnostics, as raw text: a Wasm tool's stderr, the
	// stack of an exception a JS tool threw, and with Verdict the verdict.
	// nil discards them.
	Stderr io.Writer
	// Verdict writes the run's governance verdict (FormatVerdict) to
	// Stderr too, for a person; programs read it from the audit log.
	Verdict bool
}

// Serve is the tool side of the protocol. It writes started, reads the
// request to EOF, runs the tool through the pipeline with the request's
// input as the payload (JS tools get context.config as the env of
// factories), writes a JS tool's console calls as log events while the tool
// runs, and ends with one result or error event, which it returns (ExitCode
// gives the exit code that goes with it). The run's timeout (Timeout) is
// the execution's wall-clock limit. A tool of runtime "node" writes its own
// events instead, which Serve checks and passes on (see serveNode).
//
// # Errors
//
// Only when Stdout cannot be written.
func Serve(ctx context.Context, cfg ServeConfig) (Event, error) {
	s := &serving{cfg: cfg, w: NewWriter(cfg.Stdout, cfg.ToolID)}
	return s.serve(ctx)
}

// Refuse is the tool side of a run that cannot happen because the tool side
// itself could not be set up (its audit log cannot be opened, no engine can
// be made): it writes started, reads the request to EOF as the protocol
// asks, and ends with an error event of code, which it returns.
//
// # Errors
//
// Only when Stdout cannot be written.
func Refuse(cfg ServeConfig, code string, recoverable bool, msg string) (Event, error) {
	s := &serving{cfg: cfg, w: NewWriter(cfg.Stdout, cfg.ToolID)}
	m, _ := s.lookup()
	if _, err := s.w.Write(EventStarted, StartedFor(m)); err != nil {
		return Event{}, err
	}
	_, _ = s.readRequest()
	return s.fail(code, recoverable, msg)
}

type serving struct {
	cfg ServeConfig
	w   *Writer

	// mu orders the log events the tool writes as it runs with the others.
	mu sync.Mutex
	// logging is true while the tool runs and may write log events.
	logging bool
	logErr  error
}

func (s *serving) lookup() (*Manifest, error) {
	cat, err := Discover(s.cfg.ToolsDir)
	if err != nil {
		return nil, err
	}
	return cat.Lookup(s.cfg.ToolID)
}

// readRequest reads stdin to EOF, as the protocol asks, keeping at most
// MaxRequestBytes, and parses it.
func (s *serving) readRequest() (*Request, error) {
	raw, err := s.readRaw()
	if err != nil {
		return nil, err
	}
	return ParseRequest(raw)
}

// readRaw reads stdin to EOF, keeping at most MaxRequestBytes.
func (s *serving) readRaw() ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(s.cfg.Stdin, MaxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read the request: %v", err)
	}
	if len(raw) > MaxRequestBytes {
		_, _ = io.Copy(io.Discard, s.cfg.Stdin)
		return nil, fmt.Errorf("the request is larger than %d bytes", MaxRequestBytes)
	}
	return raw, nil
}

func (s *serving) serve(ctx context.Context) (Event, error) {
	m, lookErr := s.lookup()
	if lookErr == nil && m.Runtime == RuntimeNode {
		// A node tool writes its own events, started first.
		raw, err := s.readRaw()
		if err != nil {
			if _, err := s.w.Write(EventStarted, StartedFor(m)); err != nil {
				return Event{}, err
			}
			return s.fail(CodeInvalidRequest, false, err.Error())
		}
		req, _ := ParseRequest(raw)
		return s.serveNode(ctx, m, raw, req)
	}
	// started comes before anything that takes time: reading stdin waits
	// for the runner, running waits for the tool.
	if _, err := s.w.Write(EventStarted, StartedFor(m)); err != nil {
		return Event{}, err
	}
	req, reqErr := s.readRequest()

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
		return s.fail(CodeConfigMissing, true, missingConfigMessage(missing))
	}
	return s.execute(ctx, m, req, Timeout(m, req))
}

// StartedFor is the payload of the started event of a run of m (nil when
// no manifest declares the tool).
func StartedFor(m *Manifest) StartedPayload {
	if m == nil {
		return StartedPayload{}
	}
	return StartedPayload{Meta: Meta{Name: m.Name, Version: m.Version, Runtime: string(m.Runtime)}}
}

func (s *serving) execute(ctx context.Context, m *Manifest, req *Request, timeout time.Duration) (Event, error) {
	var src pipeline.ExecutorSource
	var env json.RawMessage // a JS tool's factory gets context.config, audited as env_digest
	switch m.Runtime {
	case RuntimeJS:
		src = pipeline.ExecutorSource{JS: m.EntryPath()}
		env = req.Context.Config
	case RuntimePython:
		src = pipeline.ExecutorSource{Python: m.EntryPath(), PythonPath: m.PythonPathDirs(), Class: m.PythonClass}
	default:
		src = pipeline.ExecutorSource{Wasm: m.EntryPath()}
	}
	var reg *pipeline.Registry
	err := s.cfg.Runtime.UseEngine(ctx, func(ctx context.Context, engine sandbox.Engine) (err error) {
		reg, err = pipeline.RegistryForSource(ctx, engine, src, "", sandbox.Limits{TimeoutMs: timeout.Milliseconds()}, js.Kind(), py.Kind())
		return err
	})
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

	// A JS tool's console calls become log events as they are made; what
	// it threw becomes the error event's code.
	var thrown *jstool.Exception
	digestOnly := s.cfg.Runtime.Results() == pipeline.ResultsDigestOnly
	observer := jstool.Observer{Log: s.log, Threw: func(e jstool.Exception) { thrown = &e }}
	if digestOnly {
		observer.Log = nil
	}
	ctx = jstool.WithObserver(ctx, observer)
	s.setLogging(true)
	res, err := s.cfg.Runtime.ExecuteOn(ctx, pipeline.ActionRequest{Action: reg.Actions()[0], Payload: input, Env: env}, reg)
	if logErr := s.setLogging(false); logErr != nil {
		return Event{}, logErr
	}
	if err != nil && res.Status == "" {
		if errors.Is(err, pipeline.ErrInvalidRequest) {
			// context.config that cannot be digested (a key twice) cannot
			// be audited: the caller's to fix.
			return s.fail(CodeInvalidRequest, true, err.Error())
		}
		return s.fail(CodeInternalError, false, err.Error())
	}
	if (m.Runtime == RuntimeWasm || m.Runtime == RuntimePython) && res.Log != "" {
		// A Wasm tool's stderr, and what a Python tool prints, is what a
		// tool's stderr is for: diagnostics.
		s.diagnose(res.Log)
	}
	if thrown != nil && digestOnly {
		// Its code and recoverable flag are the protocol's; its text is
		// the tool's.
		thrown.Name, thrown.Message, thrown.Description = "", res.Message, ""
	}
	if thrown != nil && strings.Contains(thrown.Description, "\n") {
		s.diagnose(thrown.Description) // the stack goes to stderr
	}
	if s.cfg.Verdict {
		s.diagnose(FormatVerdict(res))
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return s.fail(CodeCancelled, false, "the run was cancelled: "+err.Error())
	case err != nil:
		return s.fail(CodeInternalError, false, err.Error())
	case res.Status == pipeline.StatusSuccess && digestOnly:
		payload := json.RawMessage("{}")
		if res.OutputDigest != nil {
			payload, _ = json.Marshal(map[string]string{"output_digest": *res.OutputDigest})
		}
		return s.w.Write(EventResult, payload)
	case res.Status == pipeline.StatusSuccess:
		return s.w.Write(EventResult, ResultPayload(res.Output))
	}
	return s.w.Write(EventError, errorFor(res, thrown, timeout))
}

// log writes one console call of the tool as a log event, while the tool
// runs (a late call, from an execution abandoned at its deadline, is
// dropped).
func (s *serving) log(e jstool.LogEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.logging || s.logErr != nil {
		return
	}
	if len(e.Data) > 0 && !json.Valid(e.Data) {
		// The engine's JSON.stringify made it, so this does not happen; if
		// it did, the event would not encode: keep it as text.
		e.Message, e.Data = e.Message+" "+string(e.Data), nil
	}
	_, s.logErr = s.w.Write(EventLog, LogPayload{Level: e.Level, Message: e.Message, Data: e.Data})
}

// setLogging opens or closes the log, returning the error of writing it.
func (s *serving) setLogging(on bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logging = on
	return s.logErr
}

func (s *serving) diagnose(text string) {
	if s.cfg.Stderr == nil {
		return
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, _ = io.WriteString(s.cfg.Stderr, text)
}

// errorFor maps a result that is not SUCCESS to an error event. An
// exception a JS tool threw is the tool's own error: an Error with a
// string code gives that code, and its recoverable flag when that is a
// boolean (else true); any other throw is EXECUTOR_EXCEPTION, recoverable. A governance refusal keeps its reason
// code (the specific limit rather than LIMIT_EXCEEDED).
func errorFor(res pipeline.ActionResult, thrown *jstool.Exception, timeout time.Duration) ErrorPayload {
	if res.Status == pipeline.StatusFailed && thrown != nil {
		if thrown.Code != "" {
			recoverable := thrown.Recoverable == nil || *thrown.Recoverable
			return ErrorPayload{Code: thrown.Code, Message: thrown.Message, Recoverable: recoverable}
		}
		msg := thrown.Message
		if thrown.Name != "" {
			msg = thrown.Name + ": " + msg
		}
		return ErrorPayload{Code: string(pipeline.ExecutorException), Message: msg, Recoverable: true}
	}
	codes := res.ReasonCodes
	has := func(c pipeline.ReasonCode) bool { return slices.Contains(codes, c) }
	if has(pipeline.ExecutorTimeout) {
		return ErrorPayload{Code: string(pipeline.ExecutorTimeout), Message: timeoutMessage(timeout)}
	}
	code := pipeline.ExecutorException
	if len(codes) > 0 {
		code = codes[0]
	}
	if code == pipeline.LimitExceeded && len(codes) > 1 {
		code = codes[1]
	}
	// The caller can send another input, or handle the tool's own error;
	// an output that breaks the tool's own schema is the tool's bug.
	inputRefused := res.Failure == pipeline.FailureInput
	toolBug := res.Failure == pipeline.FailureOutputInvalid
	return ErrorPayload{Code: string(code), Message: res.Message, Recoverable: res.Status == pipeline.StatusFailed && !toolBug || inputRefused}
}

func timeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("the tool ran longer than its timeoutMs of %d ms", timeout.Milliseconds())
}

func (s *serving) fail(code string, recoverable bool, msg string) (Event, error) {
	return s.w.Write(EventError, ErrorPayload{Code: code, Message: msg, Recoverable: recoverable})
}
