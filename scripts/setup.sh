#!/usr/bin/env bash
# Installs what wheelmerge needs to build and test on Debian 12: the distribution's -dev
# packages, then a virtual environment (.venv) with the pinned Python tools, then the build.
#
#   scripts/setup.sh [--no-build]    (--no-build: all but the build; scripts/test.sh builds then)
set -euo pipefail
build=1
if [ "${1:-}" = --no-build ]; then build=0; fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# What building wheelmerge needs (ci/install.sh installs the same), then what the tests use:
# strace injects faults, clang-19 builds the libFuzzer harnesses, qemu-user runs the CPU-level
# loader under emulated CPUs that lack AVX2 or AVX-512, debootstrap makes the clean root that
# wheelmerge's own wheel is installed in (scripts/clean-root.sh), ccache keeps compiles between
# clones (scripts/compile-cache.sh), clang-format-14 holds .clang-format (test_layout.py).
apt_packages=(build-essential cmake ninja-build pkg-config zlib1g-dev libzip-dev libssl-dev
              libfmt-dev libutf8proc-dev libyaml-cpp-dev libtomlplusplus-dev doctest-dev libcli11-dev nlohmann-json3-dev patchelf
              python3-venv nasm)
test_packages=(strace clang-19 libclang-rt-19-dev qemu-user debootstrap time ccache clang-format-14)
missing=()
for p in "${apt_packages[@]}" "${test_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt

scripts/isal.sh  # the patched ISA-L that wheelmerge inflates with, into .deps/isal
if [ "$build" = 1 ]; then
  source scripts/compile-cache.sh
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
  cmake --build build
fi
