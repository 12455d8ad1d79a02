#!/usr/bin/env bash
# The tour of `make demo`: real executors in three languages and JS/TS tools,
# hostile ones stopped by their limits, a registry, an audit log whose hash
# chain is verified, a determinism replay of a corpus, also against that
# log, and a verdict of it proved offline from a signed checkpoint.
# Every step checks the exit code it expects.
set -euo pipefail

BIN=${1:-bin/wasmgate}
work=$(mktemp -d)
wpid=
trap '[[ -n $wpid ]] && kill "$wpid" 2>/dev/null; rm -rf "$work"' EXIT
AUDIT="$work/audit.jsonl"

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; }

# expect CODE CMD...: run CMD, show a summary of its result, insist on CODE.
expect() {
	local want=$1; shift
	local out rc=0
	out=$("$@" 2>"$work/stderr") || rc=$?
	if command -v jq >/dev/null 2>&1 && [[ $out == *'"status"'* ]]; then
		echo "$out" | jq -c '{status, reason_codes, executor_id, output, fuel_used, message}' 2>/dev/null || echo "$out"
	else
		echo "$out"
	fi
	if [[ $rc -ne $want ]]; then
		cat "$work/stderr" >&2
		echo "demo: expected exit code $want, got $rc" >&2
		exit 1
	fi
	echo "(exit $rc)"
	printf '%s' "$out" >"$work/last"
}

# insist CODE: the last result's reason codes include CODE (several verdicts
# share an exit code; a caption that names one must show that one).
insist() {
	if ! grep -q "\"$1\"" "$work/last"; then
		echo "demo: expected reason code $1" >&2
		exit 1
	fi
}

step "Inspect a module: profile, imports, exports, manifest, digest" "$BIN inspect testdata/upper.wasm"
expect 0 "$BIN" inspect testdata/upper.wasm

step "WAT executor (strict profile, ABI v1)" "$BIN run --wasm testdata/upper.wasm --input '{\"text\":\"hello, wasmgate\"}'"
expect 0 "$BIN" run --wasm testdata/upper.wasm --input '{"text":"hello, wasmgate"}' --audit "$AUDIT"

step "C executor (clang --target=wasm32, no libc)" "$BIN run --wasm testdata/sort.wasm --input '{\"numbers\":[5,3,9,-1]}'"
expect 0 "$BIN" run --wasm testdata/sort.wasm --input '{"numbers":[5,3,9,-1]}' --audit "$AUDIT"

step "Go executor (GOOS=wasip1, virtual WASI: stdin in, stdout out)" "echo '{\"text\":\"go runs here\"}' | $BIN run --wasm testdata/textstats.wasm"
expect 0 "$BIN" run --wasm testdata/textstats.wasm --input '{"text":"go runs here"}' --audit "$AUDIT"

step "An executor error is FAILED" "$BIN run --wasm testdata/fail.wasm --input '{}'"
expect 1 "$BIN" run --wasm testdata/fail.wasm --input '{}' --audit "$AUDIT"

step "An infinite loop runs out of fuel: a deterministic instruction budget" "$BIN run --wasm testdata/loop.wasm --input '{}'"
expect 3 "$BIN" run --wasm testdata/loop.wasm --input '{}' --audit "$AUDIT"
insist FUEL_EXHAUSTED

step "Given all the fuel in the world, the wall clock still stops it" "$BIN run --wasm testdata/loop.wasm --input '{}' --fuel 4000000000000000000 --timeout-ms 200"
expect 3 "$BIN" run --wasm testdata/loop.wasm --input '{}' --fuel 4000000000000000000 --timeout-ms 200 --audit "$AUDIT"
insist EXECUTOR_TIMEOUT

step "Float results are bit-identical on every engine (NaNs canonicalized)" "$BIN run --wasm testdata/floats.wasm --engine wazero-interp --input '{\"count\":500,\"seed\":1}'"
expect 0 "$BIN" run --wasm testdata/floats.wasm --input '{"count":500,"seed":1}' --audit "$AUDIT"
expect 0 "$BIN" run --wasm testdata/floats.wasm --engine wazero-interp --input '{"count":500,"seed":1}' --audit "$AUDIT"

step "A memory bomb hits memory_pages" "$BIN run --wasm testdata/grow.wasm --input '{}' --memory-pages 16"
expect 3 "$BIN" run --wasm testdata/grow.wasm --input '{}' --memory-pages 16 --audit "$AUDIT"

step "A payload over the limit never reaches the executor" "$BIN run --wasm testdata/echo.wasm --input '[[[[1]]]]' --max-depth 3"
expect 3 "$BIN" run --wasm testdata/echo.wasm --input '[[[[1]]]]' --max-depth 3 --audit "$AUDIT"

step "A module importing from outside the virtual WASI is refused at admission" "$BIN run --wasm testdata/refused/env_import.wasm --input '{}'"
expect 3 "$BIN" run --wasm testdata/refused/env_import.wasm --input '{}' --audit "$AUDIT"

step "A TypeScript tool, run by the QuickJS engine (itself a Wasm module) from a snapshot" "$BIN run --js guests/js/slugify.ts --input '{\"title\":\"The Art of Governed Execution\"}'"
expect 0 "$BIN" run --js guests/js/slugify.ts --input '{"title":"The Art of Governed Execution"}' --audit "$AUDIT"

step "A JS tool that throws is FAILED" "$BIN run --js jstool/testdata/tools/throws.js --input '{\"reason\":\"demo\"}'"
expect 1 "$BIN" run --js jstool/testdata/tools/throws.js --input '{"reason":"demo"}' --audit "$AUDIT"

# 200 million units take a JS loop about a fifth of a second, a hundred
# times less than its clock allows: fuel, not the machine's load, ends it.
step "A JS tool that loops forever runs out of fuel, long before its clock" "$BIN run --js jstool/testdata/tools/endless.js --input '{}' --fuel 200000000 --timeout-ms 60000"
expect 3 "$BIN" run --js jstool/testdata/tools/endless.js --input '{}' --fuel 200000000 --timeout-ms 60000 --audit "$AUDIT"
insist FUEL_EXHAUSTED

step "A JS allocation bomb hits memory_pages" "$BIN run --js jstool/testdata/tools/alloc_bomb.js --input '{}' --memory-pages 128"
expect 3 "$BIN" run --js jstool/testdata/tools/alloc_bomb.js --input '{}' --memory-pages 128 --audit "$AUDIT"

step "A registry may route actions to JS tools and Wasm modules alike; replay covers both" "$BIN replay --config testdata/tools.json --corpus testdata/corpus_js.jsonl --runs 2"
expect 0 "$BIN" run --config testdata/tools.json --action text.slug --input '{"title":"Crème brûlée, à la carte"}' --audit "$AUDIT"
expect 0 "$BIN" replay --config testdata/tools.json --corpus testdata/corpus_js.jsonl --runs 2

step "The NDJSON tool protocol: a runner drives a tool side and checks its events" "$BIN tool run text-slug --tools testdata/toolproto/tools --input '{\"title\":\"Hello There\"}'"
expect 0 "$BIN" tool run text-slug --tools testdata/toolproto/tools --input '{"title":"Hello There"}'

step "The same events on the wire (--json): a tool's own Error code is its error event's code, exit 1" "$BIN tool run pat-check --tools testdata/toolproto/tools --json --input '{\"prId\":42}' --config '{\"azdo.token\":\"expired-pat\"}'"
expect 1 "$BIN" tool run pat-check --tools testdata/toolproto/tools --json --input '{"prId":42}' --config '{"azdo.token":"expired-pat"}'

step "A tool written for Node (runtime \"node\", as the protocol's own tools are) runs sandboxed, writing its own events" "$BIN tool run hello-node --tools testdata/toolproto/tools --json --input '{\"name\":\"Ada\"}'"
expect 0 "$BIN" tool run hello-node --tools testdata/toolproto/tools --json --input '{"name":"Ada"}' --audit "$AUDIT"

step "A Node command-line program, sandboxed: stdin in, stdout and stderr as written, its own exit status" "echo '{\"numbers\":[1,2,3.5]}' | $BIN node testdata/nodecli/double.js"
expect 0 "$BIN" node --audit "$AUDIT" testdata/nodecli/double.js <<<'{"numbers":[1,2,3.5]}'

step "An async main() that rejects with no .catch ends it as in node: the error on stderr, exit 1" "echo '{\"path\":\"/x\"}' | $BIN node testdata/nodecli/rejected_main.js"
expect 1 "$BIN" node --audit "$AUDIT" testdata/nodecli/rejected_main.js <<<'{"path":"/x"}'
cat "$work/stderr"

step "A Python executor class written to the executor contract (CPython 3.12, itself a Wasm module, from a snapshot), importing its own package and a dependency from --py-path" "$BIN run --py guests/python/wordcount/wordcount.py --py-path guests/python/wordcount/site --input '{\"text\":\"The cat sat on the mat; the cat was happy.\"}'"
expect 0 "$BIN" run --py guests/python/wordcount/wordcount.py --py-path guests/python/wordcount/site --input '{"text":"The cat sat on the mat; the cat was happy."}' --audit "$AUDIT"

step "The class's input_schema is its manifest's: a payload without \"text\" never reaches Python" "$BIN run --py guests/python/wordcount/wordcount.py --py-path guests/python/wordcount/site --input '{\"top\":2}'"
expect 3 "$BIN" run --py guests/python/wordcount/wordcount.py --py-path guests/python/wordcount/site --input '{"top":2}'
insist INPUT_SCHEMA_INVALID

step "A Python command-line program run as python3 runs it, sandboxed: stdin in, stdout as written, its own exit status" "$BIN python testdata/pyprog/csvsum.py < testdata/pyprog/orders.csv"
expect 0 "$BIN" python --audit "$AUDIT" testdata/pyprog/csvsum.py <testdata/pyprog/orders.csv

step "An uncaught exception ends it as in python3: the traceback on stderr, exit 1" "echo '{}' | $BIN python testdata/pyprog/fails.py"
expect 1 "$BIN" python --audit "$AUDIT" testdata/pyprog/fails.py <<<'{}'
cat "$work/stderr"

# 300 million units take a Python loop about a fifth of a second, two
# hundred times less than its clock allows.
step "A Python loop runs out of fuel, long before its clock" "$BIN run --py guests/python/spin.py --input '{}' --fuel 300000000 --timeout-ms 60000"
expect 3 "$BIN" run --py guests/python/spin.py --input '{}' --fuel 300000000 --timeout-ms 60000
insist FUEL_EXHAUSTED

step "A TypeScript toolscript calling two registered executors, type-checked by TypeScript 7 against the actions' schemas, each call audited" "$BIN script testdata/scripts/combine.ts --config testdata/registry.json"
expect 0 "$BIN" script testdata/scripts/combine.ts --config testdata/registry.json --audit "$AUDIT"

# The MCP reference server, pinned by internal/mcpgateway/testdata/everything's
# lock file (make testdata-js installs it; installed here on first use).
everything=internal/mcpgateway/testdata/everything
if [[ ! -f $everything/node_modules/.package-lock.json ]]; then
	(cd "$everything" && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error >/dev/null 2>"$work/npm.stderr") ||
		{ cat "$work/npm.stderr" >&2; echo "demo: could not install the MCP reference server from npm" >&2; exit 1; }
fi
printf '{"mcpServers": {"everything": {"command": "node", "args": ["%s", "stdio"]}}}\n' \
	"$PWD/$everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js" >"$work/servers.json"
step "A toolscript calling a real MCP server's tools through the gateway: typed from its schemas, allowed by policy, each call audited" "$BIN script testdata/scripts/gateway_demo.ts --mcp-servers servers.json --mcp-allow 'everything.*'"
expect 0 "$BIN" script testdata/scripts/gateway_demo.ts --mcp-servers "$work/servers.json" --mcp-allow 'everything.*' --audit "$AUDIT"
tail -n 1 "$work/stderr"

step "A type error in a tool call's params is reported before anything runs (exit 2, nothing audited)" "$BIN script testdata/scripts/typed_param_error.ts --config testdata/registry.json"
expect 2 "$BIN" script testdata/scripts/typed_param_error.ts --config testdata/registry.json --audit "$AUDIT"
cat "$work/stderr"

# rep_session drives `wasmgate rep` as TraceMind's orchestrator does (REP
# v0.1): Capabilities, StartRun with the plant-monitor IR that TraceMind's own
# compiler emitted (testdata/rep, from ../shared/specs/tracemind-flow-ir),
# then Poll until the run has finished; it insists on "completed".
rep_session() {
	local ir inputs line id=3 polls=0 wfd
	ir=$(tr -d '\n' <testdata/rep/plant-monitor.ir.json)
	inputs='{"endpoint":"opc.tcp://localhost:4840","nodes":["ns=2;i=2","ns=2;i=5001"]}'
	coproc REP { "$BIN" rep --config testdata/rep/tracemind.json --audit "$AUDIT" 2>"$work/rep.stderr"; }
	rep_call() {
		printf '%s\n' "$1" >&"${REP[1]}"
		IFS= read -r line <&"${REP[0]}" || { cat "$work/rep.stderr" >&2; echo "demo: wasmgate rep stopped answering" >&2; exit 1; }
	}
	rep_call '{"jsonrpc":"2.0","id":1,"method":"Runtime.Capabilities","params":{}}'
	echo "-> Runtime.Capabilities"
	echo "<- $line"
	rep_call '{"jsonrpc":"2.0","id":2,"method":"Runtime.StartRun","params":{"ir":'"$ir"',"inputs":'"$inputs"',"options":{"run_id":"plant-monitor-1"}}}'
	echo "-> Runtime.StartRun {ir: testdata/rep/plant-monitor.ir.json, inputs: $inputs}"
	echo "<- $line"
	while :; do
		rep_call '{"jsonrpc":"2.0","id":'"$id"',"method":"Runtime.Poll","params":{"run_id":"plant-monitor-1"}}'
		case $line in
		*'"result":{"status":"completed"'*) break ;;
		*'"result":{"status":"failed"'* | *'"error":'*)
			echo "$line" >&2
			echo "demo: the run did not complete" >&2
			exit 1
			;;
		esac
		polls=$((polls + 1))
		if ((polls > 300)); then
			echo "demo: the run is still going after 30 s" >&2
			exit 1
		fi
		id=$((id + 1))
		sleep 0.1
	done
	echo "-> Runtime.Poll {run_id: plant-monitor-1}"
	if command -v jq >/dev/null 2>&1; then
		echo "$line" | jq -c '.result | {status, summary: (.summary | {completed_steps, failed_steps, skipped_steps})}'
		echo "$line" | jq -r '.result.events[] | select(.type == "step" and .state != "started") | "   \(.timestamp) step \(.step_id) (\(.kind)) \(.state)"'
		echo "$line" | jq -c '.result.summary.outputs | {decide, when_0, write}'
	else
		echo "<- $(echo "$line" | cut -c1-400)"
	fi
	wfd=${REP[1]}
	exec {wfd}>&-
	wait "$REP_PID"
	echo "(completed; exit 0)"
}

step "The JSON-RPC runtime (TraceMind REP v0.1): a flow compiled by TraceMind's own compiler runs to completed" "$BIN rep --config testdata/rep/tracemind.json   # Capabilities, StartRun plant-monitor.ir.json, Poll"
rep_session

# mcp_inspector WANT FILTER ARGS...: the MCP Inspector's CLI (npm, pinned by
# scripts/mcp-inspector/package-lock.json, installed here on first use) with
# ARGS, against `wasmgate mcp` started over stdio; shows its JSON answer
# through the jq FILTER and insists on exit code WANT (the Inspector exits 5
# when a tool call returns isError).
mcp_inspector() {
	local want=$1 filter=$2 dir=scripts/mcp-inspector out rc=0
	shift 2
	if [[ ! $dir/node_modules/.package-lock.json -nt $dir/package-lock.json ]]; then
		(cd "$dir" && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error >/dev/null 2>"$work/npm.stderr") ||
			{ cat "$work/npm.stderr" >&2; echo "demo: npm ci in $dir failed" >&2; exit 1; }
	fi
	out=$("$dir/node_modules/.bin/mcp-inspector" --cli --quiet --format json "$@" \
		-- "$BIN" mcp --config testdata/registry.json --audit "$AUDIT" 2>"$work/stderr") || rc=$?
	if command -v jq >/dev/null 2>&1 && [[ -n $out ]]; then
		echo "$out" | jq -r "$filter" 2>/dev/null || echo "$out"
	else
		echo "$out"
	fi
	if [[ $rc -ne $want ]]; then
		cat "$work/stderr" >&2
		echo "demo: expected the MCP Inspector to exit $want, got $rc" >&2
		exit 1
	fi
	echo "(exit $rc)"
}

step "MCP: the registry's actions as tools, listed and called by the MCP Inspector's CLI, every call audited" "npx @modelcontextprotocol/inspector --cli --method tools/list -- $BIN mcp --config testdata/registry.json"
mcp_inspector 0 '.result.tools[] | "\(.name): \(.description) readOnlyHint=\(.annotations.readOnlyHint) openWorldHint=\(.annotations.openWorldHint)"' --method tools/list
printf '$ %s\n' "npx @modelcontextprotocol/inspector --cli --method tools/call --tool-name math.sum --tool-args-json '{\"numbers\":[1,2,39]}' -- $BIN mcp ..."
mcp_inspector 0 '.result | {structuredContent, verdict: ._meta["wasmgate/result"] | {status, reason_codes, fuel_used}} | tojson' \
	--method tools/call --tool-name math.sum --tool-args-json '{"numbers":[1,2,39]}'
printf '$ %s\n' "npx @modelcontextprotocol/inspector --cli --method tools/call --tool-name math.sum --tool-args-json '{\"numbers\":[1,\"x\"]}' -- $BIN mcp ...   # isError: exit 5"
mcp_inspector 5 '.result | {isError, text: .content[0].text} | tojson' \
	--method tools/call --tool-name math.sum --tool-args-json '{"numbers":[1,"x"]}'

step "Through a registry: action -> executor with version range and capabilities" "$BIN run --config testdata/registry.json --action text.upper --input '{\"text\":\"governed\"}'"
expect 0 "$BIN" run --config testdata/registry.json --action text.upper --input '{"text":"governed"}' --audit "$AUDIT"

step "The audit log holds digests only, chained by hash" "head -c 400 $AUDIT"
head -n 1 "$AUDIT" | cut -c1-400
expect 0 "$BIN" audit verify "$AUDIT"

step "Replay a corpus: every request twice on every engine, results compared" "$BIN replay --config testdata/registry.json --corpus testdata/corpus.jsonl --runs 2"
expect 0 "$BIN" replay --config testdata/registry.json --corpus testdata/corpus.jsonl --runs 2

step "Replay against the audit log: audited requests in the corpus give the audited digests" "$BIN replay --config testdata/registry.json --corpus testdata/corpus.jsonl --runs 1 --audit audit.jsonl"
expect 0 "$BIN" replay --config testdata/registry.json --corpus testdata/corpus.jsonl --runs 1 --audit "$AUDIT"

# The transparency log (docs/AUDIT.md): the proof of a verdict is kept in
# bin/demo-proof, so the last command can be copied and run again.
proof=$(dirname "$BIN")/demo-proof
rm -rf "$proof" && mkdir -p "$proof"
step "A key for the log: its records are the leaves of a Merkle tree, and it signs checkpoints" "$BIN audit keygen --origin demo.wasmgate.example/audit --out log.key > log.vkey"
"$BIN" audit keygen --origin demo.wasmgate.example/audit --out "$work/log.key" >"$proof/log.vkey"
cat "$proof/log.vkey"
step "A signed checkpoint: origin, size, root" "$BIN audit checkpoint audit.jsonl --key log.key"
"$BIN" audit checkpoint "$AUDIT" --key "$work/log.key" >"$work/checkpoint"
cat "$work/checkpoint"
step "A witness: it cosigns a checkpoint of this log only if it extends the last one it cosigned (C2SP tlog-witness)" "$BIN witness --key w.key --log \$(cat log.vkey) --state witness-state --addr 127.0.0.1:0 &"
"$BIN" witness keygen --name witness.demo.wasmgate.example/w1 --out "$work/w.key" >"$proof/w.vkey"
"$BIN" witness --key "$work/w.key" --log "$(cat "$proof/log.vkey")" --state "$work/witness-state" --addr 127.0.0.1:0 >/dev/null 2>"$work/witness.log" &
wpid=$!
for _ in $(seq 100); do
	wurl=$(sed -n 's/.*msg=listening url=\([^ ]*\).*/\1/p' "$work/witness.log")
	[[ -n $wurl ]] && break
	sleep 0.1
done
[[ -n $wurl ]] || { cat "$work/witness.log" >&2; echo "demo: the witness did not start" >&2; exit 1; }
echo "witness at $wurl, its cosignature key: $(cat "$proof/w.vkey")"
seq=$(wc -l <"$AUDIT")
step "An inclusion proof of the last verdict (seq $seq), its checkpoint cosigned by the witness (c2sp.org/tlog-proof)" "$BIN audit prove audit.jsonl --seq $seq --key log.key --witness \$(cat w.vkey)=$wurl > verdict.tlog-proof"
"$BIN" audit prove "$AUDIT" --seq "$seq" --key "$work/log.key" --witness "$(cat "$proof/w.vkey")=$wurl" >"$proof/verdict.tlog-proof"
cat "$proof/verdict.tlog-proof"
sed -n "${seq}p" "$AUDIT" >"$proof/verdict.json"

step "Editing one record is detected by the chain" "sed -i '2s/\"executor_version\":\"1.0.0\"/\"executor_version\":\"1.0.1\"/' audit.jsonl; $BIN audit verify audit.jsonl"
cp "$AUDIT" "$work/intact.jsonl"
sed -i '2s/"executor_version":"1.0.0"/"executor_version":"1.0.1"/' "$AUDIT"
expect 1 "$BIN" audit verify "$AUDIT"
cat "$work/stderr"

step "Removing the last records passes the chain, not the checkpoint" "sed -i '\$d' audit.jsonl; sed -i '\$d' audit.jsonl; $BIN audit verify audit.jsonl; $BIN audit verify audit.jsonl --checkpoint checkpoint --vkey log.vkey"
head -n -2 "$work/intact.jsonl" >"$AUDIT"
expect 0 "$BIN" audit verify "$AUDIT"
expect 1 "$BIN" audit verify "$AUDIT" --checkpoint "$work/checkpoint" --vkey "$proof/log.vkey"
cat "$work/stderr"

step "Anyone checks the verdict offline: its line, the proof, the log's key and the witness's; no log, no network" "$BIN audit verify --proof $proof/verdict.tlog-proof --entry $proof/verdict.json --vkey $proof/log.vkey --witness \$(cat $proof/w.vkey)"
expect 0 "$BIN" audit verify --proof "$proof/verdict.tlog-proof" --entry "$proof/verdict.json" --vkey "$proof/log.vkey" --witness "$(cat "$proof/w.vkey")"

printf '\n\033[1mdemo: every step behaved as expected\033[0m\n'
