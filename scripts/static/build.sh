#!/usr/bin/env bash
# Builds the self-contained wheelmerge executable for TARGET (see deps.sh) with the pinned zig,
# against the static libraries of deps.sh: on Linux a fully static musl executable (no libc, no
# loader needed), on macOS one that links only the system's libSystem. Kept in
# ${WHEELMERGE_CACHE:-~/.cache/wheelmerge}/static/build/TARGET-KEY, keyed by the sources and the
# libraries' prefix; prints the executable's path. With WHEELMERGE_STATIC_UNITS=1 it also builds
# the doctest unit tests beside it (unit_tests), for running under qemu-user.
#
#   scripts/static/build.sh TARGET
#   scripts/static/build.sh --cached TARGET   # prints the executable's path only when it is built
#                                             # already; exits 1, building nothing, when not
set -euo pipefail
cached_only=0
if [ "${1:-}" = --cached ]; then cached_only=1; shift; fi
target=${1:?usage: build.sh [--cached] TARGET}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/static
if [ "$cached_only" = 1 ]; then
  prefix=$("$here/deps.sh" --cached "$target") || exit 1
  zigbin=$("$here/zig.sh" --cached "$target") || exit 1
else
  prefix=$("$here/deps.sh" "$target")
  zigbin=$("$here/zig.sh" "$target")
fi
units=${WHEELMERGE_STATIC_UNITS:-0}

# The key: every file the executable is made from (tracked or not, as git sees the tree; the
# unit tests' only when they are built too), the libraries' prefix (itself keyed) and these
# scripts.
sources=(CMakeLists.txt cmake merger cli driver ci templates)
[ "$units" = 1 ] && sources+=(tests/unit)
key=$(cd "$root" && { git ls-files -co --exclude-standard -- "${sources[@]}" \
        | LC_ALL=C sort | while read -r f; do [ -f "$f" ] && sha256sum "$f"; done
      echo "$prefix $units"; cat "$here/build.sh" "$here/toolchain.cmake"; } | sha256sum | cut -c1-16)
out=$cache/build/$target-$key
built() { [ -x "$out/wheelmerge" ] && { [ "$units" = 0 ] || [ -x "$out/unit_tests" ]; }; }
if built; then echo "$out/wheelmerge"; exit 0; fi
[ "$cached_only" = 0 ] || exit 1
# One build of a target at a time (a second caller waits, then finds it done).
mkdir -p "$cache/build"
exec 9>"$cache/build/.lock-$target"
flock 9
if built; then echo "$out/wheelmerge"; exit 0; fi

isal=(-DWHEELMERGE_ISAL=ON -DWHEELMERGE_ISAL_ROOT="$prefix")
# ISA-L's x86_64 assembly is built for ELF only (nasm's macho64 output is not wired into its
# Makefile); macOS builds inflate with zlib: the same verdicts, at zlib's speed.
[ -f "$prefix/lib/libisal.a" ] || isal=(-DWHEELMERGE_ISAL=OFF)
# The compiles go through ccache as the other builds' do (scripts/compile-cache.sh): a change
# of a few sources recompiles those alone. The wrappers are zig's clang.
source "$root/scripts/compile-cache.sh"
export CCACHE_COMPILERTYPE=clang
work=$cache/build/.work-$target
rm -rf "$work" && mkdir -p "$work"
echo "build.sh [$target]: wheelmerge (${isal[0]#-D})" >&2
cmake -S "$root" -B "$work" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$here/toolchain.cmake" -DWM_TARGET="$target" -DWM_ZIG_BIN="$zigbin" -DWM_PREFIX="$prefix" \
  -DOPENSSL_ROOT_DIR="$prefix" -DOPENSSL_USE_STATIC_LIBS=TRUE "${isal[@]}" ${launcher[@]+"${launcher[@]}"} \
  -DWHEELMERGE_TESTS="$([ "$units" = 1 ] && echo ON || echo OFF)" -DCMAKE_EXE_LINKER_FLAGS=-s >"$work/../.log-$target" 2>&1 ||
  { tail -30 "$work/../.log-$target" >&2; exit 1; }
targets=(wheelmerge)
[ "$units" = 1 ] && targets+=(unit_tests)
cmake --build "$work" -j"${WHEELMERGE_JOBS:-$(nproc)}" --target "${targets[@]}" >>"$work/../.log-$target" 2>&1 ||
  { grep -m20 -B2 -A6 "error" "$work/../.log-$target" >&2 || tail -30 "$work/../.log-$target" >&2; exit 1; }
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
for t in "${targets[@]}"; do cp "$work/$t" "$out.tmp/"; done
rm -rf "$out" && mv "$out.tmp" "$out"  # whole, or not there
rm -rf "$work" && mkdir -p "$work"
echo "$out/wheelmerge"
