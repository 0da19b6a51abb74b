#!/usr/bin/env python3
"""The benchmark's real-wheel input: cuda-core, split back into its per-CUDA-major builds.

cuda-core's wheel on the package index is itself a merge: NVIDIA's CI builds cuda.core once per
CUDA major (each build a complete `cuda/core/` package, with the wheel renamed to
`...cu12.whl` / `...cu13.whl`), then `ci/tools/merge_cuda_core_wheels.py` copies each build's
`cuda/core/` tree to `cuda/core/cuNN/` of the first build's tree, empties each
`cuda/core/cuNN/__init__.py`, keeps the first build's dispatching `cuda/core/__init__.py` and
shared headers at the top, and packs the result. This script undoes that, giving the two wheels
the publisher's CI built:

- the pinned wheel comes from the corpus of the tests (tests/integration/support/real_wheels.py:
  name, version, size and sha256 pinned; fetched from the index once and kept in
  `${WHEELMERGE_WHEEL_CACHE:-~/.cache/wheelmerge}/real-wheels/`, checked against its sha256 on
  every use) through that module's own `fetch`;
- the build for major NN is `cuda/core/cuNN/X` moved to `cuda/core/X`, for every X except
  `__init__.py` (emptied by the merge script), plus the top-level `cuda/core/__init__.py` (the
  same source file in every build), plus any top-level file the build's tree lacks (none in
  1.2.2: every top-level file also sits in both cuNN/ trees);
- the `.dist-info` is the published one (METADATA is static in cuda-core's pyproject.toml, so
  the builds share it; its cu12 / cu13 extras are written there by hand), with a fresh RECORD;
- members are deflated at zlib's default level, keeping each source member's date and mode;
  so the halves are byte-for-byte reproducible for a given zlib.

In 1.2.2 each build has 174 files under `cuda/core/`; 18 of its extension modules differ
between the builds (wheelmerge keeps those as variant files, `X.cu12.cpython-...so`), the
other 156 files are identical.

Output (`bench/out/real/`): `cuda_core-1.2.2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.cu12.whl`
and `.cu13.whl`, plus `stamp.json` (parameters, source and output sha256); when they match,
nothing is redone.

Usage: python bench/make_real.py [--out DIR] [--force]
Exit status 3 when the wheel cannot be fetched (no network and nothing cached).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_OUT = HERE / "out" / "real"
sys.path.insert(0, str(ROOT / "tests" / "integration" / "support"))
import real_wheels  # noqa: E402  (the corpus and fetcher of the tests)
import wheelgen as wg  # noqa: E402  (their RECORD helpers)
sys.path.insert(0, str(HERE))
from make_wheels import sha256_file, stamp_if_current  # noqa: E402

GENERATOR_VERSION = 1
PROJECT = "cuda-core"
PACKAGE = "cuda/core"
LABELS = ("cu12", "cu13")
VARIANT_ASSUMPTION = "NVIDIA ci/tools/merge_cuda_core_wheels.py layout: cuda/core/cuNN/"


class Unavailable(Exception):
    """The source wheel could not be fetched (and is not cached)."""


def pinned() -> real_wheels.RealWheel:
    (wheel,) = [w for w in real_wheels.WHEELS if w.name == PROJECT and "x86_64" in w.filename]
    return wheel


def split_name(source_name: str, label: str) -> str:
    assert source_name.endswith(".whl")
    return source_name[:-4] + f".{label}.whl"


def params() -> dict:
    w = pinned()
    return {"generator_version": GENERATOR_VERSION, "source": w.filename,
            "source_sha256": w.sha256, "zlib": zlib.ZLIB_RUNTIME_VERSION,
            "layout": VARIANT_ASSUMPTION}



def plan_split(names: list[str], label: str) -> list[tuple[str, str]]:
    """(member name in the build, member name in the merged source) for one build's payload."""
    top = f"{PACKAGE}/"
    own = f"{PACKAGE}/{label}/"
    variant_dir = re.compile(re.escape(top) + r"cu\d+/")
    plan: dict[str, str] = {}
    for n in names:
        if n.startswith(own) and not n.endswith("/"):
            rest = n[len(own):]
            if rest != "__init__.py":  # emptied by the merge script; the top one is the build's
                plan[top + rest] = n
    if not plan:
        raise SystemExit(f"make_real: no {own} in the source wheel: not the layout assumed "
                         f"({VARIANT_ASSUMPTION})")
    for n in names:
        if n.endswith("/") or ".dist-info/" in n or variant_dir.match(n):
            continue
        if n == top + "__init__.py" or n not in plan:  # top-level files the build lacks
            plan.setdefault(n, n)
    return sorted(plan.items())


def write_split(source: Path, label: str, out_dir: Path) -> tuple[str, str, int, int]:
    """Write one build's wheel; return (file name, sha256 hex, size, members)."""
    name = split_name(source.name, label)
    tmp = out_dir / (name + ".tmp")
    rows: list[list[str]] = []
    with zipfile.ZipFile(source) as src, \
            zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        names = src.namelist()
        (info_dir,) = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}

        def copy(new: str, old: str) -> None:
            si = src.getinfo(old)
            data = src.read(old)
            zi = zipfile.ZipInfo(new, date_time=si.date_time)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = si.external_attr or (0o100644 << 16)
            zi.create_system = 3
            dst.writestr(zi, data)
            rows.append(wg.record_row(new, data))

        for new, old in plan_split(names, label):
            copy(new, old)
        for n in names:  # the dist-info, in the source's order, RECORD rewritten last
            if n.startswith(info_dir + "/") and n != f"{info_dir}/RECORD" and not n.endswith("/"):
                copy(n, n)
        zi = zipfile.ZipInfo(f"{info_dir}/RECORD", date_time=src.getinfo(f"{info_dir}/RECORD").date_time)
        zi.compress_type = zipfile.ZIP_DEFLATED
        zi.external_attr = 0o100644 << 16
        zi.create_system = 3
        dst.writestr(zi, wg.record_file(rows, f"{info_dir}/RECORD"))
        members = len(rows) + 1
    digest, size = sha256_file(tmp), tmp.stat().st_size
    os.replace(tmp, out_dir / name)
    return name, digest, size, members


def cached(out_dir: Path) -> dict | None:
    return stamp_if_current(out_dir, params(), [split_name(pinned().filename, label) for label in LABELS])


def ensure(out_dir: Path = DEFAULT_OUT, force: bool = False, quiet: bool = False) -> list[Path]:
    """Fetch (or reuse) the pinned cuda-core wheel and split it; return the builds' paths
    (cu12, cu13). Raises Unavailable when the wheel cannot be had."""
    out_dir.mkdir(parents=True, exist_ok=True)
    w = pinned()
    paths = [out_dir / split_name(w.filename, label) for label in LABELS]
    if not force and cached(out_dir) is not None:
        if not quiet:
            print(f"make_real: up to date in {out_dir} (stamp.json)", file=sys.stderr)
        return paths
    t0 = time.perf_counter()
    try:
        source = real_wheels.fetch(w)
    except real_wheels.FetchError as e:
        raise Unavailable(str(e)) from e
    t_fetch = time.perf_counter() - t0
    (out_dir / "stamp.json").unlink(missing_ok=True)
    files = {}
    for label in LABELS:
        name, digest, size, members = write_split(source, label, out_dir)
        files[name] = {"sha256": digest, "size": size, "members": members}
        if not quiet:
            print(f"make_real:   {name}: {size / 1e6:.2f} MB, {members} members", file=sys.stderr)
    stamp = {"params": params(), "source_path": str(source), "files": files}
    (out_dir / "stamp.json").write_text(json.dumps(stamp, indent=2) + "\n")
    if not quiet:
        print(f"make_real: fetched or checked {w.filename} in {t_fetch:.1f} s, split in "
              f"{time.perf_counter() - t0 - t_fetch:.1f} s", file=sys.stderr)
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--force", action="store_true", help="split again even if up to date")
    args = ap.parse_args()
    try:
        paths = ensure(args.out, args.force)
    except Unavailable as e:
        print(f"make_real: {e}", file=sys.stderr)
        return 3
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
