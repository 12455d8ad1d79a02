//go:build !linux

package sandbox

// dirtyPages: without a pagemap every page counts as written.
func dirtyPages([]byte) ([]byteRange, bool) { return nil, false }
