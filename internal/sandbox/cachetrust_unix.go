//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"
)

// unixPerms: a file's mode says who may read and write it.
const unixPerms = true

// fileOwner is the uid that owns the file fi describes.
func fileOwner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
