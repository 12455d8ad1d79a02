package httpexec

import (
	"context"
	"errors"

	"github.com/wasmgate/wasmgate/internal/admission"
)

// Why a call got no slot from the server's gate (admission.NewQueued: a
// call beyond the limit waits in a short queue, at most QueueWait; when the
// queue is full, or the wait runs out, it is refused (503) rather than left
// to pile up), as the metrics label it.
const (
	refusedQueueFull  = "queue_full"  // every slot busy, the queue full
	refusedQueueWait  = "queue_wait"  // no slot within the queue wait
	refusedClientGone = "client_gone" // the client left before a slot was free
)

// admit takes a slot from the server's gate, or says why it could not: the
// server is saturated, or ctx ended first. release gives the slot back.
func (s *Server) admit(ctx context.Context) (release func(), refused string) {
	release, err := s.gate.Acquire(ctx)
	switch {
	case err == nil:
		return release, ""
	case errors.Is(err, admission.ErrQueueFull):
		return nil, refusedQueueFull
	case errors.Is(err, admission.ErrQueueWait):
		return nil, refusedQueueWait
	}
	return nil, refusedClientGone
}

// Admit takes a slot for one execution from the server's admission, as a
// call to /execute-tool does, for the other fronts it serves (MCP's tool
// calls): release gives it back. It fails, saying why, when the server is
// saturated (the queue is full, or no slot freed within QueueWait) or ctx
// ended first.
func (s *Server) Admit(ctx context.Context) (release func(), err error) {
	release, refused := s.admit(ctx)
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
