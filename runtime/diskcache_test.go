package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/host"
)

func quickJSModule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "jstool", "engine", "quickjs.wasm"))
	require.NoError(t, err, "the QuickJS engine module is fetched by scripts/fetch-quickjs.sh (make test runs it)")
	return b
}

// entries lists the files of a cache, by name.
func entries(t *testing.T, c diskCache) []string {
	t.Helper()
	des, err := os.ReadDir(c.dir)
	require.NoError(t, err)
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestPreparedReactorFromTheCacheIsTheBuiltOne: what a later process reads
// from the cache is what building gives, byte for byte, for either form of
// the code; admission still refuses what it refuses.
func TestPreparedReactorFromTheCacheIsTheBuiltOne(t *testing.T) {
	qjs := quickJSModule(t)
	glue := host.QuickJSGlue()
	built, err := buildReactor(qjs, glue, false)
	require.NoError(t, err)
	for _, withData := range []bool{false, true} {
		c := newDiskCache(t.TempDir())
		var got []reactorCode
		for range 2 { // the first builds and stores, the second reads
			r, err := prepareReactor(c, qjs, glue, false, withData)
			require.NoError(t, err)
			got = append(got, r)
		}
		require.Len(t, entries(t, c), 1)
		for _, r := range got {
			assert.Equal(t, built.info, r.info)
			assert.Equal(t, built.globals, r.globals)
			assert.Equal(t, built.image.memory, r.image.memory)
			if withData {
				assert.Equal(t, built.withData, r.withData)
				assert.Nil(t, r.code)
			} else {
				assert.Equal(t, built.code, r.code)
				assert.Nil(t, r.withData)
			}
		}
	}

	// Admission runs on the module's own bytes every time, cache or not.
	c := newDiskCache(t.TempDir())
	_, err = prepareReactor(c, qjs, host.Glue{Name: "other"}, false, false)
	require.ErrorIs(t, err, ErrNotAdmitted)
	assert.EqualError(t, err, "module not admitted: import env.host_get_timezone_offset (func) is outside wasi_snapshot_preview1; only the virtual WASI may be imported")
}

// TestCorruptCacheEntryIsRebuilt: an entry that is truncated, has a byte
// changed, or was copied under another key's name does not verify: it is
// removed and rebuilt, and the result is the same.
func TestCorruptCacheEntryIsRebuilt(t *testing.T) {
	qjs := quickJSModule(t)
	glue := host.QuickJSGlue()
	built, err := buildReactor(qjs, glue, false)
	require.NoError(t, err)
	key := preparedKey(built.info.Digest, glue, false, false)

	corruptions := map[string]func(path string, b []byte){
		"truncated":   func(path string, b []byte) { require.NoError(t, os.WriteFile(path, b[:len(b)/2], 0o600)) },
		"empty":       func(path string, b []byte) { require.NoError(t, os.WriteFile(path, nil, 0o600)) },
		"a byte flip": func(path string, b []byte) { b[len(b)-100] ^= 1; require.NoError(t, os.WriteFile(path, b, 0o600)) },
		"the digest": func(path string, b []byte) {
			b[len(diskCacheMagic)] ^= 1
			require.NoError(t, os.WriteFile(path, b, 0o600))
		},
		"another key's entry": func(path string, b []byte) {
			// A verified entry of the uninstrumented module, under this
			// key's name.
			other := preparedKey(built.info.Digest, glue, true, false)
			c := diskCache{dir: filepath.Dir(path)}
			c.put(other, []byte("payload"))
			moved, err := os.ReadFile(c.path(other))
			require.NoError(t, err)
			require.NoError(t, os.Remove(c.path(other)))
			require.NoError(t, os.WriteFile(path, moved, 0o600))
		},
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			c := newDiskCache(t.TempDir())
			_, err := prepareReactor(c, qjs, glue, false, false)
			require.NoError(t, err)
			path := c.path(key)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			corrupt(path, b)

			_, ok := c.get(key)
			assert.False(t, ok, "a corrupt entry is not used")
			assert.NoFileExists(t, path, "a corrupt entry is removed")

			corrupt(path, b)
			r, err := prepareReactor(c, qjs, glue, false, false)
			require.NoError(t, err)
			assert.Equal(t, built.code, r.code)
			assert.Equal(t, built.image.memory, r.image.memory)
			assert.Equal(t, built.globals, r.globals)
			_, ok = c.get(key)
			assert.True(t, ok, "the rebuilt entry is stored again")
		})
	}
}

// TestCacheKeysDifferWithTheirInputs: every input an entry derives from is
// in its key.
func TestCacheKeysDifferWithTheirInputs(t *testing.T) {
	glue := host.QuickJSGlue()
	c := diskCache{dir: "/cache"}
	d1, d2 := digestHex([]byte("a")), digestHex([]byte("b"))
	reactors := []diskKey{
		preparedKey(d1, glue, false, false),
		preparedKey(d2, glue, false, false),
		preparedKey(d1, host.Glue{Name: "other"}, false, false),
		preparedKey(d1, glue, true, false),
		preparedKey(d1, glue, false, true),
	}
	in := Input{Bytes: []byte(`{}`), Digest: [32]byte{1}, Limits: Limits{Fuel: 100, MemoryPages: 64}}
	with := func(f func(*Input)) Input {
		in := in
		f(&in)
		return in
	}
	snapshots := []diskKey{
		snapshotKey("wazero\nA", "tool 1", in),
		snapshotKey("wazero\nB", "tool 1", in),
		snapshotKey("wazero-interp\nA", "tool 1", in),
		snapshotKey("wazero\nA", "tool 2", in),
		snapshotKey("wazero\nA", "tool 1", with(func(in *Input) { in.Bytes = []byte(`{"a":1}`) })),
		snapshotKey("wazero\nA", "tool 1", with(func(in *Input) { in.Digest = [32]byte{2} })),
		snapshotKey("wazero\nA", "tool 1", with(func(in *Input) { in.Limits.Fuel = 101 })),
		snapshotKey("wazero\nA", "tool 1", with(func(in *Input) { in.Limits.MemoryPages = 65 })),
		snapshotKey("wazero\nA", "tool 1", with(func(in *Input) { in.Limits.TimeoutMs = 5 })),
	}
	seen := map[string]int{}
	for i, k := range append(reactors, snapshots...) {
		p := c.path(k)
		if j, ok := seen[p]; ok {
			t.Errorf("keys %d and %d share the entry %s", j, i, p)
		}
		seen[p] = i
	}
	assert.Equal(t, c.path(preparedKey(d1, glue, false, false)), c.path(preparedKey(d1, glue, false, false)), "a key is stable")
	// Unset limits are their defaults: the same snapshot.
	assert.Equal(t, c.path(snapshotKey("o", "k", Input{})), c.path(snapshotKey("o", "k", Input{Limits: DefaultLimits})))
}

// TestPutReplacesOtherBuildsEntries: an entry another build wrote for the
// same thing is removed when this build writes its own.
func TestPutReplacesOtherBuildsEntries(t *testing.T) {
	c := newDiskCache(t.TempDir())
	k := diskKey{kind: "snapshot", what: "x"}
	require.NoError(t, os.MkdirAll(c.dir, 0o700))
	stale := filepath.Join(c.dir, k.stem()+"0123456789abcdef01234567")
	require.NoError(t, os.WriteFile(stale, []byte("old"), 0o600))
	other := diskKey{kind: "snapshot", what: "y"}
	c.put(other, []byte("y"))
	c.put(k, []byte("x"))
	assert.NoFileExists(t, stale)
	assert.ElementsMatch(t, []string{filepath.Base(c.path(k)), filepath.Base(c.path(other))}, entries(t, c))
	got, ok := c.get(k)
	require.True(t, ok)
	assert.Equal(t, "x", string(got))
}

// TestEvictRemovesTheLeastRecentlyUsed: past its bound, the cache keeps
// what was used last.
func TestEvictRemovesTheLeastRecentlyUsed(t *testing.T) {
	c := newDiskCache(t.TempDir())
	payload := make([]byte, 1000)
	keys := []diskKey{{"snapshot", "1"}, {"snapshot", "2"}, {"snapshot", "3"}, {"snapshot", "4"}}
	for _, k := range keys {
		c.put(k, payload)
	}
	old := time.Now().Add(-time.Hour)
	for i, k := range keys {
		require.NoError(t, os.Chtimes(c.path(k), old, old.Add(time.Duration(i)*time.Minute)))
	}
	_, ok := c.get(keys[0]) // used now: the most recent
	require.True(t, ok)
	c.evict(3500) // four entries of ~1,060 bytes: down to 2,625 bytes, two entries
	assert.ElementsMatch(t, []string{filepath.Base(c.path(keys[0])), filepath.Base(c.path(keys[3]))}, entries(t, c))
}

// TestSnapshotMarshalRoundTrips: an encoded snapshot decodes to the same
// memory and globals, keeping only its nonzero pages; what is not an
// encoded snapshot is refused, saying why.
func TestSnapshotMarshalRoundTrips(t *testing.T) {
	mem := make([]byte, 3*pageSize)
	mem[7] = 1
	mem[5*diffPage+3] = 2
	mem[len(mem)-1] = 3
	snap := &Snapshot{memory: mem, globals: []savedGlobal{{"a", 1}, {"b", 1 << 63}}}
	b, err := snap.MarshalBinary()
	require.NoError(t, err)
	assert.Less(t, len(b), 4*diffPage, "only the nonzero pages are encoded")
	got, err := UnmarshalSnapshot(b)
	require.NoError(t, err)
	assert.Equal(t, snap.memory, got.memory)
	assert.Equal(t, snap.globals, got.globals)
	assert.Equal(t, snap.nonzeroPages(), got.nonzeroPages())
	assert.Equal(t, 3*pageSize, got.MemoryBytes())

	empty, err := UnmarshalSnapshot((&Snapshot{}).appendBinary(nil))
	require.NoError(t, err)
	assert.Equal(t, 0, empty.MemoryBytes())

	_, err = UnmarshalSnapshot(b[:len(b)-1])
	assert.EqualError(t, err, "snapshot: truncated")
	_, err = UnmarshalSnapshot(append(b, 0))
	assert.EqualError(t, err, "snapshot: 1 bytes after the end")
	_, err = UnmarshalSnapshot([]byte("\x05hello"))
	assert.EqualError(t, err, `snapshot: not an encoded snapshot (it begins "hello")`)
	w := entryWriter{}
	w.string(snapshotMagic)
	w.uint(pageSize)
	w.uint(1)
	w.uint(pageSize - diffPage/2)
	w.bytes(make([]byte, diffPage))
	_, err = UnmarshalSnapshot(w.b)
	assert.EqualError(t, err, "snapshot: pages at 63488 (4096 bytes) out of order or outside the memory of 65536 bytes")
}

// TestCachedSnapshotIsTheTakenOne: a snapshot read from the cache by
// another engine (another process) has the memory, globals, output, fuel
// and stderr of the one taken, and init does not run again; executions
// from either are the same.
func TestCachedSnapshotIsTheTakenOne(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := `let loaded = 40; loaded++;
export function execute({ add }) { loaded += add; return { loaded }; }`
	in := Input{Limits: Limits{Fuel: 1 << 32, TimeoutMs: 60_000}}
	runs := 0
	init := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		runs++
		return host.QuickJSLoad(host.JSTool{Name: "t.js", Source: []byte(src)})(ctx, inst)
	}
	type taken struct {
		snap *Snapshot
		out  Outcome
		run  Outcome
	}
	load := func() taken {
		e, err := NewEngine(ctx, NewConfig().WithCompilationCacheDir(dir))
		require.NoError(t, err)
		defer e.Close(ctx)
		r, err := e.LoadReactor(ctx, quickJSModule(t), host.QuickJSGlue())
		require.NoError(t, err)
		snap, out, err := CachedSnapshot(ctx, r, "test "+digestHex([]byte(src)), in, init)
		require.NoError(t, err)
		require.Equal(t, Completed, out.Kind, out.Message)
		entry, err := host.ParseJSLoad(out.Output)
		require.NoError(t, err)
		call := Input{Bytes: []byte(`{"add":1}`), Digest: blake3.Sum256([]byte(`{"add":1}`))}
		var res host.JSResult
		o, err := r.Run(ctx, snap, call, Driver(host.QuickJSRun(entry, host.JSCall{Input: call.Bytes, Seed: call.Digest, MaxOutput: 1000}, &res)))
		require.NoError(t, err)
		return taken{snap, out, o}
	}
	cold := load()
	warm := load()
	assert.Equal(t, 1, runs, "the second load reads the snapshot")
	assert.Equal(t, cold.snap.memory, warm.snap.memory)
	assert.Equal(t, cold.snap.globals, warm.snap.globals)
	assert.Equal(t, cold.out, warm.out)
	assert.Equal(t, Completed, warm.run.Kind, warm.run.Message)
	assert.Equal(t, `{"loaded":42}`, string(warm.run.Output))
	assert.Equal(t, cold.run, warm.run)

	// An init that does not complete is not kept.
	failing := func(ctx context.Context, inst host.Instance) ([]byte, error) {
		runs++
		return nil, &host.GuestError{Msg: "no"}
	}
	for range 2 {
		e, err := NewEngine(ctx, NewConfig().WithCompilationCacheDir(dir))
		require.NoError(t, err)
		r, err := e.LoadReactor(ctx, quickJSModule(t), host.QuickJSGlue())
		require.NoError(t, err)
		snap, out, err := CachedSnapshot(ctx, r, "failing", in, failing)
		require.NoError(t, err)
		assert.Nil(t, snap)
		assert.NotEqual(t, Completed, out.Kind)
		require.NoError(t, e.Close(ctx))
	}
	assert.Equal(t, 3, runs)
}
