package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// ExampleNew embeds the governed pipeline in a Go program: a wazero engine,
// a registry loaded from a configuration file, and an audit sink.
func ExampleNew() {
	ctx := context.Background()
	engine, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	if err != nil {
		panic(err)
	}
	defer engine.Close(ctx)

	reg, err := pipeline.LoadRegistry(ctx, "../testdata/registry_small.json", engine)
	if err != nil {
		panic(err)
	}
	sink := audit.NewMemorySink() // audit.OpenFile("audit.jsonl") for a durable log
	p := pipeline.New(reg, sink)

	for _, payload := range []string{`{"numbers": [1, 2, 39]}`, `{"numbers": [1.5]}`, `{"numbers": "many"}`, `{"numbers": [1, 2`} {
		res, err := p.Execute(ctx, pipeline.ActionRequest{Action: "math.sum", Payload: json.RawMessage(payload)})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Status, res.ReasonCodes, string(res.Output)+res.Message)
	}
	fmt.Println(len(sink.Verdicts()), "verdicts,", len(sink.Records())-len(sink.Verdicts()), "attempts (the refusals ran nothing)")
	// Output:
	// SUCCESS [] {"sum":42}
	// FAILED [EXECUTOR_EXCEPTION] sum: numbers[0] is not an integer
	// BLOCKED [INPUT_SCHEMA_INVALID] payload does not match the input schema at /numbers: got string, want array
	// BLOCKED [NON_JSON_PAYLOAD] payload is not canonicalizable JSON: audit: unexpected end of input at offset 17
	// 4 verdicts, 2 attempts (the refusals ran nothing)
}
