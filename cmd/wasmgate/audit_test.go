package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
)

// loopArgs run a guest that spins until its wall-clock limit: long enough
// to be caught mid-execution.
func loopArgs(log, timeoutMs string) []string {
	return []string{"run", "--wasm", td("loop.wasm"), "--timeout-ms", timeoutMs, "--fuel", "100000000000000", "--audit", log, "--input", `{}`}
}

// waitForLines waits until the log at path has n lines.
func waitForLines(t *testing.T, path string, n int, why string) {
	t.Helper()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && bytes.Count(b, []byte{'\n'}) == n
	}, time.Minute, 5*time.Millisecond, why)
}

// sumArgs run sum.wasm on [n], audited to log.
func sumArgs(log string, n int, extra ...string) []string {
	return append([]string{"run", "--wasm", td("sum.wasm"), "--audit", log, "--input", fmt.Sprintf(`{"numbers":[%d]}`, n)}, extra...)
}

func sumRun(t *testing.T, log string, n int, extra ...string) runResult {
	t.Helper()
	return wasmgate(t, "", sumArgs(log, n, extra...)...)
}

// TestAuditVerifyNamesAnAttemptWithoutVerdict kills `wasmgate run` with
// SIGKILL (as the OOM killer would) while its guest runs. The attempt the
// pipeline wrote before the guest started is the trace the crash leaves, and
// `audit verify` names its line; the log stays extendable.
func TestAuditVerifyNamesAnAttemptWithoutVerdict(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := sumRun(t, log, 1)
	require.Equal(t, exitSuccess, r.code, r.stderr)

	cmd := exec.Command(binary, loopArgs(log, "60000")...)
	require.NoError(t, cmd.Start())
	waitForLines(t, log, 3, "the attempt is in the log while the guest runs")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	recs := allRecords(t, log)
	require.Len(t, recs, 3, "no verdict: the process died mid-execution")
	assert.Equal(t, audit.EventActionAttempt, recs[2].EventType)
	assert.Equal(t, "loop", recs[2].Action)

	unanswered := log + ":3: attempt seq 3 (loop, trace_id " + recs[2].TraceID + ") has no verdict: the execution never ended in one " +
		"(the process stopped, or the verdict could not be written), or is still running\n"
	v := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, exitSuccess, v.code, "the chain is intact: %s", v.stderr)
	assert.Equal(t, log+": ok, 3 records (2 attempts, 1 verdict), hash chain intact\n"+unanswered, v.stdout)

	r = sumRun(t, log, 2)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	v = wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, log+": ok, 5 records (3 attempts, 2 verdicts), hash chain intact\n"+unanswered, v.stdout)
}

func TestAuditRepair(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.jsonl")
	for i := range 2 {
		r := sumRun(t, log, i)
		require.Equal(t, exitSuccess, r.code, r.stderr)
	}
	intact, err := os.ReadFile(log)
	require.NoError(t, err)

	r := wasmgate(t, "", "audit", "repair", log)
	assert.Equal(t, exitSuccess, r.code, r.stderr)
	assert.Equal(t, log+": nothing to repair: 4 records, hash chain intact\n", r.stdout)

	// An append cut short: the last verdict lost its end.
	torn := intact[:len(intact)-40]
	require.NoError(t, os.WriteFile(log, torn, 0o600))
	for _, cmd := range []string{"run", "serve", "script"} {
		args := []string{"run", "--wasm", td("sum.wasm"), "--audit", log, "--input", `{"numbers":[9]}`}
		switch cmd {
		case "serve":
			args = []string{"serve", "--addr", "127.0.0.1:0", "--audit", log}
		case "script":
			// script opens the log once the script bundled, before it runs.
			args = []string{"script", scriptFile("combine.ts"), "--config", td("registry.json"), "--audit", log}
		}
		r := wasmgate(t, "", args...)
		assert.Equal(t, exitInternal, r.code, r.stdout)
		assert.Equal(t, "wasmgate "+cmd+": audit: open log "+log+": existing log cannot be extended: audit: log line 4: torn last line: "+
			"no trailing newline (an append was cut short); run 'wasmgate audit repair "+log+"' to cut it back to its last complete record\n", r.stderr)
		after, err := os.ReadFile(log)
		require.NoError(t, err)
		assert.Equal(t, torn, after, "a torn log is never extended")
	}
	v := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, exitFailed, v.code)
	assert.Equal(t, log+":4: torn last line: no trailing newline (an append was cut short)\n"+
		log+": 'wasmgate audit repair "+log+"' cuts a torn last line back to the last complete record\n", v.stderr)

	r = wasmgate(t, "", "audit", "repair", log)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	cutLen := len(torn) - (bytes.LastIndexByte(torn, '\n') + 1)
	m := regexp.MustCompile(`^` + regexp.QuoteMeta(log) + fmt.Sprintf(`: cut the torn line 4 \(%d bytes\) back to the end of record 3; the cut bytes are in (\S+)\n$`, cutLen)).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	assert.Regexp(t, `^`+regexp.QuoteMeta(log)+`\.torn-\d{8}T\d{6}Z$`, m[1])
	kept, err := os.ReadFile(m[1])
	require.NoError(t, err)
	assert.Equal(t, torn[len(torn)-cutLen:], kept, "the cut bytes are kept")
	repaired, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, torn[:len(torn)-cutLen], repaired, "cut back to the last complete record")

	// Its verdict lost, the second action's attempt stands unanswered; the
	// log is extended again.
	v = wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, exitSuccess, v.code, v.stderr)
	assert.Contains(t, v.stdout, log+":3: attempt seq 3 (sum, trace_id ")
	r = sumRun(t, log, 9)
	require.Equal(t, exitSuccess, r.code, r.stderr)

	// Damage that is not a torn append is evidence: left alone.
	edited := strings.Replace(string(intact), `"fuel_used":`, `"fuel_used":1`, 1)
	bad := filepath.Join(dir, "edited.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(edited[:len(edited)-10]), 0o600))
	r = wasmgate(t, "", "audit", "repair", bad)
	assert.Equal(t, exitFailed, r.code)
	assert.Empty(t, r.stdout)
	assert.Equal(t, bad+":2: hash mismatch: the record was edited\n"+
		bad+": not repaired: only a torn last line is cut, and this log is broken before its end (1 record before line 2 intact); nothing was changed\n", r.stderr)
	after, err := os.ReadFile(bad)
	require.NoError(t, err)
	assert.Equal(t, edited[:len(edited)-10], string(after))
	matches, _ := filepath.Glob(bad + ".torn-*")
	assert.Empty(t, matches)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "repair"}, "wasmgate audit repair: want exactly one audit log file, got 0 arguments\n"},
		{[]string{"audit", "repair", filepath.Join(dir, "missing.jsonl")}, "wasmgate audit repair: audit: repair: open " + filepath.Join(dir, "missing.jsonl") + ": no such file or directory\n"},
		{[]string{"audit", "repair", log, "--lock-wait", "-1s"}, "wasmgate audit repair: --lock-wait must be 0 or more, got -1s\n"},
		{[]string{"audit", "fix", log}, `wasmgate audit: unknown subcommand "fix" (verify, repair, export, keygen, checkpoint, prove, consistency)` + "\n"},
	} {
		r := wasmgate(t, "", tc.args...)
		assert.Equal(t, exitUsage, r.code, tc.args)
		assert.Equal(t, tc.want, r.stderr, tc.args)
	}
	h := wasmgate(t, "", "audit", "-h")
	assert.Equal(t, exitSuccess, h.code)
	for _, documented := range []string{"wasmgate audit verify FILE", "wasmgate audit repair FILE", "FILE.torn-<UTC time>", "action_attempt", "--lock-wait"} {
		assert.Contains(t, h.stdout, documented)
	}
}

// TestAuditLockWaitsForAnotherProcess runs three `wasmgate run` processes on
// one log: the first holds it while its guest runs; the second waits for it
// (default --audit-lock-wait 10s) and then appends; the third, told to wait
// 100ms, gives up, saying why.
func TestAuditLockWaitsForAnotherProcess(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	holder := exec.Command(binary, loopArgs(log, "1500")...)
	require.NoError(t, holder.Start())
	waitForLines(t, log, 1, "the first process holds the log: its attempt is in it")

	impatient := wasmgateProcess(t, "", sumArgs(log, 3, "--audit-lock-wait", "100ms")...)
	assert.Equal(t, exitInternal, impatient.code)
	assert.Equal(t, "wasmgate run: audit: open log "+log+": audit: log file in use by another sink (waited 100ms for it): "+
		"another process is appending to it (--audit-lock-wait sets how long to wait)\n", impatient.stderr)

	waiter := wasmgateProcess(t, "", sumArgs(log, 2)...)
	require.Equal(t, exitSuccess, waiter.code, waiter.stderr)
	require.Error(t, holder.Wait(), "the holder's guest timed out (exit 3)")
	assert.Equal(t, exitBlocked, holder.ProcessState.ExitCode())

	recs := allRecords(t, log)
	require.Len(t, recs, 4)
	var got []string
	for _, r := range recs {
		got = append(got, r.Action+" "+r.EventType)
	}
	assert.Equal(t, []string{"loop action_attempt", "loop action_audit", "sum action_attempt", "sum action_audit"}, got,
		"the second process appended after the first let go: one chain, nothing interleaved")
	v := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, log+": ok, 4 records (2 attempts, 2 verdicts), hash chain intact\n", v.stdout)
}

// TestAuditFailingDiskHeals serves from a log on a small tmpfs, fills the
// file system, and frees it again: a real full disk, no fault hooks. While
// the log cannot be written, calls are refused before anything runs and
// /health answers 503 with the reason; once there is room, the server
// recovers by itself and the log holds every acknowledged record and no
// torn line.
func TestAuditFailingDiskHeals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	log := filepath.Join(dir, "audit.jsonl")

	s := startServe(t, nil, "--config", td("registry.json"), "--audit", log)
	c := newProtocolClient(s.url, "")
	sum := call("math.sum", "", "sum", `{"numbers":[1,2]}`)
	r, tr := c.execute(t, "/execute-tool", sum)
	requireSuccess(t, r, tr, `{"sum":3}`)

	filler := filepath.Join(dir, "filler")
	fill, err := os.Create(filler)
	require.NoError(t, err)
	for {
		if _, err := fill.Write(make([]byte, 4096)); err != nil {
			require.ErrorIs(t, err, syscall.ENOSPC)
			break
		}
	}
	require.NoError(t, fill.Close())

	// The log's last page may still have room for a record or two.
	for i := 0; ; i++ {
		require.Less(t, i, 20, "the full file system never failed a write")
		r, tr = c.execute(t, "/execute-tool", sum)
		require.NotNil(t, tr.Wasmgate, "%s", r.body)
		if tr.Wasmgate.Status == "SUCCESS" {
			continue
		}
		assert.Equal(t, "BLOCKED", tr.Wasmgate.Status)
		assert.Equal(t, []string{"AUDIT_LOG_FAILED"}, tr.Wasmgate.ReasonCodes)
		assert.Empty(t, tr.Output)
		break
	}
	before, err := os.ReadFile(log)
	require.NoError(t, err)
	// Known failing: refused before anything runs.
	r, tr = c.execute(t, "/execute-tool", sum)
	require.NotNil(t, tr.Wasmgate, "%s", r.body)
	assert.Equal(t, "BLOCKED", tr.Wasmgate.Status)
	assert.Equal(t, []string{"AUDIT_LOG_FAILED"}, tr.Wasmgate.ReasonCodes)
	require.NotNil(t, tr.Error)
	assert.Contains(t, tr.Error.Message, "AUDIT_LOG_FAILED")
	assert.Empty(t, tr.Output)
	h := c.do(t, http.MethodGet, "/health", "")
	assert.Equal(t, http.StatusServiceUnavailable, h.status)
	health := decodeTool(t, h)
	require.NotNil(t, health.Error, "%s", h.body)
	assert.Equal(t, "INTERNAL_ERROR", health.Error.Code)
	assert.Regexp(t, `^the audit log cannot be written, so every call is refused until it recovers: audit: sink failed: write: no space left on device `+
		`\(since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; retrying\)$`, health.Error.Message)
	during, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.Equal(t, before, during, "the refused calls left nothing, not even a torn line")

	require.NoError(t, os.Remove(filler))
	require.Eventually(t, func() bool {
		r, err := c.send(http.MethodGet, "/health", "")
		return err == nil && r.status == http.StatusOK
	}, time.Minute, 20*time.Millisecond, "the server recovers by itself once there is room")
	r, tr = c.execute(t, "/execute-tool", sum)
	requireSuccess(t, r, tr, `{"sum":3}`)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	<-s.exited

	after, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(after, before), "nothing acknowledged was lost or moved")
	v := wasmgate(t, "", "audit", "verify", log)
	assert.Equal(t, exitSuccess, v.code, "no torn line: %s", v.stderr)
	assert.Contains(t, v.stdout, log+": ok, ")
}

// TestAuditWriteFailureBlocks makes the audit log fail for real under a
// file size limit (ulimit -f, as a full disk would), once on the attempt
// and once on the verdict. On the attempt, nothing runs; on the verdict,
// no output leaves and the attempt stays, unanswered. Either way the
// partial record is cut back, so the log verifies.
func TestAuditWriteFailureBlocks(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for ulimit")
	}
	for _, tc := range []struct {
		name    string
		failsOn string // the record the limit cuts
	}{{"attempt", audit.EventActionAttempt}, {"verdict", audit.EventActionAudit}} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "audit.jsonl")
			// Sizes of the next run's records: the same action, the same lengths.
			r := sumRun(t, log, 1)
			require.Equal(t, exitSuccess, r.code, r.stderr)
			raw, err := os.ReadFile(log)
			require.NoError(t, err)
			attemptLen := bytes.IndexByte(raw, '\n') + 1
			verdictLen := len(raw) - attemptLen
			// Append until the next KiB boundary falls where the record
			// under test will be written.
			var limit int
			// Lengths vary by a few bytes (ts_utc drops trailing zeros,
			// duration_ms grows a digit): keep a margin.
			const margin = 16
			for i := 2; ; i++ {
				room := 1024 - len(raw)%1024
				if tc.failsOn == audit.EventActionAttempt && room < attemptLen-margin ||
					tc.failsOn == audit.EventActionAudit && room > attemptLen+margin && room < attemptLen+verdictLen-margin {
					limit = len(raw)/1024 + 1
					break
				}
				require.Less(t, i, 200, "no KiB boundary found")
				r := sumRun(t, log, 1)
				require.Equal(t, exitSuccess, r.code, r.stderr)
				raw, err = os.ReadFile(log)
				require.NoError(t, err)
			}

			cmd := exec.Command("bash", "-c", fmt.Sprintf(`ulimit -f %d; exec "$0" "$@"`, limit), binary,
				"run", "--wasm", td("sum.wasm"), "--audit", log, "--input", `{"numbers":[2]}`)
			var out bytes.Buffer
			cmd.Stdout = &out
			err = cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, exitBlocked, ee.ExitCode())
			res := parseResult(t, runResult{stdout: out.String()})
			assert.Equal(t, "BLOCKED", res.Status)
			assert.Equal(t, []string{"AUDIT_LOG_FAILED"}, res.ReasonCodes)
			assert.Empty(t, res.Output)
			assert.Nil(t, res.OutputDigest)

			after, err := os.ReadFile(log)
			require.NoError(t, err)
			if tc.failsOn == audit.EventActionAttempt {
				assert.Contains(t, res.Message, "audit record could not be written, so nothing was executed")
				assert.Equal(t, string(raw), string(after), "the half-written attempt is cut back")
			} else {
				assert.Contains(t, res.Message, "audit record could not be written: ")
				assert.True(t, bytes.HasPrefix(after, raw))
				recs := allRecords(t, log)
				assert.Equal(t, bytes.Count(raw, []byte{'\n'})+1, len(recs), "the attempt stays; the half-written verdict is cut back")
				assert.Equal(t, audit.EventActionAttempt, recs[len(recs)-1].EventType)
			}
			v := wasmgate(t, "", "audit", "verify", log)
			assert.Equal(t, exitSuccess, v.code, v.stderr)
			if tc.failsOn == audit.EventActionAudit {
				assert.Contains(t, v.stdout, "has no verdict")
			} else {
				assert.NotContains(t, v.stdout, "has no verdict")
			}
		})
	}
}

// TestToolConfigIsAuditedAsEnvDigest runs a JS factory tool by the NDJSON
// tool protocol with a context.config holding a token: both records carry
// the digest of the config, and the token is nowhere in the log. Replaying
// the request from a corpus line with the same env agrees with the log; a
// corpus line without it diverges on env_digest.
func TestToolConfigIsAuditedAsEnvDigest(t *testing.T) {
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	r := wasmgateProcess(t, "", "tool", "run", "pat-check", "--tools", protoTools, "--json",
		"--config", `{ "azdo.token": "good-token-123" }`, "--input", `{"prId":1}`, "--audit", log)
	require.Equal(t, exitSuccess, r.code, r.stderr)
	raw, err := os.ReadFile(log)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "good-token-123")
	assert.NotContains(t, string(raw), "azdo.token")
	want := audit.Digest([]byte(`{"azdo.token":"good-token-123"}`))
	recs := allRecords(t, log)
	require.Len(t, recs, 2)
	for _, rec := range recs {
		require.NotNil(t, rec.EnvDigest, rec.EventType)
		assert.Equal(t, want, *rec.EnvDigest)
	}
	assert.Equal(t, "SUCCESS", recs[1].Status)

	js := filepath.Join(protoTools, "pat-check", "pat.js")
	withEnv := corpusFile(t, `{"action":"`+recs[1].Action+`","payload":{"prId":1},"env":{"azdo.token":"good-token-123"}}`)
	rr := wasmgate(t, "", "replay", "--js", js, "--corpus", withEnv, "--audit", log, "--runs", "1", "--json",
		"--engines", strings.Join(comparedEngines(), ","))
	require.Equal(t, exitSuccess, rr.code, rr.stdout+rr.stderr)
	rep := parseReplay(t, rr)
	require.NotNil(t, rep.Summary.Audit)
	assert.Equal(t, 1, rep.Summary.Audit.Matched, "the replay ran with the corpus line's env")
	require.NotNil(t, rep.Requests[0].EnvDigest)
	assert.Equal(t, want, *rep.Requests[0].EnvDigest)

	without := corpusFile(t, `{"action":"`+recs[1].Action+`","payload":{"prId":1}}`)
	rr = wasmgate(t, "", "replay", "--js", js, "--corpus", without, "--audit", log, "--runs", "1",
		"--engines", strings.Join(comparedEngines(), ","))
	assert.Equal(t, exitDivergence, rr.code, rr.stdout+rr.stderr)
	assert.Contains(t, rr.stdout, `env_digest differs: "`+want+`" in audit seq 2; null on `)
}
