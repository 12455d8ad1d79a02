//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockMirror takes an exclusive advisory lock on a chain's copy for the
// life of f, or fails at once: two processes appending the same records
// to one copy would write each twice. `wasmgate audit repair` takes the
// same lock, so it waits for the copy's keeper too.
func lockMirror(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errors.New("another process keeps it (a 'wasmgate log --nats' with the same --mirror)")
	}
	return err
}
