package instrument_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/instrument"
)

// Facts says whether an instance's state is its memory and globals alone.
func TestFactsStateIsMemoryAndGlobals(t *testing.T) {
	for name, want := range map[string]bool{
		"echo.wasm":      true,
		"sort.wasm":      true, // C, compiled by clang
		"tablegrow.wasm": false,
		"tablefill.wasm": false,
	} {
		wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "testdata", name))
		require.NoError(t, err)
		_, facts, err := instrument.InstrumentFacts(wasm, instrument.Options{MaxCallDepth: 1000})
		require.NoError(t, err, name)
		assert.Equal(t, want, facts.StateIsMemoryAndGlobals, name)
	}
}
