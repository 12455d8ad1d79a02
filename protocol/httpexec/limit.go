package httpexec

import (
	"context"
	"time"
)

// limiter bounds the tool calls running at once. A call beyond the limit
// waits in a short queue, at most wait; when the queue is full, or the wait
// runs out, the call is refused (503) rather than left to pile up.
type limiter struct {
	slots chan struct{} // running calls
	queue chan struct{} // running and waiting calls
	wait  time.Duration
}

func newLimiter(running, waiting int, wait time.Duration) *limiter {
	return &limiter{
		slots: make(chan struct{}, running),
		queue: make(chan struct{}, running+waiting),
		wait:  wait,
	}
}

// acquire takes a slot, or reports false when the server is saturated or
// ctx ends first. release gives the slot back.
func (l *limiter) acquire(ctx context.Context) (release func(), ok bool) {
	select {
	case l.queue <- struct{}{}:
	default:
		return nil, false
	}
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots; <-l.queue }, true
	case <-t.C:
	case <-ctx.Done():
	}
	<-l.queue
	return nil, false
}
