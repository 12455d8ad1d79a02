package toolproto

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// Tools of runtime "node" are Node programs that speak the protocol
// themselves, as its reference tools do: they read the request on stdin and
// write their own events. The tool side runs such a tool as `wasmgate node`
// runs a program (jstool.Program, one governed and audited action through
// pipeline.RunProgram, its stdin the request's bytes): the events it writes
// pass through as it writes them, once each is checked against the
// protocol, and the tool side adds only what the tool could not write
// itself: an error event when a limit stopped it, when it ended without a
// result or error event, or when it wrote something that is not an event.

// serveNode runs the node tool m on the request raw (parsed as req, nil
// when it is not a ToolRequest: the tool answers that itself).
func (s *serving) serveNode(ctx context.Context, m *Manifest, raw []byte, req *Request) (Event, error) {
	events := &nodeEvents{s: s, digestOnly: s.cfg.Runtime.Results() == pipeline.ResultsDigestOnly}
	var stderr io.Writer = s.cfg.Stderr
	if events.digestOnly || stderr == nil {
		stderr = io.Discard
	}
	// What happens before the tool runs is the tool side's to say, in a
	// stream of its own.
	refuse := func(code string, recoverable bool, msg string) (Event, error) {
		if _, err := s.w.Write(EventStarted, StartedFor(m)); err != nil {
			return Event{}, err
		}
		return s.fail(code, recoverable, msg)
	}
	if req != nil {
		if req.Context.ToolID != "" && req.Context.ToolID != s.cfg.ToolID {
			return refuse(CodeInvalidRequest, false, fmt.Sprintf("context.toolId is %q, but this is tool %q", req.Context.ToolID, s.cfg.ToolID))
		}
		if missing := m.MissingConfig(req.Context.Config); len(missing) > 0 {
			return refuse(CodeConfigMissing, true, missingConfigMessage(missing))
		}
	}
	bundle, err := jstool.BundleProgram(m.EntryPath())
	var be *jstool.BundleError
	switch {
	case errors.As(err, &be), errors.Is(err, os.ErrNotExist):
		return refuse(CodeToolInvalid, false, fmt.Sprintf("%s: entry: %v", m.File, err))
	case err != nil:
		return refuse(CodeInternalError, false, fmt.Sprintf("cannot load the tool: %v", err))
	}
	var prog *jstool.Program
	err = s.cfg.Runtime.UseEngine(ctx, func(_ context.Context, engine sandbox.Engine) (err error) {
		prog, err = jstool.NewProgram(engine, bundle,
			sandbox.Manifest{ExecutorID: strings.ReplaceAll(m.ID, "-", "_"), Version: m.Version},
			// argv[1] is the entry's path in the program's virtual tree, as
			// `wasmgate node` gives it, never the host's absolute path.
			jstool.ProgramOptions{Argv: []string{"/usr/local/bin/node", bundle.Main}, Stdout: events, Stderr: stderr})
		return err
	})
	if err != nil {
		return refuse(CodeInternalError, false, err.Error())
	}
	timeout := Timeout(m, req)
	limits := sandbox.Limits{TimeoutMs: timeout.Milliseconds(), MaxPayloadBytes: MaxRequestBytes, MaxOutputBytes: DefaultMaxOutputBytes}
	res, runErr := s.cfg.Runtime.RunProgram(ctx, prog, pipeline.ProgramRequest{Action: m.ID, Stdin: raw, Limits: limits})
	events.flush()
	if s.cfg.Verdict && res.Status != "" {
		s.diagnose(FormatVerdict(res))
	}

	end, err := events.ending()
	if err != nil || end != nil {
		if err == nil && end.Type == EventError && events.bad != "" {
			// The tool's own error stands; what it wrote wrong is a
			// diagnostic.
			s.diagnose(events.bad)
		}
		return derefEvent(end), err
	}
	// The tool wrote no terminal event: the tool side ends the stream.
	if !events.started {
		if _, err := s.w.Write(EventStarted, StartedFor(m)); err != nil {
			return Event{}, err
		}
	}
	switch {
	case events.bad != "":
		return s.fail(CodeRunnerProtocolError, false, events.bad)
	case runErr != nil && ctx.Err() != nil:
		return s.fail(CodeCancelled, false, "the run was cancelled: "+runErr.Error())
	case runErr != nil:
		return s.fail(CodeInternalError, false, runErr.Error())
	case res.Status == pipeline.StatusBlocked:
		return s.w.Write(EventError, errorFor(res, nil, timeout))
	case res.ExitCode != nil:
		return s.fail(CodeToolCrash, false, fmt.Sprintf("the tool exited with status %d without a result or error event", *res.ExitCode))
	}
	return s.fail(CodeToolCrash, false, "the tool ended without a result or error event: "+res.Message)
}

func derefEvent(e *Event) Event {
	if e == nil {
		return Event{}
	}
	return *e
}

// nodeEvents is a node tool's stdout as the tool side passes it on: it cuts
// what the tool writes into lines, checks each as an event of the tool (and
// the stream's order: started first and once, nothing after a result or
// error), and writes the events that pass, as the tool wrote them, while it
// runs. The first line that does not pass is kept as bad, and nothing after
// it is passed on.
type nodeEvents struct {
	s          *serving
	digestOnly bool

	mu       sync.Mutex
	partial  []byte
	n        int // events seen
	started  bool
	terminal *Event
	bad      string
	err      error // writing the tool side's stdout
}

func (w *nodeEvents) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := w.partial[:i]
		w.partial = w.partial[i+1:]
		w.line(line)
	}
	return len(p), nil
}

// flush takes a last line the tool did not end with a newline.
func (w *nodeEvents) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(bytes.TrimSpace(w.partial)) > 0 {
		w.line(w.partial)
	}
	w.partial = nil
}

func (w *nodeEvents) line(line []byte) {
	if w.bad != "" || w.err != nil {
		return
	}
	w.n++
	ev, err := ParseEvent(line, w.s.cfg.ToolID)
	switch {
	case err != nil:
	case w.terminal != nil:
		err = fmt.Errorf("a %s event after the %s event", ev.Type, w.terminal.Type)
	case !w.started && ev.Type != EventStarted:
		err = fmt.Errorf("the first event is %s; it must be started", ev.Type)
	case w.started && ev.Type == EventStarted:
		err = errors.New("a second started event")
	}
	if err != nil {
		w.bad = fmt.Sprintf("the tool wrote an invalid event stream: event %d: %v", w.n, err)
		return
	}
	w.started = w.started || ev.Type == EventStarted
	if ev.Type.Terminal() {
		w.terminal = &ev
	}
	if w.digestOnly {
		// Nothing the tool wrote leaves the run: no log events, no result
		// payload, no error message (its code stays).
		switch ev.Type {
		case EventLog:
			return
		case EventResult:
			ev.Payload, line = []byte("{}"), nil
		case EventError:
			p, _ := ErrorOf(ev)
			p.Message = "withheld (--results digest-only)"
			ev.Payload, _ = marshal(p)
			line = nil
		}
		if ev.Type.Terminal() {
			w.terminal = &ev
		}
	}
	w.err = w.s.w.Pass(ev, line)
}

// ending is the terminal event the tool wrote (nil when none), and the
// error of writing the tool side's stdout.
func (w *nodeEvents) ending() (*Event, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.terminal, w.err
}

func missingConfigMessage(missing []string) string {
	quoted := make([]string, len(missing))
	for i, k := range missing {
		quoted[i] = fmt.Sprintf("%q", k)
	}
	noun := "key"
	if len(missing) > 1 {
		noun = "keys"
	}
	return fmt.Sprintf("context.config lacks the required %s %s", noun, strings.Join(quoted, ", "))
}
