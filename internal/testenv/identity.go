package testenv

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/buildid"
)

// Every test binary that imports testenv names its build by its sources
// (buildid.SetForTests), so that the entries the compilation cache keeps
// per build (the instrumented QuickJS engine, the memory each JS tool's
// loading left) are made once for the whole suite and reused by the next
// run of an unchanged tree, where each test binary made its own before.
func init() { buildid.SetForTests(sync.OnceValue(sourceIdentity)) }

// sourceIdentity is the digest of what a test binary of this module is
// built from: the Go version, the build's settings (cgo, GOARCH…, but
// -race and -tags), the dependencies' versions and sums, and every file of the
// module's tree but its VCS data, test fixtures, installed npm packages and
// built binaries, none of which a test binary's code comes from. Test files
// are included, so that a test binary whose internal tests changed is a new
// build too. "" (the default identity) when the module's root cannot be
// found or read.
func sourceIdentity() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	h := blake3.New()
	fmt.Fprintf(h, "go %s\nmodule %s\n", bi.GoVersion, bi.Main.Path)
	for _, s := range bi.Settings {
		// The race detector adds checks to the same code, and the one tag
		// (wasmtime) adds an engine whose entries are named by it: make
		// test's two passes and make test-wasmtime, run side by side,
		// would otherwise each be a build of their own and remove each
		// other's entries as they write them.
		if s.Key == "-race" || s.Key == "-tags" {
			continue
		}
		fmt.Fprintf(h, "setting %q %q\n", s.Key, s.Value)
	}
	for _, d := range bi.Deps {
		fmt.Fprintf(h, "dep %s %s %s\n", d.Path, d.Version, d.Sum)
		if d.Replace != nil {
			fmt.Fprintf(h, "replaced %s %s %s\n", d.Replace.Path, d.Replace.Version, d.Replace.Sum)
		}
	}
	if err := hashTree(h, root); err != nil {
		return ""
	}
	return "test build of sources " + hex.EncodeToString(h.Sum(nil))
}

// skippedDirs hold nothing a test binary is built from.
var skippedDirs = []string{".git", "testdata", "node_modules", "bin", ".cache"}

// hashTree writes every file under root to h, each by its path and
// contents, in lexical order; executables the build left in the tree (an
// ELF file) are skipped.
func hashTree(h io.Writer, root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && slices.Contains(skippedDirs, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(b, []byte("\x7fELF")) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "file %q %d\n", filepath.ToSlash(rel), len(b))
		_, err = h.Write(b)
		return err
	})
}

// moduleRoot is the directory of the go.mod above the working directory
// (go test runs a test binary in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
