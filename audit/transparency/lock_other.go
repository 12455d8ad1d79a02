//go:build !unix

package transparency

import (
	"os"
	"time"
)

// Without flock, a tree is not shared between processes safely: one
// process at a time may update it.
func lockFile(*os.File, time.Duration) error { return nil }

func unlockFile(*os.File) {}

func syncDir(string) error { return nil }
