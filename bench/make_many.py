#!/usr/bin/env python3
"""Generate the benchmark's many-entries inputs, reproducibly.

For each requested count N, writes a pair of wheels into bench/out/many/N/:

    manypkg-1.0-cp311-cp311-manylinux_2_28_x86_64.cu12.whl
    manypkg-1.0-cp311-cp311-manylinux_2_28_x86_64.cu13.whl

Each holds N small modules `manypkg/sub{i // 1000}/m{i}.py` (i = 0 .. N-1), of 250-450 bytes
of varied Python source each (a docstring, constants, a small table and a function, drawn
from a seeded generator), byte-identical in both wheels; plus a few files per build:

- `manypkg/__init__.py`: shared, imports `manypkg._build`;
- `manypkg/_build.py`: differs per build (the CUDA version it was "built" with): a plain file
  that may differ only when named by `--variant-file 'manypkg/_build.py'`;
- `manypkg/_native.cpython-311-x86_64-linux-gnu.so`: 2 KiB of random bytes per build (a native
  module: wheelmerge keeps it per build without being told);
- `.dist-info/`: METADATA (only Requires-Dist differs: `cuda-bindings<13,>=12.0` /
  `cuda-bindings<14,>=13.0`), WHEEL, top_level.txt and a correct RECORD (sha256, urlsafe base64
  without padding, sizes).

So a wheel has N + 7 entries, and a merged wheel about N + 8 (the shared modules once, two
copies of each per-build file, wheelmerge's loader, the dist-info). Written with `zipfile` at
deflate level 6 with fixed timestamps, like make_wheels.py, so the output is byte-for-byte
reproducible for a given zlib. `stamp.json` in each directory records the parameters and the
wheels' sha256; when both match, generation is skipped.

Usage: python bench/make_many.py [--out DIR] [--force] [N ...]   (default N: 10 50000 70000)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import time
import zipfile
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# The same zip entries (deflate level, timestamp, attributes) and hashes as the big pair's.
from make_wheels import COMPRESSLEVEL, DATE_TIME, _zinfo, sha256_file, stamp_if_current  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration" / "support"))
import wheelgen as wg  # noqa: E402  (the tests' RECORD helpers)

GENERATOR_VERSION = 1
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "out" / "many"
DEFAULT_COUNTS = (10, 50_000, 70_000)

NAME = "manypkg"
VERSION = "1.0"
TAG = "cp311-cp311-manylinux_2_28_x86_64"
VARIANTS = ("cu12", "cu13")
SEED = "wheelmerge-bench-many-v1"
VARIANT_GLOB = f"{NAME}/_build.py"
NATIVE = f"{NAME}/_native.cpython-311-x86_64-linux-gnu.so"

REQUIRES = {"cu12": "cuda-bindings<13,>=12.0", "cu13": "cuda-bindings<14,>=13.0"}
CUDA = {"cu12": "12.9", "cu13": "13.0"}
WORDS = ("alpha", "beta", "gamma", "delta", "kernel", "stream", "event", "graph", "buffer",
         "device", "context", "module", "launch", "memory", "pool", "array", "tensor", "layout")


def wheel_name(variant: str) -> str:
    return f"{NAME}-{VERSION}-{TAG}.{variant}.whl"


def params(count: int) -> dict:
    return {"generator_version": GENERATOR_VERSION, "seed": SEED, "count": count,
            "compresslevel": COMPRESSLEVEL, "zlib": zlib.ZLIB_RUNTIME_VERSION}


# --------------------------------------------------------------------------- data


def module_source(i: int, rng: random.Random) -> bytes:
    w1, w2 = rng.choice(WORDS), rng.choice(WORDS)
    table = ", ".join(str(rng.randrange(1 << 20)) for _ in range(rng.randrange(4, 16)))
    a, b = rng.randrange(1, 1000), rng.randrange(1000)
    return (f'"""manypkg module {i}: the {w1} {w2} helpers (generated)."""\n'
            f"VALUE = {i}\n"
            f'NAME = "{w1}_{w2}_{i}"\n'
            f"TABLE = ({table},)\n\n\n"
            f"def {w1}_{i}(x: int) -> int:\n"
            f'    """Scale x for {w2} {rng.randrange(10 ** 6)}."""\n'
            f"    return x * {a} + {b} + TABLE[x % len(TABLE)]\n").encode()


def shared_payload(count: int) -> list[tuple[str, bytes]]:
    rng = random.Random(f"{SEED}:modules")
    return [(f"{NAME}/sub{i // 1000}/m{i}.py", module_source(i, rng)) for i in range(count)]


INIT_PY = b'''"""manypkg: a synthetic package with many small modules (wheelmerge benchmark input)."""
from ._build import CUDA

__all__ = ["CUDA"]
'''


def build_files(variant: str) -> list[tuple[str, bytes]]:
    native = random.Random(f"{SEED}:native:{variant}").randbytes(2048)
    return [(f"{NAME}/_build.py", f'CUDA = "{CUDA[variant]}"\n'.encode()), (NATIVE, native)]


def metadata(variant: str) -> bytes:
    return ("Metadata-Version: 2.1\n"
            f"Name: {NAME}\n"
            f"Version: {VERSION}\n"
            "Summary: Synthetic package with many small modules (wheelmerge benchmark input)\n"
            "License: Apache-2.0\n"
            "Requires-Python: >=3.11\n"
            f"Requires-Dist: {REQUIRES[variant]}\n"
            "\n"
            "manypkg: a synthetic package with many small modules.\n").encode()


def wheel_meta() -> bytes:
    return ("Wheel-Version: 1.0\n"
            "Generator: wheelmerge-bench (make_many.py)\n"
            "Root-Is-Purelib: false\n"
            f"Tag: {TAG}\n").encode()


# --------------------------------------------------------------------------- writing


def write_wheel(variant: str, out_dir: Path, count: int) -> tuple[str, str, int, int, float]:
    """Write one wheel; return (file name, sha256 hex, size, entries, seconds)."""
    t0 = time.perf_counter()
    name = wheel_name(variant)
    tmp = out_dir / (name + ".tmp")
    dist_info = f"{NAME}-{VERSION}.dist-info"
    members = [(f"{NAME}/__init__.py", INIT_PY), *build_files(variant), *shared_payload(count),
               (f"{dist_info}/METADATA", metadata(variant)), (f"{dist_info}/WHEEL", wheel_meta()),
               (f"{dist_info}/top_level.txt", f"{NAME}\n".encode())]
    record = wg.record_file((wg.record_row(n, d) for n, d in members), f"{dist_info}/RECORD")
    members.append((f"{dist_info}/RECORD", record))
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=COMPRESSLEVEL) as zf:
        for n, d in members:
            zf.writestr(_zinfo(n), d)
    digest, size = sha256_file(tmp), tmp.stat().st_size
    os.replace(tmp, out_dir / name)
    return name, digest, size, len(members), time.perf_counter() - t0


def _write_wheel_star(args):
    return write_wheel(*args)


def cached(out_dir: Path, count: int) -> dict | None:
    return stamp_if_current(out_dir, params(count), [wheel_name(v) for v in VARIANTS])


def ensure_one(count: int, out_root: Path = DEFAULT_OUT, force: bool = False,
               quiet: bool = False) -> list[Path]:
    """Make sure the pair of `count` modules exists; return its paths (cu12, cu13)."""
    out_dir = out_root / str(count)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / wheel_name(v) for v in VARIANTS]
    if not force and cached(out_dir, count) is not None:
        if not quiet:
            print(f"make_many: {count} up to date in {out_dir} (stamp.json)", file=sys.stderr)
        return paths
    (out_dir / "stamp.json").unlink(missing_ok=True)
    t0 = time.perf_counter()
    jobs = [(v, out_dir, count) for v in VARIANTS]
    if count >= 1000 and (os.cpu_count() or 1) > 1:
        with multiprocessing.get_context("fork").Pool(min(len(jobs), os.cpu_count() or 1)) as pool:
            results = pool.map(_write_wheel_star, jobs)
    else:
        results = [write_wheel(*j) for j in jobs]
    files = {}
    for name, digest, size, entries, secs in results:
        files[name] = {"sha256": digest, "size": size, "entries": entries}
        if not quiet:
            print(f"make_many:   {name} ({count}): {size / 1e6:.1f} MB, {entries} entries in "
                  f"{secs:.1f} s", file=sys.stderr)
    (out_dir / "stamp.json").write_text(json.dumps({"params": params(count), "files": files},
                                                   indent=2) + "\n")
    if not quiet:
        print(f"make_many: {count} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return paths


def ensure(counts=DEFAULT_COUNTS, out_root: Path = DEFAULT_OUT, force: bool = False,
           quiet: bool = False) -> dict[int, list[Path]]:
    return {n: ensure_one(n, out_root, force, quiet) for n in counts}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("counts", nargs="*", type=int, default=list(DEFAULT_COUNTS),
                    help=f"modules per wheel (default {' '.join(map(str, DEFAULT_COUNTS))})")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--force", action="store_true", help="regenerate even if up to date")
    args = ap.parse_args()
    for paths in ensure(args.counts, args.out, args.force).values():
        for p in paths:
            print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
