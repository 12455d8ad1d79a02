#!/usr/bin/env bash
# The third-party libraries behind wasmgate's Node built-ins: installed from
# npm, pinned by jstool/nodelib/package-lock.json (exact versions and the
# sha512 integrity of every package, which npm ci checks), and bundled into
# jstool/nodelib/dist (jstool/internal/nodelibgen, which first empties it
# but for its README.md). dist is committed (go:embed puts it into every
# program that gives the JavaScript kind, so `go get` needs no make step);
# this script is how it is refreshed, and how CI proves it is what the lock
# file builds to.
#
#   scripts/build-nodelib.sh            # rebuild dist; prints its path
#   scripts/build-nodelib.sh --verify   # rebuild it twice from a clean install; fail if
#                                       # the two differ, or differ from what is committed
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

dir=jstool/nodelib
dist=$dir/dist
verify=false
case "${1:-}" in
--verify) verify=true ;;
"") ;;
*) echo "usage: scripts/build-nodelib.sh [--verify]" >&2; exit 2 ;;
esac

install() {
	(cd "$dir" && npm ci --ignore-scripts --omit=dev --no-audit --no-fund --loglevel=error) >&2 ||
		{ echo "build-nodelib: npm ci in $dir failed" >&2; exit 1; }
}
generate() {
	"$GO" run ./jstool/internal/nodelibgen "$dir" ||
		{ echo "build-nodelib: bundling the libraries failed" >&2; exit 1; }
}
# digest is one line for dist's whole tree: every file's path and sha256.
digest() { (cd "$dist" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1); }

installed=$dir/node_modules/.package-lock.json
if $verify || [ ! -f "$installed" ] || [ "$dir/package-lock.json" -nt "$installed" ]; then
	install
fi
generate
if ! $verify; then
	echo "$dist"
	exit 0
fi

first=$(digest)
generate
if [ "$(digest)" != "$first" ]; then
	echo "build-nodelib: two builds of $dist from the same install differ: the bundling is not deterministic" >&2
	exit 1
fi
if [ -n "$(git status --porcelain --untracked-files=all -- "$dist")" ]; then
	git status --short --untracked-files=all -- "$dist" >&2
	echo "build-nodelib: $dist differs from what $dir/package-lock.json builds to; run scripts/build-nodelib.sh and commit" >&2
	exit 1
fi
echo "build-nodelib: $dist is what $dir/package-lock.json builds to (tree digest $first)"
