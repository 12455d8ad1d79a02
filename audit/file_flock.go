//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package audit

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// canLock reports whether lockFile keeps a second sink away.
const canLock = true

// lockFile takes an exclusive advisory lock for the life of f: two sinks
// extending one log would both continue from the same seq. While another
// holds it, lockFile polls (flock has no timeout) for up to wait, so a
// short-lived writer (one `wasmgate run`) is waited for instead of failing.
func lockFile(f *os.File, wait time.Duration) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(wait)
	pause := 5 * time.Millisecond
	for {
		var lockErr error
		if err := rc.Control(func(fd uintptr) {
			lockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
		}); err != nil {
			return err
		}
		if !errors.Is(lockErr, syscall.EWOULDBLOCK) {
			return lockErr
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%w (waited %s for it)", ErrLocked, wait)
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, 100*time.Millisecond)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
