package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/nativesum"
	"github.com/wasmgate/wasmgate/internal/sandbox"
	"github.com/wasmgate/wasmgate/pipeline"
)

func benchPipelines(b *testing.B, engineName sandbox.EngineName, sink audit.Sink) (native, wasm *pipeline.Pipeline) {
	return benchPipelinesWith(b, sandbox.NewConfig().WithEngine(engineName), sink)
}

func benchPipelinesWith(b *testing.B, cfg sandbox.Config, sink audit.Sink) (native, wasm *pipeline.Pipeline) {
	b.Helper()
	ctx := context.Background()
	engine, err := sandbox.NewEngine(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { engine.Close(ctx) })
	mod, err := os.ReadFile(filepath.Join("..", "testdata", "sum.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	we, err := pipeline.LoadWasm(ctx, engine, mod, sandbox.Manifest{})
	if err != nil {
		b.Fatal(err)
	}
	build := func(e pipeline.Executor) *pipeline.Pipeline {
		reg := pipeline.NewRegistry()
		if err := reg.AddExecutor("sum", e); err != nil {
			b.Fatal(err)
		}
		if err := reg.AddAction("math.sum", pipeline.Route{Executor: "sum", Version: "^1.0.0"}); err != nil {
			b.Fatal(err)
		}
		return pipeline.New(reg, sink)
	}
	return build(nativesum.New(we.Manifest())), build(we)
}

var benchRequest = pipeline.ActionRequest{
	Action:  "math.sum",
	Payload: json.RawMessage(`{"numbers":[1,2,3,4,5,6,7,8,9,10]}`),
	TraceID: "8d3f2c1a-6b5e-4c7d-9e8f-0a1b2c3d4e5f",
	TsUTC:   "2026-11-21T12:00:00Z",
}

func runBench(b *testing.B, p *pipeline.Pipeline) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := p.Execute(ctx, benchRequest)
		if err != nil || res.Status != pipeline.StatusSuccess {
			b.Fatalf("%v %v %s", err, res.Status, res.Message)
		}
	}
}

// BenchmarkPipeline runs a trivial action through the whole pipeline
// (canonicalize, digest, resolve, execute in a fresh instance, check output,
// audit append) with a native Go executor and with the same logic in Wasm,
// side by side. "memory-audit" keeps records in memory; "file-audit" makes
// each record durable (write + fsync) as a real deployment does.
func BenchmarkPipeline(b *testing.B) {
	for _, audited := range []string{"memory-audit", "file-audit"} {
		for _, engine := range sandbox.Engines() {
			newSink := func(b *testing.B) audit.Sink {
				if audited == "memory-audit" {
					return audit.NewMemorySink()
				}
				s, err := audit.OpenFile(filepath.Join(b.TempDir(), "audit.jsonl"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}
			b.Run(audited+"/native", func(b *testing.B) {
				if engine != sandbox.EngineWazero {
					b.Skip("the native baseline does not depend on the engine")
				}
				native, _ := benchPipelines(b, engine, newSink(b))
				runBench(b, native)
			})
			b.Run(audited+"/wasm-"+string(engine), func(b *testing.B) {
				_, wasm := benchPipelines(b, engine, newSink(b))
				runBench(b, wasm)
			})
			if engine == sandbox.EngineWazero {
				// Every execution on a freshly instantiated instance: what
				// recycling (runtime/recycle.go) is measured against.
				b.Run(audited+"/wasm-wazero-fresh", func(b *testing.B) {
					_, wasm := benchPipelinesWith(b, sandbox.NewConfig().WithoutRecycling(), newSink(b))
					runBench(b, wasm)
				})
			}
		}
	}
}

// BenchmarkExecutorOnly isolates what the pipeline benchmark's ratio is made
// of: one execution of each executor on canonical input, no pipeline around
// it (for Wasm: a fresh instance, four ABI calls, the output copy).
func BenchmarkExecutorOnly(b *testing.B) {
	ctx := context.Background()
	engine, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer engine.Close(ctx)
	mod, err := os.ReadFile(filepath.Join("..", "testdata", "sum.wasm"))
	if err != nil {
		b.Fatal(err)
	}
	we, err := pipeline.LoadWasm(ctx, engine, mod, sandbox.Manifest{})
	if err != nil {
		b.Fatal(err)
	}
	canon, err := audit.Canonicalize(benchRequest.Payload)
	if err != nil {
		b.Fatal(err)
	}
	in := sandbox.Input{Bytes: canon.Bytes, Digest: audit.DigestBytes(canon.Bytes), Limits: we.Manifest().Limits}
	for _, e := range []struct {
		name string
		exec pipeline.Executor
	}{{"native", nativesum.New(we.Manifest())}, {"wasm-wazero", we}} {
		b.Run(e.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := e.exec.Execute(ctx, in)
				if err != nil || out.Kind != sandbox.Completed {
					b.Fatal(err, out.Message)
				}
			}
		})
	}
}
