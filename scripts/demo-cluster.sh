#!/usr/bin/env bash
# The tour of `make demo-cluster`: wasmgate scaled out on NATS JetStream. A
# NATS server with JetStream, a registry published to it, two worker
# processes, an HTTP front dispatching to them, 200 calls from 8 concurrent
# clients, one worker killed with SIGKILL while they run; then every call has
# its result, and the deployment's one audit chain verifies and holds exactly
# one verdict per call.
#
# The server is Debian's nats-server when it is installed (apt-get install
# nats-server), else the same server embedded in a small Go program
# (bench/natsserver). Every step checks what it expects; every process it
# starts is stopped on exit.
set -euo pipefail

BIN=${1:-bin/wasmgate}
CALLS=${CALLS:-200}
CLIENTS=${CLIENTS:-8}
# A request taken by the killed worker is delivered again once it has gone
# this long without a sign of life; the default (30s) is for production.
ACK_WAIT=${ACK_WAIT:-4s}

work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
started=$SECONDS

step() { printf '\n\033[1m== %s\033[0m\n$ %s\n' "$1" "${*:2}"; }
die() {
	echo "demo-cluster: $*" >&2
	for f in "$work"/*.log; do
		[[ -s $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}
command -v jq >/dev/null 2>&1 || die "needs jq (apt-get install jq)"
command -v curl >/dev/null 2>&1 || die "needs curl"
[[ -x $BIN ]] || die "no $BIN: run 'make build' first"

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		if port_free "$p"; then
			echo "$p"
			return
		fi
	done
	die "no free port found"
}
# wait_for WHAT SECONDS CMD...: run CMD until it succeeds.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	die "$what not ready within ${secs}s"
}
listening() { ! port_free "$1"; }

nats_port=$(free_port)
NATS=nats://127.0.0.1:$nats_port
if command -v nats-server >/dev/null 2>&1; then
	step "Start a NATS server with JetStream (Debian's nats-server), storing in a temporary directory" "nats-server -a 127.0.0.1 -p $nats_port -js -sd \$work/js"
	nats-server -a 127.0.0.1 -p "$nats_port" -js -sd "$work/js" >"$work/nats.log" 2>&1 &
	pids+=($!)
else
	step "Start a NATS server with JetStream (nats-server isn't installed: the same server, embedded in bench/natsserver)" "go run ./bench/natsserver -port $nats_port -store \$work/js"
	# Built rather than run with `go run`, so that the pid is the server's own.
	${GO:-go} build -o "$work/natsserver" ./bench/natsserver
	"$work/natsserver" -port "$nats_port" -store "$work/js" >"$work/nats.log" 2>&1 &
	pids+=($!)
fi
wait_for "the NATS server" 30 listening "$nats_port"
echo "listening on $NATS"

step "Publish the registry: modules to the Object Store by BLAKE3 digest, the registry to a KV key" "$BIN publish --nats $NATS --config testdata/registry.json"
"$BIN" publish --nats "$NATS" --config testdata/registry.json || die "publish failed"

step "Start two workers: each pulls requests from the work-queue stream and appends to the one audit chain" "$BIN worker --nats $NATS --concurrency 2 --ack-wait $ACK_WAIT   # twice"
worker_pids=()
for i in 1 2; do
	"$BIN" worker --nats "$NATS" --concurrency 2 --ack-wait "$ACK_WAIT" >"$work/worker$i.log" 2>&1 &
	pids+=($!)
	worker_pids+=($!)
done
for i in 1 2; do
	wait_for "worker $i" 60 grep -q 'worker ready' "$work/worker$i.log"
	echo "worker $i (pid ${worker_pids[$((i - 1))]}): $(grep -o 'registry_revision=[0-9]* .*audit_seq=[0-9]*' "$work/worker$i.log")"
done

http_port=$(free_port)
URL=http://127.0.0.1:$http_port
step "Start the HTTP front: it executes nothing itself, it dispatches every call to the workers" "$BIN serve --nats $NATS --addr 127.0.0.1:$http_port"
"$BIN" serve --nats "$NATS" --addr "127.0.0.1:$http_port" --max-concurrency 64 >"$work/serve.log" 2>&1 &
pids+=($!)
wait_for "wasmgate serve" 30 curl -sf -o /dev/null "$URL/health"
echo "serving $URL"

# client N: CALLS/CLIENTS calls of math.sum, one at a time, each a line of
# "<response body>\t<HTTP status>\t<seconds>" in $work/client.N.
client() {
	local n=$1 k line
	for ((k = 0; k < CALLS / CLIENTS; k++)); do
		# The body ends in a newline: one line per call, whatever happens.
		line=$(curl -s -m 50 -X POST "$URL/execute-tool" -H "content-type: application/json" \
			-d '{"packageName":"math.sum","name":"math.sum","params":{"numbers":['"$n"','"$k"',1]}}' \
			-w "\t%{http_code}\t%{time_total}" | tr -d "\n") || true
		[[ -n $line ]] || line=$'{}\t000\t0'
		printf '%s\n' "$line" >>"$work/client.$n"
		sleep 0.1 # spread over a few seconds, so that the kill below falls mid-traffic
	done
}
answered() { cat "$work"/client.* 2>/dev/null | wc -l; }
answered_at_least() { [[ $(answered) -ge $1 ]]; }

step "Send $CALLS calls from $CLIENTS concurrent clients in the background" "curl -X POST $URL/execute-tool -H \"content-type: application/json\" -d '{\"packageName\":\"math.sum\",\"name\":\"math.sum\",\"params\":{\"numbers\":[…]}}'   # x $CALLS"
client_pids=()
for ((n = 1; n <= CLIENTS; n++)); do
	client "$n" &
	client_pids+=($!)
	pids+=($!)
done
wait_for "a quarter of the calls" 30 answered_at_least $((CALLS / 4))

step "Kill one worker with SIGKILL mid-traffic (frozen first for a moment, so that it surely dies holding requests); another worker runs them after --ack-wait" "kill -STOP ${worker_pids[0]}; sleep 0.5; kill -9 ${worker_pids[0]}"
kill -STOP "${worker_pids[0]}"
sleep 0.5
disown "${worker_pids[0]}" # no "Killed" notice from the shell
kill -9 "${worker_pids[0]}"
echo "worker 1 killed; $(answered) of $CALLS calls answered by then"

step "Wait for every call to finish" "wait"
for p in "${client_pids[@]}"; do
	wait "$p"
done
cat "$work"/client.* >"$work/calls.tsv"
total=$(wc -l <"$work/calls.tsv")
ok=$(awk -F'\t' '$2 == 200' "$work/calls.tsv" | cut -f1 | jq -s '[.[] | select(.success == true and .output.sum != null)] | length')
slow=$(awk -F'\t' -v w="${ACK_WAIT%s}" '$3 + 0 >= w - 0.5' "$work/calls.tsv" | wc -l)
echo "$ok of $total calls answered 200 with success and their sum; $slow waited out the ack wait (taken by the killed worker, then run by the other)"
[[ $total -eq $CALLS && $ok -eq $CALLS ]] || die "$((CALLS - ok)) calls got no successful result"
cut -f1 "$work/calls.tsv" | jq -r '.wasmgate.traceId' | sort >"$work/trace_ids"
[[ $(sort -u "$work/trace_ids" | wc -l) -eq $CALLS ]] || die "the calls' trace ids are not all distinct"

step "Export the deployment's audit chain from its JetStream stream" "$BIN audit export --nats $NATS > log.jsonl"
"$BIN" audit export --nats "$NATS" >"$work/log.jsonl" || die "audit export failed"
echo "$(wc -l <"$work/log.jsonl") records; the first, digests only:"
head -n 1 "$work/log.jsonl" | cut -c1-300

step "Verify its hash chain: every record in place, every attempt answered by a verdict" "$BIN audit verify log.jsonl"
"$BIN" audit verify "$work/log.jsonl" || die "the exported chain does not verify"

step "One verdict per call, whatever worker ran it or how often it was delivered" "jq -s '[.[] | select(.event_type == \"action_audit\")] | group_by(.trace_id) | map(length) | …' log.jsonl"
jq -s '[.[] | select(.event_type == "action_audit")] | group_by(.trace_id) |
	{verdicts: (map(length) | add), trace_ids: length, most_verdicts_for_one_trace_id: (map(length) | max)}' "$work/log.jsonl"
jq -r 'select(.event_type == "action_audit") | .trace_id' "$work/log.jsonl" | sort >"$work/verdict_ids"
cmp -s "$work/trace_ids" "$work/verdict_ids" ||
	die "the verdicts' trace ids are not exactly the calls' ($(wc -l <"$work/verdict_ids") verdicts; diff: $(diff "$work/trace_ids" "$work/verdict_ids" | head -n 5 | tr '\n' ' '))"
echo "exactly one verdict for each of the $CALLS calls' trace ids, and no other"

printf '\n\033[1mdemo-cluster: every step behaved as expected (%d s)\033[0m\n' $((SECONDS - started))
