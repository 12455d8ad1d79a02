//go:build unix

package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the cache's lock for making the entry under k, across
// processes: a process that finds the entry missing takes it, checks again
// and makes the entry, while another that needs the same entry waits and
// then reads it, instead of making it too (a test run starts several
// processes that each compile the 13 MB CPython module: seconds of CPU
// apiece). The lock is advisory and only ever saves work: when it cannot be
// taken, the caller goes on without it.
func (c diskCache) lock(k diskKey) (unlock func()) {
	if c.dir == "" {
		return func() {}
	}
	// In a directory of their own, which evict leaves alone (its name
	// begins with a dot) and no entry's name matches.
	dir := filepath.Join(c.dir, ".locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir, filepath.Base(c.path(k))), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
