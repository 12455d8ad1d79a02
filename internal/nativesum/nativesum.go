// Package nativesum is testdata/sum.wasm's logic written in Go: the native
// executor the benchmarks measure the Wasm one against, through the same
// pipeline.
package nativesum

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/wasmgate/wasmgate/audit"
	"github.com/wasmgate/wasmgate/internal/sandbox"
)

// Executor sums {"numbers":[...]} into {"sum":N}.
type Executor struct{ manifest sandbox.Manifest }

// New returns the executor under manifest m (the Wasm executor's, so that
// both pass the same checks).
func New(m sandbox.Manifest) Executor { return Executor{manifest: m} }

func (e Executor) Manifest() sandbox.Manifest { return e.manifest }
func (e Executor) ModuleDigest() string       { return audit.Digest([]byte("native sum")) }

func (e Executor) Execute(_ context.Context, in sandbox.Input) (sandbox.Outcome, error) {
	var req struct {
		Numbers []int64 `json:"numbers"`
	}
	if err := json.Unmarshal(in.Bytes, &req); err != nil {
		return sandbox.Outcome{Kind: sandbox.Failed, Message: err.Error()}, nil
	}
	var sum int64
	for _, v := range req.Numbers {
		sum += v
	}
	return sandbox.Outcome{Kind: sandbox.Completed, Output: fmt.Appendf(nil, `{"sum":%d}`, sum)}, nil
}
