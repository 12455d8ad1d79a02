//go:build wasmtime

package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/replay"
)

// The cross-engine suite: every fixture in testdata/, every form of JS tool
// in jstool/testdata/tools and toolscripts, run on wazero's compiler, its
// interpreter and wasmtime. Replay requires the same status, reason codes,
// output digest, fuel used and module digest from every run on every engine
// (fuel excepted for timeouts, which depend on the clock); each request's
// verdict is also pinned, so that agreeing on the wrong answer fails too.

type crossRequest struct {
	payload string
	status  pipeline.Status
	codes   []pipeline.ReasonCode
}

func success(payload string) crossRequest {
	return crossRequest{payload, pipeline.StatusSuccess, []pipeline.ReasonCode{}}
}

func failure(payload string, codes ...pipeline.ReasonCode) crossRequest {
	return crossRequest{payload, pipeline.StatusFailed, append([]pipeline.ReasonCode{pipeline.ExecutorException}, codes...)}
}

func blocked(payload string, codes ...pipeline.ReasonCode) crossRequest {
	return crossRequest{payload, pipeline.StatusBlocked, codes}
}

func overLimit(payload string, code pipeline.ReasonCode) crossRequest {
	return blocked(payload, pipeline.LimitExceeded, code)
}

func timedOut(payload string) crossRequest { return blocked(payload, pipeline.ExecutorTimeout) }

type crossCase struct {
	name     string
	src      pipeline.ExecutorSource
	limits   sandbox.Limits
	requests []crossRequest
}

func wasmFixture(name string) pipeline.ExecutorSource {
	return pipeline.ExecutorSource{Wasm: filepath.Join("..", "testdata", name)}
}

func jsTool(file, export string) pipeline.ExecutorSource {
	return pipeline.ExecutorSource{JS: filepath.Join("..", "jstool", "testdata", "tools", file), Tool: export}
}

// endless is a budget no test exhausts, for the cases the clock stops.
const endless = 1 << 62

func crossCases() []crossCase {
	numbers := make([]string, 5000)
	x := uint32(7)
	for i := range numbers {
		x = x*1664525 + 1013904223
		numbers[i] = fmt.Sprint(int32(x) >> 12)
	}
	manyNumbers := `{"numbers":[` + strings.Join(numbers, ",") + `]}`
	return []crossCase{
		// ABI v1 in WAT and C, strict profile.
		{"echo", wasmFixture("echo.wasm"), sandbox.Limits{}, []crossRequest{
			success(`{"b":[1,2.5,"x"],"a":null}`), success(`"just a string"`), success(`null`)}},
		{"echo output limit", wasmFixture("echo.wasm"), sandbox.Limits{MaxOutputBytes: 3}, []crossRequest{
			overLimit(`{"a":1}`, pipeline.OutputTooLarge)}},
		{"upper", wasmFixture("upper.wasm"), sandbox.Limits{}, []crossRequest{
			success(`{"text":"héllo \"q\" w"}`), failure(`{"nope":5}`)}},
		{"sum", wasmFixture("sum.wasm"), sandbox.Limits{}, []crossRequest{
			success(`{"numbers":[1,-2,40]}`), failure(`{"numbers":[1.5]}`)}},
		{"sort (C)", wasmFixture("sort.wasm"), sandbox.Limits{MaxListItems: 10000}, []crossRequest{
			success(`{"numbers":[3,-1,2]}`), success(`{"numbers":[]}`), success(manyNumbers)}},
		{"floats (C)", wasmFixture("floats.wasm"), sandbox.Limits{}, []crossRequest{
			success(`{"count":300,"seed":11}`), success(`{"count":1000,"seed":3}`)}},
		{"noout", wasmFixture("noout.wasm"), sandbox.Limits{}, []crossRequest{success(`{}`)}},
		{"notjson", wasmFixture("notjson.wasm"), sandbox.Limits{}, []crossRequest{failure(`{}`, pipeline.OutputNotJSON)}},
		{"fail", wasmFixture("fail.wasm"), sandbox.Limits{}, []crossRequest{failure(`{}`)}},
		{"trap", wasmFixture("trap.wasm"), sandbox.Limits{}, []crossRequest{failure(`{}`)}},
		{"spin", wasmFixture("spin.wasm"), sandbox.Limits{}, []crossRequest{success(`{"n":12345}`)}},
		{"tablegrow", wasmFixture("tablegrow.wasm"), sandbox.Limits{}, []crossRequest{success(`{}`)}},
		// The virtual WASI: a Go command and ABI v1 over WASI imports.
		{"textstats (Go)", wasmFixture("textstats.wasm"), sandbox.Limits{}, []crossRequest{
			success(`{"text":"héllo big world"}`), failure(`{"nope":1}`)}},
		{"wasi_abi", wasmFixture("wasi_abi.wasm"), sandbox.Limits{}, []crossRequest{
			success(`{}`), success(`{"seed":1}`), success(`{"seed":2}`)}},
		// Hostile guests.
		{"loop, fuel", wasmFixture("loop.wasm"), sandbox.Limits{}, []crossRequest{overLimit(`{}`, pipeline.FuelExhausted)}},
		{"loop, time", wasmFixture("loop.wasm"), sandbox.Limits{Fuel: endless, TimeoutMs: 100}, []crossRequest{timedOut(`{}`)}},
		{"startloop, fuel", wasmFixture("startloop.wasm"), sandbox.Limits{Fuel: 1000}, []crossRequest{overLimit(`{}`, pipeline.FuelExhausted)}},
		{"startloop, time", wasmFixture("startloop.wasm"), sandbox.Limits{Fuel: endless, TimeoutMs: 100}, []crossRequest{timedOut(`{}`)}},
		{"recurse", wasmFixture("recurse.wasm"), sandbox.Limits{}, []crossRequest{overLimit(`{}`, pipeline.StackExhausted)}},
		{"grow", wasmFixture("grow.wasm"), sandbox.Limits{MemoryPages: 8}, []crossRequest{overLimit(`{}`, pipeline.MemoryExhausted)}},
		{"grow, manifest limit", wasmFixture("grow.wasm"), sandbox.Limits{}, []crossRequest{overLimit(`{}`, pipeline.MemoryExhausted)}},
		{"bigout", wasmFixture("bigout.wasm"), sandbox.Limits{MaxOutputBytes: 65536}, []crossRequest{overLimit(`{}`, pipeline.OutputTooLarge)}},
		{"bigout, room", wasmFixture("bigout.wasm"), sandbox.Limits{MaxOutputBytes: 2 << 20, MaxPayloadBytes: 2 << 20}, []crossRequest{success(`{}`)}},
		{"memory below the module's minimum", wasmFixture("textstats.wasm"), sandbox.Limits{MemoryPages: 2}, []crossRequest{overLimit(`{"text":"x"}`, pipeline.MemoryExhausted)}},
		{"tables beyond memory_pages at the start", wasmFixture("tablegrow.wasm"), sandbox.Limits{MemoryPages: 1}, []crossRequest{overLimit(`{}`, pipeline.MemoryExhausted)}},
		{"tablegrow, room", wasmFixture("tablegrow.wasm"), sandbox.Limits{MemoryPages: 600}, []crossRequest{success(`{}`)}},
		{"tablefill", wasmFixture("tablefill.wasm"), sandbox.Limits{}, []crossRequest{overLimit(`{}`, pipeline.MemoryExhausted)}},
		{"tablefill, fuel", wasmFixture("tablefill.wasm"), sandbox.Limits{MemoryPages: 65536, Fuel: 5_000_000}, []crossRequest{overLimit(`{}`, pipeline.FuelExhausted)}},
		// Refused by admission, the same on every engine.
		{"refused: env import", wasmFixture("refused/env_import.wasm"), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"refused: shared memory", wasmFixture("refused/shared_memory.wasm"), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"refused: missing export", wasmFixture("refused/missing_export.wasm"), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"refused: WASI and env", wasmFixture("refused/wasi_and_env.wasm"), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"refused: bad manifest", wasmFixture("refused/bad_manifest.wasm"), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"refused: big tables", wasmFixture("refused/big_tables.wasm"), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"no manifest", wasmFixture("nomanifest.wasm"), sandbox.Limits{}, []crossRequest{success(`{"a":[1,2]}`)}},

		// JS tools, every form, from the snapshot taken after loading.
		{"js: trim", jsTool("trim.js", ""), sandbox.Limits{}, []crossRequest{success(`{"text":"  hi  "}`), success(`{"text":""}`)}},
		{"js: async", jsTool("async.mjs", ""), sandbox.Limits{}, []crossRequest{success(`{"n":21}`)}},
		{"js: TypeScript, top-level await", jsTool("typed.ts", ""), sandbox.Limits{}, []crossRequest{success(`{"words":["a","abc","ab"]}`)}},
		{"js: default object", jsTool("default_object.js", ""), sandbox.Limits{}, []crossRequest{success(`{"name":"ann"}`)}},
		{"js: factory", jsTool("factory.js", ""), sandbox.Limits{}, []crossRequest{success(`{"q":"x"}`)}},
		{"js: pkg[name]", jsTool("package_shape.js", "upper"), sandbox.Limits{}, []crossRequest{success(`{"s":"Ab"}`)}},
		{"js: pkg.default[name]", jsTool("package_shape.js", "lower"), sandbox.Limits{}, []crossRequest{success(`{"s":"Ab"}`)}},
		{"js: pkg.default", jsTool("package_shape.js", "missing"), sandbox.Limits{}, []crossRequest{success(`{"s":"Ab"}`)}},
		{"js: determinism profile", jsTool("profile.js", ""), sandbox.Limits{}, []crossRequest{success(`{"seed":1}`), success(`{"seed":2}`)}},
		{"js: undefined", jsTool("returns_undefined.js", ""), sandbox.Limits{}, []crossRequest{success(`{}`)}},
		{"js: chatty", jsTool("chatty.js", ""), sandbox.Limits{Fuel: 1 << 32}, []crossRequest{success(`{}`)}},
		{"js: ai package tool", jsTool("ai/weather.ts", "weather"), sandbox.Limits{}, []crossRequest{success(`{"location":"Paris"}`)}},
		{"js: slugify", pipeline.ExecutorSource{JS: filepath.Join("..", "guests", "js", "slugify.ts")}, sandbox.Limits{}, []crossRequest{
			success(`{"title":"The Art of Governed Execution"}`), success(`{"title":"Crème brûlée, à la carte","maxLength":12}`),
			// Its manifest's input schema refuses a title that is not a
			// string before the tool could throw on it.
			blocked(`{"title":42}`, pipeline.InputSchemaInvalid)}},
		{"js: throws", jsTool("throws.js", ""), sandbox.Limits{}, []crossRequest{failure(`{"reason":"no"}`)}},
		{"js: rejects", jsTool("rejects.js", ""), sandbox.Limits{}, []crossRequest{failure(`{}`)}},
		{"js: returns a function", jsTool("returns_function.js", ""), sandbox.Limits{}, []crossRequest{failure(`{}`, pipeline.OutputNotJSON)}},
		{"js: returns a BigInt", jsTool("returns_bigint.js", ""), sandbox.Limits{}, []crossRequest{failure(`{}`, pipeline.OutputNotJSON)}},
		{"js: returns a cycle", jsTool("returns_cycle.js", ""), sandbox.Limits{}, []crossRequest{failure(`{}`, pipeline.OutputNotJSON)}},
		{"js: never settles", jsTool("never_settles.js", ""), sandbox.Limits{}, []crossRequest{failure(`{}`)}},
		{"js: uses fs", jsTool("uses_fs.js", ""), sandbox.Limits{}, []crossRequest{failure(`{"path":"/etc/passwd"}`)}},
		{"js: dynamic import", jsTool("dynamic_import.js", ""), sandbox.Limits{}, []crossRequest{failure(`{}`)}},
		{"js: endless, fuel", jsTool("endless.js", ""), sandbox.Limits{Fuel: 5_000_000}, []crossRequest{overLimit(`{}`, pipeline.FuelExhausted)}},
		{"js: endless, time", jsTool("endless.js", ""), sandbox.Limits{Fuel: endless, TimeoutMs: 200}, []crossRequest{timedOut(`{}`)}},
		{"js: allocation bomb", jsTool("alloc_bomb.js", ""), sandbox.Limits{MemoryPages: 128}, []crossRequest{overLimit(`{}`, pipeline.MemoryExhausted)}},
		{"js: deep recursion", jsTool("deep.js", ""), sandbox.Limits{}, []crossRequest{success(`{"n":50}`), overLimit(`{"n":100000}`, pipeline.StackExhausted)}},
		{"js: output limit", jsTool("trim.js", ""), sandbox.Limits{MaxOutputBytes: 8}, []crossRequest{overLimit(`{"text":"  a longer text  "}`, pipeline.OutputTooLarge)}},
		{"js: throws while loading", jsTool("throws_on_load.js", ""), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"js: no execute", jsTool("no_execute.js", ""), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
		{"js: export not found", jsTool("trim.js", "nope"), sandbox.Limits{}, []crossRequest{blocked(`{}`, pipeline.ExecutorInvalid)}},
	}
}

func TestCrossEngine(t *testing.T) {
	require.Len(t, sandbox.Engines(), 3, "wazero, wazero-interp and wasmtime")
	// Loading a tool is bounded by the clock as well as by fuel: on the
	// interpreter, with every case running at once, the ai package's
	// bundle takes 17 s alone, well inside jstool.LoadLimits' 300 s.
	// Each case replays on runtimes of its own; the tests' compilation
	// cache spares them compiling a module (the JS engine above all) once
	// per case.
	cache := testenv.CacheDir()
	for _, c := range crossCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			limits := c.limits
			if limits.TimeoutMs == 0 {
				// Only the timeout cases depend on the clock: the
				// interpreter and parallel cases slow the others down.
				limits.TimeoutMs = 120_000
			}
			var corpus []replay.Request
			for _, r := range c.requests {
				corpus = append(corpus, replay.Request{Request: pipeline.ActionRequest{Action: "x", Payload: json.RawMessage(r.payload)}})
			}
			var runtimes []*wasmgate.Runtime
			for _, name := range sandbox.Engines() {
				rt, err := wasmgate.New(ctx, wasmgate.WithEngine(name), wasmgate.WithCompilationCacheDir(cache),
					wasmgate.WithRegistry(func(ctx context.Context, e sandbox.Engine) (*pipeline.Registry, error) {
						return pipeline.RegistryForSource(ctx, e, c.src, "x", limits, js.Kind())
					}))
				require.NoError(t, err)
				defer rt.Close(ctx)
				runtimes = append(runtimes, rt)
			}
			rep, err := replay.Run(ctx, replay.Config{Corpus: corpus, Runtimes: runtimes, Runs: 2})
			require.NoError(t, err)
			for _, d := range rep.Divergences {
				t.Errorf("divergence: %s", d)
			}
			require.Len(t, rep.Requests, len(c.requests))
			for i, want := range c.requests {
				got := rep.Requests[i]
				verdict := replay.Agrees
				if len(want.codes) == 1 && want.codes[0] == pipeline.ExecutorTimeout {
					verdict = replay.TimingDependent
				}
				assert.Equal(t, verdict, got.Verdict, "request %d", i+1)
				assert.Equal(t, want.status, got.Status, "request %d", i+1)
				assert.Equal(t, want.codes, got.ReasonCodes, "request %d", i+1)
				out := "-"
				if got.OutputDigest != nil {
					out = (*got.OutputDigest)[:12]
				}
				t.Logf("%-8s %-36s output %-12s fuel %d", got.Status, fmt.Sprint(got.ReasonCodes), out, got.FuelUsed)
			}
		})
	}
}

// TestCrossEngineToolscript runs toolscripts that call registered actions (a
// JS tool and Wasm executors) on every engine: the script's result, its fuel
// and every call it made come out the same.
func TestCrossEngineToolscript(t *testing.T) {
	ctx := context.Background()
	scripts := []struct{ script, registry string }{
		{"combine.ts", "registry.json"},
		{"slug_then_upper.ts", "tools.json"},
		{"catch_failure.ts", "registry.json"},
		{"loop.ts", "registry.json"},
	}
	type result struct {
		Kind     sandbox.OutcomeKind
		Output   string
		FuelUsed uint64
		Calls    []string
	}
	require.Len(t, sandbox.Engines(), 3, "wazero, wazero-interp and wasmtime")
	for _, s := range scripts {
		t.Run(s.script, func(t *testing.T) {
			results := map[sandbox.EngineName]result{}
			for _, e := range enginetest.All(t) {
				reg, err := pipeline.LoadRegistry(ctx, filepath.Join("..", "testdata", s.registry), e, js.Kind())
				require.NoError(t, err)
				bundle, err := jstool.BundleScript(filepath.Join("..", "testdata", "scripts", s.script), reg.Actions())
				require.NoError(t, err)
				p := pipeline.New(reg, audit.NewMemorySink())
				var calls []string
				out, err := jstool.RunScript(ctx, e, bundle, jstool.ScriptOptions{
					Limits: sandbox.Limits{Fuel: 100_000_000},
					Call: func(ctx context.Context, action string, params json.RawMessage) (jstool.ToolCallResult, error) {
						res, err := p.Execute(ctx, pipeline.ActionRequest{Action: action, Payload: params, TraceID: replay.TraceID(len(calls) + 1)})
						if err != nil {
							return jstool.ToolCallResult{}, err
						}
						digest := "-"
						if res.OutputDigest != nil {
							digest = *res.OutputDigest
						}
						calls = append(calls, fmt.Sprintf("%s %s %v %s fuel %d", action, res.Status, res.ReasonCodes, digest, res.FuelUsed))
						codes := make([]string, len(res.ReasonCodes))
						for i, c := range res.ReasonCodes {
							codes[i] = string(c)
						}
						return jstool.ToolCallResult{Status: string(res.Status), ReasonCodes: codes, TraceID: res.TraceID, Output: res.Output, Message: res.Message}, nil
					},
				})
				require.NoError(t, err)
				results[e.Name()] = result{out.Kind, string(out.Output), out.FuelUsed, calls}
			}
			want := results[sandbox.EngineWazero]
			t.Logf("%s: %s %s fuel %d, calls %q", s.script, want.Kind, want.Output, want.FuelUsed, want.Calls)
			for name, got := range results {
				assert.Equal(t, want, got, "%s on %s", s.script, name)
			}
		})
	}
}
