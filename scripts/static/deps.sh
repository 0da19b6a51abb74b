#!/usr/bin/env bash
# Builds the static libraries wheelmerge links for TARGET (a zig target: x86_64-linux-musl,
# aarch64-linux-musl, x86_64-macos.10.15, aarch64-macos.11.0) with the pinned zig of zig.sh,
# from the sources of fetch.sh (sources.lock), into a prefix keyed by everything that goes into
# it: ${WHEELMERGE_CACHE:-~/.cache/wheelmerge}/static/deps/TARGET-KEY. Prints the prefix. Does
# nothing when that prefix is complete (its `stamp` is written last).
#
#   scripts/static/deps.sh TARGET
#   scripts/static/deps.sh --cached TARGET   # prints the prefix only when it is complete already;
#                                            # exits 1, fetching and building nothing, when not
#
# zlib, libzip (read-only consistency check: no bzip2/lzma/zstd/crypto backends), OpenSSL's
# libcrypto (SHA-2 with its assembly: SHA-NI, ARMv8 crypto extensions), fmt, yaml-cpp, utf8proc,
# ISA-L (patched as in scripts/isal.sh, with its assembly on x86_64 and aarch64), and
# CMake package files for the header-only libraries of Debian's -dev packages (nlohmann-json,
# CLI11, toml++, doctest), whose headers are copied into the prefix.
set -euo pipefail
cached_only=0
if [ "${1:-}" = --cached ]; then cached_only=1; shift; fi
target=${1:?usage: deps.sh [--cached] TARGET}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/static
if [ "$cached_only" = 1 ]; then
  zigbin=$("$here/zig.sh" --cached "$target") || exit 1
else
  zigbin=$("$here/zig.sh" "$target")
fi
jobs=${WHEELMERGE_JOBS:-$(nproc)}

# OpenSSL's configuration, and ISA-L's make arguments (none: no ISA-L). x86_64 assembles with
# nasm; aarch64 with the C compiler, as ISA-L's make.inc sets it (AS=$(CC) -D__ASSEMBLY__), which
# an AS given here would replace.
case $target in
  x86_64-linux-*) openssl=linux-x86_64 isal=(host_cpu=x86_64 AS=nasm) ;;
  aarch64-linux-*) openssl=linux-aarch64 isal=(host_cpu=aarch64 arch=aarch64) ;;
  x86_64-macos*) openssl=darwin64-x86_64-cc isal=() ;;
  aarch64-macos*) openssl=darwin64-arm64-cc isal=() ;;
  *) echo "deps.sh: unsupported target $target" >&2; exit 1 ;;
esac

key=$(cat "$here/sources.lock" "$here/deps.sh" "$here/toolchain.cmake" "$root"/third_party/isal/*.patch \
        "$zigbin/$target-cc" | sha256sum | cut -c1-16)
prefix=$cache/deps/$target-$key
if [ -f "$prefix/stamp" ]; then echo "$prefix"; exit 0; fi
[ "$cached_only" = 0 ] || exit 1
src=$("$here/fetch.sh")
isal_tarball=$(bash "$root/scripts/isal.sh" --fetch)
# One build of a target at a time (a second caller waits, then finds it done).
mkdir -p "$cache/deps"
exec 9>"$cache/deps/.lock-$target"
flock 9
if [ -f "$prefix/stamp" ]; then echo "$prefix"; exit 0; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/wheelmerge-deps.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf "$prefix" && mkdir -p "$prefix"
export CC=$zigbin/$target-cc CXX=$zigbin/$target-c++ AR=$zigbin/$target-ar RANLIB=$zigbin/$target-ranlib
export CFLAGS="-O2" CXXFLAGS="-O2"
log() { echo "deps.sh [$target]: $*" >&2; }
mkdir -p "$prefix/logs"
quiet() {  # quiet NAME CMD...: CMD's output into logs/NAME.log, shown only when it fails
  "${@:2}" >>"$prefix/logs/$1.log" 2>&1 || { tail -40 "$prefix/logs/$1.log" >&2; echo "deps.sh: $1 failed" >&2; return 1; }
}
unpack() {  # unpack NAME: the tarball of sources.lock's line NAME, into $work; prints its directory
  local file
  file=$(awk -v n="$1" '$1 == n { print $3 }' "$here/sources.lock")
  tar xf "$src/$file" -C "$work"
  echo "$work/$(tar tf "$src/$file" | head -1 | cut -d/ -f1)"
}
cmake_dep() {  # cmake_dep NAME [-D...]: configure, build and install a CMake project into the prefix
  local name=$1 dir
  dir=$(unpack "$1"); shift
  quiet "$name" cmake -S "$dir" -B "$dir/_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_TOOLCHAIN_FILE="$here/toolchain.cmake" -DWM_TARGET="$target" -DWM_ZIG_BIN="$zigbin" \
    -DWM_PREFIX="$prefix" -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -Wno-dev "$@"
  quiet "$name" cmake --build "$dir/_build" -j"$jobs"
  quiet "$name" cmake --install "$dir/_build"
}

log "zlib"
dir=$(unpack zlib)
# zutil.h takes macOS (whose headers define TARGET_OS_MAC) for classic Mac OS and defines fdopen
# away, which breaks the SDK's stdio.h; zlib 1.2.13.1 tests MACOS alone, as here.
sed -i 's/#if defined(MACOS) || defined(TARGET_OS_MAC)/#if defined(MACOS)/' "$dir/zutil.h"
(cd "$dir" && quiet zlib ./configure --static --prefix="$prefix" && quiet zlib make -j"$jobs" libz.a &&
  quiet zlib make install)

log "libzip"
cmake_dep libzip -DENABLE_BZIP2=OFF -DENABLE_LZMA=OFF -DENABLE_ZSTD=OFF -DENABLE_OPENSSL=OFF \
  -DENABLE_GNUTLS=OFF -DENABLE_MBEDTLS=OFF -DENABLE_COMMONCRYPTO=OFF -DENABLE_WINDOWS_CRYPTO=OFF \
  -DBUILD_TOOLS=OFF -DBUILD_REGRESS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_DOC=OFF

log "OpenSSL (libcrypto)"
dir=$(unpack openssl)
# Only libcrypto's digests are used: no shared objects, modules, engines or configuration file
# (a static executable must not read a host's openssl.cnf), with the assembly kept.
(cd "$dir" && quiet openssl ./Configure "$openssl" --prefix="$prefix" --libdir=lib no-shared no-module no-dso no-engine \
   no-autoload-config no-tests no-ui-console no-legacy no-async no-sock no-ssl3 no-dtls no-srp no-ct no-ocsp \
   no-cms no-ts no-comp &&
 quiet openssl make -j"$jobs" build_libs && quiet openssl make install_dev)

log "fmt"
cmake_dep fmt -DFMT_TEST=OFF -DFMT_DOC=OFF
log "yaml-cpp"
cmake_dep yaml-cpp -DYAML_CPP_BUILD_TESTS=OFF -DYAML_CPP_BUILD_TOOLS=OFF -DYAML_CPP_BUILD_CONTRIB=OFF \
  -DYAML_BUILD_SHARED_LIBS=OFF
log "utf8proc"
cmake_dep utf8proc -DUTF8PROC_ENABLE_TESTING=OFF

log "ISA-L"
if [ ${#isal[@]} -gt 0 ]; then
  tar xzf "$isal_tarball" -C "$work"
  dir=$(echo "$work"/isal-*/src/isal/isa-l)
  for p in "$root"/third_party/isal/*.patch; do patch -s -d "$dir" -p1 < "$p"; done
  mkdir -p "$prefix/include/isa-l"
  quiet isal make -C "$dir" -f Makefile.unx -j"$jobs" lib "${isal[@]}" CC="$CC"
  cp "$dir/bin/isa-l.a" "$prefix/lib/libisal.a"
  cp "$dir"/include/*.h "$prefix/include/isa-l/"
fi

log "header-only libraries (Debian's -dev packages)"
header_only() {  # header_only PACKAGE TARGET DIR...: headers into the prefix, and a CMake package file
  local package=$1 name=$2; shift 2
  for d in "$@"; do cp -r "/usr/include/$d" "$prefix/include/"; done
  mkdir -p "$prefix/lib/cmake/$package"
  printf 'if(NOT TARGET %s)\n  add_library(%s INTERFACE IMPORTED)\n  set_target_properties(%s PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "%s")\nendif()\n' \
    "$name" "$name" "$name" '${CMAKE_CURRENT_LIST_DIR}/../../../include' > "$prefix/lib/cmake/$package/${package}Config.cmake"
}
header_only nlohmann_json nlohmann_json::nlohmann_json nlohmann
header_only CLI11 CLI11::CLI11 CLI
header_only tomlplusplus tomlplusplus::tomlplusplus toml++
header_only doctest doctest::doctest doctest

date -u +%FT%TZ > "$prefix/stamp"
log "done: $prefix"
echo "$prefix"
