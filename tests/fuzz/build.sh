#!/usr/bin/env bash
# Configures (once) and builds the libFuzzer harnesses into BUILD_DIR (default build-fuzz/).
# The compiler: $WM_FUZZ_CXX, else the newest clang++-NN installed (the engine needs clang 16 or
# later: it captures structured bindings in lambdas), else clang++.
#   Debian: apt-get install -y clang-19 libclang-rt-19-dev
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-fuzz}

pick_cxx() {
  if [[ -n ${WM_FUZZ_CXX:-} ]]; then echo "$WM_FUZZ_CXX"; return; fi
  for v in 21 20 19 18 17 16; do
    if command -v "clang++-$v" >/dev/null; then echo "clang++-$v"; return; fi
  done
  command -v clang++ >/dev/null && { echo clang++; return; }
  echo "build.sh: no clang++ found (apt-get install -y clang-19 libclang-rt-19-dev)" >&2
  exit 1
}

if [[ ! -f $build/build.ninja && ! -f $build/Makefile ]]; then
  cxx=$(pick_cxx)
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$here" -B "$build" "${generator[@]}" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
fi
# A compiler launcher (scripts/test.sh gives ccache), set or changed on every call.
if [[ -n ${WM_FUZZ_LAUNCHER:-} ]]; then
  cmake "$build" -DCMAKE_CXX_COMPILER_LAUNCHER="$WM_FUZZ_LAUNCHER" >/dev/null
fi
cmake --build "$build"
