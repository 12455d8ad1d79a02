#!/usr/bin/env bash
# The cost of the write-ahead audit (docs/BENCHMARKS.md, Issue 12): the
# durable throughput benchmark at c9dca8d, the last commit before it, and
# at c9dca8d with the audit and pipeline code of NEW (default HEAD), so that
# nothing else differs. ops/s are actions per second.
#
#   scripts/bench-writeahead.sh [OLD [NEW]]      (default: c9dca8d HEAD)
set -euo pipefail
cd "$(dirname "$0")/.."
PKG=pipeline KEEP="bench_test.go durable_bench_test.go" BENCH=BenchmarkDurableThroughput \
	ONLY=${ONLY-audit pipeline jstool/tool.go} exec scripts/bench-sides.sh "${1:-c9dca8d}" "${2:-HEAD}"
