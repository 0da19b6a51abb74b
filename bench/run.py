#!/usr/bin/env python3
"""wheelmerge benchmark: wheelmerge against the wheel unpack / wheel pack baseline and a copy floor.

One run measures, on this machine, these parts (each figure a ratio against baselines measured
in the same run):

- **big**: the two ~206 MB synthetic wheels of bench/make_wheels.py. wheelmerge, the baseline
  (bench/baseline_merge.py: `wheel unpack` + rearrange + `wheel pack`, NVIDIA's approach) and
  the copy floor (`cp` of both inputs into the output directory, then `sync`, as one child
  process). Targets: speedup (baseline / wheelmerge) >= 25x, wheelmerge / copy floor <= 2.0x,
  wheelmerge peak RSS <= 64 MiB.
- **many**: pairs of wheels of many small members (bench/make_many.py): 70,000 modules per wheel,
  50,000, and a 10-module pair whose peak RSS is the base. Targets: RSS per entry
  ((peak RSS at 70,000 - base) / entries of the merged wheel) <= 512 bytes, peak RSS at 50,000
  <= 64 MiB. The baseline runs once on the 70,000 pair (--skip-many-baseline leaves it out).
- **real**: cuda-core 1.2.2 from the package index (pinned in tests/integration/support/real_wheels.py),
  split back into its cu12 / cu13 builds (bench/make_real.py). wheelmerge, the baseline and
  the copy floor; figures only, and the target that wheelmerge's output passes the checks. When
  the wheel cannot be fetched (no network, nothing cached), the part is skipped with a message.
- **static** (only when named in --only): the static musl executable of scripts/static/build.sh
  (--static PATH, else the path build.sh prints) against the native build (--wheelmerge), on
  big's inputs and the many part's main pair, alternately, with SOURCE_DATE_EPOCH fixed.
  Targets per input: static median CPU time (user + sys) / native median CPU time <= 1.10, and
  every run of both wrote the same bytes (sha256 of the merged wheel).
- **import**: the loader's import time (bench/import_time.py).

Each timed command runs as a child process: wall time measured around it, peak RSS and CPU
time from GNU time (/usr/bin/time), else from os.wait4; `sync` before each run (untimed), then
a wait for the machine to go idle; a run disturbed by other work is repeated (--retry-noisy).
Every output is checked, untimed: `python -m wheel unpack` (which verifies every member against
RECORD) plus a content check that every input member is in the output byte for byte, so a fast
but broken merge cannot pass. The results: a Markdown summary on stdout (also
bench/out/summary.md) and bench/out/results.json. Exit status 0 when every target of the parts
run passes.

The page cache cannot be dropped on the machine this was written for, so the figures are
warm-cache: the inputs were just generated or hashed, so they sit in memory.

Usage: python bench/run.py [--reps N] [--only big,many,real,import,static] [--wheelmerge PATH]
                           [--static PATH]
                           [--baseline-only] [--baseline-copy] [--variant-file GLOB]
                           [--skip-many-baseline] [--many-entries N] [--many-rss-entries N]
                           [--many-base-entries N] [--no-verify] [--retry-noisy K]
                           [--wait-idle S] [--nice N] [--python PY]
The binary comes from --wheelmerge, else $WHEELMERGE, else build/wheelmerge.
"""
from __future__ import annotations

import argparse
import dataclasses
import filecmp
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
import make_many  # noqa: E402
import make_wheels  # noqa: E402
sys.path.insert(0, str(ROOT / "tests" / "integration" / "support"))
import wheelgen as wg  # noqa: E402  (the tests' RECORD helpers)

PARTS = ("big", "many", "real", "import", "static")
DEFAULT_PARTS = ("big", "many", "real", "import")  # static: only when named in --only
TARGET_SPEEDUP = 25.0          # big: baseline median / wheelmerge median, at least
TARGET_CP_RATIO = 2.0          # big: wheelmerge median / copy-floor median, at most
TARGET_RSS_MIB = 64.0          # big: wheelmerge peak RSS, at most
TARGET_RSS_PER_ENTRY = 512.0   # many: bytes per entry of the merged wheel, at most
TARGET_MANY_RSS_MIB = 64.0     # many: peak RSS on the --many-rss-entries pair, at most
NOISY_CORES = 0.25
MIN_NOISE_WALL_S = 0.5         # shorter runs are never judged noisy (tick resolution)
REAL_MIN_REPS = 5              # the real part's runs are short: at least this many reps
DEFAULT_VARIANT_GLOB = "fatpkg/kernels/*.fatbin"
MIB = 1 << 20
STATIC_TARGET = "x86_64-linux-musl"  # static: scripts/static/build.sh's target
STATIC_SOURCE_DATE_EPOCH = "1700000000"  # static: both executables write this timestamp
TARGET_STATIC_CPU_RATIO = 1.10  # static: static median CPU / native median CPU, at most


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


def loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return None


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
    time; the copy floor runs cp, then sync): one process's peak, not the sum over a tree.
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


@dataclasses.dataclass
class Cmd:
    """One timed command: `key` names it in results.json, `out_dir` is emptied before each run."""

    key: str
    label: str
    argv: list[str]
    out_dir: Path
    timings: bool = False  # the baseline: pass --timings FILE and keep its phase timings
    env: dict | None = None  # the child's environment (None: this process's)
    hash_output: bool = False  # record the sha256 of each run's output wheel(s), untimed


class Timer:
    """Runs commands N times each, alternating their order, repeating noisy attempts."""

    def __init__(self, args, logs: Path):
        self.args, self.logs = args, logs
        self.discarded: list[dict] = []

    def one(self, part: str, c: Cmd, rep: int, reps: int, attempt: int) -> dict:
        clean_dir(c.out_dir)
        os.sync()  # earlier runs' dirty pages are not written back during this one
        idle_load = wait_idle(self.args.wait_idle) if self.args.wait_idle > 0 else None
        os.sync()  # again: what other processes wrote while we waited (the copy floor's
        #            `sync` would write it back on the floor's time)
        tag = f"{part}-{c.key}-{rep}" + (f".{attempt}" if attempt else "")
        argv = list(c.argv)
        tfile = self.logs / f"{tag}.timings.json"
        if c.timings:
            argv += ["--timings", str(tfile)]
        r = measure(argv, self.logs / tag, env=c.env)
        if c.hash_output and r["rc"] == 0:  # untimed: after the child has exited
            r["output_sha256"] = {w.name: file_sha256(w) for w in sorted(c.out_dir.glob("*.whl"))}
        if c.timings and tfile.exists():
            r["phases"] = json.loads(tfile.read_text())
        r["rep"], r["attempt"], r["load_before_cores"] = rep, attempt, idle_load
        # /proc/stat counts in clock ticks (10 ms): on a run much shorter than a second one
        # tick of anything else reads as a large load, so only longer runs are judged noisy.
        r["noisy"] = ((r.get("other_load_cores") or 0.0) > NOISY_CORES
                      and r["wall_s"] >= MIN_NOISE_WALL_S)
        ph = r.get("phases", {})
        print(f"run: [{part}] rep {rep + 1}/{reps}" + (f" (retry {attempt})" if attempt else "")
              + f" {c.label}: rc {r['rc']}, {r['wall_s']:.2f} s (CPU {r['user_s'] + r['sys_s']:.2f} s),"
              + f" {r['maxrss_mib']:.1f} MiB"
              + (f" (unpack {ph['unpack_total']:.1f} s, pack {ph['pack']:.1f} s)" if ph else "")
              + noise(r), file=sys.stderr)
        return r

    def run(self, part: str, cmds: list[Cmd], reps: int,
            retry_noisy: int | None = None) -> dict[str, list[dict]]:
        """retry_noisy: how many times a noisy attempt is repeated (default --retry-noisy)."""
        retries = self.args.retry_noisy if retry_noisy is None else retry_noisy
        runs: dict[str, list[dict]] = {c.key: [] for c in cmds}
        failed: set[str] = set()
        for rep in range(reps):
            k = rep % len(cmds)
            for c in cmds[k:] + cmds[:k]:
                if c.key in failed:
                    continue
                attempts: list[dict] = []
                while True:
                    r = self.one(part, c, rep, reps, len(attempts))
                    attempts.append(r)
                    if r["rc"] != 0 or not r["noisy"] or len(attempts) > retries:
                        break
                if r["rc"] == 0:  # count the least disturbed attempt
                    r = min(attempts, key=lambda a: a.get("other_load_cores") or 0.0)
                for a in attempts:
                    if a is not r:
                        a["discarded"] = True
                        self.discarded.append({**a, "part": part, "which": c.key})
                runs[c.key].append(r)
                if r["rc"] != 0:
                    failed.add(c.key)
                    print(f"run: [{part}] {c.label} failed (exit {r['rc']}); command:\n  "
                          + " ".join(c.argv) + "\n--- stdout ---\n" + r["stdout"][-4000:]
                          + "\n--- stderr ---\n" + r["stderr"][-4000:], file=sys.stderr)
        return runs


def noise(r: dict) -> str:
    o = r.get("other_load_cores")
    if o is None:
        return ""
    return f", other load {o:.2f} cores" + (" (NOISY)" if r.get("noisy") else "")


def summarize(runs: list[dict]) -> dict:
    ok = [r for r in runs if r["rc"] == 0]
    if not ok:
        return {"ok": False, "runs_wall_s": [round(r["wall_s"], 3) for r in runs]}
    return {
        "ok": len(ok) == len(runs),
        "median_wall_s": statistics.median(r["wall_s"] for r in ok),
        "min_wall_s": min(r["wall_s"] for r in ok),
        "max_wall_s": max(r["wall_s"] for r in ok),
        "peak_rss_mib": max(r["maxrss_mib"] for r in ok),
        "median_cpu_s": statistics.median(r["user_s"] + r["sys_s"] for r in ok),
        "max_other_load_cores": max((r.get("other_load_cores") or 0.0) for r in ok),
        "runs_wall_s": [round(r["wall_s"], 3) for r in runs],
        "runs_other_load_cores": [None if r.get("other_load_cores") is None
                                  else round(r["other_load_cores"], 2) for r in runs],
    }


def strip(runs: list[dict]) -> list[dict]:  # keep logs short in the JSON
    return [{**{k: v for k, v in r.items() if k not in ("stdout", "stderr")},
             "stdout_tail": r["stdout"][-2000:], "stderr_tail": r["stderr"][-2000:]}
            for r in runs]


# --------------------------------------------------------------------------- verifying


def sha256_of(path: Path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h


def record_hash_file(path: Path) -> str:
    """The RECORD hash (sha256) of a file's bytes."""
    return wg.record_digest(sha256_of(path).digest())


def file_sha256(path: Path) -> str:
    return sha256_of(path).hexdigest()


def input_records(wheel: Path) -> list[tuple[str, str, int]]:
    with zipfile.ZipFile(wheel) as zf:
        (record,) = [n for n in zf.namelist() if n.endswith(".dist-info/RECORD")]
        rows = []
        for line in zf.read(record).decode().splitlines():
            path, digest, size = line.rsplit(",", 2)
            if digest:
                rows.append((path, digest, int(size)))
        return rows


def scratch_root(unpacked_bytes: int) -> Path:
    """/dev/shm when it is a roomy tmpfs (tens of thousands of small files are slow to create
    and delete on a disk mounted with online discard), else bench/out/tmp."""
    shm = Path("/dev/shm")
    try:
        s = os.statvfs(shm)
        if os.access(shm, os.W_OK) and s.f_bavail * s.f_frsize > 4 * unpacked_bytes + (1 << 30):
            return shm
    except OSError:
        pass
    return OUT / "tmp"


@dataclasses.dataclass
class Spec:
    """What a part's merged wheels must hold."""

    package: str            # top-level package directory (the baseline's --package)
    loader_init: str        # __init__.py to which wheelmerge may add its loader line
    loader: str             # the loader module wheelmerge writes
    import_name: str | None  # import smoke test (informational), None to skip


def verify(wheel: Path, inputs: list[Path], python: str, kind: str, spec: Spec) -> dict:
    """Untimed correctness check of one merged wheel."""
    res: dict = {"wheel": str(wheel), "size_bytes": wheel.stat().st_size, "checks": {}}
    checks = res["checks"]
    with zipfile.ZipFile(wheel) as zf:
        infos = zf.infolist()
    res["entries"] = len(infos)
    tmp = Path(tempfile.mkdtemp(prefix=f"wheelmerge-bench-verify-{kind}-",
                                dir=scratch_root(sum(i.file_size for i in infos))))
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
        hashes: set[str] = {record_hash_file(f) for f in files.values()}
        missing = []
        for w in inputs:
            for path, digest, size in input_records(w):
                if ".dist-info/" in path or path == spec.loader_init:
                    continue  # metadata is rewritten; __init__.py may get a loader line
                if digest not in hashes:
                    missing.append(f"{w.name}: {path}")
        checks["every input member present byte for byte"] = not missing
        if missing:
            res["missing"] = missing[:50]
            res["missing_count"] = len(missing)
        checks[f"{spec.loader_init} present"] = spec.loader_init in files
        dist_info = [n for n in files if n.endswith(".dist-info/WHEEL")]
        checks["one .dist-info with WHEEL and METADATA"] = (
            len(dist_info) == 1
            and dist_info[0].replace("/WHEEL", "/METADATA") in files)
        checks["file name has no .cuNN suffix"] = not re.search(r"\.cu\d+\.whl$", wheel.name)
        if dist_info:
            meta = files.get(dist_info[0].replace("/WHEEL", "/METADATA"))
            if meta is not None:
                res["requires_dist"] = [ln.split(":", 1)[1].strip()
                                        for ln in meta.read_text().splitlines()
                                        if ln.startswith("Requires-Dist:")]
        if kind == "wheelmerge":
            checks[f"{spec.loader} present"] = spec.loader in files
            if spec.import_name:  # informational: does the merged package import, per variant?
                imports = {}
                for major in ("12", "13"):
                    env = dict(os.environ, PYTHONPATH=str(tree), WHEELMERGE_CUDA_MAJOR=major)
                    q = subprocess.run(
                        [python, "-c", f"import {spec.import_name} as m; "
                                       "print(getattr(m, 'CUDA', 'imported'))"],
                        capture_output=True, text=True, env=env, cwd=str(OUT))
                    imports[f"cu{major}"] = (f"ok: {q.stdout.strip()}" if q.returncode == 0
                                             else (q.stderr.strip().splitlines() or ["?"])[-1])
                res["import_smoke_test (informational)"] = imports
        res["ok"] = all(checks.values())
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def verify_copies(out_dir: Path, inputs: list[Path]) -> dict:
    """The copy floor's output: each input, byte for byte."""
    same = all((out_dir / w.name).is_file() and filecmp.cmp(w, out_dir / w.name, shallow=False)
               for w in inputs)
    return {"ok": same, "checks": {"copies identical to the inputs": same},
            "size_bytes": sum((out_dir / w.name).stat().st_size for w in inputs
                              if (out_dir / w.name).is_file())}


def verify_outputs(part: str, cmds: list[Cmd], sums: dict, inputs_of: dict[str, list[Path]],
                   python: str, spec: Spec) -> dict:
    res = {}
    for c in cmds:
        if not sums.get(c.key, {}).get("ok"):
            continue
        if c.key.startswith("cp"):
            res[c.key] = verify_copies(c.out_dir, inputs_of[c.key])
            continue
        if c.key == "verify_only":  # writes nothing
            continue
        outs = sorted(c.out_dir.glob("*.whl")) if c.out_dir.is_dir() else []
        if len(outs) != 1:
            res[c.key] = {"ok": False, "error": f"expected one wheel in {c.out_dir}, "
                                                f"found {[o.name for o in outs]}"}
            continue
        kind = "wheelmerge" if c.key.startswith("wheelmerge") else "baseline"
        print(f"run: [{part}] verifying {c.label} output {outs[0].name} ...", file=sys.stderr)
        t0 = time.perf_counter()
        res[c.key] = verify(outs[0], inputs_of[c.key], python, kind, spec)
        res[c.key]["check_s"] = round(time.perf_counter() - t0, 2)
    return res


# --------------------------------------------------------------------------- machine


def machine_info(python: str, wheelmerge: Path | None) -> dict:
    info: dict = {
        "nproc": os.cpu_count(),
        "nproc_affinity": len(os.sched_getaffinity(0)),
        "platform": platform.platform(),
        "python_runner": sys.version.split()[0],
        "zlib_python": zlib.ZLIB_RUNTIME_VERSION,
        "loadavg_at_start": loadavg(),
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
    q = subprocess.run(["findmnt", "-no", "FSTYPE,SOURCE,OPTIONS", "-T", str(OUT)],
                       capture_output=True, text=True)
    if q.returncode == 0:
        info["out_filesystem"] = q.stdout.strip()
    return info


def describe_inputs(paths: list[Path]) -> list[dict]:
    res = []
    for w in paths:
        with zipfile.ZipFile(w) as zf:
            infos = zf.infolist()
        usize = sum(i.file_size for i in infos)
        res.append({"name": w.name, "bytes": w.stat().st_size, "uncompressed_bytes": usize,
                    "entries": len(infos), "ratio": round(usize / max(1, w.stat().st_size), 2)})
    return res


# --------------------------------------------------------------------------- parts


def target(part: str, name: str, value, passed: bool, unit: str = "") -> dict:
    return {"part": part, "target": name, "value": value, "unit": unit, "pass": bool(passed)}


def ratio(a: dict, b: dict, key: str = "median_wall_s") -> float | None:
    if a.get("ok") and b.get("ok") and a.get(key) and b.get(key):
        return a[key] / b[key]
    return None


def wm_argv(wm: Path, inputs: list[Path], out: Path, globs: list[str]) -> list[str]:
    argv = [str(wm), "merge", *map(str, inputs), "-o", str(out), "--json"]
    for g in globs:
        argv += ["--variant-file", g]
    return argv


def bl_argv(args, inputs: list[Path], out: Path, package: str) -> list[str]:
    argv = [args.python, str(HERE / "baseline_merge.py"), *map(str, inputs), "-o", str(out),
            "--package", package, "--tmpdir", str(OUT / "tmp")]
    if args.baseline_copy:
        argv.append("--copy")
    return argv


def cp_argv(inputs: list[Path], out: Path, sync: bool = True) -> list[str]:
    script = 'cp "$@"' + (" && sync" if sync else "")
    return ["sh", "-c", script, "sh", *map(str, inputs), str(out) + "/"]


def merged_dir(part: str, key: str) -> Path:
    return OUT / "merged" / part / key


def three_way(part: str, args, wm: Path, inputs: list[Path], globs: list[str], package: str,
              extra_cp_nosync: bool = False) -> list[Cmd]:
    cmds = []
    if not args.baseline_only:
        cmds.append(Cmd("wheelmerge", "wheelmerge", wm_argv(wm, inputs, merged_dir(part, "wheelmerge"),
                                                            globs), merged_dir(part, "wheelmerge")))
    cmds.append(Cmd("baseline", "baseline (wheel unpack+pack)",
                    bl_argv(args, inputs, merged_dir(part, "baseline"), package),
                    merged_dir(part, "baseline"), timings=True))
    if not args.baseline_only:
        cmds.append(Cmd("cp_floor", "copy floor (cp + sync)",
                        cp_argv(inputs, merged_dir(part, "cp_floor")), merged_dir(part, "cp_floor")))
        if extra_cp_nosync:
            cmds.append(Cmd("cp_nosync", "cp alone (no sync; informational)",
                            cp_argv(inputs, merged_dir(part, "cp_nosync"), sync=False),
                            merged_dir(part, "cp_nosync")))
            # What verifying the inputs alone costs (every member inflated, CRC'd and hashed,
            # nothing written): the work a merge that checks its inputs cannot avoid.
            cmds.append(Cmd("verify_only", "wheelmerge verify of both inputs (informational)",
                            [str(wm), "verify", "-q", *map(str, inputs)], merged_dir(part, "verify_only")))
    return cmds


def baseline_phases(runs: list[dict]) -> dict | None:
    if runs and all("phases" in r for r in runs if r["rc"] == 0) and any(r["rc"] == 0 for r in runs):
        ok = [r for r in runs if r["rc"] == 0]
        return {k: statistics.median(r["phases"][k] for r in ok)
                for k in ("unpack_total", "rearrange", "pack", "cleanup")}
    return None


def three_way_figures(part: str, args, cmds, runs: dict, inputs, spec) -> tuple[dict, dict, dict]:
    """Summaries, verification and the ratios of one part's wheelmerge, baseline and copy floor."""
    sums = {k: summarize(v) for k, v in runs.items()}
    if (ph := baseline_phases(runs.get("baseline", []))) is not None:
        sums["baseline"]["median_phases_s"] = ph
    ver = {} if args.no_verify else verify_outputs(part, cmds, sums, {c.key: inputs for c in cmds},
                                                   args.python, spec)
    wm_s, bl_s, cp_s = sums.get("wheelmerge", {}), sums.get("baseline", {}), sums.get("cp_floor", {})
    figures = {
        "speedup (baseline / wheelmerge, median wall)": ratio(bl_s, wm_s),
        "wheelmerge / copy floor (median wall)": ratio(wm_s, cp_s),
        "cpu_time_ratio (baseline / wheelmerge)": ratio(bl_s, wm_s, "median_cpu_s"),
    }
    return sums, ver, figures


def run_part_big(args, timer: Timer, wm: Path) -> dict:
    t0 = time.perf_counter()
    inputs = make_wheels.ensure()
    t_gen = time.perf_counter() - t0
    globs = args.variant_file or [DEFAULT_VARIANT_GLOB]
    cmds = three_way("big", args, wm, inputs, globs, "fatpkg", extra_cp_nosync=True)
    runs = timer.run("big", cmds, args.reps)
    spec = Spec("fatpkg", "fatpkg/__init__.py", "fatpkg/_wheelmerge.py", "fatpkg")
    sums, ver, figures = three_way_figures("big", args, cmds, runs, inputs, spec)
    wm_s, bl_s, cp_s = sums.get("wheelmerge", {}), sums.get("baseline", {}), sums.get("cp_floor", {})
    figures |= {
        "wheelmerge cores busy (median CPU / median wall)": (
            wm_s["median_cpu_s"] / wm_s["median_wall_s"] if wm_s.get("median_wall_s") else None),
        "copy floor share of sync (1 - cp alone / cp + sync)": (
            None if ratio(sums.get("cp_nosync", {}), cp_s) is None
            else 1 - ratio(sums["cp_nosync"], cp_s)),
        # Verifying the inputs is CPU work: on N cores it takes at least its CPU time / N, a
        # floor for any merge that checks what it copies (docs/scale.md, "Where the time goes").
        "verification CPU time of the inputs / cores, s (compute floor)": (
            vf["median_cpu_s"] / len(os.sched_getaffinity(0)) if (vf := sums.get("verify_only", {})).get("median_cpu_s")
            else None),
        "wheelmerge / compute floor (median wall)": (
            wm_s["median_wall_s"] / (vf["median_cpu_s"] / len(os.sched_getaffinity(0)))
            if wm_s.get("median_wall_s") and (vf := sums.get("verify_only", {})).get("median_cpu_s") else None),
        "compute floor / copy floor": (
            (vf["median_cpu_s"] / len(os.sched_getaffinity(0))) / cp_s["median_wall_s"]
            if cp_s.get("median_wall_s") and (vf := sums.get("verify_only", {})).get("median_cpu_s") else None),
    }
    targets = []
    if not args.baseline_only:
        wm_ok = bool(wm_s.get("ok")) and (args.no_verify or ver.get("wheelmerge", {}).get("ok", False))
        sp, cr, rss = (figures["speedup (baseline / wheelmerge, median wall)"],
                       figures["wheelmerge / copy floor (median wall)"], wm_s.get("peak_rss_mib"))
        targets += [
            target("big", f"speedup (baseline / wheelmerge) >= {TARGET_SPEEDUP:g}x",
                   None if sp is None else round(sp, 2), sp is not None and sp >= TARGET_SPEEDUP and wm_ok, "x"),
            target("big", f"wheelmerge / copy floor <= {TARGET_CP_RATIO:g}x",
                   None if cr is None else round(cr, 2), cr is not None and cr <= TARGET_CP_RATIO and wm_ok, "x"),
            target("big", f"wheelmerge peak RSS <= {TARGET_RSS_MIB:g} MiB",
                   None if rss is None else round(rss, 1), rss is not None and rss <= TARGET_RSS_MIB and wm_ok, "MiB"),
        ]
    return {"inputs": describe_inputs(inputs), "input_generation_or_check_s": round(t_gen, 2),
            "commands": {c.key: c.argv for c in cmds},
            "results": {k: {**sums[k], "runs": strip(runs[k])} for k in runs},
            "figures": figures, "verification": ver, "targets": targets}


def run_part_many(args, timer: Timer, wm: Path) -> dict:
    n_main, n_rss, n_base = args.many_entries, args.many_rss_entries, args.many_base_entries
    counts = sorted({n_base, n_rss, n_main})
    t0 = time.perf_counter()
    pairs = make_many.ensure(counts)
    t_gen = time.perf_counter() - t0
    globs = [make_many.VARIANT_GLOB]
    cmds: list[Cmd] = []
    inputs_of: dict[str, list[Path]] = {}
    if not args.baseline_only:
        for n in counts:
            key = f"wheelmerge_{n}"
            cmds.append(Cmd(key, f"wheelmerge {n:,}", wm_argv(wm, pairs[n], merged_dir("many", key),
                                                                 globs), merged_dir("many", key)))
            inputs_of[key] = pairs[n]
        key = f"cp_floor_{n_main}"
        cmds.append(Cmd(key, f"copy floor {n_main:,} (cp + sync)",
                        cp_argv(pairs[n_main], merged_dir("many", key)), merged_dir("many", key)))
        inputs_of[key] = pairs[n_main]
    runs = timer.run("many", cmds, args.reps) if cmds else {}
    bl_cmds = []
    if not args.skip_many_baseline:
        key = f"baseline_{n_main}"
        bl_cmds.append(Cmd(key, f"baseline {n_main:,} (wheel unpack+pack)",
                           bl_argv(args, pairs[n_main], merged_dir("many", key), make_many.NAME),
                           merged_dir("many", key), timings=True))
        inputs_of[key] = pairs[n_main]
        runs.update(timer.run("many", bl_cmds, 1))
    sums = {k: summarize(v) for k, v in runs.items()}
    for c in bl_cmds:
        if (ph := baseline_phases(runs.get(c.key, []))) is not None:
            sums[c.key]["median_phases_s"] = ph
    spec = Spec(make_many.NAME, f"{make_many.NAME}/__init__.py", f"{make_many.NAME}/_wheelmerge.py",
                make_many.NAME)
    ver = {} if args.no_verify else verify_outputs("many", cmds + bl_cmds, sums, inputs_of,
                                                   args.python, spec)

    def entries_of(key: str) -> int | None:
        if key in ver and "entries" in ver[key]:
            return ver[key]["entries"]
        outs = sorted(merged_dir("many", key).glob("*.whl"))
        if len(outs) == 1:
            with zipfile.ZipFile(outs[0]) as zf:
                return len(zf.infolist())
        return None

    figures: dict = {}
    targets = []
    if not args.baseline_only:
        s_main, s_rss, s_base = (sums.get(f"wheelmerge_{n}", {}) for n in (n_main, n_rss, n_base))
        out_entries = entries_of(f"wheelmerge_{n_main}")
        in_entries = sum(i["entries"] for i in describe_inputs(pairs[n_main]))
        per_entry = per_in_entry = None
        if s_main.get("ok") and s_base.get("ok") and out_entries:
            delta = (s_main["peak_rss_mib"] - s_base["peak_rss_mib"]) * MIB
            per_entry, per_in_entry = delta / out_entries, delta / in_entries
        figures = {
            "base peak RSS MiB (pair of %d)" % n_base: s_base.get("peak_rss_mib"),
            "merged entries (%d pair)" % n_main: out_entries,
            "input entries, both wheels (%d pair)" % n_main: in_entries,
            "RSS per merged entry, bytes": per_entry,
            "RSS per input entry (both inputs), bytes (informational)": per_in_entry,
            "merged entries (%d pair)" % n_rss: entries_of(f"wheelmerge_{n_rss}"),
            "wheelmerge / copy floor (%d, median wall; informational)" % n_main:
                ratio(s_main, sums.get(f"cp_floor_{n_main}", {})),
            "speedup (baseline / wheelmerge, %d; informational)" % n_main:
                ratio(sums.get(f"baseline_{n_main}", {}), s_main),
        }
        verified = lambda key: args.no_verify or ver.get(key, {}).get("ok", False)  # noqa: E731
        ok_main = verified(f"wheelmerge_{n_main}") and verified(f"wheelmerge_{n_base}")
        rss50 = s_rss.get("peak_rss_mib")
        targets += [
            target("many", f"RSS per entry ((peak {n_main:,} - peak {n_base:,}) / merged entries) "
                           f"<= {TARGET_RSS_PER_ENTRY:g} B",
                   None if per_entry is None else round(per_entry),
                   per_entry is not None and per_entry <= TARGET_RSS_PER_ENTRY and ok_main, "B"),
            target("many", f"peak RSS on the {n_rss:,}-entry pair <= {TARGET_MANY_RSS_MIB:g} MiB",
                   None if rss50 is None else round(rss50, 1),
                   rss50 is not None and rss50 <= TARGET_MANY_RSS_MIB and verified(f"wheelmerge_{n_rss}"),
                   "MiB"),
        ]
    return {"counts": {"main": n_main, "rss": n_rss, "base": n_base},
            "inputs": {n: describe_inputs(p) for n, p in pairs.items()},
            "input_generation_or_check_s": round(t_gen, 2),
            "commands": {c.key: c.argv for c in cmds + bl_cmds},
            "results": {k: {**sums[k], "runs": strip(runs[k])} for k in runs},
            "figures": figures, "verification": ver, "targets": targets}


def run_part_real(args, timer: Timer, wm: Path) -> dict:
    t0 = time.perf_counter()
    try:
        import make_real  # imports tests/integration/support/real_wheels.py
        inputs = make_real.ensure()
    except Exception as e:  # noqa: BLE001  (no network, nothing cached, or a broken layout)
        msg = f"{type(e).__name__}: {e}"
        print(f"run: [real] SKIPPED: cuda-core could not be fetched or split: {msg}", file=sys.stderr)
        return {"skipped": msg, "targets": []}
    t_gen = time.perf_counter() - t0
    cmds = three_way("real", args, wm, inputs, [], "cuda/core")
    runs = timer.run("real", cmds, max(args.reps, REAL_MIN_REPS))
    spec = Spec("cuda/core", "cuda/core/__init__.py", "cuda/core/_wheelmerge.py", None)
    sums, ver, figures = three_way_figures("real", args, cmds, runs, inputs, spec)
    wm_s = sums.get("wheelmerge", {})
    targets = []
    if not args.baseline_only:
        ok = bool(wm_s.get("ok")) and (args.no_verify or ver.get("wheelmerge", {}).get("ok", False))
        targets.append(target("real", "wheelmerge merges the cuda-core builds and its output passes "
                                      "the checks", "yes" if ok else "no", ok))
    return {"source": make_real.pinned().filename, "inputs": describe_inputs(inputs),
            "input_fetch_split_or_check_s": round(t_gen, 2),
            "commands": {c.key: c.argv for c in cmds},
            "results": {k: {**sums[k], "runs": strip(runs[k])} for k in runs},
            "figures": figures, "verification": ver, "targets": targets}


def binary_info(path: Path) -> dict:
    """What identifies an executable: sha256, size, mtime, --version and how it is linked."""
    info: dict = {"path": str(path), "sha256": file_sha256(path), "size_bytes": path.stat().st_size,
                  "mtime_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))}
    q = subprocess.run([str(path), "--version"], capture_output=True, text=True, check=False)
    info["version"] = (q.stdout + q.stderr).strip()[:200]
    q = subprocess.run(["ldd", str(path)], capture_output=True, text=True, check=False)
    text = q.stdout + q.stderr
    info["linkage"] = ("static" if re.search(r"not a dynamic executable|statically linked", text)
                       else "dynamic: " + ", ".join(sorted(ln.split()[0] for ln in q.stdout.splitlines()
                                                           if "=>" in ln)))
    return info


def static_executable(args) -> tuple[Path | None, str]:
    """--static PATH, else the path scripts/static/build.sh prints (cached; built when missing)."""
    if args.static:
        path = args.static.resolve()
        return (path, "--static") if path.is_file() and os.access(path, os.X_OK) else (
            None, f"--static {path}: not an executable file")
    cmd = ["bash", str(ROOT / "scripts" / "static" / "build.sh"), STATIC_TARGET]
    print(f"run: [static] {' '.join(cmd[1:])} (instant when built; else it builds) ...", file=sys.stderr)
    q = subprocess.run(cmd, cwd=str(ROOT), stdout=subprocess.PIPE, text=True,
                       check=False)  # stderr: progress
    lines = q.stdout.strip().splitlines()
    path = Path(lines[-1]) if q.returncode == 0 and lines else None
    if path is None or not (path.is_file() and os.access(path, os.X_OK)):
        return None, f"{' '.join(cmd)} ended with {q.returncode} and printed {q.stdout.strip()[-500:]!r}"
    return path, " ".join(cmd[1:])


def zip_difference(a: Path, b: Path, limit: int = 20) -> list[str]:
    """Where two zips differ, member by member (name, order, CRC, sizes, method, time)."""
    with zipfile.ZipFile(a) as za, zipfile.ZipFile(b) as zb:
        ia, ib = za.infolist(), zb.infolist()
    out = []
    if [i.filename for i in ia] != [i.filename for i in ib]:
        na, nb = {i.filename for i in ia}, {i.filename for i in ib}
        out.append(f"member lists differ: {len(ia)} vs {len(ib)} entries; only in the first "
                   f"{sorted(na - nb)[:limit]}, only in the second {sorted(nb - na)[:limit]}"
                   + ("; same names in another order" if na == nb else ""))
    fields = ("CRC", "compress_size", "file_size", "compress_type", "date_time", "external_attr",
              "extra", "comment")
    by_name = {i.filename: i for i in ib}
    for x in ia:
        y = by_name.get(x.filename)
        if y is None:
            continue
        diff = [f"{f} {getattr(x, f)!r} / {getattr(y, f)!r}" for f in fields if getattr(x, f) != getattr(y, f)]
        if diff:
            out.append(f"{x.filename}: " + "; ".join(diff))
            if len(out) >= limit:
                break
    return out or ["the member tables agree: the difference is in the bytes between them"]


def run_part_static(args, timer: Timer, wm: Path) -> dict:
    """The static musl executable against the native build: CPU time, wall, RSS, identical output.

    On big's inputs and the many part's main pair (--many-entries), both executables merge the
    same inputs alternately (--reps each, the order swapped every repetition), with
    SOURCE_DATE_EPOCH fixed; the sha256 of every run's merged wheel is taken (untimed). The
    figure is CPU time (user + sys), so a run disturbed by other work is recorded (its other
    load) but not repeated. Targets per input: static median CPU / native median CPU <= 1.10,
    and every run of either wrote the same bytes."""
    if args.baseline_only:
        return {"skipped": "--baseline-only: the static part compares two wheelmerge builds",
                "targets": []}
    st, origin = static_executable(args)
    if st is None:
        print(f"run: [static] FAILED: no static executable: {origin}", file=sys.stderr)
        return {"skipped": f"no static executable: {origin}",
                "targets": [target("static", "static executable available", "no", False)]}
    binaries = {"native": binary_info(wm), "static": {**binary_info(st), "from": origin}}
    print(f"run: [static] native {wm} ({binaries['native']['linkage']}), static {st} "
          f"({binaries['static']['linkage']})", file=sys.stderr)
    t0 = time.perf_counter()
    n = args.many_entries
    sets = [("big", "big", make_wheels.ensure(), args.variant_file or [DEFAULT_VARIANT_GLOB],
             Spec("fatpkg", "fatpkg/__init__.py", "fatpkg/_wheelmerge.py", "fatpkg")),
            (f"many_{n}", f"many {n:,}", make_many.ensure([n])[n], [make_many.VARIANT_GLOB],
             Spec(make_many.NAME, f"{make_many.NAME}/__init__.py", f"{make_many.NAME}/_wheelmerge.py",
                  make_many.NAME))]
    t_gen = time.perf_counter() - t0
    env = dict(os.environ, SOURCE_DATE_EPOCH=STATIC_SOURCE_DATE_EPOCH)
    results, figures, ver, commands, targets = {}, {}, {}, {}, []
    all_inputs: list[Path] = []
    for name, title, inputs, globs, spec in sets:
        all_inputs += inputs
        cmds = [Cmd(f"{kind}_{name}", f"{kind} {title}",
                    wm_argv(exe, inputs, merged_dir("static", f"{kind}_{name}"), globs),
                    merged_dir("static", f"{kind}_{name}"), env=env, hash_output=True)
                for kind, exe in (("native", wm), ("static", st))]
        runs = timer.run("static", cmds, args.reps, retry_noisy=0)
        sums = {k: summarize(v) for k, v in runs.items()}
        nat, sta = sums[cmds[0].key], sums[cmds[1].key]
        commands |= {c.key: c.argv for c in cmds}
        results |= {k: {**sums[k], "runs": strip(runs[k])} for k in runs}

        # Byte-identical: every run of both wrote one wheel, and all of them have one name and sha256.
        outputs = {c.key: [tuple(sorted((r.get("output_sha256") or {}).items())) for r in runs[c.key]
                           if r["rc"] == 0] for c in cmds}
        distinct = {o for outs in outputs.values() for o in outs}
        ran_all = all(len(outputs[c.key]) == len(runs[c.key]) == args.reps for c in cmds)
        identical = ran_all and len(distinct) == 1 and len(next(iter(distinct))) == 1
        if identical:
            (wheel_name, digest), = next(iter(distinct))
            same = f"yes: {digest[:16]}... ({wheel_name}), all {2 * args.reps} runs"
        else:
            same = "NO: " + "; ".join(f"{k}: " + ", ".join(
                "+".join(f"{w} {d[:12]}" for w, d in o) or "no wheel" for o in outs) for k, outs in outputs.items())
            if not ran_all:
                same += " (not every run succeeded)"
            detail = []
            last = [sorted(c.out_dir.glob("*.whl")) for c in cmds]
            if all(len(x) == 1 for x in last):
                detail = zip_difference(last[0][0], last[1][0])
            print("run: [static] " + "!" * 70 + f"\nrun: [static] ERROR: {title}: the native and the "
                  f"static executable did not write the same bytes\nrun: [static]   {same}\n"
                  + "".join(f"run: [static]   {d}\n" for d in detail)
                  + f"run: [static]   the last outputs are kept in {merged_dir('static', '')}\n"
                  + "run: [static] " + "!" * 70, file=sys.stderr)
            figures[f"{title}: where the last outputs differ"] = (
                " | ".join(detail[:5]) + (f" | ... ({len(detail)} listed on stderr)" if len(detail) > 5 else "")
                if detail else "-")
        if identical and not args.no_verify:  # one check covers both: the same bytes
            (out,) = sorted(cmds[1].out_dir.glob("*.whl"))
            print(f"run: [static] verifying the merged {title} wheel ...", file=sys.stderr)
            tv = time.perf_counter()
            ver[cmds[1].key] = verify(out, inputs, args.python, "wheelmerge", spec)
            ver[cmds[1].key]["check_s"] = round(time.perf_counter() - tv, 2)
        checked = args.no_verify or ver.get(cmds[1].key, {}).get("ok", False)

        cpu = ratio(sta, nat, "median_cpu_s")
        pairs = [s["user_s"] + s["sys_s"] for s in runs[cmds[1].key]], \
                [r["user_s"] + r["sys_s"] for r in runs[cmds[0].key]]
        per_rep = [a / b for a, b in zip(*pairs) if b > 0] if ran_all else []
        loads = [r.get("other_load_cores") for c in cmds for r in runs[c.key]
                 if r.get("other_load_cores") is not None]
        figures |= {
            f"{title}: CPU s (user + sys), native, median": nat.get("median_cpu_s"),
            f"{title}: CPU s (user + sys), static, median": sta.get("median_cpu_s"),
            f"{title}: static / native CPU (medians)": cpu,
            f"{title}: static / native CPU, per repetition (min - max)": (
                f"{min(per_rep):.3f} - {max(per_rep):.3f}" if per_rep else None),
            f"{title}: wall s, native / static (medians)": (
                f"{f2(nat.get('median_wall_s'))} / {f2(sta.get('median_wall_s'))}"),
            f"{title}: peak RSS MiB, native / static": (
                f"{f2(nat.get('peak_rss_mib'), '.1f')} / {f2(sta.get('peak_rss_mib'), '.1f')}"),
            f"{title}: outputs byte-identical (sha256 of every run's wheel)": same,
            f"{title}: other load during the runs, cores (min - max)": (
                f"{min(loads):.2f} - {max(loads):.2f}" if loads else None),
        }
        targets += [
            target("static", f"{title}: static CPU / native CPU (medians) <= {TARGET_STATIC_CPU_RATIO:.2f}",
                   None if cpu is None else round(cpu, 3),
                   cpu is not None and cpu <= TARGET_STATIC_CPU_RATIO and identical and checked, "x"),
            target("static", f"{title}: every run's output byte-identical between the two"
                             + ("" if args.no_verify else ", and it passes the checks"),
                   "yes" if identical and checked else "no", identical and checked),
        ]
    after = {k: file_sha256(Path(b["path"])) for k, b in binaries.items()}
    for k, digest in after.items():
        if digest != binaries[k]["sha256"]:
            binaries[k]["changed_during_run"] = digest
            figures[f"WARNING: the {k} executable changed during the part"] = digest[:16]
            print(f"run: [static] WARNING: {binaries[k]['path']} changed during the part", file=sys.stderr)
    return {"binaries": binaries, "source_date_epoch": STATIC_SOURCE_DATE_EPOCH, "many_entries": n,
            "inputs": describe_inputs(all_inputs), "input_generation_or_check_s": round(t_gen, 2),
            "commands": commands, "results": results, "figures": figures,
            "verification": ver, "targets": targets}


# --------------------------------------------------------------------------- report


def f2(x, fmt=".2f", none="-") -> str:
    return none if x is None else format(x, fmt)


LABELS = {"wheelmerge": "wheelmerge", "baseline": "baseline (wheel unpack+pack)",
          "native_big": "native, big", "static_big": "static (musl), big",
          "native_many": "native, many", "static_many": "static (musl), many",
          "cp_floor": "copy floor (cp + sync)", "cp_nosync": "cp alone, no sync (info)",
          "verify_only": "wheelmerge verify of both inputs (info)"}


def label_of(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    base, _, n = key.rpartition("_")
    return f"{LABELS.get(base, base)}, {int(n):,}" if n.isdigit() else key


def results_table(part: dict) -> list[str]:
    lines = ["| command | runs s (other load, cores) | median s | min s | max s | CPU s | "
             "peak RSS MiB | output | verified |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    ver = part.get("verification", {})
    for key, s in part.get("results", {}).items():
        runs = s.get("runs", [])
        rs = ", ".join(f"{r['wall_s']:.2f}" + (f" ({r['other_load_cores']:.2f})"
                                                if r.get("other_load_cores") is not None else "")
                       + ("" if r["rc"] == 0 else f" rc {r['rc']}") for r in runs)
        v = ver.get(key)
        size = f"{v['size_bytes'] / 1e6:.1f} MB" if v and "size_bytes" in v else "-"
        verified = "-" if v is None else ("yes" if v.get("ok") else "**NO**")
        if not s.get("ok") and "median_wall_s" not in s:
            lines.append(f"| {label_of(key)} | {rs} | FAILED | | | | | | |")
            continue
        lines.append(f"| {label_of(key)} | {rs} | {f2(s.get('median_wall_s'))} | "
                     f"{f2(s.get('min_wall_s'))} | {f2(s.get('max_wall_s'))} | "
                     f"{f2(s.get('median_cpu_s'))} | {f2(s.get('peak_rss_mib'), '.1f')} | "
                     f"{size} | {verified} |")
    return lines


def fmt_fig(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def run_part_import(args, timer, wm: Path) -> dict:
    """The loader's import cost: bench/import_time.py (its README section), run as a child with
    the merge parts' interpreter; its target is this part's."""
    work = OUT / "import"
    result = subprocess.run([args.python, str(HERE / "import_time.py"), "--wheelmerge", str(wm),
                             "--work", str(work), "--reps", str(max(args.reps, 25))],
                            capture_output=True, text=True)
    (OUT / "logs" / "import.stderr").write_text(result.stderr)
    try:
        found = json.loads((work / "results.json").read_text())
    except (OSError, ValueError) as error:
        return {"skipped": f"import_time.py ended with {result.returncode} and no results ({error}):\n"
                           f"{result.stderr[-2000:]}", "targets": []}
    merged = found["environments"]["merged"]
    return {
        "summary_md": found.get("summary_md", result.stdout),
        "results": {},
        "targets": [target("import", f"merged cuda import, best of {found['reps']} above the unmerged "
                           f"build's (at most {found['target_ms']:g} ms, no heavy module)",
                           round(merged["best_diff_ms"], 2), found["all_pass"], "ms")],
    }


def markdown(results: dict) -> str:
    m = results["machine"]
    L = [f"## wheelmerge benchmark, {results['date_utc']}", "",
         f"Machine: {m.get('nproc')} CPUs ({m.get('cpu_model', '?')}), {m.get('mem_total_gib')} GiB; "
         f"Python {m.get('python_baseline')}, zlib {m.get('zlib_baseline')}, wheel "
         f"{m.get('wheel_version')}; wheelmerge {m.get('wheelmerge_version', '-')} "
         f"(binary mtime {m.get('wheelmerge_binary', {}).get('mtime_utc', '-')}, sha256 "
         f"{m.get('wheelmerge_binary', {}).get('sha256', '-')[:12]}); load average at start "
         f"{m.get('loadavg_at_start')}, at end {results.get('loadavg_at_end')}; "
         f"{results['reps']} reps; RSS by {results.get('rss_method')} (floor, /bin/true: "
         f"{results.get('rss_floor_mib (/bin/true measured the same way)')} MiB); warm cache.", ""]
    for name in results["parts_run"]:
        part = results["parts"][name]
        L.append(f"### {name}")
        L.append("")
        if "skipped" in part:
            first = part["skipped"].splitlines()[0] if part["skipped"] else "?"
            L += [f"SKIPPED: {first} (in full in results.json)", ""]
            continue
        if "summary_md" in part:  # import: import_time.py's own summary
            L += [part["summary_md"], ""]
            continue
        ins = part["inputs"]
        if isinstance(ins, dict):
            L.append("Inputs: " + "; ".join(
                f"{int(n):,} modules: 2 x {v[0]['bytes'] / 1e6:.2f} MB, {v[0]['entries']:,} entries each"
                for n, v in ins.items()))
        else:
            L.append("Inputs: " + ", ".join(f"`{i['name']}` ({i['bytes'] / 1e6:.1f} MB, "
                                            f"{i['entries']} entries)" for i in ins))
        if "binaries" in part:  # static
            L.append("Executables: " + "; ".join(
                f"{k} `{b['path']}` ({b['linkage']}, {b['size_bytes'] / 1e6:.1f} MB, sha256 "
                f"{b['sha256'][:12]}, mtime {b['mtime_utc']})" for k, b in part["binaries"].items())
                + f"; SOURCE_DATE_EPOCH={part['source_date_epoch']}; the two alternate, order "
                  "swapped each repetition; noisy runs are counted, not repeated.")
        L.append("")
        L += results_table(part)
        L.append("")
        for k, v in part.get("figures", {}).items():
            L.append(f"- {k}: **{fmt_fig(v)}**")
        for key, s in part.get("results", {}).items():
            if "median_phases_s" in s:
                ph = s["median_phases_s"]
                L.append(f"- {label_of(key)} phases (median s): unpack (both) "
                         f"{ph['unpack_total']:.2f}, rearrange {ph['rearrange']:.2f}, pack "
                         f"{ph['pack']:.2f}, cleanup {ph['cleanup']:.2f}")
        for key, v in part.get("verification", {}).items():
            if "import_smoke_test (informational)" in v:
                L.append(f"- {label_of(key)}: import smoke test (informational): "
                         f"{v['import_smoke_test (informational)']}")
            if not v.get("ok"):
                L.append(f"- verification of {label_of(key)} FAILED: " + json.dumps(
                    {k: v[k] for k in v if k in ("checks", "error", "unpack_error", "missing",
                                                 "missing_count")})[:2000])
        L.append("")
    L += ["### Targets", ""]
    for t in results["targets"]:
        L.append(f"- **{'PASS' if t['pass'] else 'FAIL'}** [{t['part']}] {t['target']}: "
                 f"measured {fmt_fig(t['value'])}{(' ' + t['unit']) if t['unit'] and t['value'] is not None else ''}")
    if not results["targets"]:
        L.append("- (none checked in this run)")
    L.append("")
    disc = results["discarded_noisy_attempts"]
    if disc:
        L.append(f"{len(disc)} noisy attempt(s) repeated and left out of the medians: " + ", ".join(
            f"{d['part']}/{d['which']} {d['wall_s']:.2f} s ({d['other_load_cores']:.2f} cores)"
            for d in disc))
    worst = results.get("max_other_load_cores_counted", 0.0)
    L.append(f"Other load during counted runs of {MIN_NOISE_WALL_S:g} s or more: up to "
             f"{worst:.2f} cores"
             + (" - WARNING: wall times are inflated (CPU s is the steadier figure)"
                if worst > NOISY_CORES else "") + ".")
    if results["machine"].get("wheelmerge_binary_changed_during_run"):
        L.append("WARNING: the wheelmerge binary changed during the benchmark; the figures may "
                 "mix builds.")
    L.append(f"Overall: **{'PASS' if results['all_pass'] else 'FAIL'}**; results in "
             f"`bench/out/results.json`.")
    return "\n".join(L) + "\n"


# --------------------------------------------------------------------------- main


def parse_only(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise argparse.ArgumentTypeError(f"--only takes a comma-separated subset of "
                                         f"{','.join(PARTS)}; got {text!r}")
    return [p for p in PARTS if p in parts]


def main() -> int:
    ap = argparse.ArgumentParser(description="wheelmerge vs wheel unpack/pack and cp benchmark")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", type=parse_only, default=list(DEFAULT_PARTS), metavar="PARTS",
                    help="comma-separated parts to run: big, many, real, import, static "
                         "(default: all but static)")
    ap.add_argument("--wheelmerge", type=Path,
                    default=Path(os.environ.get("WHEELMERGE", ROOT / "build" / "wheelmerge")))
    ap.add_argument("--static", type=Path, metavar="PATH",
                    help="static part: the static executable (default: the path "
                         f"`scripts/static/build.sh {STATIC_TARGET}` prints, building it when missing)")
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"),
                    help="interpreter with `wheel` installed (baseline and checks)")
    ap.add_argument("--baseline-only", action="store_true",
                    help="time the baselines alone (no wheelmerge, no copy floor, no targets)")
    ap.add_argument("--baseline-copy", action="store_true",
                    help="baseline copies trees (shutil.copytree) like NVIDIA's script")
    ap.add_argument("--variant-file", action="append",
                    help=f"big part: passed to wheelmerge (default {DEFAULT_VARIANT_GLOB!r})")
    ap.add_argument("--skip-many-baseline", action="store_true",
                    help="many part: leave out the one baseline run on the largest pair (~30 s)")
    ap.add_argument("--many-entries", type=int, default=70_000, metavar="N",
                    help="many part: modules per wheel of the main pair (default 70000)")
    ap.add_argument("--many-rss-entries", type=int, default=50_000, metavar="N",
                    help="many part: modules per wheel of the pair held to the RSS bound "
                         "(default 50000)")
    ap.add_argument("--many-base-entries", type=int, default=10, metavar="N",
                    help="many part: modules per wheel of the pair giving the base RSS (default 10)")
    ap.add_argument("--no-verify", action="store_true", help="skip the output checks")
    ap.add_argument("--retry-noisy", type=int, default=2, metavar="K",
                    help="repeat a timed run up to K times when other processes used more "
                         f"than {NOISY_CORES} cores during it (default 2); the noisy attempts "
                         "are kept in results.json; the least disturbed attempt counts")
    ap.add_argument("--wait-idle", type=float, default=60.0, metavar="S",
                    help="before each timed run, wait up to S seconds for the machine to go "
                         "idle (other processes < 0.15 cores); 0 disables (default 60)")
    ap.add_argument("--nice", type=int, default=0,
                    help="run the benchmark (and so the timed commands) at this nice value; "
                         "a negative one (root only) shields the runs from other work on a "
                         "shared machine")
    args = ap.parse_args()
    if args.nice:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)

    OUT.mkdir(exist_ok=True)
    clean_dir(OUT / "tmp")
    logs = OUT / "logs"
    clean_dir(logs)
    shutil.rmtree(OUT / "merged", ignore_errors=True)

    wm = args.wheelmerge.resolve()
    if not args.baseline_only and not (wm.is_file() and os.access(wm, os.X_OK)):
        print(f"run: wheelmerge binary not found at {wm} (set WHEELMERGE or build it); "
              "use --baseline-only to time the baselines alone", file=sys.stderr)
        return 2

    # Machine and binary, taken before the runs (the binary may be rebuilt meanwhile).
    machine = machine_info(args.python, None if args.baseline_only else wm)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    timer = Timer(args, logs)
    runners = {"big": run_part_big, "many": run_part_many, "real": run_part_real,
               "import": run_part_import, "static": run_part_static}
    parts = {}
    for name in args.only:
        print(f"run: === part {name} ===", file=sys.stderr)
        parts[name] = runners[name](args, timer, wm)

    if not args.baseline_only and wm.exists():
        now = hashlib.sha256(wm.read_bytes()).hexdigest()
        if now != machine.get("wheelmerge_binary", {}).get("sha256"):
            machine["wheelmerge_binary_changed_during_run"] = now

    targets = [t for p in parts.values() for t in p.get("targets", [])]
    counted = [r for p in parts.values() for s in p.get("results", {}).values()
               for r in s.get("runs", [])]
    all_ok_runs = all(r["rc"] == 0 for r in counted)
    if args.baseline_only:
        all_pass = all_ok_runs and bool(counted)
    else:
        all_pass = bool(targets) and all(t["pass"] for t in targets)
    results = {
        "date_utc": started,
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine,
        "loadavg_at_end": loadavg(),
        "cache": "warm (page cache not dropped); sync before each timed run",
        "rss_method": (counted or [{}])[0].get("rss_method"),
        "rss_floor_mib (/bin/true measured the same way)": round(
            measure(["/bin/true"], logs / "floor")["maxrss_mib"], 2),
        "reps": args.reps,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "parts_run": list(parts),
        "parts": parts,
        "discarded_noisy_attempts": strip(timer.discarded),
        # over the counted runs long enough to tell (see MIN_NOISE_WALL_S)
        "max_other_load_cores_counted": max([r.get("other_load_cores") or 0.0 for r in counted
                                             if r["wall_s"] >= MIN_NOISE_WALL_S] or [0.0]),
        "targets": targets,
        "all_pass": all_pass,
    }
    for d in results["discarded_noisy_attempts"]:
        d.pop("stdout_tail", None)
    md = markdown(results)
    (OUT / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    (OUT / "summary.md").write_text(md)
    print()
    print(md)
    shutil.rmtree(OUT / "tmp", ignore_errors=True)
    return 0 if all_pass else 1


if __name__ == "__main__":
    sys.exit(main())
