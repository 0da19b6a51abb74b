"""Bad-input corpus: every category of WHEEL_RULES.md "Reading" must be refused.

Each case writes one (possibly broken) cu12 wheel and one good cu13 wheel with ``wheelgen``,
runs ``wheelmerge merge BAD GOOD -o OUT`` and checks the exit code, that the error names the
input file (and the offending member), that nothing was written and the inputs are untouched,
and the same with ``--json``. Positive controls prove the generator writes valid wheels.
"""

from __future__ import annotations

import dataclasses
import io
import hashlib
import json
import stat
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path
from typing import Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import wheelgen as wg  # noqa: E402
from measured_run import Run, run_measured  # noqa: E402
from wheelgen import OMIT, Entry  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
# The interpreter with the tools (wheel); the one running pytest otherwise.
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() \
    else sys.executable

TAGS = "cp311-cp311-linux_x86_64"
WIN_TAGS = "cp311-cp311-win_amd64"
# Member names Windows writes elsewhere than they say, each for another reason.
WINDOWS_UNCREATABLE = ["pkg/__init__.py::$DATA", "pkg/nul.py", "pkg/Com1.txt", "pkg/LPT\u00b9.py", "pkg/trailing.",
                       "pkg/trailing ", "pkg/con /x.py", "pkg/what?.py", "pkg/a|b.py"]
BAD_NAME = wg.wheel_filename("pkg", "1.0", TAGS, label="cu12")
GOOD_NAME = wg.wheel_filename("pkg", "1.0", TAGS, label="cu13")
UTIL = "pkg/util.py"
DI = "pkg-1.0.dist-info"

BASE_FILES: dict[str | bytes, bytes] = {
    "pkg/__init__.py": b'"""A wheelmerge test package."""\n',
    UTIL: b"def answer():\n    return 42\n",
    "pkg/data/table.txt": b"alpha\nbeta\ngamma\n" * 40,
}

RUN_TIMEOUT_S = 60
FAST_CPU_S = 10.0  # cases with a lying size claim must not take long ...
FAST_RSS_KIB = 256 * 1024  # ... nor allocate by the claim (touched memory) ...
FAST_AS_BYTES = 2 << 30  # ... reserved memory included: address-space limit for those runs


# --------------------------------------------------------------------------------------------
# Building blocks


def W(add: dict | None = None, drop: tuple = (), replace: dict | None = None,
      **kw) -> Callable[[], bytes]:
    """A wheel like the base one: ``add`` more files, ``drop`` some, ``replace`` contents;
    ``kw`` go to ``wheelgen.wheel_bytes``."""
    def make() -> bytes:
        files = {k: v for k, v in BASE_FILES.items() if k not in drop}
        files.update(replace or {})
        files.update(add or {})
        return wg.wheel_bytes(files, **kw)
    return make


GOOD = W()


def post(fn: Callable[[bytes], bytes], **kw) -> Callable[[], bytes]:
    """A base wheel's bytes, transformed."""
    return lambda: fn(W(**kw)())


def row(rows: list[list[str]], path: str) -> list[str]:
    return next(r for r in rows if r[0] == path)


def set_row(path: str, index: int, value: str) -> Callable:
    def edit(rows):
        row(rows, path)[index] = value
    return edit


def dup_entry(path: str) -> Callable:
    def edit(entries: list[Entry]):
        i = next(i for i, e in enumerate(entries) if e.name == path)
        entries.insert(i + 1, dataclasses.replace(entries[i]))
    return edit


def both(**fields) -> dict:
    """The same header overrides for the local and the central record."""
    return {"local": dict(fields), "central": dict(fields)}


def tiny_zip() -> bytes:
    return wg.write_zip([Entry("evil.py", b"print('hidden')\n")])


def bomb() -> tuple[bytes, int, str, int]:
    """512 MiB of zeros, deflated (about 0.5 MB): (compressed, crc, RECORD hash, size)."""
    return wg.deflated_zeros(512 << 20, 9)


def bomb_wheel() -> bytes:
    """A member whose headers claim 10 bytes but which inflates to 512 MiB."""
    data, crc, digest, size = bomb()

    def record(rows):
        row(rows, "pkg/zeros.bin")[1:3] = [digest, str(size)]

    return W(add={"pkg/zeros.bin": b""}, record=record,
             entry={"pkg/zeros.bin": dict(compressed=data, **both(crc=crc, usize=10))})()


def lying_size(path: str, data: bytes, claim: int, *, zip64: bool = False,
               compressed: bytes | None = None, prefix_digest: tuple | None = None) -> Callable[[], bytes]:
    """``path``'s deflate stream holds ``data`` but its headers claim ``claim`` bytes, and
    everything else agrees with the claim as far as it can: for a short claim, the CRC and the
    RECORD row are those of the first ``claim`` bytes; for a long one, RECORD's size is the
    claim. Only inflating (and noticing where the stream really ends) can tell.
    ``compressed``/``prefix_digest`` (crc, RECORD hash of the first ``claim`` bytes) stand in
    for ``data`` when it is too big to hold."""
    def make() -> bytes:
        if claim < len(data) or prefix_digest:
            crc, digest = prefix_digest or (zlib.crc32(data[:claim]), wg.record_hash(data[:claim]))
        else:
            crc, digest = zlib.crc32(data), wg.record_hash(data)
        if zip64:
            headers = dict(zip64=True, **both(extra=wg.zip64_extra_set(0, claim)))
        else:
            headers = both(usize=claim)
        headers["local"]["crc"] = headers["central"]["crc"] = crc

        def record(rows):
            row(rows, path)[1:3] = [digest, str(claim)]

        files = {path: b"" if compressed is not None else data}
        extra = {"compressed": compressed} if compressed is not None else {}
        return W(replace=files, record=record, entry={path: dict(**headers, **extra)})()
    return make


def bomb_consistent() -> bytes:
    """512 MiB of zeros behind a 10-byte claim, CRC and RECORD those of 10 zero bytes."""
    return lying_size("pkg/zeros.bin", b"", 10, compressed=bomb()[0],
                      prefix_digest=(zlib.crc32(bytes(10)), wg.record_hash(bytes(10))))()


# --------------------------------------------------------------------------------------------
# Cases


@dataclasses.dataclass
class Case:
    id: str
    bad: Callable[[], bytes]
    exit: int = 3
    # Each item must appear in stderr (and in the JSON problems); a tuple: any one of them.
    member: tuple = ()
    good: Callable[[], bytes] = dataclasses.field(default_factory=lambda: GOOD)
    bad_name: str = BAD_NAME
    good_name: str = GOOD_NAME
    bad_label: str | None = None  # explicit "=cuNN" on the command line
    good_label: str | None = None
    names: str = "bad"  # which input file names the error must mention: bad, both, any
    fast: bool = False  # also check wall time and peak memory
    warn: tuple = ()  # positive cases: strings the warnings must mention
    args: tuple = ()  # further command-line arguments


# One dynamic deflate block coding b"AAA": literal 'A' and end-of-block with 2-bit codes (half the
# code space unused: an incomplete literal/length code), one 1-bit distance code. RFC 1951 does not
# forbid it, ISA-L decodes it, zlib (so pip, installer, zipfile) refuses it: "invalid
# literal/lengths set". With 1-bit codes the same block is complete and every decoder reads it.
INCOMPLETE_CODE_AAA = bytes.fromhex(
    "05c001080000008220000000000000000000000000000000000200000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000000000800404")
COMPLETE_CODE_AA = bytes.fromhex(
    "05c001040000000010000000000000000001000000000000000000000000000000000000000000008009")


def case(id, bad, exit=3, member=(), **kw) -> Case:
    """``member``: a string, or a list whose items are strings (all required) or tuples of
    alternatives (one of them required)."""
    if isinstance(member, str):
        member = (member,)
    return Case(id, bad, exit, tuple(member), **kw)


def across(id, bad, exit=3, member=(), **kw) -> Case:
    return case(id, bad, exit, member, names="both", **kw)


def positive(id, bad=None, **kw) -> Case:
    return case(id, bad or W(), 0, **kw)


def name_case(id, name, member=()) -> Case:
    """A payload member with an unsafe name (RECORD row included where the name is UTF-8)."""
    return case(id, W(add={name: b"x = 1\n"}), member=member)


def special_file(id, mode, data=b"util.py") -> Case:
    return case(id, W(add={"pkg/special": data},
                      entry={"pkg/special": dict(external_attr=(mode | 0o777) << 16)}),
                member="pkg/special")


DIR_ATTR = (stat.S_IFDIR | 0o755) << 16 | 0x10  # Unix directory mode plus the MS-DOS directory bit


def _latin1_record(rows):
    return wg.render_record(rows).decode("utf-8").encode("latin-1")


CASES: list[Case] = [
    # ---- positive controls: the generator writes wheels wheelmerge must accept
    positive("ok_plain"),
    positive("ok_hand_made_dynamic_block",
             W(add={"pkg/aa.txt": b"AA"}, entry={"pkg/aa.txt": dict(compressed=COMPLETE_CODE_AA)}),
             good=W(add={"pkg/aa.txt": b"AA"})),
    positive("ok_stored", W(method=wg.STORED), good=W(method=wg.STORED)),
    positive("ok_data_descriptors",
             W(entries=lambda es: [dataclasses.replace(e, data_descriptor=True) for e in es]),
             good=W(entries=lambda es: [dataclasses.replace(e, data_descriptor=True) for e in es])),
    positive("ok_zip64_extras",
             W(entries=lambda es: [dataclasses.replace(e, zip64=True) for e in es],
               zip=dict(zip64_end=True)),
             good=W(entries=lambda es: [dataclasses.replace(e, zip64=True) for e in es],
                    zip=dict(zip64_end=True))),
    positive("ok_directory_entries",
             W(unrecorded={"pkg/": b"", "pkg/data/": b""},
               entry={"pkg/": dict(external_attr=DIR_ATTR),
                      "pkg/data/": dict(external_attr=DIR_ATTR)})),
    positive("ok_data_dir", W(add={"pkg-1.0.data/scripts/pkg-tool": b"#!python\nprint(1)\n",
                                   "pkg-1.0.data/data/share/pkg/x.txt": b"x\n"}),
             good=W(add={"pkg-1.0.data/scripts/pkg-tool": b"#!python\nprint(1)\n",
                         "pkg-1.0.data/data/share/pkg/x.txt": b"x\n"})),
    positive("ok_local_version_label",
             W(version="1.0+cu12"), good=W(version="1.0+cu13"),
             bad_name=wg.wheel_filename("pkg", "1.0+cu12", TAGS),
             good_name=wg.wheel_filename("pkg", "1.0+cu13", TAGS)),
    positive("ok_explicit_labels", bad_name="a/" + wg.wheel_filename("pkg", "1.0", TAGS),
             good_name="b/" + wg.wheel_filename("pkg", "1.0", TAGS),
             bad_label="cu12", good_label="cu13"),
    positive("ok_manylinux_levels", W(tags="cp311-cp311-manylinux_2_17_x86_64"),
             good=W(tags="cp311-cp311-manylinux_2_28_x86_64"),
             bad_name=wg.wheel_filename("pkg", "1.0", "cp311-cp311-manylinux_2_17_x86_64", label="cu12"),
             good_name=wg.wheel_filename("pkg", "1.0", "cp311-cp311-manylinux_2_28_x86_64", label="cu13")),
    positive("ok_name_normalised", W(metadata={"Name": "Pkg"}), good=W(metadata={"Name": "Pkg"})),
    positive("ok_record_sha512",
             W(record=lambda rows: [[r[0], wg.record_hash(BASE_FILES[r[0]], "sha512"), r[2]]
                                    if r[0] in BASE_FILES else r for r in rows])),
    positive("ok_record_jws_dropped", W(unrecorded={f"{DI}/RECORD.jws": b"{}"}),
             warn=("RECORD.jws",)),
    positive("ok_record_p7s_dropped", W(unrecorded={f"{DI}/RECORD.p7s": b"\x30\x00"}),
             warn=("RECORD.p7s",)),

    # ---- Archive: not a zip, truncated, framing
    case("not_a_zip", lambda: b"This is not a zip archive.\n" * 8),
    case("empty_file", lambda: b""),
    case("truncated_half", post(lambda b: b[: len(b) // 2])),
    case("truncated_last_byte", post(lambda b: b[:-1])),
    case("no_end_record", post(lambda b: b[:-22])),
    case("bytes_before_first_header", W(zip=dict(prefix=b"#!/bin/sh\nexit 0\n"))),
    case("bytes_before_first_header_unadjusted",
         W(zip=dict(prefix=b"#!/bin/sh\nexit 0\n", offsets_relative_to_prefix=True))),
    case("bytes_between_entries", W(entry={UTIL: dict(before=b"\0" * 16)})),
    case("bytes_before_central_directory", W(zip=dict(before_central=b"GARBAGE!"))),
    case("bytes_after_end_record", W(zip=dict(suffix=b"trailing junk\n"))),
    case("comment_contains_archive", lambda: W(zip=dict(comment=tiny_zip()))()),
    case("end_record_in_comment",
         post(lambda b: b[:-2] + struct.pack("<H", 22) + b[-22:])),
    case("two_end_records", post(lambda b: b + b[-22:])),
    case("eocd_count_too_high",
         W(zip=dict(eocd={"disk_entries": lambda v: v + 1, "total_entries": lambda v: v + 1}))),
    case("eocd_count_too_low",
         W(zip=dict(eocd={"disk_entries": lambda v: v - 1, "total_entries": lambda v: v - 1}))),
    case("eocd_cd_size_wrong", W(zip=dict(eocd={"cd_size": lambda v: v - 1}))),
    case("eocd_cd_offset_wrong", W(zip=dict(eocd={"cd_offset": lambda v: v + 1}))),

    # ---- Archive: local header vs central directory
    case("local_central_name", W(entry={UTIL: {"local": {"name": "pkg/utix.py"}}}),
         member=[(UTIL, "pkg/utix.py")]),
    case("local_central_method", W(entry={"pkg/data/table.txt": {"local": {"method": wg.STORED}}}),
         member="pkg/data/table.txt"),
    case("local_central_flags", W(entry={UTIL: {"local": {"flags": wg.FLAG_UTF8}}}), member=UTIL),
    case("local_central_crc", W(entry={UTIL: {"local": {"crc": lambda v: v ^ 1}}}), member=UTIL),
    case("local_central_csize", W(entry={UTIL: {"local": {"csize": lambda v: v + 1}}}), member=UTIL),
    case("local_central_usize", W(entry={UTIL: {"local": {"usize": lambda v: v + 1}}}), member=UTIL),
    case("local_central_zip64_usize",
         W(entry={UTIL: dict(zip64=True, local={"extra": wg.zip64_extra_set(0, lambda v: v + 1)})}),
         member=UTIL),
    case("data_descriptor_crc_wrong",
         W(entry={UTIL: dict(data_descriptor=True, descriptor={"crc": lambda v: v ^ 1})}),
         member=UTIL),
    case("entry_only_in_central", W(add={"pkg/ghost.py": b"boo = 1\n"},
                                    entry={"pkg/ghost.py": dict(in_local=False)}),
         member="pkg/ghost.py"),
    case("entry_only_in_local",
         W(entries=lambda es: es.insert(1, Entry("pkg/hidden.py", b"x = 1\n", in_central=False)))),

    # ---- Archive: ZIP64 extra
    case("zip64_extra_missing_field",
         W(entry={UTIL: dict(zip64=True, **both(extra=lambda x: x[:4 + 8].replace(
             b"\x01\x00\x10\x00", b"\x01\x00\x08\x00", 1)))}), member=UTIL),
    case("zip64_extra_overruns_field",
         W(entry={UTIL: dict(zip64=True, central={"extra": lambda x: x[:12]})}), member=UTIL),
    case("zip64_extra_duplicated",
         W(entry={UTIL: dict(zip64=True, **both(extra=lambda x: x + x))}), member=UTIL),
    case("zip64_extra_odd_length",
         W(entry={UTIL: dict(zip64=True, **both(extra=lambda x: wg.extra_block(1, x[4:] + b"\0")))}),
         member=UTIL),

    # ---- Archive: names
    case("duplicate_name", W(entries=dup_entry(UTIL)), member=UTIL),
    case("casefold_within_input", W(add={"pkg/UTIL.py": b"def other():\n    pass\n"}),
         member=[(UTIL, "pkg/UTIL.py")]),
    case("casefold_non_ascii_within_input", W(add={"pkg/\u00e4.py": b"a = 1\n", "pkg/\u00c4.py": b"b = 2\n"}),
         member=[("pkg/\u00e4.py", "pkg/\u00c4.py")]),
    # Each input is valid alone; the merged set would hold both names: a merge conflict.
    across("casefold_across_inputs", W(add={"pkg/Extra.py": b"e = 1\n"}), exit=4,
           member=[("pkg/Extra.py", "pkg/extra.py")], good=W(add={"pkg/extra.py": b"e = 1\n"})),
    # A variant file's labelled name (pkg/Extra.cu12.py) taken by a shared file, exactly or
    # up to case: the merged set would hold a duplicate or a case-folding collision.
    across("merged_name_taken", W(add={"pkg/Extra.py": b"e = 1\n", "pkg/Extra.cu12.py": b"s\n"}),
           exit=4, member="pkg/Extra.cu12.py", args=("--variant-file", "pkg/Extra.py"),
           good=W(add={"pkg/Extra.py": b"e = 2\n", "pkg/Extra.cu12.py": b"s\n"})),
    across("merged_name_casefold_collision",
           W(add={"pkg/Extra.py": b"e = 1\n", "pkg/extra.cu12.py": b"s\n"}), exit=4,
           member=[("pkg/Extra.cu12.py", "pkg/extra.cu12.py")], args=("--variant-file", "pkg/Extra.py"),
           good=W(add={"pkg/Extra.py": b"e = 2\n", "pkg/extra.cu12.py": b"s\n"})),
    name_case("name_empty", ""),
    name_case("name_absolute", "/pkg/abs.py", member="/pkg/abs.py"),
    name_case("name_drive_letter", "C:/pkg/x.py", member="C:/pkg/x.py"),
    name_case("name_backslash", "pkg\\win.py", member="win.py"),
    name_case("name_dotdot_inside", "pkg/../evil.py", member="evil.py"),
    name_case("name_dotdot_leading", "../evil.py", member="evil.py"),
    name_case("name_dot_segment", "pkg/./x.py", member="x.py"),
    name_case("name_nul", "pkg/nul\x00.py", member="pkg/nul"),
    name_case("name_control_char", "pkg/esc\x1b.py", member="pkg/esc"),
    # Printed escaped: \n on stderr, its JSON string "\\n" in --json's problems.
    name_case("name_newline", "pkg/nl\n.py", member=[("pkg/nl\\n.py", "pkg/nl\\\\n.py")]),
    name_case("name_newline_forging_a_verdict", "pkg/a.py\nwheelmerge: pkg.whl: valid wheel",
              member=[("pkg/a.py\\nwheelmerge: pkg.whl: valid wheel", "pkg/a.py\\\\nwheelmerge: pkg.whl: valid wheel")]),
    # Names Windows cannot create as written, in wheels for Windows (pip and installer would
    # write an NTFS stream of pkg/__init__.py, a name without its dot, or open a device).
    *[case(f"windows_name_{i}", W(tags=WIN_TAGS, add={name: b"x = 1\n"}), member=name,
           bad_name=wg.wheel_filename("pkg", "1.0", WIN_TAGS, label="cu12"),
           good=W(tags=WIN_TAGS), good_name=wg.wheel_filename("pkg", "1.0", WIN_TAGS, label="cu13"))
      for i, name in enumerate(WINDOWS_UNCREATABLE)],
    positive("ok_windows_names_on_linux", W(add={name: b"x = 1\n" for name in WINDOWS_UNCREATABLE}),
             good=W(add={name: b"x = 1\n" for name in WINDOWS_UNCREATABLE})),
    name_case("name_invalid_utf8", b"pkg/bad\xff.py", member="pkg/bad"),
    name_case("name_overlong_utf8", b"pkg/\xc0\xae\xc0\xae/x.py"),

    # ---- Archive: methods, flags, disks
    case("encrypted_flag", W(entry={UTIL: dict(flags=wg.FLAG_ENCRYPTED)}), member=UTIL),
    case("method_bzip2", W(entry={UTIL: dict(method=wg.BZIP2)}), member=UTIL),
    case("method_lzma", W(entry={UTIL: dict(method=wg.LZMA)}), member=UTIL),
    case("method_99_aes", W(entry={UTIL: dict(method=99, compressed=b"\0" * 40)}), member=UTIL),
    case("multi_disk_end_record", W(zip=dict(eocd={"disk": 1, "cd_disk": 1}))),
    case("multi_disk_entry", W(entry={UTIL: {"central": {"disk_start": 1}}}), member=UTIL),
    case("multi_disk_zip64_locator", W(zip=dict(zip64_end=True, zip64_locator={"total_disks": 2}))),

    # ---- Archive: content vs claims
    case("crc_mismatch", W(entry={UTIL: both(crc=lambda v: v ^ 0x5A5A5A5A)}), member=UTIL),
    case("usize_smaller_than_data", W(entry={"pkg/data/table.txt": both(usize=10)}),
         member="pkg/data/table.txt", fast=True),
    case("usize_smaller_bomb_512mib", bomb_wheel, member="pkg/zeros.bin", fast=True),
    case("usize_larger_than_data", W(entry={UTIL: both(usize=lambda v: v + 1)}), member=UTIL),
    case("usize_claims_4gib", W(entry={UTIL: both(usize=0xFFFFFFFE)}), member=UTIL, fast=True),
    case("usize_claims_1tib_zip64",
         W(entry={UTIL: dict(zip64=True, **both(extra=wg.zip64_extra_set(0, 1 << 40)))}),
         member=UTIL, fast=True),
    # The same lies with CRC and RECORD agreeing with the claim: only the stream tells.
    case("usize_smaller_record_agrees",
         lying_size("pkg/data/table.txt", BASE_FILES["pkg/data/table.txt"], 10),
         member="pkg/data/table.txt", fast=True),
    case("usize_smaller_bomb_record_agrees", bomb_consistent, member="pkg/zeros.bin", fast=True),
    case("usize_larger_record_agrees", lying_size(UTIL, BASE_FILES[UTIL], len(BASE_FILES[UTIL]) + 1),
         member=UTIL),
    case("usize_claims_4gib_record_agrees", lying_size(UTIL, BASE_FILES[UTIL], 0xFFFFFFFE),
         member=UTIL, fast=True),
    case("usize_claims_1tib_zip64_record_agrees", lying_size(UTIL, BASE_FILES[UTIL], 1 << 40, zip64=True),
         member=UTIL, fast=True),
    case("deflate_stream_corrupt", W(entry={UTIL: dict(compressed=b"\xff" * 20)}), member=UTIL),
    case("deflate_incomplete_huffman_code",
         W(add={"pkg/aaa.txt": b"AAA"}, entry={"pkg/aaa.txt": dict(compressed=INCOMPLETE_CODE_AAA)}),
         member=["pkg/aaa.txt", "invalid literal/lengths set"]),
    case("deflate_stream_truncated",
         W(entry={"pkg/data/table.txt": dict(
             compressed=wg.deflate_raw(BASE_FILES["pkg/data/table.txt"])[:-4])}),
         member="pkg/data/table.txt"),

    # ---- Archive: entry types
    special_file("symlink_entry", stat.S_IFLNK),
    special_file("fifo_entry", stat.S_IFIFO, b""),
    special_file("char_device_entry", stat.S_IFCHR, b""),
    case("directory_with_data", W(unrecorded={"pkg/sub/": b"not empty"},
                                  entry={"pkg/sub/": dict(external_attr=DIR_ATTR)}),
         member="pkg/sub/"),
    case("directory_attr_on_file", W(entry={UTIL: dict(external_attr=DIR_ATTR)}),
         member=UTIL),

    # ---- Wheel: filename, tags, build
    case("filename_four_parts", W(), bad_name="pkg-cp311-cp311-linux_x86_64.cu12.whl"),
    case("filename_seven_parts", W(), bad_name="pkg-1.0-1-cp311-cp311-linux_x86_64-x.cu12.whl"),
    case("filename_four_parts_explicit_label", W(), bad_name="a/pkg-cp311-cp311-linux_x86_64.whl",
         bad_label="cu12"),
    # Labels read two ways: the +LABEL local version, the .LABEL suffix and PATH=LABEL must agree
    # (installers and `pip` see the local version; the merged METADATA and loader the label).
    case("label_local_version_and_suffix_disagree", W(version="1.0+cu12"), exit=2,
         bad_name=wg.wheel_filename("pkg", "1.0+cu12", TAGS, label="cu13"),
         member=["cu12 (+LABEL local version)", "cu13 (.LABEL suffix)"]),
    case("label_explicit_and_suffix_disagree", W(), exit=2, bad_label="cu13",
         member=["cu13 (PATH=LABEL)", "cu12 (.LABEL suffix)"]),
    case("filename_build_not_digit", W(build="b1"),
         bad_name=wg.wheel_filename("pkg", "1.0", TAGS, build="b1", label="cu12"),
         good=W(build="1"), good_name=wg.wheel_filename("pkg", "1.0", TAGS, build="1", label="cu13")),
    case("filename_bad_version", W(version="one"),
         bad_name=wg.wheel_filename("pkg", "one", TAGS, label="cu12")),
    # WHEEL Tag lines that differ from the file name are accepted with a warning (installers go
    # by the file name): test_verify.py::test_wheel_tags_differing_from_the_file_name_warn.
    case("build_tag_missing_in_wheel", W(build="1", wheel={"Build": OMIT}),
         bad_name=wg.wheel_filename("pkg", "1.0", TAGS, build="1", label="cu12"),
         good=W(build="1"), good_name=wg.wheel_filename("pkg", "1.0", TAGS, build="1", label="cu13"),
         member="WHEEL"),
    case("build_tag_only_in_wheel", W(wheel={"Build": "1"}), member="WHEEL"),
    case("build_tag_differs", W(build="1", wheel={"Build": "2"}),
         bad_name=wg.wheel_filename("pkg", "1.0", TAGS, build="1", label="cu12"),
         good=W(build="1"), good_name=wg.wheel_filename("pkg", "1.0", TAGS, build="1", label="cu13"),
         member="WHEEL"),

    # ---- Wheel: dist-info / data directories
    case("no_dist_info", W(metadata=OMIT, wheel=OMIT, record=OMIT)),
    case("two_dist_info",
         W(add={"pkg-2.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 2.0\n"}),
         member="pkg-2.0.dist-info"),
    case("two_data_dirs", W(add={"pkg-1.0.data/purelib/a.py": b"a = 1\n",
                                 "pkg-2.0.data/purelib/b.py": b"b = 1\n"}), member="pkg-2.0.data"),
    case("dist_info_wrong_name", W(dist_info="other-1.0.dist-info"), member="other-1.0.dist-info"),
    case("dist_info_wrong_version", W(dist_info="pkg-1.1.dist-info"), member="pkg-1.1.dist-info"),
    case("data_dir_wrong_name", W(add={"other-1.0.data/purelib/x.py": b"x = 1\n"}),
         member="other-1.0.data"),
    case("data_dir_unknown_key", W(add={"pkg-1.0.data/bogus/x.txt": b"x\n"}), member="bogus"),

    # ---- Wheel: WHEEL and METADATA
    case("wheel_missing", W(wheel=OMIT), member="WHEEL"),
    case("wheel_unparsable_binary", W(wheel=b"\x00\x01\x02 not a header file \xff\n"), member="WHEEL"),
    case("wheel_unparsable_no_colon",
         W(wheel=b"Wheel-Version 1.0\nRoot-Is-Purelib false\nTag cp311-cp311-linux_x86_64\n"),
         member="WHEEL"),
    case("wheel_tag_not_utf8", W(wheel={"Tag": "cp311-cp311-linux_x86_64\udcff"}), member="WHEEL"),
    case("wheel_version_2", W(wheel={"Wheel-Version": "2.0"}), member="WHEEL"),
    case("wheel_version_missing", W(wheel={"Wheel-Version": OMIT}), member="WHEEL"),
    case("root_is_purelib_missing", W(wheel={"Root-Is-Purelib": OMIT}), member="WHEEL"),
    case("root_is_purelib_yes", W(wheel={"Root-Is-Purelib": "yes"}), member="WHEEL"),
    case("metadata_missing", W(metadata=OMIT), member="METADATA"),
    case("metadata_name_mismatch", W(metadata={"Name": "other"}), member="METADATA"),
    case("metadata_not_utf8", W(metadata=b"Metadata-Version: 2.1\nName: pkg\xff\nVersion: 1.0\n"),
         member="METADATA"),
    case("metadata_name_missing", W(metadata={"Name": OMIT}), member="METADATA"),
    case("metadata_version_mismatch", W(metadata={"Version": "1.1"}), member="METADATA"),

    # ---- Wheel: RECORD
    case("record_missing", W(record=OMIT), member="RECORD"),
    case("record_not_utf8", W(add={"pkg/caf\u00e9.py": b"c = 1\n"}, record=_latin1_record),
         member="RECORD"),
    # A malformed row is identified by its path or its line number (line 2 here).
    case("record_row_two_fields", W(record=lambda rows: row(rows, UTIL).__delitem__(2)),
         member=["RECORD", (UTIL, "line 2")]),
    case("record_row_four_fields", W(record=lambda rows: row(rows, UTIL).append("extra")),
         member=["RECORD", (UTIL, "line 2")]),
    case("record_duplicate_row", W(record=lambda rows: rows.insert(0, list(row(rows, UTIL)))),
         member=UTIL),
    case("record_row_for_absent_file",
         W(record=lambda rows: rows.insert(0, ["pkg/missing.py", wg.record_hash(b"m"), "1"])),
         member="pkg/missing.py"),
    case("record_file_without_row", W(record=lambda rows: rows.remove(row(rows, UTIL))), member=UTIL),
    case("record_row_without_hash", W(record=set_row(UTIL, 1, "")), member=UTIL),
    case("record_row_without_size", W(record=set_row(UTIL, 2, "")), member=UTIL),
    case("record_size_not_decimal", W(record=set_row(UTIL, 2, "0x1c")), member=UTIL),
    case("record_md5", W(record=set_row(UTIL, 1, wg.record_hash(BASE_FILES[UTIL], "md5"))), member=UTIL),
    case("record_sha1", W(record=set_row(UTIL, 1, wg.record_hash(BASE_FILES[UTIL], "sha1"))), member=UTIL),
    case("record_unknown_algorithm",
         W(record=set_row(UTIL, 1, "sha3000=" + wg.record_hash(BASE_FILES[UTIL])[7:])), member=UTIL),
    case("record_bad_base64", W(record=set_row(UTIL, 1, "sha256=" + "!" * 43)), member=UTIL),
    case("record_digest_length", W(record=set_row(UTIL, 1, wg.record_hash(BASE_FILES[UTIL])[:-11])),
         member=UTIL),
    case("record_wrong_hash", W(record=set_row(UTIL, 1, wg.record_hash(b"something else"))), member=UTIL),
    case("record_wrong_size", W(record=set_row(UTIL, 2, str(len(BASE_FILES[UTIL]) + 1))), member=UTIL),
    case("record_own_row_hashed",
         W(record=lambda rows: rows[-1].__setitem__(slice(1, 3), [wg.record_hash(b"x"), "1"])),
         member="RECORD"),
    case("record_unsafe_path_dotdot",
         W(record=lambda rows: rows.insert(0, ["../evil.py", wg.record_hash(b"e"), "1"])),
         member="../evil.py"),
    case("record_unsafe_path_absolute",
         W(record=lambda rows: rows.insert(0, ["/etc/evil", wg.record_hash(b"e"), "1"])),
         member="/etc/evil"),

    # ---- Wheel: files installers write
    case("installer_file", W(dist_info_files={"INSTALLER": b"pip\n"}), member="INSTALLER"),
    case("requested_file", W(dist_info_files={"REQUESTED": b""}), member="REQUESTED"),
    case("direct_url_file", W(dist_info_files={"direct_url.json": b'{"url": "file:///tmp/x"}'}),
         member="direct_url.json"),

    # ---- Across inputs: invalid input (3), naming both inputs
    across("across_name", W(name="other"), bad_name=wg.wheel_filename("other", "1.0", TAGS, label="cu12")),
    across("across_version", W(version="1.1"), bad_name=wg.wheel_filename("pkg", "1.1", TAGS, label="cu12")),
    across("across_version_after_label", W(version="1.1+cu12"), good=W(version="1.0+cu13"),
           bad_name=wg.wheel_filename("pkg", "1.1+cu12", TAGS),
           good_name=wg.wheel_filename("pkg", "1.0+cu13", TAGS)),
    across("across_python_tag", W(tags="cp312-cp311-linux_x86_64"),
           bad_name=wg.wheel_filename("pkg", "1.0", "cp312-cp311-linux_x86_64", label="cu12")),
    across("across_abi_tag", W(tags="cp311-abi3-linux_x86_64"),
           bad_name=wg.wheel_filename("pkg", "1.0", "cp311-abi3-linux_x86_64", label="cu12")),
    across("across_os", W(tags="cp311-cp311-macosx_11_0_x86_64"),
           bad_name=wg.wheel_filename("pkg", "1.0", "cp311-cp311-macosx_11_0_x86_64", label="cu12")),
    across("across_arch", W(tags="cp311-cp311-linux_aarch64"),
           bad_name=wg.wheel_filename("pkg", "1.0", "cp311-cp311-linux_aarch64", label="cu12")),
    across("across_root_is_purelib", W(root_is_purelib=True), member="Root-Is-Purelib"),
    across("across_metadata_version", W(metadata_version="2.3"), member="Metadata-Version"),

    # ---- Across inputs: merge conflicts (4), listing every path and both inputs
    across("conflict_same_path", W(replace={UTIL: b"def answer():\n    return 43\n"}), exit=4,
           member=UTIL),
    across("conflict_two_paths", W(replace={UTIL: b"def answer():\n    return 43\n",
                                            "pkg/data/table.txt": b"changed\n"}), exit=4,
           member=[UTIL, "pkg/data/table.txt"]),

    # ---- Usage errors (2)
    case("no_variant_label", W(), exit=2, bad_name=wg.wheel_filename("pkg", "1.0", TAGS)),
    case("same_label_twice", W(), exit=2, bad_name="a/" + wg.wheel_filename("pkg", "1.0", TAGS),
         bad_label="cu13", member="cu13", names="any"),
    case("invalid_explicit_label", W(), exit=2, bad_name="a/" + wg.wheel_filename("pkg", "1.0", TAGS),
         bad_label="gpu12", member="gpu12"),
]

_ids = [c.id for c in CASES]
assert len(_ids) == len(set(_ids)), "duplicate case ids"


# --------------------------------------------------------------------------------------------
# Running


def run_wheelmerge(args: list[str], cwd: Path, limit_as: int | None = None) -> Run:
    """Run the binary and measure this one child's wall time and peak RSS (wait4).
    ``limit_as``: an address-space limit (left out for sanitizer builds)."""
    r = run_measured(args, cwd, timeout=RUN_TIMEOUT_S, limit_as=limit_as)
    if r.timed_out:
        pytest.fail(f"wheelmerge {' '.join(args)} ran past {RUN_TIMEOUT_S} s")
    return r


def digest(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*")) if path.exists() else []


def write_inputs(c: Case, tmp: Path) -> tuple[Path, Path]:
    bad = tmp / "in" / c.bad_name
    good = tmp / "in" / c.good_name
    for p, make in ((bad, c.bad), (good, c.good)):
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(make())
    return bad, good


def command(c: Case, bad: Path, good: Path, out: Path, *extra: str) -> list[str]:
    def arg(p: Path, label: str | None) -> str:
        return f"{p}={label}" if label else str(p)
    return ["merge", arg(bad, c.bad_label), arg(good, c.good_label), "-o", str(out), *c.args, *extra]


def describe(r: Run) -> str:
    return f"exit {r.rc}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"


def contains(text: str, item: str | tuple) -> bool:
    return any(s in text for s in item) if isinstance(item, tuple) else item in text


def check_names(c: Case, text: str, bad: Path, good: Path, where: str, r: Run) -> None:
    names = [bad.name, good.name]
    found = [n in text for n in names]
    if c.names == "both":
        assert all(found), f"{where} must name both inputs {names}:\n{describe(r)}"
    elif c.names == "any":
        assert any(found), f"{where} must name an input of {names}:\n{describe(r)}"
    else:
        assert found[0], f"{where} must name the bad input {bad.name}:\n{describe(r)}"


NEGATIVE = [c for c in CASES if c.exit != 0]
POSITIVE = [c for c in CASES if c.exit == 0]



@pytest.mark.parametrize("c", NEGATIVE, ids=[c.id for c in NEGATIVE])
def test_bad_input_refused(c: Case, tmp_path: Path) -> None:
    bad, good = write_inputs(c, tmp_path)
    before = {p: digest(p) for p in (bad, good)}

    # Human-readable run.
    out = tmp_path / "out"
    out.mkdir()
    r = run_wheelmerge(command(c, bad, good, out), tmp_path, FAST_AS_BYTES if c.fast else None)
    assert r.rc >= 0, f"killed by signal {-r.rc}:\n{describe(r)}"
    limited = f" (run under a {FAST_AS_BYTES >> 30} GiB address-space limit)" if c.fast else ""
    assert r.rc == c.exit, f"expected exit {c.exit}{limited}:\n{describe(r)}"
    assert any(line.startswith("wheelmerge: error: ") for line in r.stderr.splitlines()), \
        f"no 'wheelmerge: error: ' line:\n{describe(r)}"
    check_names(c, r.stderr, bad, good, "stderr", r)
    for item in c.member:
        assert contains(r.stderr, item), f"stderr must mention {item!r}:\n{describe(r)}"
    # An input's line breaks are escaped like every control character: no line of its own.
    assert all(line.startswith("wheelmerge: ") for line in r.stderr.splitlines()), describe(r)
    assert tree(out) == [], f"output directory not empty: {tree(out)}\n{describe(r)}"
    assert {p: digest(p) for p in (bad, good)} == before, "an input was modified"
    if c.fast:
        assert r.cpu_s < FAST_CPU_S, f"took {r.cpu_s:.1f} s of CPU time:\n{describe(r)}"
        assert r.maxrss_kib < FAST_RSS_KIB, f"peak RSS {r.maxrss_kib // 1024} MiB:\n{describe(r)}"

    # JSON run, into a directory that does not exist yet (it must not be left with anything).
    out_json = tmp_path / "out-json"
    rj = run_wheelmerge(command(c, bad, good, out_json, "--json"), tmp_path)
    assert rj.rc == c.exit, f"--json: expected exit {c.exit}:\n{describe(rj)}"
    try:
        doc = json.loads(rj.stdout)
    except json.JSONDecodeError as e:
        pytest.fail(f"--json stdout is not one JSON object ({e}):\n{describe(rj)}")
    assert isinstance(doc, dict) and isinstance(doc.get("error"), dict), f"no error object:\n{describe(rj)}"
    err = doc["error"]
    assert isinstance(err.get("kind"), str) and err["kind"], f"error.kind missing:\n{describe(rj)}"
    problems = err.get("problems")
    assert isinstance(problems, list) and problems, f"error.problems empty:\n{describe(rj)}"
    for p in problems:
        assert isinstance(p, dict) and isinstance(p.get("what"), str), f"bad problem {p!r}"
    files_text = "\n".join(str(p.get("file", "")) for p in problems)
    problems_text = json.dumps(problems, ensure_ascii=False)
    if c.names == "bad":  # an error in one input: its "file" field names it
        check_names(c, files_text, bad, good, "JSON problems[].file", rj)
    else:  # between inputs: named anywhere in the problems (no single "file" applies)
        check_names(c, problems_text, bad, good, "JSON problems", rj)
    for item in c.member:
        assert contains(problems_text, item) or contains(json.dumps(problems), item), \
            f"JSON problems must mention {item!r}:\n{describe(rj)}"
    assert tree(out_json) == [], f"output directory not empty: {tree(out_json)}"
    assert {p: digest(p) for p in (bad, good)} == before, "an input was modified (--json)"


def check_output_wheel(whl: Path) -> None:
    """Independent checks: Python's zipfile reads every member; wheel unpack verifies RECORD."""
    with zipfile.ZipFile(whl) as z:
        assert z.testzip() is None
    r = subprocess.run([PYTHON, "-m", "wheel", "unpack", "-d", str(whl.parent / "unpacked"), str(whl)],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"wheel unpack {whl.name}:\n{r.stdout}{r.stderr}"


@pytest.mark.parametrize("c", POSITIVE, ids=[c.id for c in POSITIVE])
def test_valid_inputs_merge(c: Case, tmp_path: Path) -> None:
    bad, good = write_inputs(c, tmp_path)
    before = {p: digest(p) for p in (bad, good)}
    out = tmp_path / "out"
    r = run_wheelmerge(command(c, bad, good, out), tmp_path)
    assert r.rc == 0, describe(r)
    wheels = list(out.iterdir())
    assert len(wheels) == 1 and wheels[0].suffix == ".whl", f"output: {tree(out)}\n{describe(r)}"
    assert {p: digest(p) for p in (bad, good)} == before, "an input was modified"
    for w in c.warn:
        assert w in r.stderr, f"stderr must warn about {w}:\n{describe(r)}"
        with zipfile.ZipFile(wheels[0]) as z:
            assert not [n for n in z.namelist() if n.endswith(w)], f"{w} was not dropped"
    check_output_wheel(wheels[0])

    out_json = tmp_path / "out-json"
    rj = run_wheelmerge(command(c, bad, good, out_json, "--json"), tmp_path)
    assert rj.rc == 0, describe(rj)
    doc = json.loads(rj.stdout)
    assert Path(doc["output"]).name == wheels[0].name, describe(rj)
    assert "cu12" in json.dumps(doc["variants"]) and "cu13" in json.dumps(doc["variants"]), describe(rj)
    for w in c.warn:
        assert w in json.dumps(doc["warnings"]), f"JSON warnings must mention {w}:\n{describe(rj)}"
    assert (out_json / wheels[0].name).read_bytes() == wheels[0].read_bytes(), "output not reproducible"


# --------------------------------------------------------------------------------------------
# The generator itself (no binary needed)


CUSTOM_GOOD = [c for c in NEGATIVE if c.good is not GOOD]


@pytest.mark.parametrize("c", POSITIVE + CUSTOM_GOOD,
                         ids=[c.id for c in POSITIVE] + [c.id + "-good" for c in CUSTOM_GOOD])
def test_generator_writes_valid_wheels(c: Case, tmp_path: Path) -> None:
    """Every input meant to be valid passes Python's zipfile and ``wheel unpack``."""
    paths = write_inputs(c, tmp_path)
    for p in (paths if c.exit == 0 else paths[1:]):
        r = subprocess.run([PYTHON, "-m", "zipfile", "-t", str(p)], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr
        # wheel unpack checks RECORD, but knows nothing of RECORD.jws/p7s being unrecorded.
        if not c.warn:
            r = subprocess.run([PYTHON, "-m", "wheel", "unpack", "-d", str(tmp_path / "u" / p.stem), str(p)],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"{p.name}: {r.stdout}{r.stderr}"


def test_hand_made_deflate_blocks_as_zlib_reads_them() -> None:
    """The oracle for the two hand-made blocks above: zlib refuses the incomplete code and reads
    the complete one."""
    with pytest.raises(zlib.error, match="invalid literal/lengths set"):
        zlib.decompressobj(-15).decompress(INCOMPLETE_CODE_AAA)
    d = zlib.decompressobj(-15)
    assert d.decompress(COMPLETE_CODE_AA) == b"AA" and d.eof and not d.unused_data


def test_generator_is_deterministic() -> None:
    assert W()() == W()()


def test_generator_breaks_only_what_is_asked() -> None:
    """A local CRC override changes the four CRC bytes of that local header and nothing else."""
    good = W()()
    bad = W(entry={UTIL: {"local": {"crc": lambda v: v ^ 1}}})()
    diff = [i for i, (a, b) in enumerate(zip(good, bad)) if a != b]
    assert len(good) == len(bad) and len(diff) == 1
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        offset = z.getinfo(UTIL).header_offset
    assert offset + 14 <= diff[0] < offset + 18  # the local header's CRC field


def test_windows_reads_the_refused_names_as_other_files() -> None:
    """What Windows' own path rules (Python's PureWindowsPath) make of WINDOWS_UNCREATABLE: a
    device, a drive-relative stream, or a name that is not the one written."""
    from pathlib import PureWindowsPath

    for name in WINDOWS_UNCREATABLE:
        path = PureWindowsPath(name)
        segments = name.split("/")
        reserved = path.is_reserved() or any(PureWindowsPath(s).is_reserved() for s in segments)
        forbidden = any(c in s for s in segments for c in '<>:"|?*')
        dropped = any(s.endswith((".", " ")) for s in segments)
        assert reserved or forbidden or dropped, name
