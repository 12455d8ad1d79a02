package instrument

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The spec scripts (.json beside the .wasm files) say which modules to
// instantiate, link and call. TestSpecScripts replays every script of the
// WebAssembly 2.0 suite in three worlds: plain, instrumented, and
// instrumented with canonical NaNs; every call must give the same results
// and traps in all three (NaNs aside in the third, where they must be
// canonical).

type specScript struct {
	Commands []specCommand `json:"commands"`
}

type specCommand struct {
	Type     string `json:"type"`
	Line     int    `json:"line"`
	Filename string `json:"filename"`
	Name     string `json:"name"`
	As       string `json:"as"`
	Action   struct {
		Type   string      `json:"type"`
		Module string      `json:"module"`
		Field  string      `json:"field"`
		Args   []specValue `json:"args"`
	} `json:"action"`
	Expected []specValue `json:"expected"`
}

type specValue struct {
	Type     string          `json:"type"`
	LaneType string          `json:"lane_type"`
	Value    json.RawMessage `json:"value"`
}

// encode turns an argument into wazero's representation.
func (v specValue) encode(t *testing.T) []uint64 {
	if v.Type == "v128" {
		var lanes []string
		require.NoError(t, json.Unmarshal(v.Value, &lanes))
		var b [16]byte
		size := map[string]int{"i8": 1, "i16": 2, "i32": 4, "f32": 4, "i64": 8, "f64": 8}[v.LaneType]
		for i, l := range lanes {
			n, err := strconv.ParseUint(l, 10, 64)
			require.NoError(t, err)
			for k := 0; k < size; k++ {
				b[i*size+k] = byte(n >> (8 * k))
			}
		}
		return []uint64{binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:])}
	}
	var s string
	require.NoError(t, json.Unmarshal(v.Value, &s))
	if s == "null" {
		return []uint64{0}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	require.NoError(t, err, "value %q", s)
	return []uint64{n}
}

// specWorld is a store in which a script runs.
type specWorld struct {
	name  string
	rt    wazero.Runtime
	opts  *Options // nil: plain
	named map[string]api.Module
	last  api.Module
	all   []api.Module
}

// instantiate instantiates a module of the script (instrumented, and its
// former start function called, in the instrumented worlds).
func (w *specWorld) instantiate(t *testing.T, wasm []byte, as string) (api.Module, error) {
	ctx := context.Background()
	if w.opts != nil {
		var err error
		wasm, err = pipeline(wasm, *w.opts)
		require.NoError(t, err)
	}
	mod, err := w.rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(as))
	if err != nil || w.opts == nil {
		return mod, err
	}
	mod.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
	w.all = append(w.all, mod)
	if start := mod.ExportedFunction(StartExport); start != nil {
		if _, err := start.Call(ctx); err != nil {
			return nil, err
		}
	}
	return mod, nil
}

// specResult is what one action shows.
type specResult struct {
	values  []uint64
	types   []api.ValueType
	trapped bool
}

func (w *specWorld) act(t *testing.T, c *specCommand) specResult {
	m := w.last
	if c.Action.Module != "" {
		m = w.named[c.Action.Module]
	}
	require.NotNil(t, m, "line %d: no module", c.Line)
	if c.Action.Type == "get" {
		g := m.ExportedGlobal(c.Action.Field)
		require.NotNil(t, g)
		return specResult{values: []uint64{g.Get()}, types: []api.ValueType{g.Type()}}
	}
	f := m.ExportedFunction(c.Action.Field)
	require.NotNil(t, f, "line %d: no function %q", c.Line, c.Action.Field)
	var args []uint64
	for _, a := range c.Action.Args {
		args = append(args, a.encode(t)...)
	}
	if w.opts != nil {
		// A trap does not unwind the depth counters: a host that went on
		// using an instance after one would reset them, as here, in every
		// instance the trap may have crossed.
		for _, i := range w.all {
			i.ExportedGlobal(DepthGlobal).(api.MutableGlobal).Set(0)
		}
		m.ExportedGlobal(FuelGlobal).(api.MutableGlobal).Set(uint64(budget))
	}
	res, err := f.Call(context.Background(), args...)
	r := specResult{trapped: err != nil, types: f.Definition().ResultTypes()}
	if err != nil {
		return r
	}
	i := 0
	for _, rt := range r.types {
		switch rt {
		case api.ValueTypeI32, api.ValueTypeF32:
			r.values = append(r.values, uint64(uint32(res[i]))) // the upper half is unspecified
		case apiV128:
			r.values = append(r.values, res[i], res[i+1])
			i++
		default:
			r.values = append(r.values, res[i])
		}
		i++
	}
	return r
}

// sameUpToNaN: got equals want, except that where want is a NaN of type t
// (or a v128 of such lanes) got has the canonical NaN.
func sameUpToNaN(want, got specResult, expected []specValue) bool {
	if want.trapped || got.trapped {
		return want.trapped == got.trapped
	}
	if len(want.values) != len(got.values) {
		return false
	}
	i := 0
	for k, t := range want.types {
		switch t {
		case api.ValueTypeF32:
			w, g := uint32(want.values[i]), uint32(got.values[i])
			if w != g && !(isNaN32(w) && g == canonF32) {
				return false
			}
		case api.ValueTypeF64:
			w, g := want.values[i], got.values[i]
			if w != g && !(isNaN64(w) && g == canonF64) {
				return false
			}
		case apiV128:
			lane := ""
			if k < len(expected) {
				lane = expected[k].LaneType
			}
			for h := 0; h < 2; h++ {
				w, g := want.values[i+h], got.values[i+h]
				switch {
				case w == g:
				case lane == "f32":
					for s := 0; s < 64; s += 32 {
						wl, gl := uint32(w>>s), uint32(g>>s)
						if wl != gl && !(isNaN32(wl) && gl == canonF32) {
							return false
						}
					}
				case lane == "f64":
					if !(isNaN64(w) && g == canonF64) {
						return false
					}
				default:
					return false
				}
			}
			i++
		default:
			if want.values[i] != got.values[i] {
				return false
			}
		}
		i++
	}
	return true
}

func TestSpecScripts(t *testing.T) {
	dir := filepath.Join(spectestDir(t), "v2", "testdata")
	scripts, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, scripts)
	spectestWasm, err := os.ReadFile(filepath.Join(spectestDir(t), "testdata", "spectest.wasm"))
	require.NoError(t, err)
	runEngines := engines
	if quick() {
		runEngines = engines[1:]
	}
	var modules, actions, nanDiffs int
	for _, eng := range runEngines {
		for _, script := range scripts {
			b, err := os.ReadFile(script)
			require.NoError(t, err)
			var s specScript
			require.NoError(t, json.Unmarshal(b, &s))
			ctx := context.Background()
			worlds := []*specWorld{
				{name: "plain"},
				{name: "instrumented", opts: &Options{MaxCallDepth: 1000}},
				{name: "canonical NaNs", opts: &Options{MaxCallDepth: 1000, CanonicalizeNaN: true}},
			}
			for _, w := range worlds {
				w.rt = wazero.NewRuntimeWithConfig(ctx, eng.cfg().WithCoreFeatures(api.CoreFeaturesV2))
				w.named = map[string]api.Module{}
				_, err := w.rt.InstantiateWithConfig(ctx, spectestWasm, wazero.NewModuleConfig().WithName("spectest"))
				require.NoError(t, err)
			}
			where := func(c *specCommand) string {
				return eng.name + " " + filepath.Base(script) + ":" + strconv.Itoa(c.Line)
			}
			for i := 0; i < len(s.Commands); i++ {
				c := &s.Commands[i]
				switch c.Type {
				case "module", "assert_uninstantiable", "assert_unlinkable":
					wasm, err := os.ReadFile(filepath.Join(dir, c.Filename))
					require.NoError(t, err)
					as := ""
					if c.Type == "module" && i+1 < len(s.Commands) && s.Commands[i+1].Type == "register" {
						as = s.Commands[i+1].As
						i++
					}
					var failed []bool
					for _, w := range worlds {
						mod, err := w.instantiate(t, wasm, as)
						failed = append(failed, err != nil)
						if err == nil && c.Type == "module" {
							w.last = mod
							if c.Name != "" {
								w.named[c.Name] = mod
							}
						}
					}
					require.Equal(t, []bool{failed[0], failed[0], failed[0]}, failed, "%s: instantiation", where(c))
					modules++
				case "register":
					// A register after a named module, the others are handled above.
					for _, w := range worlds {
						if m := w.named[c.Name]; m != nil && c.Name != "" {
							w.named[c.As] = m
						}
					}
				case "assert_return", "action", "assert_trap", "assert_exhaustion":
					plain := worlds[0].act(t, c)
					inst := worlds[1].act(t, c)
					canon := worlds[2].act(t, c)
					require.Equal(t, plain.trapped, inst.trapped, "%s: trap", where(c))
					require.Equal(t, plain.values, inst.values, "%s: results", where(c))
					require.Equal(t, plain.trapped, canon.trapped, "%s: trap, canonical NaNs", where(c))
					require.True(t, sameUpToNaN(plain, canon, c.Expected),
						"%s: results, canonical NaNs: %x, want %x", where(c), canon.values, plain.values)
					if !equalUint64s(plain.values, canon.values) {
						nanDiffs++
					}
					actions++
				}
			}
			for _, w := range worlds {
				require.NoError(t, w.rt.Close(ctx))
			}
		}
	}
	t.Logf("spec scripts: %d module instantiations and %d actions, same outcome plain and instrumented "+
		"(%d results differ only by canonical NaNs)", modules, actions, nanDiffs)
}

func equalUint64s(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// apiV128 is v128, which wazero's API passes as two uint64 but does not name.
const apiV128 api.ValueType = 0x7b
