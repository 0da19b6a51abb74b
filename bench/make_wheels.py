#!/usr/bin/env python3
"""Generate the benchmark's input wheels, reproducibly.

Writes two wheels of about 200 MB each into bench/out/wheels/:

    fatpkg-1.0-cp311-cp311-manylinux_2_28_x86_64.cu12.whl
    fatpkg-1.0-cp311-cp311-manylinux_2_28_x86_64.cu13.whl

Each holds four "fatbin-like" binaries of about 100 MiB (fatpkg/kernels/k0.fatbin ..
k3.fatbin, different in every file and every variant) plus a handful of small shared files
that are byte-identical in both wheels. Members are deflated at level 6, like a normal
wheel build, and RECORD carries correct sha256 hashes and sizes.

The binary data imitates GPU machine code: a stream of 16-byte instruction words, each one
of a small per-variant set of opcode templates (skewed, Zipf-like frequencies) with a random
operand component (register / immediate fields) XORed into 20 of its 128 bits. Deflate
level 6 compresses it about 2:1 at a few tens of MB/s, which is the regime real fatbins and
cubins sit in (compressible, but not cheaply).

Everything is derived from fixed seeds, so the output is byte-for-byte reproducible for a
given zlib. A stamp file (bench/out/wheels/stamp.json) records the generator parameters and
the sha256 of each wheel; when both wheels exist with those hashes, generation is skipped.

Usage: python bench/make_wheels.py [--out DIR] [--force] [--size-mib N]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import sys
import time
import zipfile
import zlib
from pathlib import Path

GENERATOR_VERSION = 2
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "out" / "wheels"
sys.path.insert(0, str(HERE.parent / "tests" / "integration" / "support"))
import wheelgen as wg  # noqa: E402  (the tests' RECORD helpers)

NAME = "fatpkg"
VERSION = "1.0"
TAG = "cp311-cp311-manylinux_2_28_x86_64"
VARIANTS = ("cu12", "cu13")
N_KERNELS = 4
KERNEL_MIB = 100
COMPRESSLEVEL = 6
SEED = "wheelmerge-bench-v1"
CHUNK_WORDS = 1 << 18  # 4 MiB of 16-byte words per generation step
DATE_TIME = (2024, 1, 1, 0, 0, 0)

# Which bits of each 16-byte instruction word carry the random operand component
# (bytes 8..11: 8 + 4 bits, byte 12: 8 bits -> 20 random bits per word).
OPERAND_MASK = bytes.fromhex("0000000000000000ff0f0000ff000000")
N_TEMPLATES = 96

REQUIRES = {
    "cu12": "cuda-bindings<13,>=12.0",
    "cu13": "cuda-bindings<14,>=13.0",
}


def wheel_name(variant: str) -> str:
    return f"{NAME}-{VERSION}-{TAG}.{variant}.whl"


def params(size_mib: int) -> dict:
    return {
        "generator_version": GENERATOR_VERSION,
        "seed": SEED,
        "kernels": N_KERNELS,
        "kernel_mib": size_mib,
        "compresslevel": COMPRESSLEVEL,
        "operand_mask": OPERAND_MASK.hex(),
        "templates": N_TEMPLATES,
        "chunk_words": CHUNK_WORDS,
        "zlib": zlib.ZLIB_RUNTIME_VERSION,
    }


# --------------------------------------------------------------------------- data


def kernel_chunks(variant: str, index: int, size: int):
    """Yield the bytes of one fatbin-like kernel file, in chunks (deterministic)."""
    # The instruction set (templates) is per variant; the instruction stream per file.
    isa = random.Random(f"{SEED}:isa:{variant}")
    templates = [isa.randbytes(16) for _ in range(N_TEMPLATES)]
    weights = [1.0 / (i + 1) ** 0.9 for i in range(N_TEMPLATES)]
    total = sum(weights)
    cumulative, acc = [], 0.0
    for w in weights:
        acc += w
        cumulative.append(acc / total)
    table, j = bytearray(), 0
    for b in range(256):  # byte value -> template index, skewed
        p = (b + 0.5) / 256
        while cumulative[j] < p:
            j += 1
        table.append(j)
    table = bytes(table)

    rng = random.Random(f"{SEED}:kernel:{variant}:{index}")
    # A fatbin-ish header: magic 0xBA55ED50, version, size, then an identifying string.
    header = (
        (0xBA55ED50).to_bytes(4, "little")
        + (1).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + size.to_bytes(8, "little")
        + f"{NAME} {variant} kernel {index} sm_80 sm_90 sm_100".encode().ljust(48, b"\0")
    )
    yield header
    remaining = size - len(header)
    mask_chunk = int.from_bytes(OPERAND_MASK * CHUNK_WORDS, "little")
    while remaining > 0:
        words = CHUNK_WORDS
        idx = rng.randbytes(words).translate(table)
        base = b"".join(map(templates.__getitem__, idx))
        rnd = int.from_bytes(rng.randbytes(16 * words), "little")
        data = (int.from_bytes(base, "little") ^ (rnd & mask_chunk)).to_bytes(16 * words, "little")
        if len(data) > remaining:
            data = data[:remaining]
        remaining -= len(data)
        yield data


def kernel_size(variant: str, index: int, size_mib: int) -> int:
    # About size_mib MiB, not all exactly equal (cu13 builds a little larger).
    extra = index * 12_288 + (65_536 if variant == "cu13" else 0)
    return size_mib * 2**20 + extra


INIT_PY = '''"""fatpkg: a synthetic package with large GPU kernels, used by wheelmerge's benchmark.

The kernels in fatpkg/kernels/ are built per CUDA major version.
"""
from __future__ import annotations

from ._version import __version__
from .registry import kernel_path, kernel_names

__all__ = ["__version__", "kernel_path", "kernel_names"]
'''

VERSION_PY = '__version__ = "1.0"\n'

REGISTRY_PY = '''"""Where fatpkg's kernels live."""
from __future__ import annotations

import os

_KERNELS = ("k0", "k1", "k2", "k3")


def kernel_names() -> tuple[str, ...]:
    return _KERNELS


def kernel_path(name: str) -> str:
    if name not in _KERNELS:
        raise KeyError(name)
    return os.path.join(os.path.dirname(__file__), "kernels", name + ".fatbin")
'''

LAUNCH_PY = '''"""Launch helpers (synthetic)."""
from __future__ import annotations


def grid(n: int, block: int = 256) -> tuple[int, int, int]:
    return ((n + block - 1) // block, 1, 1)


def shared_bytes(block: int, per_thread: int = 16) -> int:
    return block * per_thread
''' + "".join(
    f"\n\ndef tuned_config_{i}(n: int) -> dict:\n"
    f'    """Configuration table entry {i}."""\n'
    f"    return {{'block': {32 * (1 + i % 8)}, 'unroll': {1 + i % 4}, 'n': n}}\n"
    for i in range(60)
)


def shared_files() -> list[tuple[str, bytes]]:
    return [
        (f"{NAME}/__init__.py", INIT_PY.encode()),
        (f"{NAME}/_version.py", VERSION_PY.encode()),
        (f"{NAME}/registry.py", REGISTRY_PY.encode()),
        (f"{NAME}/launch.py", LAUNCH_PY.encode()),
        (f"{NAME}/py.typed", b""),
    ]


def metadata(variant: str) -> bytes:
    # Only Requires-Dist differs between the variants (the description is the same text,
    # as it is for real builds of one project).
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {VERSION}\n"
        "Summary: Synthetic package with large GPU kernels (wheelmerge benchmark input)\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.11\n"
        f"Requires-Dist: {REQUIRES[variant]}\n"
        "\n"
        "fatpkg: a synthetic package with large GPU kernels.\n"
    ).encode()


def wheel_meta() -> bytes:
    return (
        "Wheel-Version: 1.0\n"
        "Generator: wheelmerge-bench (make_wheels.py)\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {TAG}\n"
    ).encode()


# --------------------------------------------------------------------------- writing


def _zinfo(name: str) -> zipfile.ZipInfo:
    zi = zipfile.ZipInfo(name, date_time=DATE_TIME)
    zi.compress_type = zipfile.ZIP_DEFLATED
    if hasattr(zipfile.ZipInfo, "compress_level"):  # Python >= 3.13
        zi.compress_level = COMPRESSLEVEL
    else:
        zi._compresslevel = COMPRESSLEVEL
    zi.external_attr = 0o100644 << 16
    zi.create_system = 3
    return zi


def write_wheel(variant: str, out_dir: Path, size_mib: int) -> tuple[str, str, int, float]:
    """Write one wheel; return (file name, sha256 hex, size, seconds)."""
    t0 = time.perf_counter()
    name = wheel_name(variant)
    final = out_dir / name
    tmp = out_dir / (name + ".tmp")
    rows: list[list[str]] = []
    dist_info = f"{NAME}-{VERSION}.dist-info"
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED,
                         compresslevel=COMPRESSLEVEL) as zf:
        for arcname, data in shared_files():
            zf.writestr(_zinfo(arcname), data)
            rows.append(wg.record_row(arcname, data))
        for i in range(N_KERNELS):
            arcname = f"{NAME}/kernels/k{i}.fatbin"
            h, n = hashlib.sha256(), 0
            with zf.open(_zinfo(arcname), "w") as f:
                for chunk in kernel_chunks(variant, i, kernel_size(variant, i, size_mib)):
                    f.write(chunk)
                    h.update(chunk)
                    n += len(chunk)
            rows.append([arcname, wg.record_digest(h.digest()), str(n)])
        for fname, data in (("METADATA", metadata(variant)), ("WHEEL", wheel_meta()),
                            ("top_level.txt", f"{NAME}\n".encode())):
            arcname = f"{dist_info}/{fname}"
            zf.writestr(_zinfo(arcname), data)
            rows.append(wg.record_row(arcname, data))
        zf.writestr(_zinfo(f"{dist_info}/RECORD"), wg.record_file(rows, f"{dist_info}/RECORD"))
    digest = sha256_file(tmp)
    size = tmp.stat().st_size
    os.replace(tmp, final)
    return name, digest, size, time.perf_counter() - t0


def _write_wheel_star(args):
    return write_wheel(*args)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def stamp_if_current(out_dir: Path, expected_params: dict, names: list[str]) -> dict | None:
    """out_dir/stamp.json, if it records `expected_params` and every file of `names` exists with
    the stamped size and sha256."""
    try:
        stamp = json.loads((out_dir / "stamp.json").read_text())
    except (OSError, ValueError):
        return None
    if stamp.get("params") != expected_params:
        return None
    for name in names:
        entry = stamp.get("files", {}).get(name)
        path = out_dir / name
        if not entry or not path.is_file() or path.stat().st_size != entry["size"]:
            return None
        if sha256_file(path) != entry["sha256"]:
            return None
    return stamp


def cached(out_dir: Path, size_mib: int) -> dict | None:
    """The stamp, if both wheels exist with the stamped hashes and parameters."""
    return stamp_if_current(out_dir, params(size_mib), [wheel_name(v) for v in VARIANTS])


def ensure(out_dir: Path = DEFAULT_OUT, force: bool = False, size_mib: int = KERNEL_MIB,
           quiet: bool = False) -> list[Path]:
    """Make sure both wheels exist; return their paths (cu12, cu13)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / wheel_name(v) for v in VARIANTS]
    if not force and cached(out_dir, size_mib) is not None:
        if not quiet:
            print(f"make_wheels: up to date in {out_dir} (stamp.json)", file=sys.stderr)
        return paths
    (out_dir / "stamp.json").unlink(missing_ok=True)
    if not quiet:
        print(f"make_wheels: generating {len(VARIANTS)} wheels of {N_KERNELS} x ~{size_mib} MiB "
              f"kernels into {out_dir} ...", file=sys.stderr)
    t0 = time.perf_counter()
    jobs = [(v, out_dir, size_mib) for v in VARIANTS]
    workers = min(len(jobs), os.cpu_count() or 1)
    if workers > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            results = pool.map(_write_wheel_star, jobs)
    else:
        results = [write_wheel(*j) for j in jobs]
    files = {}
    for name, digest, size, secs in results:
        files[name] = {"sha256": digest, "size": size}
        if not quiet:
            print(f"make_wheels:   {name}: {size / 1e6:.1f} MB in {secs:.1f} s", file=sys.stderr)
    stamp = {"params": params(size_mib), "files": files}
    (out_dir / "stamp.json").write_text(json.dumps(stamp, indent=2) + "\n")
    if not quiet:
        print(f"make_wheels: done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--force", action="store_true", help="regenerate even if up to date")
    ap.add_argument("--size-mib", type=int, default=KERNEL_MIB,
                    help=f"approximate size of each kernel file (default {KERNEL_MIB})")
    args = ap.parse_args()
    for p in ensure(args.out, args.force, args.size_mib):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
