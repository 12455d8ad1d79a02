// Package buildid names the build of wasmgate running, so that what one
// build derived and kept on disk (the compilation cache's entries, a tool
// store's catalog records) is never trusted by another build, whose
// instrumenter, QuickJS engine or loading rules may differ.
package buildid

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
)

// Identity names the build of wasmgate running: its Go version, module
// version and VCS revision when it was built from a clean checkout (go
// build stamps them), else the executable's path, size and modification
// time as well, so that a rebuilt binary (or test binary) never trusts what
// another build derived. A test binary may name its build by its sources
// instead (SetForTests).
var Identity = func() string {
	if f := testIdentity.Load(); f != nil {
		if id := (*f)(); id != "" {
			return id
		}
	}
	return executableIdentity()
}

// testIdentity is what SetForTests set.
var testIdentity atomic.Pointer[func() string]

// SetForTests makes Identity what f returns ("": what it would be without
// it). Package testenv gives it the digest of the module's sources and the
// build's settings: go test stamps no VCS revision, so without it every
// test binary, and every run of one, would be a build of its own, and the
// cache entries made per build (an instrumented QuickJS engine, the memory
// a JS tool's loading left) would be made again by each, and each would
// remove the others'. Two test binaries that name the same sources, build
// settings and dependencies are built from the same code, so sharing what
// one derived is as safe as one binary reusing its own.
func SetForTests(f func() string) { testIdentity.Store(&f) }

var executableIdentity = sync.OnceValue(func() string {
	var b strings.Builder
	clean := false
	if bi, ok := debug.ReadBuildInfo(); ok {
		fmt.Fprintf(&b, "%s %s %s %s", bi.GoVersion, bi.Path, bi.Main.Path, bi.Main.Version)
		var revision, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		fmt.Fprintf(&b, " %s %s", revision, modified)
		clean = revision != "" && modified == "false"
	}
	if !clean {
		exe, err := os.Executable()
		if err == nil {
			if fi, err := os.Stat(exe); err == nil {
				fmt.Fprintf(&b, " %s %d %d", exe, fi.Size(), fi.ModTime().UnixNano())
			}
		}
	}
	return b.String()
})
