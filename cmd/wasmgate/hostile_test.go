package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// The hostile-table fixtures of issue 12 against the built binary: a module
// allowed one page (64 KiB) that declares 64 tables of 2^20 funcrefs
// (refused/big_tables.wasm), and one that grows 64 empty tables to 2^20
// funcrefs and fills them (tablefill.wasm). Unbounded, one call took 2.1 GB
// and ran 8-30x past its timeout_ms of 200; `serve` grew to 9.2 GB after 12
// calls. What a user sees now: not SUCCESS, within twice timeout_ms, and a
// process whose peak resident set stays under 200 MB.

// hostileRSSLimit is the peak resident set the process may reach.
const hostileRSSLimit = 200 << 20

// hostileTimeoutMs is the fixtures' timeout_ms (their manifests').
const hostileTimeoutMs = 200

var hostileTables = []struct {
	fixture string
	action  string // in TestHostileTablesServe's registry
	status  string
	codes   []string
	message string
}{
	{"refused/big_tables.wasm", "tables.big", "BLOCKED", []string{"EXECUTOR_INVALID"},
		"64 tables start with 67108864 elements in total; at most 1048576 are allowed (33554432 bytes of memory_pages at 32 bytes each)"},
	{"tablefill.wasm", "tables.fill", "BLOCKED", []string{"LIMIT_EXCEEDED", "MEMORY_EXHAUSTED"},
		"trap (invalid table access) after a memory.grow or table.grow beyond memory_pages was refused"},
}

func requireLinux(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS is read from Linux's accounting")
	}
}

// TestHostileTablesRun runs each fixture with --memory-pages 1 on every
// engine of the build and reads the process's peak RSS from the kernel
// (wait4's ru_maxrss, the VmHWM the process had when it exited).
func TestHostileTablesRun(t *testing.T) {
	requireLinux(t)
	for _, engine := range sandbox.Engines() {
		for _, tt := range hostileTables {
			t.Run(string(engine)+"/"+tt.fixture, func(t *testing.T) {
				rssFile := filepath.Join(t.TempDir(), "peak-rss")
				cmd := exec.Command(os.Args[0], binary, "run", "--wasm", td(tt.fixture), "--memory-pages", "1",
					"--engine", string(engine), "--input", `{}`)
				cmd.Env = append(os.Environ(), peakRSSEnv+"="+rssFile)
				var out strings.Builder
				cmd.Stdout = &out
				err := cmd.Run()
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee, "stdout: %s", out.String())
				assert.Equal(t, exitBlocked, ee.ExitCode())

				var res struct {
					Status      string   `json:"status"`
					ReasonCodes []string `json:"reason_codes"`
					DurationMs  int64    `json:"duration_ms"`
					Message     string   `json:"message"`
				}
				require.NoError(t, json.Unmarshal([]byte(out.String()), &res), out.String())
				assert.Equal(t, tt.status, res.Status)
				assert.Equal(t, tt.codes, res.ReasonCodes)
				assert.Contains(t, res.Message, tt.message)
				assert.Less(t, res.DurationMs, int64(2*hostileTimeoutMs), "duration_ms")

				raw, err := os.ReadFile(rssFile)
				require.NoError(t, err)
				peak, err := strconv.ParseInt(string(raw), 10, 64)
				require.NoError(t, err)
				t.Logf("%s in %d ms, peak RSS %d MB", res.Status, res.DurationMs, peak>>20)
				assert.Less(t, peak, int64(hostileRSSLimit), "peak RSS of wasmgate run: %d MB", peak>>20)
			})
		}
	}
}

// TestHostileTablesServe sends each fixture to `wasmgate serve` 16 times at
// once, twice over, and reads the server's peak RSS (VmHWM) afterwards: a
// server that kept what the calls took would show it on the second round.
func TestHostileTablesServe(t *testing.T) {
	requireLinux(t)
	dir := t.TempDir()
	abs := func(name string) string {
		p, err := filepath.Abs(td(name))
		require.NoError(t, err)
		return p
	}
	config := filepath.Join(dir, "hostile.json")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`{
  "executors": {"big_tables": {"wasm": %q}, "tablefill": {"wasm": %q}},
  "actions": {
    "tables.big": {"executor": "big_tables", "version": "*"},
    "tables.fill": {"executor": "tablefill", "version": "^1.0.0", "limits": {"memory_pages": 1}}
  }
}`, abs("refused/big_tables.wasm"), abs("tablefill.wasm"))), 0o644))
	srv := startServe(t, nil, "--config", config, "--max-concurrency", "16", "--tools-dir", filepath.Join(dir, "tools"))
	client := newProtocolClient(srv.url, "")

	for round := range 2 {
		for _, tt := range hostileTables {
			name := tt.action
			body := call(name, "", name, `{}`)
			var wg sync.WaitGroup
			replies := make([]reply, 16)
			elapsed := make([]time.Duration, 16)
			errs := make([]error, 16)
			for i := range replies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start := time.Now()
					replies[i], errs[i] = client.send(http.MethodPost, "/execute-tool", body)
					elapsed[i] = time.Since(start)
				}()
			}
			wg.Wait()
			for i, r := range replies {
				require.NoError(t, errs[i])
				tr := decodeTool(t, r)
				require.NotNil(t, tr.Wasmgate, "round %d %s: %s", round, name, r.body)
				assert.False(t, tr.Success)
				assert.Equal(t, tt.status, tr.Wasmgate.Status, "round %d %s", round, name)
				assert.Equal(t, tt.codes, tr.Wasmgate.ReasonCodes, "round %d %s", round, name)
				require.NotNil(t, tr.Error)
				assert.Contains(t, tr.Error.Message, tt.message)
				assert.Less(t, elapsed[i], 2*hostileTimeoutMs*time.Millisecond, "round %d %s: call %d", round, name, i)
			}
			t.Logf("round %d %s: slowest of 16 calls %v", round, name, slices.Max(elapsed))
		}
		peak := vmHWM(t, srv.cmd.Process.Pid)
		t.Logf("round %d: 2 x 16 calls at once, peak RSS %d MB", round, peak>>20)
		assert.Less(t, peak, int64(hostileRSSLimit), "round %d: peak RSS of wasmgate serve: %d MB", round, peak>>20)
	}
}

// peakRSSEnv names the file into which the test binary, started as a
// launcher, writes the peak RSS in bytes of the command it ran.
const peakRSSEnv = "WASMGATE_TEST_PEAK_RSS_FILE"

// launchMeasuringPeakRSS runs args as a child process with this process's
// standard streams, writes the child's peak resident set (wait4's
// ru_maxrss) to file, and returns its exit code.
//
// The tests cannot read ru_maxrss of a command they start themselves:
// Linux keeps a process's high-water mark across execve, and Go starts a
// child with vfork, sharing the parent's memory until the exec, so the
// child would report the peak of the test process (hundreds of MB once many
// in-process tests have run). A launcher that has just started is small,
// so its child's figure is the command's own peak, or a few MB above it.
func launchMeasuringPeakRSS(file string, args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return exitInternal
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	if err := os.WriteFile(file, []byte(strconv.FormatInt(peak, 10)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "launcher:", err)
		return exitInternal
	}
	return cmd.ProcessState.ExitCode()
}

// vmHWM reads a live process's peak resident set from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			require.NoError(t, err, line)
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
