#!/usr/bin/env bash
# Installs the third-party libraries behind wasmgate's Node built-ins from
# npm, pinned by jstool/nodelib/package-lock.json (exact versions and the
# sha512 integrity of every package, which npm ci checks), and bundles them
# into jstool/nodelib/dist, where the wasmgate binary embeds them from.
# Nothing third-party is kept in git: node_modules/ and dist/*.js are ignored.
# Prints the path of the dist directory.
#
#   scripts/build-nodelib.sh            # prints jstool/nodelib/dist
set -euo pipefail
cd "$(dirname "$0")/.."

dir=jstool/nodelib
installed=$dir/node_modules/.package-lock.json
if [ ! -f "$installed" ] || [ "$dir/package-lock.json" -nt "$installed" ]; then
	(cd "$dir" && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error) >&2 ||
		{ echo "build-nodelib: npm ci in $dir failed" >&2; exit 1; }
fi
built=$dir/dist/LICENSES.txt
if [ ! -f "$built" ] || [ "$installed" -nt "$built" ] || [ -n "$(find jstool/internal/nodelibgen -newer "$built" -name "*.go")" ]; then
	"${GO:-go}" run ./jstool/internal/nodelibgen "$dir" ||
		{ echo "build-nodelib: bundling the libraries failed" >&2; exit 1; }
fi
echo "$dir/dist"
