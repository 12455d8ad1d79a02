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
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The protocol's guardrails on a tool side's output.
const (
	// DefaultMaxOutputBytes bounds what a tool side writes to stdout:
	// 10 MiB.
	DefaultMaxOutputBytes = 10 << 20
	// DefaultMaxEvents bounds the events a tool side writes.
	DefaultMaxEvents = 10_000
)

// killGrace is how long a tool side stopped at a guardrail has to exit
// after SIGTERM before it is killed.
const killGrace = 2 * time.Second

// Guardrails bound a tool side. A zero field takes its default.
type Guardrails struct {
	// Timeout bounds the whole run, from starting the tool side to its
	// exit. Zero means Timeout(manifest, request).
	Timeout time.Duration
	// MaxOutputBytes bounds the bytes the tool side writes to stdout
	// (DefaultMaxOutputBytes). Its stderr is passed on, not counted.
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
	// Stderr receives the tool side's stderr as it comes; nil discards it.
	Stderr io.Writer
	// Guardrails bound the tool side.
	Guardrails Guardrails
	// Emit receives the events.
	Emit EmitFunc
}

// Ending is how a run ended: its last result or error event, and whether
// the runner wrote it (a guardrail, a crash) rather than the tool side.
type Ending struct {
	Event  Event
	Runner bool
}

// ExitCode is the runner's exit code for the ending, by the protocol's
// table: 0 after a result, 1 after the tool side's own error event, 2 when
// the tool side ended without one (the runner's error events).
func (e Ending) ExitCode() int {
	switch {
	case e.Runner:
		return ExitCrash
	case e.Event.Type == EventResult:
		return ExitResult
	}
	return ExitError
}

// Run is the runner side of the protocol: it starts the tool side with the
// request on its stdin, checks every line it writes (an event of the right
// tool, started first and once), passes the events to Emit as they come,
// and returns how the run ended: the last result or error event, as the
// protocol has it ("last one wins").
//
// When the tool side crosses a guardrail (the timeout, MaxOutputBytes,
// MaxEvents) the runner stops it (SIGTERM, then SIGKILL) and ends the
// stream with its own error event, RUNNER_GUARDRAIL, naming the guardrail;
// a stream that breaks the protocol ends with RUNNER_PROTOCOL_ERROR, a tool
// side that ends without a result or error event (or crashes after its
// result: exit status 2 or more, a signal) with TOOL_CRASH, and a cancelled
// ctx with CANCELLED. None of them is recoverable. The runner never adds
// an error event after one of the tool side's own, and writes a started
// event first when the tool side did not get to.
//
// # Errors
//
// The error of Emit, after which the tool side is stopped.
func Run(ctx context.Context, cfg RunConfig) (Ending, error) {
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
	r.startedPayload = StartedFor(m)
	return r.run(ctx)
}

type running struct {
	cfg            RunConfig
	guard          Guardrails
	startedPayload StartedPayload

	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd.Wait returned waitErr
	waitErr error
	events  int
	started bool
	// last is the tool side's last result or error event.
	last   *Event
	stderr stderrTail
}

// chunk is what the stdout reader hands the runner: a line, or the news
// that the output budget is spent.
type chunk struct {
	line     []byte
	overflow bool
}

func (r *running) run(ctx context.Context) (Ending, error) {
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

	stop := make(chan struct{})
	defer close(stop)
	lines := make(chan chunk)
	go readLines(stdout, r.guard.MaxOutputBytes, lines, stop)
	stderrDone := make(chan struct{})
	go r.copyStderr(stderr, stderrDone)
	// What the tool side wrote to stderr before it was stopped is passed on
	// before Run returns (its pipe closes once the tool side is reaped).
	stderrCopied := stderrDone
	defer func() {
		select {
		case <-stderrCopied:
		case <-time.After(killGrace):
		}
	}()

	for lines != nil || stderrDone != nil {
		select {
		case c, ok := <-lines:
			switch {
			case !ok:
				lines = nil
			case c.overflow:
				return r.kill(CodeRunnerGuardrail, fmt.Sprintf("guardrail maxOutputBytes: the tool side wrote more than %d bytes to stdout", r.guard.MaxOutputBytes))
			default:
				if end, stopped, err := r.handle(c.line); stopped || err != nil {
					r.stop()
					return end, err
				}
			}
		case <-stderrDone:
			stderrDone = nil
		case <-timer.C:
			return r.kill(CodeRunnerGuardrail, guardrailTimeoutMessage(r.guard.Timeout))
		case <-ctx.Done():
			return r.kill(CodeCancelled, "the run was cancelled: "+ctx.Err().Error())
		}
	}

	// Both streams are closed: the tool side is exiting.
	select {
	case <-r.wait():
	case <-timer.C:
		return r.kill(CodeRunnerGuardrail, guardrailTimeoutMessage(r.guard.Timeout))
	case <-ctx.Done():
		return r.kill(CodeCancelled, "the run was cancelled: "+ctx.Err().Error())
	}
	crashed := r.waitErr != nil
	var exit *exec.ExitError
	if errors.As(r.waitErr, &exit) && exit.ExitCode() >= 0 && exit.ExitCode() < ExitCrash {
		crashed = false // 1: an expected failure
	}
	switch {
	case r.last == nil:
	case r.last.Type == EventError, !crashed:
		// The tool side's own error stands, whatever its exit status.
		return Ending{Event: *r.last}, nil
	}
	status := "exited with status 0"
	switch {
	case errors.As(r.waitErr, &exit) && exit.ExitCode() >= 0:
		status = fmt.Sprintf("exited with status %d", exit.ExitCode())
	case r.waitErr != nil:
		status = "ended (" + r.waitErr.Error() + ")" // e.g. "signal: killed"
	}
	msg := "the tool side " + status + " without a result or error event"
	if r.last != nil {
		msg = "the tool side " + status + " after its result"
	}
	if tail := r.stderr.String(); tail != "" {
		msg += "; its stderr ends: " + tail
	}
	return r.fail(CodeToolCrash, msg)
}

// handle checks one line of the tool side's stdout and passes it on.
// stopped says the runner ended the run (with the returned ending).
func (r *running) handle(line []byte) (end Ending, stopped bool, err error) {
	r.events++
	if r.events > r.guard.MaxEvents {
		r.stop()
		end, err := r.fail(CodeRunnerGuardrail, fmt.Sprintf("guardrail maxEvents: the tool side wrote more than %d events", r.guard.MaxEvents))
		return end, true, err
	}
	ev, perr := ParseEvent(line, r.cfg.ToolID)
	switch {
	case perr != nil:
	case !r.started && ev.Type != EventStarted:
		perr = fmt.Errorf("the first event is %s; it must be started", ev.Type)
	case r.started && ev.Type == EventStarted:
		perr = errors.New("a second started event")
	}
	if perr != nil {
		r.stop()
		end, err := r.fail(CodeRunnerProtocolError, fmt.Sprintf("event %d: %v", r.events, perr))
		return end, true, err
	}
	r.started = true
	if ev.Type.Terminal() {
		r.last = &ev
	}
	return Ending{}, false, r.cfg.Emit(ev, line)
}

// ParseEvent checks line as an event of toolID: a JSON object with a known
// type, an ISO 8601 (RFC 3339) ts, the tool's id and a payload of the
// type's shape (started: an object; log: a level of the four and a string
// message; error: a string message, a boolean recoverable and, if any, a
// string code; result: any JSON value).
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
		return Event{}, fmt.Errorf("ts %q is not an ISO 8601 timestamp", ev.Ts)
	}
	if ev.ToolID != toolID {
		return Event{}, fmt.Errorf("toolId is %q, not %q", ev.ToolID, toolID)
	}
	p := bytes.TrimSpace(ev.Payload)
	if len(p) == 0 {
		return Event{}, fmt.Errorf("the %s event has no payload", ev.Type)
	}
	if ev.Type != EventResult && p[0] != '{' {
		return Event{}, fmt.Errorf("the %s event's payload is not a JSON object", ev.Type)
	}
	switch ev.Type {
	case EventLog:
		var l struct {
			Level   string  `json:"level"`
			Message *string `json:"message"`
		}
		if json.Unmarshal(p, &l) != nil || l.Message == nil || !slices.Contains([]string{LevelDebug, LevelInfo, LevelWarn, LevelError}, l.Level) {
			return Event{}, errors.New("the log event's payload lacks a level (debug, info, warn or error) or a string message")
		}
	case EventError:
		var e struct {
			Message     *string `json:"message"`
			Code        any     `json:"code"`
			Recoverable *bool   `json:"recoverable"`
		}
		if json.Unmarshal(p, &e) != nil || e.Message == nil || e.Recoverable == nil {
			return Event{}, errors.New("the error event's payload lacks a string message or a boolean recoverable")
		}
		if _, isString := e.Code.(string); e.Code != nil && !isString {
			return Event{}, errors.New("the error event's code is not a string")
		}
	}
	return ev, nil
}

func guardrailTimeoutMessage(timeout time.Duration) string {
	return fmt.Sprintf("guardrail timeoutMs: the tool ran longer than %d ms", timeout.Milliseconds())
}

// kill ends the tool side and the stream with the runner's error.
func (r *running) kill(code, msg string) (Ending, error) {
	r.stop()
	return r.fail(code, msg)
}

// stop ends the tool side, if it still runs, as the protocol says: SIGTERM,
// then SIGKILL if it has not exited within killGrace; and reaps it.
func (r *running) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.wait():
		return
	default:
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = r.cmd.Process.Kill() // no SIGTERM here (Windows)
	}
	grace := time.NewTimer(killGrace)
	defer grace.Stop()
	select {
	case <-r.wait():
	case <-grace.C:
		_ = r.cmd.Process.Kill()
		<-r.wait()
	}
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
func (r *running) fail(code, msg string) (Ending, error) {
	if !r.started {
		r.started = true
		if err := r.emit(EventStarted, r.startedPayload); err != nil {
			return Ending{}, err
		}
	}
	ev, line, err := newEvent(EventError, r.cfg.ToolID, ErrorPayload{Code: code, Message: msg})
	if err != nil {
		return Ending{}, err
	}
	return Ending{Event: ev, Runner: true}, r.cfg.Emit(ev, line)
}

func (r *running) emit(typ EventType, payload any) error {
	ev, line, err := newEvent(typ, r.cfg.ToolID, payload)
	if err != nil {
		return err
	}
	return r.cfg.Emit(ev, line)
}

// readLines sends the lines of r (without their newlines; a last line
// without one too) until EOF, or until more than max bytes came. Once the
// runner stops listening it reads the rest and drops it, so that the tool
// side never blocks on a full pipe while it is being stopped.
func readLines(r io.Reader, max int64, out chan<- chunk, stop <-chan struct{}) {
	defer close(out)
	defer io.Copy(io.Discard, r)
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
	var used int64
	for {
		part, err := br.ReadSlice('\n')
		if len(part) > 0 {
			if used += int64(len(part)); used > max {
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

// copyStderr passes the tool side's stderr on as it comes, keeping its
// tail for a crash's message; it closes done at EOF.
func (r *running) copyStderr(stderr io.Reader, done chan<- struct{}) {
	defer close(done)
	buf := make([]byte, 32<<10)
	for {
		n, err := stderr.Read(buf)
		if n > 0 {
			r.stderr.keep(buf[:n])
			if r.cfg.Stderr != nil {
				_, _ = r.cfg.Stderr.Write(buf[:n])
			}
		}
		if err != nil {
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
