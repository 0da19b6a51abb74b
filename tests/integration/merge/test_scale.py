"""Scale: a member over 4 GiB, an archive over 4 GiB and more than 65,535 entries merge
correctly, with bounded memory ("Hardening", item 3).

For each case the real binary merges two generated wheels; the output must

* open in Python's ``zipfile`` (members read back through their CRC-32, big ones streamed),
* pass the strict byte-level checks of WHEEL_RULES.md "Writing", rules 7 to 10: entries tile
  the file, local and central fields identical, ZIP64 exactly where a size or offset does not
  fit 32 bits (local header: both sizes 0xFFFFFFFF and a 16-byte extra with both sizes, no
  offset; central: only the overflowing fields, in the order usize, csize, offset; the ZIP64
  end record (size 44) and locator exactly when the entry count, the directory's offset or its
  size overflows; Unix regular-file modes; one timestamp),
* match its RECORD (sha256 and size of every member; ``python -m wheel unpack`` where the disk
  and time allow it),
* be byte-identical across two runs (the second with the inputs in reverse order),

and the binary's peak RSS (GNU time ``%M``) must stay under a bound.

Inputs are written by ``wheelgen.build_wheel``, straight to disk; big members are
``wheelgen.Stream``s of a short random block repeated, stored or deflated, so that generating
them costs one sha256 pass and a CRC computed with ``crc32_combine`` arithmetic.

Sizes: the default run is the short version (a member over 4 GiB, 70,000 entries; about 100 s
on 2 cores). ``WHEELMERGE_SCALE_FULL=1`` adds the archive over 4 GiB (about 13 GB of disk,
written and deleted), ``wheel unpack`` of the member over 4 GiB, and raises the entry count to
200,000. ``WHEELMERGE_SCALE_REPORT=FILE`` appends one JSON line of figures per case to FILE
(``bench/scale.py`` collects them for docs/scale.md).
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import mmap
import os
import random
import shutil
import struct
import subprocess
import tempfile
import time
import zipfile
import zlib
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Mapping, Sequence

import pytest

from conftest import clean_env, run, tool_python
from measured_run import GNU_TIME
from wheelgen import (AS_WHEELMERGE_WRITES, CENTRAL_HEADER, DEFLATED, EOCD, LOCAL_HEADER, MADE_BY_UNIX,
                      SIG_CENTRAL, SIG_EOCD, SIG_LOCAL, SIG_ZIP64_EOCD, SIG_ZIP64_LOCATOR, STORED, U16,
                      U32, ZIP64_EOCD, ZIP64_LOCATOR, Stream, build_wheel, record_digest, zip64_extra)

FULL = os.environ.get("WHEELMERGE_SCALE_FULL", "") not in ("", "0")
REPORT = os.environ.get("WHEELMERGE_SCALE_REPORT")

GIB = 1 << 30
MIB = 1 << 20

NAME = "scalepkg"
VERSION = "1.0"
TAGS = "cp311-cp311-linux_x86_64"
EXT = ".cpython-311-x86_64-linux-gnu.so"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"
OUTPUT_NAME = f"{NAME}-{VERSION}-{TAGS}.whl"
LABELS = ("cu12", "cu13")


# --- CRC-32 of repeated data, without reading it ------------------------------------------------

def _gf2_times(matrix: list[int], vector: int) -> int:
    total, i = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[i]
        vector >>= 1
        i += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, matrix[n]) for n in range(32)]


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A + B from crc(A), crc(B) and len(B) (zlib's crc32_combine)."""
    if len2 <= 0:
        return crc1
    odd = [0xEDB88320] + [1 << n for n in range(31)]  # the operator for one zero bit
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while True:
        even = _gf2_square(odd)
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _gf2_square(even)
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def crc32_repeated(block: bytes, count: int) -> int:
    """CRC-32 of ``block * count``, by doubling."""
    result, result_len = 0, 0
    power, power_len = zlib.crc32(block), len(block)
    while count:
        if count & 1:
            result = crc32_combine(result, power, power_len)
            result_len += power_len
        count >>= 1
        if count:
            power = crc32_combine(power, power, power_len)
            power_len *= 2
    return result


@lru_cache(maxsize=None)
def sha256_repeated(block: bytes, count: int, tail: bytes = b"") -> bytes:
    """sha256 of ``block * count + tail`` (one pass; cached, the big members recur)."""
    h = hashlib.sha256()
    in_batches(block, count, h.update)
    h.update(tail)
    return h.digest()


def in_batches(block: bytes, count: int, consume: Callable[[bytes], object]) -> None:
    """Hands ``block * count`` to ``consume`` about 8 MiB at a time."""
    batch = block * max(1, (8 * MIB) // len(block))
    per_batch = len(batch) // len(block)
    left = count
    while left >= per_batch:
        consume(batch)
        left -= per_batch
    consume(block * left)


# --- big members, streamed into wheelgen's zip writer ---------------------------------------------

def stored_repeated(block: bytes, count: int) -> Stream:
    """``block * count``, stored: as many bytes on disk as in the member."""
    size = len(block) * count
    return Stream(STORED, crc32_repeated(block, count), size, size, sha256_repeated(block, count),
                  lambda f: in_batches(block, count, f.write))


@lru_cache(maxsize=None)
def _deflated_chunk(chunk: bytes) -> tuple[bytes, bytes]:
    """The raw deflate bytes of ``chunk`` ended by a full flush (no reference to earlier data,
    byte-aligned, not final), and the bytes that end a stream after any number of them."""
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    second = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    # After a full flush the compressor starts afresh: every further chunk gives these bytes.
    assert first == second, "zlib does not repeat itself after Z_FULL_FLUSH"
    return first, c.flush(zlib.Z_FINISH)


def deflated_repeated(chunk: bytes, count: int) -> Stream:
    """``chunk * count``, deflated: one full-flushed deflate segment repeated ``count`` times,
    then the final block. Tiny on disk however large the member."""
    segment, end = _deflated_chunk(chunk)

    def write(f: BinaryIO) -> None:
        in_batches(segment, count, f.write)
        f.write(end)

    return Stream(DEFLATED, crc32_repeated(chunk, count), len(chunk) * count,
                  len(segment) * count + len(end), sha256_repeated(chunk, count), write)


def write_wheel_streaming(path: Path, payload: Mapping[str, bytes | Stream], stored: Iterable[str] = ()) -> Path:
    """A valid wheel written by wheelgen as it goes: ``payload`` (in the given order; small
    members deflated but those named in ``stored``), then METADATA, WHEEL, RECORD."""
    return build_wheel(path, payload, NAME, VERSION, TAGS, metadata={"Summary": "wheelmerge scale test"},
                       wheel={"Generator": "wheelmerge tests (test_scale)"},
                       entry={name: {"method": STORED} for name in stored},
                       entry_defaults=AS_WHEELMERGE_WRITES)


def input_path(directory: Path, label: str) -> Path:
    return directory / f"{NAME}-{VERSION}-{TAGS}.{label}.whl"


def random_block(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


# --- strict structure checks, from the bytes -----------------------------------------------------

@dataclasses.dataclass
class CheckedEntry:
    name: str
    method: int
    crc: int
    usize: int
    csize: int
    offset: int
    data_offset: int
    external_attr: int


@dataclasses.dataclass
class ZipFacts:
    entries: list[CheckedEntry]
    cd_offset: int
    cd_size: int
    zip64_end: bool
    zip64_local: int  # entries with a ZIP64 extra in their local header
    zip64_central: dict[tuple[str, ...], int]  # overflowing central fields -> entries


def check_zip_strictly(path: Path) -> ZipFacts:
    """Walks the archive byte by byte (mmap: no copy of a multi-gigabyte file; the records read
    through wheelgen's layouts of them) and asserts the writing rules 7 and 8 of WHEEL_RULES.md.
    Returns what it found, for case-specific checks."""
    size = path.stat().st_size
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        eocd = size - EOCD.size
        end = EOCD.unpack_from(data, eocd)
        assert end["signature"] == SIG_EOCD, "no end record at the very end"
        assert (end["disk"], end["cd_disk"], end["comment_len"]) == (0, 0, 0)
        n_here, n_total = end["disk_entries"], end["total_entries"]
        locator = eocd - ZIP64_LOCATOR.size
        loc = ZIP64_LOCATOR.unpack_from(data, locator) if locator >= 0 else None
        zip64_end = loc is not None and loc["signature"] == SIG_ZIP64_LOCATOR
        if zip64_end:
            assert (loc["eocd_disk"], loc["total_disks"]) == (0, 1), "ZIP64 locator: disk fields"
            z64_offset = loc["eocd_offset"]
            assert z64_offset == locator - ZIP64_EOCD.size, "ZIP64 end record not right before its locator"
            z64 = ZIP64_EOCD.unpack_from(data, z64_offset)
            assert z64["signature"] == SIG_ZIP64_EOCD
            assert z64["record_size"] == 44, f"ZIP64 end record size {z64['record_size']}, expected 44"
            assert (z64["version_made"], z64["version_needed"]) == (MADE_BY_UNIX | 45, 45)
            count, cd_size, cd_offset = z64["total_entries"], z64["cd_size"], z64["cd_offset"]
            assert (z64["disk"], z64["cd_disk"]) == (0, 0) and z64["disk_entries"] == count
            cd_end = z64_offset
            # The 16/32-bit fields: the value where it fits, else the 0xFF.. marker.
            assert n_here == n_total == min(count, U16), (n_here, count)
            assert end["cd_size"] == min(cd_size, U32) and end["cd_offset"] == min(cd_offset, U32)
        else:
            assert n_here == n_total
            count, cd_size, cd_offset = n_total, end["cd_size"], end["cd_offset"]
            cd_end = eocd
        needs_zip64_end = count >= U16 or cd_offset >= U32 or cd_size >= U32
        assert zip64_end == needs_zip64_end, (
            f"ZIP64 end record {'present' if zip64_end else 'absent'} with {count} entries, "
            f"directory at {cd_offset} of {cd_size} bytes")
        assert cd_offset + cd_size == cd_end, "bytes between the central directory and the end records"

        entries: list[CheckedEntry] = []
        zip64_local = 0
        zip64_central: dict[tuple[str, ...], int] = {}
        stamps: set[tuple[int, int]] = set()
        pos, expected_offset = cd_offset, 0
        for _ in range(count):
            c = CENTRAL_HEADER.unpack_from(data, pos)
            assert c["signature"] == SIG_CENTRAL, f"no central header at {pos}"
            at = pos + CENTRAL_HEADER.size
            name_bytes = data[at:at + c["name_len"]]
            name = name_bytes.decode("utf-8")
            extra = data[at + c["name_len"]:at + c["name_len"] + c["extra_len"]]
            flags, method, needed = c["flags"], c["method"], c["version_needed"]
            assert c["comment_len"] == 0 and c["disk_start"] == 0 and c["internal_attr"] == 0, name
            assert flags & 0x0008 == 0, f"{name}: data descriptor flag"
            assert flags & ~0x0800 == 0, f"{name}: flags {flags:#x}"
            assert method in (STORED, DEFLATED), name
            pos = at + c["name_len"] + c["extra_len"]

            # Central: only the overflowing fields in the ZIP64 extra, usize, csize, offset.
            fields32 = {"usize": c["usize"], "csize": c["csize"], "offset": c["offset"]}
            over = tuple(k for k, v in fields32.items() if v == U32)
            values = dict(fields32)
            if over:
                assert len(extra) == 4 + 8 * len(over), f"{name}: central extra {extra.hex()}"
                hid, hlen = struct.unpack_from("<HH", extra)
                assert (hid, hlen) == (1, 8 * len(over)), f"{name}: central extra header {hid:#x}/{hlen}"
                for i, k in enumerate(over):
                    values[k] = struct.unpack_from("<Q", extra, 4 + 8 * i)[0]
                    assert values[k] >= U32, f"{name}: {k}={values[k]} in the ZIP64 extra fits 32 bits"
                zip64_central[over] = zip64_central.get(over, 0) + 1
            else:
                assert extra == b"", f"{name}: central extra field without need: {extra.hex()}"
            usize, csize, offset = values["usize"], values["csize"], values["offset"]
            assert c["version_made"] == MADE_BY_UNIX | needed, f"{name}: made by {c['version_made']:#x}"
            # Rule 9: (S_IFREG | 0o644 or 0o755) << 16. Rule 10: one timestamp for every entry.
            external = c["external_attr"]
            assert external in ((0o100644 << 16), (0o100755 << 16)), f"{name}: external attributes {external:#x}"
            stamps.add((c["mtime"], c["mdate"]))
            assert len(stamps) == 1, f"{name}: timestamps differ between entries: {stamps}"
            assert needed == (45 if over else 20), f"{name}: version needed {needed}"
            assert offset == expected_offset, f"{name}: local header at {offset}, expected {expected_offset} (gap or overlap)"

            # Local header: both sizes 0xFFFFFFFF and a 16-byte extra with both, only when a
            # size overflows; never the offset.
            local = LOCAL_HEADER.unpack_from(data, offset)
            assert local["signature"] == SIG_LOCAL, f"{name}: no local header at {offset}"
            at = offset + LOCAL_HEADER.size
            l_name = data[at:at + local["name_len"]]
            l_extra = data[at + local["name_len"]:at + local["name_len"] + local["extra_len"]]
            assert l_name == name_bytes, f"local name {l_name!r} for {name!r}"
            shared = ("flags", "method", "mtime", "mdate", "crc")
            assert [local[k] for k in shared] == [c[k] for k in shared], name
            big = usize >= U32 or csize >= U32
            if big:
                assert (local["usize"], local["csize"]) == (U32, U32), (
                    f"{name}: local sizes {local['usize']:#x}/{local['csize']:#x}")
                assert l_extra == zip64_extra(usize, csize), (
                    f"{name}: local extra {l_extra.hex()}, expected ZIP64 with both sizes only")
                zip64_local += 1
            else:
                assert (local["usize"], local["csize"]) == (usize, csize), f"{name}: local sizes"
                assert l_extra == b"", f"{name}: local extra field without need: {l_extra.hex()}"
            # Both headers ask for the same version (45 whenever any field of the entry is ZIP64).
            assert local["version_needed"] == needed, (
                f"{name}: local version {local['version_needed']}, central {needed}")
            if method == STORED:
                assert usize == csize, name
            data_offset = at + local["name_len"] + local["extra_len"]
            expected_offset = data_offset + csize
            entries.append(CheckedEntry(name, method, c["crc"], usize, csize, offset, data_offset, external))
        assert pos == cd_offset + cd_size, "central directory size disagrees with its records"
        assert expected_offset == cd_offset, "bytes between the last entry and the central directory"
    return ZipFacts(entries, cd_offset, cd_size, zip64_end, zip64_local, zip64_central)


def check_with_zipfile(path: Path, facts: ZipFacts, sample: int = 2000, seed: int = 0) -> dict[str, list[str]]:
    """Python's zipfile agrees on every name, size, offset and CRC; a sample of the members
    (all of them up to ``sample``) and every member over 64 MiB are read back through zipfile,
    streaming, which checks each one's CRC-32 at its end as ``testzip`` does, and their sha256
    and size compared with RECORD. Returns RECORD as path -> [hash, size]."""
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        assert [i.filename for i in infos] == [e.name for e in facts.entries]
        for i, e in zip(infos, facts.entries):
            assert (i.file_size, i.compress_size, i.header_offset, i.CRC) == (e.usize, e.csize, e.offset, e.crc), e.name
            assert i.external_attr == e.external_attr
        record_name = f"{DIST_INFO}/RECORD"
        assert infos[-1].filename == record_name, "RECORD is not the last member"
        rows = list(csv.reader(io.StringIO(z.read(record_name).decode("utf-8"))))
        record = {r[0]: r[1:] for r in rows}
        assert len(record) == len(rows) == len(infos), "RECORD rows do not list every member once"
        assert record[record_name] == ["", ""]
        big = [i for i in infos if i.file_size > 64 * MIB]
        small = [i for i in infos if i.file_size <= 64 * MIB and i.filename != record_name]
        chosen = random.Random(seed).sample(small, min(sample, len(small))) + big
        for info in chosen:
            h = hashlib.sha256()
            n = 0
            with z.open(info) as member:  # ZipExtFile raises BadZipFile on a CRC mismatch at EOF
                while chunk := member.read(4 * MIB):
                    h.update(chunk)
                    n += len(chunk)
            assert record[info.filename] == [record_digest(h.digest()), str(n)], info.filename
    return record


# --- running the binary, measured -----------------------------------------------------------------

@dataclasses.dataclass
class Measured:
    returncode: int
    wall_s: float
    maxrss_mib: float
    rss_method: str
    stdout: str
    stderr: str


def measured_run(command: Sequence[str | Path], log_dir: Path, env: dict[str, str] | None = None) -> Measured:
    """Runs the command with its peak RSS from GNU time (``%M``) when installed. os.wait4's
    ru_maxrss would carry this Python process's high-water mark into the child across exec
    (subprocess forks from it), so it is only a fallback, and then only an upper bound."""
    log_dir.mkdir(parents=True, exist_ok=True)
    time_file = log_dir / "time.txt"
    use_time = os.access(GNU_TIME, os.X_OK)
    args = [str(c) for c in command]
    full = [GNU_TIME, "-o", str(time_file), "-f", "%M"] + args if use_time else args
    environment = clean_env({"NO_COLOR": "1"})
    environment.pop("SOURCE_DATE_EPOCH", None)
    environment.update(env or {})
    with open(log_dir / "stdout", "wb") as out, open(log_dir / "stderr", "wb") as err:
        start = time.perf_counter()
        process = subprocess.Popen(full, stdout=out, stderr=err, env=environment)
        try:
            _, status, usage = os.wait4(process.pid, 0)
        except BaseException:
            process.kill()
            process.wait()
            raise
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    maxrss_kib, method = usage.ru_maxrss, "os.wait4 (upper bound)"
    if use_time:
        text = time_file.read_text().strip().splitlines()
        if text and text[-1].isdigit():
            maxrss_kib, method = int(text[-1]), "GNU time %M"
    return Measured(process.returncode, wall, maxrss_kib / 1024, method,
                    (log_dir / "stdout").read_text(errors="replace"),
                    (log_dir / "stderr").read_text(errors="replace"))


def merge_measured(binary: Path, inputs: Sequence[Path], out: Path, log_dir: Path) -> tuple[Path, Measured]:
    out.mkdir(parents=True, exist_ok=True)
    result = measured_run([binary, "merge", *inputs, "-o", out], log_dir)
    assert result.returncode == 0, (f"merge failed with {result.returncode}\n--- stdout\n{result.stdout}"
                                    f"\n--- stderr\n{result.stderr}")
    files = sorted(p.name for p in out.iterdir())
    assert files == [OUTPUT_NAME], f"expected exactly {OUTPUT_NAME} in {out}, found {files}"
    return out / OUTPUT_NAME, result


def same_bytes(a: Path, b: Path) -> bool:
    return subprocess.run(["cmp", "-s", str(a), str(b)]).returncode == 0


def wheel_unpack(wheel: Path, work: Path, unpacked_bytes: int) -> float:
    """``python -m wheel unpack`` (it checks every member against RECORD), into /dev/shm when
    that is a tmpfs with room to spare: thousands of small files are slow to create and very
    slow to delete on a disk mounted with online discard, as here (3 minutes for 70,000)."""
    shm = Path("/dev/shm")
    roomy = shm.is_dir() and os.access(shm, os.W_OK) and free_bytes(shm) > 4 * unpacked_bytes + GIB
    base = shm if roomy and unpacked_bytes < GIB else work
    destination = Path(tempfile.mkdtemp(prefix="wheelmerge-unpack-", dir=base))
    try:
        start = time.perf_counter()
        run([tool_python(), "-m", "wheel", "unpack", "-d", destination, wheel], timeout=1800)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(destination, ignore_errors=True)


def report(case: str, **figures) -> None:
    """One JSON line of figures per case, for bench/scale.py and docs/scale.md."""
    if REPORT:
        figures = {"case": case, "full": FULL, **figures}
        with open(REPORT, "a") as f:
            f.write(json.dumps(figures) + "\n")


def merge_twice_and_check(binary: Path, inputs: Sequence[Path], work: Path) -> tuple[Path, ZipFacts, dict]:
    """Merges, checks the structure byte by byte and through zipfile, merges again with the
    inputs reversed and compares. Returns the first output, its facts and figures."""
    first, run1 = merge_measured(binary, inputs, work / "out1", work / "log1")
    start = time.perf_counter()
    facts = check_zip_strictly(first)
    strict_s = time.perf_counter() - start
    start = time.perf_counter()
    check_with_zipfile(first, facts)
    zipfile_s = time.perf_counter() - start
    second, run2 = merge_measured(binary, list(reversed(inputs)), work / "out2", work / "log2")
    assert same_bytes(first, second), "two merges of the same inputs differ"
    second.unlink()
    figures = dict(
        entries=len(facts.entries), output_bytes=first.stat().st_size,
        input_bytes=[p.stat().st_size for p in inputs],
        merge_s=[round(run1.wall_s, 2), round(run2.wall_s, 2)],
        peak_rss_mib=[round(run1.maxrss_mib, 1), round(run2.maxrss_mib, 1)], binary=str(binary),
        rss_method=run1.rss_method, strict_check_s=round(strict_s, 2),
        zipfile_check_s=round(zipfile_s, 2), zip64_local=facts.zip64_local,
        zip64_central={"+".join(k): v for k, v in facts.zip64_central.items()},
        zip64_end=facts.zip64_end)
    return first, facts, figures


def peak_rss(figures: dict) -> float:
    """The peak RSS to hold against a bound. A sanitizer build's (shadow memory, quarantine)
    says nothing about wheelmerge's own memory: it counts as 0, and the release build's pass of
    the suite is the one whose memory is bounded."""
    return 0.0 if sanitized_binary(Path(figures["binary"])) else max(figures["peak_rss_mib"])


@lru_cache(maxsize=None)
def sanitized_binary(binary: Path) -> bool:
    data = binary.read_bytes()
    return b"__asan_init" in data or b"__ubsan_handle" in data


def free_bytes(path: Path) -> int:
    s = os.statvfs(path)
    return s.f_bavail * s.f_frsize


# --- the cases ------------------------------------------------------------------------------------

def variant_so(label: str, size: int = 4096) -> bytes:
    return random_block(int(label[2:]), size)


def common_small_members(tail_files: int = 8) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(before, after): __init__.py and a few shared files sorted after the big members."""
    before = {f"{NAME}/__init__.py": b'"""scalepkg: wheelmerge scale test."""\n'}
    after = {f"{NAME}/tail/f{i:02d}.py": f"VALUE = {i}\n".encode() for i in range(tail_files)}
    return before, after


BIG_MEMBER_CHUNK_COUNT = 4097  # 4 GiB + 1 MiB: the uncompressed size overflows 32 bits


@lru_cache(maxsize=None)
def big_member_chunk() -> bytes:
    """1 MiB: a 4 KiB random block repeated (compresses about 90:1, not a trivial run of zeros)."""
    return random_block(4242, 4096) * 256


@pytest.fixture(scope="module")
def scale_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scale")


def test_crc32_helpers_match_zlib() -> None:
    block = random_block(1, 1000)
    for count in (0, 1, 2, 3, 7, 64, 1000):
        assert crc32_repeated(block, count) == zlib.crc32(block * count), count
    assert sha256_repeated(block, 5, b"x") == hashlib.sha256(block * 5 + b"x").digest()
    chunk = big_member_chunk()
    m = deflated_repeated(chunk, 3)
    buf = io.BytesIO()
    m.write(buf)
    assert zlib.decompress(buf.getvalue(), -15) == chunk * 3 and len(buf.getvalue()) == m.csize
    assert m.crc == zlib.crc32(chunk * 3)


def test_member_over_4_gib(wheelmerge_bin: Path, scale_dir: Path) -> None:
    """A shared member of 4 GiB + 1 MiB (deflated, 46 MiB compressed) in both builds: only its
    uncompressed size overflows. Local header: both sizes 0xFFFFFFFF and a 16-byte ZIP64 extra;
    central: the usize alone in the extra; no ZIP64 end record (few entries, small offsets)."""
    work = scale_dir / "big-member"
    inputs_dir = work / "inputs"
    inputs_dir.mkdir(parents=True)
    start = time.perf_counter()
    big = deflated_repeated(big_member_chunk(), BIG_MEMBER_CHUNK_COUNT)
    inputs = []
    for label in LABELS:
        before, after = common_small_members()
        so = f"{NAME}/_core{EXT}"
        payload = {**before, so: variant_so(label), f"{NAME}/data/big.bin": big, **after}
        inputs.append(write_wheel_streaming(input_path(inputs_dir, label), payload, stored=[so]))
    generate_s = time.perf_counter() - start

    merged, facts, figures = merge_twice_and_check(wheelmerge_bin, inputs, work)
    by_name = {e.name: e for e in facts.entries}
    e = by_name[f"{NAME}/data/big.bin"]
    assert e.usize == big.usize > U32 and e.csize == big.csize < U32
    assert facts.zip64_local == 1 and facts.zip64_central == {("usize",): 1}
    assert not facts.zip64_end

    # wheel unpack writes the 4 GiB out and hashes it again (about 40 s here): the full version
    # only. The short one has every member's sha256 checked against RECORD through zipfile.
    unpack_s = None
    if FULL and free_bytes(work) > big.usize + 4 * GIB:
        unpack_s = wheel_unpack(merged, work, big.usize)
    report("member over 4 GiB", generate_s=round(generate_s, 1), unpack_s=unpack_s and round(unpack_s, 1),
           member_usize=big.usize, member_csize=big.csize, **figures)
    # Members are copied between files in the kernel, streamed through 1 MiB buffers otherwise:
    # memory does not grow with a member's size.
    assert peak_rss(figures) < 64, figures
    shutil.rmtree(work)


MANY_FILES = 200_000 if FULL else 70_000


def test_more_than_65535_entries(wheelmerge_bin: Path, scale_dir: Path) -> None:
    """70,000 tiny shared files (200,000 in the full version) and 4 variant extension modules
    per build: the count overflows the end record's 16 bits, so the ZIP64 end record and
    locator must be there, and nothing else ZIP64 (every size and offset fits)."""
    work = scale_dir / "many-entries"
    inputs_dir = work / "inputs"
    inputs_dir.mkdir(parents=True)
    start = time.perf_counter()
    shared = {f"{NAME}/files/d{i // 1000:03d}/m{i:06d}.py": f"X = {i}\n".encode() for i in range(MANY_FILES)}
    inputs = []
    for label in LABELS:
        before, after = common_small_members()
        sos = {f"{NAME}/ext/_m{j}{EXT}": variant_so(label, 2048 + j) for j in range(4)}
        inputs.append(write_wheel_streaming(input_path(inputs_dir, label), {**before, **sos, **shared, **after},
                                            stored=sos))
    del shared
    generate_s = time.perf_counter() - start

    merged, facts, figures = merge_twice_and_check(wheelmerge_bin, inputs, work)
    # payload (files, __init__.py, tail files) + 8 labelled modules + loader and its rules
    # module + dist-info (3)
    assert len(facts.entries) == MANY_FILES + 1 + 8 + 8 + 2 + 3
    assert facts.zip64_end and facts.zip64_local == 0 and facts.zip64_central == {}
    unpack_s = wheel_unpack(merged, work, 4096 * len(facts.entries))
    report("more than 65,535 entries", generate_s=round(generate_s, 1), unpack_s=round(unpack_s, 1),
           **figures)
    # Memory grows with the number of entries, never with their data: per entry the merger
    # holds, for each input, its central directory record, RECORD row and verification result,
    # and for the output its plan entry, RECORD row and central directory record (libzip's
    # consistency check of the output adds its own directory). Measured: about 2.2 KiB per
    # output entry over a floor of ~10 MiB (54 MiB at 20,000 entries, 98 MiB at 40,000,
    # 164 MiB at 70,000). The bound allows 3 KiB per entry over 32 MiB (237 MiB at 70,000):
    # a regression to holding member data, or a quadratic structure, fails it.
    bound = 32 + 3 * len(facts.entries) / 1024
    assert peak_rss(figures) < bound, (bound, figures)
    shutil.rmtree(work)


BIG_STORED_BLOCK = 1_048_573  # a prime number of bytes: a misplaced copy cannot line up again


@pytest.mark.skipif(not FULL, reason="writes about 13 GB (an input and two outputs over 4 GiB); "
                                     "set WHEELMERGE_SCALE_FULL=1")
def test_archive_over_4_gib(wheelmerge_bin: Path, scale_dir: Path) -> None:
    """The cu12 build's extension module is 4 GiB + 64 MiB, stored (random bytes, a prime-sized
    block repeated); both builds share the deflated 4 GiB + 1 MiB member. In the output:

    * ``_core.cu12...so`` at a small offset: usize and csize overflow (local: ZIP64 extra with
      both sizes; central: usize, csize);
    * every later entry sits past 4 GiB: central extra holds the offset alone, local header has
      no extra;
    * ``data/big.bin`` past 4 GiB with a small compressed size: central extra is usize, offset
      (the csize skipped);
    * the directory starts past 4 GiB: ZIP64 end record and locator.
    """
    work = scale_dir / "big-archive"
    inputs_dir = work / "inputs"
    inputs_dir.mkdir(parents=True)
    core_count = -(-(4 * GIB + 64 * MIB) // BIG_STORED_BLOCK)
    needed = 3 * core_count * BIG_STORED_BLOCK + 4 * GIB + 2 * GIB
    if free_bytes(work) < needed:
        pytest.skip(f"needs {needed / GIB:.0f} GiB free in {work}, has {free_bytes(work) / GIB:.0f}")
    start = time.perf_counter()
    big = deflated_repeated(big_member_chunk(), BIG_MEMBER_CHUNK_COUNT)
    cores = {"cu12": stored_repeated(random_block(12, BIG_STORED_BLOCK), core_count), "cu13": variant_so("cu13")}
    core = f"{NAME}/_core{EXT}"
    inputs = []
    for label in LABELS:
        before, after = common_small_members()
        payload = {**before, core: cores[label], f"{NAME}/data/big.bin": big, **after}
        inputs.append(write_wheel_streaming(input_path(inputs_dir, label), payload, stored=[core]))
    generate_s = time.perf_counter() - start
    assert inputs[0].stat().st_size > 4 * GIB

    merged, facts, figures = merge_twice_and_check(wheelmerge_bin, inputs, work)
    assert merged.stat().st_size > 4 * GIB
    by_name = {e.name: e for e in facts.entries}
    core12 = by_name[f"{NAME}/_core.cu12{EXT}"]
    assert core12.usize == core12.csize == cores["cu12"].usize and core12.offset < U32
    assert by_name[f"{NAME}/data/big.bin"].offset > U32
    after_core = len(facts.entries) - 1 - [e.name for e in facts.entries].index(core12.name)
    assert facts.zip64_local == 2
    assert facts.zip64_central == {("usize", "csize"): 1, ("usize", "offset"): 1,
                                   ("offset",): after_core - 1}, facts.zip64_central
    assert facts.zip64_end and facts.cd_offset > U32

    # wheel unpack writes both big members out (8 GiB) and hashes them: only with room to spare.
    unpack_s = None
    if free_bytes(work) > core12.usize + big.usize + 8 * GIB:
        unpack_s = wheel_unpack(merged, work, core12.usize + big.usize)
    report("archive over 4 GiB", generate_s=round(generate_s, 1), unpack_s=unpack_s and round(unpack_s, 1),
           **figures)
    assert peak_rss(figures) < 64, figures
    shutil.rmtree(work)
