#!/usr/bin/env bash
# The cost of the write-ahead audit, side by side: runs the same durable
# throughput benchmark (pipeline/durable_bench_test.go, from this checkout)
# against two commits, each case old and new back to back so that a noisy
# stretch of a shared machine falls on both, and prints each variant's median
# ns/op (wall time per action), its throughput, and the median of the pairs'
# new/old ratios.
#
#   scripts/bench-writeahead.sh [OLD [NEW]]      (default: c9dca8d HEAD)
#
# c9dca8d is the last commit before the write-ahead audit. The new side is
# OLD with the paths in ONLY (default "audit pipeline jstool/tool.go", where
# the write-ahead audit lives) taken from NEW, so that nothing else differs
# (work on the runtime between the two commits would blur the wasm rows);
# ONLY="" takes the whole NEW tree. Only the benchmark files of pipeline/
# are compiled on either side. ROUNDS (default 8), BENCHTIME (default 1s)
# and BENCH (a -bench pattern) select other runs. Paste the table into
# docs/BENCHMARKS.md with the machine it ran on.
set -euo pipefail
cd "$(dirname "$0")/.."

old=${1:-c9dca8d}
new=${2:-HEAD}
only=${ONLY-audit pipeline jstool/tool.go}
rounds=${ROUNDS:-8}
benchtime=${BENCHTIME:-1s}
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

# Each case runs old and new back to back (the order alternating by round),
# so that both sides of a pair see the same disk: fsync latency on a shared
# machine drifts by tens of percent over seconds.
cases=$(cd "$tmp/old/pipeline" && "$tmp/old.test" -test.run '^$' -test.bench "$pattern" -test.benchtime 1x |
	awk '/^Benchmark/ { n = $1; sub(/-[0-9]+$/, "", n); print n }')
for r in $(seq 1 "$rounds"); do
	for c in $cases; do
		order="old new"
		if ((r % 2 == 0)); then order="new old"; fi
		# Benchmark/a/b as an anchored -bench pattern: ^Benchmark$/^a$/^b$
		pat=$(echo "$c" | sed 's|/|$/^|g; s|^|^|; s|$|$|')
		for side in $order; do
			echo "round $r: $c: $side" >&2
			(cd "$tmp/$side/pipeline" && "$tmp/$side.test" -test.run '^$' -test.bench "$pat" \
				-test.benchtime "$benchtime" -test.benchmem) | grep '^Benchmark' | sed "s/^/$side $r /" >>"$tmp/raw"
		done
	done
done

echo
echo "old: $old, new: $new${only:+ (only $only; the rest as in $old)}; $rounds rounds of -benchtime $benchtime, old and new back to back; medians"
echo
echo "| benchmark | old ns/op | new ns/op | old actions/s | new actions/s | new / old time (median of the pairs) |"
echo "|---|---:|---:|---:|---:|---:|"
awk '
{
	side = $1; round = $2; name = $3; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	ns[side, name, round] = $5
	if (!(name in seen)) { seen[name] = 1; order[++m] = name }
	if (round > rounds) rounds = round
}
function median(a, c,   i, j, t) {
	for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	for (i = 1; i <= m; i++) {
		name = order[i]
		delete o; delete w; delete q; c = 0
		for (r = 1; r <= rounds; r++) {
			if (!(("old", name, r) in ns) || !(("new", name, r) in ns)) continue
			c++; o[c] = ns["old", name, r]; w[c] = ns["new", name, r]; q[c] = w[c] / o[c]
		}
		mo = median(o, c); mw = median(w, c)
		printf "| %s | %.0f | %.0f | %.0f | %.0f | %.2fx |\n", name, mo, mw, 1e9 / mo, 1e9 / mw, median(q, c)
	}
}' "$tmp/raw"
