#!/usr/bin/env python3
"""Baseline: merge per-CUDA-major wheels the way NVIDIA's projects do it today.

This is an independent implementation of the approach of cuda-python's
ci/tools/merge_cuda_core_wheels.py (and the similar scripts in NVIDIA/cccl):

1. `python -m wheel unpack` every input wheel into a temporary directory
   (wheel checks every member against RECORD while extracting);
2. move each variant's whole package tree to PKG/cuNN/ inside the first wheel's tree, keep
   the first wheel's PKG/__init__.py as the top-level dispatcher, and empty each
   PKG/cuNN/__init__.py;
3. keep the first wheel's .dist-info as is (so its METADATA, including Requires-Dist, wins);
4. `python -m wheel pack` the tree, which recompresses every member (deflate, zlib's default
   level 6) and writes a fresh RECORD.

NVIDIA's script copies the trees (shutil.copytree); by default this one renames them, which
costs nothing on one file system, so the baseline here is if anything a little faster than
the original. `--copy` copies instead, like the original.

Usage: baseline_merge.py WHEEL WHEEL... -o OUTDIR [--package fatpkg] [--timings FILE]
                         [--tmpdir DIR] [--copy]

The variant label of each wheel comes from a `.cuNN` suffix before `.whl`. Phase timings
(seconds) are printed to stderr and, with --timings, written as JSON.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list[str]) -> None:
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(f"baseline: command failed ({result.returncode}): {' '.join(cmd)}\n"
                         f"{result.stdout}{result.stderr}")
        raise SystemExit(1)


def variant_of(wheel: Path) -> str:
    m = re.search(r"\.(cu\d+)\.whl$", wheel.name)
    if not m:
        raise SystemExit(f"baseline: cannot tell the CUDA variant of {wheel.name} "
                         "(expected NAME.cuNN.whl)")
    return m.group(1)


def merge(wheels: list[Path], out_dir: Path, package: str, tmp_root: str | None,
          copy: bool) -> tuple[Path, dict]:
    py = sys.executable
    timings: dict = {"unpack": [], "rearrange": 0.0, "pack": 0.0}
    labels = [variant_of(w) for w in wheels]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"baseline: duplicate variants {labels}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="baseline-", dir=tmp_root) as tmp:
        tmp_path = Path(tmp)
        trees: list[Path] = []
        for i, wheel in enumerate(wheels):
            dest = tmp_path / f"unpack{i}"
            t0 = time.perf_counter()
            run([py, "-m", "wheel", "unpack", str(wheel), "--dest", str(dest)])
            timings["unpack"].append(time.perf_counter() - t0)
            (tree,) = [p for p in dest.iterdir() if p.is_dir()]  # NAME-VERSION/
            trees.append(tree)

        t0 = time.perf_counter()
        base = trees[0]
        # Take every variant's package tree out (the base's too), then rebuild PKG/ from the
        # base's __init__.py plus one subpackage per variant.
        staged: list[tuple[str, Path]] = []
        for label, tree in zip(labels, trees):
            src = tree / package
            if not src.is_dir():
                raise SystemExit(f"baseline: {tree.name} has no {package}/")
            dst = tmp_path / f"variant-{label}"
            if copy:
                shutil.copytree(src, dst)
            else:
                src.rename(dst)
            staged.append((label, dst))
        pkg = base / package
        if copy:
            shutil.rmtree(pkg)
        pkg.mkdir()
        init = staged[0][1] / "__init__.py"
        if init.exists():
            shutil.copy2(init, pkg / "__init__.py")
        for label, src in staged:
            dst = pkg / label
            if copy:
                shutil.copytree(src, dst)
            else:
                src.rename(dst)
            (dst / "__init__.py").write_bytes(b"")
        timings["rearrange"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        before = set(out_dir.glob("*.whl"))
        run([py, "-m", "wheel", "pack", str(base), "--dest-dir", str(out_dir)])
        timings["pack"] = time.perf_counter() - t0
        created = sorted(set(out_dir.glob("*.whl")) - before) or sorted(out_dir.glob("*.whl"))
        if not created:
            raise SystemExit("baseline: wheel pack produced no wheel")
        t0 = time.perf_counter()
    timings["cleanup"] = time.perf_counter() - t0
    timings["unpack_total"] = sum(timings["unpack"])
    return created[0], timings


def main() -> int:
    ap = argparse.ArgumentParser(description="wheel unpack / move / wheel pack baseline")
    ap.add_argument("wheels", nargs="+", type=Path)
    ap.add_argument("-o", "--output-dir", type=Path, default=Path("dist"))
    ap.add_argument("--package", default="fatpkg", help="top-level package to split")
    ap.add_argument("--timings", type=Path, help="write phase timings here (JSON)")
    ap.add_argument("--tmpdir", help="where to unpack (default: the system temp dir)")
    ap.add_argument("--copy", action="store_true",
                    help="copy the trees like the original script instead of renaming")
    args = ap.parse_args()
    if len(args.wheels) < 2:
        ap.error("need at least two wheels")
    t0 = time.perf_counter()
    out, timings = merge(args.wheels, args.output_dir, args.package, args.tmpdir, args.copy)
    timings["total"] = time.perf_counter() - t0
    sys.stderr.write("baseline: unpack " + " + ".join(f"{t:.2f}" for t in timings["unpack"])
                     + f" s, rearrange {timings['rearrange']:.2f} s, pack {timings['pack']:.2f} s,"
                     f" cleanup {timings['cleanup']:.2f} s, total {timings['total']:.2f} s\n")
    if args.timings:
        args.timings.write_text(json.dumps(timings, indent=2) + "\n")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
