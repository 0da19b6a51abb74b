#!/usr/bin/env bash
# Installs the pinned zig toolchain (the `ziglang` wheel of the package index, for an x86_64
# Linux build machine) into ${WHEELMERGE_CACHE:-~/.cache/wheelmerge}/static/zig-VERSION and
# writes compiler wrappers for TARGET (a zig target triple, e.g. x86_64-linux-musl) into its
# bin/: TARGET-cc, TARGET-c++, TARGET-ar, TARGET-ranlib. Prints the bin/ directory.
#
#   scripts/static/zig.sh TARGET
#   scripts/static/zig.sh --cached TARGET   # the same, but only when zig is installed already:
#                                           # exits 1, installing nothing, when it is not
set -euo pipefail
cached_only=0
if [ "${1:-}" = --cached ]; then cached_only=1; shift; fi
target=${1:?usage: zig.sh [--cached] TARGET}
version=0.17.1
wheel=ziglang-$version-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl
sha256=ea6cc5d87b033cf0aedfbc8f9549a908cae6c50ac31f1698188fa48a74524b54
root=$(cd "$(dirname "$0")/../.." && pwd)
cache=${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/static
home=$cache/zig-$version
[ "$(uname -m)" = x86_64 ] || { echo "zig.sh: the pinned zig is the x86_64 Linux one; this machine is $(uname -m)" >&2; exit 1; }
if [ ! -x "$home/ziglang/zig" ]; then
  [ "$cached_only" = 0 ] || exit 1
  python=${PYTHON:-$root/.venv/bin/python}
  [ -x "$python" ] || python=python3
  mkdir -p "$cache/downloads"
  if ! echo "$sha256  $cache/downloads/$wheel" | sha256sum -c --quiet - >/dev/null 2>&1; then
    "$python" -m pip download -q --disable-pip-version-check --no-deps --only-binary :all: \
      --dest "$cache/downloads" "ziglang==$version" >&2
  fi
  echo "$sha256  $cache/downloads/$wheel" | sha256sum -c --quiet - ||
    { echo "zig.sh: $cache/downloads/$wheel: not the pinned sha256 $sha256" >&2; exit 1; }
  rm -rf "$home.tmp" && mkdir -p "$home.tmp"
  "$python" -m zipfile -e "$cache/downloads/$wheel" "$home.tmp" >&2
  chmod +x "$home.tmp/ziglang/zig"
  rm -rf "$home" && mv "$home.tmp" "$home"
fi
mkdir -p "$home/bin"
for tool in cc c++ ar ranlib; do
  wrapper=$home/bin/$target-$tool
  case $tool in
    cc|c++) line="exec \"$home/ziglang/zig\" $tool -target $target \"\$@\"" ;;
    *) line="exec \"$home/ziglang/zig\" $tool \"\$@\"" ;;
  esac
  # zig keeps what it builds for a target (its libc, libc++) in a cache of its own: ours.
  printf '#!/bin/sh\nexport ZIG_GLOBAL_CACHE_DIR="%s"\n%s\n' "$cache/zig-cache" "$line" > "$wrapper.tmp"
  chmod +x "$wrapper.tmp"
  # Replaced only when it changes: ccache knows a compiler by its modification time.
  if cmp -s "$wrapper.tmp" "$wrapper"; then rm -f "$wrapper.tmp"; else mv "$wrapper.tmp" "$wrapper"; fi
done
echo "$home/bin"
