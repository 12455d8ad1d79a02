package replay_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/replay"
)

// ExampleRun checks, as CI would, that a module gives the same results on
// two engines and every run.
func ExampleRun() {
	ctx := context.Background()
	var runtimes []*wasmgate.Runtime
	for _, engine := range []wasmgate.EngineName{wasmgate.EngineWazero, wasmgate.EngineWazeroInterp} {
		rt, err := wasmgate.New(ctx, wasmgate.WithEngine(engine),
			wasmgate.WithExecutor("sum", wasmgate.ExecutorSource{Wasm: "../testdata/sum.wasm"}),
			wasmgate.WithAction("sum", wasmgate.Route{Executor: "sum", Version: "^1.0.0"}))
		if err != nil {
			panic(err)
		}
		defer rt.Close(ctx)
		runtimes = append(runtimes, rt)
	}
	var corpus []replay.Request
	for _, payload := range []string{`{"numbers": [1, 2, 39]}`, `{"numbers": [1.5]}`} {
		corpus = append(corpus, replay.Request{Request: wasmgate.ActionRequest{Action: "sum", Payload: json.RawMessage(payload)}})
	}

	rep, err := replay.Run(ctx, replay.Config{Corpus: corpus, Runtimes: runtimes})
	if err != nil {
		panic(err)
	}
	s := rep.Summary
	fmt.Printf("%d requests, %d runs on %v: %d agreeing, %d divergences\n", s.Requests, s.Runs, s.Engines, s.Agreeing, len(rep.Divergences))
	for _, r := range rep.Requests {
		fmt.Println(r.Line, r.TraceID, r.Verdict, r.Status, r.ReasonCodes)
	}
	// Output:
	// 2 requests, 3 runs on [wazero wazero-interp]: 2 agreeing, 0 divergences
	// 1 00000000-0000-4000-8000-000000000001 agree SUCCESS []
	// 2 00000000-0000-4000-8000-000000000002 agree FAILED [EXECUTOR_EXCEPTION]
}
