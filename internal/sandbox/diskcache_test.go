package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/host"
	"github.com/wasmgate/wasmgate/internal/jshost"
)

func quickJSModule(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "jstool", "engine", "quickjs.wasm"))
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
	glue := jshost.QuickJSGlue()
	built, err := buildReactor(qjs, glue, false)
	require.NoError(t, err)
	for _, withData := range []bool{false, true} {
		c := newDiskCache(t.TempDir())
		var got []reactorCode
		for range 2 { // the first builds and stores, the second reads
			r, err := prepareReactor(c, qjs, digestHex(qjs), glue, false, withData)
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
	_, err = prepareReactor(c, qjs, digestHex(qjs), host.Glue{Name: "other"}, false, false)
	require.ErrorIs(t, err, ErrNotAdmitted)
	assert.EqualError(t, err, "module not admitted: import env.host_get_timezone_offset (func) is outside wasi_snapshot_preview1; only the virtual WASI may be imported")
}

// TestCorruptCacheEntryIsRebuilt: an entry that is truncated, has a byte
// changed, or was copied under another key's name does not verify: it is
// removed and rebuilt, and the result is the same.
func TestCorruptCacheEntryIsRebuilt(t *testing.T) {
	qjs := quickJSModule(t)
	glue := jshost.QuickJSGlue()
	built, err := buildReactor(qjs, glue, false)
	require.NoError(t, err)
	key := preparedKey(built.info.Digest, glue, false, false)

	corruptions := map[string]func(c diskCache, path string, b []byte){
		"truncated": func(_ diskCache, path string, b []byte) { require.NoError(t, os.WriteFile(path, b[:len(b)/2], 0o600)) },
		"empty":     func(_ diskCache, path string, b []byte) { require.NoError(t, os.WriteFile(path, nil, 0o600)) },
		"a byte flip": func(_ diskCache, path string, b []byte) {
			b[len(b)-100] ^= 1
			require.NoError(t, os.WriteFile(path, b, 0o600))
		},
		"the digest": func(_ diskCache, path string, b []byte) {
			b[len(diskCacheMagic)] ^= 1
			require.NoError(t, os.WriteFile(path, b, 0o600))
		},
		"another key's entry": func(c diskCache, path string, b []byte) {
			// A verified entry of the uninstrumented module, under this
			// key's name.
			other := preparedKey(built.info.Digest, glue, true, false)
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
			_, err := prepareReactor(c, qjs, digestHex(qjs), glue, false, false)
			require.NoError(t, err)
			path := c.path(key)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			corrupt(c, path, b)

			_, ok := c.get(key)
			assert.False(t, ok, "a corrupt entry is not used")
			assert.NoFileExists(t, path, "a corrupt entry is removed")

			corrupt(c, path, b)
			r, err := prepareReactor(c, qjs, digestHex(qjs), glue, false, false)
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
	glue := jshost.QuickJSGlue()
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
	assert.Equal(t, c.path(snapshotKey("o", "k", Input{})), c.path(snapshotKey("o", "k", Input{Limits: DefaultLimits()})))
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
	keys := []diskKey{{kind: "snapshot", what: "1"}, {kind: "snapshot", what: "2"}, {kind: "snapshot", what: "3"}, {kind: "snapshot", what: "4"}}
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
		return jshost.QuickJSLoad(jshost.JSTool{Name: "t.js", Source: []byte(src)})(ctx, inst)
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
		r, err := e.LoadReactor(ctx, quickJSModule(t), jshost.QuickJSGlue())
		require.NoError(t, err)
		snap, out, err := CachedSnapshot(ctx, r, "test "+digestHex([]byte(src)), in, init)
		require.NoError(t, err)
		require.Equal(t, Completed, out.Kind, out.Message)
		entry, err := jshost.ParseJSLoad(out.Output)
		require.NoError(t, err)
		call := Input{Bytes: []byte(`{"add":1}`), Digest: blake3.Sum256([]byte(`{"add":1}`))}
		var res jshost.JSResult
		o, err := r.Run(ctx, snap, call, Driver(jshost.QuickJSRun(entry, jshost.JSCall{Input: call.Bytes, Seed: call.Digest, MaxOutput: 1000}, &res)))
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
		r, err := e.LoadReactor(ctx, quickJSModule(t), jshost.QuickJSGlue())
		require.NoError(t, err)
		snap, out, err := CachedSnapshot(ctx, r, "failing", in, failing)
		require.NoError(t, err)
		assert.Nil(t, snap)
		assert.NotEqual(t, Completed, out.Kind)
		require.NoError(t, e.Close(ctx))
	}
	assert.Equal(t, 3, runs)
}

// cachedCodeEngines are the engines of this build that keep compiled code
// in the on-disk cache (wazero's interpreter compiles nothing to keep).
func cachedCodeEngines() []EngineName {
	var names []EngineName
	for _, name := range Engines() {
		if name != EngineWazeroInterp {
			names = append(names, name)
		}
	}
	return names
}

// cacheFiles returns the regular files under dir, by path, with their
// contents: the entries, not the empty files the cache's locks are taken
// on (.locks).
func cacheFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == ".locks" {
			return filepath.SkipDir
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		files[path] = b
		return err
	}))
	return files
}

// newFile returns the one file of after that is not in before.
func newFile(t *testing.T, before, after map[string][]byte) string {
	t.Helper()
	var added []string
	for path := range after {
		if _, ok := before[path]; !ok {
			added = append(added, path)
		}
	}
	require.Len(t, added, 1, "loading a module stores its compiled code in one file: %v", added)
	return added[0]
}

// runCached loads wasm on a new engine of its own with the compilation
// cache dir, runs it on input and returns the output; the engine is closed
// before it returns.
func runCached(t *testing.T, name EngineName, dir string, wasm []byte, input string) Outcome {
	t.Helper()
	ctx := context.Background()
	e, err := NewEngine(ctx, NewConfig().WithEngine(name).WithCompilationCacheDir(dir))
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close(ctx)) }()
	mod, err := e.Load(ctx, wasm)
	require.NoError(t, err, "loading through the cache")
	out, err := mod.Run(ctx, recycleInput(input))
	require.NoError(t, err)
	return out
}

// TestCompiledCodeOfAnotherModuleIsNotRun: module A's compiled code,
// copied over module B's in the cache, is not what B runs: B runs its own
// code, and A's copy is discarded (and B's rebuilt in its place).
func TestCompiledCodeOfAnotherModuleIsNotRun(t *testing.T) {
	upper, echo := recycleFixture(t, "upper.wasm"), recycleFixture(t, "echo.wasm")
	const input = `{"text":"abc"}`
	for _, name := range cachedCodeEngines() {
		t.Run(string(name), func(t *testing.T) {
			dir := t.TempDir()
			none := cacheFiles(t, dir)
			assert.Equal(t, `{"text":"ABC"}`, string(runCached(t, name, dir, upper, input).Output))
			withA := cacheFiles(t, dir)
			a := newFile(t, none, withA)
			assert.Equal(t, input, string(runCached(t, name, dir, echo, input).Output))
			b := newFile(t, withA, cacheFiles(t, dir))

			require.NoError(t, os.WriteFile(b, withA[a], 0o600))
			out := runCached(t, name, dir, echo, input)
			require.Equal(t, Completed, out.Kind, out.Message)
			assert.Equal(t, input, string(out.Output), "B runs B's code")
			rebuilt, err := os.ReadFile(b)
			require.NoError(t, err, "B's code is stored again")
			assert.False(t, bytes.Equal(withA[a], rebuilt), "A's code is no longer there")
			assert.Equal(t, input, string(runCached(t, name, dir, echo, input).Output))
		})
	}
}

// TestCorruptCompiledCodeIsRebuilt: compiled code with one byte flipped is
// not run, and is no verdict: the run succeeds on code compiled anew,
// which is stored, and the next run is served from it.
func TestCorruptCompiledCodeIsRebuilt(t *testing.T) {
	upper := recycleFixture(t, "upper.wasm")
	const input, want = `{"text":"abc"}`, `{"text":"ABC"}`
	for _, name := range cachedCodeEngines() {
		t.Run(string(name), func(t *testing.T) {
			dir := t.TempDir()
			assert.Equal(t, want, string(runCached(t, name, dir, upper, input).Output))
			path := newFile(t, nil, cacheFiles(t, dir))
			stored, err := os.ReadFile(path)
			require.NoError(t, err)
			corrupt := append([]byte(nil), stored...)
			corrupt[len(corrupt)/2] ^= 0x10
			require.NoError(t, os.WriteFile(path, corrupt, 0o600))

			out := runCached(t, name, dir, upper, input)
			require.Equal(t, Completed, out.Kind, out.Message)
			assert.Equal(t, want, string(out.Output))
			rebuilt, err := os.ReadFile(path)
			require.NoError(t, err, "the code compiled anew is stored")
			assert.False(t, bytes.Equal(corrupt, rebuilt), "the corrupt code is no longer there")

			// Served from the rebuilt entry: read (which marks it used)
			// and not written again.
			old := time.Now().Add(-time.Hour)
			require.NoError(t, os.Chtimes(path, old, old))
			before, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, want, string(runCached(t, name, dir, upper, input).Output))
			after, err := os.Stat(path)
			require.NoError(t, err)
			assert.True(t, os.SameFile(before, after), "the entry was not written again")
			assert.True(t, after.ModTime().After(old), "the entry was read")
		})
	}
}

// warnings collects the messages logged through slog's default logger,
// where the cache's warnings go, while a test runs.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func captureWarnings(t *testing.T) *warnings {
	t.Helper()
	w := &warnings{}
	old := slog.Default()
	slog.SetDefault(slog.New(w))
	t.Cleanup(func() { slog.SetDefault(old) })
	return w
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Level.String()+" "+r.Message)
	return nil
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// otherUID is a uid that is not the test's: nobody's.
const otherUID = 65534

// asRootOnly skips a test that must give a file to another user.
func asRootOnly(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user takes root")
	}
}

// TestUntrustedCacheDirIsNotUsed: a cache directory, or the directory of
// entries in it, that another user owns or may write is not used, on any
// engine: a warning, given once, names it and what to do, and modules run
// as they do without a cache, which gets nothing written to it.
func TestUntrustedCacheDirIsNotUsed(t *testing.T) {
	const remedy = ". Compiling without it; to use it, make it this user's own and writable by nobody else (chown; chmod go-w), or choose another directory (--cache-dir, WASMGATE_CACHE_DIR)"
	tests := []struct {
		name string
		// spoil makes dir (or what is in it) untrusted, and returns the
		// problem the warning names.
		spoil func(t *testing.T, dir string) string
	}{
		{"writable by others", func(t *testing.T, dir string) string {
			require.NoError(t, os.Chmod(dir, 0o777))
			return fmt.Sprintf("the directory %s is writable by its group or by others (mode 0777)", dir)
		}},
		{"writable by its group", func(t *testing.T, dir string) string {
			require.NoError(t, os.Chmod(dir, 0o770))
			return fmt.Sprintf("the directory %s is writable by its group or by others (mode 0770)", dir)
		}},
		{"another user's", func(t *testing.T, dir string) string {
			asRootOnly(t)
			require.NoError(t, os.Chown(dir, otherUID, otherUID))
			return fmt.Sprintf("the directory %s belongs to uid %d, not to this user (uid 0)", dir, otherUID)
		}},
		{"its entries' directory writable by others", func(t *testing.T, dir string) string {
			sub := filepath.Join(dir, "wasmgate-v1")
			require.NoError(t, os.Mkdir(sub, 0o700))
			require.NoError(t, os.Chmod(sub, 0o777))
			return fmt.Sprintf("the directory %s is writable by its group or by others (mode 0777)", sub)
		}},
		{"its entries' directory another user's", func(t *testing.T, dir string) string {
			asRootOnly(t)
			sub := filepath.Join(dir, "wasmgate-v1")
			require.NoError(t, os.Mkdir(sub, 0o700))
			require.NoError(t, os.Chown(sub, otherUID, otherUID))
			return fmt.Sprintf("the directory %s belongs to uid %d, not to this user (uid 0)", sub, otherUID)
		}},
	}
	upper := recycleFixture(t, "upper.wasm")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			require.NoError(t, os.Mkdir(dir, 0o700))
			problem := tt.spoil(t, dir)
			w := captureWarnings(t)
			for _, name := range Engines() {
				for range 2 {
					out := runCached(t, name, dir, upper, `{"text":"abc"}`)
					require.Equal(t, Completed, out.Kind, out.Message)
					assert.Equal(t, `{"text":"ABC"}`, string(out.Output), name)
				}
			}
			assert.Equal(t, []string{"WARN wasmgate: not using the compilation cache: " + problem + remedy}, w.all(), "one warning, however many engines")
			assert.Empty(t, slices.Collect(maps.Keys(cacheFiles(t, dir))), "nothing is written to the directory")
		})
	}
}

// TestUntrustedCacheEntryIsRebuilt: a compiled-code entry that another
// user owns or may write is not run: it is removed with a warning and
// rebuilt, this user's own and private.
func TestUntrustedCacheEntryIsRebuilt(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(t *testing.T, path string) string
	}{
		{"writable by others", func(t *testing.T, path string) string {
			require.NoError(t, os.Chmod(path, 0o666))
			return fmt.Sprintf("the file %s is writable by its group or by others (mode 0666)", path)
		}},
		{"another user's", func(t *testing.T, path string) string {
			asRootOnly(t)
			require.NoError(t, os.Chown(path, otherUID, otherUID))
			return fmt.Sprintf("the file %s belongs to uid %d, not to this user (uid 0)", path, otherUID)
		}},
	}
	upper := recycleFixture(t, "upper.wasm")
	for _, tt := range tests {
		for _, name := range cachedCodeEngines() {
			t.Run(tt.name+"/"+string(name), func(t *testing.T) {
				dir := t.TempDir()
				assert.Equal(t, `{"text":"ABC"}`, string(runCached(t, name, dir, upper, `{"text":"abc"}`).Output))
				path := newFile(t, nil, cacheFiles(t, dir))
				problem := tt.spoil(t, path)
				w := captureWarnings(t)

				out := runCached(t, name, dir, upper, `{"text":"abc"}`)
				require.Equal(t, Completed, out.Kind, out.Message)
				assert.Equal(t, `{"text":"ABC"}`, string(out.Output))
				assert.Equal(t, []string{"WARN wasmgate: a compilation cache entry is removed and rebuilt: " + problem + "; an entry must be this user's own and writable by nobody else"}, w.all())
				fi, err := os.Stat(path)
				require.NoError(t, err, "the entry is rebuilt")
				assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
				uid, ok := fileOwner(fi)
				require.True(t, ok)
				assert.Equal(t, os.Geteuid(), uid)
			})
		}
	}
}

// TestCacheKeyIsMadeOnce: the MAC key is made on first use, private to
// the user, once even when several makers race; later uses read it.
func TestCacheKeyIsMadeOnce(t *testing.T) {
	config := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", config)
	path := filepath.Join(config, "wasmgate", cacheKeyFile)
	const makers = 8
	keys := make([][]byte, makers)
	errs := make([]error, makers)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range makers {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			keys[i], errs[i] = loadOrCreateKey(path)
		}()
	}
	start.Done()
	done.Wait()
	for i := range makers {
		require.NoError(t, errs[i])
		require.Len(t, keys[i], cacheKeySize)
		assert.Equal(t, keys[0], keys[i], "every maker has the one key")
	}
	names, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, names, 1, "no temporary file is left")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	key, err := cacheMACKey()
	require.NoError(t, err)
	assert.Equal(t, keys[0], key)
	again, err := loadOrCreateKey(path)
	require.NoError(t, err)
	assert.Equal(t, keys[0], again, "an existing key is read, not replaced")
}

// TestBadCacheKeyDisablesTheCache: a key file that others may read, or
// that holds no key, leaves the cache unused, with a warning saying what
// to do; modules run as without a cache.
func TestBadCacheKeyDisablesTheCache(t *testing.T) {
	tests := []struct {
		name    string
		content []byte
		mode    fs.FileMode
		problem func(path string) string
	}{
		{"readable by others", make([]byte, cacheKeySize), 0o644, func(path string) string {
			return fmt.Sprintf("the cache key %s is readable or writable by others (mode 0644): run chmod 600 %s, or delete it to make a new key (the cache is then rebuilt)", path, path)
		}},
		{"too short", []byte("short"), 0o600, func(path string) string {
			return fmt.Sprintf("the cache key %s does not hold a key of 32 bytes: delete it to make a new one (the cache is then rebuilt)", path)
		}},
	}
	upper := recycleFixture(t, "upper.wasm")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := t.TempDir()
			t.Setenv("XDG_CONFIG_HOME", config)
			path := filepath.Join(config, "wasmgate", cacheKeyFile)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.WriteFile(path, tt.content, 0o600))
			require.NoError(t, os.Chmod(path, tt.mode))
			dir := t.TempDir()
			w := captureWarnings(t)
			out := runCached(t, EngineWazero, dir, upper, `{"text":"abc"}`)
			assert.Equal(t, `{"text":"ABC"}`, string(out.Output))
			assert.Equal(t, []string{fmt.Sprintf("WARN wasmgate: not using the compilation cache %s: %s. Compiling without it", dir, tt.problem(path))}, w.all())
			assert.Empty(t, slices.Collect(maps.Keys(cacheFiles(t, dir))))
		})
	}
}

// TestWazeroDirectoryOnlyWhileCompiling: the directory a wazero engine
// gives wazero exists only while it compiles, so nothing is left behind by
// an engine that is never closed; one a process left when it ended while
// compiling is removed by a later engine once stale.
func TestWazeroDirectoryOnlyWhileCompiling(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, fmt.Sprintf("wasmgate-v%d", diskCacheVersion))
	require.NoError(t, os.MkdirAll(sub, 0o700))
	stale, recent := filepath.Join(sub, wazeroDirPrefix+"stale"), filepath.Join(sub, wazeroDirPrefix+"recent")
	for _, d := range []string{stale, recent} {
		require.NoError(t, os.MkdirAll(filepath.Join(d, "wazero-x"), 0o700))
	}
	old := time.Now().Add(-2 * staleWazeroDir)
	require.NoError(t, os.Chtimes(stale, old, old))

	ctx := context.Background()
	e, err := NewEngine(ctx, NewConfig().WithCompilationCacheDir(dir))
	require.NoError(t, err)
	mod, err := e.Load(ctx, recycleFixture(t, "upper.wasm"))
	require.NoError(t, err)
	out, err := mod.Run(ctx, recycleInput(`{"text":"abc"}`))
	require.NoError(t, err)
	assert.Equal(t, `{"text":"ABC"}`, string(out.Output))
	left, err := filepath.Glob(filepath.Join(sub, wazeroDirPrefix+"*"))
	require.NoError(t, err)
	assert.Equal(t, []string{recent}, left, "the stale directory is removed, the engine's own is gone after compiling, a recent one (another process's) is kept")
	require.NoError(t, e.Close(ctx))
}
