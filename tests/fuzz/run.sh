#!/usr/bin/env bash
# A fuzzing campaign: builds the harnesses (build.sh), writes the seed corpus (make_corpus.py,
# with wmdemo wheels built once), then runs every harness (or those named) for SECONDS each
# (default 300), $WM_FUZZ_JOBS at once (default 2), and prints a summary table.
#
#   tests/fuzz/run.sh [SECONDS] [HARNESS...]
#
# In the build directory ($WM_FUZZ_BUILD, default build-fuzz/): corpus/HARNESS (kept and grown
# from run to run), artifacts/HARNESS (crashes, timeouts, out-of-memory inputs), logs/HARNESS.log
# and logs/summary.md. WM_FUZZ_KEEP_GOING=1 runs libFuzzer's fork mode, which goes on past
# crashes (each one still kept in artifacts/). WM_FUZZ_SWEEP=1 then runs the differential sweep
# (oracle_sweep.py, release build/wheelmerge or $WHEELMERGE) over the grown corpora of the merge
# harnesses and fuzz_requirement, where they ran; summary in logs/sweep.md, failing inputs in
# sweep-failures/.
# A crash found: minimise it with
#   build-fuzz/HARNESS -minimize_crash=1 -runs=10000 -exact_artifact_path=OUT CRASH
# and keep it in tests/fuzz/regressions/HARNESS/ (tests/integration/hostile/test_fuzz.py replays those).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WM_FUZZ_BUILD:-$root/build-fuzz}
seconds=${1:-300}
shift || true
python=$root/.venv/bin/python
[[ -x $python ]] || python=python3

"$here/build.sh" "$build"
"$python" "$here/make_corpus.py" "$build/seeds" --wmdemo "$build/wmdemo-wheels"
read -r -a harnesses <<<"${*:-$("$python" "$here/make_corpus.py" --harnesses)}"
mkdir -p "$build/logs"

run_one() {
  local h=$1
  mkdir -p "$build/corpus/$h" "$build/artifacts/$h"
  local -a opts
  read -r -a opts <<<"$("$python" "$here/make_corpus.py" --flags "$h")"
  if [[ ${WM_FUZZ_KEEP_GOING:-0} == 1 ]]; then
    opts+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  echo "run.sh: $h for ${seconds}s"
  local start=$SECONDS
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
    ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=64:malloc_context_size=20} \
    "$build/$h" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$h/" "${opts[@]}" "$build/corpus/$h" "$build/seeds/$h" \
    >"$build/logs/$h.log" 2>&1 || echo "run.sh: $h stopped with status $? (see $build/logs/$h.log)"
  echo $((SECONDS - start)) >"$build/logs/$h.seconds"
}

jobs_max=${WM_FUZZ_JOBS:-2}
for h in "${harnesses[@]}"; do
  while (( $(jobs -rp | wc -l) >= jobs_max )); do wait -n || true; done
  run_one "$h" &
done
wait

"$python" - "$build" "$seconds" "${harnesses[@]}" <<'PY'
import re, sys
from pathlib import Path
build, seconds, harnesses = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
rows = ["| harness | time (s) | executions | exec/s | cov | ft | corpus | crashes/timeouts/ooms (artifacts) |",
        "|---|---|---|---|---|---|---|---|"]
for h in harnesses:
    log = (build / "logs" / f"{h}.log").read_text(errors="replace")
    stat = dict(re.findall(r"stat::(\w+):\s+(\d+)", log))
    progress = re.findall(r"#(\d+):?\s+(?:\w+\s+)?cov: (\d+) ft: (\d+) corp: (\d+)", log)
    last = progress[-1] if progress else ("?", "?", "?", "?")
    execs = stat.get("number_of_executed_units", last[0])
    rate = stat.get("average_exec_per_sec")
    if rate is None:  # fork mode prints no final stats
        m = re.findall(r"exec/s: (\d+)", log)
        rate = m[-1] if m else "?"
    arts = sorted(p.name for p in (build / "artifacts" / h).iterdir()) if (build / "artifacts" / h).exists() else []
    kinds = [sum(a.startswith(k) for a in arts) for k in ("crash-", "timeout-", "oom-")]
    kinds[0] += sum(a.startswith(("leak-", "deadly")) for a in arts)
    took = build / "logs" / f"{h}.seconds"
    rows.append(f"| {h} | {took.read_text().strip() if took.exists() else seconds} | {execs} | {rate} | {last[1]} | {last[2]} | {last[3]} | "
                f"{'/'.join(map(str, kinds))} |")
table = "\n".join(rows)
(build / "logs" / "summary.md").write_text(table + "\n")
print(table)
PY

if [[ ${WM_FUZZ_SWEEP:-0} == 1 ]]; then
  sweep_dirs=()
  for h in "${harnesses[@]}"; do
    case $h in fuzz_zip | fuzz_merge | fuzz_merge_valid | fuzz_requirement) sweep_dirs+=("$build/corpus/$h") ;; esac
  done
  if ((${#sweep_dirs[@]})); then
    "$python" "$here/oracle_sweep.py" "${sweep_dirs[@]}" --jobs "$jobs_max" --out "$build/sweep-failures" \
      --json "$build/logs/sweep.json" | tee "$build/logs/sweep.md"
  fi
fi
