//go:build !linux

package audit

import "os"

// reserveSpace cannot ask the file system for room without fallocate; the
// next write is the test.
func reserveSpace(*os.File, int64, int64) error { return nil }

// datasync is a plain fsync where fdatasync is not at hand.
func datasync(f *os.File) error { return f.Sync() }
