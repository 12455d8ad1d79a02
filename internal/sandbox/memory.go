package sandbox

import (
	"math/bits"
	"sync"

	"github.com/tetratelabs/wazero/experimental"
)

const pageSize = 65536

// instanceMemory backs one instance's linear memory (wazero asks it through
// experimental.WithMemoryAllocator) and reports on it once the instance is
// closed.
type instanceMemory interface {
	experimental.MemoryAllocator
	// refused reports whether a grow past the limit was refused.
	refused() bool
	// release frees the memory. It is called once, after the instance is
	// closed and its guest has stopped.
	release()
}

// newInstanceMemory returns the memory of one execution, limited to limit
// bytes and starting from from's image (nil: zeroed). copyOnWrite maps the
// image copy-on-write where the platform allows it (see cowAllocator); the
// default copies it.
func newInstanceMemory(limit uint64, from *Snapshot, copyOnWrite bool) instanceMemory {
	if from != nil && copyOnWrite {
		if a := newCOWAllocator(limit, from); a != nil {
			return a
		}
	}
	a := &memoryAllocator{limit: limit}
	if from != nil {
		a.image, a.pages = from.memory, from.nonzeroPages()
	}
	return a
}

// memoryAllocator backs one instance's linear memory and enforces
// memory_pages: a grow past the limit fails (memory.grow returns -1) and is
// remembered, so a trap or nonzero exit that follows can be reported as
// MEMORY_EXHAUSTED.
//
// Backing buffers come from size-classed pools and go back wiped, so a fresh
// instance costs a memclr of what the previous one used instead of a new
// zeroed allocation and the garbage collection behind it. A buffer is only
// returned by release, which the engine calls after the instance is closed
// and its guest has stopped; wazero's own Free (which a timed-out instance
// may never reach) does not recycle anything.
type memoryAllocator struct {
	limit uint64
	// image, when set, is the memory's initial contents (a snapshot): it is
	// copied in before the instance exists, and exposed as memory grows to
	// its size.
	image []byte
	// pages are the ranges of image that hold a nonzero byte: a buffer is
	// zero to begin with, so a restore copies these alone (a snapshot's
	// heap has free and never-touched pages between its live ones).
	pages []byteRange
	mem   *limitedMemory
}

func (a *memoryAllocator) Allocate(capacity, _ uint64) experimental.LinearMemory {
	buf := takeBuffer(max(min(capacity, a.limit), uint64(len(a.image))))
	for _, r := range a.pages {
		copy(buf[r.start:r.end], a.image[r.start:r.end])
	}
	a.mem = &limitedMemory{limit: a.limit, buf: buf[:0], dirty: len(a.image)}
	return a.mem
}

func (a *memoryAllocator) refused() bool { return a.mem != nil && a.mem.refused }

// release wipes the memory and returns it to its pool. The allocator must
// not be used afterwards.
func (a *memoryAllocator) release() {
	if a.mem == nil || a.mem.buf == nil {
		return
	}
	putBuffer(a.mem.buf[:max(len(a.mem.buf), a.mem.dirty)])
	a.mem.buf = nil
}

type limitedMemory struct {
	buf     []byte
	limit   uint64
	refused bool
	// dirty is how far the buffer may hold nonzero bytes beyond len(buf):
	// an image not yet exposed by growth.
	dirty int
}

func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = true
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		// Pooled and fresh buffers are zero up to their capacity, and memory
		// only grows, so the bytes newly exposed are zero, or the image's.
		m.buf = m.buf[:size]
		return m.buf
	}
	grown := takeBuffer(min(max(size, 2*uint64(cap(m.buf))), m.limit))[:size]
	copy(grown, m.buf[:max(len(m.buf), m.dirty)])
	putBuffer(m.buf[:max(len(m.buf), m.dirty)])
	m.dirty = 0
	m.buf = grown
	return m.buf
}

// Free is wazero's hook when the instance closes; recycling waits for
// release, see memoryAllocator.
func (m *limitedMemory) Free() {}

// Buffers up to maxPooledPages are pooled by power-of-two page counts.
const maxPooledPages = 256

var bufferPools [9]sync.Pool // 1, 2, 4, ... 256 pages

func poolIndex(pages uint64) int { return bits.Len64(pages - 1) }

// takeBuffer returns a zeroed buffer of at least capacity bytes.
func takeBuffer(capacity uint64) []byte {
	pages := (capacity + pageSize - 1) / pageSize
	if pages == 0 || pages > maxPooledPages {
		return make([]byte, capacity)
	}
	i := poolIndex(pages)
	if b, ok := bufferPools[i].Get().(*[]byte); ok {
		return (*b)[:cap(*b)]
	}
	return make([]byte, (uint64(1)<<i)*pageSize)
}

// putBuffer wipes the used part of b (the rest is still zero) and pools it.
func putBuffer(b []byte) {
	clear(b)
	c := uint64(cap(b))
	if c%pageSize != 0 {
		return
	}
	pages := c / pageSize
	if pages == 0 || pages > maxPooledPages || pages&(pages-1) != 0 {
		return
	}
	b = b[:0]
	bufferPools[poolIndex(pages)].Put(&b)
}
