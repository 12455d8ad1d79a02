#!/usr/bin/env bash
# What Node's built-ins cost a tool that uses none (docs/BENCHMARKS.md,
# Issue 14): one call of the trivial trim tool from its snapshot, at
# b5ff160, the last commit before the built-ins, and at NEW (default HEAD),
# side by side.
#
#   scripts/bench-nodeprofile.sh [OLD [NEW]]      (default: b5ff160 HEAD)
set -euo pipefail
cd "$(dirname "$0")/.."
PKG=jstool KEEP=bench_test.go BENCH='BenchmarkToolFromSnapshot$' \
	exec scripts/bench-sides.sh "${1:-b5ff160}" "${2:-HEAD}"
