package httpexec

import (
	"context"
	"errors"
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

// Why a call got no slot.
const (
	refusedQueueFull  = "queue_full"  // every slot busy, the queue full
	refusedQueueWait  = "queue_wait"  // no slot within the queue wait
	refusedClientGone = "client_gone" // the client left while waiting
)

// acquire takes a slot, or says why it could not: the server is saturated,
// or ctx ended first. release gives the slot back.
func (l *limiter) acquire(ctx context.Context) (release func(), refused string) {
	select {
	case l.queue <- struct{}{}:
	default:
		return nil, refusedQueueFull
	}
	select {
	case l.slots <- struct{}{}:
		// A free slot: no timer to set.
		return func() { <-l.slots; <-l.queue }, ""
	default:
	}
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots; <-l.queue }, ""
	case <-t.C:
		refused = refusedQueueWait
	case <-ctx.Done():
		refused = refusedClientGone
	}
	<-l.queue
	return nil, refused
}

// Admit takes a slot for one execution from the server's admission, as a
// call to /execute-tool does, for the other fronts it serves (MCP's tool
// calls): release gives it back. It fails, saying why, when the server is
// saturated (the queue is full, or no slot freed within QueueWait) or ctx
// ended first.
func (s *Server) Admit(ctx context.Context) (release func(), err error) {
	release, refused := s.limit.acquire(ctx)
	switch refused {
	case "":
		return release, nil
	case refusedQueueFull:
		return nil, errors.New("every execution slot is busy and the queue is full")
	case refusedQueueWait:
		return nil, errors.New("no execution slot freed within the queue wait")
	}
	return nil, errors.New("the caller left while waiting for an execution slot")
}
