package tscheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

const (
	// DefaultTimeout bounds a Check's compiler runs in wall-clock time when
	// Checker.Timeout is 0. An ordinary script checks in about 30 ms warm
	// (BenchmarkCheck50Lines) and a first, cold run in well under a second;
	// a pathological type has kept the compiler going for minutes.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxMemory bounds the compiler's resident memory in bytes when
	// Checker.MaxMemory is 0. An ordinary check peaks at about 22 MB
	// (measured with /usr/bin/time on TypeScript 7.0.2, linux-x64); a
	// template-literal type that doubles a string 26 times reaches 740 MB
	// in under three seconds.
	DefaultMaxMemory = 1 << 30
)

// Sentinels of the bounds a Check runs under, for errors.Is.
const (
	// ErrTimeBound: the compiler ran longer than Checker.Timeout and was
	// stopped.
	ErrTimeBound = sentinel.Error("tscheck: the type check ran out of time")
	// ErrMemoryBound: the compiler's resident memory, or what it printed,
	// passed Checker.MaxMemory, and it was stopped.
	ErrMemoryBound = sentinel.Error("tscheck: the type check ran out of memory")
)

// boundError is a bound that stopped the compiler: its text says which and
// how far, errors.Is matches the sentinel.
type boundError struct {
	sentinel sentinel.Error
	msg      string
}

func (e *boundError) Error() string        { return e.msg }
func (e *boundError) Is(target error) bool { return target == e.sentinel }

// memoryPoll is how often the compiler's resident memory is read. A
// compiler growing by gigabytes a second passes the bound by a few tens of
// megabytes at most before it is stopped.
const memoryPoll = 10 * time.Millisecond

// bounds are what one Check's compiler runs may take: all of them together
// end by deadline (timeout after the Check began), and each may hold
// maxMemory bytes.
type bounds struct {
	deadline  time.Time
	timeout   time.Duration
	maxMemory int64
}

// run is one compiler run: bin with args in dir, stopped when b's deadline
// passes (ctx's own end is the caller's, reported as such) or when its
// resident memory or its output passes b's maxMemory. script names the
// script in errors.
//
// The memory bound is a watch on the child's resident set, not RLIMIT_AS:
// the compiler is a Go program, which reserves address space it never
// touches, and under prlimit --as it failed to start at 600 MB and at
// 1.2 GB while starting at 800 MB (TypeScript 7.0.2, linux-x64), so no
// address-space limit is a bound on memory. GOMEMLIMIT, set at three
// quarters of the bound, makes its collector work harder before the watch
// stops it, so a check that needs less than the bound stays under it.
func run(ctx context.Context, b bounds, script, bin, dir string, args ...string) (stdout, stderr []byte, exit int, err error) {
	maxMemory := b.maxMemory
	runCtx, cancel := context.WithDeadline(ctx, b.deadline)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+strconv.FormatInt(maxMemory/4*3, 10))
	// The compiler starts no children; should one hold its pipes open
	// after a kill, Wait gives up on them rather than hang.
	cmd.WaitDelay = time.Second

	var overMemory atomic.Bool
	stop := func() {
		overMemory.Store(true)
		cancel()
	}
	out := &boundedOutput{max: maxMemory, over: stop}
	cmd.Stdout, cmd.Stderr = out.stream(0), out.stream(1)
	if err := cmd.Start(); err != nil {
		return nil, nil, 0, fmt.Errorf("tscheck: run %s: %w", bin, err)
	}
	done := make(chan struct{})
	var watched sync.WaitGroup
	watched.Go(func() { watchMemory(cmd.Process.Pid, maxMemory, done, stop) })
	runErr := cmd.Wait()
	close(done)
	watched.Wait()

	switch {
	case overMemory.Load():
		return nil, nil, 0, &boundError{ErrMemoryBound, fmt.Sprintf(
			"tscheck: type-checking %s used more than the memory bound, %d MiB (Checker.MaxMemory): the compiler was stopped", script, maxMemory>>20)}
	case ctx.Err() != nil:
		return nil, nil, 0, fmt.Errorf("tscheck: type-checking %s stopped: %w", script, ctx.Err())
	case runCtx.Err() != nil:
		return nil, nil, 0, &boundError{ErrTimeBound, fmt.Sprintf(
			"tscheck: type-checking %s took longer than the time bound, %s (Checker.Timeout): the compiler was stopped", script, b.timeout)}
	}
	var exitErr *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exitErr) {
		return nil, nil, 0, fmt.Errorf("tscheck: run %s: %w", bin, runErr)
	}
	return out.bufs[0].Bytes(), out.bufs[1].Bytes(), cmd.ProcessState.ExitCode(), nil
}

// watchMemory calls stop once the resident memory of process pid passes
// max, reading it every memoryPoll until done is closed. Where the
// platform cannot say (no /proc), it watches nothing: the time bound and
// GOMEMLIMIT remain.
func watchMemory(pid int, max int64, done <-chan struct{}, stop func()) {
	tick := time.NewTicker(memoryPoll)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			rss, err := residentBytes(pid)
			if err != nil {
				if errors.Is(err, errUnsupported) {
					return
				}
				continue // the process is exiting
			}
			if rss > max {
				stop()
				return
			}
		}
	}
}

// errUnsupported is residentBytes on a platform that cannot read another
// process's resident memory.
const errUnsupported = sentinel.Error("tscheck: resident memory cannot be read on this platform")

// boundedOutput holds the compiler's stdout and stderr, together at most
// max bytes: output is memory too, and a type printed in a diagnostic can
// be as large as the compiler's memory. Past max it calls over once and
// keeps nothing more.
type boundedOutput struct {
	mu   sync.Mutex
	max  int64
	n    int64
	bufs [2]bytes.Buffer
	over func()
	done bool
}

func (o *boundedOutput) stream(i int) *outputStream { return &outputStream{o, i} }

type outputStream struct {
	o *boundedOutput
	i int
}

func (s *outputStream) Write(p []byte) (int, error) {
	o := s.o
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return len(p), nil
	}
	if o.n+int64(len(p)) > o.max {
		o.done = true
		o.over()
		return len(p), nil
	}
	o.n += int64(len(p))
	o.bufs[s.i].Write(p)
	return len(p), nil
}
