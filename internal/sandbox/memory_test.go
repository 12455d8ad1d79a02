package sandbox

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRestoreCopiesOnlyNonzeroPages: a memory restored from a snapshot is
// the snapshot's byte for byte, though only its nonzero pages are copied,
// also in a buffer a previous instance dirtied and gave back.
func TestRestoreCopiesOnlyNonzeroPages(t *testing.T) {
	image := make([]byte, 10*diffPage+100)
	image[5] = 1                     // page 0
	image[3*diffPage+diffPage-1] = 2 // page 3, its last byte
	image[4*diffPage] = 3            // page 4, joined to page 3
	image[len(image)-1] = 4          // the short last page
	snap := &Snapshot{memory: image}
	assert.Equal(t, []byteRange{{0, diffPage}, {3 * diffPage, 5 * diffPage}, {10 * diffPage, len(image)}}, snap.nonzeroPages())

	for round := range 3 {
		a := newInstanceMemory(1<<20, snap, false)
		mem := a.(*memoryAllocator).Allocate(uint64(len(image)), 1<<20)
		buf := mem.Reallocate(uint64(len(image)))
		require.True(t, bytes.Equal(image, buf), "round %d: the restored memory is the snapshot's", round)
		// The instance writes everywhere before it goes back to the pool.
		for i := range buf {
			buf[i] = 0xff
		}
		a.release()
	}
}
