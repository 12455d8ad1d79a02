//go:build !linux

package sandbox

// newCOWAllocator: copy-on-write snapshots are Linux-only (a memfd mapped
// privately); elsewhere every instance copies its image.
func newCOWAllocator(uint64, *Snapshot) instanceMemory { return nil }
