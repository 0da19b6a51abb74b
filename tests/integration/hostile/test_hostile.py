"""Hostile and odd-but-valid inputs, judged by a differential oracle.

The principle under test: an input is accepted only when every mainstream consumer (pip,
installer, ``wheel unpack``, Python's ``zipfile``, ``unzip``) reads it the same way; an output is
written only when it provably installs and behaves like its inputs.

Each case writes a cu12 and a cu13 wheel with ``wheelgen`` (byte-level where needed) and states
its outcome: exit 3 (invalid input), 4 (merge conflict) or 0. A refusal must name the input and
the member, write nothing and leave the inputs alone; single-input refusals are also checked with
``wheelmerge verify``. An accepted merge must have inputs the consumers agree on and an output
that passes ``oracle.assert_output_behaves`` (and, for ``__init__.py`` cases, imports). Messages
must never print a name raw: no forged ``wheelmerge:`` lines, no escape or bidi characters.
Resource cases (huge ELF dynamic sections, 62 MiB metadata, 3,000 chained libraries, 100,000
requirements, SIGTERM) check time and memory.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import platform
import re
import signal
import stat
import struct
import subprocess
import sys
import time
import unicodedata
import zipfile
from email.parser import BytesParser
from email.policy import compat32
from pathlib import Path
from typing import Any, Callable

import pytest
from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import oracle  # noqa: E402
import wheelgen as wg  # noqa: E402
from measured_run import BINARY, Run, run_measured, sanitized_binary  # noqa: E402
from conftest import Venv, loader_manifest  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]

PY = f"cp{sys.version_info.major}{sys.version_info.minor}"
ARCH = platform.machine()
# A machine other than this one's, as e_machine and as messages name it.
OTHER_MACHINE = (183, "AArch64") if ARCH == "x86_64" else (62, "x86-64")
TAGS = f"{PY}-{PY}-linux_{ARCH}"  # installable by the tools' pip
LABELS = ("cu12", "cu13")
DI = "pkg-1.0.dist-info"
DATA = "pkg-1.0.data"
INIT = "pkg/__init__.py"
UTIL = "pkg/util.py"
CORE = "pkg/_core.so"

INIT_BYTES = b'"""A wheelmerge hostile-corpus package."""\nINIT_RAN = True\n'
UTIL_BYTES = b"def answer():\n    return 42\n"

RUN_TIMEOUT_S = 60
RESOURCE_RSS_KIB = 256 * 1024
RESOURCE_AS_BYTES = 2 << 30
RESOURCE_CPU_S = 2.0


def core(label: str) -> bytes:
    """A variant extension module: an ELF shared object that differs per build."""
    return wg.elf_shared_object(payload=f"built for {label}".encode())


def base_files(label: str) -> dict:
    return {INIT: INIT_BYTES, UTIL: UTIL_BYTES, CORE: core(label)}


class Per(dict):
    """A value that differs per input: ``Per(cu12=..., cu13=...)``."""

    def __init__(self, **by_label):
        super().__init__(by_label)


def _resolve(value: Any, label: str) -> Any:
    if isinstance(value, Per):
        return value[label]
    if isinstance(value, dict) and not isinstance(value, Per):
        return {k: _resolve(v, label) for k, v in value.items()}
    return value


def W(add: dict | None = None, drop: tuple = (), replace: dict | None = None, *,
      files: Callable[[str], dict] | None = None, tags: str = TAGS, **kw) -> Callable[[str], bytes]:
    """A wheel maker (label -> bytes): the base files, ``add``/``drop``/``replace``; ``kw`` go to
    ``wheelgen.wheel_bytes``. ``Per`` values anywhere in them differ per label."""
    def make(label: str) -> bytes:
        fs = files(label) if files else base_files(label)
        fs = {k: v for k, v in fs.items() if k not in drop}
        fs.update(_resolve(replace or {}, label))
        fs.update(_resolve(add or {}, label))
        return wg.wheel_bytes(fs, tags=tags, **{k: _resolve(v, label) for k, v in kw.items()})
    return make


GOOD = W()


def both(**fields) -> dict:
    """The same header overrides for the local and the central record."""
    return {"local": dict(fields), "central": dict(fields)}


def no_utf8_flag() -> dict:
    return both(flags=lambda v: v & ~wg.FLAG_UTF8)


def row(rows: list[list[str]], path: str) -> list[str]:
    return next(r for r in rows if r[0] == path)


# --------------------------------------------------------------------------------------------
# Byte-level makers


def two_central_directories(label: str) -> bytes:
    """The classic end record points at a central directory without ``pkg/evil.py``; the ZIP64
    end record (which Python's zipfile prefers) points at a second one that lists it."""
    files = dict(base_files(label), **{"pkg/evil.py": b"import os\n"})
    full_layout: list = []
    full = wg.wheel_bytes(files, tags=TAGS, zip=dict(layout=full_layout))
    part_layout: list = []
    part = wg.wheel_bytes(files, tags=TAGS, entry={"pkg/evil.py": dict(in_central=False)},
                          zip=dict(layout=part_layout))
    lf, lp = full_layout[0], part_layout[0]
    cd_full = full[lf.central_offset:lf.central_offset + lf.central_size]
    cd_part = part[lp.central_offset:lp.central_offset + lp.central_size]
    assert part[:lp.central_offset] == full[:lf.central_offset]
    n_full = len(files) + 3
    out = bytearray(part[:lp.central_offset])
    out += cd_part
    full_offset = len(out)
    out += cd_full
    z64 = len(out)
    out += wg.ZIP64_EOCD.pack(dict(
        signature=wg.SIG_ZIP64_EOCD, record_size=44, version_made=wg.MADE_BY_UNIX | 45,
        version_needed=45, disk=0, cd_disk=0, disk_entries=n_full, total_entries=n_full,
        cd_size=len(cd_full), cd_offset=full_offset))
    out += wg.ZIP64_LOCATOR.pack(dict(signature=wg.SIG_ZIP64_LOCATOR, eocd_disk=0,
                                      eocd_offset=z64, total_disks=1))
    out += wg.eocd_record(disk_entries=n_full - 1, total_entries=n_full - 1, cd_size=len(cd_part),
                          cd_offset=lp.central_offset)
    return bytes(out)


def zip64_extensible_data(label: str) -> bytes:
    """A ZIP64 end record declaring (and followed by) 8 bytes of extensible data."""
    layout: list = []
    b = wg.wheel_bytes(base_files(label), tags=TAGS, zip=dict(zip64_end=True, layout=layout))
    z = layout[0].zip64_eocd_offset
    record = bytearray(b[z:z + 56])
    struct.pack_into("<Q", record, 4, 44 + 8)
    return b[:z] + bytes(record) + b"EXTDATA!" + b[z + 56:]


def cp437_name(label: str) -> bytes:
    """A name in code page 437 without the UTF-8 flag, RECORD holding its cp437 reading: zipfile,
    installer and ``wheel unpack`` see ``pkg/café.py``, unzip on Linux writes byte 0x82."""
    data = b"c = 1\n"

    def record(rows):
        rows.insert(0, ["pkg/caf\u00e9.py", wg.record_hash(data), str(len(data))])
    return W(add={b"pkg/caf\x82.py": data}, record=record)(label)


def record_row_for(path: str, data: bytes = b"x") -> Callable:
    def record(rows):
        rows.insert(0, [path, wg.record_hash(data), str(len(data))])
    return record


# --------------------------------------------------------------------------------------------
# Cases


@dataclasses.dataclass
class Case:
    id: str
    cu12: Callable[[str], bytes]
    cu13: Callable[[str], bytes] = GOOD
    exit: int | tuple = 3
    # Each item must appear in stderr; a tuple: any one of them.
    member: tuple = ()
    names: str = "bad"  # inputs a refusal must name: bad (the cu12 one), both, any
    verify: bool = False  # single-input case: `verify` of the cu12 input gives the same outcome
    disagree: bool = False  # the oracle itself finds the consumers disagreeing on the cu12 input
    imports: bool = False  # accepted: install and import pkg under WHEELMERGE_CUDA_MAJOR=12
    init_ran: bool = True
    check: Callable[[Path, str], None] | None = None  # accepted: (output, stderr)
    warn: tuple = ()
    tags12: str = TAGS
    tags13: str = TAGS
    stderr_re: str | None = None  # refusals: stderr must match (case-insensitive)


def refuse(id, cu12, member=(), *, verify=True, **kw) -> Case:
    """The cu12 input alone is invalid: exit 3, also from ``verify``."""
    return Case(id, cu12, exit=3, member=_members(member), verify=verify, **kw)


def conflict(id, cu12, cu13, member=(), **kw) -> Case:
    return Case(id, cu12, cu13, exit=4, member=_members(member), names="both", **kw)


def accept(id, make, **kw) -> Case:
    """Both inputs built alike by ``make`` (``Per`` values differ): accepted."""
    return Case(id, make, make, exit=0, **kw)


def _members(member) -> tuple:
    return (member,) if isinstance(member, str) else tuple(member)


def injection(id, init: bytes, **kw) -> Case:
    """``pkg/__init__.py`` of an odd shape beside a variant module: the merged package must
    import (its ``__init__`` running) or the merge must be refused as a conflict."""
    make = W(replace={INIT: init})
    return Case(id, make, make, exit=(0, 4), imports=True, names="any", **kw)


NFC = "pkg/\u00e9.py"
NFD = unicodedata.normalize("NFD", NFC)
ESCAPED_ACUTE = ("\\u{0301}", "\\u{301}", "\\u0301", "\\U00000301", "\\xcc\\x81", "U+0301", "\\314\\201", "%CC%81", "<cc><81>")
ESCAPED_RLO = ("\\u{202e}", "\\u{202E}", "\\u202e", "\\u202E", "\\U0000202e", "\\xe2\\x80\\xae", "U+202E", "\\342\\200\\256",
               "%E2%80%AE", "<e2><80><ae>")
SIZE_ERROR = r"size|large|limit|MiB|bytes|too long"

LONG_SEGMENT_255 = "pkg/" + "s" * 252 + ".py"  # a 255-byte segment
LONG_SEGMENT_256 = "pkg/" + "s" * 253 + ".py"
LONG_PATH = "pkg/" + "/".join(["d" * 200] * 21) + "/x.py"  # over 4096 bytes
VARIANT_252 = "pkg/" + "v" * 252 + ".so"  # 255 bytes; ".cu12" makes it 260


def output_check_tags(tagset: str) -> Callable[[Path, str], None]:
    def check(output: Path, stderr: str) -> None:
        assert output.name == f"pkg-1.0-{tagset}.whl", output.name
        with zipfile.ZipFile(output) as z:
            wheel = BytesParser(policy=compat32).parsebytes(z.read(f"{DI}/WHEEL"))
        assert sorted(wheel.get_all("Tag")) == sorted(wg.expand_tags(tagset)), wheel.get_all("Tag")
    return check


def output_check_follows_filename(output: Path, stderr: str) -> None:
    """CuPy's layout: the output's WHEEL tags are its file name's (a manylinux form), never
    the inputs' disagreeing ``linux_*`` Tag lines."""
    file_tags = output.name[: -len(".whl")].split("-", 2)[2]
    assert "manylinux" in file_tags, output.name
    with zipfile.ZipFile(output) as z:
        wheel = BytesParser(policy=compat32).parsebytes(z.read(f"{DI}/WHEEL"))
    tags = sorted(wheel.get_all("Tag"))
    assert tags == sorted(wg.expand_tags(file_tags)), (output.name, tags)
    assert not [t for t in tags if t.endswith(f"-linux_{ARCH}")], tags


def output_check_url(output: Path, stderr: str) -> None:
    reqs = oracle.requirements_of(output)
    urls = {r.url for r in reqs if r.url}
    assert urls == {"https://host/x;y.whl", "https://host/z.whl"}, urls


def manifest_of(output: Path) -> tuple[str, dict]:
    with zipfile.ZipFile(output) as z:
        loaders = [n for n in z.namelist() if n.endswith("/_wheelmerge.py")]
        assert len(loaders) == 1, loaders
        text = z.read(loaders[0]).decode("utf-8")
    return loaders[0], loader_manifest(text)


def output_check_platlib_package(output: Path, stderr: str) -> None:
    loader, manifest = manifest_of(output)
    assert loader == f"{DATA}/platlib/pkg/_wheelmerge.py", loader
    assert manifest["package"] == "pkg", manifest["package"]
    assert set(manifest["modules"]["cu12"]) == {"pkg._core"}, manifest["modules"]


PLATLIB_FILES = lambda label: {f"{DATA}/platlib/pkg/__init__.py": INIT_BYTES,  # noqa: E731
                               f"{DATA}/platlib/pkg/util.py": UTIL_BYTES,
                               f"{DATA}/platlib/pkg/_core.so": core(label)}

# On POSIX, the data scheme's bin/ is the scripts directory: both install bin/pkg-tool.
SCRIPT_SHADOW = W(add={f"{DATA}/scripts/pkg-tool": b"#!python\nprint(1)\n",
                       f"{DATA}/data/bin/pkg-tool": b"#!/bin/sh\necho 2\n"})

HOSTILE_MARKER = 'foo ; python_version >= "0") or (python_version < "0"'

CASES: list[Case] = [
    # ---- Zip layer: extra fields
    refuse("zip_unicode_path_extra_renames", W(entry={UTIL: both(
        extra=wg.unicode_path_extra(UTIL, "pkg/other.py"))}), member=UTIL, disagree=True),
    refuse("zip_unicode_path_extra_stale_crc", W(entry={UTIL: both(
        extra=wg.unicode_path_extra(UTIL, "pkg/other.py", crc=0))}), member=UTIL),
    refuse("zip_unicode_path_extra_central_only", W(entry={UTIL: {"central": {
        "extra": wg.unicode_path_extra(UTIL, "pkg/other.py")}}}), member=UTIL, disagree=True),
    # Extras that only unzip applies are refused even where they agree with the header today:
    # whether they agree hangs on each reader's CRC, version and length checks.
    refuse("zip_unicode_path_extra_agreeing", W(entry={UTIL: both(
        extra=wg.unicode_path_extra(UTIL, UTIL))}), member=UTIL),
    refuse("zip_unicode_comment_extra", W(entry={UTIL: {"central": {
        "comment": b"c", "extra": wg.unicode_comment_extra(b"c", "c")}}}), member=UTIL),
    # A ZIP64 extra where no field is saturated: some readers use its values, others do not.
    refuse("zip_zip64_extra_superfluous_agreeing", W(entry={UTIL: dict(method=wg.STORED, **both(
        extra=wg.zip64_extra(len(UTIL_BYTES), len(UTIL_BYTES))))}), member=UTIL),
    refuse("zip_zip64_extra_superfluous_disagreeing", W(entry={UTIL: dict(method=wg.STORED, **both(
        extra=wg.zip64_extra(len(UTIL_BYTES) + 7, len(UTIL_BYTES) + 7)))}), member=UTIL),
    refuse("zip_zip64_extra_central_offset_disagrees", W(entry={UTIL: {"central": {
        "extra": wg.zip64_extra(1234)}}}), member=UTIL),

    # ---- Zip layer: end records
    refuse("zip_zip64_eocd_counts_disagree", W(zip=dict(zip64_end=True, zip64_eocd={
        "disk_entries": lambda v: v + 1, "total_entries": lambda v: v + 1}))),
    refuse("zip_zip64_eocd_offset_disagrees", W(zip=dict(zip64_end=True, zip64_eocd={
        "cd_offset": lambda v: v + 46}))),
    refuse("zip_zip64_eocd_size_disagrees", W(zip=dict(zip64_end=True, zip64_eocd={
        "cd_size": lambda v: v - 1}))),
    refuse("zip_second_central_directory_via_zip64", two_central_directories, disagree=True),
    refuse("zip_zip64_extensible_data", zip64_extensible_data),

    # ---- Zip layer: flags and versions
    *[refuse(f"zip_flag_bit_{bit}", W(entry={UTIL: dict(flags=1 << bit)}), member=UTIL)
      for bit in (4, 5, 6, 12, 13, 14)],
    accept("ok_flag_bit_1", W(entry={UTIL: dict(flags=1 << 1)})),
    accept("ok_flag_bit_2", W(entry={UTIL: dict(flags=1 << 2)})),
    refuse("zip_version_needed_46", W(entry={UTIL: both(version_needed=46)}), member=UTIL),
    refuse("zip_version_needed_63", W(entry={UTIL: both(version_needed=63)}), member=UTIL),

    # ---- Zip layer: name encodings
    refuse("zip_non_ascii_name_without_utf8_flag",
           W(add={"pkg/caf\u00e9.py": b"c = 1\n"}, entry={"pkg/caf\u00e9.py": no_utf8_flag()}),
           member=("pkg/caf",), disagree=True),
    refuse("zip_cp437_name_record_agrees", cp437_name, member=("pkg/caf",), disagree=True),
    accept("ok_non_ascii_name_with_utf8_flag", W(add={"pkg/caf\u00e9.py": b"c = 1\n"})),
    accept("ok_ascii_name_with_utf8_flag", W(entry={UTIL: dict(flags=wg.FLAG_UTF8)})),

    # ---- Zip layer: hosts and attributes
    refuse("zip_fat_host_dos_directory_attr_on_file",
           W(entry={UTIL: dict(version_made=(0 << 8) | 20, external_attr=0x10)}), member=UTIL),
    refuse("zip_macos_host_symlink", W(add={"pkg/link": b"util.py"}, entry={"pkg/link": dict(
        version_made=(19 << 8) | 20, external_attr=(stat.S_IFLNK | 0o777) << 16)}), member="pkg/link"),
    refuse("zip_ntfs_host_symlink", W(add={"pkg/link": b"util.py"}, entry={"pkg/link": dict(
        version_made=(10 << 8) | 20, external_attr=(stat.S_IFLNK | 0o777) << 16)}), member="pkg/link"),
    refuse("zip_fat_host_char_device_bits", W(add={"pkg/dev": b""}, entry={"pkg/dev": dict(
        version_made=(0 << 8) | 20, external_attr=(stat.S_IFCHR | 0o644) << 16)}), member="pkg/dev"),
    accept("ok_fat_host_archive_attr", W(entries=lambda es: [
        dataclasses.replace(e, version_made=(0 << 8) | 20, external_attr=0x20) for e in es])),

    # ---- Zip layer: files, directories and paths
    refuse("zip_file_and_directory_entry_same_path",
           W(add={"pkg/sub": b"x\n"}, unrecorded={"pkg/sub/": b""},
             entry={"pkg/sub/": dict(external_attr=(stat.S_IFDIR | 0o755) << 16 | 0x10)}),
           member="pkg/sub", disagree=True),
    refuse("zip_file_and_file_below_it", W(add={"pkg/sub": b"x\n", "pkg/sub/c.py": b"c = 1\n"}),
           member="pkg/sub", disagree=True),
    refuse("zip_directory_entry_casefold_collision",
           W(unrecorded={"PKG/": b""}, entry={"PKG/": dict(external_attr=(stat.S_IFDIR | 0o755) << 16 | 0x10)}),
           member=("PKG/",)),
    refuse("zip_exec_bits_without_file_type", W(entry={UTIL: dict(external_attr=0o755 << 16)}), member=UTIL),
    accept("ok_directory_entry_alone",
           W(unrecorded={"pkg/empty/": b""}, entry={"pkg/empty/": dict(
               external_attr=(stat.S_IFDIR | 0o755) << 16 | 0x10)})),
    accept("ok_path_segment_255_bytes", W(add={LONG_SEGMENT_255: b"x = 1\n"})),
    refuse("zip_path_segment_256_bytes", W(add={LONG_SEGMENT_256: b"x = 1\n"}),
           member=("s" * 64,), disagree=True),
    refuse("zip_path_over_4096_bytes", W(add={LONG_PATH: b"x = 1\n"}), member=("d" * 64,),
           disagree=True),
    conflict("variant_label_overflows_segment", W(add={VARIANT_252: Per(cu12=core("a"), cu13=core("b"))}),
             W(add={VARIANT_252: Per(cu12=core("a"), cu13=core("b"))}), member=("v" * 64,)),

    # ---- Zip layer: twins
    refuse("zip_nfc_nfd_twins", W(add={NFC: b"a = 1\n", NFD: b"b = 2\n"}),
           member=[ESCAPED_ACUTE]),
    refuse("zip_casefold_sharp_s", W(add={"pkg/stra\u00dfe.py": b"a = 1\n", "pkg/STRASSE.py": b"b = 2\n"}),
           member=[("STRASSE",)]),
    refuse("zip_casefold_kelvin_sign", W(add={"pkg/k.py": b"a = 1\n", "pkg/\u212a.py": b"b = 2\n"}),
           member=[("pkg/k.py", "\\u212a", "\\u212A", "U+212A")]),
    conflict("nfc_nfd_across_inputs", W(add={NFC: b"a = 1\n"}), W(add={NFD: b"a = 1\n"}),
             member=[ESCAPED_ACUTE]),

    # ---- Zip layer: wheel-level directories
    refuse("foreign_dist_info_directory", W(add={"x.dist-info/foo.txt": b"x\n"}), member="x.dist-info"),
    refuse("foreign_data_directory", W(add={"y.data/z.txt": b"z\n"}), member="y.data"),
    refuse("file_named_like_dist_info", W(add={"foo-1.0.dist-info": b"x\n"}), member="foo-1.0.dist-info"),
    refuse("file_named_like_own_data_dir", W(add={DATA: b"x\n"}), member=DATA),
    refuse("data_platlib_shadows_root", W(add={f"{DATA}/platlib/pkg/util.py": UTIL_BYTES}),
           member=[UTIL], disagree=True),
    refuse("data_purelib_shadows_root_purelib_wheel",
           W(add={f"{DATA}/purelib/pkg/util.py": UTIL_BYTES}, root_is_purelib=True),
           member=[UTIL], disagree=True, cu13=W(root_is_purelib=True)),
    refuse("data_purelib_shadows_root_platlib_wheel",
           W(add={f"{DATA}/purelib/pkg/util.py": UTIL_BYTES}), member=[UTIL], disagree=True),
    refuse("data_platlib_casefold_shadows_root",
           W(add={f"{DATA}/platlib/PKG/util.py": UTIL_BYTES}), member=["util.py"], disagree=True),
    refuse("data_data_bin_shadows_scripts", SCRIPT_SHADOW, cu13=SCRIPT_SHADOW, member=["pkg-tool"],
           disagree=True, names="any"),

    # ---- METADATA
    refuse("metadata_duplicate_name", W(metadata={"Name": ["pkg", "pkg"]}), member="METADATA"),
    refuse("metadata_duplicate_name_differing", W(metadata={"Name": ["pkg", "other"]}), member="METADATA"),
    refuse("metadata_duplicate_version", W(metadata={"Version": ["1.0", "1.0"]}), member="METADATA"),
    refuse("metadata_utf8_bom", W(metadata=b"\xef\xbb\xbfMetadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"),
           member="METADATA"),
    refuse("metadata_non_utf8_summary", W(metadata={"Summary": "caf\udce9"}), member="METADATA"),
    refuse("requires_dist_invalid_marker", W(metadata={"Requires-Dist": ['foo ; python_version >> "3"']}),
           member="METADATA"),
    refuse("requires_dist_hostile_marker_differs",
           W(metadata={"Requires-Dist": [HOSTILE_MARKER]}),
           cu13=W(metadata={"Requires-Dist": ['foo ; python_version >= "3"']}), member="METADATA"),
    refuse("requires_dist_hostile_marker_unbalanced_open",
           W(metadata={"Requires-Dist": ['foo ; (python_version >= "0" or python_version < "0"']}),
           cu13=W(metadata={"Requires-Dist": ['foo']}), member="METADATA"),
    refuse("requires_dist_escape_sequence", W(metadata={"Requires-Dist": ["foo\x1b[31m>=1"]}),
           member="METADATA"),
    accept("ok_url_requirement_differs", W(metadata={"Requires-Dist": Per(
        cu12=['name @ https://host/x;y.whl ; python_version >= "3"'],
        cu13=['name @ https://host/z.whl ; python_version >= "3"'])}), check=output_check_url),
    accept("ok_or_markers_differ", W(metadata={"Requires-Dist": Per(
        cu12=['dep ; python_version < "3.10" or sys_platform == "win32"', "numpy"],
        cu13=['dep ; platform_machine == "aarch64" or python_version >= "3.12"', "numpy"])})),
    accept("ok_or_marker_one_side_only", W(metadata={"Requires-Dist": Per(
        cu12=['foo ; python_version >= "3.10" or sys_platform == "win32"', "cuda-bindings~=12.0"],
        cu13=["cuda-bindings~=13.0"])})),
    # An input requirement naming the other build's label as an extra: refused, or merged so
    # that the oracle finds it behaving.
    Case("or_marker_mentions_other_label", *(2 * [W(metadata={"Requires-Dist": Per(
        cu12=['foo ; python_version >= "3" or extra == "cu13"'], cu13=["bar"])})]),
         exit=(0, 4), names="any", member=("foo",)),
    accept("ok_own_extra_shared", W(metadata={"Provides-Extra": "test", "Requires-Dist": Per(
        cu12=['pytest ; extra == "test"', "cuda-bindings~=12.0"],
        cu13=['pytest ; extra == "test"', "cuda-bindings~=13.0"])})),
    # A requirement of an extra that differs becomes one extra per build ("gpu-cu12").
    accept("ok_own_extra_requirement_differs", W(metadata={
        "Provides-Extra": "gpu", "Requires-Dist": Per(cu12=['cupy-cuda12x ; extra == "gpu"', "scipy ; extra == 'gpu'"],
                                                       cu13=['cupy-cuda13x ; extra == "gpu"', "scipy ; extra == 'gpu'"])})),
    # ...unless it holds without the extra too, which no extra per build can express.
    conflict("own_extra_requirement_differs_without_it", *(2 * [W(metadata={
        "Provides-Extra": "gpu", "Requires-Dist": Per(cu12=['cupy-cuda12x ; extra == "gpu" or os_name == "nt"'],
                                                       cu13=['cupy-cuda13x ; extra == "gpu" or os_name == "nt"'])})]),
             member="gpu"),
    accept("ok_requirement_name_case_differs", W(metadata={"Requires-Dist": Per(
        cu12=["Foo>=1", "cuda-bindings~=12.0"], cu13=["foo>=1", "cuda-bindings~=13.0"])})),
    accept("ok_specifier_order_differs", W(metadata={"Requires-Dist": Per(
        cu12=["foo>=1,<2"], cu13=["foo <2, >=1"])})),
    conflict("metadata_summary_differs", *(2 * [W(metadata={"Summary": Per(cu12="one", cu13="two")})]),
             member="Summary"),
    conflict("metadata_requires_python_differs",
             *(2 * [W(metadata={"Requires-Python": Per(cu12=">=3.9", cu13=">=3.10")})]),
             member="Requires-Python"),

    # ---- Tags
    Case("ok_compressed_tag_set_kept",
         W(tags=f"{PY}-{PY}-manylinux_2_24_{ARCH}.manylinux_2_28_{ARCH}"),
         W(tags=f"{PY}-{PY}-manylinux_2_24_{ARCH}.manylinux_2_28_{ARCH}"), exit=0,
         tags12=f"{PY}-{PY}-manylinux_2_24_{ARCH}.manylinux_2_28_{ARCH}",
         tags13=f"{PY}-{PY}-manylinux_2_24_{ARCH}.manylinux_2_28_{ARCH}",
         check=output_check_tags(f"{PY}-{PY}-manylinux_2_24_{ARCH}.manylinux_2_28_{ARCH}")),
    Case("ok_wheel_tag_linux_filename_manylinux2014",
         W(tags=f"{PY}-{PY}-manylinux2014_{ARCH}", wheel={"Tag": f"{PY}-{PY}-linux_{ARCH}"}),
         W(tags=f"{PY}-{PY}-manylinux2014_{ARCH}", wheel={"Tag": f"{PY}-{PY}-linux_{ARCH}"}), exit=0,
         tags12=f"{PY}-{PY}-manylinux2014_{ARCH}", tags13=f"{PY}-{PY}-manylinux2014_{ARCH}",
         warn=(f"manylinux2014_{ARCH}", f"linux_{ARCH}"), check=output_check_follows_filename),

    # ---- Builds: what the native files say against the label and the tags
    refuse("build_links_the_cuda_runtime_of_another_major",
           W(replace={CORE: Per(cu12=wg.elf_shared_object(needed=["libc.so.6", "libcudart.so.13"], payload=b"cu12"),
                                cu13=core("cu13"))}), member=CORE,
           stderr_re=r"the cu12 build links a CUDA library of another major: expected CUDA 12's libraries \(cu12\), "
                     r"found DT_NEEDED libcudart\.so\.13, a library of CUDA 13"),
    refuse("native_file_of_another_machine",
           W(replace={CORE: Per(cu12=wg.elf_shared_object(payload=b"cu12", machine=OTHER_MACHINE[0]),
                                cu13=core("cu13"))}), member=CORE,
           stderr_re=rf"a native file for another machine than the wheel's platform tags: expected .*, as "
                     rf"linux_{ARCH} says, found {OTHER_MACHINE[1]} \(e_machine {OTHER_MACHINE[0]}, 64-bit, "
                     r"little-endian\)"),

    # ---- __init__.py injection
    injection("init_utf8_bom", b"\xef\xbb\xbf" + b'"""Doc."""\nfrom __future__ import annotations\nINIT_RAN = True\n'),
    injection("init_cr_only_newlines", b'"""Doc."""\rfrom __future__ import annotations\rINIT_RAN = True\r'),
    injection("init_crlf_backslash_future",
              b'"""Doc."""\r\nfrom __future__ import \\\r\n    annotations\r\nINIT_RAN = True\r\n'),
    injection("init_docstring_with_fake_future",
              b'"""Doc with \\""" inside, and a \'\'\' too.\nfrom __future__ import annotations\n"""\n'
              b'from __future__ import annotations\nINIT_RAN = True\n'),
    injection("init_future_semicolon", b"from __future__ import annotations; import os\nINIT_RAN = True\n"),
    injection("init_future_parenthesized",
              b'"""Doc."""\nfrom __future__ import (\n    annotations,\n    division,\n)\nINIT_RAN = True\n'),
    injection("init_no_trailing_newline", b'"""Doc."""\nINIT_RAN = True'),
    injection("init_latin1_coding_cookie",
              b'# -*- coding: latin-1 -*-\n"""Caf\xe9."""\nfrom __future__ import annotations\nINIT_RAN = True\n'),
    injection("init_raw_single_quoted_docstring",
              b"r'''Raw \\d doc.'''\nfrom __future__ import annotations\nINIT_RAN = True\n"),
    injection("init_comments_blank_lines_two_futures",
              b'#!/usr/bin/env python\n# comment\n\n"""Doc."""\n\n# c\nfrom __future__ import annotations\n'
              b'from __future__ import division\nINIT_RAN = True\n'),
    injection("init_empty", b"", init_ran=False),
    Case("namespace_package_without_init", W(drop=(INIT,)), W(drop=(INIT,)), exit=(0, 4),
         imports=True, init_ran=False, names="any"),
    Case("ok_package_only_under_data_platlib", W(files=PLATLIB_FILES), W(files=PLATLIB_FILES),
         exit=0, imports=True, check=output_check_platlib_package),
    conflict("variant_labelled_name_is_a_directory", *(2 * [W(add={"pkg/_core.cu12.so/x.py": b"x = 1\n"})]),
             member="pkg/_core.cu12.so"),
    conflict("variant_module_named_like_loader",
             *(2 * [W(add={"pkg/_wheelmerge.so": Per(cu12=core("x12"), cu13=core("x13"))})]),
             member="_wheelmerge"),
    conflict("shared_file_named_like_loader", *(2 * [W(add={"pkg/_wheelmerge.py": b"x = 1\n"})]),
             member="pkg/_wheelmerge.py"),
    conflict("variant_module_outside_any_package",
             *(2 * [W(add={"_top.so": Per(cu12=core("t12"), cu13=core("t13"))})]), member="_top.so"),

    # ---- Messages
    refuse("msg_name_newline_forged_line", W(add={"pkg/x\nwheelmerge: error: forged.py": b"x\n"}),
           member="pkg/x"),
    refuse("msg_name_escape_sequence", W(add={"pkg/\x1b[2J\x1b[31mred.py": b"x\n"}), member="red.py"),
    refuse("msg_record_row_rlo_name", W(add={"pkg/\u202eyp.txt": b"x\n"},
                                        record=lambda rows: row(rows, "pkg/\u202eyp.txt").__setitem__(
                                            1, wg.record_hash(b"other"))),
           member=[ESCAPED_RLO]),
    refuse("msg_record_row_comma_path", W(add={"pkg/a,b.txt": b"x\n"},
                                          record=lambda rows: row(rows, "pkg/a,b.txt").__setitem__(2, "3")),
           member="pkg/a,b.txt"),
    refuse("msg_record_row_forged_line",
           W(record=record_row_for("pkg/y\nwheelmerge: error: forged")), member="pkg/y"),
]

_ids = [c.id for c in CASES]
assert len(_ids) == len(set(_ids)), "duplicate case ids"


# --------------------------------------------------------------------------------------------
# Running


def assert_within_budget(r: Run, what: str, *, wall: bool = True, rss: bool = True) -> None:
    """The budget for any input under 1 MiB: under 2 s of CPU time and under 256 MiB. It is the
    release build's promise: a sanitizer build runs several times slower and holds shadow memory,
    so there only the outcome is checked. CPU time, not wall time: the suites run in parallel
    workers, and a quadratic path shows in CPU time alone."""
    if sanitized_binary():
        return
    if wall:
        assert r.cpu_s < RESOURCE_CPU_S, f"{what} took {r.cpu_s:.2f} s of CPU time:\n{describe(r)}"
    if rss:
        assert r.maxrss_kib < RESOURCE_RSS_KIB, f"{what}: peak RSS {r.maxrss_kib >> 10} MiB"


def run_wheelmerge(args: list[str], cwd: Path, limit_as: int | None = None,
                   timeout: float = RUN_TIMEOUT_S) -> Run:
    """Runs the binary; wall time and peak RSS of this one child (wait4)."""
    return run_measured(args, cwd, timeout=timeout, limit_as=limit_as)


def describe(r: Run) -> str:
    return (f"exit {r.rc} after {r.wall_s:.2f} s ({r.cpu_s:.2f} s of CPU time)\n"
            f"--- stdout\n{r.stdout[-6000:]}\n--- stderr\n{r.stderr[-6000:]}")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def contains(text: str, item: str | tuple) -> bool:
    return any(s in text for s in item) if isinstance(item, tuple) else item in text


_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f\u0085\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def assert_clean_messages(r: Run) -> None:
    """Nothing the input controls is printed raw: no control, escape or bidi characters, and no
    line that an input forged to look like the tool's own."""
    for stream, text in (("stderr", r.stderr), ("stdout", r.stdout)):
        bad = sorted({f"U+{ord(ch):04X}" for ch in _UNSAFE_CHARS.findall(text)})
        assert not bad, f"{stream} holds raw {bad}:\n{describe(r)}"
        forged = [line for line in text.splitlines() if line.startswith("wheelmerge: error: forged")]
        assert not forged, f"{stream} has a line forged by the input: {forged!r}\n{describe(r)}"


def assert_refusal(r: Run, expected: int, files: list[Path], names: str, members: tuple,
                   out: Path | None, before: dict, stderr_re: str | None = None) -> None:
    assert r.rc == expected, f"expected exit {expected}:\n{describe(r)}"
    assert any(line.startswith("wheelmerge: error: ") for line in r.stderr.splitlines()), \
        f"no 'wheelmerge: error: ' line:\n{describe(r)}"
    found = [f.name in r.stderr for f in files]
    if names == "both":
        assert all(found), f"stderr must name every input {[f.name for f in files]}:\n{describe(r)}"
    elif names == "any":
        assert any(found), f"stderr must name an input:\n{describe(r)}"
    else:
        assert found[0], f"stderr must name the input {files[0].name}:\n{describe(r)}"
    for item in members:
        assert contains(r.stderr, item), f"stderr must mention {item!r}:\n{describe(r)}"
    if stderr_re:
        assert re.search(stderr_re, r.stderr, re.I), f"stderr must match {stderr_re!r}:\n{describe(r)}"
    if out is not None:
        assert tree(out) == [], f"output written on refusal: {tree(out)}\n{describe(r)}"
    assert {p: digest(p) for p in before} == before, "an input was modified"


def assert_output_zip_hygiene(output: Path) -> None:
    """No input extra field, comment or directory entry reaches the output."""
    with zipfile.ZipFile(output) as z:
        for info in z.infolist():
            assert not info.is_dir(), f"directory entry {info.filename!r} in the output"
            assert not info.comment, f"comment on {info.filename!r} in the output"
            extra = info.extra
            while extra:
                header_id, size = struct.unpack_from("<HH", extra)
                assert header_id == wg.ZIP64_EXTRA_ID, \
                    f"extra field 0x{header_id:04x} on {info.filename!r} in the output"
                extra = extra[4 + size:]


IMPORT_PROBE = r"""
import importlib, json
m = importlib.import_module("pkg")
loader = importlib.import_module("pkg._wheelmerge")
print(json.dumps({"init_ran": getattr(m, "INIT_RAN", None), "selected": loader.selected(),
                  "bound": getattr(m, "_wheelmerge", None) is loader, "file": m.__file__}))
"""


def check_imports(venv: Venv, target: Path, init_ran: bool) -> None:
    r = venv.run("-c", IMPORT_PROBE, env={"PYTHONPATH": str(target), "WHEELMERGE_CUDA_MAJOR": "12"},
                 check=False)
    assert r.returncode == 0, f"importing the merged package failed:\n{r.stdout}{r.stderr}"
    facts = json.loads(r.stdout.strip().splitlines()[-1])
    assert facts["selected"] == "cu12", facts
    if init_ran:
        assert facts["init_ran"] is True, f"pkg/__init__.py did not run: {facts}"
        assert facts["bound"], f"pkg/__init__.py did not import the loader: {facts}"


def write_inputs(c: Case, tmp: Path) -> tuple[Path, Path]:
    (tmp / "in").mkdir(parents=True, exist_ok=True)
    p12 = tmp / "in" / wg.wheel_filename("pkg", "1.0", c.tags12, label="cu12")
    p13 = tmp / "in" / wg.wheel_filename("pkg", "1.0", c.tags13, label="cu13")
    p12.write_bytes(c.cu12("cu12"))
    p13.write_bytes(c.cu13("cu13"))
    return p12, p13


@pytest.fixture(scope="module")
def import_venv(make_venv) -> Venv:
    """An empty environment (no cuda-bindings); merged wheels are pip-installed into a target
    directory and imported from there with this interpreter."""
    return make_venv("hostile-import")


@pytest.mark.parametrize("c", CASES, ids=_ids)
def test_hostile(c: Case, tmp_path: Path, request) -> None:
    assert BINARY.is_file(), f"no wheelmerge binary at {BINARY}"
    p12, p13 = write_inputs(c, tmp_path)
    before = {p: digest(p) for p in (p12, p13)}
    allowed = c.exit if isinstance(c.exit, tuple) else (c.exit,)

    if c.disagree:
        assert oracle.consumers_disagreement(p12) is not None, \
            "the consumers agree on this input: the case does not test what it claims"

    if 3 not in allowed:  # each input is valid alone: every consumer reads it alike
        for p in (p12, p13):
            oracle.assert_consumers_agree(p)

    if c.verify:
        rv = run_wheelmerge(["verify", str(p12)], tmp_path)
        assert_clean_messages(rv)
        if 0 in allowed:
            assert rv.rc == 0, f"verify:\n{describe(rv)}"
        else:
            assert_refusal(rv, allowed[0], [p12], "bad", c.member, None, before, c.stderr_re)

    out = tmp_path / "out"
    out.mkdir()
    r = run_wheelmerge(["merge", str(p12), str(p13), "-o", str(out)], tmp_path)
    assert_clean_messages(r)
    assert r.rc >= 0, f"killed by signal {-r.rc}:\n{describe(r)}"
    assert r.rc in allowed, f"expected exit {' or '.join(map(str, allowed))}:\n{describe(r)}"
    if r.rc != 0:
        assert_refusal(r, r.rc, [p12, p13], c.names, c.member, out, before, c.stderr_re)
        return

    # Accepted: the inputs are read alike by everyone (checked above), and the output behaves
    # like them.
    wheels = tree(out)
    assert len(wheels) == 1 and wheels[0].endswith(".whl"), f"output: {wheels}\n{describe(r)}"
    output = out / wheels[0]
    assert {p: digest(p) for p in before} == before, "an input was modified"
    for w in c.warn:
        assert w in r.stderr, f"stderr must warn about {w!r}:\n{describe(r)}"
    assert_output_zip_hygiene(output)
    target = oracle.assert_output_behaves(output, {"cu12": p12, "cu13": p13},
                                          target=tmp_path / "target")
    if c.check:
        c.check(output, r.stderr)
    if c.imports:
        check_imports(request.getfixturevalue("import_venv"), target, c.init_ran)


# --------------------------------------------------------------------------------------------
# The oracle itself


def test_oracle_sees_through_a_naive_or_merge(tmp_path: Path) -> None:
    """A marker joined with ``and extra == ...`` without parentheses is caught."""
    make = W(metadata={"Requires-Dist": Per(
        cu12=['foo ; python_version >= "3.10" or sys_platform == "win32"'], cu13=[])})
    naive = wg.wheel_bytes(base_files("cu12"), tags=TAGS, metadata={
        "Provides-Extra": ["cu12", "cu13"],
        "Requires-Dist": ['foo ; python_version >= "3.10" or sys_platform == "win32" and extra == "cu12"']})
    paths = {}
    for label in LABELS:
        paths[label] = tmp_path / f"{label}.whl"
        paths[label].write_bytes(make(label))
    out = tmp_path / "naive.whl"
    out.write_bytes(naive)
    with pytest.raises(AssertionError, match="installs"):
        oracle.assert_requirements_behave(out, paths)
    right = wg.wheel_bytes(base_files("cu12"), tags=TAGS, metadata={
        "Provides-Extra": ["cu12", "cu13"],
        "Requires-Dist": ['foo ; (python_version >= "3.10" or sys_platform == "win32") and extra == "cu12"']})
    out.write_bytes(right)
    oracle.assert_requirements_behave(out, paths)


def test_oracle_agrees_on_a_plain_wheel(tmp_path: Path) -> None:
    p = tmp_path / wg.wheel_filename("pkg", "1.0", TAGS)
    p.write_bytes(GOOD("cu12"))
    views = oracle.input_views(p)
    assert set(views) == set(oracle.CONSUMERS)
    assert all(v.ok for v in views.values()), {k: v.error for k, v in views.items()}
    oracle.assert_consumers_agree(p)


# --------------------------------------------------------------------------------------------
# Resources


def _inputs(tmp: Path, makers: dict[str, Callable[[], bytes]] | Callable[[str], bytes]) -> tuple[Path, Path]:
    (tmp / "in").mkdir(exist_ok=True)
    paths = []
    for label in LABELS:
        p = tmp / "in" / wg.wheel_filename("pkg", "1.0", TAGS, label=label)
        p.write_bytes(makers(label) if callable(makers) else makers[label]())
        paths.append(p)
    return paths[0], paths[1]


@functools.lru_cache(maxsize=None)
def needed_bomb_wheel(label: str) -> bytes:
    """A private library whose 150,000 DT_NEEDED entries all point at one 1 MiB string."""
    strings = b"\0" + b"A" * (1 << 20) + b"\0"
    lib = wg.elf_shared_object("libhuge.so", strings=strings, needed_offsets=[1] * 150_000,
                               payload=label.encode())
    files = dict(base_files(label), **{"pkg.libs/libhuge.so": lib})
    files[CORE] = wg.elf_shared_object(needed=["libhuge.so"], payload=label.encode())
    return wg.wheel_bytes(files, tags=TAGS)


def test_resource_elf_150k_needed_entries(tmp_path: Path) -> None:
    p12, p13 = _inputs(tmp_path, needed_bomb_wheel)
    before = {p: digest(p) for p in (p12, p13)}
    out = tmp_path / "out"
    for args in (["verify", str(p12)], ["merge", str(p12), str(p13), "-o", str(out)]):
        r = run_wheelmerge(args, tmp_path, limit_as=RESOURCE_AS_BYTES, timeout=20)
        assert_clean_messages(r)
        assert r.rc in (0, 3), f"{args[0]}: expected exit 0 or 3 (under a 2 GiB address-space limit):\n{describe(r)}"
        assert_within_budget(r, args[0])
        if r.rc == 3:
            assert_refusal(r, 3, [p12], "bad", ("libhuge.so",), out if args[0] == "merge" else None, before)
    assert {p: digest(p) for p in before} == before


BIG = 62 << 20


@functools.lru_cache(maxsize=None)
def big_member_wheel(which: str) -> bytes:
    filler = "x" * BIG
    if which == "WHEEL":
        return wg.wheel_bytes(base_files("cu12"), tags=TAGS, wheel={"Generator": filler})
    return wg.wheel_bytes(base_files("cu12"), tags=TAGS, metadata=(
        "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nSummary: big\n\n" + filler).encode())


@pytest.mark.parametrize("which", ["WHEEL", "METADATA"])
def test_resource_62mib_metadata_member(which: str, tmp_path: Path) -> None:
    p12, p13 = _inputs(tmp_path, {"cu12": lambda: big_member_wheel(which), "cu13": lambda: GOOD("cu13")})
    before = {p: digest(p) for p in (p12, p13)}
    out = tmp_path / "out"
    for args, o in ((["verify", str(p12)], None), (["merge", str(p12), str(p13), "-o", str(out)], out)):
        r = run_wheelmerge(args, tmp_path, limit_as=RESOURCE_AS_BYTES, timeout=30)
        assert_clean_messages(r)
        assert_refusal(r, 3, [p12], "bad", (which,), o, before, SIZE_ERROR)
        assert_within_budget(r, args[0], wall=False)


CHAIN = 3000


def chain_wheel(label: str) -> bytes:
    files = dict(base_files(label))
    files[CORE] = wg.elf_shared_object(needed=["lib0.so"], payload=label.encode())
    for i in range(CHAIN):
        needed = [f"lib{i + 1}.so"] if i + 1 < CHAIN else []
        files[f"pkg.libs/lib{i}.so"] = wg.elf_shared_object(f"lib{i}.so", needed,
                                                            payload=f"{label} {i}".encode())
    return wg.wheel_bytes(files, tags=TAGS, method=wg.STORED)


def test_resource_3000_chained_private_libraries(tmp_path: Path) -> None:
    p12, p13 = _inputs(tmp_path, chain_wheel)
    out = tmp_path / "out"
    r = run_wheelmerge(["merge", str(p12), str(p13), "-o", str(out)], tmp_path, timeout=30)
    assert_clean_messages(r)
    assert r.rc == 0, describe(r)
    assert_within_budget(r, "merge", rss=False)
    (output,) = out.iterdir()
    _, manifest = manifest_of(output)
    for label in LABELS:
        order = [Path(p).name for p in manifest["preload"][label]]
        assert len(order) == CHAIN, f"{label}: {len(order)} libraries to preload"
        position = {name.replace(f".{label}", ""): i for i, name in enumerate(order)}
        wrong = [i for i in range(CHAIN - 1) if position[f"lib{i + 1}.so"] > position[f"lib{i}.so"]]
        assert not wrong, f"{label}: lib{wrong[0] + 1}.so is preloaded after lib{wrong[0]}.so, which needs it"
    oracle.assert_output_behaves(output, {"cu12": p12, "cu13": p13}, target=tmp_path / "target")


REQS = 100_000


def many_requirements(label: str) -> bytes:
    shared = [f"dep{i}>=1" for i in range(REQS // 2)]
    own = [f"{label}-dep{i}>=1" for i in range(REQS // 2)]
    return W(metadata={"Requires-Dist": shared + own})(label)


def test_resource_100k_requires_dist(tmp_path: Path) -> None:
    p12, p13 = _inputs(tmp_path, many_requirements)
    before = {p: digest(p) for p in (p12, p13)}
    out = tmp_path / "out"
    r = run_wheelmerge(["merge", str(p12), str(p13), "-o", str(out)], tmp_path,
                       limit_as=RESOURCE_AS_BYTES, timeout=30)
    assert_clean_messages(r)
    assert r.rc in (0, 3), describe(r)
    assert_within_budget(r, "merge", rss=False)
    if r.rc == 3:
        assert_refusal(r, 3, [p12, p13], "any", ("METADATA",), out, before, SIZE_ERROR)
        return
    (output,) = out.iterdir()
    with zipfile.ZipFile(output) as z:
        md = BytesParser(policy=compat32).parsebytes(z.read(f"{DI}/METADATA"))
    lines = md.get_all("Requires-Dist")
    assert len(lines) == REQS // 2 + REQS, len(lines)
    reqs = [Requirement(line) for line in lines[:: 997]]
    env = oracle.marker_environments()[0]
    for req in reqs:
        base = oracle.effective([req], env, [])
        is_shared = req.name.startswith("dep")
        assert bool(base) == is_shared, str(req)
        if not is_shared:
            label = req.name.split("-", 1)[0]
            assert oracle.effective([req], env, [label]), str(req)


def slow_wheel(label: str) -> bytes:
    """Valid, but 1 GiB to inflate and hash per input."""
    data, crc, digest_, size = wg.deflated_zeros(256 << 20, 1)
    names = [f"pkg/zeros{i}.bin" for i in range(4)]

    def record(rows):
        for r in rows:
            if r[0] in names:
                r[1:3] = [digest_, str(size)]
    return wg.wheel_bytes(dict(base_files(label), **{n: b"" for n in names}), tags=TAGS, record=record,
                          entry={n: dict(compressed=data, **both(crc=crc, usize=size)) for n in names})


def test_sigterm_ends_a_slow_merge_promptly(tmp_path: Path) -> None:
    p12, p13 = _inputs(tmp_path, slow_wheel)
    before = {p: digest(p) for p in (p12, p13)}
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([str(BINARY), "merge", str(p12), str(p13), "-o", str(out)], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, NO_COLOR="1"))
    time.sleep(0.3)
    assert proc.poll() is None, "the slow merge finished within 0.3 s: the case is not slow enough"
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    # Within a second is the release build's promise; a sanitizer build (several times slower,
    # with a leak check at exit) gets five.
    grace = 5.0 if sanitized_binary() else 1.0
    try:
        stdout, stderr = proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"still running {grace:.0f} s after SIGTERM")
    took = time.monotonic() - sent
    assert proc.returncode != 0, f"exit 0 after SIGTERM ({took:.2f} s)"
    assert tree(out) == [], f"left behind after SIGTERM: {tree(out)}"
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == sorted([p12.name, p13.name])
    assert {p: digest(p) for p in before} == before
    assert b"\x1b" not in stderr
