#!/usr/bin/env python3
"""wheelmerge benchmark: wheelmerge vs the wheel unpack / wheel pack baseline.

One run does everything on this machine:

1. makes sure the two ~200 MB input wheels exist (bench/make_wheels.py, cached);
2. runs, N times each (default 3, alternating), `wheelmerge merge A B -o DIR` and the
   baseline (bench/baseline_merge.py), each as a child process: wall time measured around
   it, peak RSS and CPU time from GNU time (/usr/bin/time), else from os.wait4; a run
   disturbed by other work on the machine is repeated (--retry-noisy);
3. checks both outputs, untimed: `python -m wheel unpack` (which verifies every member
   against RECORD) plus a content check that every input kernel and shared file is in the
   output byte for byte, so a fast but broken merge cannot pass;
4. prints a table (median wall time, peak RSS, speedup) and PASS/FAIL per target, and
   writes bench/out/results.json.

The page cache cannot be dropped on the machine this was written for, so the figures are
warm-cache: the inputs were just generated or hashed, so they sit in memory.

Usage: python bench/run.py [--reps N] [--wheelmerge PATH] [--baseline-only]
                           [--baseline-copy] [--variant-file GLOB] [--no-verify]
                           [--retry-noisy K] [--wait-idle S] [--nice N]
The binary comes from --wheelmerge, else $WHEELMERGE, else build/wheelmerge.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
import make_wheels  # noqa: E402

TARGET_SPEEDUP = 15.0
TARGET_RSS_MIB = 64.0
NOISY_CORES = 0.25
DEFAULT_VARIANT_GLOB = "fatpkg/kernels/*.fatbin"


# --------------------------------------------------------------------------- measuring


def cpu_busy_s() -> float | None:
    """Seconds of CPU time all CPUs have spent busy since boot (/proc/stat)."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # leave out guest time, already counted in user
    return busy / os.sysconf("SC_CLK_TCK")


def wait_idle(max_wait: float, threshold: float = 0.15) -> float | None:
    """Wait (up to max_wait s) until other processes use < threshold cores; return load."""
    deadline = time.monotonic() + max_wait
    while True:
        b0 = cpu_busy_s()
        time.sleep(1.0)
        b1 = cpu_busy_s()
        if b0 is None or b1 is None:
            return None
        load = b1 - b0
        if load < threshold or time.monotonic() >= deadline:
            return load
        time.sleep(2.0)


GNU_TIME = "/usr/bin/time"


def measure(cmd: list[str], log_prefix: Path, env: dict | None = None) -> dict:
    """Run cmd as a child; wall time, CPU time and peak RSS of that child.

    Peak RSS comes from GNU time (`/usr/bin/time -f %M`) when it is installed. Taking
    ru_maxrss straight from os.wait4 on a child of this Python process overstates small
    figures: the child is (v)forked from this process, and Linux carries the parent's RSS
    high-water mark into the child's ru_maxrss across exec (/bin/true measures ~14 MiB that
    way, ~1 MiB under GNU time). So os.wait4 is the fallback only, and then the figure has
    this process's RSS as its floor. Either way the figure is the child's peak, or that of its
    largest waited-for descendant (the baseline runs `python -m wheel` children one at a
    time): one process's peak, not the sum over a process tree.
    """
    out_path = log_prefix.with_suffix(".stdout")
    err_path = log_prefix.with_suffix(".stderr")
    time_path = log_prefix.with_suffix(".time")
    use_time = os.access(GNU_TIME, os.X_OK)
    full = ([GNU_TIME, "-o", str(time_path), "-f", "%M %U %S %e"] + cmd) if use_time else cmd
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        b0 = cpu_busy_s()
        t0 = time.perf_counter()
        p = subprocess.Popen(full, stdout=out, stderr=err, env=env)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        b1 = cpu_busy_s()
    p.returncode = os.waitstatus_to_exitcode(status)
    maxrss_kib, user, sys_ = ru.ru_maxrss, ru.ru_utime, ru.ru_stime
    method = "os.wait4 (floor: this driver's RSS)"
    if use_time:
        try:
            last = time_path.read_text().strip().splitlines()[-1].split()
            maxrss_kib, user, sys_ = int(last[0]), float(last[1]), float(last[2])
            method = "GNU time %M"
        except (OSError, IndexError, ValueError):
            pass
    own = ru.ru_utime + ru.ru_stime
    # CPU the rest of the machine used meanwhile, in cores (a shared machine's noise).
    other = None if b0 is None or b1 is None else max(0.0, (b1 - b0 - own) / wall)
    return {
        "rc": p.returncode,
        "wall_s": wall,
        "maxrss_mib": maxrss_kib / 1024.0,
        "maxrss_wait4_mib": ru.ru_maxrss / 1024.0,
        "rss_method": method,
        "user_s": user,
        "sys_s": sys_,
        "other_load_cores": other,
        "stdout": out_path.read_text(errors="replace"),
        "stderr": err_path.read_text(errors="replace"),
    }


def clean_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)


# --------------------------------------------------------------------------- verifying


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return _b64(h.digest())


def input_records(wheel: Path) -> list[tuple[str, str, int]]:
    with zipfile.ZipFile(wheel) as zf:
        (record,) = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        rows = []
        for line in zf.read(record).decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            if digest:
                rows.append((path, digest.split("=", 1)[1], int(size)))
        return rows


def verify(wheel: Path, inputs: list[Path], python: str, kind: str) -> dict:
    """Untimed correctness check of one merged wheel."""
    res: dict = {"wheel": str(wheel), "size_bytes": wheel.stat().st_size, "checks": {}}
    checks = res["checks"]
    tmp = Path(tempfile.mkdtemp(prefix=f"verify-{kind}-", dir=OUT / "tmp"))
    try:
        p = subprocess.run([python, "-m", "wheel", "unpack", str(wheel), "--dest", str(tmp)],
                           capture_output=True, text=True)
        checks["wheel unpack (RECORD hashes)"] = p.returncode == 0
        if p.returncode != 0:
            res["unpack_error"] = (p.stdout + p.stderr)[-4000:]
            res["ok"] = False
            return res
        (tree,) = [d for d in tmp.iterdir() if d.is_dir()]
        files = {str(f.relative_to(tree)).replace(os.sep, "/"): f
                 for f in tree.rglob("*") if f.is_file()}
        res["members"] = len(files)
        res["uncompressed_bytes"] = sum(f.stat().st_size for f in files.values())
        hashes: dict[str, list[str]] = {}
        for name, f in files.items():
            hashes.setdefault(sha256_file(f), []).append(name)
        missing = []
        for w in inputs:
            for path, digest, size in input_records(w):
                if ".dist-info/" in path or path == "fatpkg/__init__.py":
                    continue  # metadata is rewritten; __init__.py may get a loader line
                if digest not in hashes:
                    missing.append(f"{w.name}: {path}")
        checks["every input member present byte for byte"] = not missing
        if missing:
            res["missing"] = missing
        checks["fatpkg/__init__.py present"] = "fatpkg/__init__.py" in files
        dist_info = [n for n in files if n.endswith(".dist-info/WHEEL")]
        checks["one .dist-info with WHEEL and METADATA"] = (
            len(dist_info) == 1
            and dist_info[0].replace("/WHEEL", "/METADATA") in files)
        checks["file name has no .cuNN suffix"] = not re.search(r"\.cu\d+\.whl$", wheel.name)
        if dist_info:
            meta = files[dist_info[0].replace("/WHEEL", "/METADATA")]
            if meta.exists():
                res["requires_dist"] = [ln.split(":", 1)[1].strip()
                                        for ln in meta.read_text().splitlines()
                                        if ln.startswith("Requires-Dist:")]
        if kind == "wheelmerge":
            checks["fatpkg/_wheelmerge.py present"] = "fatpkg/_wheelmerge.py" in files
            # Informational: does the merged package import and pick each variant?
            imports = {}
            for major in ("12", "13"):
                env = dict(os.environ, PYTHONPATH=str(tree), WHEELMERGE_CUDA_MAJOR=major)
                q = subprocess.run([python, "-c", "import fatpkg, sys; print(fatpkg.__file__)"],
                                   capture_output=True, text=True, env=env, cwd=str(OUT))
                imports[f"cu{major}"] = ("ok" if q.returncode == 0
                                         else (q.stderr.strip().splitlines() or ["?"])[-1])
            res["import_smoke_test (informational)"] = imports
        res["ok"] = all(checks.values())
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------- machine


def machine_info(python: str, wheelmerge: Path | None) -> dict:
    info: dict = {
        "nproc": os.cpu_count(),
        "nproc_affinity": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "python_runner": sys.version.split()[0],
        "zlib_python": zlib.ZLIB_RUNTIME_VERSION,
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["mem_total_gib"] = round(int(line.split()[1]) / 2**20, 1)
        flags = next((ln for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("flags")), "")
        info["cpu_flags_of_note"] = [f for f in ("sha_ni", "avx2", "avx512f", "pclmulqdq")
                                     if f" {f}" in flags]
    except OSError:
        pass
    q = subprocess.run([python, "-c",
                        "import sys, zlib, wheel; print(sys.version.split()[0], "
                        "zlib.ZLIB_RUNTIME_VERSION, wheel.__version__)"],
                       capture_output=True, text=True)
    if q.returncode == 0:
        v = q.stdout.split()
        info["python_baseline"], info["zlib_baseline"], info["wheel_version"] = v
    if wheelmerge and wheelmerge.exists():
        q = subprocess.run([str(wheelmerge), "--version"], capture_output=True, text=True)
        info["wheelmerge_version"] = (q.stdout + q.stderr).strip()[:200]
        info["wheelmerge_binary"] = {
            "path": str(wheelmerge),
            "sha256": hashlib.sha256(wheelmerge.read_bytes()).hexdigest(),
            "mtime_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                       time.gmtime(wheelmerge.stat().st_mtime))}
        q = subprocess.run(["ldd", str(wheelmerge)], capture_output=True, text=True)
        info["wheelmerge_libs"] = sorted(
            ln.split()[0] for ln in q.stdout.splitlines()
            if re.search(r"lib(z|zip|crypto|ssl|deflate|isal|zstd)\b", ln))
    q = subprocess.run(["findmnt", "-no", "FSTYPE,SOURCE", "-T", str(OUT)],
                       capture_output=True, text=True)
    if q.returncode == 0:
        info["out_filesystem"] = q.stdout.strip()
    return info


# --------------------------------------------------------------------------- main


def noise(r: dict) -> str:
    o = r.get("other_load_cores")
    if o is None:
        return ""
    return f", other load {o:.2f} cores" + (" (NOISY)" if o > NOISY_CORES else "")


def summarize(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["rc"] == 0]
    if not ok:
        return {"ok": False}
    return {
        "ok": len(ok) == len(runs),
        "median_wall_s": statistics.median(r["wall_s"] for r in ok),
        "min_wall_s": min(r["wall_s"] for r in ok),
        "max_wall_s": max(r["wall_s"] for r in ok),
        "peak_rss_mib": max(r["maxrss_mib"] for r in ok),
        "median_cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in ok),
        "max_other_load_cores": max((r.get("other_load_cores") or 0.0) for r in ok),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description="wheelmerge vs wheel unpack/pack benchmark")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--wheelmerge", type=Path,
                    default=Path(os.environ.get("WHEELMERGE", ROOT / "build" / "wheelmerge")))
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"),
                    help="interpreter with `wheel` installed (baseline and checks)")
    ap.add_argument("--baseline-only", action="store_true")
    ap.add_argument("--baseline-copy", action="store_true",
                    help="baseline copies trees (shutil.copytree) like NVIDIA's script")
    ap.add_argument("--variant-file", action="append",
                    help=f"passed to wheelmerge (default {DEFAULT_VARIANT_GLOB!r})")
    ap.add_argument("--no-verify", action="store_true", help="skip the output checks")
    ap.add_argument("--retry-noisy", type=int, default=2, metavar="K",
                    help="repeat a timed run up to K times when other processes used more "
                         f"than {NOISY_CORES} cores during it (default 2); the noisy attempts "
                         "are kept in results.json; the least disturbed attempt counts")
    ap.add_argument("--wait-idle", type=float, default=60.0, metavar="S",
                    help="before each timed run, wait up to S seconds for the machine to go "
                         "idle (other processes < 0.15 cores); 0 disables (default 60)")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the benchmark (and so both timed commands) at this nice value; "
                         "a negative one (root only) shields the runs from other work on a "
                         "shared machine")
    args = ap.parse_args()
    if args.nice:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    variant_globs = args.variant_file or [DEFAULT_VARIANT_GLOB]

    OUT.mkdir(exist_ok=True)
    (OUT / "tmp").mkdir(exist_ok=True)
    logs = OUT / "logs"
    clean_dir(logs)
    t_gen = time.perf_counter()
    inputs = make_wheels.ensure()
    t_gen = time.perf_counter() - t_gen

    wm = args.wheelmerge.resolve()
    run_wm = not args.baseline_only
    if run_wm and not (wm.is_file() and os.access(wm, os.X_OK)):
        print(f"run: wheelmerge binary not found at {wm} (set WHEELMERGE or build it); "
              "use --baseline-only to time the baseline alone", file=sys.stderr)
        return 2

    input_info = []
    for w in inputs:
        with zipfile.ZipFile(w) as zf:
            usize = sum(i.file_size for i in zf.infolist())
        input_info.append({"name": w.name, "bytes": w.stat().st_size,
                           "uncompressed_bytes": usize,
                           "ratio": round(usize / w.stat().st_size, 2)})

    out_wm = OUT / "merged" / "wheelmerge"
    out_bl = OUT / "merged" / "baseline"
    wm_cmd = [str(wm), "merge", *map(str, inputs), "-o", str(out_wm), "--json"]
    for g in variant_globs:
        wm_cmd += ["--variant-file", g]
    bl_cmd = [args.python, str(HERE / "baseline_merge.py"), *map(str, inputs),
              "-o", str(out_bl), "--package", "fatpkg", "--tmpdir", str(OUT / "tmp")]
    if args.baseline_copy:
        bl_cmd.append("--copy")

    # Machine and binary, taken before the runs (the binary may be rebuilt meanwhile).
    machine = machine_info(args.python, wm if run_wm else None)
    names = ", ".join("%s (%.0f MB)" % (i["name"], i["bytes"] / 1e6) for i in input_info)
    print(f"run: inputs {names}", file=sys.stderr)

    def timed(which: str, rep: int, attempt: int) -> dict:
        idle_load = wait_idle(args.wait_idle) if args.wait_idle > 0 else None
        tag = f"{rep}" + (f".{attempt}" if attempt else "")
        if which == "wm":
            clean_dir(out_wm)
            r = measure(wm_cmd, logs / f"wheelmerge-{tag}")
        else:
            clean_dir(out_bl)
            tfile = logs / f"baseline-{tag}.timings.json"
            r = measure(bl_cmd + ["--timings", str(tfile)], logs / f"baseline-{tag}")
            if tfile.exists():
                r["phases"] = json.loads(tfile.read_text())
        r["rep"], r["attempt"], r["load_before_cores"] = rep, attempt, idle_load
        r["noisy"] = (r.get("other_load_cores") or 0.0) > NOISY_CORES
        ph = r.get("phases", {})
        print(f"run: rep {rep + 1}/{args.reps}"
              + (f" (retry {attempt})" if attempt else "")
              + f" {'wheelmerge' if which == 'wm' else 'baseline'}: rc {r['rc']}, "
              f"{r['wall_s']:.2f} s, {r['maxrss_mib']:.1f} MiB"
              + (f" (unpack {ph['unpack_total']:.1f} s, pack {ph['pack']:.1f} s)" if ph else "")
              + noise(r), file=sys.stderr)
        return r

    wm_runs: list[dict] = []
    bl_runs: list[dict] = []
    discarded: list[dict] = []
    wm_failed = False
    for rep in range(args.reps):
        order = ("wm", "bl") if rep % 2 == 0 else ("bl", "wm")
        for which in order:
            if which == "wm" and not (run_wm and not wm_failed):
                continue
            attempts = []
            while True:
                r = timed(which, rep, len(attempts))
                attempts.append(r)
                if r["rc"] != 0 or not r["noisy"] or len(attempts) > args.retry_noisy:
                    break
            if r["rc"] == 0:  # count the least disturbed attempt
                r = min(attempts, key=lambda a: a.get("other_load_cores") or 0.0)
            for a in attempts:
                if a is not r:
                    a["discarded"] = True
                    discarded.append({**a, "which": which})
            (wm_runs if which == "wm" else bl_runs).append(r)
            if r["rc"] != 0 and which == "wm":
                wm_failed = True
                print(f"run: wheelmerge failed (exit {r['rc']}); command:\n  "
                      + " ".join(wm_cmd) + "\n--- stdout ---\n" + r["stdout"][-4000:]
                      + "\n--- stderr ---\n" + r["stderr"][-4000:], file=sys.stderr)
            elif r["rc"] != 0:
                print("run: baseline failed:\n" + r["stderr"][-4000:], file=sys.stderr)

    wm_sum = summarize(wm_runs) if run_wm else {"ok": False, "skipped": True}
    bl_sum = summarize(bl_runs)
    if bl_runs and all("phases" in r for r in bl_runs):
        bl_sum["median_phases_s"] = {
            k: statistics.median(r["phases"][k] for r in bl_runs)
            for k in ("unpack_total", "rearrange", "pack", "cleanup")}

    verification = {}
    if not args.no_verify:
        for kind, d, s in (("wheelmerge", out_wm, wm_sum), ("baseline", out_bl, bl_sum)):
            outs = sorted(d.glob("*.whl")) if d.is_dir() else []
            if not s.get("ok"):
                continue
            if len(outs) != 1:
                verification[kind] = {"ok": False, "error": f"expected one wheel in {d}, "
                                      f"found {[o.name for o in outs]}"}
                continue
            print(f"run: verifying {kind} output {outs[0].name} ...", file=sys.stderr)
            verification[kind] = verify(outs[0], inputs, args.python, kind)

    # ---- report
    def fmt(s: dict, key: str, f: str) -> str:
        return format(s[key], f) if key in s else "-"

    speedup = None
    if wm_sum.get("ok") and bl_sum.get("ok"):
        speedup = bl_sum["median_wall_s"] / wm_sum["median_wall_s"]
    rows = [("wheelmerge", wm_sum, verification.get("wheelmerge")),
            ("baseline (wheel unpack+pack)", bl_sum, verification.get("baseline"))]
    print()
    print(f"{'':30} {'median s':>9} {'min s':>7} {'max s':>7} {'CPU s':>7} {'peak RSS MiB':>13}"
          f"  {'output':>10}  verified")
    for label, s, v in rows:
        size = f"{v['size_bytes'] / 1e6:.1f} MB" if v and "size_bytes" in v else "-"
        ver = "-" if v is None else ("yes" if v.get("ok") else "NO")
        if s.get("skipped"):
            print(f"{label:30} (skipped)")
            continue
        if not s.get("ok") and "median_wall_s" not in s:
            print(f"{label:30} FAILED")
            continue
        print(f"{label:30} {fmt(s, 'median_wall_s', '9.2f')} {fmt(s, 'min_wall_s', '7.2f')} "
              f"{fmt(s, 'max_wall_s', '7.2f')} {fmt(s, 'median_cpu_s', '7.2f')} "
              f"{fmt(s, 'peak_rss_mib', '13.1f')}  {size:>10}  {ver}")
    if "median_phases_s" in bl_sum:
        ph = bl_sum["median_phases_s"]
        print(f"  baseline phases (median s): unpack (both) {ph['unpack_total']:.2f}, "
              f"rearrange {ph['rearrange']:.2f}, pack {ph['pack']:.2f}, cleanup {ph['cleanup']:.2f}")
    cpu_ratio = None
    if speedup is not None:
        print(f"  speedup (baseline median / wheelmerge median): {speedup:.1f}x")
        if wm_sum.get("median_cpu_s"):
            cpu_ratio = bl_sum["median_cpu_s"] / wm_sum["median_cpu_s"]
            print(f"  CPU-time ratio (baseline / wheelmerge, informational): {cpu_ratio:.1f}x; "
                  f"wheelmerge kept {wm_sum['median_cpu_s'] / wm_sum['median_wall_s']:.2f} "
                  f"of {os.cpu_count()} cores busy")
    print(f"  warm page cache ({args.reps} reps, alternating order; caches not dropped)")
    if discarded:
        print(f"  {len(discarded)} noisy attempt(s) repeated and left out: "
              + ", ".join(f"{d['which']} {d['wall_s']:.2f} s ({d['other_load_cores']:.2f} cores)"
                          for d in discarded))
    worst = max([s.get("max_other_load_cores", 0.0) for s in (wm_sum, bl_sum)] or [0.0])
    if worst > NOISY_CORES:
        print(f"  WARNING: other processes used up to {worst:.2f} cores during timed runs; "
              "wall times are inflated (CPU s is the steadier figure)")

    targets = []
    if run_wm:
        wm_verified = args.no_verify or verification.get("wheelmerge", {}).get("ok", False)
        targets.append({
            "target": f"speedup >= {TARGET_SPEEDUP:g}x",
            "value": None if speedup is None else round(speedup, 2),
            "pass": speedup is not None and speedup >= TARGET_SPEEDUP and wm_verified})
        rss = wm_sum.get("peak_rss_mib")
        targets.append({
            "target": f"wheelmerge peak RSS < {TARGET_RSS_MIB:g} MiB",
            "value": None if rss is None else round(rss, 1),
            "pass": rss is not None and rss < TARGET_RSS_MIB and bool(wm_sum.get("ok"))})
        for t in targets:
            print(f"  {'PASS' if t['pass'] else 'FAIL'}  {t['target']}  (measured: {t['value']})")
        if not wm_verified:
            print("  (wheelmerge output not verified: speedup target cannot pass)")
    for kind, v in verification.items():
        if not v.get("ok"):
            print(f"  verification of {kind} output FAILED: "
                  + json.dumps({k: v[k] for k in v if k in ("checks", "error", "unpack_error",
                                                            "missing")})[:2000])

    if run_wm and wm.exists():
        now = hashlib.sha256(wm.read_bytes()).hexdigest()
        if now != machine.get("wheelmerge_binary", {}).get("sha256"):
            machine["wheelmerge_binary_changed_during_run"] = now
            print(f"  WARNING: {wm} changed during the benchmark; the figures may mix builds")

    def strip(runs):  # keep logs short in the JSON
        return [{**{k: v for k, v in r.items() if k not in ("stdout", "stderr")},
                 "stdout_tail": r["stdout"][-2000:], "stderr_tail": r["stderr"][-2000:]}
                for r in runs]

    results = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine,
        "cache": "warm (page cache not dropped)",
        "rss_method": (wm_runs or bl_runs or [{}])[0].get("rss_method"),
        "rss_floor_mib (/bin/true measured the same way)": round(
            measure(["/bin/true"], logs / "floor")["maxrss_mib"], 2),
        "reps": args.reps,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "inputs": input_info,
        "input_generation_or_check_s": round(t_gen, 2),
        "commands": {"wheelmerge": wm_cmd if run_wm else None, "baseline": bl_cmd},
        "wheelmerge": {**wm_sum, "runs": strip(wm_runs)},
        "baseline": {**bl_sum, "runs": strip(bl_runs)},
        "discarded_noisy_attempts": strip(discarded),
        "speedup": speedup,
        "cpu_time_ratio": cpu_ratio,
        "verification": verification,
        "targets": targets,
    }
    (OUT / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"  results: {OUT / 'results.json'}")
    shutil.rmtree(OUT / "tmp", ignore_errors=True)
    if args.baseline_only:
        return 0 if bl_sum.get("ok") else 1
    return 0 if targets and all(t["pass"] for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
