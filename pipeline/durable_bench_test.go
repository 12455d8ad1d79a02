package pipeline_test

import (
	"context"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

// BenchmarkDurableThroughput is the cost of a durable audit log in actions
// per second: math.sum through a pipeline whose audit log is a real file
// with fsync, as a deployment runs it, from 1, 8 and 32 concurrent callers.
// ns/op is wall time per action, so throughput is its inverse.
//
// It uses only API older than the write-ahead audit, so that
// scripts/bench-writeahead.sh can run this very file at an earlier commit
// and the two side by side.
func BenchmarkDurableThroughput(b *testing.B) {
	for _, executor := range []string{"native", "wasm"} {
		for _, callers := range []int{1, 8, 32} {
			b.Run(fmt.Sprintf("%s/callers-%d", executor, callers), func(b *testing.B) {
				sink, err := audit.OpenFile(filepath.Join(b.TempDir(), "audit.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				defer sink.Close()
				native, wasm := benchPipelines(b, sandbox.EngineWazero, sink)
				p := native
				if executor == "wasm" {
					p = wasm
				}
				ctx := context.Background()
				call := func() error {
					res, err := p.Execute(ctx, benchRequest)
					if err == nil && res.Status != pipeline.StatusSuccess {
						err = fmt.Errorf("%s %v: %s", res.Status, res.ReasonCodes, res.Message)
					}
					return err
				}
				b.ReportAllocs()
				if callers == 1 {
					for b.Loop() {
						if err := call(); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				b.SetParallelism(max(1, callers/goruntime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := call(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
	}
}
