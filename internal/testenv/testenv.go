// Package testenv is what the tests of every package share about their
// environment: one on-disk compilation cache for every test binary and
// every run, and the gate that keeps load tests out of `go test ./...`.
//
// It imports nothing of wasmgate's, so that any package's tests, package
// runtime's internal ones included, can use it. The engines built on the
// cache, and the engine matrix, are package enginetest.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// CacheDirEnv names the variable that overrides CacheDir; "off" disables
// the cache.
const CacheDirEnv = "WASMGATE_TEST_CACHE_DIR"

// CacheDir is the compilation cache the tests' engines and the commands
// they start share: $WASMGATE_TEST_CACHE_DIR, else wasmgate-test in the
// user cache directory ("" when disabled or when there is none). Compiled
// code is kept under the digest of the exact bytes compiled and the
// engine's version, so an entry is never stale: a large module (the QuickJS
// engine, a 3 MB Go guest) is compiled once per machine, not once per test
// binary, engine and run. Delete the directory for a cold run.
func CacheDir() string {
	switch dir := os.Getenv(CacheDirEnv); dir {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "wasmgate-test")
	default:
		return dir
	}
}

// LoadTestsEnv names the variable that lets load tests run; `make
// loadtest` (and `make test-load`) set it to 1.
const LoadTestsEnv = "WASMGATE_LOAD_TESTS"

// LoadTest skips t unless $WASMGATE_LOAD_TESTS is 1: a load test (thousands
// of calls, concurrent clients, a benchmark harness) runs from `make
// loadtest`, not from `go test ./...`. A load test's name ends in UnderLoad,
// which is how the make target selects them.
func LoadTest(t testing.TB) {
	t.Helper()
	if os.Getenv(LoadTestsEnv) != "1" {
		t.Skip("a load test: make loadtest runs it (" + LoadTestsEnv + "=1)")
	}
}
