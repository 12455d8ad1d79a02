package sandbox_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", name))
	require.NoError(t, err, "fixtures are built by `make guests`")
	return b
}

func input(s string) sandbox.Input {
	c, err := audit.Canonicalize([]byte(s))
	if err != nil {
		panic(err)
	}
	return sandbox.Input{Bytes: c.Bytes, Digest: audit.DigestBytes(c.Bytes)}
}

func TestInspectAdmitted(t *testing.T) {
	tests := []struct {
		fixture    string
		profile    sandbox.Profile
		convention sandbox.Convention
		executorID string
	}{
		{"echo.wasm", sandbox.ProfileStrict, sandbox.ConventionABIv1, "echo"},
		{"upper.wasm", sandbox.ProfileStrict, sandbox.ConventionABIv1, "upper"},
		{"sort.wasm", sandbox.ProfileStrict, sandbox.ConventionABIv1, "sort"},
		{"textstats.wasm", sandbox.ProfileWASI, sandbox.ConventionCommand, "textstats"},
		{"wasi_abi.wasm", sandbox.ProfileWASI, sandbox.ConventionABIv1, "wasi_abi"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			wasm := fixture(t, tt.fixture)
			info, err := sandbox.Inspect(wasm)
			require.NoError(t, err)
			assert.Equal(t, tt.profile, info.Profile)
			assert.Equal(t, tt.convention, info.Convention)
			assert.Equal(t, audit.Digest(wasm), info.Digest)
			require.NotNil(t, info.Manifest, "fixtures carry their manifest")
			assert.Equal(t, tt.executorID, info.Manifest.ExecutorID)
		})
	}
}

func TestInspectRefused(t *testing.T) {
	tests := []struct {
		fixture string
		problem string
	}{
		{"refused/env_import.wasm", "import env.abort (func) is outside wasi_snapshot_preview1"},
		{"refused/wasi_and_env.wasm", "is outside wasi_snapshot_preview1"},
		{"refused/missing_export.wasm", "missing ABI v1 exports: wg_execute"},
		{"refused/shared_memory.wasm", "shared memory (threads) is not allowed"},
		{"refused/bad_manifest.wasm", `invalid wasmgate.manifest section: manifest executor_id "Bad-ID"`},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			_, err := sandbox.Inspect(fixture(t, tt.fixture))
			require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
			assert.Contains(t, err.Error(), tt.problem)
		})
	}
}

func TestInspectRefusesByConstruction(t *testing.T) {
	echo := fixture(t, "echo.wasm")
	tests := []struct {
		name    string
		wasm    []byte
		problem string
	}{
		{"not wasm", []byte("hello"), "cannot parse module"},
		{"truncated", echo[:len(echo)/2], "cannot parse module"},
		{"two manifests", appendCustom(mustPack(t, echo, `{"executor_id":"a","version":"1.0.0"}`), "wasmgate.manifest", []byte(`{}`)), "2 wasmgate.manifest sections"},
		{"manifest with unknown field", appendCustom(stripManifest(t, echo), "wasmgate.manifest", []byte(`{"executor_id":"a","version":"1.0.0","limits":{"fuel_max":1}}`)), `unknown field "fuel_max"`},
		{"manifest version not semver", appendCustom(stripManifest(t, echo), "wasmgate.manifest", []byte(`{"executor_id":"a","version":"1.0"}`)), "not strict semver"},
		{"manifest memory beyond 4 GiB", appendCustom(stripManifest(t, echo), "wasmgate.manifest", []byte(`{"executor_id":"a","version":"1.0.0","limits":{"memory_pages":65537}}`)), "memory_pages must be at most 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := sandbox.Inspect(tt.wasm)
			require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
			assert.Contains(t, err.Error(), tt.problem)
		})
	}
}

// appendCustom appends a custom section without removing existing ones.
func appendCustom(wasm []byte, name string, payload []byte) []byte {
	content := append([]byte{byte(len(name))}, name...)
	content = append(content, payload...)
	out := append([]byte(nil), wasm...)
	out = append(out, 0)
	n := len(content)
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			out = append(out, c|0x80)
			continue
		}
		out = append(out, c)
		break
	}
	return append(out, content...)
}

func mustPack(t *testing.T, wasm []byte, manifest string) []byte {
	t.Helper()
	out, err := sandbox.PackManifest(wasm, []byte(manifest))
	require.NoError(t, err)
	return out
}

// stripManifest returns wasm without a manifest section, by packing a
// placeholder and cutting it off the end (PackManifest appends last).
func stripManifest(t *testing.T, wasm []byte) []byte {
	t.Helper()
	const m = `{"executor_id":"placeholder","version":"0.0.1"}`
	packed := mustPack(t, wasm, m)
	header := 1 + 1 + 1 + len("wasmgate.manifest") // id, size, name length, name
	return packed[:len(packed)-len(m)-header]
}

func TestPackManifestRoundTrip(t *testing.T) {
	manifest := `{"executor_id":"renamed","version":"2.1.0","capabilities":["text","Text","MATH"],"limits":{"fuel":5}}`
	packed := mustPack(t, fixture(t, "echo.wasm"), manifest)
	info, err := sandbox.Inspect(packed)
	require.NoError(t, err)
	require.NotNil(t, info.Manifest)
	assert.Equal(t, sandbox.Manifest{ExecutorID: "renamed", Version: "2.1.0", Capabilities: []string{"MATH", "TEXT"}, Limits: sandbox.Limits{Fuel: 5}}, *info.Manifest)

	_, err = sandbox.PackManifest(packed, []byte(`{"executor_id":"Bad"}`))
	assert.ErrorContains(t, err, `executor_id "Bad"`)
	_, err = sandbox.PackManifest([]byte("nope"), []byte(manifest))
	assert.ErrorContains(t, err, "not a wasm binary")
}

func TestRunOutcomes(t *testing.T) {
	tests := []struct {
		fixture string
		input   string
		limits  sandbox.Limits
		kind    sandbox.OutcomeKind
		output  string
		message string
	}{
		{"echo.wasm", `{"b":[1,2],"a":"x"}`, sandbox.Limits{}, sandbox.Completed, `{"a":"x","b":[1,2]}`, ""},
		{"upper.wasm", `{"text":"héllo \"q\" w"}`, sandbox.Limits{}, sandbox.Completed, `{"text":"HéLLO \"Q\" W"}`, ""},
		{"upper.wasm", `{"text":5}`, sandbox.Limits{}, sandbox.Failed, "", "text"},
		{"sum.wasm", `{"numbers":[1,-2,40]}`, sandbox.Limits{}, sandbox.Completed, `{"sum":39}`, ""},
		{"sort.wasm", `{"numbers":[3,-1,2]}`, sandbox.Limits{}, sandbox.Completed, `{"count":3,"max":3,"min":-1,"sorted":[-1,2,3]}`, ""},
		{"sort.wasm", `{"numbers":[]}`, sandbox.Limits{}, sandbox.Completed, `{"count":0,"max":null,"min":null,"sorted":[]}`, ""},
		{"textstats.wasm", `{"text":"héllo big world"}`, sandbox.Limits{}, sandbox.Completed, `{"length":15,"upper":"HÉLLO BIG WORLD","words":3}`, ""},
		{"textstats.wasm", `{"nope":1}`, sandbox.Limits{}, sandbox.Failed, "", "exited with code 1"},
		{"fail.wasm", `{}`, sandbox.Limits{}, sandbox.Failed, "", "deliberate failure"},
		{"trap.wasm", `{}`, sandbox.Limits{}, sandbox.Failed, "", "trap: unreachable"},
		{"noout.wasm", `{}`, sandbox.Limits{}, sandbox.Completed, "", ""},
		{"notjson.wasm", `{}`, sandbox.Limits{}, sandbox.Completed, "not json", ""},
		{"loop.wasm", `{}`, sandbox.Limits{TimeoutMs: 50, Fuel: 1 << 62}, sandbox.Timeout, "", "timeout_ms"},
		{"loop.wasm", `{}`, sandbox.Limits{Fuel: 100000}, sandbox.FuelExhausted, "", "fuel exhausted"},
		{"grow.wasm", `{}`, sandbox.Limits{MemoryPages: 8}, sandbox.MemoryExhausted, "", "memory_pages"},
		{"recurse.wasm", `{}`, sandbox.Limits{}, sandbox.StackExhausted, "", "call depth exceeded 1000"},
		{"bigout.wasm", `{}`, sandbox.Limits{MaxOutputBytes: 65536}, sandbox.OutputTooLarge, "", "max_output_bytes"},
		{"echo.wasm", `{"a":1}`, sandbox.Limits{MaxOutputBytes: 3}, sandbox.OutputTooLarge, "", "max_output_bytes"},
		{"tablegrow.wasm", `{}`, sandbox.Limits{MemoryPages: 16}, sandbox.Completed, `{"elements":30720}`, ""},
		{"startloop.wasm", `{}`, sandbox.Limits{TimeoutMs: 50, Fuel: 1 << 62}, sandbox.Timeout, "", "timeout_ms"},
		{"startloop.wasm", `{}`, sandbox.Limits{Fuel: 1000}, sandbox.FuelExhausted, "", "fuel exhausted"},
	}
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		for _, tt := range tests {
			t.Run(tt.fixture+" "+tt.kind.String(), func(t *testing.T) {
				mod, err := e.Load(context.Background(), fixture(t, tt.fixture))
				require.NoError(t, err)
				in := input(tt.input)
				in.Limits = tt.limits
				if in.Limits.TimeoutMs == 0 {
					// Only the timeout cases depend on the clock: the others
					// must not fail because the race detector, the
					// interpreter and other test packages slow them down.
					in.Limits.TimeoutMs = 120_000
				}
				out, err := mod.Run(context.Background(), in)
				require.NoError(t, err)
				assert.Equal(t, tt.kind, out.Kind, out.Message)
				assert.Equal(t, tt.output, string(out.Output))
				assert.Contains(t, out.Message, tt.message)
			})
		}
	})
}

func TestMemoryLimitBelowInitialSize(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		mod, err := e.Load(context.Background(), fixture(t, "textstats.wasm"))
		require.NoError(t, err)
		min := mod.Info().MemoryMinPages
		require.Greater(t, min, uint32(1))
		in := input(`{"text":"x"}`)
		in.Limits.MemoryPages = min - 1
		out, err := mod.Run(context.Background(), in)
		require.NoError(t, err)
		assert.Equal(t, sandbox.MemoryExhausted, out.Kind)
		assert.Contains(t, out.Message, "memory starts at")
	})
}

func TestDeterministicVirtualWASI(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		mod, err := e.Load(context.Background(), fixture(t, "wasi_abi.wasm"))
		require.NoError(t, err)
		run := func(s string) string {
			out, err := mod.Run(context.Background(), input(s))
			require.NoError(t, err)
			require.Equal(t, sandbox.Completed, out.Kind, out.Message)
			return string(out.Output)
		}
		first := run(`{"seed":1}`)
		assert.Equal(t, first, run(`{"seed":1}`), "same input, same random bytes and clock")
		assert.NotEqual(t, first, run(`{"seed":2}`), "random_get is seeded from the input digest")
		assert.Contains(t, first, `"time":"946684800000000000"`, "clocks read 2000-01-01T00:00:00Z")
	})
}

func TestCallerCancellationIsNotAVerdict(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		mod, err := e.Load(context.Background(), fixture(t, "loop.wasm"))
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = mod.Run(ctx, input(`{}`))
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestLoadCachesByDigest(t *testing.T) {
	e, err := sandbox.NewEngine(context.Background(), sandbox.NewConfig())
	require.NoError(t, err)
	defer e.Close(context.Background())
	a, err := e.Load(context.Background(), fixture(t, "echo.wasm"))
	require.NoError(t, err)
	b, err := e.Load(context.Background(), fixture(t, "echo.wasm"))
	require.NoError(t, err)
	assert.Same(t, a, b)

	_, err = e.Load(context.Background(), fixture(t, "refused/env_import.wasm"))
	assert.ErrorIs(t, err, sandbox.ErrNotAdmitted)
}

func TestCompilationCacheDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	e, err := sandbox.NewEngine(context.Background(), sandbox.NewConfig().WithCompilationCacheDir(dir))
	require.NoError(t, err)
	_, err = e.Load(context.Background(), fixture(t, "sort.wasm"))
	require.NoError(t, err)
	require.NoError(t, e.Close(context.Background()))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "compiled code is kept on disk")
}

func TestUnknownEngine(t *testing.T) {
	_, err := sandbox.NewEngine(context.Background(), sandbox.NewConfig().WithEngine("v8"))
	require.ErrorIs(t, err, sandbox.ErrUnknownEngine)
	names := make([]string, 0, len(sandbox.Engines()))
	for _, e := range sandbox.Engines() {
		names = append(names, string(e))
	}
	assert.Contains(t, err.Error(), `"v8" (available: `+strings.Join(names, ", ")+`)`)
	assert.NotErrorIs(t, err, sandbox.ErrEngineNotBuilt)
}

func TestCloseWithCancelledContext(t *testing.T) {
	e, err := sandbox.NewEngine(context.Background(), sandbox.NewConfig())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, e.Close(ctx))
}

// TestConcurrentRuns hammers one module from many goroutines: every run has
// its own instance, so every output matches its own input.
func TestConcurrentRuns(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		mod, err := e.Load(context.Background(), fixture(t, "sum.wasm"))
		require.NoError(t, err)
		var wg sync.WaitGroup
		errs := make(chan string, 64)
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 20 {
					n := g*100 + i
					out, err := mod.Run(context.Background(), input(`{"numbers":[`+itoa(n)+`,1]}`))
					if err != nil || string(out.Output) != `{"sum":`+itoa(n+1)+`}` {
						errs <- string(out.Output)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for bad := range errs {
			t.Errorf("wrong output under concurrency: %s", bad)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestHostileEncodingsAreRefused loads modules of a few bytes whose vector
// counts or local declarations would make an engine's decoder allocate
// gigabytes (a fatal, unrecoverable out-of-memory in Go). Admission must refuse
// them before any engine sees them.
func TestHostileEncodingsAreRefused(t *testing.T) {
	header := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	mod := func(parts ...byte) []byte { return append(append([]byte(nil), header...), parts...) }
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0x0f}
	tests := []struct {
		name    string
		wasm    []byte
		problem string
	}{
		{"table count", mod(append([]byte{4, 5}, huge...)...), "vector of 4294967295 elements"},
		{"global count", mod(append([]byte{6, 5}, huge...)...), "vector of 4294967295 elements"},
		{"element count", mod(append([]byte{9, 5}, huge...)...), "vector of 4294967295 elements"},
		{"data count", mod(append([]byte{11, 5}, huge...)...), "vector of 4294967295 elements"},
		{"code count", mod(append([]byte{10, 5}, huge...)...), "vector of 4294967295 elements"},
		{"element items", mod(9, 8, 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f), "vector of 4294967295 elements"},
		{"data bytes", mod(11, 8, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0), "data segment of 4294967295 bytes"},
		{"locals", mod(1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 10, 1, 8, 1, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x7f, 0x0b), "function body 0 declares more than 49994 locals: with its 0 parameters and the 6 the instrumentation may add, engines allow 50000"},
		{"locals summed over groups", mod(1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 12, 1, 10, 2, 0xb0, 0x86, 0x03, 0x7f, 0xb0, 0x86, 0x03, 0x7e, 0x0b), "declares more than 49994 locals"},
		{"table larger than the cap", mod(4, 7, 1, 0x70, 0x00, 0x80, 0x80, 0x80, 0x01), "table 0 starts with 2097152 elements; at most 1048576"},
	}
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.Load(context.Background(), tt.wasm)
				require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
				assert.Contains(t, err.Error(), tt.problem)
			})
		}
	})
}

// FuzzLoad feeds arbitrary bytes to admission and the compiler: a module is
// either refused with an error or compiled, never a panic or a crash.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"echo.wasm", "upper.wasm", "sum.wasm", "tablegrow.wasm", "refused/shared_memory.wasm"} {
		f.Add(fixture(f, name))
	}
	e := enginetest.Engine(f, sandbox.EngineWazeroInterp)
	f.Fuzz(func(t *testing.T, wasm []byte) {
		mod, err := e.Load(context.Background(), wasm)
		if err != nil {
			if !errors.Is(err, sandbox.ErrNotAdmitted) {
				t.Fatalf("a refusal must be an admission error, got %v", err)
			}
			return
		}
		if mod.Info().Digest != audit.Digest(wasm) {
			t.Fatal("digest mismatch")
		}
	})
}

// TestAdmissionRefusesEachFeature builds one small module per refused import
// or feature and checks the refusal names it.
func TestAdmissionRefusesEachFeature(t *testing.T) {
	header := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	sec := func(id byte, parts ...[]byte) []byte {
		var content []byte
		for _, p := range parts {
			content = append(content, p...)
		}
		return append([]byte{id, byte(len(content))}, content...)
	}
	mod := func(sections ...[]byte) []byte {
		b := append([]byte(nil), header...)
		for _, s := range sections {
			b = append(b, s...)
		}
		return b
	}
	// types: 0 = (i32) -> (i32), 1 = () -> ()
	types := sec(1, []byte{2, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 0, 0})
	wasiImport := func(name string, kind byte, desc ...byte) []byte {
		return sec(2, []byte{1}, str("wasi_snapshot_preview1"), str(name), []byte{kind}, desc)
	}
	tests := []struct {
		name    string
		wasm    []byte
		problem string
	}{
		{"function from another module", mod(types, sec(2, []byte{1}, str("env"), str("now"), []byte{0, 1})), "import env.now (func) is outside wasi_snapshot_preview1"},
		{"memory from the WASI module", mod(types, wasiImport("memory", 2, 0, 1)), "import wasi_snapshot_preview1.memory is a memory; only functions"},
		{"table from the WASI module", mod(types, wasiImport("table", 1, 0x70, 0, 1)), "is a table; only functions"},
		{"global from the WASI module", mod(types, wasiImport("g", 3, 0x7f, 0)), "is a global; only functions"},
		{"a name preview1 does not define", mod(types, wasiImport("sock_open", 0, 1)), "import wasi_snapshot_preview1.sock_open is not a wasi_snapshot_preview1 function"},
		{"a WASI function with the wrong signature", mod(types, wasiImport("proc_exit", 0, 1)), "import wasi_snapshot_preview1.proc_exit has signature () -> (); wasi_snapshot_preview1 defines (i32) -> ()"},
		{"shared memory", mod(sec(5, []byte{1, 0x03, 1, 1})), "shared memory (threads) is not allowed"},
		{"64-bit memory", mod(sec(5, []byte{1, 0x04, 1})), "64-bit memory is not supported"},
		{"two memories", mod(sec(5, []byte{2, 0, 1, 0, 1})), "2 memories; at most one"},
		{"memory beyond 4 GiB", mod(sec(5, []byte{1, 0, 0x81, 0x80, 0x04})), "exceeds the 4 GiB"},
		{"no entry point", mod(types), "exports neither wg_execute (ABI v1) nor _start"},
		{"_start with parameters", mod(types, sec(3, []byte{1, 0}), sec(7, []byte{1}, str("_start"), []byte{0, 0}), sec(10, []byte{1, 4, 0, 0x20, 0, 0x0b})), "export _start has signature (i32) -> (i32)"},
		{"ABI v1 with a mistyped export", mod(types, sec(3, []byte{1, 1}), sec(7, []byte{1}, str("wg_alloc"), []byte{0, 0}), sec(10, []byte{1, 2, 0, 0x0b})), "export wg_alloc has signature () -> (); ABI v1 requires (i32) -> (i32)"},
		{"ABI v1 without the rest", mod(types, sec(3, []byte{1, 0}), sec(7, []byte{1}, str("wg_alloc"), []byte{0, 0}), sec(10, []byte{1, 4, 0, 0x20, 0, 0x0b})), "missing ABI v1 exports: wg_execute, wg_output_ptr, wg_output_len, memory"},
		{"instructions beyond Wasm 2.0 (atomics)", mod(types, sec(3, []byte{1, 1}), sec(5, []byte{1, 0, 1}), sec(7, []byte{1}, str("_start"), []byte{0, 0}), sec(10, []byte{1, 5, 0, 0xfe, 0x03, 0x00, 0x0b})), "opcode 0xfe 0x3 (threads) is not supported"},
	}
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := e.Load(context.Background(), tt.wasm)
				require.ErrorIs(t, err, sandbox.ErrNotAdmitted)
				assert.Contains(t, err.Error(), tt.problem)
			})
		}
	})
}

// TestDeadlineWithEveryThreadBusy runs endless guests on every scheduler
// thread at once, with GOMAXPROCS 1: compiled guest code never yields by
// itself, so the deadline can only fire because the instrumented refill
// passes through the engine's Go side. Before that existed, this hung — and
// a regression hangs it again until go test's -timeout fails it (checked by
// removing the refill's memory.grow): with the only thread held by guests,
// not even the guard below could fire.
func TestDeadlineWithEveryThreadBusy(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	// The compiling engines: wazero's compiled guests yield only at the
	// refill, wasmtime's guests run in cgo calls that hand their thread
	// back to Go, so its epoch ticker runs.
	enginetest.Each(t, func(t *testing.T, e sandbox.Engine) {
		if e.Name() == sandbox.EngineWazeroInterp {
			t.Skip("the compiling engines only: the interpreter runs guests as Go code")
		}
		mod, err := e.Load(context.Background(), fixture(t, "loop.wasm"))
		require.NoError(t, err)

		const guests = 3
		kinds := make(chan sandbox.OutcomeKind, guests)
		for range guests {
			go func() {
				in := input(`{}`)
				in.Limits = sandbox.Limits{TimeoutMs: 50, Fuel: 1 << 62}
				out, err := mod.Run(context.Background(), in)
				if err != nil {
					t.Error(err)
				}
				kinds <- out.Kind
			}()
		}
		for range guests {
			select {
			case k := <-kinds:
				assert.Equal(t, sandbox.Timeout, k)
			case <-time.After(time.Minute):
				t.Fatal("a deadline never fired: guests hold every scheduler thread")
			}
		}
	})
}
