package wasmgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/wasmgate/wasmgate"
	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/js"
	"github.com/wasmgate/wasmgate/replay"
)

// ExampleNew runs a Wasm module: an executor given as a value, an action
// routed to it, and four requests. Guest faults and refusals are verdicts,
// not errors.
func ExampleNew() {
	ctx := context.Background()
	rt, err := wasmgate.New(ctx,
		wasmgate.WithExecutor("sum", wasmgate.ExecutorSource{Wasm: "testdata/sum.wasm"}),
		wasmgate.WithAction("math.sum", wasmgate.Route{Executor: "sum", Version: "^1.0.0", Limits: wasmgate.Limits{Fuel: 1_000_000}}))
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	for _, payload := range []string{`{"numbers": [1, 2, 39]}`, `{"numbers": [1.5]}`, `{"numbers": "many"}`, `{"numbers": [1, 2`} {
		res, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "math.sum", Payload: json.RawMessage(payload)})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Status, res.ReasonCodes, "fuel", res.FuelUsed, string(res.Output)+res.Message)
	}
	// Output:
	// SUCCESS [] fuel 1228 {"sum":42}
	// FAILED [EXECUTOR_EXCEPTION] fuel 1384 sum: numbers[0] is not an integer
	// BLOCKED [INPUT_SCHEMA_INVALID] fuel 0 payload does not match the input schema at /numbers: got string, want array
	// BLOCKED [NON_JSON_PAYLOAD] fuel 0 payload is not canonicalizable JSON: audit: unexpected end of input at offset 17
}

// ExampleWithExecutor_jsTool runs a TypeScript tool: the file is bundled,
// its manifest read from slugify.manifest.json beside it, and it runs in the
// QuickJS engine, itself a Wasm module, under the same governance. JS is an
// executor kind the program gives (js.Kind()); the engine and Node's
// library are embedded in the module, so `go get` is all it takes.
func ExampleWithExecutor_jsTool() {
	ctx := context.Background()
	rt, err := wasmgate.New(ctx, wasmgate.WithKind(js.Kind()),
		wasmgate.WithExecutor("slugify", wasmgate.ExecutorSource{JS: "guests/js/slugify.ts"}),
		wasmgate.WithAction("text.slug", wasmgate.Route{Executor: "slugify", Version: "^1.0.0", Capabilities: []string{"TEXT"}}))
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	res, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "text.slug", Payload: json.RawMessage(`{"title": "The Governed Runtime of a Tool"}`)})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, string(res.Output))
	// Output:
	// SUCCESS {"removed":["a","of","the"],"slug":"governed-runtime-tool"}
}

// ExampleWithRegistryFile serves the actions of a registry file, the kind
// `wasmgate run --config` and `wasmgate serve --config` read: routes with
// version ranges and capabilities, and a route's own limits.
func ExampleWithRegistryFile() {
	ctx := context.Background()
	rt, err := wasmgate.New(ctx, wasmgate.WithRegistryFile("testdata/registry_small.json"))
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)

	for _, req := range []wasmgate.ActionRequest{
		{Action: "math.sort", Payload: json.RawMessage(`{"numbers": [3, -1, 2]}`)},
		{Action: "text.upper", Payload: json.RawMessage(`{"text": "governed"}`)},
		{Action: "math.mul", Payload: json.RawMessage(`{"numbers": [2, 3]}`)},
	} {
		res, err := rt.Execute(ctx, req)
		if err != nil {
			panic(err)
		}
		fmt.Println(req.Action, res.Status, res.ReasonCodes, string(res.Output)+res.Message)
	}
	// Output:
	// math.sort SUCCESS [] {"count":3,"max":3,"min":-1,"sorted":[-1,2,3]}
	// text.upper SUCCESS [] {"text":"GOVERNED"}
	// math.mul BLOCKED [ACTION_UNKNOWN] action "math.mul" is not registered
}

// ExampleWithAuditFile audits to a file, then verifies the log's hash
// chain as `wasmgate audit verify` does. An action that runs has two records:
// its attempt, written before the executor runs, and its verdict; a refusal
// that runs nothing has its verdict only.
func ExampleWithAuditFile() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "wasmgate-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	log := filepath.Join(dir, "audit.jsonl")

	rt, err := wasmgate.New(ctx,
		wasmgate.WithExecutor("upper", wasmgate.ExecutorSource{Wasm: "testdata/upper.wasm"}),
		wasmgate.WithAction("text.upper", wasmgate.Route{Executor: "upper", Version: "^1.0.0"}),
		wasmgate.WithAuditFile(log))
	if err != nil {
		panic(err)
	}
	for _, payload := range []string{`{"text": "audited"}`, `{"nope": 7}`, `not JSON`} {
		if _, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "text.upper", Payload: json.RawMessage(payload)}); err != nil {
			panic(err)
		}
	}
	if err := rt.Close(ctx); err != nil { // the records are durable once Close returns
		panic(err)
	}

	f, err := os.Open(log)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	rep, err := audit.Verify(f)
	if err != nil {
		panic(err) // a *audit.ChainError names the first line that does not verify
	}
	fmt.Println(rep.Records, "records,", rep.Attempts, "attempts,", len(rep.Unanswered), "unanswered")
	// Output:
	// 5 records, 2 attempts, 0 unanswered
}

// Example_replay checks determinism as CI would: the requests an audit log
// holds are replayed three times on two engines, and every run must agree
// with the others and with the log.
func Example_replay() {
	ctx := context.Background()
	registry := []wasmgate.Option{
		wasmgate.WithExecutor("sort", wasmgate.ExecutorSource{Wasm: "testdata/sort.wasm"}),
		wasmgate.WithAction("math.sort", wasmgate.Route{Executor: "sort", Version: "^1.0.0"}),
	}
	corpus := []replay.Request{
		{Request: wasmgate.ActionRequest{Action: "math.sort", Payload: json.RawMessage(`{"numbers": [5, 3, 9, -1]}`)}},
		{Request: wasmgate.ActionRequest{Action: "math.sort", Payload: json.RawMessage(`{"numbers": "unsorted"}`)}},
	}

	// What production audited.
	log := audit.NewMemorySink()
	rt, err := wasmgate.New(ctx, append(registry, wasmgate.WithAuditSink(log))...)
	if err != nil {
		panic(err)
	}
	for _, r := range corpus {
		if _, err := rt.Execute(ctx, r.Request); err != nil {
			panic(err)
		}
	}
	_ = rt.Close(ctx)

	// The replay: a runtime per engine, with the same registry.
	var runtimes []*wasmgate.Runtime
	for _, engine := range []wasmgate.EngineName{wasmgate.EngineWazero, wasmgate.EngineWazeroInterp} {
		rt, err := wasmgate.New(ctx, append(registry, wasmgate.WithEngine(engine))...)
		if err != nil {
			panic(err)
		}
		defer rt.Close(ctx)
		runtimes = append(runtimes, rt)
	}
	rep, err := replay.Run(ctx, replay.Config{Corpus: corpus, Runtimes: runtimes, Audit: log.Records()})
	if err != nil {
		panic(err)
	}
	s := rep.Summary
	fmt.Printf("%d executions on %v: %d agreeing, %d of %d audited verdicts matched, %d divergences\n",
		s.Executions, s.Engines, s.Agreeing, s.Audit.Matched, s.Audit.Records, len(rep.Divergences))
	for _, r := range rep.Requests {
		fmt.Println(r.Line, r.Verdict, r.Status, r.ReasonCodes, r.FuelUsed)
	}
	// Output:
	// 12 executions on [wazero wazero-interp]: 2 agreeing, 2 of 2 audited verdicts matched, 0 divergences
	// 1 agree SUCCESS [] 3856
	// 2 agree FAILED [EXECUTOR_EXCEPTION] 1877
}
