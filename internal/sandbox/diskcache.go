package sandbox

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/buildid"
)

// The on-disk cache of what an engine derives from a module's bytes: its
// compiled code (compiledKey; both engines keep it here), the instrumented
// module, a reactor's initial memory image, and snapshots (CachedSnapshot).
// Rebuilding them is most of a warm process start: for the QuickJS engine,
// compiling takes a second, instrumenting ~6 ms, splitting the image ~3 ms,
// loading a tool a few more.
//
// An entry is a file named by its key and holds a keyed MAC of its key and
// contents (see cachetrust.go for the key, and for who may own the
// directory and its entries): an entry that does not verify (truncated,
// corrupted, copied under another name, written without the key) is
// removed and rebuilt, never used. Nothing read from the cache escapes the
// sandbox either way: admission runs on the module's own bytes every time,
// and the engine validates the cached instrumented module like any other.
//
// A key names everything an entry derives from: the digest of the module's
// bytes and the versions of what transformed and compiled them, and the
// build of wasmgate that made it (buildIdentity), so that a changed
// instrumenter, engine or QuickJS driver never meets an entry it did not
// write. Writing an entry removes the entries a different build wrote for
// the same thing, so the directory holds one per module and tool, not one
// per build, and the least recently used beyond diskCacheMaxBytes.

// diskCacheVersion names the directory of entries. A change that an old
// entry cannot pass for changes diskCacheMagic instead, so old entries
// are rebuilt in place rather than left behind in a directory no longer
// read.
const diskCacheVersion = 1

// diskCacheMagic begins every entry. v2: the entry's digest is a keyed MAC
// (a v1 entry does not verify, and is rebuilt).
const diskCacheMagic = "wasmgate cache v2\n"

// diskCache is the cache in one directory; the zero value (no directory)
// caches nothing.
type diskCache struct {
	dir string
	// key is the MAC key (cacheMACKey).
	key []byte
}

// newDiskCache returns the cache kept in cacheDir ("" for none), or none
// when cacheDir, or the directory of entries in it, is not to be trusted
// or the MAC key cannot be had: then a warning says why and what to do,
// and the engine compiles without a cache.
func newDiskCache(cacheDir string) diskCache {
	if cacheDir == "" {
		return diskCache{}
	}
	refuse := func(err error) diskCache {
		warnCache(fmt.Sprintf("wasmgate: not using the compilation cache: %v. Compiling without it; to use it, make it this user's own and writable by nobody else (chown; chmod go-w), or choose another directory (--cache-dir, WASMGATE_CACHE_DIR)", err))
		return diskCache{}
	}
	if err := trustedDir(cacheDir); err != nil {
		return refuse(err)
	}
	dir := filepath.Join(cacheDir, fmt.Sprintf("wasmgate-v%d", diskCacheVersion))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return refuse(err)
	}
	if err := trustedDir(dir); err != nil {
		return refuse(err)
	}
	key, err := cacheMACKey()
	if err != nil {
		warnCache(fmt.Sprintf("wasmgate: not using the compilation cache %s: %v. Compiling without it", cacheDir, err))
		return diskCache{}
	}
	return diskCache{dir: dir, key: key}
}

// diskKey names one entry: kind says what it is ("compiled", "reactor",
// "snapshot"), what is everything it derives from but the build, which
// every key adds unless anyBuild.
type diskKey struct {
	kind string
	what string
	// anyBuild: what names everything the entry derives from, so every
	// build of wasmgate shares it. Compiled code is such an entry: it
	// derives from the exact bytes compiled and the engine's version and
	// configuration alone. Sharing it is what lets every test binary (a
	// build each) and every installed wasmgate on a machine compile a
	// large module once, and keeps builds from replacing each other's
	// entries.
	anyBuild bool
}

// stem is the file-name prefix every build shares for the same thing.
func (k diskKey) stem() string {
	sum := blake3.Sum256([]byte(k.kind + "\n" + k.what))
	return k.kind + "-" + hex.EncodeToString(sum[:12]) + "-"
}

// full is what the entry's digest covers besides its contents.
func (k diskKey) full() string {
	if k.anyBuild {
		return k.kind + "\n" + k.what + "\nany build"
	}
	return k.kind + "\n" + k.what + "\n" + buildIdentity()
}

// path is the entry's file.
func (c diskCache) path(k diskKey) string {
	sum := blake3.Sum256([]byte(k.full()))
	return filepath.Join(c.dir, k.stem()+hex.EncodeToString(sum[:12]))
}

// entryDigest is what an entry holds to be verified by: the keyed MAC of
// its full key and its contents.
func (c diskCache) entryDigest(k diskKey, payload []byte) [32]byte {
	h, err := blake3.NewKeyed(c.key)
	if err != nil {
		// Only a key of the wrong size; newDiskCache gives none such.
		panic(fmt.Sprintf("runtime: cache key of %d bytes: %v", len(c.key), err))
	}
	full := k.full()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(full)))
	h.Write(n[:])
	h.Write([]byte(full))
	h.Write(payload)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// get returns the contents of the entry under k, when there is one and it
// verifies. An entry that does not verify, or that is not this user's own
// and private, is removed.
func (c diskCache) get(k diskKey) ([]byte, bool) {
	if c.dir == "" {
		return nil, false
	}
	path := c.path(k)
	b, err := readTrusted(path)
	var untrusted *untrustedError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false
	case errors.As(err, &untrusted):
		warnCache(fmt.Sprintf("wasmgate: a compilation cache entry is removed and rebuilt: %v; an entry must be this user's own and writable by nobody else", err))
		_ = os.Remove(path)
		return nil, false
	case err != nil:
		_ = os.Remove(path) // unreadable: rebuilt
		return nil, false
	}
	payload, ok := c.verifyEntry(k, b)
	if !ok {
		_ = os.Remove(path)
		return nil, false
	}
	// Recently used entries are the last evict removes.
	now := time.Now()
	_ = os.Chtimes(path, now, now)
	return payload, true
}

// readTrusted reads the file at path, when it is this user's own regular
// file, writable by nobody else (checked on the file opened, not on the
// path).
func readTrusted(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := trustedFile(path, fi); err != nil {
		return nil, err
	}
	// A file that grew since Stat is read in part, and does not verify.
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, err
	}
	return b, nil
}

// remove removes the entry under k.
func (c diskCache) remove(k diskKey) {
	if c.dir != "" {
		_ = os.Remove(c.path(k))
	}
}

// verifyEntry returns the contents of entry file b when it is an entry of
// k's and its MAC matches.
func (c diskCache) verifyEntry(k diskKey, b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(diskCacheMagic))
	if !ok || len(rest) < 32 {
		return nil, false
	}
	payload := rest[32:]
	if sum := c.entryDigest(k, payload); !hmac.Equal(sum[:], rest[:32]) {
		return nil, false
	}
	return payload, true
}

// put stores payload under k, atomically (a reader sees the whole entry or
// none), and removes what other builds stored for the same thing. The cache
// is an optimization: failing to write it is no error.
func (c diskCache) put(k diskKey, payload []byte) {
	if c.dir == "" {
		return
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return
	}
	path := c.path(k)
	tmp, err := os.CreateTemp(c.dir, ".entry-*")
	if err != nil {
		return
	}
	sum := c.entryDigest(k, payload)
	_, werr := tmp.Write(append(append([]byte(diskCacheMagic), sum[:]...), payload...))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return
	}
	others, _ := filepath.Glob(filepath.Join(c.dir, k.stem()+"*"))
	for _, o := range others {
		if o != path {
			_ = os.Remove(o)
		}
	}
	c.evict(diskCacheMaxBytes)
}

// diskCacheMaxBytes bounds the entries of one cache directory together:
// beyond it, put removes the least recently used ones.
const diskCacheMaxBytes = 512 << 20

// evict removes the least recently used entries (get touches what it
// reads) until those left take at most three quarters of max, when they
// take more than max.
func (c diskCache) evict(max int64) {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var entries []entry
	var total int64
	for _, de := range des {
		fi, err := de.Info()
		if err != nil || !fi.Mode().IsRegular() || strings.HasPrefix(de.Name(), ".") {
			continue
		}
		entries = append(entries, entry{filepath.Join(c.dir, de.Name()), fi.Size(), fi.ModTime()})
		total += fi.Size()
	}
	if total <= max {
		return
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= max/4*3 {
			break
		}
		if os.Remove(e.path) == nil {
			total -= e.size
		}
	}
}

// buildIdentity names the build of wasmgate running (buildid.Identity).
var buildIdentity = buildid.Identity

// entryWriter lays out an entry's contents: unsigned varints, and byte
// strings prefixed with their length.
type entryWriter struct{ b []byte }

func (w *entryWriter) uint(v uint64)   { w.b = binary.AppendUvarint(w.b, v) }
func (w *entryWriter) bytes(p []byte)  { w.uint(uint64(len(p))); w.b = append(w.b, p...) }
func (w *entryWriter) string(s string) { w.uint(uint64(len(s))); w.b = append(w.b, s...) }

// entryReader reads what entryWriter wrote; its first error sticks.
type entryReader struct {
	b   []byte
	err error
}

var errShortEntry = errors.New("truncated")

func (r *entryReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShortEntry
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytes returns the next byte string, aliasing the entry.
func (r *entryReader) bytes() []byte {
	n := r.uint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errShortEntry
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *entryReader) string() string { return string(r.bytes()) }

// done reports the first error, or trailing bytes.
func (r *entryReader) done() error {
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the end", len(r.b))
	}
	return r.err
}
