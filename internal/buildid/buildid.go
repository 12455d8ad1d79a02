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
)

// Identity names the build of wasmgate running: its Go version, module
// version and VCS revision when it was built from a clean checkout (go
// build stamps them), else the executable's path, size and modification
// time as well, so that a rebuilt binary (or test binary) never trusts what
// another build derived.
var Identity = sync.OnceValue(func() string {
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
