#!/usr/bin/env bash
# Runs the root package's Examples in the module as the Go proxy would serve
# it: the tracked files of HEAD only (git archive), with no make step and no
# npm (PATH holds the go command alone; cgo off), as an embedder gets it
# from `go get`. Both the TypeScript tool's Example and the Wasm module's
# must pass there: the QuickJS engine and the Node library bundle are
# committed and embedded.
#
#   scripts/modzip-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
gobin=$(dirname "$(command -v "$GO")")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/wasmgate"
git archive HEAD | tar -x -C "$work/wasmgate"
cd "$work/wasmgate"
# The module cache and the build cache are the caller's: they hold what
# go.sum pins, and nothing of this tree.
env -i HOME="$HOME" PATH="$gobin" CGO_ENABLED=0 \
	GOCACHE="$("$GO" env GOCACHE)" GOMODCACHE="$("$GO" env GOMODCACHE)" GOPROXY="$("$GO" env GOPROXY)" GOFLAGS=-mod=readonly \
	"$gobin/go" test -count=1 -run '^Example' -v . | grep -E '^(=== RUN|--- |ok|FAIL|PASS)'
