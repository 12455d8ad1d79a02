package sandbox

import (
	goruntime "runtime"
	"sync"
	"syscall"
	"unsafe"
	"weak"

	"github.com/tetratelabs/wazero/experimental"
)

// cowAllocator starts an instance's memory from a snapshot by mapping the
// image copy-on-write rather than copying it: the image lives once in a
// memfd, each instance maps it MAP_PRIVATE, and the kernel copies a page
// only when the instance writes it. It is the alternative memoryAllocator
// is measured against (Config.copyOnWrite, BenchmarkJSSnapshotStart).
//
// Each instance reserves its whole limit at once (anonymous, MAP_NORESERVE,
// so only touched pages cost memory) with the image mapped over its start,
// so growing never moves the memory and the bytes past the image are zero.
// The mapping is removed by release, after the instance is closed: wazero's
// Free (which a timed-out instance may never reach) does nothing.
//
// When the kernel refuses a mapping, the instance falls back to the copy.
type cowAllocator struct {
	limit uint64
	// snap keeps the snapshot, and so its image file, alive while mapped.
	snap *Snapshot
	fd   int

	mem      *cowMemory
	fallback memoryAllocator
}

// newCOWAllocator returns nil when the image cannot be put in a memfd.
func newCOWAllocator(limit uint64, from *Snapshot) instanceMemory {
	fd, ok := imageFile(from)
	if !ok {
		return nil
	}
	return &cowAllocator{limit: limit, snap: from, fd: fd, fallback: memoryAllocator{limit: limit, image: from.memory, pages: from.nonzeroPages()}}
}

func (a *cowAllocator) Allocate(capacity, maxBytes uint64) experimental.LinearMemory {
	image := uint64(len(a.snap.memory))
	reserve := max(min(a.limit, maxBytes), image)
	region, err := syscall.Mmap(-1, 0, int(reserve),
		syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return a.fallback.Allocate(capacity, maxBytes)
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_MMAP, uintptr(unsafe.Pointer(&region[0])), uintptr(image),
		syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_FIXED, uintptr(a.fd), 0)
	if errno != 0 {
		_ = syscall.Munmap(region)
		return a.fallback.Allocate(capacity, maxBytes)
	}
	a.mem = &cowMemory{region: region, limit: a.limit}
	return a.mem
}

func (a *cowAllocator) refused() bool {
	if a.mem != nil {
		return a.mem.refused
	}
	return a.fallback.refused()
}

func (a *cowAllocator) release() {
	if a.mem == nil {
		a.fallback.release()
		return
	}
	if a.mem.region != nil {
		_ = syscall.Munmap(a.mem.region)
		a.mem.region = nil
	}
}

// cowMemory is one instance's mapping.
type cowMemory struct {
	region  []byte // the whole reservation, as mapped
	limit   uint64
	refused bool
}

func (m *cowMemory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = true
		return nil
	}
	if size > uint64(len(m.region)) {
		// Past the module's own maximum, which wazero checks first.
		return nil
	}
	return m.region[:size]
}

// Free is wazero's hook when the instance closes; unmapping waits for
// release, see cowAllocator.
func (m *cowMemory) Free() {}

// imageFiles holds each snapshot's memfd, made on first use and closed when
// the snapshot is garbage: a Snapshot is immutable, so its file is too.
var imageFiles sync.Map // weak.Pointer[Snapshot] -> *imageFileEntry

type imageFileEntry struct {
	once sync.Once
	fd   int // -1: no memfd could be made
}

func imageFile(s *Snapshot) (int, bool) {
	if len(s.memory) == 0 {
		return -1, false
	}
	key := weak.Make(s)
	v, ok := imageFiles.Load(key)
	if !ok {
		var loaded bool
		v, loaded = imageFiles.LoadOrStore(key, &imageFileEntry{fd: -1})
		if !loaded {
			goruntime.AddCleanup(s, forgetImageFile, key)
		}
	}
	e := v.(*imageFileEntry)
	e.once.Do(func() {
		if fd, err := memfdWith(s.memory); err == nil {
			e.fd = fd
		}
	})
	return e.fd, e.fd >= 0
}

// forgetImageFile closes the memfd of a snapshot that is gone. Mappings
// still open keep the file's pages themselves.
func forgetImageFile(key weak.Pointer[Snapshot]) {
	v, ok := imageFiles.LoadAndDelete(key)
	if !ok {
		return
	}
	e := v.(*imageFileEntry)
	e.once.Do(func() {}) // orders the read of fd after its write
	if e.fd >= 0 {
		_ = syscall.Close(e.fd)
	}
}

// sysMemfdCreate is memfd_create's number: package syscall predates it, and
// golang.org/x/sys is not a dependency.
var sysMemfdCreate = map[string]uintptr{"amd64": 319, "arm64": 279}[goruntime.GOARCH]

const mfdCloexec = 0x1

// memfdWith returns a memfd holding b.
func memfdWith(b []byte) (int, error) {
	if sysMemfdCreate == 0 {
		return -1, syscall.ENOSYS
	}
	name := []byte("wasmgate-snapshot\x00")
	r, _, errno := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])), mfdCloexec, 0)
	if errno != 0 {
		return -1, errno
	}
	fd := int(r)
	if err := syscall.Ftruncate(fd, int64(len(b))); err != nil {
		_ = syscall.Close(fd)
		return -1, err
	}
	for off := 0; off < len(b); {
		n, err := syscall.Pwrite(fd, b[off:], int64(off))
		if err == nil && n == 0 {
			err = syscall.EIO
		}
		if err != nil {
			_ = syscall.Close(fd)
			return -1, err
		}
		off += n
	}
	return fd, nil
}
