package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

func loadRegistry(t *testing.T, engine sandbox.Engine) *pipeline.Registry {
	t.Helper()
	reg, err := pipeline.LoadRegistry(context.Background(), filepath.Join("..", "testdata", "registry.json"), engine)
	require.NoError(t, err)
	require.Empty(t, reg.Problems())
	return reg
}

// TestConcurrentActions runs many actions at once, across executors in WAT,
// C and Go, through one pipeline and one durable audit log: every result
// matches its own input, and the log holds one valid chained record each.
func TestConcurrentActions(t *testing.T) {
	ctx := context.Background()
	engine := enginetest.Engine(t, sandbox.EngineWazero)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenFile(logPath)
	require.NoError(t, err)
	p := pipeline.New(loadRegistry(t, engine), sink)

	const goroutines, perGoroutine = 24, 6
	var wg sync.WaitGroup
	failures := make(chan string, goroutines*perGoroutine)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				n := g*perGoroutine + i
				var req pipeline.ActionRequest
				var want string
				switch n % 3 {
				case 0:
					req = pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(fmt.Sprintf(`{"numbers":[%d,%d]}`, n, n))}
					want = fmt.Sprintf(`{"sum":%d}`, 2*n)
				case 1:
					req = pipeline.ActionRequest{Action: "math.sort", Payload: json.RawMessage(fmt.Sprintf(`{"numbers":[%d,-1]}`, n))}
					want = fmt.Sprintf(`{"count":2,"max":%d,"min":-1,"sorted":[-1,%d]}`, n, n)
				case 2:
					req = pipeline.ActionRequest{Action: "text.upper", Payload: json.RawMessage(fmt.Sprintf(`{"text":"request %d"}`, n))}
					want = fmt.Sprintf(`{"text":"REQUEST %d"}`, n)
				}
				res, err := p.Execute(ctx, req)
				if err != nil || res.Status != pipeline.StatusSuccess || string(res.Output) != want {
					failures <- fmt.Sprintf("%s %s: %v %s %s (want %s)", req.Action, req.Payload, err, res.Status, res.Output, want)
				}
			}
		}()
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	require.NoError(t, sink.Close())

	f, err := os.Open(logPath)
	require.NoError(t, err)
	defer f.Close()
	rep, err := audit.Verify(f)
	require.NoError(t, err)
	assert.Equal(t, 2*goroutines*perGoroutine, rep.Records, "an attempt and a verdict per action")
	assert.Equal(t, goroutines*perGoroutine, rep.Attempts)
	assert.Empty(t, rep.Unanswered)
}

// TestUnicodeThroughWasm checks that non-ASCII text survives canonicalization,
// the guest and the output check, and that escaped and literal forms of the
// same text have one digest.
func TestUnicodeThroughWasm(t *testing.T) {
	ctx := context.Background()
	engine := enginetest.Engine(t, sandbox.EngineWazero)
	p := pipeline.New(loadRegistry(t, engine), audit.NewMemorySink())

	literal, err := p.Execute(ctx, pipeline.ActionRequest{Action: "text.stats", Payload: json.RawMessage(`{"text":"grüße 😀 мир"}`)})
	require.NoError(t, err)
	require.Equal(t, pipeline.StatusSuccess, literal.Status, literal.Message)
	assert.Equal(t, `{"length":11,"upper":"GRÜßE 😀 МИР","words":3}`, string(literal.Output))

	escaped, err := p.Execute(ctx, pipeline.ActionRequest{Action: "text.stats", Payload: json.RawMessage(`{"text":"gr\u00fc\u00dfe \ud83d\ude00 \u043c\u0438\u0440"}`)})
	require.NoError(t, err)
	assert.Equal(t, literal.InputDigest, escaped.InputDigest)
	assert.Equal(t, literal.OutputDigest, escaped.OutputDigest)

	upper, err := p.Execute(ctx, pipeline.ActionRequest{Action: "text.upper", Payload: json.RawMessage(`{"text":"naïve \u2028 é"}`)})
	require.NoError(t, err)
	assert.Equal(t, "{\"text\":\"NAïVE \u2028 é\"}", string(upper.Output), "the WAT guest upper-cases ASCII only")
}

// TestSameResultOnBothEngines runs every fixture on wazero's compiler and
// interpreter (and wasmtime, in builds with it) and requires the same
// verdict, digests and fuel — including
// the float-heavy one, whose NaN bits differ between the two without NaN
// canonicalization, and the infinite loop and recursion bombs.
func TestSameResultOnBothEngines(t *testing.T) {
	ctx := context.Background()
	cases := []struct{ fixture, payload string }{
		{"echo.wasm", `{"b":[1,2.5,"x"],"a":null}`},
		{"upper.wasm", `{"text":"mixed Case"}`},
		{"sum.wasm", `{"numbers":[1,2,3]}`},
		{"sort.wasm", `{"numbers":[9,8,7,1]}`},
		{"textstats.wasm", `{"text":"a b c"}`},
		{"wasi_abi.wasm", `{"seed":42}`},
		{"fail.wasm", `{}`},
		{"trap.wasm", `{}`},
		{"grow.wasm", `{}`},
		{"bigout.wasm", `{}`},
		{"notjson.wasm", `{}`},
		{"noout.wasm", `{}`},
		{"floats.wasm", `{"count":300,"seed":11}`},
		{"loop.wasm", `{}`},
		{"recurse.wasm", `{}`},
		{"spin.wasm", `{"n":12345}`},
		{"startloop.wasm", `{}`},
		{"tablegrow.wasm", `{}`},
	}
	type verdict struct {
		Status       pipeline.Status
		Codes        []pipeline.ReasonCode
		InputDigest  string
		OutputDigest *string
		FuelUsed     uint64
	}
	results := map[sandbox.EngineName][]verdict{}
	enginetest.Each(t, func(t *testing.T, engine sandbox.Engine) {
		for _, c := range cases {
			// A generous clock: the interpreter under the race detector is slow, and
			// this test is about determinism, not deadlines.
			reg, err := pipeline.RegistryForSource(ctx, engine, pipeline.ExecutorSource{Wasm: filepath.Join("..", "testdata", c.fixture)}, "", sandbox.Limits{TimeoutMs: 120_000})
			require.NoError(t, err)
			res, err := pipeline.New(reg, audit.NewMemorySink()).Execute(ctx, pipeline.ActionRequest{Payload: json.RawMessage(c.payload), Action: reg.Actions()[0]})
			require.NoError(t, err)
			results[engine.Name()] = append(results[engine.Name()], verdict{res.Status, res.ReasonCodes, res.InputDigest, res.OutputDigest, res.FuelUsed})
		}
	})
	require.Len(t, results, len(sandbox.Engines()), "a verdict from every engine")
	for i, c := range cases {
		for _, name := range sandbox.Engines()[1:] {
			assert.Equal(t, results[sandbox.EngineWazero][i], results[name][i], "%s on %s", c.fixture, name)
		}
		assert.NotZero(t, results[sandbox.EngineWazero][i].FuelUsed, "%s: fuel is metered", c.fixture)
	}
	// The limits that used to depend on the engine now give one verdict.
	byFixture := map[string]verdict{}
	for i, c := range cases {
		byFixture[c.fixture] = results[sandbox.EngineWazero][i]
	}
	assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}, byFixture["loop.wasm"].Codes)
	assert.Equal(t, uint64(200_000), byFixture["loop.wasm"].FuelUsed, "the manifest's budget, all spent")
	assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.StackExhausted}, byFixture["recurse.wasm"].Codes)
	assert.Equal(t, []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}, byFixture["startloop.wasm"].Codes)
}
