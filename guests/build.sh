#!/usr/bin/env bash
# Builds every guest fixture from its source.
#
#   guests/build.sh [OUTDIR]
#
# OUTDIR defaults to the repository's testdata/. It receives NAME.wasm for
# each guest (the WAT modules of guests/wat, sort from guests/c/sort,
# textstats from guests/go/textstats) and refused/NAME.wasm for the modules
# of guests/wat/refused, which admission must refuse.
#
# Each module then gets its manifest (the .json beside its source) as the
# wasmgate.manifest custom section, via `wasmgate pack` built from this
# repository. Until cmd/wasmgate/pack.go exists, or with NO_PACK=1 in the
# environment (when cmd/wasmgate does not build), the fixtures are written
# without manifests and a warning says so.
#
# refused/bad_manifest.wasm must carry an INVALID manifest, which pack
# rightly refuses to write: its section comes from the (@custom ...)
# annotation in its source where wat2wasm honours it, otherwise it is appended
# by this script (wabt 1.0.32 parses the annotation but drops it).
#
# Needs: wat2wasm and wasm-objdump (wabt), clang with the wasm32 target,
# wasm-ld (Debian: apt-get install wabt clang lld), go.
# The output depends only on the sources and the tool versions: the same
# tools give the same bytes.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
guests=$repo/guests
out=${1:-$repo/testdata}

die() {
	echo "build.sh: $*" >&2
	exit 1
}
warn() { echo "build.sh: warning: $*" >&2; }

for tool in wat2wasm wasm-objdump clang wasm-ld go; do
	command -v "$tool" >/dev/null ||
		die "$tool not found (Debian: apt-get install wabt clang lld; Go from go.dev)"
done

mkdir -p "$out/refused"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/refused"

# imports lists a module's imports as module.name, one per line.
imports() {
	wasm-objdump -j Import -x "$1" 2>/dev/null |
		sed -n 's/.* <- \(.*\)$/\1/p'
}

# has_manifest tells whether a module already has a wasmgate.manifest section.
has_manifest() {
	wasm-objdump -h "$1" | grep -q '"wasmgate\.manifest"'
}

# Every fixture built, as "module manifest destination" lines.
built=()

# --- WAT ----------------------------------------------------------------------
# --debug-names keeps function names for readable trap traces.
for src in "$guests"/wat/*.wat; do
	name=$(basename "$src" .wat)
	wat2wasm --debug-names "$src" -o "$work/$name.wasm"
	built+=("$work/$name.wasm ${src%.wat}.manifest.json $out/$name.wasm")
done

# Refused modules need features the others must never use: threads for
# shared_memory, annotations for bad_manifest's @custom section.
for src in "$guests"/wat/refused/*.wat; do
	name=$(basename "$src" .wat)
	wat2wasm --debug-names --enable-threads --enable-annotations \
		"$src" -o "$work/refused/$name.wasm"
	built+=("$work/refused/$name.wasm ${src%.wat}.manifest.json $out/refused/$name.wasm")
done

# bad_manifest: see the header. The custom section is appended by hand: id 0,
# the content size, then the name (length-prefixed) and the payload.
uleb() {
	local v=$1 byte
	while :; do
		byte=$((v & 0x7f))
		v=$((v >> 7))
		if [ "$v" -ne 0 ]; then byte=$((byte | 0x80)); fi
		printf "\\$(printf '%03o' "$byte")"
		[ "$v" -ne 0 ] || break
	done
}
append_custom() {
	local wasm=$1 name=$2 payload=$3 size
	size=$(($(printf '%s' "$name" | wc -c) + $(wc -c <"$payload")))
	size=$((size + $(uleb "${#name}" | wc -c)))
	{
		printf '\000'
		uleb "$size"
		uleb "${#name}"
		printf '%s' "$name"
		cat "$payload"
	} >>"$wasm"
}
bad=$work/refused/bad_manifest.wasm
if ! has_manifest "$bad"; then
	append_custom "$bad" wasmgate.manifest "$guests/wat/refused/bad_manifest.manifest.json"
fi

# --- C ------------------------------------------------------------------------
# No libc: -nostdlib, and -ffreestanding so that clang neither assumes libc
# functions nor turns loops into memcpy/memset calls. wasm-ld fails on any
# undefined symbol, so a stray libc call cannot become an import.
clang --target=wasm32 -O2 -nostdlib -ffreestanding -Wall -Wextra -Werror \
	-Wl,--no-entry \
	-Wl,--export=wg_alloc -Wl,--export=wg_execute \
	-Wl,--export=wg_output_ptr -Wl,--export=wg_output_len \
	-o "$work/sort.wasm" "$guests/c/sort/sort.c"
[ -z "$(imports "$work/sort.wasm")" ] ||
	die "sort.wasm has imports; the strict profile allows none: $(imports "$work/sort.wasm" | tr '\n' ' ')"
built+=("$work/sort.wasm $guests/c/sort/manifest.json $out/sort.wasm")

# floats also uses SIMD (-msimd128), for the NaN determinism tests.
clang --target=wasm32 -O2 -msimd128 -nostdlib -ffreestanding -Wall -Wextra -Werror \
	-Wl,--no-entry -o "$work/floats.wasm" "$guests/c/floats/floats.c"
[ -z "$(imports "$work/floats.wasm")" ] ||
	die "floats.wasm has imports; the strict profile allows none"
built+=("$work/floats.wasm $guests/c/floats/manifest.json $out/floats.wasm")

# --- Go -----------------------------------------------------------------------
# guests/go is a module of its own; -trimpath and -buildvcs=false keep paths
# and VCS state out of the binary.
(cd "$guests/go" &&
	CGO_ENABLED=0 GOOS=wasip1 GOARCH=wasm \
		go build -trimpath -buildvcs=false -ldflags=-s \
		-o "$work/textstats.wasm" ./textstats)
if imports "$work/textstats.wasm" | grep -v '^wasi_snapshot_preview1\.' >/dev/null; then
	die "textstats.wasm imports outside wasi_snapshot_preview1"
fi
built+=("$work/textstats.wasm $guests/go/textstats/manifest.json $out/textstats.wasm")

# --- manifests ----------------------------------------------------------------
packer=
if [ "${NO_PACK:-}" = 1 ]; then
	warn "NO_PACK=1: fixtures are built WITHOUT manifests"
elif [ -f "$repo/cmd/wasmgate/pack.go" ]; then
	(cd "$repo" && go build -trimpath -buildvcs=false -o "$work/wasmgate" ./cmd/wasmgate) ||
		die "cmd/wasmgate does not build; fix it, or run with NO_PACK=1 for fixtures without manifests"
	packer=$work/wasmgate
else
	warn "cmd/wasmgate/pack.go does not exist yet: fixtures are built WITHOUT manifests"
fi

# Packed in place in the work directory: OUTDIR is only written once every
# module has been built and packed.
for entry in "${built[@]}"; do
	read -r wasm manifest _ <<<"$entry"
	[ -f "$manifest" ] || die "no manifest for $wasm: $manifest"
	if [ -n "$packer" ] && ! has_manifest "$wasm"; then
		"$packer" pack --manifest "$manifest" -o "$wasm.packed" "$wasm"
		mv "$wasm.packed" "$wasm"
	fi
done
for entry in "${built[@]}"; do
	read -r wasm _ dest <<<"$entry"
	cp "$wasm" "$dest"
done
# The instrumenter's own NaN test module lives beside its test.
wat2wasm "$repo/internal/sandbox/internal/instrument/testdata/nan.wat" \
	-o "$repo/internal/sandbox/internal/instrument/testdata/nan.wasm"
# So do sandbox.PrepareInterpreter's (the one with --debug-names keeps a
# name section for the test to see kept).
wat2wasm --debug-names "$repo/internal/sandbox/testdata/interpreter.wat" \
	-o "$repo/internal/sandbox/testdata/interpreter.wasm"
for name in interpreter_env interpreter_notable interpreter_notype; do
	wat2wasm "$repo/internal/sandbox/testdata/$name.wat" -o "$repo/internal/sandbox/testdata/$name.wasm"
done
# nomanifest: echo as a toolchain without custom sections leaves it, for the
# paths that must cope with a module that carries no manifest.
wat2wasm --debug-names "$guests/wat/echo.wat" -o "$out/nomanifest.wasm"

# docs/ABI.md quotes echo.wat verbatim as its complete example.
if ! awk '/^```wat$/ { f = 1; next } /^```$/ { if (f) exit } f' "$repo/docs/ABI.md" |
	cmp -s - "$guests/wat/echo.wat"; then
	warn "docs/ABI.md's WAT example no longer matches guests/wat/echo.wat"
fi

for entry in "${built[@]}"; do
	read -r _ _ dest <<<"$entry"
	printf '%9d  %s\n' "$(wc -c <"$dest")" "${dest#"$repo"/}"
done
