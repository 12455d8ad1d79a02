package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/buildid"
)

// TestTestBinariesShareTheSourcesIdentity: a test binary's build is named
// by the module's sources, the same in every test binary of this tree and
// every run of it.
func TestTestBinariesShareTheSourcesIdentity(t *testing.T) {
	id := sourceIdentity()
	require.NotEmpty(t, id, "the module's root is above the package's directory")
	assert.Regexp(t, `^test build of sources [0-9a-f]{64}$`, id)
	assert.Equal(t, id, buildid.Identity())
	assert.Equal(t, id, sourceIdentity(), "the same tree, the same identity")
}

// TestSourcesDigest: what changes the digest of a tree (a file's contents
// or path, an added file) and what does not (fixtures, npm packages, VCS
// data, built binaries).
func TestSourcesDigest(t *testing.T) {
	base := map[string]string{
		"go.mod":         "module m\n",
		"a/a.go":         "package a\n",
		"a/a_test.go":    "package a\n",
		"a/dist/lib.js":  "export {}\n",
		"a/testdata/x":   "fixture",
		"node_modules/y": "npm",
		".git/HEAD":      "ref",
		"bin/tool":       "built",
		"wasmgate":       "\x7fELF...",
	}
	digest := func(t *testing.T, files map[string]string) string {
		t.Helper()
		root := t.TempDir()
		for name, body := range files {
			p := filepath.Join(root, name)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		}
		h := blake3.New()
		require.NoError(t, hashTree(h, root))
		return string(h.Sum(nil))
	}
	with := func(name, body string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		m[name] = body
		return m
	}
	want := digest(t, base)
	for _, c := range []struct {
		name    string
		files   map[string]string
		changes bool
	}{
		{"the same tree", base, false},
		{"a source changed", with("a/a.go", "package a // changed\n"), true},
		{"a test file changed", with("a/a_test.go", "package a // changed\n"), true},
		{"an embedded file changed", with("a/dist/lib.js", "export const x = 1\n"), true},
		{"a file added", with("a/b.go", "package a\n"), true},
		{"a fixture changed", with("a/testdata/x", "other"), false},
		{"an npm package changed", with("node_modules/y", "other"), false},
		{"VCS data changed", with(".git/HEAD", "other"), false},
		{"a binary built into bin/", with("bin/other", "built"), false},
		{"a binary built beside the sources", with("a/a.test", "\x7fELF other"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.changes {
				assert.NotEqual(t, want, digest(t, c.files))
			} else {
				assert.Equal(t, want, digest(t, c.files))
			}
		})
	}
}
