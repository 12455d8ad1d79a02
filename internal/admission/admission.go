// Package admission bounds how many executions run at once. Every front
// that admits work takes its slots from a Gate: the HTTP front (and MCP's
// tool calls beside it) with a short bounded queue, REP's runs and a
// cluster worker's requests waiting as long as their context allows.
package admission

import (
	"context"
	"sync"
	"time"

	"github.com/wasmgate/wasmgate/internal/sentinel"
)

// Why Acquire found no slot, besides its context ending.
const (
	// ErrQueueFull: every slot is busy and the queue is full.
	ErrQueueFull = sentinel.Error("admission: every slot is busy and the queue is full")
	// ErrQueueWait: no slot freed within the queue's wait.
	ErrQueueWait = sentinel.Error("admission: no slot freed within the queue wait")
)

// Gate hands out a fixed number of slots. It is safe for concurrent use.
type Gate struct {
	slots chan struct{} // held slots
	queue chan struct{} // held and awaited slots; nil when unbounded
	wait  time.Duration // 0: as long as the context allows
}

// New returns a Gate of running slots (at least 1) whose callers wait for
// one as long as their context allows.
func New(running int) *Gate {
	return &Gate{slots: make(chan struct{}, max(running, 1))}
}

// NewQueued returns a Gate of running slots (at least 1) that lets at most
// waiting callers wait for one, each at most wait: a caller beyond them is
// refused at once (ErrQueueFull), one that waited wait in vain then
// (ErrQueueWait), rather than work piling up.
func NewQueued(running, waiting int, wait time.Duration) *Gate {
	running = max(running, 1)
	return &Gate{
		slots: make(chan struct{}, running),
		queue: make(chan struct{}, running+max(waiting, 0)),
		wait:  wait,
	}
}

// Acquire takes a slot, waiting for one as the Gate allows; release gives
// it back, once. A ctx that has ended gets no slot, even a free one: work
// whose caller is gone does not start.
//
// # Errors
//
// ErrQueueFull, ErrQueueWait (NewQueued's gates), and context.Cause(ctx)
// when ctx ends first.
func (g *Gate) Acquire(ctx context.Context) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	if g.queue != nil {
		select {
		case g.queue <- struct{}{}:
		default:
			return nil, ErrQueueFull
		}
	}
	select {
	case g.slots <- struct{}{}:
		// A free slot: no timer to set.
		return g.releaser(), nil
	default:
	}
	var expired <-chan time.Time
	if g.wait > 0 {
		t := time.NewTimer(g.wait)
		defer t.Stop()
		expired = t.C
	}
	select {
	case g.slots <- struct{}{}:
		if ctx.Err() == nil {
			return g.releaser(), nil
		}
		// ctx ended as the slot freed: select chose at random.
		<-g.slots
		err = context.Cause(ctx)
	case <-expired:
		err = ErrQueueWait
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if g.queue != nil {
		<-g.queue
	}
	return nil, err
}

// TryAcquire takes a free slot if there is one, without waiting or
// queueing; ok is false when every slot is held or awaited.
func (g *Gate) TryAcquire() (release func(), ok bool) {
	if g.queue != nil {
		select {
		case g.queue <- struct{}{}:
		default:
			return nil, false
		}
	}
	select {
	case g.slots <- struct{}{}:
		return g.releaser(), true
	default:
	}
	if g.queue != nil {
		<-g.queue
	}
	return nil, false
}

// releaser gives one held slot back, however often it is called.
func (g *Gate) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			<-g.slots
			if g.queue != nil {
				<-g.queue
			}
		})
	}
}
