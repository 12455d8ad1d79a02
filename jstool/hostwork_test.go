package jstool_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/enginetest"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/internal/testenv"
	"github.com/wasmgate/wasmgate/jstool"
	"github.com/wasmgate/wasmgate/pipeline"
)

// hostWorkLimits: budgets that cover the fixture's work and budgets that
// do not, each with a clock far beyond (at least ten times) what the work
// takes on a loaded machine, under the race detector, on the interpreter,
// so that fuel alone decides every verdict.
var hostWorkLimits = map[string]sandbox.Limits{
	"ample":        {Fuel: 100_000_000_000, TimeoutMs: 600_000},
	"rsa_short":    {Fuel: 3_000_000_000, TimeoutMs: 600_000},
	"pbkdf2_short": {Fuel: 2_000_000_000, TimeoutMs: 600_000},
}

// hostWorkPipeline loads testdata/tools/hostwork.mjs on e and routes an
// action of each of hostWorkLimits' names to it.
func hostWorkPipeline(t *testing.T, e sandbox.Engine) *pipeline.Pipeline {
	t.Helper()
	b, err := jstool.BundleFile(filepath.Join(tools, "hostwork.mjs"))
	require.NoError(t, err)
	tool, err := jstool.Load(context.Background(), e, jstool.Spec{Bundle: b, Manifest: sandbox.Manifest{ExecutorID: "hostwork", Version: "1.0.0"}})
	require.NoError(t, err)
	reg := pipeline.NewRegistry()
	require.NoError(t, reg.AddExecutor("hostwork", tool))
	for action, lim := range hostWorkLimits {
		require.NoError(t, reg.AddAction(action, pipeline.Route{Executor: "hostwork", Version: "*", Limits: lim}))
	}
	return pipeline.New(reg, audit.NewMemorySink())
}

func executeHostWork(t *testing.T, p *pipeline.Pipeline, action, payload string) pipeline.ActionResult {
	t.Helper()
	res, err := p.Execute(context.Background(), pipeline.ActionRequest{Action: action, Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return res
}

// hostWorkEngines are the engines a tool's host work must cost the same
// fuel on: every engine QuickJS runs on in this build, and wazero's
// compiler with a fresh instance for every execution (the shared one
// recycles instances).
func hostWorkEngines(t *testing.T) map[string]sandbox.Engine {
	t.Helper()
	engines := map[string]sandbox.Engine{}
	for _, name := range enginetest.JSEngines() {
		engines[string(name)] = engine(t, name)
	}
	fresh, err := sandbox.NewEngine(context.Background(), enginetest.Config(sandbox.EngineWazero).WithoutRecycling())
	require.NoError(t, err)
	t.Cleanup(func() { _ = fresh.Close(context.Background()) })
	engines["wazero without recycling"] = fresh
	return engines
}

// TestHostWorkIsChargedToFuel is issue 24: node:crypto's work is Go on the
// host, and its fuel is charged to the tool, so that fuel, not the clock,
// stops a tool that asks the host for more than its budget buys, and
// fuel_used says what the work was. A 4096-bit RSA key whose search costs
// more than the budget ends BLOCKED, FUEL_EXHAUSTED, with fuel_used the
// limit; with enough fuel it succeeds, with the same key and the same
// fuel on every engine and every run; PBKDF2 of 2^31-1 iterations on a
// small budget stops when the budget is spent.
func TestHostWorkIsChargedToFuel(t *testing.T) {
	// Guest-only for the race build: it measures what fuel the host's
	// work costs, and six 4096-bit key searches under the race detector
	// take minutes (the meter's concurrency is runtime's TestMeterCharge*).
	testenv.GuestOnly(t)
	const rsa = `{"op":"rsa","bits":4096}`
	const pbkdf2 = `{"op":"pbkdf2","iterations":2147483647}`
	exhausted := []pipeline.ReasonCode{pipeline.LimitExceeded, pipeline.FuelExhausted}
	var first *pipeline.ActionResult
	for name, e := range hostWorkEngines(t) {
		t.Run(name, func(t *testing.T) {
			p := hostWorkPipeline(t, e)

			res := executeHostWork(t, p, "rsa_short", rsa)
			assert.Equal(t, pipeline.StatusBlocked, res.Status, res.Message)
			assert.Equal(t, exhausted, res.ReasonCodes)
			assert.Equal(t, hostWorkLimits["rsa_short"].Fuel, res.FuelUsed)

			res = executeHostWork(t, p, "pbkdf2_short", pbkdf2)
			assert.Equal(t, pipeline.StatusBlocked, res.Status, res.Message)
			assert.Equal(t, exhausted, res.ReasonCodes)
			assert.Equal(t, hostWorkLimits["pbkdf2_short"].Fuel, res.FuelUsed)

			if testing.Short() {
				t.Skip("a 4096-bit key takes seconds")
			}
			for range 2 {
				res := executeHostWork(t, p, "ample", rsa)
				require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
				// The tool's own code takes well under a billion units:
				// the rest is the key search, charged.
				assert.Greater(t, res.FuelUsed, uint64(5_000_000_000))
				if first == nil {
					first = &res
					continue
				}
				assert.Equal(t, string(first.Output), string(res.Output), "the key")
				assert.Equal(t, first.FuelUsed, res.FuelUsed)
			}
		})
	}
}

// TestHostPBKDF2GivesWhatNodeGives: the host's PBKDF2, which pays for its
// iterations as it runs them, derives node's key, and is charged for each
// iteration.
func TestHostPBKDF2GivesWhatNodeGives(t *testing.T) {
	p := hostWorkPipeline(t, engine(t, sandbox.EngineWazero))
	payload := `{"op":"pbkdf2","iterations":100000}`
	res := executeHostWork(t, p, "ample", payload)
	require.Equal(t, pipeline.StatusSuccess, res.Status, res.Message)
	assert.JSONEq(t, string(runNode(t, "../tools/hostwork.mjs", payload)), string(res.Output))
	few := executeHostWork(t, p, "ample", `{"op":"pbkdf2","iterations":1}`)
	require.Equal(t, pipeline.StatusSuccess, few.Status, few.Message)
	// 99,999 more iterations of HMAC-SHA256, at 200 ns each, 12 units a
	// ns; what else differs (the tool's code turning a longer number into
	// a string) is far smaller than one chunk of iterations.
	assert.InDelta(t, 99_999*200*12, res.FuelUsed-few.FuelUsed, 100_000)
}
