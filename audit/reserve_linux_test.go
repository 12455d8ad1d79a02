package audit

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFileSinkReservesSpaceWithoutChangingTheSize: the log's space is
// allocated ahead of its writes, and its size stays the end of its last
// record, which readers go by.
func TestFileSinkReservesSpaceWithoutChangingTheSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	probe, err := os.Create(path + ".probe")
	require.NoError(t, err)
	perr := syscall.Fallocate(int(probe.Fd()), fallocKeepSize, 0, reserveBytes)
	probe.Close()
	if perr != nil {
		t.Skipf("the file system cannot reserve space: %v", perr)
	}

	s, err := OpenFile(path)
	require.NoError(t, err)
	appendN(t, s, 1, 3)
	content := readFile(t, path)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.EqualValues(t, len(content), fi.Size(), "the size is the end of the last record")
	st, ok := fi.Sys().(*syscall.Stat_t)
	require.True(t, ok)
	assert.GreaterOrEqual(t, st.Blocks*512, int64(reserveBytes), "the space past the end is allocated")
	require.NoError(t, s.Close())
	assert.Equal(t, 3, verifyFile(t, path).Records)

	// Extended by another sink, the log reads the same: the reserved space
	// is not part of it.
	s, err = OpenFile(path)
	require.NoError(t, err)
	appendN(t, s, 4, 1)
	require.NoError(t, s.Close())
	assert.True(t, strings.HasPrefix(readFile(t, path), content))
	assert.Equal(t, 4, verifyFile(t, path).Records)
}
