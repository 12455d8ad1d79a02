package sandbox

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// MaxCallDepth is the deterministic call-depth limit every instrumented
// module traps at. It is below the lowest native limit of the engines we run
// (wazero's interpreter stops at 2,000 frames), so recursion fails at the
// same depth everywhere, as STACK_EXHAUSTED.
const MaxCallDepth = 1000

// interruptFuel is what the host writes into the fuel global to stop a guest
// at its next charge point. It is far below anything a guest can reach by
// spending fuel (budgets are at most MaxInt64), so a trap with the fuel below
// interruptThreshold was the host's doing, not the budget's.
const (
	interruptFuel      = math.MinInt64 / 2
	interruptThreshold = math.MinInt64 / 4
)

// fuelGlobal is an engine's handle on one of an instance's i64 globals.
type fuelGlobal interface {
	Get() int64
	Set(int64)
}

// meter is one execution's instruction budget and its wall-clock stop.
//
// The instrumented module holds the budget in two globals: the fuel global,
// the slice the guest is spending now, charged at every basic block, and the
// reserve global, the rest of the budget. When a slice runs out the guest's
// injected slow path refills it from the reserve, after a memory.grow of
// zero pages: an exit to the engine's Go side, where the Go scheduler can
// preempt the goroutine. That is what lets the deadline fire even when every
// scheduler thread is running guest code, which compiled code never yields
// on its own. A guest traps when the slice is spent and the reserve is empty.
//
// The wall-clock stop needs no help from the engine: when the deadline
// passes (or the caller cancels), the host drives the reserve far below zero
// and the guest traps at its next refill, within one slice. The write is
// repeated every millisecond until the run ends, because a guest refilling
// at that very moment can overwrite one write with its own.
//
// Work the host does for the guest (a host function hashing, deriving a
// key, generating one) is charged to the same budget (charge), so that
// fuel_used counts it and fuel, not the clock, stops a guest that asks the
// host for more than its budget buys.
type meter struct {
	limit   int64
	slice   fuelGlobal
	reserve fuelGlobal

	// mu orders the host's writes to the globals from two goroutines: the
	// interrupt's and a charge's (made on the guest's goroutine, inside a
	// host function, while the guest waits for it). The guest's own writes
	// need no lock: it is stopped in the host function while a charge runs.
	mu          sync.Mutex
	done        chan struct{}
	exited      chan struct{}
	stopWatch   func() bool
	interrupted atomic.Bool
	usedAtStop  int64
}

func newMeter(limit uint64) *meter {
	if limit > math.MaxInt64/2 {
		limit = math.MaxInt64 / 2
	}
	return &meter{limit: int64(limit), done: make(chan struct{}), exited: make(chan struct{})}
}

// setBudget puts the whole budget in the reserve: the guest's first charge
// takes its first slice from it.
func (m *meter) setBudget(slice, reserve fuelGlobal) {
	m.slice, m.reserve = slice, reserve
	slice.Set(0)
	reserve.Set(m.limit)
}

// arm sets the budget and starts watching ctx: when it is done, the guest is
// interrupted.
func (m *meter) arm(ctx context.Context, slice, reserve fuelGlobal) {
	m.setBudget(slice, reserve)
	m.stopWatch = context.AfterFunc(ctx, m.interrupt)
}

func (m *meter) left() int64 { return m.slice.Get() + m.reserve.Get() }

func (m *meter) interrupt() {
	defer close(m.exited)
	m.mu.Lock()
	m.usedAtStop = m.limit - m.left()
	m.interrupted.Store(true)
	m.mu.Unlock()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		m.mu.Lock()
		m.reserve.Set(interruptFuel)
		m.mu.Unlock()
		select {
		case <-m.done:
			return
		case <-tick.C:
		}
	}
}

// charge takes n units of the budget for work the host did or is about to
// do for the guest (host.Session.Charge), from the reserve first, then from
// the slice. It reports whether the budget paid for it.
//
// When it cannot, the budget is spent as if the guest had burnt it: the
// slice is left at -1 and the reserve at 0, so the guest traps at its next
// basic block (the block's charge finds nothing to refill from), the sum
// left reads as exhaustion, not as the host's stop, and fuel_used is the
// whole budget on every engine. Once the host has interrupted the guest
// (its deadline, the caller's cancellation) a charge takes nothing and
// reports false: the interrupt's value stays in the reserve, and the fuel
// used is what it was when the guest was stopped.
func (m *meter) charge(n uint64) bool {
	if m.slice == nil {
		// No budget was set: an uninstrumented module (benchmarks).
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.interrupted.Load() {
		return false
	}
	slice, reserve := m.slice.Get(), m.reserve.Get()
	// The sum left is at most the limit, itself at most MaxInt64/2: a
	// cost clamped to the limit plus one cannot overflow and still
	// exceeds anything left.
	cost := int64(min(n, uint64(m.limit)+1))
	if slice+reserve < cost {
		m.reserve.Set(0)
		m.slice.Set(-1)
		return false
	}
	if cost <= reserve {
		m.reserve.Set(reserve - cost)
		return true
	}
	m.reserve.Set(0)
	m.slice.Set(slice - (cost - reserve))
	return true
}

// finish stops the watch and reports the fuel left and whether the host
// interrupted the guest. It must be called once the guest no longer runs.
func (m *meter) finish() (left int64, interrupted bool) {
	close(m.done)
	if m.stopWatch != nil && !m.stopWatch() {
		// The interrupt started: wait until it stops writing.
		<-m.exited
	}
	if m.slice == nil {
		return m.limit, false
	}
	return m.left(), m.interrupted.Load()
}

// used is the fuel consumed, given what was left: the whole budget when it
// ran out, the amount spent before the stop when the host interrupted.
func (m *meter) used(left int64, interrupted bool) uint64 {
	switch {
	case interrupted:
		return uint64(max(m.usedAtStop, 0))
	case left < 0:
		return uint64(m.limit)
	}
	return uint64(m.limit - left)
}
