//go:build !linux

package tscheck

// residentBytes cannot read another process's resident memory here: only
// the time bound and GOMEMLIMIT bound the compiler (docs/STDIO.md says so).
func residentBytes(pid int) (int64, error) { return 0, errUnsupported }
