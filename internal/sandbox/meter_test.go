package sandbox

import (
	"context"
	"math"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/host"
)

// testGlobal is a fuel global held in Go memory, as wazero's interpreter
// holds it: the race detector sees every access.
type testGlobal struct{ v int64 }

func (g *testGlobal) Get() int64  { return g.v }
func (g *testGlobal) Set(v int64) { g.v = v }

// TestMeterChargeTakesFromTheBudget: a charge for host work takes from the
// reserve, then from the slice; one the budget cannot pay leaves it spent
// as if the guest had burnt it (the guest traps at its next block, and
// fuel_used is the limit), whatever the size asked.
func TestMeterChargeTakesFromTheBudget(t *testing.T) {
	cases := []struct {
		name                   string
		n                      uint64
		ok                     bool
		wantSlice, wantReserve int64
		used                   uint64
	}{
		{"nothing", 0, true, 100, 900, 0},
		{"from the reserve", 300, true, 100, 600, 300},
		{"the whole reserve", 900, true, 100, 0, 900},
		{"into the slice", 950, true, 50, 0, 950},
		{"all that is left", 1000, true, 0, 0, 1000},
		{"one more than is left", 1001, false, -1, 0, 1000},
		{"the most a charge can ask", math.MaxUint64, false, -1, 0, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMeter(1000)
			slice, reserve := &testGlobal{}, &testGlobal{}
			m.setBudget(slice, reserve)
			slice.Set(100) // the guest took its first slice
			reserve.Set(900)
			assert.Equal(t, c.ok, m.charge(c.n))
			assert.Equal(t, c.wantSlice, slice.Get(), "slice")
			assert.Equal(t, c.wantReserve, reserve.Get(), "reserve")
			left, interrupted := m.finish()
			assert.False(t, interrupted)
			assert.Equal(t, c.used, m.used(left, interrupted))
		})
	}
}

// TestMeterChargeAfterItIsSpent: once a charge could not be paid, every
// later one fails too and the budget stays spent.
func TestMeterChargeAfterItIsSpent(t *testing.T) {
	m := newMeter(1000)
	slice, reserve := &testGlobal{}, &testGlobal{}
	m.setBudget(slice, reserve)
	require.False(t, m.charge(1001))
	assert.False(t, m.charge(0))
	assert.False(t, m.charge(1))
	assert.Equal(t, int64(-1), slice.Get()+reserve.Get())
	left, interrupted := m.finish()
	assert.Equal(t, uint64(1000), m.used(left, interrupted))
}

// TestMeterWithoutBudgetChargesNothing: a module run without
// instrumentation (benchmarks) has no budget to charge.
func TestMeterWithoutBudgetChargesNothing(t *testing.T) {
	m := newMeter(1000)
	assert.True(t, m.charge(math.MaxUint64))
}

// TestSessionChargeReachesTheMeter: a host function's Session.Charge is
// the run's meter once the runtime attached it, and charges nothing
// before.
func TestSessionChargeReachesTheMeter(t *testing.T) {
	sess := host.NewSession(nil, [32]byte{}, 0)
	assert.True(t, sess.Charge(math.MaxUint64), "no budget attached")
	m := newMeter(1000)
	slice, reserve := &testGlobal{}, &testGlobal{}
	m.setBudget(slice, reserve)
	sess.SetFuelCharge(m.charge)
	require.True(t, sess.Charge(400))
	assert.Equal(t, int64(600), slice.Get()+reserve.Get())
	require.False(t, sess.Charge(601))
	left, interrupted := m.finish()
	assert.Equal(t, uint64(1000), m.used(left, interrupted))
}

// TestMeterChargeKeepsTheInterrupt: once the host has interrupted the
// guest (its deadline, the caller's cancellation), a charge takes nothing
// and fails, leaving the interrupt's value in the reserve, and the fuel
// used is what had been used when the guest was stopped.
func TestMeterChargeKeepsTheInterrupt(t *testing.T) {
	m := newMeter(1000)
	slice, reserve := &testGlobal{}, &testGlobal{}
	ctx, cancel := context.WithCancel(context.Background())
	m.arm(ctx, slice, reserve)
	require.True(t, m.charge(300))
	cancel()
	for !m.interrupted.Load() {
		goruntime.Gosched()
	}
	assert.False(t, m.charge(1))
	m.mu.Lock()
	assert.Equal(t, int64(interruptFuel), reserve.Get())
	m.mu.Unlock()
	left, interrupted := m.finish()
	assert.True(t, interrupted)
	assert.Equal(t, uint64(300), m.used(left, interrupted))
}

// TestMeterChargeRacingTheInterrupt: charges made while the interrupt
// fires never undo it (the race detector checks that the two goroutines'
// writes are ordered): every charge that starts after the interrupt fails,
// and the reserve the run ends with is the interrupt's.
func TestMeterChargeRacingTheInterrupt(t *testing.T) {
	for range 50 {
		m := newMeter(math.MaxInt64 / 2)
		slice, reserve := &testGlobal{}, &testGlobal{}
		ctx, cancel := context.WithCancel(context.Background())
		m.arm(ctx, slice, reserve)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2000 {
				after := m.interrupted.Load()
				if ok := m.charge(1); after {
					assert.False(t, ok, "a charge after the interrupt")
				}
			}
		}()
		cancel()
		wg.Wait()
		left, interrupted := m.finish()
		require.True(t, interrupted)
		assert.Less(t, left, int64(interruptThreshold))
		assert.LessOrEqual(t, m.used(left, interrupted), uint64(2000))
	}
}
