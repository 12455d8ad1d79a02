package instrument

import (
	"context"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/wasmgate/wasmgate/internal/sandbox/internal/wasmbin"
)

// spectestDir is wazero's copy of the WebAssembly spec tests, in the module
// cache: every module of every .wast file, valid or not, as a .wasm file.
func spectestDir(t testing.TB) string {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("go env GOMODCACHE: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "github.com", "tetratelabs",
		"wazero@v1.12.0", "internal", "integration_test", "spectest")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no spec tests at %s: %v", dir, err)
	}
	return dir
}

// pipeline is what the engine does with a module before compiling it:
// admission's decoding and ForEngine (with no table cap, which is policy,
// not validity), then instrumentation.
func pipeline(wasm []byte, opts Options) ([]byte, error) {
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		return nil, err
	}
	code, err := m.ForEngine(math.MaxUint32)
	if err != nil {
		return nil, err
	}
	return Instrument(code, opts)
}

// maxTableElements is runtime.MaxTableElements, which admission applies to
// the fixtures (tablegrow.wasm reports it).
const maxTableElements = 1 << 20

func pipelineForEngine(wasm []byte) ([]byte, error) {
	m, err := wasmbin.Decode(wasm)
	if err != nil {
		return nil, err
	}
	return m.ForEngine(maxTableElements)
}

// specKinds maps each module file of a spec-test directory to the command
// that uses it in the .json beside it: "module" (valid), "assert_invalid",
// "assert_malformed", ...
func specKinds(t *testing.T, dir string) map[string]string {
	kinds := map[string]string{}
	jsons, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	for _, j := range jsons {
		b, err := os.ReadFile(j)
		require.NoError(t, err)
		var script struct {
			Commands []struct {
				Type     string `json:"type"`
				Filename string `json:"filename"`
			} `json:"commands"`
		}
		require.NoError(t, json.Unmarshal(b, &script), j)
		for _, c := range script.Commands {
			if c.Filename != "" {
				kinds[filepath.Join(dir, c.Filename)] = c.Type
			}
		}
	}
	return kinds
}

// TestSpecCorpus: every module wazero compiles (with WebAssembly 2.0
// features) must still compile once instrumented; every other one must be
// refused, never panic. Where wazero and the spec disagree, the spec wins,
// and the test says so in its log:
//   - wazero accepts some modules the spec's own scripts mark invalid
//     (global.get of a mutable imported global in a constant expression):
//     instrument refuses them;
//   - wazero accepts some modules of the proposals beyond 2.0 (typed function
//     references, extended constant expressions) even with 2.0 features only:
//     instrument refuses them;
//   - wazero refuses imports from a module named "", which the spec allows:
//     instrument accepts them (admission refuses every such import anyway),
//     and wazero refuses the output just as it refused the input.
func TestSpecCorpus(t *testing.T) {
	root := spectestDir(t)
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".wasm") {
			files = append(files, path)
		}
		return err
	}))
	sort.Strings(files)
	if quick() {
		// Every 8th module keeps -short quick and still covers every directory.
		var some []string
		for i := 0; i < len(files); i += 8 {
			some = append(some, files[i])
		}
		files = some
	}
	kinds := map[string]string{}
	dirs := map[string]bool{}
	for _, f := range files {
		if d := filepath.Dir(f); !dirs[d] {
			dirs[d] = true
			for k, v := range specKinds(t, d) {
				kinds[k] = v
			}
		}
	}

	ctx := context.Background()
	interp := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(api.CoreFeaturesV2))
	defer interp.Close(ctx)
	compiler := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCoreFeatures(api.CoreFeaturesV2))
	defer compiler.Close(ctx)
	compiles := func(rt wazero.Runtime, b []byte) error {
		cm, err := rt.CompileModule(ctx, b)
		if err == nil {
			cm.Close(ctx)
		}
		return err
	}

	optionSets := []Options{{MaxCallDepth: 1000, CanonicalizeNaN: true}, {}}
	var valid, refused, specStricter, beyond2, emptyModule int
	for _, path := range files {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		name, _ := filepath.Rel(root, path)
		proposal := !strings.HasPrefix(name, "v1"+string(filepath.Separator)) && !strings.HasPrefix(name, "v2"+string(filepath.Separator))
		wazeroErr := compiles(interp, b)
		for _, opts := range optionSets {
			out, ourErr := pipeline(b, opts)
			switch {
			case wazeroErr == nil && ourErr == nil:
				if err := compiles(interp, out); err != nil {
					t.Errorf("%s %+v: the interpreter refuses the output: %v", name, opts, err)
				}
				if err := compiles(compiler, out); err != nil {
					t.Errorf("%s %+v: the compiler refuses the output: %v", name, opts, err)
				}
				valid++
			case wazeroErr == nil && proposal:
				beyond2++
			case wazeroErr == nil && (kinds[path] == "assert_invalid" || kinds[path] == "assert_malformed"):
				specStricter++
			case wazeroErr == nil:
				t.Errorf("%s %+v: wazero compiles it, instrument refuses: %v", name, opts, ourErr)
			case ourErr == nil && strings.Contains(wazeroErr.Error(), "empty module name"):
				require.Error(t, compiles(interp, out), name)
				emptyModule++
			case ourErr == nil:
				t.Errorf("%s %+v: wazero refuses it (%v), instrument accepts it", name, opts, wazeroErr)
			default:
				refused++
			}
		}
	}
	t.Logf("spec corpus: %d modules, each with %d option sets: %d instrumented and compiled (compiler and interpreter), "+
		"%d refused by both; refused by instrument only: %d invalid by the spec, %d beyond WebAssembly 2.0; "+
		"%d accepted by instrument only (imports from module \"\")",
		len(files), len(optionSets), valid, refused, specStricter, beyond2, emptyModule)
}
