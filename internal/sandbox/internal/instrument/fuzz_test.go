package instrument

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// FuzzInstrument: a malformed module never makes Instrument panic, and
// whatever Instrument accepts compiles in wazero. Seeds: every fixture as
// admission hands it over, the NaN module and a few generated modules.
func FuzzInstrument(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "testdata", "*.wasm"))
	require.NoError(f, err)
	paths = append(paths, filepath.Join("testdata", "nan.wasm"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		if code, err := pipelineForEngine(b); err == nil && len(code) < 1<<20 {
			f.Add(code, uint32(100), true)
		}
	}
	for seed := int64(0); seed < 8; seed++ {
		f.Add(genModule(seed), uint32(seed), seed%2 == 0)
	}

	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2))
	f.Cleanup(func() { rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte, maxDepth uint32, canon bool) {
		opts := Options{MaxCallDepth: maxDepth, CanonicalizeNaN: canon}
		out, err := Instrument(wasm, opts)
		if err != nil {
			return
		}
		again, err := Instrument(wasm, opts)
		require.NoError(t, err)
		require.True(t, bytes.Equal(out, again), "the output depends only on the input")
		cm, err := rt.CompileModule(ctx, out)
		require.NoError(t, err, "instrument accepted a module whose output wazero refuses")
		cm.Close(ctx)
	})
}
