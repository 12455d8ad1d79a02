package audit

import (
	"errors"
	"os"
	"syscall"
)

// fallocKeepSize is FALLOC_FL_KEEP_SIZE: allocate without changing the
// file's size, so the probe leaves no bytes a reader could see.
const fallocKeepSize = 0x1

// reserveSpace asks the file system for n bytes after off in f (ENOSPC or
// EDQUOT when it has none). A file system without fallocate cannot be
// asked; the next write is then the test.
func reserveSpace(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = syscall.Fallocate(int(fd), fallocKeepSize, off, n)
	}); err != nil {
		return err
	}
	if errors.Is(ferr, syscall.EOPNOTSUPP) || errors.Is(ferr, syscall.ENOSYS) {
		return nil
	}
	if ferr != nil {
		return &os.PathError{Op: "reserve space", Path: f.Name(), Err: ferr}
	}
	return nil
}

// datasync is fdatasync(2): it makes f's data durable, and of its metadata
// what reading the data back needs (its size, where its blocks are), not
// its timestamps. An append into space reserveSpace allocated beforehand
// then costs the data and the inode's new size, not block allocation
// (bitmaps, group descriptors) on every commit.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
