package jstool_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/jstool"
)

// Latest names each package once, at its highest version, and skips what
// is not a package.
func TestStoreLatest(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"b-tools@1.2.0", "b-tools@1.10.0", "b-tools@1.10.0-rc.1", "@acme+text@2.0.0",
		"specs", ".add-123", "not-a-version@latest"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "stray@1.0.0"), nil, 0o644))
	got, err := jstool.Store{Dir: dir}.Latest()
	require.NoError(t, err)
	assert.Equal(t, []jstool.Listed{{"@acme/text", "2.0.0"}, {"b-tools", "1.10.0"}}, got)

	_, err = jstool.Store{Dir: dir}.Load(got[0])
	assert.ErrorIs(t, err, os.ErrNotExist, "a directory without its bundle is not a package")

	none, err := jstool.Store{Dir: filepath.Join(dir, "missing")}.Latest()
	require.NoError(t, err)
	assert.Empty(t, none)
}
