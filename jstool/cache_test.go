package jstool_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/jstool"
)

// TestLoadFromTheCacheIsTheColdLoad: a tool loaded by a later process
// (another engine on the same cache directory), from the instrumented engine
// and the tool's snapshot on disk, is the tool a cold load gives: the same
// digest, manifest, info, load fuel and snapshot size, and executions with
// the same outcome, output and fuel. A corrupted snapshot entry is rebuilt,
// with the same result.
func TestLoadFromTheCacheIsTheColdLoad(t *testing.T) {
	ctx := context.Background()
	if _, err := jstool.EngineModule(); err != nil {
		t.Fatalf("%v (make test fetches it)", err)
	}
	dir := t.TempDir()
	spec := func(t *testing.T) jstool.Spec {
		b, err := jstool.BundleFile(filepath.Join(tools, "described.js"))
		require.NoError(t, err)
		return jstool.Spec{Bundle: b, Export: "plain", Manifest: sandbox.Manifest{ExecutorID: "described", Version: "1.0.0"}}
	}
	type loaded struct {
		digest   string
		manifest sandbox.Manifest
		info     jstool.ToolInfo
		loadFuel uint64
		snapshot int
		outcome  sandbox.Outcome
	}
	load := func(t *testing.T, cacheDir string) loaded {
		t.Helper()
		cfg := sandbox.NewConfig()
		if cacheDir != "" {
			cfg = cfg.WithCompilationCacheDir(cacheDir)
		}
		e, err := sandbox.NewEngine(ctx, cfg)
		require.NoError(t, err)
		defer e.Close(ctx)
		tool, err := jstool.Load(ctx, e, spec(t))
		require.NoError(t, err)
		payload := []byte(`{"text":"Oslo"}`)
		out, err := tool.Execute(ctx, sandbox.Input{Bytes: payload, Digest: audit.DigestBytes(payload)})
		require.NoError(t, err)
		return loaded{tool.ModuleDigest(), tool.Manifest(), tool.Info(), tool.LoadFuel(), tool.SnapshotBytes(), out}
	}
	cold := load(t, "")
	require.Equal(t, sandbox.Completed, cold.outcome.Kind, cold.outcome.Message)
	require.NotEmpty(t, cold.info.Description, "the tool describes itself")

	first := load(t, dir) // fills the cache
	snapshots, err := filepath.Glob(filepath.Join(dir, "wasmgate-v1", "snapshot-*"))
	require.NoError(t, err)
	require.Len(t, snapshots, 1)
	reactors, err := filepath.Glob(filepath.Join(dir, "wasmgate-v1", "reactor-*"))
	require.NoError(t, err)
	require.Len(t, reactors, 1)
	stored, err := os.ReadFile(snapshots[0])
	require.NoError(t, err)

	warm := load(t, dir) // reads it
	assert.Equal(t, cold, first)
	assert.Equal(t, cold, warm)

	// A snapshot entry with a byte changed is not used, but rebuilt.
	corrupt := append([]byte(nil), stored...)
	corrupt[len(corrupt)/2] ^= 0x40
	require.NoError(t, os.WriteFile(snapshots[0], corrupt, 0o600))
	assert.Equal(t, cold, load(t, dir))
	rebuilt, err := os.ReadFile(snapshots[0])
	require.NoError(t, err)
	assert.Equal(t, stored, rebuilt, "the rebuilt entry is the one first stored")
}
