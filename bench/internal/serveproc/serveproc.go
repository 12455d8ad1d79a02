// Package serveproc starts `wasmgate serve` for the benchmarks that measure
// it as a process (bench/loadtest, bench/auditsink) and stops it as an
// operator would.
package serveproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is a `wasmgate serve` process.
type Server struct {
	// URL is where it listens.
	URL string
	// Cmd is its process.
	Cmd *exec.Cmd

	exited chan struct{}
	once   sync.Once
	err    error

	mu   sync.Mutex
	tail []string // its last log lines, for errors
}

// Start starts bin with args (which must include "serve", an --addr and
// --log-format json) and returns once it listens, within a minute.
func Start(ctx context.Context, bin string, args []string) (*Server, error) {
	s := &Server{exited: make(chan struct{})}
	s.Cmd = exec.CommandContext(ctx, bin, args...)
	stderr, err := s.Cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.Cmd.Start(); err != nil {
		return nil, err
	}
	listening := make(chan string, 1)
	go func() {
		defer close(s.exited)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		// The server logs every request: read it all, or it blocks.
		found := false
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.tail = append(s.tail, line)
			if len(s.tail) > 20 {
				s.tail = s.tail[1:]
			}
			s.mu.Unlock()
			if found || !strings.Contains(line, `"msg":"listening"`) {
				continue
			}
			var rec struct{ URL string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.URL != "" {
				found = true
				listening <- rec.URL
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = s.Cmd.Wait()
	}()
	select {
	case s.URL = <-listening:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("wasmgate serve exited before listening: %s", s.Log())
	case <-time.After(time.Minute):
		_ = s.Cmd.Process.Kill()
		<-s.exited
		return nil, fmt.Errorf("wasmgate serve did not listen within a minute: %s", s.Log())
	}
}

// Log is the server's last log lines.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

// Stop stops the server with SIGTERM, once (later calls return the first
// one's result), waiting a minute before it kills it, and reports an exit
// other than 0.
func (s *Server) Stop() error {
	s.once.Do(func() {
		if err := s.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			s.err = err
			return
		}
		select {
		case <-s.exited:
		case <-time.After(time.Minute):
			_ = s.Cmd.Process.Kill()
			<-s.exited
			s.err = fmt.Errorf("wasmgate serve did not stop within a minute of SIGTERM: %s", s.Log())
			return
		}
		if code := s.Cmd.ProcessState.ExitCode(); code != 0 {
			s.err = fmt.Errorf("wasmgate serve exited %d: %s", code, s.Log())
		}
	})
	return s.err
}

// ExecuteTool posts body to url's /execute-tool as JSON and returns the
// reply's status and body.
func ExecuteTool(ctx context.Context, client *http.Client, url string, body []byte) (status int, reply []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/execute-tool", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	reply, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, reply, err
}
