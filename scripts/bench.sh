#!/usr/bin/env bash
# `make bench`: runs the side-by-side benchmarks and prints, for each group,
# the median ns/op, B/op and allocs/op of every variant and its ratio to the
# group's baseline (the native executor, or the uninstrumented module). Paste the table into
# docs/BENCHMARKS.md together with the machine it ran on.
#
#   COUNT=5 BENCHTIME=2s scripts/bench.sh
#
# BENCH (a -bench pattern), PKGS, TAGS (build tags) and BASELINE (which
# variant, the last element of a benchmark's name, is its group's baseline:
# an awk regex) select other benchmarks, as `make bench-wasmtime` does.
set -euo pipefail
cd "$(dirname "$0")/.."

count=${COUNT:-5}
benchtime=${BENCHTIME:-2s}
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT

# The instrumentation-speed benchmark includes the QuickJS engine module when
# it has been fetched (pinned version and hash); without it, the others run.
scripts/fetch-quickjs.sh >/dev/null 2>&1 || echo "bench: QuickJS not fetched; instrumenting it is skipped" >&2

pattern=${BENCH:-'BenchmarkPipeline|BenchmarkExecutorOnly|BenchmarkTightLoop|BenchmarkSortC|BenchmarkInstrument$'}
pkgs=${PKGS:-'./pipeline/ ./runtime/ ./runtime/internal/instrument/'}
baseline=${BASELINE:-'native|plain'}
# shellcheck disable=SC2086 # pkgs is a list
go test -tags "${TAGS:-}" -run '^$' -bench "$pattern" -benchmem -count "$count" -benchtime "$benchtime" \
	$pkgs | tee "$raw"

echo
echo "| benchmark | ns/op (median of $count) | ratio to baseline | B/op | allocs/op |"
echo "|---|---:|---:|---:|---:|"
awk -v baseline="$baseline" '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	n[name]++; ns[name, n[name]] = $3; bytes[name] = $5; allocs[name] = $7
	if (!(name in seen)) { seen[name] = 1; order[++k] = name }
}
function median(name,   i, j, t, c, a) {
	c = n[name]
	for (i = 1; i <= c; i++) a[i] = ns[name, i]
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	for (i = 1; i <= k; i++) {
		name = order[i]; group = name; sub(/\/[^\/]*$/, "", group)
		m = median(name)
		if (name ~ ("/(" baseline ")$")) base[group] = m
		ratio = (group in base) ? sprintf("%.2fx", m / base[group]) : "-"
		printf "| %s | %.0f | %s | %s | %s |\n", name, m, ratio, bytes[name], allocs[name]
	}
}' "$raw"
