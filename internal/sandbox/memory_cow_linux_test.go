package sandbox

import (
	"bytes"
	"context"
	goruntime "runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCOWSameOutcomes: starting from a snapshot mapped copy-on-write is
// invisible to a tool: the same outputs, messages, logs and fuel as the copy.
func TestCOWSameOutcomes(t *testing.T) {
	cases := []struct {
		name, src, input string
		lim              Limits
		want             OutcomeKind
	}{
		{"result", `export function execute({text}) { console.log("got", text); return {text: text.trim(), r: Math.random()}; }`,
			`{"text":"  hello  "}`, Limits{}, Completed},
		{"thrown error", `export function execute() { throw new TypeError("no such thing"); }`,
			`{}`, Limits{}, Failed},
		// The snapshot is ~22 pages: the bomb grows memory past the image
		// up to the limit.
		{"allocation bomb", `export function execute() { const a = []; for (;;) a.push(new Array(100000).fill(1)); }`,
			`{}`, Limits{MemoryPages: 48}, MemoryExhausted},
		{"large output", `export function execute({n}) { return {s: "x".repeat(n)}; }`,
			`{"n":3000000}`, Limits{Fuel: 2_000_000_000, MaxOutputBytes: 4 << 20}, Completed},
	}
	copyReactor, cowReactor := jsReactor(t, snapshotStarts[0].cfg), jsReactor(t, snapshotStarts[1].cfg)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			plain := loadJSToolOn(t, copyReactor, c.src)
			cow := loadJSToolOn(t, cowReactor, c.src)
			requireCOW(t, cow.snap)
			require.Equal(t, plain.snap.memory, cow.snap.memory, "loading does not depend on the allocator")
			// No case is about the clock: none must fail because the race
			// detector or other test packages slow it down.
			c.lim.TimeoutMs = 120_000
			want, err := plain.run(ctx, c.input, c.lim)
			require.NoError(t, err)
			require.Equal(t, c.want, want.Kind, want.Message)
			for range 2 {
				got, err := cow.run(ctx, c.input, c.lim)
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
		})
	}
}

// TestCOWIsolation: an execution's writes never reach the snapshot, so no
// other execution from it, before, after or at the same time, sees them.
func TestCOWIsolation(t *testing.T) {
	tool := loadJSTool(t, snapshotStarts[1].cfg,
		`export function execute() { globalThis.n = (globalThis.n || 0) + 1; globalThis.junk = "y".repeat(1 << 20); return n; }`)
	requireCOW(t, tool.snap)
	before := bytes.Clone(tool.snap.memory)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				o, err := tool.run(context.Background(), `{}`, Limits{Fuel: 2_000_000_000, TimeoutMs: 120_000})
				if assert.NoError(t, err) && assert.Equal(t, Completed, o.Kind, o.Message) {
					assert.Equal(t, "1", string(o.Output))
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, before, tool.snap.memory)
}

// TestCOWMemory: the allocator on its own, as wazero drives it.
func TestCOWMemory(t *testing.T) {
	image := bytes.Repeat([]byte{0xAB}, 2*pageSize)
	image[0], image[len(image)-1] = 1, 2
	snap := &Snapshot{memory: image}
	const limit = 4 * pageSize
	newMemory := func() *cowAllocator {
		a, ok := newInstanceMemory(limit, snap, true).(*cowAllocator)
		require.True(t, ok, "copy-on-write is available on Linux")
		return a
	}

	a := newMemory()
	mem := a.Allocate(pageSize, 1<<32)
	require.IsType(t, &cowMemory{}, mem, "the image is mapped")
	buf := mem.Reallocate(pageSize)
	require.Len(t, buf, pageSize)
	grown := mem.Reallocate(3 * pageSize)
	require.Len(t, grown, 3*pageSize)
	require.Same(t, &buf[0], &grown[0], "growing keeps the address")
	assert.Equal(t, image, grown[:len(image)])
	assert.Equal(t, make([]byte, pageSize), grown[len(image):], "zero past the image")
	grown[0], grown[len(image)] = 9, 9

	assert.Nil(t, mem.Reallocate(limit+pageSize))
	assert.True(t, a.refused())
	assert.NotNil(t, mem.Reallocate(limit), "up to the limit")

	b := newMemory()
	other := b.Allocate(0, 1<<32).Reallocate(3 * pageSize)
	assert.Equal(t, byte(1), other[0], "another instance starts from the image")
	assert.Equal(t, byte(0), other[len(image)])
	assert.False(t, b.refused())
	assert.Equal(t, byte(1), image[0], "the snapshot is untouched")

	mem.Free()
	a.release()
	b.release()
	assert.Nil(t, a.mem.region)
}

// TestCOWImageFileClosed: a snapshot's memfd goes with the snapshot.
func TestCOWImageFileClosed(t *testing.T) {
	snap := &Snapshot{memory: make([]byte, pageSize)}
	_, ok := imageFile(snap)
	require.True(t, ok)
	key := weak.Make(snap)
	_, ok = imageFiles.Load(key)
	require.True(t, ok)
	snap = nil
	require.Eventually(t, func() bool {
		goruntime.GC()
		_, ok := imageFiles.Load(key)
		return !ok
	}, 10*time.Second, 10*time.Millisecond)
}
