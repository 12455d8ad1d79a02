#!/usr/bin/env bash
# `make bench-cluster`: the governed pipeline in-process vs through NATS
# JetStream (docs/BENCHMARKS.md, Issue 15). Builds the wasmgate command the
# worker processes run, then runs bench/cluster, which starts its own NATS
# servers (embedded, and bench/natsserver) and prints Markdown tables.
# Arguments go to bench/cluster (-rounds, -calls, -clients, -duration,
# -workers, -concurrency).
set -euo pipefail
GO=${GO:-go}
BIN=${BIN:-bin/wasmgate}
make --no-print-directory build GO="$GO" BIN="$BIN" >&2
exec "$GO" run ./bench/cluster -wasmgate "$BIN" "$@"
