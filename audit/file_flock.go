//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package audit

import (
	"errors"
	"os"
	"syscall"
)

// canLock reports whether lockFile keeps a second sink away.
const canLock = true

// lockFile takes an exclusive advisory lock for the life of f: two sinks
// extending one log would both continue from the same seq.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	if err := rc.Control(func(fd uintptr) {
		lockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return err
	}
	if errors.Is(lockErr, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return lockErr
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
