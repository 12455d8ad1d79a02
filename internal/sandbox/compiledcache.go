package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
)

// compiledKey names, in the on-disk cache, the code an engine compiled from
// code: engine names the engine, its version and whatever of its
// configuration changes the code it makes; code is the exact bytes compiled
// (the instrumented module, whose digest binds the entry to the module it
// came from). Nothing else goes into the code, so every build of wasmgate
// shares the entry (diskKey.anyBuild).
func compiledKey(engine string, code []byte) diskKey {
	return diskKey{kind: "compiled", what: fmt.Sprintf("engine %s\ncode %s", engine, digestHex(code)), anyBuild: true}
}

// moduleVersion is the version of the Go module path linked into this
// build, or "unknown" (a build without module information; buildIdentity
// still tells builds apart then).
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == path {
				if dep.Replace != nil {
					return dep.Replace.Path + "@" + dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "unknown"
}

// encodeCompiledEntry lays out wazero's compiled code for the on-disk
// cache: the name wazero gave its file, and the file.
func encodeCompiledEntry(name string, file []byte) []byte {
	var w entryWriter
	w.string(name)
	w.bytes(file)
	return w.b
}

// decodeCompiledEntry reads what encodeCompiledEntry wrote.
func decodeCompiledEntry(b []byte) (string, []byte, error) {
	r := entryReader{b: b}
	name := r.string()
	file := r.bytes()
	if err := r.done(); err != nil {
		return "", nil, err
	}
	if !wazeroFileName(name) {
		return "", nil, fmt.Errorf("%q is not a name wazero gives its files", name)
	}
	return name, file, nil
}

// wazeroFileName reports whether name is one wazero gives a compiled
// module's file: the hex of a SHA-256. (Its temporary files have a suffix.)
func wazeroFileName(name string) bool {
	if len(name) != 64 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// wazeroCodeCache keeps wazero's compiled code in the on-disk cache, bound
// to the code it was compiled from.
//
// wazero reads and writes its compilation cache itself
// (NewCompilationCacheWithDir: a file per module, named by a hash of the
// module and of CPU features it keeps internal, checked by a CRC32 only,
// and an unreadable file fails the compilation), with no hook to check what
// it reads. So wazero is given a directory of its own, which exists only
// while this engine compiles, inside the cache's own directory (which no
// other user may write): before a compilation, the entry for the code,
// verified (diskCache.get), is written there under the name wazero gave its
// file; after it, the file wazero wrote there (when it compiled) is stored
// as the entry, and the directory is removed. wazero thus reads only code
// that this user's wasmgate compiled from the same bytes, and an entry that
// does not verify costs a compilation, never a verdict.
//
// The other ways were worse: checking wazero's files in a shared directory
// before each compilation cannot know which one wazero will read (the CPU
// features in its name), so every file would be checked every time; a
// directory per module needs a wazero runtime per module. The price here
// is a copy of the code into wazero's directory on a warm start (a few
// milliseconds for the 4 MB of the QuickJS engine), and compilations
// through one engine taking turns, so that the file wazero writes is known
// to be the compilation's.
type wazeroCodeCache struct {
	disk diskCache
	// engine names wazero's version and configuration in keys.
	engine string
	// dir is the directory wazero was given, files where wazero keeps its
	// files in it; both exist only during a compilation.
	dir, files string
	cache      wazero.CompilationCache

	mu sync.Mutex // held for a whole compilation: see above
}

// wazeroDirPrefix begins the name of the directory a wazero engine is
// given in the cache's directory (evict leaves names beginning with a dot
// alone).
const wazeroDirPrefix = ".wazero-"

// staleWazeroDir is the age past which a wazero engine's directory is
// left over from a process that ended while compiling: a compilation takes
// seconds.
const staleWazeroDir = time.Hour

// newWazeroCodeCache returns the cache of code compiled by a wazero engine
// described by engine, kept in disk.
//
// # Errors
//
// When wazero's directory cannot be made.
func newWazeroCodeCache(disk diskCache, engine string) (*wazeroCodeCache, error) {
	removeStaleWazeroDirs(disk.dir)
	dir, err := os.MkdirTemp(disk.dir, wazeroDirPrefix) // 0700, a new name
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir) // made again for each compilation
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil, err
	}
	// wazero makes one directory in it, named after its version.
	des, err := os.ReadDir(dir)
	if err != nil || len(des) != 1 || !des[0].IsDir() {
		return nil, fmt.Errorf("wazero's compilation cache in %s does not hold one directory", dir)
	}
	return &wazeroCodeCache{disk: disk, engine: engine, dir: dir, files: filepath.Join(dir, des[0].Name()), cache: cache}, nil
}

// removeStaleWazeroDirs removes what processes that ended while compiling
// left in dir.
func removeStaleWazeroDirs(dir string) {
	des, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, de := range des {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), wazeroDirPrefix) {
			continue
		}
		if fi, err := de.Info(); err == nil && time.Since(fi.ModTime()) > staleWazeroDir {
			_ = os.RemoveAll(filepath.Join(dir, de.Name()))
		}
	}
}

// compile runs compile, which compiles code on the engine this cache
// belongs to, with the entry for code where wazero looks for it, and keeps
// what wazero compiled.
func (c *wazeroCodeCache) compile(ctx context.Context, code []byte, compile func() (wazero.CompiledModule, error)) (wazero.CompiledModule, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// wazero fails a compilation whose file it cannot write: its directory
	// must be there, even when the entry cannot be staged.
	if err := os.MkdirAll(c.files, 0o700); err != nil {
		return nil, fmt.Errorf("making wazero's compilation cache directory: %w", err)
	}
	defer os.RemoveAll(c.dir)
	k := compiledKey(c.engine, code)
	defer c.disk.lock(k)()
	staged := c.stage(k)
	compiled, err := compile()
	if err != nil && staged != nil && ctx.Err() == nil {
		// wazero could not use an entry that verified (another wazero's
		// layout, or a bug): not a verdict on the module, which is
		// compiled without it.
		c.disk.remove(k)
		_ = os.Remove(staged.path)
		staged = nil
		compiled, err = compile()
	}
	var pathErr *fs.PathError
	if err != nil && ctx.Err() == nil && errors.As(err, &pathErr) {
		// wazero keeps the code in memory before it writes its file, and
		// fails the compilation when the write fails (a full disk, a file
		// size limit): asked again, it answers from memory. A cache that
		// cannot be written costs nothing but the cache.
		compiled, err = compile()
	}
	if err != nil {
		return nil, err
	}
	c.keep(k, staged)
	return compiled, nil
}

// staged is a file written for wazero to read.
type staged struct {
	path string
	info os.FileInfo
}

// stage writes the entry under k, when there is one and it verifies, where
// wazero looks for it.
func (c *wazeroCodeCache) stage(k diskKey) *staged {
	b, ok := c.disk.get(k)
	if !ok {
		return nil
	}
	name, file, err := decodeCompiledEntry(b)
	if err != nil {
		c.disk.remove(k)
		return nil
	}
	path := filepath.Join(c.files, name)
	if err := os.WriteFile(path, file, 0o600); err != nil {
		_ = os.Remove(path)
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return &staged{path, fi}
}

// keep stores, as the entry under k, the file wazero wrote during the
// compilation: the one file that is not s, the file staged for it (which
// wazero replaces when it finds it stale).
func (c *wazeroCodeCache) keep(k diskKey, s *staged) {
	des, err := os.ReadDir(c.files)
	if err != nil {
		return
	}
	var written []string
	for _, de := range des {
		path := filepath.Join(c.files, de.Name())
		if !de.Type().IsRegular() || !wazeroFileName(de.Name()) {
			continue
		}
		if s != nil && path == s.path {
			if fi, err := os.Stat(path); err == nil && os.SameFile(fi, s.info) {
				continue
			}
		}
		written = append(written, de.Name())
	}
	if len(written) != 1 {
		return // a cache hit (nothing written), or compiled in memory already
	}
	file, err := os.ReadFile(filepath.Join(c.files, written[0]))
	if err != nil {
		return
	}
	c.disk.put(k, encodeCompiledEntry(written[0], file))
}
