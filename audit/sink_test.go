package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openTemp(t testing.TB) *FileSink {
	t.Helper()
	s, err := OpenFile(filepath.Join(t.TempDir(), "audit.jsonl"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func appendN(t testing.TB, s Sink, from, n int) []Record {
	t.Helper()
	var out []Record
	for i := from; i < from+n; i++ {
		r, err := s.Append(context.Background(), testRecord(i))
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

// readRecords decodes every line of the log at path.
func readRecords(t *testing.T, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []Record
	for line := range strings.Lines(string(data)) {
		var r Record
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		out = append(out, r)
	}
	return out
}

func verifyFile(t *testing.T, path string) VerifyReport {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, err := Verify(f)
	require.NoError(t, err)
	return rep
}

func TestFileSinkChainVerifies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)
	appended := appendN(t, s, 1, 25)
	require.NoError(t, s.Close())

	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())

	rep := verifyFile(t, path)
	assert.Equal(t, 25, rep.Records)
	assert.Equal(t, appended[24].Hash, rep.LastHash)
	assert.Equal(t, appended, readRecords(t, path), "Append returns the records as stored")
	for i, r := range appended {
		assert.EqualValues(t, i+1, r.Seq)
	}
}

func TestSinksWriteIdenticalLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenFile(path)
	require.NoError(t, err)
	m := NewMemorySink()
	fromFile := appendN(t, f, 1, 10)
	fromMemory := appendN(t, m, 1, 10)
	require.NoError(t, f.Close())

	assert.Equal(t, fromFile, fromMemory)
	assert.Equal(t, fromMemory, m.Records())
	var buf bytes.Buffer
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	onDisk, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(onDisk), buf.String())
}

func TestFileSinkResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)
	first := appendN(t, s, 1, 3)
	require.NoError(t, s.Close())

	s, err = OpenFile(path)
	require.NoError(t, err)
	second := appendN(t, s, 4, 2)
	require.NoError(t, s.Close())

	assert.EqualValues(t, 4, second[0].Seq)
	assert.Equal(t, first[2].Hash, second[0].Prev)
	assert.EqualValues(t, 5, second[1].Seq)
	assert.Equal(t, 5, verifyFile(t, path).Records)
}

func TestOpenFileRefusesDamagedLog(t *testing.T) {
	lines := memoryLog(t, 4)
	for _, tc := range []struct {
		name   string
		log    string
		line   int
		reason string
	}{
		{"torn tail", strings.Join(lines[:3], "") + lines[3][:40], 4, "torn last line"},
		{"missing final newline", strings.Join(lines[:3], "") + strings.TrimSuffix(lines[3], "\n"), 4, "torn last line"},
		{"edited middle line", strings.Join(lines[:1], "") + strings.Replace(lines[1], "1.2.0", "1.2.1", 1) + strings.Join(lines[2:], ""), 2, "hash mismatch"},
		{"removed middle line", lines[0] + strings.Join(lines[2:], ""), 2, "seq gap"},
		{"not a log", "hello\n", 1, "invalid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.log), 0o600))

			s, err := OpenFile(path)
			require.Nil(t, s)
			requireChainError(t, err, tc.line, tc.reason)
			assert.Contains(t, err.Error(), path)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.log, string(after), "refusing must not touch a byte")
		})
	}
}

func TestOpenFileRefusesNonFiles(t *testing.T) {
	dir := t.TempDir()
	_, err := OpenFile(dir)
	require.Error(t, err, "a directory")

	_, err = OpenFile(filepath.Join(dir, "missing", "audit.jsonl"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	if _, statErr := os.Stat("/dev/full"); statErr == nil {
		_, err = OpenFile("/dev/full")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not a regular file")
	}
}

func TestOpenFileLocksTheLog(t *testing.T) {
	if !canLock {
		t.Skip("no file locking on this platform")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)
	_, err = OpenFile(path, WithLockWait(0))
	require.ErrorIs(t, err, ErrLocked)
	assert.Contains(t, err.Error(), path)

	// A holder that lets go within the wait is waited for; the chain
	// continues from its last record.
	appendN(t, s, 1, 2)
	released := make(chan struct{})
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.Close()
		close(released)
	}()
	s2, err := OpenFile(path, WithLockWait(time.Minute))
	require.NoError(t, err, "the second sink waits for the first")
	<-released
	r, err := s2.Append(context.Background(), testRecord(3))
	require.NoError(t, err)
	assert.EqualValues(t, 3, r.Seq)

	// One that does not is given up on, with the wait in the message.
	_, err = OpenFile(path, WithLockWait(50*time.Millisecond))
	require.ErrorIs(t, err, ErrLocked)
	assert.Contains(t, err.Error(), "waited 50ms")
	require.NoError(t, s2.Close())
	assert.Equal(t, 3, verifyFile(t, path).Records)
}

func TestFileSinkConcurrentAppends(t *testing.T) {
	const writers, each = 32, 40
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)

	var wg sync.WaitGroup
	results := make([][]Record, writers)
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r, err := s.Append(context.Background(), testRecord(w*each+i+1))
				if err != nil {
					errs[w] = err
					return
				}
				results[w] = append(results[w], r)
			}
		})
	}
	wg.Wait()
	require.NoError(t, s.Close())
	for _, err := range errs {
		require.NoError(t, err)
	}

	assert.Equal(t, writers*each, verifyFile(t, path).Records)
	stored := readRecords(t, path)
	var seqs []uint64
	for w, rs := range results {
		for i, r := range rs {
			if i > 0 {
				assert.Greater(t, r.Seq, rs[i-1].Seq, "one writer's records keep their order")
			}
			assert.Equal(t, stored[r.Seq-1], r, "writer %d got back what was stored", w)
			seqs = append(seqs, r.Seq)
		}
	}
	slices.Sort(seqs)
	for i, seq := range seqs {
		require.EqualValues(t, i+1, seq, "seqs are exactly 1..N")
	}
}

func TestFileSinkFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
		// breakFile makes the sink's next write or fsync fail for real.
		breakFile func(t *testing.T, s *FileSink)
	}{
		{"device full", syscall.ENOSPC, func(t *testing.T, s *FileSink) {
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Skip("no /dev/full:", err)
			}
			t.Cleanup(func() { full.Close() })
			s.f = full
		}},
		{"file closed underneath", os.ErrClosed, func(t *testing.T, s *FileSink) {
			require.NoError(t, s.f.Close())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			s, err := OpenFile(path)
			require.NoError(t, err)
			s.opts.retryMin, s.opts.retryMax = time.Hour, time.Hour // no recovery in this test
			appendN(t, s, 1, 2)

			tc.breakFile(t, s)
			_, err = s.Append(context.Background(), testRecord(3))
			require.ErrorIs(t, err, ErrSinkFailed)
			require.ErrorIs(t, err, tc.cause)
			require.ErrorIs(t, s.Health(), ErrSinkFailed)

			// While it fails, the sink refuses at once, without touching
			// the file: the caller learns it before running anything.
			for range 2 {
				_, err = s.Append(context.Background(), testAttempt(4))
				require.ErrorIs(t, err, ErrSinkFailed)
			}
			s.Close()

			rep := verifyFile(t, path)
			assert.Equal(t, 2, rep.Records, "the log holds what was acknowledged, and no hole")
		})
	}
}

// gatedFile blocks its first Write until released, then fails it.
type gatedFile struct {
	entered, release chan struct{}
	err              error
}

func (g *gatedFile) Write([]byte) (int, error) {
	close(g.entered)
	<-g.release
	return 0, g.err
}
func (g *gatedFile) Sync() error          { return nil }
func (g *gatedFile) Truncate(int64) error { return nil }
func (g *gatedFile) Close() error         { return nil }

func TestFileSinkFailureFailsQueuedAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)
	appendN(t, s, 1, 1)
	good := s.f
	gate := &gatedFile{entered: make(chan struct{}), release: make(chan struct{}), err: syscall.EIO}
	s.f = gate

	const queued = 5
	errs := make(chan error, queued+1)
	go func() { _, err := s.Append(context.Background(), testRecord(2)); errs <- err }()
	<-gate.entered // the leader is inside Write
	for i := range queued {
		go func() { _, err := s.Append(context.Background(), testRecord(3+i)); errs <- err }()
	}
	require.Eventually(t, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return bytes.Count(s.pending.buf, []byte{'\n'}) == queued
	}, 5*time.Second, time.Millisecond, "appenders queue behind the write in flight")
	close(gate.release)
	for range queued + 1 {
		require.ErrorIs(t, <-errs, syscall.EIO)
	}
	s.f = good
	require.NoError(t, s.Close())
	assert.Equal(t, 1, verifyFile(t, path).Records, "queued records are not written after a failure")
}

func TestAppendHonoursCancelledContext(t *testing.T) {
	for _, s := range []Sink{NewMemorySink(), openTemp(t)} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := s.Append(ctx, testRecord(1))
		require.ErrorIs(t, err, context.Canceled)
		r, err := s.Append(context.Background(), testRecord(1))
		require.NoError(t, err)
		assert.EqualValues(t, 1, r.Seq, "a cancelled append takes no seq")
	}
}

func TestClose(t *testing.T) {
	for _, s := range []Sink{NewMemorySink(), openTemp(t)} {
		appendN(t, s, 1, 1)
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "Close is idempotent")
		_, err := s.Append(context.Background(), testRecord(2))
		require.ErrorIs(t, err, ErrClosed)
	}
}

func TestCloseWaitsForQueuedAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := OpenFile(path)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := 0
	for i := range 16 {
		wg.Go(func() {
			if _, err := s.Append(context.Background(), testRecord(i+1)); err == nil {
				mu.Lock()
				acked++
				mu.Unlock()
			}
		})
	}
	require.NoError(t, s.Close())
	wg.Wait()
	assert.Equal(t, acked, verifyFile(t, path).Records, "every acknowledged record is in the file")
}

func BenchmarkFileSinkAppend(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		s := openTemp(b)
		r := testRecord(1)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Append(context.Background(), r); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, goroutines := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("parallel-%d", goroutines), func(b *testing.B) {
			s := openTemp(b)
			r := testRecord(1)
			b.ReportAllocs()
			b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Append(context.Background(), r); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkMemorySinkAppend(b *testing.B) {
	s := NewMemorySink()
	r := testRecord(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	lines := memoryLog(b, 1000)
	log := []byte(strings.Join(lines, ""))
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(bytes.NewReader(log)); err != nil {
			b.Fatal(err)
		}
	}
}
