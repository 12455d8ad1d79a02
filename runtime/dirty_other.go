//go:build !linux

package runtime

// dirtyPages: without a pagemap every page counts as written.
func dirtyPages([]byte) ([]byteRange, bool) { return nil, false }
