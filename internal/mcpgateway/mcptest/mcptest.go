// Package mcptest starts the MCP reference server
// (@modelcontextprotocol/server-everything, from npm at the version pinned
// in internal/mcpgateway/testdata/everything) for the gateway's tests, over
// stdio and over streamable HTTP. It is for tests only.
package mcptest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Everything is node and the reference server's program; it fails t (a
// missing server is a broken setup, not a reason to skip) when either is
// missing.
func Everything(t testing.TB) (node, bin string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin = filepath.Join(filepath.Dir(file), "..", "testdata", "everything", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the MCP reference server is not installed (%v): run make testdata-js", err)
	}
	node, err := exec.LookPath("node")
	require.NoError(t, err, "the MCP reference server runs on node: install node 20 or later")
	return node, bin
}

// StdioConfig is the mcpServers entry that starts the reference server over
// stdio, as JSON.
func StdioConfig(t testing.TB) string {
	node, bin := Everything(t)
	return fmt.Sprintf(`{"command": %q, "args": [%q, "stdio"]}`, node, bin)
}

// StartHTTP starts the reference server in its streamable HTTP mode on a
// free port and returns its endpoint; the server is stopped when the test
// ends.
func StartHTTP(t testing.TB) string {
	t.Helper()
	node, bin := Everything(t)
	// The server takes its port from PORT and cannot be told to pick one:
	// take a free one, and try another if something took it meanwhile.
	var lastErr string
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
		cmd := exec.Command(node, bin, "streamableHttp")
		cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		ready := make(chan string, 1)
		go func() {
			var seen []string
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				line := sc.Text()
				if strings.Contains(line, "listening on port") {
					ready <- ""
					// Keep draining, so that the server never blocks on
					// a full pipe.
					for sc.Scan() {
					}
					return
				}
				seen = append(seen, line)
			}
			ready <- strings.Join(seen, "\n")
		}()
		select {
		case failure := <-ready:
			if failure == "" {
				t.Cleanup(func() {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				})
				return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
			}
			_ = cmd.Wait()
			lastErr = failure
			if !strings.Contains(failure, "already in use") {
				t.Fatalf("the MCP reference server did not start over HTTP: %s", failure)
			}
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the MCP reference server did not say it was listening within 2 minutes")
		}
	}
	t.Fatalf("the MCP reference server found no free port: %s", lastErr)
	return ""
}
