//go:build unix

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheLockExcludesOtherProcesses: while one holder has the lock of an
// entry, another open file description (as another process has) cannot
// take it, and can once it is released; the lock of another entry is free.
func TestCacheLockExcludesOtherProcesses(t *testing.T) {
	c := diskCache{dir: t.TempDir()}
	k := diskKey{kind: "compiled", what: "a module"}
	unlock := c.lock(k)
	path := filepath.Join(c.dir, ".locks", filepath.Base(c.path(k)))
	other := func() error {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		require.NoError(t, err)
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	assert.True(t, errors.Is(other(), syscall.EWOULDBLOCK), "the lock is held")
	unlock()
	assert.NoError(t, other(), "the lock is released")

	defer c.lock(k)()
	free := c.lock(diskKey{kind: "compiled", what: "another module"})
	free()
}
