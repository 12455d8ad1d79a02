package pyhost

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/zeebo/blake3"

	"github.com/wasmgate/wasmgate/internal/sandbox"
)

func TestSpike(t *testing.T) {
	ctx := context.Background()
	cfg := sandbox.NewConfig()
	if os.Getenv("SPIKE_ENGINE") != "" {
		cfg = cfg.WithEngine(sandbox.EngineName(os.Getenv("SPIKE_ENGINE")))
	}
	eng, err := sandbox.NewEngine(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tool, err := Load(ctx, eng, Code{
		Files: map[string][]byte{"/app/tool.py": []byte("import json\ndef execute(x):\n    return {'got': x, 'h': hash('abc'), 's': sorted({3,1,2})}\n")},
		Roots: []string{"/app"}, Mode: ModeExecutor, Module: "tool",
	}, sandbox.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("load %v fuel %d snapshot %d bytes stderr %q", time.Since(start), tool.LoadFuel(), tool.SnapshotBytes(), tool.loadOut.Stderr)
	in := []byte(`{"a":1}`)
	for i := 0; i < 3; i++ {
		start = time.Now()
		out, err := tool.Run(ctx, sandbox.Input{Bytes: in, Digest: blake3.Sum256(in), Limits: sandbox.Limits{MemoryPages: 8192, Fuel: 1e9, TimeoutMs: 10000}}, sandbox.Request{})
		t.Logf("run %v: %+v err %v stderr %q", time.Since(start), out, err, out.Stderr)
	}
}
