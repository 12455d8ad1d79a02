#!/usr/bin/env bash
# `make bench`: the goals of issue 17 in one table — goal | measured | target |
# met? — every value measured in this run (docs/BENCHMARKS.md, "Issue 17: the
# goals"). Each row is one entry of `goals` below: a command that prints a line
# "NAME VALUE" (whatever else it prints goes to the log); rows naming the same
# command run it once. Adding a row is adding a line.
#
#   scripts/bench.sh            # the goal table (make bench)
#   scripts/bench.sh detail     # the side-by-side Go benchmarks (make bench-detail)
#
# `detail` runs the side-by-side benchmarks and prints, for each group, the
# median ns/op, B/op and allocs/op of every variant and its ratio to the
# group's baseline (the native executor, or the uninstrumented module):
#
#   COUNT=5 BENCHTIME=2s scripts/bench.sh detail
#
# BENCH (a -bench pattern), PKGS, TAGS (build tags) and BASELINE (which
# variant, the last element of a benchmark's name, is its group's baseline:
# an awk regex) select other benchmarks, as `make bench-wasmtime` does.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}

detail() {
	count=${COUNT:-5}
	benchtime=${BENCHTIME:-2s}
	raw=$(mktemp)
	trap 'rm -f "$raw"' EXIT

	# The instrumentation-speed benchmark includes the QuickJS engine module when
	# it has been fetched (pinned version and hash); without it, the others run.
	scripts/fetch-quickjs.sh >/dev/null 2>&1 || echo "bench: QuickJS not fetched; instrumenting it is skipped" >&2

	pattern=${BENCH:-'BenchmarkPipeline|BenchmarkExecutorOnly|BenchmarkTightLoop|BenchmarkSortC|BenchmarkInstrument$'}
	pkgs=${PKGS:-'./pipeline/ ./internal/sandbox/ ./internal/sandbox/internal/instrument/'}
	baseline=${BASELINE:-'native|plain'}
	# shellcheck disable=SC2086 # pkgs is a list
	"$GO" test -tags "${TAGS:-}" -run '^$' -bench "$pattern" -benchmem -count "$count" -benchtime "$benchtime" \
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
}


# The goals: goal|what|NAME|op|target|unit|command. op is <= or >=; unit x is
# a ratio, B bytes (shown in KiB). The command runs from the module root.
goals=(
	"1a|trivial Wasm executor (sum.wasm, no schema) through the pipeline vs the same logic as a native executor, p50 (bench/recycling; interleaved, median of per-round ratios)|wasm-pipeline-vs-native|<=|3|x|$GO run ./bench/recycling -lines"
	"1a|bytes allocated per Wasm call through the pipeline (audit checked and dropped)|wasm-pipeline-bytes|<=|5120|B|$GO run ./bench/recycling -lines"
	"1b|trivial JS call from the snapshot (trim.js), p50 vs node vm.runInNewContext per call|js-snapshot-vs-node-vm|<=|0.5|x|$GO run ./bench/recycling -lines"
	"1b|bytes allocated per JS call from the snapshot|js-snapshot-bytes|<=|40960|B|$GO run ./bench/recycling -lines"
	"2|serve at 8 clients, durable audit vs no audit file, throughput (bench/auditsink; interleaved, median of per-round ratios)|audit-durable-vs-none|>=|0.8|x|$GO run ./bench/auditsink -rounds 4"
	"3|warm run --js vs node tool.js, whole process (bench/warmstart; interleaved, median of per-round ratios)|warm-start-vs-node|<=|1.0|x|$GO run ./bench/warmstart -line"
	"26|warm run --py vs python3 running the same tool, whole process (bench/pystart; interleaved, median of per-round ratios)|py-warm-start-vs-python3|<=|1.0|x|$GO run ./bench/pystart -line"
	"4|fuel, tight loop (spin.wasm), instrumented vs plain, CPU (interleaved, median of per-round ratios)|fuel-tight-loop|<=|1.5|x|$GO run ./bench/fuelratio"
	"4|fuel, C sort (sort.wasm, 20,000 integers), instrumented vs plain, CPU|fuel-c-sort|<=|1.1|x|$GO run ./bench/fuelratio"
)

goals() {
	local entry goal what name op target unit command i value shown want met
	log=$(mktemp -d) # global: the EXIT trap reads it
	trap 'rm -rf "$log"' EXIT
	declare -A ran=()
	i=0
	for entry in "${goals[@]}"; do
		IFS='|' read -r goal what name op target unit command <<<"$entry"
		if [[ -z ${ran[$command]:-} ]]; then
			i=$((i + 1))
			ran[$command]=$log/$i
			echo "bench: $command" >&2
			# A failing command leaves its rows unmeasured; the others still run.
			eval "$command" >"$log/$i" 2>"$log/$i.err" || { echo "bench: failed ($command):" >&2; tail -5 "$log/$i.err" >&2; }
		fi
	done
	echo
	echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs, $($GO env GOOS)/$($GO env GOARCH), $($GO env GOVERSION), load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%Y-%m-%d)."
	echo
	echo "| goal | what | measured | target | met? |"
	echo "|---|---|---:|---:|---|"
	for entry in "${goals[@]}"; do
		IFS='|' read -r goal what name op target unit command <<<"$entry"
		value=$(awk -v n="$name" '$1 == n && NF == 2 { v = $2 } END { print v }' "${ran[$command]}")
		if [[ $unit == B ]]; then
			want="$([[ $op == '<=' ]] && echo ≤ || echo ≥) $(awk -v t="$target" 'BEGIN { printf "%g KB", t / 1024 }')"
		else
			want="$([[ $op == '<=' ]] && echo ≤ || echo ≥) ${target}x"
		fi
		if [[ -z $value ]]; then
			shown="not measured"
			met="—"
		else
			if [[ $unit == B ]]; then
				shown=$(awk -v v="$value" 'BEGIN { printf "%.1f KB", v / 1024 }')
			else
				shown="${value}x"
			fi
			met=$(awk -v v="$value" -v t="$target" -v op="$op" 'BEGIN { print ((op == "<=" ? v <= t : v >= t) ? "yes" : "**no**") }')
		fi
		echo "| $goal | $what | $shown | $want | $met |"
	done
}

case ${1:-goals} in
goals) goals ;;
detail) detail ;;
*)
	echo "usage: scripts/bench.sh [goals|detail]" >&2
	exit 2
	;;
esac
