// Command wasmonly is the smallest embedding of wasmgate that runs a Wasm
// executor: New with one executor and one action, Execute, Close. It gives
// no executor kind, so it links neither the JS bundler nor the QuickJS
// engine; its binary's size is what a Wasm-only embedder pays
// (scripts/wasmonly-size.sh builds it and prints the size; see
// docs/BENCHMARKS.md).
//
//	go run ./bench/wasmonly testdata/sum.wasm '{"numbers":[1,2,39]}'
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/wasmgate/wasmgate"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: wasmonly MODULE.wasm PAYLOAD_JSON")
		os.Exit(2)
	}
	module, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmonly:", err)
		os.Exit(1)
	}
	// The executor is registered as its file is named (testdata/sum.wasm:
	// "sum"), which its manifest must say.
	id := strings.TrimSuffix(filepath.Base(os.Args[1]), ".wasm")
	ctx := context.Background()
	rt, err := wasmgate.New(ctx,
		wasmgate.WithExecutor(id, wasmgate.ExecutorSource{Module: module}),
		wasmgate.WithAction("run", wasmgate.Route{Executor: id, Version: "*"}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmonly:", err)
		os.Exit(1)
	}
	defer rt.Close(ctx)
	res, err := rt.Execute(ctx, wasmgate.ActionRequest{Action: "run", Payload: json.RawMessage(os.Args[2])})
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmonly:", err)
		os.Exit(1)
	}
	fmt.Println(res.Status, res.ReasonCodes, string(res.Output)+res.Message)
}
