package wasmgate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/pipeline"
)

// TestJSNeedsItsKind: JS code on a Runtime not given the JavaScript kind
// fails New with an error that names what to import and pass, whether it
// comes as a value or in a registry file; given the kind, the same
// registry file serves its JS action.
func TestJSNeedsItsKind(t *testing.T) {
	ctx := context.Background()
	slugify, err := filepath.Abs("guests/js/slugify.ts")
	require.NoError(t, err)
	config := filepath.Join(t.TempDir(), "registry.json")
	require.NoError(t, os.WriteFile(config, []byte(`{
		"executors": {"slugify": {"js": "`+slugify+`"}},
		"actions": {"text.slug": {"executor": "slugify", "version": "^1.0.0"}}}`), 0o600))
	const hint = "is JavaScript code, which this registry was not given the kind for: import github.com/wasmgate/wasmgate/js and give js.Kind() (wasmgate.WithKind(js.Kind()), or to pipeline.NewRegistry, LoadRegistry, LoadExecutor or RegistryForSource)"

	for _, c := range []struct {
		name string
		opts []wasmgate.Option
		want string
	}{
		{"a JS file as a value", []wasmgate.Option{
			wasmgate.WithExecutor("slugify", wasmgate.ExecutorSource{JS: "guests/js/slugify.ts"}),
			wasmgate.WithAction("text.slug", wasmgate.Route{Executor: "slugify", Version: "^1.0.0"}),
		}, `wasmgate: invalid registry: executor "slugify": pipeline: no executor kind given loads this code: JS tool guests/js/slugify.ts ` + hint},
		{"a package as a value", []wasmgate.Option{
			wasmgate.WithExecutor("p", wasmgate.ExecutorSource{Package: "left-pad@1.3.0", Tool: "default"}),
			wasmgate.WithAction("pad", wasmgate.Route{Executor: "p", Version: "*"}),
		}, `wasmgate: invalid registry: executor "p": pipeline: no executor kind given loads this code: package left-pad@1.3.0 ` + hint},
		{"a registry file", []wasmgate.Option{wasmgate.WithRegistryFile(config)},
			`executor "slugify": pipeline: no executor kind given loads this code: JS tool ` + slugify + ` ` + hint},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := wasmgate.New(ctx, c.opts...)
			require.ErrorIs(t, err, pipeline.ErrNoKind)
			assert.EqualError(t, err, c.want)
		})
	}

	t.Run("a registry file with the kind", func(t *testing.T) {
		rt, err := wasmgate.New(ctx, wasmgate.WithRegistryFile(config), wasmgate.WithKind(js.Kind()), wasmgate.WithCompilationCacheDir(testenv.CacheDir()))
		require.NoError(t, err)
		defer rt.Close(ctx)
		res, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "text.slug", Payload: json.RawMessage(`{"title": "A Kind of Tool"}`)})
		require.NoError(t, err)
		assert.Equal(t, wasmgate.StatusSuccess, res.Status, res.Message)
		assert.JSONEq(t, `{"removed":["a","of"],"slug":"kind-tool"}`, string(res.Output))
	})

	t.Run("a nil kind", func(t *testing.T) {
		_, err := wasmgate.New(ctx, wasmgate.WithKind(nil), wasmgate.WithRegistryFile(config))
		require.ErrorIs(t, err, wasmgate.ErrInvalidOption)
		assert.EqualError(t, err, "wasmgate: invalid option: WithKind: nil kind")
	})
}
