package admission

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGateHandsOutItsSlots(t *testing.T) {
	g := New(2)
	ctx := context.Background()
	a, err := g.Acquire(ctx)
	require.NoError(t, err)
	_, err = g.Acquire(ctx)
	require.NoError(t, err)
	_, ok := g.TryAcquire()
	assert.False(t, ok, "both slots held")
	a()
	a()
	c, ok := g.TryAcquire()
	require.True(t, ok, "a released slot is free again")
	_, ok = g.TryAcquire()
	assert.False(t, ok, "a second release of the same slot frees nothing")
	c()
}

func TestGateRefusesAnEndedContext(t *testing.T) {
	gone := errors.New("the caller left")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(gone)
	for name, g := range map[string]*Gate{"waiting": New(1), "queued": NewQueued(1, 1, time.Hour)} {
		t.Run(name, func(t *testing.T) {
			_, err := g.Acquire(ctx)
			require.ErrorIs(t, err, gone, "even a free slot")
			release, ok := g.TryAcquire()
			require.True(t, ok, "the refusal held nothing")
			release()
		})
	}
}

// A caller waiting for a slot gets the cause of its context's end.
func TestGateWaiterLeaves(t *testing.T) {
	g := New(1)
	held, err := g.Acquire(context.Background())
	require.NoError(t, err)
	defer held()
	gone := errors.New("the caller left")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := g.Acquire(ctx)
		done <- err
	}()
	cancel(gone)
	require.ErrorIs(t, <-done, gone)
}

func TestQueuedGateRefusesBeyondItsQueue(t *testing.T) {
	g := NewQueued(1, 1, time.Hour)
	held, err := g.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		release, err := g.Acquire(ctx)
		if err == nil {
			release()
		}
		waited <- err
	}()
	for len(g.queue) < 2 { // the waiter is queued
		runtime.Gosched()
	}
	_, err = g.Acquire(context.Background())
	require.ErrorIs(t, err, ErrQueueFull)
	_, ok := g.TryAcquire()
	assert.False(t, ok)
	held()
	require.NoError(t, <-waited, "the queued caller got the slot freed")
	cancel()
}

func TestQueuedGateWaitRunsOut(t *testing.T) {
	g := NewQueued(1, 1, time.Millisecond)
	held, err := g.Acquire(context.Background())
	require.NoError(t, err)
	defer held()
	// The slot is never freed, so the wait runs out whatever the load.
	_, err = g.Acquire(context.Background())
	require.ErrorIs(t, err, ErrQueueWait)
	assert.Len(t, g.queue, 1, "the refused caller left the queue")
}
