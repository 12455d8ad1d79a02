package toolproto

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The protocol's guardrails on a tool side's output.
const (
	// DefaultMaxOutputBytes bounds what a tool side writes, stdout and
	// stderr together: 10 MiB.
	DefaultMaxOutputBytes = 10 << 20
	// DefaultMaxEvents bounds the events a tool side writes.
	DefaultMaxEvents = 10_000
)

// Guardrails bound a tool side. A zero field takes its default.
type Guardrails struct {
	// Timeout bounds the whole run, from starting the tool side to its
	// exit. Zero means Timeout(manifest, request).
	Timeout time.Duration
	// MaxOutputBytes bounds the bytes the tool side writes to stdout and
	// stderr together (DefaultMaxOutputBytes).
	MaxOutputBytes int64
	// MaxEvents bounds the events the tool side writes (DefaultMaxEvents).
	MaxEvents int
}

// EmitFunc receives the events of a run in order: the tool side's own
// lines as it wrote them, and the runner's. line is the event's encoding,
// without the newline.
type EmitFunc func(ev Event, line []byte) error

// RunConfig is the runner side of one run.
type RunConfig struct {
	// ToolsDir is where the tool's manifest is found, for its timeoutMs and
	// the started event the runner writes when the tool side could not.
	// Empty skips discovery.
	ToolsDir string
	// ToolID is the tool that runs.
	ToolID string
	// Request is the ToolRequest, given to the tool side's stdin as it is.
	Request []byte
	// Command returns the tool side, not yet started (e.g. `wasmgate tool
	// serve-stdio ID`); Run sets its stdin, stdout and stderr.
	Command func() *exec.Cmd
	// Stderr receives the tool side's stderr; nil discards it.
	Stderr io.Writer
	// Guardrails bound the tool side.
	Guardrails Guardrails
	// Emit receives the events.
	Emit EmitFunc
}

// Run is the runner side of the protocol: it starts the tool side with the
// request on its stdin, checks every line it writes (an event of the right
// tool, started first, exactly one result or error last), passes the
// events to Emit, and returns the terminal event (ExitCode gives the exit
// code that goes with it).
//
// When the tool side crosses a guardrail (the timeout, MaxOutputBytes,
// MaxEvents) the runner kills it and ends the stream with its own error
// event, RUNNER_TIMEOUT, RUNNER_MAX_OUTPUT_BYTES or RUNNER_MAX_EVENTS; a
// stream that breaks the protocol ends with RUNNER_PROTOCOL_ERROR, a tool
// side that exits without a terminal event with TOOL_CRASHED, and a
// cancelled ctx with CANCELLED. None of them is recoverable. The runner
// writes a started event first when the tool side did not get to.
//
// The tool side's terminal event is held back until its stdout closes, so
// that a stream with anything after it ends in RUNNER_PROTOCOL_ERROR
// instead. The outcome is the terminal event's, whatever the tool side's
// exit status after it.
//
// # Errors
//
// The error of Emit, after which the tool side is killed.
func Run(ctx context.Context, cfg RunConfig) (Event, error) {
	r := &running{cfg: cfg, guard: cfg.Guardrails}
	var m *Manifest
	if cfg.ToolsDir != "" {
		if cat, err := Discover(cfg.ToolsDir); err == nil {
			m, _ = cat.Lookup(cfg.ToolID)
		}
	}
	if r.guard.Timeout <= 0 {
		req, _ := ParseRequest(cfg.Request)
		r.guard.Timeout = Timeout(m, req)
	}
	if r.guard.MaxOutputBytes <= 0 {
		r.guard.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if r.guard.MaxEvents <= 0 {
		r.guard.MaxEvents = DefaultMaxEvents
	}
	r.startedPayload = StartedFor(m, r.guard.Timeout)
	return r.run(ctx)
}

type running struct {
	cfg            RunConfig
	guard          Guardrails
	startedPayload StartedPayload

	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd.Wait returned waitErr
	waitErr  error
	events   int
	started  bool
	terminal *Event
	termLine []byte
	stderr   stderrTail
}

// chunk is what the stdout reader hands the runner: a line, or the news
// that the output budget is spent.
type chunk struct {
	line     []byte
	overflow bool
}

func (r *running) run(ctx context.Context) (Event, error) {
	timer := time.NewTimer(r.guard.Timeout)
	defer timer.Stop()

	r.cmd = r.cfg.Command()
	r.cmd.Stdin = bytes.NewReader(r.cfg.Request)
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return r.fail(CodeInternalError, "cannot start the tool side: "+err.Error())
	}
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		return r.fail(CodeInternalError, "cannot start the tool side: "+err.Error())
	}
	if err := r.cmd.Start(); err != nil {
		return r.fail(CodeInternalError, "cannot start the tool side: "+err.Error())
	}

	budget := &outputBudget{max: r.guard.MaxOutputBytes}
	stop := make(chan struct{})
	defer close(stop)
	lines := make(chan chunk)
	go readLines(stdout, budget, lines, stop)
	stderrOver := make(chan struct{}, 1)
	stderrDone := make(chan struct{})
	go r.copyStderr(stderr, budget, stderrOver, stderrDone)

	for lines != nil || stderrDone != nil {
		select {
		case c, ok := <-lines:
			switch {
			case !ok:
				lines = nil
			case c.overflow:
				return r.kill(CodeRunnerMaxOutputBytes, r.overflowMessage())
			default:
				if ev, end, err := r.handle(c.line); end || err != nil {
					r.stop()
					return ev, err
				}
			}
		case <-stderrDone:
			stderrDone = nil
		case <-stderrOver:
			return r.kill(CodeRunnerMaxOutputBytes, r.overflowMessage())
		case <-timer.C:
			return r.kill(CodeRunnerTimeout, timeoutMessage(r.guard.Timeout))
		case <-ctx.Done():
			return r.kill(CodeCancelled, "the run was cancelled: "+ctx.Err().Error())
		}
	}

	// Both streams are closed: the tool side is exiting.
	select {
	case <-r.wait():
	case <-timer.C:
		return r.kill(CodeRunnerTimeout, timeoutMessage(r.guard.Timeout))
	case <-ctx.Done():
		return r.kill(CodeCancelled, "the run was cancelled: "+ctx.Err().Error())
	}
	if r.terminal != nil {
		if err := r.cfg.Emit(*r.terminal, r.termLine); err != nil {
			return *r.terminal, err
		}
		return *r.terminal, nil
	}
	status := "exited with status 0"
	var exit *exec.ExitError
	switch {
	case errors.As(r.waitErr, &exit) && exit.ExitCode() >= 0:
		status = fmt.Sprintf("exited with status %d", exit.ExitCode())
	case r.waitErr != nil:
		status = "ended: " + r.waitErr.Error() // e.g. "signal: killed"
	}
	msg := "the tool side " + status + " without a result or error event"
	if tail := r.stderr.String(); tail != "" {
		msg += "; its stderr ends: " + tail
	}
	return r.fail(CodeToolCrashed, msg)
}

// handle checks and passes on one line of the tool side's stdout. end says
// the run is over (with the returned event).
func (r *running) handle(line []byte) (ev Event, end bool, err error) {
	r.events++
	if r.events > r.guard.MaxEvents {
		r.stop()
		ev, err := r.fail(CodeRunnerMaxEvents, fmt.Sprintf("the tool side wrote more than %d events (maxEvents)", r.guard.MaxEvents))
		return ev, true, err
	}
	ev, perr := ParseEvent(line, r.cfg.ToolID)
	switch {
	case perr != nil:
	case r.terminal != nil:
		perr = fmt.Errorf("a %s event after the %s event", ev.Type, r.terminal.Type)
	case !r.started && ev.Type != EventStarted:
		perr = fmt.Errorf("the first event is %s; it must be started", ev.Type)
	case r.started && ev.Type == EventStarted:
		perr = errors.New("a second started event")
	}
	if perr != nil {
		r.stop()
		ev, err := r.fail(CodeRunnerProtocolError, fmt.Sprintf("event %d: %v", r.events, perr))
		return ev, true, err
	}
	if ev.Type.Terminal() {
		r.terminal, r.termLine = &ev, bytes.Clone(line)
		return ev, false, nil
	}
	r.started = true
	return ev, false, r.cfg.Emit(ev, line)
}

// ParseEvent checks line as an event of toolID: a JSON object with a known
// type, an RFC 3339 ts, the tool's id, and an object payload (for an error
// event: with a string code and a boolean recoverable).
func ParseEvent(line []byte, toolID string) (Event, error) {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("not a JSON event: %q", truncate(string(line), 80))
	}
	switch ev.Type {
	case EventStarted, EventLog, EventResult, EventError:
	default:
		return Event{}, fmt.Errorf("unknown event type %q", ev.Type)
	}
	if _, err := time.Parse(time.RFC3339Nano, ev.Ts); err != nil {
		return Event{}, fmt.Errorf("ts %q is not an RFC 3339 timestamp", ev.Ts)
	}
	if ev.ToolID != toolID {
		return Event{}, fmt.Errorf("toolId is %q, not %q", ev.ToolID, toolID)
	}
	if p := bytes.TrimSpace(ev.Payload); len(p) == 0 || p[0] != '{' {
		return Event{}, fmt.Errorf("the %s event's payload is not a JSON object", ev.Type)
	}
	if ev.Type == EventError {
		var p struct {
			Code        *string `json:"code"`
			Recoverable *bool   `json:"recoverable"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil || p.Code == nil || *p.Code == "" || p.Recoverable == nil {
			return Event{}, errors.New("the error event's payload lacks a code or recoverable")
		}
	}
	return ev, nil
}

func (r *running) overflowMessage() string {
	return fmt.Sprintf("the tool side wrote more than %d bytes (maxOutputBytes)", r.guard.MaxOutputBytes)
}

// kill ends the tool side and the stream with the runner's error.
func (r *running) kill(code, msg string) (Event, error) {
	r.stop()
	return r.fail(code, msg)
}

// stop kills the tool side, if it still runs, and reaps it.
func (r *running) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.wait()
}

// wait reaps the tool side once; the channel is closed when it has exited.
func (r *running) wait() <-chan struct{} {
	if r.exited == nil {
		r.exited = make(chan struct{})
		go func() {
			r.waitErr = r.cmd.Wait()
			close(r.exited)
		}()
	}
	return r.exited
}

// fail ends the stream with an error event of the runner, after the
// started event the tool side did not write.
func (r *running) fail(code, msg string) (Event, error) {
	if !r.started {
		r.started = true
		if err := r.emit(EventStarted, r.startedPayload); err != nil {
			return Event{}, err
		}
	}
	ev, line, err := newEvent(EventError, r.cfg.ToolID, ErrorPayload{Code: code, Message: msg})
	if err != nil {
		return Event{}, err
	}
	return ev, r.cfg.Emit(ev, line)
}

func (r *running) emit(typ EventType, payload any) error {
	ev, line, err := newEvent(typ, r.cfg.ToolID, payload)
	if err != nil {
		return err
	}
	return r.cfg.Emit(ev, line)
}

// outputBudget counts the bytes a tool side writes on both streams.
type outputBudget struct {
	max  int64
	used atomic.Int64
}

// take counts n more bytes and reports whether they fit.
func (b *outputBudget) take(n int) bool { return b.used.Add(int64(n)) <= b.max }

// readLines sends the lines of r (without their newlines; a last line
// without one too) until EOF, or until the budget is spent.
func readLines(r io.Reader, budget *outputBudget, out chan<- chunk, stop <-chan struct{}) {
	defer close(out)
	send := func(c chunk) bool {
		select {
		case out <- c:
			return true
		case <-stop:
			return false
		}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(part) > 0 {
			if !budget.take(len(part)) {
				send(chunk{overflow: true})
				return
			}
			line = append(line, part...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 && (err == nil || errors.Is(err, io.EOF)) {
			l := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			if !send(chunk{line: l}) {
				return
			}
			line = nil
		}
		if err != nil {
			return
		}
	}
}

// copyStderr passes the tool side's stderr on, keeping its tail for a
// crash's message. It signals over, and stops, when the budget is spent;
// it closes done at EOF.
func (r *running) copyStderr(stderr io.Reader, budget *outputBudget, over chan<- struct{}, done chan<- struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := stderr.Read(buf)
		if n > 0 {
			if !budget.take(n) {
				over <- struct{}{}
				return
			}
			r.stderr.keep(buf[:n])
			if r.cfg.Stderr != nil {
				_, _ = r.cfg.Stderr.Write(buf[:n])
			}
		}
		if err != nil {
			close(done)
			return
		}
	}
}

// stderrTail keeps the last bytes of the tool side's stderr.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

const stderrTailBytes = 1024

func (t *stderrTail) keep(p []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > stderrTailBytes {
		t.buf = t.buf[len(t.buf)-stderrTailBytes:]
	}
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(strings.ToValidUTF8(string(t.buf), "\uFFFD"))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
