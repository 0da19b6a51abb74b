#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs the unit tests and every integration suite against the
# release build, and the unit tests and the suites marked cxx again against a build with
# AddressSanitizer and UndefinedBehaviorSanitizer (build-asan), which must run them without
# findings. A skipped test fails the run unless its reason is on the short
# allow-list in tests/integration/conftest.py (ALLOWED_SKIPS); every skip is listed at the end
# of each pass.
#
# scripts/test.sh --quick [PYTEST ARGS]: the edit loop (about 2 min here): the unit tests and the
# integration suites that need no network, torch, qemu, GPU or minutes (markers), against the
# release build only. Not what CI runs. WHEELMERGE_TEST_WORKERS sets the number of pytest workers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=0
if [[ ${1:-} == --quick ]]; then quick=1; shift; fi
"$root/scripts/setup.sh"
cd "$root"

# Parallel pytest workers (pytest-xdist): each suite runs on one worker, so that its module and
# session fixtures are made once (--dist loadfile), the longest suites first (the order of
# tests/integration/conftest.py, SUITES; not xdist's by test count). Three on two cores: the
# suites wait on child processes a good part of the time.
workers=${WHEELMERGE_TEST_WORKERS:-3}
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" --dist loadfile --no-loadscope-reorder)

if (( quick )); then
  # The suites that need no network, torch, qemu, GPU or minutes (the markers of SUITES): the
  # zip layer's hostile corpus, faults and signals, arguments, workflows, variant documents,
  # loader injection and verify (the two wmdemo builds, compiled here), data layouts, the
  # source layout. The network is cut off (an unreachable proxy) so that a suite that would
  # download fails here instead of passing on what an earlier run cached.
  echo "== quick tier: unit tests, then the integration suites marked for no network, torch, qemu, GPU or time"
  ctest --test-dir build --output-on-failure -j "$(nproc)"
  export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
         HTTPS_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY= UV_OFFLINE=1
  WHEELMERGE="$root/build/wheelmerge" exec "${pytest[@]}" tests/integration \
    -m "not (network or torch or qemu or gpu or slow)" "$@"
fi

# Disk: the suites need about NEED_GIB free under TMPDIR at their peak (27.1 GiB used at the
# lowest point of a fresh clone's run of 9da993c: the torch examples' isolated build
# environments, two per example, the workflow rehearsal's torch jobs, the real-wheel and CuPy
# trees), and the caches under ~/.cache/wheelmerge (real wheels, torch 2.10, 2.11 and
# 2.15 wheels and environments, the static builds, the clean root: 29.3 GiB when full as du
# counts it, the environments being hardlinks of uv's cache, plus uv's cache) are filled on
# the first run: what they still lack is needed on top, on their filesystem. Too little fails
# here, at once, instead of as ENOSPC deep inside pip twenty minutes later; the lowest free space
# seen during the run is printed at its end.
NEED_GIB=${WHEELMERGE_TEST_NEED_GIB:-28}
CACHE_FULL_KIB=$((30 * 1048576))
tmp_root=${TMPDIR:-/tmp}
cache=$HOME/.cache/wheelmerge
mkdir -p "$cache"
free_kib() { df -Pk "${1:-$tmp_root}" | awk 'NR == 2 { print $4 }'; }
gib() { awk -v k="$1" 'BEGIN { printf "%.1f GiB", k / 1048576 }'; }
start_free=$(free_kib)
cache_has=$(du -sk "$cache" | awk '{ print $1 }')
cache_lacks=$(( cache_has < CACHE_FULL_KIB ? CACHE_FULL_KIB - cache_has : 0 ))
need_tmp=$(( NEED_GIB * 1048576 ))
echo "== disk: $(gib "$start_free") free under $tmp_root at the start; the run needs about $NEED_GIB GiB" \
     "there, and $(gib "$cache_lacks") more for the caches in $cache"
if [[ $(stat -c %d "$tmp_root") == $(stat -c %d "$cache") ]]; then
  need_tmp=$(( need_tmp + cache_lacks ))
elif (( $(free_kib "$cache") < cache_lacks )); then
  echo "error: the caches in $cache need $(gib "$cache_lacks") more than their disk has free" >&2
  exit 1
fi
if (( start_free < need_tmp )); then
  echo "error: $(gib "$start_free") free under $tmp_root, the test suites need about $(gib "$need_tmp")" \
       "(set WHEELMERGE_TEST_NEED_GIB to override, or TMPDIR to a larger disk)" >&2
  exit 1
fi
lowest_file=$(mktemp)
echo "$start_free" >"$lowest_file"
( low=$start_free
  while sleep 5; do
    now=$(free_kib) || continue
    if (( now < low )); then low=$now; echo "$low" >"$lowest_file"; fi
  done ) &
sampler=$!
report_disk() {
  kill "$sampler" 2>/dev/null || true
  echo "== disk: lowest free under $tmp_root during the run: $(gib "$(cat "$lowest_file")")" \
       "(from $(gib "$start_free") at the start)"
  rm -f "$lowest_file"
}
trap report_disk EXIT
# The corpus of real wheels from the package index (about 1.5 GB, cached outside the checkout).
scripts/fetch-real-wheels.sh
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DWHEELMERGE_SANITIZE=ON >/dev/null
cmake --build build-asan

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== unit tests (release, then sanitizers)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"

echo "== integration suites, release build ($workers workers)"
WHEELMERGE="$root/build/wheelmerge" "${pytest[@]}" tests/integration "$@"

# Again against the sanitizer build: the suites marked cxx, which spend their time in
# wheelmerge's own code on inputs of many kinds (hostile archives, faults and signals,
# arguments, variant documents, workflows, merges, verify, scale, the build driver). The others
# spend theirs in compilers, pip, torch, qemu or linters around a few merges that these cover;
# test_fuzz.py runs its own sanitized harnesses.
echo "== integration suites marked cxx, sanitizer build ($workers workers)"
WHEELMERGE="$root/build-asan/wheelmerge" "${pytest[@]}" tests/integration -m cxx "$@"
