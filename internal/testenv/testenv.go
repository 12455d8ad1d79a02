// Package testenv is what the tests of every package share about their
// environment: one on-disk compilation cache for every test binary and
// every run, the build identity that lets them share it (identity.go), and
// the gate that keeps load tests out of `go test ./...`.
//
// It imports nothing of wasmgate's but internal/buildid, which imports
// nothing, so that any package's tests, package runtime's internal ones
// included, can use it. The engines built on the
// cache, and the engine matrix, are package enginetest.
package testenv

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// GuestTestsEnv names the variable through which `make test` tells the
// race build which tests are guest-only (GuestOnly): a regular expression
// matching their top-level names, the one its pass without the race
// detector runs them with (-run).
const GuestTestsEnv = "WASMGATE_GUEST_TESTS"

// GuestOnly marks t as a test of what guest code computes (QuickJS's
// output set against node's, Intl's data, the compatibility corpus): the
// race detector has nothing in it to watch, since guest code runs as
// compiled Wasm the detector does not see, while the Go around it
// (esbuild bundling megabytes of Intl data, the engine) runs five to ten
// times slower under it. `make test` runs such tests in its pass without
// the race detector: in its race pass, where $WASMGATE_GUEST_TESTS names
// them, they skip. A guest-only test that variable does not name fails,
// so that none is left out of both passes; without the variable (a plain
// `go test -race`) they run.
func GuestOnly(t testing.TB) {
	t.Helper()
	pattern := os.Getenv(GuestTestsEnv)
	if !Race || pattern == "" {
		return
	}
	name, _, _ := strings.Cut(t.Name(), "/")
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		t.Fatalf("$%s is not a regular expression: %v", GuestTestsEnv, err)
	}
	if !re.MatchString(name) {
		t.Fatalf("%s is guest-only (testenv.GuestOnly) but $%s (the Makefile's GUEST_TESTS) does not name it, so make test would run it in neither pass: add it there", name, GuestTestsEnv)
	}
	t.Skip("guest-only: make test runs it in its pass without the race detector")
}
