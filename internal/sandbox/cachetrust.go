package sandbox

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// What the on-disk cache trusts, and why.
//
// Code read from the cache runs as the module it is filed under, so an
// entry must be what this user's wasmgate made from that module: not the
// code of another module copied under its name, not bytes another user
// left there, not a file damaged on disk. Three checks see to it:
//
//   - The cache directory, its subdirectories and every entry must belong
//     to the user running wasmgate and be writable by nobody else. A
//     directory that is not refuses the whole cache (with a warning naming
//     it and what to do, once a process), and modules are compiled without
//     it; an entry that is not is removed and rebuilt.
//   - Every entry carries a keyed MAC (BLAKE3 in keyed mode) of the module
//     digest and engine version it was made from (its key), wasmgate's
//     build and its contents. The key is 32 random bytes in the user's
//     config directory (os.UserConfigDir()/wasmgate/cache.key, mode 0600),
//     made on first use. Only a holder of that key (this user) can make an
//     entry that verifies, and an entry verifies under its own key alone:
//     module A's code copied under module B's name does not.
//   - An entry that does not verify is removed and rebuilt: a damaged
//     entry costs a compilation, never a verdict.
//
// The MAC is no defence against the user's own account: whoever can read
// the key can write the cache. It is a defence against every other writer
// of the cache directory (a shared or restored directory, a copy from
// another machine, a disk error).

// cacheKeyFile is the name of the MAC key in the user's wasmgate config
// directory.
const cacheKeyFile = "cache.key"

// cacheKeySize is the MAC key's size in bytes (BLAKE3's key size).
const cacheKeySize = 32

// cacheKeys memoizes the key by its path: read once a process.
var cacheKeys sync.Map // string → []byte

// cacheMACKey returns the key that entries of the on-disk cache are MAC'd
// with, made on first use.
//
// # Errors
//
// When there is no user config directory, or the key cannot be read or
// made, or its file is not this user's own and private; each error names
// the file and what to do.
func cacheMACKey() ([]byte, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return nil, fmt.Errorf("no user config directory to keep the cache's key in (%w): set $XDG_CONFIG_HOME or $HOME", err)
	}
	path := filepath.Join(base, "wasmgate", cacheKeyFile)
	if k, ok := cacheKeys.Load(path); ok {
		return k.([]byte), nil
	}
	key, err := loadOrCreateKey(path)
	if err != nil {
		return nil, err
	}
	k, _ := cacheKeys.LoadOrStore(path, key)
	return k.([]byte), nil
}

// loadOrCreateKey reads the key at path or, when there is none, makes one.
// Processes that start at once make one key between them: each writes its
// own in a temporary file, and links it to path only if path does not
// exist yet, which the file system decides atomically; the others then
// read the winner's, which is complete (it was written before it was
// linked).
func loadOrCreateKey(path string) ([]byte, error) {
	for range 3 {
		key, err := readKey(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return key, err
		}
		dir := filepath.Dir(path)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("making the cache key's directory: %w", err)
		}
		key = make([]byte, cacheKeySize)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("making the cache key: %w", err)
		}
		tmp, err := os.CreateTemp(dir, ".cache.key-*") // mode 0600
		if err != nil {
			return nil, fmt.Errorf("making the cache key: %w", err)
		}
		_, werr := tmp.Write(key)
		if werr == nil {
			werr = tmp.Sync()
		}
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Link(tmp.Name(), path)
		}
		_ = os.Remove(tmp.Name())
		switch {
		case werr == nil:
			return key, nil
		case errors.Is(werr, fs.ErrExist):
			// Another process made it first: read theirs.
		default:
			return nil, fmt.Errorf("making the cache key %s: %w", path, werr)
		}
	}
	return nil, fmt.Errorf("the cache key %s keeps disappearing: check what removes it", path)
}

// readKey reads the key at path, which must be this user's own regular
// file, readable by nobody else, of cacheKeySize bytes.
func readKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("the cache key %s: %w", path, err)
	}
	if err := trustedFile(path, fi); err != nil {
		return nil, err
	}
	if unixPerms && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("the cache key %s is readable or writable by others (mode %#o): run chmod 600 %s, or delete it to make a new key (the cache is then rebuilt)", path, fi.Mode().Perm(), path)
	}
	key := make([]byte, cacheKeySize+1)
	n, err := io.ReadFull(f, key)
	if n != cacheKeySize || !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("the cache key %s does not hold a key of %d bytes: delete it to make a new one (the cache is then rebuilt)", path, cacheKeySize)
	}
	return key[:cacheKeySize], nil
}

// trustedDir reports why the directory at path is not to be trusted with
// cached code, or nil when it is: this user's own, writable by nobody else.
func trustedDir(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &untrustedError{fmt.Sprintf("%s is not a directory", path)}
	}
	return trusted(path, fi, "directory")
}

// trustedFile is trustedDir for a regular file, from its FileInfo.
func trustedFile(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return &untrustedError{fmt.Sprintf("%s is not a regular file", path)}
	}
	return trusted(path, fi, "file")
}

func trusted(path string, fi fs.FileInfo, what string) error {
	if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() {
		return &untrustedError{fmt.Sprintf("the %s %s belongs to uid %d, not to this user (uid %d)", what, path, uid, os.Geteuid())}
	}
	if unixPerms && fi.Mode().Perm()&0o022 != 0 {
		return &untrustedError{fmt.Sprintf("the %s %s is writable by its group or by others (mode %#o)", what, path, fi.Mode().Perm())}
	}
	return nil
}

// untrustedError says why a file or directory is not to be trusted with
// cached code.
type untrustedError struct{ msg string }

func (e *untrustedError) Error() string { return e.msg }

// warnedCache holds the cache warnings given: each is given once a process.
var warnedCache sync.Map // string → struct{}

// warnCache logs, once a process, that the cache is refused or an entry
// of it removed, why and what to do.
func warnCache(msg string) {
	if _, dup := warnedCache.LoadOrStore(msg, struct{}{}); dup {
		return
	}
	slog.Warn(msg)
}
