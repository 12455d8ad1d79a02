package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wasmgate/wasmgate/pipeline"
	"github.com/wasmgate/wasmgate/runtime"
)

// ExampleReplay checks, as CI would, that a module gives the same results on
// every engine and every run.
func ExampleReplay() {
	ctx := context.Background()
	var engines []runtime.Engine
	for _, name := range runtime.Engines() {
		e, err := runtime.NewEngine(ctx, runtime.NewConfig().WithEngine(name))
		if err != nil {
			panic(err)
		}
		defer e.Close(ctx)
		engines = append(engines, e)
	}
	var corpus []pipeline.ReplayRequest
	for _, payload := range []string{`{"numbers": [1, 2, 39]}`, `{"numbers": "many"}`} {
		corpus = append(corpus, pipeline.ReplayRequest{Request: pipeline.ActionRequest{Action: "sum", Payload: json.RawMessage(payload)}})
	}

	rep, err := pipeline.Replay(ctx, pipeline.ReplayConfig{
		Corpus:  corpus,
		Engines: engines,
		Registry: func(ctx context.Context, e runtime.Engine) (*pipeline.Registry, error) {
			return pipeline.RegistryForSource(ctx, e, pipeline.ExecutorSource{Wasm: "../testdata/sum.wasm"}, "", runtime.Limits{})
		},
	})
	if err != nil {
		panic(err)
	}
	s := rep.Summary
	fmt.Printf("%d requests, %d runs on each engine: %d agreeing, %d divergences\n", s.Requests, s.Runs, s.Agreeing, len(rep.Divergences))
	for _, r := range rep.Requests {
		fmt.Println(r.Line, r.TraceID, r.Verdict, r.Status, r.ReasonCodes)
	}
	// Output:
	// 2 requests, 3 runs on each engine: 2 agreeing, 0 divergences
	// 1 00000000-0000-4000-8000-000000000001 agree SUCCESS []
	// 2 00000000-0000-4000-8000-000000000002 agree FAILED [EXECUTOR_EXCEPTION]
}
