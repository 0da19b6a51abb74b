#!/usr/bin/env python3
"""Import time of wheelmerge's loader: what `import PKG` costs merged, against unmerged.

Builds a tiny package, `wmbench` (an `__init__.py` that does `from ._core import build_major`,
and a C extension `wmbench/_core` compiled with `cc` against the running Python), as real
wheels, one per build:

    wmbench-1.0-cp3XY-cp3XY-linux_x86_64.cu12.whl, .cu13.whl            (Requires-Dist:
                                                                          cuda-bindings==NN.*)
    wmbench-1.0-cp3XY-cp3XY-linux_x86_64.x86_64_v1.whl, .x86_64_v2.whl  (no requirement)

merges each pair with `wheelmerge merge` (the cuda selector's loader and the cpu selector's),
and installs into three virtual environments made with the running interpreter:

- `unmerged`: the cu12 wheel as built, plus cuda-bindings 12.9.4;
- `merged`: the merged cuda wheel, plus the same cuda-bindings (the loader selects cu12 from
  its distribution metadata);
- `cpu`: the merged cpu wheel (the loader selects an x86-64 level from the CPU).

Then it times `import wmbench` in a fresh interpreter of each environment (measured inside
the interpreter with time.perf_counter around the import statement, so interpreter start-up
is left out), --reps times each, the environments alternating (unmerged, merged, cpu,
unmerged, ...) so that the machine's noise falls on all alike, after one untimed warm-up run
each. Reported: best (min) and median per environment, and the differences to `unmerged`.
With `python -X importtime -c "import wmbench"` it lists the modules each merged import loads
beyond the unmerged one.

Target (exit status 0): the merged cuda import's best is at most 3 ms above the unmerged
one's, and it loads none of importlib.metadata, importlib.util, importlib.abc,
importlib.resources, ctypes, json, email, re, threading, typing (or their submodules) beyond
what the unmerged import loads. Exit 1 when either fails; 2 when the binary is missing or
the setup fails. The cpu loader's figures are information.

cuda-bindings comes from ~/.cache/wheelmerge/wheels when a cuda_bindings-12.* wheel is there
(`pip install --no-index --find-links`), else from the package index. The environments are
reused when their stamp.json matches (interpreter, requirements); a wheel that changed (a new
wheelmerge build writes a new loader) is reinstalled into its environment, so a re-run takes
a few seconds plus the timing.

Outputs go to the work directory (default bench/out/import/, git-ignored): builds/, wheels/,
merged-cuda/, merged-cpu/, venvs/, results.json. The Markdown table goes to stdout, progress
to stderr.

Usage: python bench/import_time.py [--reps N] [--wheelmerge PATH] [--work DIR]
The binary comes from --wheelmerge, else $WHEELMERGE, else build/wheelmerge. Python 3.9+,
standard library only; the interpreter running it is the one measured.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import cpu_busy_s  # noqa: E402  (the load figure the merge benchmark reports too)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "support"))
import wheelgen as wg  # noqa: E402  (the tests' RECORD helpers)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_WORK = HERE / "out" / "import"
WHEEL_CACHE = Path(os.environ.get("WHEELMERGE_WHEEL_CACHE") or Path.home() / ".cache" / "wheelmerge") / "wheels"

NAME = "wmbench"
VERSION = "1.0"
PY_TAG = f"cp{sys.version_info[0]}{sys.version_info[1]}"
PLATFORM_TAG = sysconfig.get_platform().replace("-", "_").replace(".", "_")  # linux_x86_64
TAG = f"{PY_TAG}-{PY_TAG}-{PLATFORM_TAG}"
DATE_TIME = (2024, 1, 1, 0, 0, 0)

# label -> (the number build_major() returns, Requires-Dist or None). For the cpu builds the
# number is the x86-64 level, so a test import shows which build the loader chose.
CUDA_BUILDS = {"cu12": (12, "cuda-bindings==12.*"), "cu13": (13, "cuda-bindings==13.*")}
CPU_BUILDS = {"x86_64_v1": (1, None), "x86_64_v2": (2, None)}
CUDA_BINDINGS = "cuda-bindings==12.9.4"  # what `unmerged` and `merged` get installed

TARGET_MS = 3.0  # merged cuda best - unmerged best, at most
# Modules the cuda selector's loader must not bring in (each with its submodules).
HEAVY = ("importlib.metadata", "importlib.util", "importlib.abc", "importlib.resources",
         "ctypes", "json", "email", "re", "threading", "typing")
STAMP_VERSION = 1

TIMING_CODE = ("import time; t = time.perf_counter(); import wmbench; "
               "print(time.perf_counter() - t)")
IMPORTTIME_REPS = 5  # -X importtime runs per environment (module list, cumulative figures)

INIT_PY = f'''"""{NAME}: a tiny package with a C extension (wheelmerge's import-time benchmark)."""
from ._core import build_major
'''

CORE_C = r"""
/* wmbench._core: build_major() returns the number this build was compiled with. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *build_major(PyObject *self, PyObject *unused) {
    return PyLong_FromLong(WMBENCH_MAJOR);
}

static PyMethodDef methods[] = {
    {"build_major", build_major, METH_NOARGS, "The CUDA major (x86-64 level) of this build."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&module); }
"""


def log(msg: str) -> None:
    print(f"import_time: {msg}", file=sys.stderr, flush=True)


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    """Run cmd; on failure, show its output and raise."""
    p = subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {' '.join(map(str, cmd))}\n"
                           f"{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return p


def clean_env() -> dict:
    """The environment for the measured interpreters: no PYTHON* variables (PYTHONPATH,
    PYTHONDONTWRITEBYTECODE, ...) and no WHEELMERGE_* overrides of the loader's choice."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PYTHON", "WHEELMERGE_")) and k != "VIRTUAL_ENV"}


# --------------------------------------------------------------------------- building


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compile_core(build_dir: Path, major: int) -> Path:
    """wmbench/_core<EXT_SUFFIX>, compiled with `cc -shared -fPIC` against this Python."""
    build_dir.mkdir(parents=True, exist_ok=True)
    src = build_dir / "core.c"
    src.write_text(CORE_C)
    ext = build_dir / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))
    run(["cc", "-shared", "-fPIC", "-O2", f"-DWMBENCH_MAJOR={major}",
         f"-I{sysconfig.get_paths()['include']}", "-o", ext, src])
    return ext


def metadata(requires: str | None) -> bytes:
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {VERSION}\n"
        "Summary: Tiny package with one C extension (wheelmerge import-time benchmark)\n"
        + (f"Requires-Dist: {requires}\n" if requires else "")
    ).encode()


def wheel_meta() -> bytes:
    return (
        "Wheel-Version: 1.0\n"
        "Generator: wheelmerge-bench (import_time.py)\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {TAG}\n"
    ).encode()


def write_wheel(path: Path, files: list[tuple[str, bytes, int]]) -> None:
    """A wheel of `files` (arcname, data, mode) plus METADATA/WHEEL already in `files`, and a
    RECORD with sha256 (urlsafe base64, no padding) and sizes; fixed dates, so reproducible
    for a given compiler output."""
    dist_info = f"{NAME}-{VERSION}.dist-info"
    rows = []
    tmp = path.with_name(path.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arcname, data, mode in files:
            zi = zipfile.ZipInfo(arcname, date_time=DATE_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = (0o100000 | mode) << 16
            zi.create_system = 3
            zf.writestr(zi, data)
            rows.append(wg.record_row(arcname, data))
        zi = zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=DATE_TIME)
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.external_attr = 0o100644 << 16
        zi.create_system = 3
        zf.writestr(zi, wg.record_file(rows, f"{dist_info}/RECORD"))
    os.replace(tmp, path)


def build_wheel(work: Path, label: str, major: int, requires: str | None) -> Path:
    """wheels/wmbench-1.0-TAG.LABEL.whl: one build of the package."""
    ext = compile_core(work / "builds" / label, major)
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files = [
        (f"{NAME}/__init__.py", INIT_PY.encode(), 0o644),
        (f"{NAME}/{ext.name}", ext.read_bytes(), 0o755),
        (f"{dist_info}/METADATA", metadata(requires), 0o644),
        (f"{dist_info}/WHEEL", wheel_meta(), 0o644),
    ]
    out = work / "wheels" / f"{NAME}-{VERSION}-{TAG}.{label}.whl"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_wheel(out, files)
    return out


def merge(wheelmerge: Path, inputs: list[Path], out_dir: Path) -> Path:
    """`wheelmerge merge INPUTS -o OUT_DIR`; the merged wheel's path."""
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    run([wheelmerge, "merge", *inputs, "-o", out_dir, "--quiet"])
    merged = out_dir / f"{NAME}-{VERSION}-{TAG}.whl"
    if not merged.is_file():
        raise RuntimeError(f"wheelmerge wrote {sorted(os.listdir(out_dir))}, not {merged.name}")
    return merged


# --------------------------------------------------------------------------- environments


def cuda_bindings_source() -> list[str]:
    """pip's arguments for CUDA_BINDINGS: the tests' wheel cache when it holds a
    cuda_bindings-12.* wheel for this Python, else the package index."""
    if any(WHEEL_CACHE.glob(f"cuda_bindings-12.*-{PY_TAG}-*.whl")):
        return ["--no-index", "--find-links", str(WHEEL_CACHE)]
    return []


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def pip(venv: Path, *args: str) -> None:
    run([venv_python(venv), "-m", "pip", "install", "--disable-pip-version-check",
         "--no-input", "-q", *args], env=clean_env())


def ensure_venv(venv: Path, wheel: Path, with_cuda_bindings: bool) -> dict:
    """Make (or reuse) VENV with WHEEL and, if asked, cuda-bindings; its stamp."""
    want = {
        "stamp_version": STAMP_VERSION,
        "python": os.path.realpath(sys.executable),
        "python_version": sys.version,
        "cuda_bindings": CUDA_BINDINGS if with_cuda_bindings else None,
    }
    stamp_path = venv / "stamp.json"
    try:
        stamp = json.loads(stamp_path.read_text())
    except (OSError, ValueError):
        stamp = {}
    if {k: stamp.get(k) for k in want} != want or not venv_python(venv).exists():
        log(f"creating {venv.name} ...")
        shutil.rmtree(venv, ignore_errors=True)
        run([sys.executable, "-m", "venv", venv], env=clean_env())
        stamp = dict(want)
        if with_cuda_bindings:
            source = cuda_bindings_source()
            stamp["cuda_bindings_from"] = str(WHEEL_CACHE) if source else "package index"
            try:
                pip(venv, *source, CUDA_BINDINGS)
            except RuntimeError as e:
                if not source:
                    raise
                log(f"{CUDA_BINDINGS} from {WHEEL_CACHE} failed, trying the package index:"
                    f"\n{e}")
                pip(venv, CUDA_BINDINGS)
                stamp["cuda_bindings_from"] = "package index"
    digest = sha256_file(wheel)
    if stamp.get("wheel_sha256") != digest:
        log(f"installing {wheel.name} into {venv.name}")
        pip(venv, "--no-deps", "--force-reinstall", str(wheel))
        stamp["wheel"], stamp["wheel_sha256"] = wheel.name, digest
    stamp["installed"] = run([venv_python(venv), "-m", "pip", "list", "--format=freeze",
                              "--disable-pip-version-check"], env=clean_env()).stdout.split()
    stamp_path.write_text(json.dumps(stamp, indent=2) + "\n")
    return stamp


def check_import(venv: Path, selector: bool) -> dict:
    """Import the package once (untimed): which build it loaded, and the loader's choice."""
    code = "import wmbench; print(wmbench.build_major())"
    if selector:
        code += "; import wmbench._wheelmerge as w; print(w.selected())"
    lines = run([venv_python(venv), "-c", code], env=clean_env()).stdout.split()
    return {"build_major": int(lines[0]), "selected": lines[1] if selector else None}


# --------------------------------------------------------------------------- measuring


def time_import(venv: Path) -> float:
    """Seconds `import wmbench` takes in a fresh interpreter of VENV."""
    out = run([venv_python(venv), "-c", TIMING_CODE], env=clean_env()).stdout
    return float(out.strip().splitlines()[-1])


def importtime(venv: Path) -> list[tuple[str, int, int]]:
    """(module, self us, cumulative us) of each module that `import wmbench` loaded, from
    `python -X importtime -c "import wmbench"`, in the order Python prints them (a module after
    those it imported).

    Only the lines of wmbench's own subtree count: interpreter start-up imports differ between
    the environments (cuda-bindings installs a .pth file whose code imports `types` and `cuda`
    at start-up; the cpu environment has no cuda-bindings), and a module already loaded at
    start-up costs an import nothing, so it is not listed under wmbench either."""
    err = run([venv_python(venv), "-X", "importtime", "-c", "import wmbench"],
              env=clean_env()).stderr
    rows = []  # (module, depth, self us, cumulative us)
    for line in err.splitlines():
        if not line.startswith("import time:") or "imported package" in line:
            continue
        self_us, cumulative_us, raw = line[len("import time:"):].split("|", 2)
        depth = (len(raw) - len(raw.lstrip(" ")) - 1) // 2  # two spaces per level
        rows.append((raw.strip(), depth, int(self_us), int(cumulative_us)))
    ends = [i for i, r in enumerate(rows) if r[0] == NAME and r[1] == 0]
    if not ends:
        raise RuntimeError(f"no top-level {NAME} in -X importtime output:\n{err[-3000:]}")
    start = ends[-1]
    while start > 0 and rows[start - 1][1] > 0:  # the lines nested under wmbench
        start -= 1
    return [(m, s, c) for m, _, s, c in rows[start:ends[-1] + 1]]


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]


def summary(seconds: list[float]) -> dict:
    ms = [s * 1e3 for s in seconds]
    return {"best_ms": min(ms), "median_ms": statistics.median(ms), "max_ms": max(ms),
            "runs_ms": [round(x, 3) for x in ms]}


def children_cpu_s() -> float:
    """CPU seconds of this process and its waited-for children (the timed interpreters)."""
    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                     resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return None


def machine_info(wheelmerge: Path) -> dict:
    info = {"nproc": os.cpu_count(), "python": sys.version.split()[0],
            "executable": os.path.realpath(sys.executable), "platform": platform.platform(),
            "wheelmerge": str(wheelmerge), "wheelmerge_sha256": sha256_file(wheelmerge),
            "wheelmerge_mtime_utc": time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime(wheelmerge.stat().st_mtime))}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    p = subprocess.run([str(wheelmerge), "--version"], check=False, capture_output=True,
                       text=True)
    info["wheelmerge_version"] = (p.stdout or p.stderr).strip()
    return info


# --------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=25,
                    help="timed imports per environment (default 25)")
    ap.add_argument("--wheelmerge", type=Path, default=None,
                    help="the binary (default $WHEELMERGE, else build/wheelmerge)")
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK,
                    help=f"work directory (default {DEFAULT_WORK.relative_to(ROOT)})")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    wheelmerge = (args.wheelmerge or Path(os.environ.get("WHEELMERGE")
                                          or ROOT / "build" / "wheelmerge")).resolve()
    if not os.access(wheelmerge, os.X_OK):
        log(f"no wheelmerge binary at {wheelmerge} (build it, or pass --wheelmerge)")
        return 2
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)

    # Build, merge, install.
    t0 = time.perf_counter()
    try:
        cuda = [build_wheel(work, label, *b) for label, b in CUDA_BUILDS.items()]
        cpu = [build_wheel(work, label, *b) for label, b in CPU_BUILDS.items()]
        merged_cuda = merge(wheelmerge, cuda, work / "merged-cuda")
        merged_cpu = merge(wheelmerge, cpu, work / "merged-cpu")
        venvs = {  # name -> (venv, wheel, cuda-bindings?, has a loader?)
            "unmerged": (work / "venvs" / "unmerged", cuda[0], True, False),
            "merged": (work / "venvs" / "merged", merged_cuda, True, True),
            "cpu": (work / "venvs" / "cpu", merged_cpu, False, True),
        }
        stamps, checks = {}, {}
        for name, (venv, wheel, cb, selector) in venvs.items():
            stamps[name] = ensure_venv(venv, wheel, cb)
            checks[name] = check_import(venv, selector)
    except (RuntimeError, OSError) as e:
        log(f"setup failed: {e}")
        return 2
    log(f"set up in {time.perf_counter() - t0:.1f} s; imports: "
        + ", ".join(f"{n} build_major()={c['build_major']}"
                    + (f" selected {c['selected']}" if c["selected"] else "")
                    for n, c in checks.items()))
    wrong = checks["unmerged"]["build_major"] != 12 or checks["merged"]["selected"] != "cu12"

    # Time: one untimed warm-up each (page cache, __pycache__), then alternate.
    order = list(venvs)
    for name in order:
        time_import(venvs[name][0])
    load_before = loadavg()
    runs: dict[str, list[float]] = {name: [] for name in order}
    busy0, own0 = cpu_busy_s(), children_cpu_s()
    t0 = time.perf_counter()
    for _ in range(args.reps):
        for name in order:
            runs[name].append(time_import(venvs[name][0]))
    wall = time.perf_counter() - t0
    busy1, own1 = cpu_busy_s(), children_cpu_s()
    # CPU the rest of the machine used meanwhile, in cores (10 ms ticks: rough on short runs).
    other_load = (None if busy0 is None or busy1 is None
                  else max(0.0, (busy1 - busy0 - (own1 - own0)) / wall))
    other_txt = "?" if other_load is None else f"{other_load:.2f}"
    log(f"{args.reps} x {len(order)} timed imports in {wall:.1f} s, other load {other_txt} cores")
    figures = {name: summary(runs[name]) for name in order}

    # Which modules each import loads (-X importtime), and their cumulative times.
    # Best of IMPORTTIME_REPS runs, per module: its self time and its cumulative time.
    modules, self_us, cumulative_us = {}, {}, {}
    for name in order:
        best_self: dict[str, int] = {}
        best_cum: dict[str, int] = {}
        for _ in range(IMPORTTIME_REPS):
            rows = importtime(venvs[name][0])
            modules[name] = [m for m, _, _ in rows]
            for m, own, cum in rows:
                best_self[m] = min(own, best_self.get(m, own))
                best_cum[m] = min(cum, best_cum.get(m, cum))
        self_us[name], cumulative_us[name] = best_self, best_cum
    unmerged_set = set(modules["unmerged"])
    extra = {name: [m for m in modules[name] if m not in unmerged_set]
             for name in ("merged", "cpu")}
    extra_heavy = {name: heavy(mods) for name, mods in extra.items()}

    base = figures["unmerged"]
    for name in ("merged", "cpu"):
        f = figures[name]
        f["best_diff_ms"] = f["best_ms"] - base["best_ms"]
        f["median_diff_ms"] = f["median_ms"] - base["median_ms"]
        f["extra_modules"] = extra[name]
        f["extra_modules_self_us"] = {m: self_us[name][m] for m in extra[name]}
        f["extra_heavy_modules"] = extra_heavy[name]
        f["importtime_wmbench_cumulative_us"] = cumulative_us[name].get(NAME)
    base["importtime_wmbench_cumulative_us"] = cumulative_us["unmerged"].get(NAME)
    time_pass = figures["merged"]["best_diff_ms"] <= TARGET_MS
    modules_pass = not extra_heavy["merged"]
    all_pass = time_pass and modules_pass and not wrong

    # Report.
    lines = [
        f"## Import time of the loader ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        "",
        (f"`import {NAME}` in a fresh interpreter, {args.reps} runs per environment, "
         f"alternating; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
         f"{load_before}; other processes used {other_txt} cores during the timed runs."),
        "",
        ("| environment | best ms | median ms | max ms | best - unmerged ms "
         f"| median - unmerged ms | `{NAME}` cumulative in -X importtime, best of "
         f"{IMPORTTIME_REPS} |"),
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    labels = {"unmerged": "unmerged (cu12 wheel)", "merged": "merged cuda (cu12 selected)",
              "cpu": f"merged cpu ({checks['cpu']['selected']} selected)"}
    for name in order:
        f = figures[name]
        diff = ("" if name == "unmerged" else
                f"{f['best_diff_ms']:+.2f} | {f['median_diff_ms']:+.2f}")
        cum = f.get("importtime_wmbench_cumulative_us")
        lines.append(f"| {labels[name]} | {f['best_ms']:.2f} | {f['median_ms']:.2f} | "
                     f"{f['max_ms']:.2f} | {diff or '- | -'} | "
                     f"{'-' if cum is None else f'{cum / 1e3:.2f} ms'} |")
    lines.append("")
    lines.append("Modules as `-X importtime` lists them under `wmbench` (each with its self time "
                 f"in ms, best of {IMPORTTIME_REPS}):")
    lines.append("")
    for name in ("merged", "cpu"):
        lines.append(f"- modules the {name} import loads beyond the unmerged one: "
                     + (", ".join(f"`{m}` {self_us[name][m] / 1e3:.2f}" for m in extra[name])
                        or "none")
                     + (f"; heavy: {', '.join(extra_heavy[name])}" if extra_heavy[name]
                        else "; none of the heavy ones"))
    lines.append(
        f"- target (merged cuda best <= unmerged best + {TARGET_MS:g} ms, no heavy module): "
        f"{figures['merged']['best_diff_ms']:+.2f} ms "
        f"{'PASS' if time_pass else 'FAIL'}, modules {'PASS' if modules_pass else 'FAIL'}"
        + ("; WRONG BUILD IMPORTED" if wrong else "")
        + f": **{'PASS' if all_pass else 'FAIL'}**")
    text = "\n".join(lines) + "\n"
    print(text, end="")

    results = {
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine_info(wheelmerge),
        "load_average_before": load_before,
        "other_load_cores": other_load,
        "timed_wall_s": wall,
        "reps": args.reps,
        "timing_code": TIMING_CODE,
        "target_ms": TARGET_MS,
        "heavy_modules": list(HEAVY),
        "wheels": {p.name: sha256_file(p) for p in cuda + cpu + [merged_cuda, merged_cpu]},
        "environments": {name: {"venv": str(venvs[name][0]), "wheel": venvs[name][1].name,
                                "installed": stamps[name]["installed"],
                                "cuda_bindings_from": stamps[name].get("cuda_bindings_from"),
                                "import_check": checks[name], "modules": modules[name],
                                "modules_self_us": self_us[name],
                                **figures[name]} for name in order},
        "time_pass": time_pass,
        "modules_pass": modules_pass,
        "right_build_imported": not wrong,
        "all_pass": all_pass,
        "summary_md": text,
    }
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    log(f"results in {work / 'results.json'}")
    return 0 if all_pass else 1


if __name__ == "__main__":
    sys.exit(main())
