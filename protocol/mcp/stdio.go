package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLineBytes bounds a message on stdio when Config.MaxLineBytes is
// not set: the SDK's own bound.
const DefaultMaxLineBytes = sdk.DefaultMaxLineLength

// ServeStdio serves one session over r and w (a process's stdin and
// stdout: newline-delimited JSON-RPC, the MCP stdio transport) until the
// client closes r or ctx is done.
//
// Every line is read here before the SDK sees it, and a line the SDK would
// end the session for is answered instead, with a JSON-RPC error without
// an id, and the next line is read: a line over Config.MaxLineBytes is
// discarded as it arrives, never held (-32700, naming the limit); a line
// that is not JSON (-32700) or not a JSON-RPC message (-32600); a batch
// under a protocol version without batches (-32600). A host writing to the
// server is never left blocked while the server is alive.
//
// # Errors
//
// An error reading r other than its end, or the session's own.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	out := &serialWriter{w: w}
	defer out.close()
	// The SDK reads only the lines that pass, one complete JSON value
	// each, through a pipe: its own line bound is never reached.
	pr, pw := io.Pipe()
	defer pr.Close()
	var session atomic.Pointer[sdk.ServerSession]
	requested := func() string {
		if ss := session.Load(); ss != nil {
			if p := ss.InitializeParams(); p != nil {
				return p.ProtocolVersion
			}
		}
		return ""
	}
	// This goroutine outlives the session while it waits on r: a read of
	// stdin cannot be interrupted (the SDK's own reader has the same
	// limit). Once the session is over, its next line ends it.
	go s.frameLines(r, pw, out, requested)

	// The lines reaching the SDK are bounded here, each one JSON value
	// that its decoder reads alone: a bound of its own could only be
	// reached by a fault of this framing, and would end the session.
	ss, err := s.sdk.Connect(ctx, &sdk.IOTransport{Reader: pr, Writer: nopCloser{out}, MaxLineLength: -1}, nil)
	if err != nil {
		return fmt.Errorf("mcp: connecting stdio: %w", err)
	}
	session.Store(ss)
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-ended
		return nil
	case err := <-ended:
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) {
			return nil
		}
		return err
	}
}

// frameLines reads newline-delimited messages from r until it ends,
// passing each acceptable one on to the SDK through pw and answering the
// others on out; see ServeStdio. It closes pw when r ends, which ends the
// session.
func (s *Server) frameLines(r io.Reader, pw *io.PipeWriter, out io.Writer, requested func() string) {
	limit := s.cfg.MaxLineBytes
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	size, over := 0, false
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		// Past the limit (and a line ending's two bytes), the rest of the
		// line is counted and dropped, not kept.
		if !over && size > limit+2 {
			over, line = true, nil
		}
		if !over {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		msg := bytes.TrimRight(line, "\r\n")
		var refusal *rpcError
		switch {
		case over || len(msg) > limit:
			s.cfg.Logger.Warn("mcp: a stdio message over the line limit was discarded", "bytes", size, "limit", limit)
			refusal = &rpcError{codeParseError, fmt.Sprintf(
				"parse error: a message of more than %d bytes (the server's limit on one line) was discarded unread; send smaller messages, or start the server with a higher limit", limit)}
		case len(bytes.TrimSpace(msg)) == 0:
		default:
			refusal = screen(msg, requested())
		}
		if refusal != nil {
			if _, werr := out.Write(append(refusal.line(), '\n')); werr != nil {
				pw.CloseWithError(werr)
				return
			}
		} else if len(bytes.TrimSpace(msg)) > 0 {
			if _, werr := pw.Write(append(msg, '\n')); werr != nil {
				return // the session is over
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				pw.Close()
			} else {
				pw.CloseWithError(fmt.Errorf("mcp: reading stdin: %w", err))
			}
			return
		}
		// A long line's buffer is not kept for the short ones after it.
		if cap(line) > 1<<20 {
			line = nil
		}
		line, size, over = line[:0], 0, false
	}
}

// serialWriter makes each Write whole with respect to the others: the SDK
// writes a message in one Write, and so do the refusals of frameLines.
// Once closed (the session is over) it writes nothing more.
type serialWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

func (s *serialWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, io.ErrClosedPipe
	}
	return s.w.Write(p)
}

func (s *serialWriter) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
