package sandbox

import (
	"encoding/binary"
	"os"
	"sync"
	"unsafe"
)

// pagemap is /proc/self/pagemap, opened once: a 64-bit entry per virtual
// page of the process (Documentation/admin-guide/mm/pagemap.rst).
var pagemap = sync.OnceValue(func() *os.File {
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil
	}
	return f
})

const (
	pagemapPresent = 1 << 63
	pagemapSwapped = 1 << 62
	// pagemapFile: the page is a file page or shared anonymous memory. In
	// a private mapping of a file, a page the process wrote to is a
	// private anonymous copy, without this bit.
	pagemapFile = 1 << 61
)

// dirtyPages returns the ranges of mem, a private mapping of an image file
// (cowAllocator), that hold a private copy of a page: the pages written
// since the mapping was made. Every other page still maps the image
// itself. It reports false when the kernel does not say (no pagemap), and
// the caller must then treat every page as written.
func dirtyPages(mem []byte) ([]byteRange, bool) {
	f := pagemap()
	if f == nil || len(mem) == 0 {
		return nil, f != nil
	}
	page := os.Getpagesize()
	start := uintptr(unsafe.Pointer(&mem[0]))
	if start%uintptr(page) != 0 {
		return nil, false
	}
	n := (len(mem) + page - 1) / page
	buf := make([]byte, 8*n)
	if _, err := f.ReadAt(buf, int64(start/uintptr(page))*8); err != nil {
		return nil, false
	}
	var ranges []byteRange
	for i := range n {
		e := binary.LittleEndian.Uint64(buf[8*i:])
		private := (e&pagemapPresent != 0 && e&pagemapFile == 0) || e&pagemapSwapped != 0
		if !private {
			continue
		}
		off, end := i*page, min((i+1)*page, len(mem))
		if k := len(ranges); k > 0 && ranges[k-1].end == off {
			ranges[k-1].end = end
			continue
		}
		ranges = append(ranges, byteRange{off, end})
	}
	return ranges, true
}
