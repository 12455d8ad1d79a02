#!/usr/bin/env bash
# The cost of the write-ahead audit, side by side: runs the same durable
# throughput benchmark (pipeline/durable_bench_test.go, from this checkout)
# against two commits, in alternating rounds so that a noisy stretch of a
# shared machine falls on both, and prints each variant's median ns/op (wall
# time per action), its throughput, and the ratio of the new to the old.
#
#   scripts/bench-writeahead.sh [OLD [NEW]]      (default: c9dca8d HEAD)
#
# c9dca8d is the last commit before the write-ahead audit. The new side is
# OLD with the paths in ONLY (default "audit pipeline jstool/tool.go", where
# the write-ahead audit lives) taken from NEW, so that nothing else differs
# (work on the runtime between the two commits would blur the wasm rows);
# ONLY="" takes the whole NEW tree. Only the benchmark files of pipeline/
# are compiled on either side. ROUNDS (default 6), BENCHTIME (default 2s)
# and BENCH (a -bench pattern) select other runs. Paste the table into
# docs/BENCHMARKS.md with the machine it ran on.
set -euo pipefail
cd "$(dirname "$0")/.."

old=${1:-c9dca8d}
new=${2:-HEAD}
only=${ONLY-audit pipeline jstool/tool.go}
rounds=${ROUNDS:-6}
benchtime=${BENCHTIME:-2s}
pattern=${BENCH:-BenchmarkDurableThroughput}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

scripts/fetch-quickjs.sh >/dev/null 2>&1 || true
for side in old new; do
	mkdir -p "$tmp/$side"
	if [[ $side == new && -n $only ]]; then
		git archive "$old" | tar -x -C "$tmp/$side"
		# shellcheck disable=SC2086 # only is a list of paths
		(cd "$tmp/$side" && rm -rf $only)
		# shellcheck disable=SC2086
		git archive "$new" $only | tar -x -C "$tmp/$side"
	else
		git archive "${!side}" | tar -x -C "$tmp/$side"
	fi
	# The same benchmark on both sides, nothing else of the package's
	# tests, and the engine module neither commit holds (it is fetched,
	# see Makefile: engine).
	find "$tmp/$side/pipeline" -name '*_test.go' ! -name bench_test.go -delete
	cp pipeline/durable_bench_test.go "$tmp/$side/pipeline/"
	cp jstool/engine/*.wasm "$tmp/$side/jstool/engine/" 2>/dev/null || true
	(cd "$tmp/$side" && go test -c -o "$tmp/$side.test" ./pipeline)
done

for r in $(seq 1 "$rounds"); do
	order="old new"
	if ((r % 2 == 0)); then order="new old"; fi
	for side in $order; do
		echo "round $r: $side" >&2
		(cd "$tmp/$side/pipeline" && "$tmp/$side.test" -test.run '^$' -test.bench "$pattern" \
			-test.benchtime "$benchtime" -test.benchmem) | grep '^Benchmark' | sed "s/^/$side /" >>"$tmp/raw"
	done
done

echo
echo "old: $old, new: $new${only:+ (only $only; the rest as in $old)}; $rounds alternating rounds of -benchtime $benchtime; median of the rounds"
echo
echo "| benchmark | old ns/op | new ns/op | old actions/s | new actions/s | new / old time |"
echo "|---|---:|---:|---:|---:|---:|"
awk '
{
	side = $1; name = $2; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	k = side SUBSEP name
	n[k]++; ns[k, n[k]] = $4
	if (!(name in seen)) { seen[name] = 1; order[++m] = name }
}
function median(k,   i, j, t, c, a) {
	c = n[k]
	for (i = 1; i <= c; i++) a[i] = ns[k, i]
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	for (i = 1; i <= m; i++) {
		name = order[i]
		o = median("old" SUBSEP name); w = median("new" SUBSEP name)
		printf "| %s | %.0f | %.0f | %.0f | %.0f | %.2fx |\n", name, o, w, 1e9 / o, 1e9 / w, w / o
	}
}' "$tmp/raw"
