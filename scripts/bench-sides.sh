#!/usr/bin/env bash
# One benchmark, two commits, side by side: runs a package's benchmark (from
# this checkout) against an old and a new tree, each case old and new back
# to back so that a noisy stretch of a shared machine falls on both, and
# prints each variant's median ns/op, its rate, and the median of the pairs'
# new/old ratios.
#
#   scripts/bench-sides.sh OLD [NEW]      (NEW defaults to HEAD)
#
# PKG is the package directory (default pipeline); KEEP the test files of it
# copied from this checkout into both trees (default bench_test.go; every
# other test file of the package is left out on both sides, so that only
# the benchmark is compiled); BENCH a -bench pattern. The new side is OLD
# with the paths in ONLY taken from NEW, so that nothing else differs;
# ONLY="" (the default) takes the whole NEW tree. ROUNDS (default 8) and
# BENCHTIME (default 1s) set the length. The engine module and the Node
# built-ins' libraries, which no commit holds (see Makefile: engine), are
# copied from this checkout. Paste the table into docs/BENCHMARKS.md with
# the machine it ran on. scripts/bench-writeahead.sh and
# scripts/bench-nodeprofile.sh are the runs BENCHMARKS.md reports.
set -euo pipefail
cd "$(dirname "$0")/.."

old=${1:?usage: scripts/bench-sides.sh OLD [NEW]}
new=${2:-HEAD}
pkg=${PKG:-pipeline}
keep=${KEEP:-bench_test.go}
only=${ONLY-}
rounds=${ROUNDS:-8}
benchtime=${BENCHTIME:-1s}
pattern=${BENCH:-.}
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
	# tests, and what neither commit holds (it is fetched and built, see
	# Makefile: engine).
	find "$tmp/$side/$pkg" -maxdepth 1 -name '*_test.go' -delete
	for f in $keep; do cp "$pkg/$f" "$tmp/$side/$pkg/"; done
	cp jstool/engine/*.wasm "$tmp/$side/jstool/engine/" 2>/dev/null || true
	if [[ -d "$tmp/$side/jstool/nodelib" ]]; then
		mkdir -p "$tmp/$side/jstool/nodelib/dist"
		cp jstool/nodelib/dist/*.js "$tmp/$side/jstool/nodelib/dist/" 2>/dev/null || true
	fi
	(cd "$tmp/$side" && go test -c -o "$tmp/$side.test" "./$pkg")
done

# Each case runs old and new back to back (the order alternating by round),
# so that both sides of a pair see the same disk: fsync latency on a shared
# machine drifts by tens of percent over seconds.
cases=$(cd "$tmp/old/$pkg" && "$tmp/old.test" -test.run '^$' -test.bench "$pattern" -test.benchtime 1x |
	awk '/^Benchmark/ { n = $1; sub(/-[0-9]+$/, "", n); print n }')
for r in $(seq 1 "$rounds"); do
	for c in $cases; do
		order="old new"
		if ((r % 2 == 0)); then order="new old"; fi
		# Benchmark/a/b as an anchored -bench pattern: ^Benchmark$/^a$/^b$
		pat=$(echo "$c" | sed 's|/|$/^|g; s|^|^|; s|$|$|')
		for side in $order; do
			echo "round $r: $c: $side" >&2
			(cd "$tmp/$side/$pkg" && "$tmp/$side.test" -test.run '^$' -test.bench "$pat" \
				-test.benchtime "$benchtime" -test.benchmem) | grep '^Benchmark' | sed "s/^/$side $r /" >>"$tmp/raw"
		done
	done
done

echo
echo "old: $old, new: $new${only:+ (only $only; the rest as in $old)}; $rounds rounds of -benchtime $benchtime, old and new back to back; medians"
echo
echo "| benchmark | old ns/op | new ns/op | old ops/s | new ops/s | new / old time (median of the pairs) |"
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
