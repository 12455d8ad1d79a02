package gobuild

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWasmgateGiven: a command given by a relative path is returned
// absolute, and nothing is built.
func TestWasmgateGiven(t *testing.T) {
	dir := t.TempDir()
	got, err := Wasmgate(context.Background(), "bin/wasmgate", dir)
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "bin", "wasmgate"), got)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
