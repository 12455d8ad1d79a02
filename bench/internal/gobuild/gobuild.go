// Package gobuild builds the commands the benchmarks run as processes.
package gobuild

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build builds the package pkg (a path relative to the module root, which
// must be the working directory) into out, the compiler's output going to
// stderr.
func Build(ctx context.Context, out, pkg string) error {
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, pkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building %s: %w", pkg, err)
	}
	return nil
}

// Wasmgate returns the absolute path of the wasmgate command given, or,
// when given is "", builds ./cmd/wasmgate into dir and returns that.
func Wasmgate(ctx context.Context, given, dir string) (string, error) {
	if given != "" {
		return filepath.Abs(given)
	}
	bin := filepath.Join(dir, "wasmgate")
	return bin, Build(ctx, bin, "./cmd/wasmgate")
}
