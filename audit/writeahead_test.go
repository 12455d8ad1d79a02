package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faultyFile is the log's real file with failures on demand: while full,
// a write stores half its bytes and fails with ENOSPC (as a full disk or a
// file size limit does) and the device reports no room; while syncFails, an
// fsync fails with EIO; while syncGate is set, an fsync waits for it. It
// counts writes and fsyncs (fdatasync, as the sink's own file does).
type faultyFile struct {
	*os.File
	full      atomic.Bool
	syncFails atomic.Bool
	syncGate  atomic.Pointer[chan struct{}]
	syncs     atomic.Int32
	writes    atomic.Int32
}

func (f *faultyFile) Write(p []byte) (int, error) {
	f.writes.Add(1)
	if f.full.Load() {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f *faultyFile) Sync() error {
	if g := f.syncGate.Load(); g != nil {
		<-*g
	}
	f.syncs.Add(1)
	if f.syncFails.Load() {
		return syscall.EIO
	}
	return datasync(f.File)
}

func (f *faultyFile) Reserve(int64, int64) error {
	if f.full.Load() {
		return syscall.ENOSPC
	}
	return nil
}

// openFaulty opens a sink on path whose file fails on demand, retrying
// every few milliseconds once failed.
func openFaulty(t *testing.T, path string) (*FileSink, *faultyFile) {
	t.Helper()
	s, err := OpenFile(path)
	require.NoError(t, err)
	ff := &faultyFile{File: s.f.(dataFile).File}
	s.f = ff
	s.opts.retryMin, s.opts.retryMax = time.Millisecond, 10*time.Millisecond
	t.Cleanup(func() { s.Close() })
	return s, ff
}

// appendAction appends the attempt and the verdict of testRecord(i), as the
// pipeline does around an execution.
func appendAction(t *testing.T, s Sink, i int) (attempt, verdict Record) {
	t.Helper()
	a, err := s.Append(context.Background(), testAttempt(i))
	require.NoError(t, err)
	v, err := s.Append(context.Background(), testVerdict(i, a))
	require.NoError(t, err)
	return a, v
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestFileSinkHealsWhenTheDiskHasRoomAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	appendAction(t, s, 1)
	before := readFile(t, path)
	require.NoError(t, s.Health())

	ff.full.Store(true)
	_, err := s.Append(context.Background(), testAttempt(2))
	require.ErrorIs(t, err, ErrSinkFailed)
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.Equal(t, before, readFile(t, path), "the half-written record is cut back: no torn line")

	health := s.Health()
	require.ErrorIs(t, health, ErrSinkFailed)
	assert.Contains(t, health.Error(), "write: no space left on device")
	assert.Contains(t, health.Error(), "retrying")
	assert.NotContains(t, health.Error(), path, "health is shown to anyone: no file names")

	// Known failing: refused at once, without a write.
	_, err = s.Append(context.Background(), testAttempt(2))
	require.ErrorIs(t, err, ErrSinkFailed)
	time.Sleep(30 * time.Millisecond) // a few retries find no room
	require.Error(t, s.Health(), "no room yet: still failing")
	assert.Equal(t, before, readFile(t, path))

	ff.full.Store(false)
	require.Eventually(t, func() bool { return s.Health() == nil }, 10*time.Second, time.Millisecond,
		"the sink recovers by itself once there is room")
	a, v := appendAction(t, s, 2)
	assert.EqualValues(t, 3, a.Seq, "the chain continues from the last durable record")
	assert.EqualValues(t, 4, v.Seq)
	require.NoError(t, s.Close())

	after := readFile(t, path)
	assert.True(t, strings.HasPrefix(after, before), "nothing acknowledged was lost or moved")
	rep := verifyFile(t, path)
	assert.Equal(t, 4, rep.Records)
	assert.Empty(t, rep.Unanswered)
}

func TestFileSinkWriteFailureKeepsTheAttemptsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	appendAction(t, s, 1)
	a, err := s.Append(context.Background(), testAttempt(2))
	require.NoError(t, err)
	withAttempt := readFile(t, path)

	// The disk fills while the executor runs: the verdict's write fails.
	// The attempt, written before, stays (made durable by the cut-back's
	// fsync): the trace of an execution whose verdict was never given.
	ff.full.Store(true)
	_, err = s.Append(context.Background(), testVerdict(2, a))
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.Equal(t, withAttempt, readFile(t, path), "the attempt stays; the half-written verdict is cut back")
	rep := verifyFile(t, path)
	assert.Equal(t, 3, rep.Records)
	require.Len(t, rep.Unanswered, 1)
	assert.Equal(t, a.Hash, rep.Unanswered[0].Hash)
}

func TestFileSinkFsyncFailureCutsBackToTheLastDurableRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	appendAction(t, s, 1)
	before := readFile(t, path)

	// The attempt is written (the executor may run), but the fsync its
	// verdict waits for fails: after a failed fsync nothing since the last
	// good one is known to be on disk, so both are cut back.
	a, err := s.Append(context.Background(), testAttempt(2))
	require.NoError(t, err)
	ff.syncFails.Store(true)
	_, err = s.Append(context.Background(), testVerdict(2, a))
	require.ErrorIs(t, err, ErrSinkFailed)
	require.ErrorIs(t, err, syscall.EIO)
	assert.Equal(t, before, readFile(t, path))
	assert.Contains(t, s.Health().Error(), "fsync: input/output error")

	ff.syncFails.Store(false)
	require.Eventually(t, func() bool { return s.Health() == nil }, 10*time.Second, time.Millisecond)
	// The attempt is gone from the log: a verdict answering it would name
	// a record the log does not hold.
	_, err = s.Append(context.Background(), testVerdict(2, a))
	require.ErrorIs(t, err, ErrSinkFailed)
	assert.Contains(t, err.Error(), "the attempt this verdict answers was cut back")
	a2, _ := appendAction(t, s, 3)
	assert.EqualValues(t, 3, a2.Seq, "seq 3 is reused: the cut records never were in the log")
	require.NoError(t, s.Close())
	rep := verifyFile(t, path)
	assert.Equal(t, 4, rep.Records)
	assert.Empty(t, rep.Unanswered)
}

func TestFileSinkAttemptIsWrittenBeforeAnyFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	gate := make(chan struct{})
	ff.syncGate.Store(&gate)

	// The attempt returns once written: it is in the file (and would be
	// if the process died now) while no fsync has completed.
	a, err := s.Append(context.Background(), testAttempt(1))
	require.NoError(t, err)
	assert.Contains(t, readFile(t, path), `"hash":"`+a.Hash+`"`)
	assert.Zero(t, ff.syncs.Load())

	// The verdict waits for the fsync that makes both durable.
	done := make(chan error, 1)
	go func() { _, err := s.Append(context.Background(), testVerdict(1, a)); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("the verdict returned before its fsync: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	ff.syncGate.Store(nil)
	close(gate)
	require.NoError(t, <-done)
	assert.EqualValues(t, 1, ff.syncs.Load(), "one fsync for the attempt and its verdict")
}

func TestFileSinkWritesDoNotWaitForFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	a1, err := s.Append(context.Background(), testAttempt(1))
	require.NoError(t, err)
	gate := make(chan struct{})
	ff.syncGate.Store(&gate)
	done := make(chan error, 1)
	go func() { _, err := s.Append(context.Background(), testVerdict(1, a1)); done <- err }()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.syncing
	}, 5*time.Second, time.Millisecond, "the verdict's fsync is in flight")

	// Another caller's attempt is written meanwhile: it does not queue
	// behind the fsync.
	a2, err := s.Append(context.Background(), testAttempt(2))
	require.NoError(t, err)
	assert.EqualValues(t, 3, a2.Seq)
	ff.syncGate.Store(nil)
	close(gate)
	require.NoError(t, <-done)
	appendN(t, s, 10, 1)
	require.NoError(t, s.Close())
	rep := verifyFile(t, path)
	assert.Equal(t, 4, rep.Records)
	require.Len(t, rep.Unanswered, 1)
	assert.Equal(t, a2.Hash, rep.Unanswered[0].Hash)
}

func TestOneFsyncForTheVerdictsOfConcurrentExecutions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	// Long enough that only the verdicts' arrival ends the wait.
	s.opts.maxGather, s.syncTime = time.Hour, time.Hour
	const n = 4
	attempts := make([]Record, n)
	for i := range n {
		var err error
		attempts[i], err = s.Append(context.Background(), testAttempt(i+1))
		require.NoError(t, err)
	}
	errs := make(chan error, n)
	for i := range n {
		go func() { _, err := s.Append(context.Background(), testVerdict(i+1, attempts[i])); errs <- err }()
	}
	for range n {
		require.NoError(t, <-errs)
	}
	assert.EqualValues(t, 1, ff.syncs.Load(), "the first verdict waited for the other executions' verdicts: one fsync for all")
	require.NoError(t, s.Close())
	assert.Equal(t, 2*n, verifyFile(t, path).Records)
}

// TestVerdictsArrivingDuringAnFsyncGoOutInOneWriteAndOneFsync: while one
// fsync is in flight, the verdicts that arrive wait unwritten; when it
// ends, one write carries them all and one fsync makes them durable.
func TestVerdictsArrivingDuringAnFsyncGoOutInOneWriteAndOneFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	const n = 5
	attempts := make([]Record, n)
	for i := range n {
		var err error
		attempts[i], err = s.Append(context.Background(), testAttempt(i+1))
		require.NoError(t, err)
	}
	require.EqualValues(t, n, ff.writes.Load(), "an attempt is written at once")
	require.Zero(t, ff.syncs.Load(), "an attempt does not wait for an fsync")

	gate := make(chan struct{})
	ff.syncGate.Store(&gate)
	errs := make(chan error, n)
	go func() { _, err := s.Append(context.Background(), testVerdict(1, attempts[0])); errs <- err }()
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.syncing
	}, 5*time.Second, time.Millisecond, "the first verdict's fsync is in flight")
	require.EqualValues(t, n+1, ff.writes.Load())

	for i := 1; i < n; i++ {
		go func() { _, err := s.Append(context.Background(), testVerdict(i+1, attempts[i])); errs <- err }()
	}
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return bytes.Count(s.pending.buf, []byte{'\n'}) == n-1
	}, 5*time.Second, time.Millisecond, "the verdicts that arrive during the fsync wait, linked")
	assert.EqualValues(t, n+1, ff.writes.Load(), "nothing written while the fsync is in flight")
	select {
	case err := <-errs:
		t.Fatalf("a verdict returned before its fsync: %v", err)
	default:
	}

	ff.syncGate.Store(nil)
	close(gate)
	for range n {
		require.NoError(t, <-errs)
	}
	assert.EqualValues(t, n+2, ff.writes.Load(), "one write for the verdicts gathered during the fsync")
	assert.EqualValues(t, 2, ff.syncs.Load(), "one fsync for them")
	require.NoError(t, s.Close())
	rep := verifyFile(t, path)
	assert.Equal(t, 2*n, rep.Records)
	assert.Empty(t, rep.Unanswered)
}

func TestVerdictsMustAnswerAnOpenAttempt(t *testing.T) {
	for _, s := range []Sink{NewMemorySink(), NewDiscardSink(), openTemp(t)} {
		a, err := s.Append(context.Background(), testAttempt(1))
		require.NoError(t, err)

		forged := testVerdict(1, Record{Hash: Digest([]byte("no such record"))})
		_, err = s.Append(context.Background(), forged)
		require.ErrorIs(t, err, ErrInvalidRecord)
		assert.Contains(t, err.Error(), "attempt_hash names no unanswered action_attempt")

		other := testVerdict(2, a) // another request's verdict
		_, err = s.Append(context.Background(), other)
		require.ErrorIs(t, err, ErrInvalidRecord)
		assert.Contains(t, err.Error(), "the verdict's input_digest differs from its attempt's")

		v, err := s.Append(context.Background(), testVerdict(1, a))
		require.NoError(t, err)
		assert.EqualValues(t, 2, v.Seq, "refused verdicts take no seq")
		_, err = s.Append(context.Background(), testVerdict(1, a))
		require.ErrorIs(t, err, ErrInvalidRecord, "an attempt is answered once")
		require.NoError(t, s.Close())
	}
}

func TestAttemptRecordHoldsDigestsOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Record)
		reason string
	}{
		{"status", func(r *Record) { r.Status = "SUCCESS" }, "status is not a member"},
		{"reason codes", func(r *Record) { r.ReasonCodes = []string{"X"} }, ""},
		{"output digest", func(r *Record) { d := Digest(nil); r.OutputDigest = &d }, "output_digest is not a member"},
		{"fuel", func(r *Record) { r.FuelUsed = 1 }, "fuel_used is not a member"},
		{"exit code", func(r *Record) { code := 0; r.ExitCode = &code }, "exit_code is not a member"},
		{"no module", func(r *Record) { r.ModuleDigest = "" }, "module_digest is required"},
		{"no input digest", func(r *Record) { r.InputDigest = "" }, "input_digest is required"},
		{"raw env", func(r *Record) { env := `{"API_KEY":"sk_live"}`; r.EnvDigest = &env }, "env_digest is not a blake3 digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testAttempt(1)
			tc.modify(&r)
			_, err := NewMemorySink().Append(context.Background(), r)
			require.ErrorIs(t, err, ErrInvalidRecord)
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
}

func TestVerifyReportsUnansweredAttempts(t *testing.T) {
	m := NewMemorySink()
	appendAction(t, m, 1)
	crashed, err := m.Append(context.Background(), testAttempt(2))
	require.NoError(t, err)
	_, err = m.Append(context.Background(), testRecord(3)) // a refusal: nothing ran
	require.NoError(t, err)
	appendAction(t, m, 4)
	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)

	rep, err := Verify(&buf)
	require.NoError(t, err, "an unanswered attempt is not damage")
	assert.Equal(t, 6, rep.Records)
	assert.Equal(t, 3, rep.Attempts)
	assert.Equal(t, []UnansweredAttempt{{Line: 3, Seq: 3, Hash: crashed.Hash, Action: crashed.Action, TraceID: crashed.TraceID}}, rep.Unanswered)
}

func TestVerifyChecksVerdictsAgainstTheirAttempts(t *testing.T) {
	lines := memoryLog(t, 4) // attempt 1, verdict 1, attempt 2, verdict 2
	forge := func(k int, edit func(*Record)) string {
		var r Record
		require.NoError(t, decodeInto(lines[k-1], &r))
		edit(&r)
		r.Hash = GenesisPrev
		line, err := encodeRecord(&r, formOf(&r))
		require.NoError(t, err)
		r.Hash = Digest(appendHashed(nil, line))
		line, err = encodeRecord(&r, formOf(&r))
		require.NoError(t, err)
		out := append([]string(nil), lines...)
		out[k-1] = string(line) + "\n"
		// Relink what follows, as a forger would.
		prev := r.Hash
		for j := k; j < len(out); j++ {
			var next Record
			require.NoError(t, decodeInto(out[j], &next))
			next.Prev = prev
			next.Hash = GenesisPrev
			l, err := encodeRecord(&next, formOf(&next))
			require.NoError(t, err)
			next.Hash = Digest(appendHashed(nil, l))
			l, err = encodeRecord(&next, formOf(&next))
			require.NoError(t, err)
			out[j], prev = string(l)+"\n", next.Hash
		}
		return strings.Join(out, "")
	}
	var first Record
	require.NoError(t, decodeInto(lines[0], &first))
	for _, tc := range []struct {
		name   string
		log    string
		line   int
		reason string
	}{
		{"verdict names a missing attempt", forge(2, func(r *Record) { h := Digest([]byte("x")); r.AttemptHash = &h }), 2, "attempt_hash names no unanswered action_attempt"},
		{"verdict changes the input digest", forge(2, func(r *Record) { r.InputDigest = Digest([]byte("x")) }), 2, "input_digest differs from its attempt's (line 1)"},
		{"verdict changes the env digest", forge(2, func(r *Record) { r.EnvDigest = nil }), 2, "env_digest differs"},
		{"verdict adds a schema digest", forge(2, func(r *Record) { d := Digest([]byte("schemas")); r.SchemaDigest = &d }), 2, "schema_digest differs"},
		{"second verdict for one attempt", forge(4, func(r *Record) { r.AttemptHash = &first.Hash }), 4, "attempt_hash names no unanswered"},
		{"attempt with a status", func() string {
			m := decodeLine(t, lines[0])
			m["status"] = "SUCCESS"
			return canonicalLine(t, m) + strings.Join(lines[1:], "")
		}(), 1, "not an audit record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(strings.NewReader(tc.log))
			requireChainError(t, err, tc.line, tc.reason)
		})
	}
}

func decodeInto(line string, r *Record) error { return json.Unmarshal([]byte(line), r) }

func TestLegacyLogsVerifyAndExtend(t *testing.T) {
	legacy, err := os.ReadFile(filepath.Join("testdata", "legacy.jsonl"))
	require.NoError(t, err)
	rep, err := Verify(bytes.NewReader(legacy))
	require.NoError(t, err)
	assert.Equal(t, 4, rep.Records)
	assert.Zero(t, rep.Attempts)

	path := filepath.Join(t.TempDir(), "audit.jsonl")
	require.NoError(t, os.WriteFile(path, legacy, 0o600))
	s, err := OpenFile(path)
	require.NoError(t, err)
	a, _ := appendAction(t, s, 1)
	assert.EqualValues(t, 5, a.Seq)
	assert.Equal(t, rep.LastHash, a.Prev)
	require.NoError(t, s.Close())
	assert.Equal(t, 6, verifyFile(t, path).Records, "old and new records in one chain")

	// A new verdict cannot pass for an old one: dropping its new members
	// changes what its hash covers.
	lines := strings.SplitAfter(readFile(t, path), "\n")
	v := decodeLine(t, lines[5])
	delete(v, "env_digest")
	delete(v, "attempt_hash")
	_, err = Verify(strings.NewReader(strings.Join(lines[:5], "") + canonicalLine(t, v)))
	requireChainError(t, err, 6, "hash mismatch")
}

func TestOpenFileResumesUnansweredAttempts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)
	a, err := s.Append(context.Background(), testAttempt(1))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = OpenFile(path)
	require.NoError(t, err)
	_, err = s.Append(context.Background(), testVerdict(1, a))
	require.NoError(t, err, "the reopened sink knows the log's open attempts")
	require.NoError(t, s.Close())
	rep := verifyFile(t, path)
	assert.Empty(t, rep.Unanswered)
}

// TestFileSinkHammerWithFailures appends actions from many goroutines while
// the disk fills and frees at random, and checks what a reader of the log
// must be able to rely on: it verifies, every verdict acknowledged is in
// it, and so is the attempt of every acknowledged verdict.
func TestFileSinkHammerWithFailures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, ff := openFaulty(t, path)
	const workers, each = 16, 40
	var acked sync.Map // verdict hash -> attempt hash
	var refused atomic.Int32
	stop := make(chan struct{})
	var flips sync.WaitGroup
	flips.Go(func() {
		for k := 0; ; k++ {
			select {
			case <-stop:
				ff.full.Store(false)
				ff.syncFails.Store(false)
				return
			case <-time.After(3 * time.Millisecond):
			}
			ff.full.Store(k%5 == 1)
			ff.syncFails.Store(k%7 == 3)
		}
	})
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	for w := range workers {
		wg.Go(func() {
			ok := 0
			for k := 0; ok < each && time.Now().Before(deadline); k++ {
				i := w*10_000 + k + 1
				a, err := s.Append(context.Background(), testAttempt(i))
				if err == nil {
					var v Record
					if v, err = s.Append(context.Background(), testVerdict(i, a)); err == nil {
						acked.Store(v.Hash, a.Hash)
						ok++
						continue
					}
				}
				assert.ErrorIs(t, err, ErrSinkFailed)
				refused.Add(1)
				time.Sleep(time.Millisecond) // the caller retries later
			}
		})
	}
	wg.Wait()
	close(stop)
	flips.Wait()
	require.NoError(t, s.Close())

	rep := verifyFile(t, path)
	byHash := map[string]Record{}
	for _, r := range readRecords(t, path) {
		byHash[r.Hash] = r
	}
	n := 0
	acked.Range(func(v, a any) bool {
		n++
		assert.Contains(t, byHash, v, "an acknowledged verdict is in the log")
		assert.Contains(t, byHash, a, "and so is its attempt")
		return true
	})
	t.Logf("%d actions acknowledged, %d refused, %d records, %d unanswered attempts", n, refused.Load(), rep.Records, len(rep.Unanswered))
	assert.Positive(t, n)
	assert.Positive(t, refused.Load(), "the disk did fail")
}
