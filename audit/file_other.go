//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package audit

import (
	"os"
	"time"
)

// canLock reports whether lockFile keeps a second sink away.
const canLock = false

// lockFile does nothing where flock is missing: keeping a second writer away
// is then the deployment's job.
func lockFile(*os.File, time.Duration) error { return nil }

// syncDir does nothing where directories cannot be fsynced (Windows).
func syncDir(string) error { return nil }
