//go:build !unix

package main

import "os"

// lockMirror takes no lock where flock is missing: one process at a time
// must keep a copy (see logHelp).
func lockMirror(*os.File) error { return nil }
