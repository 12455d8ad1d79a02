package jstool

import (
	"bytes"
	"context"
	"testing"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// The latency of one call of a trivial tool with a fresh VM per call, from
// the snapshot and without it. bench/jsbench compares the same calls with a
// node process per call.

const (
	benchTrimPayload = `{"text":"  hello world  "}`
	benchTrimOutput  = `{"text":"hello world"}`
)

// benchTrimTool loads testdata/bench/trim.js on a new engine; the engine's
// compilation and the load stay outside the benchmark's timer.
func benchTrimTool(b *testing.B) (*Tool, sandbox.Input) {
	b.Helper()
	ctx := context.Background()
	eng, err := sandbox.NewEngine(ctx, sandbox.NewConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close(context.Background()) })
	bundle, err := BundleFile("testdata/bench/trim.js")
	if err != nil {
		b.Fatal(err)
	}
	tool, err := Load(ctx, eng, Spec{Bundle: bundle, Manifest: sandbox.Manifest{ExecutorID: "trim", Version: "1.0.0"}})
	if err != nil {
		b.Fatal(err)
	}
	in := []byte(benchTrimPayload)
	return tool, sandbox.Input{Bytes: in, Digest: audit.DigestBytes(in)}
}

// benchCheck says what is wrong with an execution's result, so that a
// benchmark never measures failures.
func benchCheck(out sandbox.Outcome, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case out.Kind != sandbox.Completed:
		return out.Kind.String() + ": " + out.Message
	case !bytes.Equal(out.Output, []byte(benchTrimOutput)):
		return "output " + string(out.Output) + ", want " + benchTrimOutput
	}
	return ""
}

func BenchmarkToolFromSnapshot(b *testing.B) {
	tool, in := benchTrimTool(b)
	ctx := context.Background()
	for b.Loop() {
		if problem := benchCheck(tool.Execute(ctx, in)); problem != "" {
			b.Fatal(problem)
		}
	}
}

func BenchmarkToolWithoutSnapshot(b *testing.B) {
	tool, in := benchTrimTool(b)
	ctx := context.Background()
	for b.Loop() {
		if problem := benchCheck(tool.ExecuteCold(ctx, in)); problem != "" {
			b.Fatal(problem)
		}
	}
}

func BenchmarkToolFromSnapshotParallel(b *testing.B) {
	tool, in := benchTrimTool(b)
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// Fatal may only be called from the benchmark's own goroutine.
			if problem := benchCheck(tool.Execute(ctx, in)); problem != "" {
				b.Error(problem)
				return
			}
		}
	})
}
