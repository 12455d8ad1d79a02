#!/usr/bin/env bash
# Builds bench/wasmonly, the smallest program that embeds wasmgate to run a
# Wasm executor (no executor kind given), and prints its binary's size as
# built by default and stripped (-trimpath -ldflags="-s -w"), one
# "NAME BYTES" line each, for docs/BENCHMARKS.md. Fails when the root
# package links the JavaScript kind (esbuild, jstool, the QuickJS host) or
# the Python kind (internal/pyhost, which embeds the 13 MB CPython module),
# or when the program does not run.
#
#   scripts/wasmonly-size.sh
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

if linked=$("$GO" list -deps . | grep -E 'evanw/esbuild|wasmgate/jstool|wasmgate/internal/jshost|wasmgate/js$'); then
	echo "wasmonly-size: the root package links the JavaScript kind:" >&2
	echo "$linked" >&2
	exit 1
fi
if linked=$("$GO" list -deps . | grep -E 'wasmgate/internal/pyhost'); then
	echo "wasmonly-size: the root package links the Python kind (CPython):" >&2
	echo "$linked" >&2
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$GO" build -o "$work/default" ./bench/wasmonly
"$GO" build -trimpath -ldflags='-s -w' -o "$work/stripped" ./bench/wasmonly
out=$("$work/default" testdata/sum.wasm '{"numbers":[1,2,39]}')
if [ "$out" != 'SUCCESS [] {"sum":42}' ]; then
	echo "wasmonly-size: the program printed $out" >&2
	exit 1
fi
echo "wasmonly-binary-bytes $(stat -c %s "$work/default")"
echo "wasmonly-binary-stripped-bytes $(stat -c %s "$work/stripped")"
