//go:build !unix

package sandbox

// lock takes no lock where flock is not: processes that need the same
// entry may each make it (diskcache.go's writes are atomic all the same).
func (c diskCache) lock(diskKey) (unlock func()) { return func() {} }
