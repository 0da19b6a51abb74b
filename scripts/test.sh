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
#
# Time: the run is a list of phases; each one's wall time is printed when the run ends, with a
# warning for any phase past its share of the budget (docs/testing.md: the full run at most 40
# minutes on a fresh 2-core machine, the quick tier at most 2 once set up). The pytest passes
# also print their longest suites.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=0
if [[ ${1:-} == --quick ]]; then quick=1; shift; fi
cd "$root"

# phase NAME SHARE: ends the phase under way, begins NAME, whose share of the budget is SHARE
# seconds; `phase` alone ends the last one. report_phases prints them all (on exit).
phase_names=() phase_shares=() phase_seconds=()
phase_began=0 run_began=$(date +%s)
budget=$(( quick ? 120 : 2400 ))  # the whole run's, phases not reached included
phase() {
  local now
  now=$(date +%s)
  if (( ${#phase_names[@]} > ${#phase_seconds[@]} )); then phase_seconds+=($(( now - phase_began ))); fi
  if (( $# )); then
    phase_names+=("$1") phase_shares+=("$2") phase_began=$now
    echo "== $1"
  fi
}
report_phases() {
  phase
  local i total=$(( $(date +%s) - run_began )) over=()
  echo "== time by phase (share of the budget in parentheses)"
  for i in "${!phase_seconds[@]}"; do
    printf '%6d s  (%5d s)  %s\n' "${phase_seconds[i]}" "${phase_shares[i]}" "${phase_names[i]}"
    if (( phase_seconds[i] > phase_shares[i] )); then over+=("${phase_names[i]}"); fi
  done
  printf '%6d s  (%5d s)  in all\n' "$total" "$budget"
  for i in "${over[@]}"; do
    echo "warning: the phase '$i' ran past its share of the budget (docs/testing.md)" >&2
  done
  if (( total > budget )); then
    echo "warning: the run took $total s, past its budget of $budget s (docs/testing.md)" >&2
  fi
}
trap report_phases EXIT

if (( quick )); then
  phase "setup (packages, .venv, ISA-L, the release build)" 10
  "$root/scripts/setup.sh"
else
  # The builds come later, beside the downloads.
  phase "setup (packages, .venv, ISA-L)" 240
  "$root/scripts/setup.sh" --no-build
fi

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
  phase "unit tests (release build)" 10
  ctest --test-dir build --output-on-failure -j "$(nproc)"
  phase "quick integration suites: no network, torch, qemu, GPU or minutes (release build)" 100
  export http_proxy=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 \
         HTTPS_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY= UV_OFFLINE=1
  WHEELMERGE="$root/build/wheelmerge" "${pytest[@]}" tests/integration \
    -m "not (network or torch or qemu or gpu or slow)" "$@"
  exit
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
# 30 GiB is what du counted of a full cache after a complete run of 28a4184 (28.6 GiB).
NEED_GIB=${WHEELMERGE_TEST_NEED_GIB:-28}
CACHE_FULL_KIB=$((30 * 1048576))
tmp_root=${TMPDIR:-/tmp}
cache=$HOME/.cache/wheelmerge
mkdir -p "$cache"
free_kib() { df -Pk "${1:-$tmp_root}" | awk 'NR == 2 { print $4 }'; }
gib() { awk -v k="$1" 'BEGIN { printf "%.1f GiB", k / 1048576 }'; }
# A run killed before its end leaves its pytest tree behind (up to 27 GiB), which pytest removes
# only at the end of a later session: its .lock still names the process that made it, now gone.
# Trees of live runs (another clone's) and those kept for failed tests (no .lock) stay.
for tree in "$tmp_root/pytest-of-$(id -un)"/pytest-*/; do
  [[ -f $tree.lock ]] || continue
  owner=$(cat "$tree.lock" 2>/dev/null || true)
  [[ $owner =~ ^[0-9]+$ ]] && ! kill -0 "$owner" 2>/dev/null || continue
  echo "== disk: removing ${tree%/}, left by a run that was killed (process $owner is gone)"
  rm -rf "$tree"
done
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
trap 'report_disk; report_phases' EXIT

# What the suites download (the package index, Debian's mirror) is fetched in the background
# while the release and sanitizer builds compile: the real-wheel corpus (about 1.5 GB), the
# three torch releases with their dependencies and their environments (about 9.5 GB), the CUDA
# 12 toolkit assembled from NVIDIA's wheels, and the clean Debian 12 and 11 roots. Each is cached
# under ~/.cache/wheelmerge and does nothing when there; the fixtures that use them call the same
# scripts, which then find them made.
phase "the release and sanitizer builds, downloads in the background" 780
fetch_logs=$(mktemp -d) fetch_pids=()
fetch() {  # fetch NAME COMMAND...: runs COMMAND in the background, its output in NAME.log
  local name=$1; shift
  ( status=0; "$@" >"$fetch_logs/$name.log" 2>&1 || status=$?; echo "$status" >"$fetch_logs/$name.status" ) &
  fetch_pids+=($!)
}
fetch real-wheels scripts/fetch-real-wheels.sh
fetch torch scripts/torch-envs.sh 2.10.0 2.11.0 2.15.0
fetch roots-and-toolkit bash -c 'scripts/cuda12-toolkit.sh && scripts/clean-root.sh bookworm && scripts/clean-root.sh bullseye'
# Through ccache (scripts/compile-cache.sh): a warm run compiles only what changed.
source scripts/compile-cache.sh
if (( ${#launcher[@]} )); then ccache --zero-stats >/dev/null; fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
cmake --build build
# Line tables only (-g1): the sanitizers' reports keep file and line, and the compile takes
# about a third less than with full debug information. -O1, as AddressSanitizer's documentation
# advises: four of the cxx suites took 142 s against 196 s at -O0 (docs/testing.md).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-g1 -O1" -DWHEELMERGE_SANITIZE=ON \
  "${launcher[@]}" >/dev/null
# What the cxx suites run: the executable, the unit tests, test_inject's driver.
cmake --build build-asan --target wheelmerge unit_tests inject_tool
if (( ${#launcher[@]} )); then
  echo "   ccache: $(ccache --print-stats | awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit)$/ {h += $2} $1 ~ /^cache_miss$/ {m = $2} END {printf "%d of %d compiles found in the cache", h, h + m}')"
fi
wait_started=$(date +%s)
wait "${fetch_pids[@]}"
echo "   downloads: waited $(( $(date +%s) - wait_started )) s for them after the build"
for status in "$fetch_logs"/*.status; do
  name=$(basename "$status" .status)
  if [[ $(cat "$status") != 0 ]]; then
    echo "error: fetching $name failed:" >&2
    tail -40 "$fetch_logs/$name.log" >&2
    exit 1
  fi
done
rm -rf "$fetch_logs"

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

phase "unit tests (release, then sanitizers)" 120
ctest --test-dir build --output-on-failure -j "$(nproc)"
ctest --test-dir build-asan --output-on-failure -j "$(nproc)"

phase "integration suites, release build ($workers workers)" 900
WHEELMERGE="$root/build/wheelmerge" "${pytest[@]}" tests/integration "$@"

# Again against the sanitizer build: the suites marked cxx, which spend their time in
# wheelmerge's own code on inputs of many kinds (hostile archives, faults and signals,
# arguments, variant documents, workflows, merges, verify, scale, the build driver). The others
# spend theirs in compilers, pip, torch, qemu or linters around a few merges that these cover;
# test_fuzz.py runs its own sanitized harnesses.
phase "integration suites marked cxx, sanitizer build ($workers workers)" 360
WHEELMERGE="$root/build-asan/wheelmerge" "${pytest[@]}" tests/integration -m cxx "$@"
