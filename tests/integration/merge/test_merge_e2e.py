"""End to end: merge the bundled example's two real builds (examples/wmdemo, CUDA 12 and 13) with
the real binary, check the output with the packaging tools and by reading its bytes, then
install it into fresh virtual environments and import it.

The rules checked are the wheel rules ("Writing", "Independent checks" in WHEEL_RULES.md) and the
contracts of docs/interfaces.md.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
import shutil
import stat
import struct
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from email.message import Message
from email.parser import BytesParser
from email.policy import compat32
from pathlib import Path

import pytest
from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename

from conftest import (CUDA_BINDINGS, DemoWheels, Venv, WheelCache, loader_manifest, merge_into, run,
                      tool_python, wheelmerge, without_label)
from one_name import assert_one_name_per_module, one_name_report
from wheelgen import record_hash

LABELS = ("cu12", "cu13")
EXT = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so
DIST_INFO = "wmdemo-0.1.0.dist-info/"
IMPORT_LINE = "from . import _wheelmerge as _wheelmerge  # wheelmerge: selects this package's build"

# The payload files every build has with the same bytes: stored once.
SHARED = ["wmdemo/__init__.py", "wmdemo/_core.pyi", "wmdemo/py.typed", "wmdemo/util.py",
          "wmdemo/sub/__init__.py", "wmdemo/sub/_nested.pyi"]
# The payload files that differ per build: path in a build -> stored path for a label.
VARIANT = {
    f"wmdemo/_core{EXT}": "wmdemo/_core.{label}" + EXT,
    f"wmdemo/sub/_nested{EXT}": "wmdemo/sub/_nested.{label}" + EXT,
    "wmdemo/_libs/libwmdemo_rt.so.1": "wmdemo/_libs/libwmdemo_rt.{label}.so.1",
    "wmdemo/kernels/scale.cubin": "wmdemo/kernels/scale.{label}.cubin",
}
# check-wheel-contents codes a variant layout legitimately triggers:
#   W004 (module not at an importable path): labelled extension modules such as
#   `_core.cu12.cpython-311-x86_64-linux-gnu.so` are not importable by their file name; the
#   loader imports them under their real name.
# Any other code (W002 duplicate files in particular: a shared file stored twice) is a bug.
EXPECTED_CWC_CODES = {"W004"}


def stored(path: str, label: str) -> str:
    return VARIANT[path].format(label=label)


def read_zip(path: Path) -> zipfile.ZipFile:
    return zipfile.ZipFile(path)


def parse_headers(data: bytes) -> Message:
    return BytesParser(policy=compat32).parsebytes(data)


def expected_name(demo_wheels: DemoWheels) -> str:
    """The merged wheel's name from the inputs: their tags, version without the local label."""
    name, version, build, tags = parse_wheel_filename(demo_wheels.cu13.name)
    assert not build
    tag_string = "-".join(".".join(sorted({getattr(t, part) for t in tags}))
                          for part in ("interpreter", "abi", "platform"))
    return f"{name}-{version.public}-{tag_string}.whl"


# --- raw zip structure -------------------------------------------------------------------------

@dataclass
class RawEntry:
    name: bytes
    made_by: int
    central: tuple  # version needed, flags, method, time, date, crc, csize, usize
    local: tuple
    central_extra: bytes
    local_extra: bytes
    comment: bytes
    external_attr: int
    offset: int
    end: int  # offset just past the entry's data


def parse_raw_zip(data: bytes) -> tuple[list[RawEntry], int, int]:
    """Walks the central directory and each local header by hand (zipfile hides what the rules
    are about: extra fields, data descriptors, gaps). Returns entries, directory offset, size."""
    eocd = len(data) - 22
    assert data[eocd:eocd + 4] == b"PK\x05\x06", "no end record at the very end (comment or trailing bytes)"
    (_, disk, cd_disk, n_here, n_total, cd_size, cd_offset, comment_len) = struct.unpack(
        "<IHHHHIIH", data[eocd:])
    assert comment_len == 0 and disk == 0 and cd_disk == 0 and n_here == n_total
    entries = []
    pos = cd_offset
    for _ in range(n_total):
        assert data[pos:pos + 4] == b"PK\x01\x02"
        (made_by, needed, flags, method, mtime, mdate, crc, csize, usize, nlen, xlen, clen,
         _disk, _internal, external, offset) = struct.unpack("<HHHHHHIIIHHHHHII", data[pos + 4:pos + 46])
        name = data[pos + 46:pos + 46 + nlen]
        central_extra = data[pos + 46 + nlen:pos + 46 + nlen + xlen]
        comment = data[pos + 46 + nlen + xlen:pos + 46 + nlen + xlen + clen]
        pos += 46 + nlen + xlen + clen
        assert data[offset:offset + 4] == b"PK\x03\x04", f"no local header for {name!r}"
        (l_needed, l_flags, l_method, l_time, l_date, l_crc, l_csize, l_usize, l_nlen,
         l_xlen) = struct.unpack("<HHHHHIIIHH", data[offset + 4:offset + 30])
        local_name = data[offset + 30:offset + 30 + l_nlen]
        local_extra = data[offset + 30 + l_nlen:offset + 30 + l_nlen + l_xlen]
        end = offset + 30 + l_nlen + l_xlen + csize
        entries.append(RawEntry(
            name, made_by, (needed, flags, method, mtime, mdate, crc, csize, usize, name),
            (l_needed, l_flags, l_method, l_time, l_date, l_crc, l_csize, l_usize, local_name),
            central_extra, local_extra, comment, external, offset, end))
    # The directory ends at the end record: no ZIP64 end record or locator (none is needed here).
    assert pos == cd_offset + cd_size == eocd, "bytes between the central directory and the end record"
    return entries, cd_offset, cd_size


# --- fixtures ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def merged(wheelmerge_bin: Path, demo_wheels: DemoWheels, tmp_path_factory) -> Path:
    """The two builds merged with the long form, `wheelmerge merge A B -o OUT`."""
    return merge_into(wheelmerge_bin, tmp_path_factory.mktemp("merged"), demo_wheels.cu12,
                      demo_wheels.cu13)


@pytest.fixture(scope="module")
def merged_zip(merged: Path) -> zipfile.ZipFile:
    return read_zip(merged)


@pytest.fixture(scope="module")
def input_zips(demo_wheels: DemoWheels) -> dict[str, zipfile.ZipFile]:
    return {label: read_zip(demo_wheels[label]) for label in LABELS}


def input_dist_info(label: str) -> str:
    return f"wmdemo-0.1.0+{label}.dist-info/"


# --- the merge itself --------------------------------------------------------------------------

def test_inputs_are_what_the_suite_expects(demo_wheels: DemoWheels, input_zips) -> None:
    """Guards the example: the variant files really differ and the shared ones do not."""
    assert demo_wheels.cu12.name.endswith(".cu12.whl")
    assert "+cu13-" in demo_wheels.cu13.name and not demo_wheels.cu13.name.endswith(".cu13.whl")
    payloads = {label: {n for n in z.namelist() if not n.startswith(input_dist_info(label))}
                for label, z in input_zips.items()}
    assert payloads["cu12"] == payloads["cu13"] == set(SHARED) | set(VARIANT)
    for path in SHARED:
        assert input_zips["cu12"].read(path) == input_zips["cu13"].read(path), path
    for path in VARIANT:
        assert input_zips["cu12"].read(path) != input_zips["cu13"].read(path), path


def test_merge_succeeds_with_the_expected_name(merged: Path, demo_wheels: DemoWheels) -> None:
    assert merged.name == expected_name(demo_wheels)
    assert merged.name == "wmdemo-0.1.0-cp311-cp311-linux_x86_64.whl"


def test_short_form_gives_the_same_wheel(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                         merged: Path, tmp_path: Path) -> None:
    short = merge_into(wheelmerge_bin, tmp_path / "out", demo_wheels.cu12, demo_wheels.cu13,
                       form="short")
    assert short.name == merged.name
    assert short.read_bytes() == merged.read_bytes()


def test_explicit_labels_give_the_same_wheel(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                             merged: Path, tmp_path: Path) -> None:
    out = merge_into(wheelmerge_bin, tmp_path / "out", f"{demo_wheels.cu12}=cu12",
                     f"{demo_wheels.cu13}=cu13")
    assert out.read_bytes() == merged.read_bytes()


@pytest.mark.parametrize("labels,selector", [(("torch210_cu12", "torch211_cu13"), "torch"),
                                             (("x86_64_v1", "x86_64_v3"), "cpu")])
def test_labels_of_other_selectors(wheelmerge_bin: Path, demo_wheels: DemoWheels, tmp_path: Path,
                                   labels: tuple[str, str], selector: str) -> None:
    """The same builds under torch or CPU-level labels (copies under names that carry no CUDA
    label, which would disagree): files labelled with them, the loader's manifest and
    `inspect` naming the selector."""
    inputs = [f"{without_label(wheel, tmp_path / label)}={label}"
              for wheel, label in zip((demo_wheels.cu12, demo_wheels.cu13), labels)]
    out = merge_into(wheelmerge_bin, tmp_path / "out", *inputs)
    names = set(read_zip(out).namelist())
    for label in labels:
        assert {stored(path, label) for path in VARIANT} <= names
    report = json.loads(wheelmerge(wheelmerge_bin, "inspect", "--json", out).stdout)
    assert report["variants"] == list(labels)
    assert [loader["selector"] for loader in report["loaders"]] == [selector]
    text = wheelmerge(wheelmerge_bin, "inspect", out).stdout
    assert f"selector {selector}, driver fallback off" in text
    wheelmerge(wheelmerge_bin, "verify", out)


def test_labels_of_different_selectors_are_a_usage_error(wheelmerge_bin: Path,
                                                         demo_wheels: DemoWheels,
                                                         tmp_path: Path) -> None:
    result = wheelmerge(wheelmerge_bin, "merge", f"{demo_wheels.cu12}=cu12",
                        f"{without_label(demo_wheels.cu13, tmp_path / 'v3')}=x86_64_v3", "-o", tmp_path / "out",
                        check=False)
    assert result.returncode == 2
    assert "variant labels of different selectors" in result.stderr
    assert "x86_64_v3 (selector cpu)" in result.stderr
    assert not (tmp_path / "out").exists()


def test_repeatable_options_take_one_value_each(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                                merged: Path, tmp_path: Path) -> None:
    """`--variant-file X` before the wheels takes X alone: the wheels after it stay inputs."""
    out = merge_into(wheelmerge_bin, tmp_path / "out", "--variant-file", "wmdemo/none.py",
                     demo_wheels.cu12, "--variant-file=wmdemo/other.py", demo_wheels.cu13)
    assert out.read_bytes() == merged.read_bytes()


def test_merge_json_report(wheelmerge_bin: Path, demo_wheels: DemoWheels, merged: Path,
                           tmp_path: Path) -> None:
    result = wheelmerge(wheelmerge_bin, "merge", "--json", demo_wheels.cu12, demo_wheels.cu13,
                        "-o", tmp_path)
    report = json.loads(result.stdout)
    assert Path(report["output"]).resolve() == (tmp_path / merged.name).resolve()
    assert report["variants"] == list(LABELS)
    assert report["shared"] == len(SHARED)  # the inputs' payload files stored once
    assert report["variant_files"] == len(VARIANT) * len(LABELS)  # stored variant files
    assert isinstance(report["warnings"], list)


def test_output_directory_is_created(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                     merged: Path, tmp_path: Path) -> None:
    out = merge_into(wheelmerge_bin, tmp_path / "a" / "b", demo_wheels.cu12, demo_wheels.cu13)
    assert out.read_bytes() == merged.read_bytes()


def test_merging_beside_the_inputs_leaves_them_alone(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                                    merged: Path, tmp_path: Path) -> None:
    inputs = [Path(shutil.copy(demo_wheels[label], tmp_path)) for label in LABELS]
    before = {p.name: p.read_bytes() for p in inputs}
    wheelmerge(wheelmerge_bin, "merge", *inputs, "-o", tmp_path)
    # The inputs unchanged, the merged wheel beside them, nothing else (no temporary file).
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, merged.name])
    assert {p.name: p.read_bytes() for p in inputs} == before
    assert (tmp_path / merged.name).read_bytes() == merged.read_bytes()


# --- independent checks ------------------------------------------------------------------------

def test_wheel_unpack_verifies_every_hash(merged: Path, tmp_path: Path) -> None:
    run([tool_python(), "-m", "wheel", "unpack", "-d", tmp_path, merged])
    assert (tmp_path / "wmdemo-0.1.0" / "wmdemo" / "_wheelmerge.py").is_file()


def test_installer_validates_record(merged: Path, tmp_path: Path) -> None:
    run([tool_python(), "-m", "installer", "--validate-record", "all", "--no-compile-bytecode",
         "--destdir", tmp_path, merged])
    installed = sorted(p.name for p in tmp_path.rglob("*.so*"))
    assert f"_core.cu12{EXT}" in installed and "libwmdemo_rt.cu13.so.1" in installed


def test_installer_api_validates_record(merged: Path) -> None:
    # The same through the API, with content validation on (hashes and sizes of every file).
    code = ("import sys\nfrom installer.sources import WheelFile\n"
            "with WheelFile.open(sys.argv[1]) as w:\n"
            "    w.validate_record(validate_contents=True)\n"
            "    print(len(list(w.get_contents())))\n")
    result = run([tool_python(), "-c", code, merged])
    assert int(result.stdout) == len(read_zip(merged).namelist())


def test_check_wheel_contents_reports_only_variant_layout_codes(merged: Path) -> None:
    result = run([tool_python(), "-m", "check_wheel_contents", merged], check=False)
    output = result.stdout + result.stderr
    codes = set(re.findall(r": ([WE]\d{3}): ", output))
    assert codes == EXPECTED_CWC_CODES, output
    # W004 names exactly the labelled extension modules.
    flagged = set(re.findall(r"^  (\S+)$", output, re.M))
    assert flagged == {stored(p, label) for p in VARIANT if p.endswith(EXT) for label in LABELS}, output


def test_twine_check_strict(merged: Path) -> None:
    result = run([tool_python(), "-m", "twine", "check", "--strict", merged])
    assert "PASSED" in result.stdout


def test_zipfile_reads_every_member(merged_zip: zipfile.ZipFile) -> None:
    assert merged_zip.testzip() is None
    for info in merged_zip.infolist():
        data = merged_zip.read(info)
        assert len(data) == info.file_size, info.filename


# --- zip layout --------------------------------------------------------------------------------

def test_entry_order(merged_zip: zipfile.ZipFile) -> None:
    names = merged_zip.namelist()
    payload = [n for n in names if not n.startswith(DIST_INFO)]
    dist_info = [n for n in names if n.startswith(DIST_INFO) and n != DIST_INFO + "RECORD"]
    key = lambda n: n.encode("utf-8")  # noqa: E731
    assert names == sorted(payload, key=key) + sorted(dist_info, key=key) + [DIST_INFO + "RECORD"]


def test_no_directory_entries(merged_zip: zipfile.ZipFile) -> None:
    assert [n for n in merged_zip.namelist() if n.endswith("/")] == []


def test_raw_zip_structure(merged: Path) -> None:
    data = merged.read_bytes()
    entries, cd_offset, _ = parse_raw_zip(data)
    position = 0
    for e in entries:
        name = e.name.decode()
        assert e.offset == position, f"{name}: gap or overlap before its local header"
        position = e.end
        assert e.central == e.local, f"{name}: local header and central directory disagree"
        _, flags, method, *_ = e.central
        assert method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED), name
        assert flags & 0x1 == 0, f"{name}: encrypted"
        assert flags & 0x8 == 0, f"{name}: data descriptor"
        assert e.central_extra == b"" and e.local_extra == b"", f"{name}: extra field"
        assert e.comment == b"", f"{name}: entry comment"
        assert e.made_by >> 8 == 3, f"{name}: not made by Unix"
    assert position == cd_offset, "bytes between the last entry and the central directory"


def test_unchanged_members_are_copied_compressed_as_they_are(merged: Path, demo_wheels: DemoWheels) -> None:
    # Deflate output differs between zlib versions: recompressing would make the output depend on
    # the machine. Every member but the generated ones is copied byte for byte, compressed.
    def compressed(path: Path) -> dict[str, tuple[int, bytes]]:
        data = path.read_bytes()
        entries, _, _ = parse_raw_zip(data)
        return {e.name.decode(): (e.central[2], data[e.end - e.central[6]:e.end]) for e in entries}

    output = compressed(merged)
    generated = {"wmdemo/__init__.py", "wmdemo/_wheelmerge.py", "wmdemo/_wheelmerge_rules.py"}
    for label in LABELS:
        source = compressed(demo_wheels[label])
        for path in SHARED:
            if path not in generated:
                assert output[path] == source[path], path
        for path in VARIANT:
            assert output[stored(path, label)] == source[path], (path, label)


def test_external_attributes(merged_zip: zipfile.ZipFile, input_zips) -> None:
    inputs = {}  # stored path -> the input member's mode
    for label, z in input_zips.items():
        for info in z.infolist():
            name = info.filename
            if name in VARIANT:
                inputs[stored(name, label)] = info.external_attr >> 16
            elif name in SHARED:
                inputs[name] = info.external_attr >> 16
    for info in merged_zip.infolist():
        mode = info.external_attr >> 16
        assert info.create_system == 3, info.filename
        assert stat.S_IFMT(mode) == stat.S_IFREG, f"{info.filename}: {oct(mode)}"
        source = inputs.get(info.filename, 0o644)  # generated files: not executable
        expected = 0o755 if source & 0o111 else 0o644
        assert stat.S_IMODE(mode) == expected, f"{info.filename}: {oct(mode)}"
        assert info.external_attr & 0xFFFF == 0, info.filename
    for label in LABELS:
        for path in VARIANT:
            if ".so" in path:
                info = merged_zip.getinfo(stored(path, label))
                assert (info.external_attr >> 16) & 0o111, f"{info.filename} lost its exec bit"


def test_every_entry_has_the_same_timestamp(merged_zip: zipfile.ZipFile) -> None:
    stamps = {info.date_time for info in merged_zip.infolist()}
    assert len(stamps) == 1, stamps


# --- generated dist-info files -----------------------------------------------------------------

def test_record(merged_zip: zipfile.ZipFile) -> None:
    raw = merged_zip.read(DIST_INFO + "RECORD")
    assert not raw.startswith(b"\xef\xbb\xbf"), "BOM"
    text = raw.decode("utf-8")
    assert "\r" not in text and text.endswith("\n")
    lines = text.split("\n")[:-1]
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == len(lines)
    names = merged_zip.namelist()
    paths = [row[0] for row in rows]
    assert len(paths) == len(set(paths)), "duplicate rows"
    assert set(paths) == set(names)
    for line, row in zip(lines, rows):
        assert len(row) == 3, line
        path, digest, size = row
        if path == DIST_INFO + "RECORD":
            assert digest == "" and size == ""
        else:
            data = merged_zip.read(path)
            assert digest == record_hash(data), path
            assert size == str(len(data)), path
        # A field is quoted only when it must be.
        must_quote = re.compile(r'[,"\r\n]')
        assert line == ",".join('"' + f.replace('"', '""') + '"' if must_quote.search(f) else f
                                for f in row)


def test_wheel_file(merged: Path, merged_zip: zipfile.ZipFile) -> None:
    wheel = parse_headers(merged_zip.read(DIST_INFO + "WHEEL"))
    assert wheel.get_all("Wheel-Version") == ["1.0"]
    assert len(wheel.get_all("Generator") or []) == 1
    assert wheel.get_all("Root-Is-Purelib") == ["false"]
    assert wheel.get_all("Build") is None
    _, _, _, tags = parse_wheel_filename(merged.name)
    assert sorted(wheel.get_all("Tag")) == sorted(str(t) for t in tags)
    assert len(wheel.get_all("Tag")) == len(set(wheel.get_all("Tag")))


def test_metadata(merged_zip: zipfile.ZipFile, input_zips) -> None:
    raw = merged_zip.read(DIST_INFO + "METADATA")
    metadata = Metadata.from_email(raw, validate=True)
    assert canonicalize_name(metadata.name) == "wmdemo"
    assert str(metadata.version) == "0.1.0"
    assert set(metadata.provides_extra or []) >= {"cu12", "cu13"}
    cuda = [r for r in metadata.requires_dist or [] if canonicalize_name(r.name) == "cuda-bindings"]
    by_marker = {str(r.marker): r for r in cuda}
    assert set(by_marker) == {'extra == "cu12"', 'extra == "cu13"'}, [str(r) for r in cuda]
    assert by_marker['extra == "cu12"'].specifier == SpecifierSet(">=12.0,<13")
    assert by_marker['extra == "cu13"'].specifier == SpecifierSet(">=13.0,<14")
    # The rest of the metadata is the builds' (the same in both).
    original = Metadata.from_email(input_zips["cu13"].read(input_dist_info("cu13") + "METADATA"),
                                   validate=True)
    for field in ("summary", "requires_python", "classifiers", "license_expression",
                  "description_content_type", "metadata_version"):
        assert getattr(metadata, field) == getattr(original, field), field
    merged_body = parse_headers(raw).get_payload()
    original_body = parse_headers(input_zips["cu13"].read(input_dist_info("cu13") + "METADATA")).get_payload()
    assert merged_body.strip() == original_body.strip()


def test_metadata_requires_dist_lines(merged_zip: zipfile.ZipFile) -> None:
    lines = parse_headers(merged_zip.read(DIST_INFO + "METADATA")).get_all("Requires-Dist")
    requirements = [Requirement(line) for line in lines]
    # No unconditional cuda-bindings: that would pin one major for every install.
    assert all(r.marker is not None for r in requirements
               if canonicalize_name(r.name) == "cuda-bindings"), lines
    assert parse_headers(merged_zip.read(DIST_INFO + "METADATA")).get_all("Provides-Extra")


# --- payload -----------------------------------------------------------------------------------

def test_payload_files(merged_zip: zipfile.ZipFile) -> None:
    payload = {n for n in merged_zip.namelist() if not n.startswith(DIST_INFO)}
    expected = set(SHARED) | {stored(p, label) for p in VARIANT for label in LABELS}
    expected |= {"wmdemo/_wheelmerge.py", "wmdemo/_wheelmerge_rules.py"}
    assert payload == expected


def test_dist_info_files(merged_zip: zipfile.ZipFile, input_zips) -> None:
    dist_info = {n[len(DIST_INFO):] for n in merged_zip.namelist() if n.startswith(DIST_INFO)}
    original = {n[len(input_dist_info("cu13")):] for n in input_zips["cu13"].namelist()
                if n.startswith(input_dist_info("cu13"))}
    assert dist_info == original
    assert merged_zip.read(DIST_INFO + "top_level.txt") == input_zips["cu13"].read(
        input_dist_info("cu13") + "top_level.txt")


def test_shared_files_are_the_inputs_bytes(merged_zip: zipfile.ZipFile, input_zips) -> None:
    for path in SHARED:
        if path != "wmdemo/__init__.py":
            assert merged_zip.read(path) == input_zips["cu12"].read(path), path


def test_variant_files_are_each_builds_bytes(merged_zip: zipfile.ZipFile, input_zips) -> None:
    for label in LABELS:
        for path in VARIANT:
            assert merged_zip.read(stored(path, label)) == input_zips[label].read(path), (path, label)


def test_init_imports_the_loader_after_docstring_and_future(merged_zip: zipfile.ZipFile,
                                                            input_zips) -> None:
    original = input_zips["cu12"].read("wmdemo/__init__.py").decode()
    patched = merged_zip.read("wmdemo/__init__.py").decode()
    assert patched.count(IMPORT_LINE) == 1
    # Removing the line gives back the original exactly.
    assert patched.replace(IMPORT_LINE + "\n", "", 1) == original
    body = ast.parse(patched).body
    assert isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    assert ast.get_docstring(ast.parse(patched)) == ast.get_docstring(ast.parse(original))
    assert isinstance(body[1], ast.ImportFrom) and body[1].module == "__future__"
    assert isinstance(body[2], ast.ImportFrom) and body[2].level == 1
    assert [(a.name, a.asname) for a in body[2].names] == [("_wheelmerge", "_wheelmerge")]


def test_loader_manifest(merged_zip: zipfile.ZipFile) -> None:
    loader = merged_zip.read("wmdemo/_wheelmerge.py").decode()
    compile(loader, "wmdemo/_wheelmerge.py", "exec")
    assert loader.isascii()
    manifest = loader_manifest(loader)
    assert manifest["selector"] == "cuda"
    assert manifest["package"] == "wmdemo" and manifest["distribution"] == "wmdemo"
    assert manifest["variants"] == list(LABELS)
    for label in LABELS:
        assert manifest["modules"][label] == {
            "wmdemo._core": f"_core.{label}{EXT}",
            "wmdemo.sub._nested": f"sub/_nested.{label}{EXT}",
        }
        assert manifest["files"][label] == {
            p[len("wmdemo/"):]: stored(p, label)[len("wmdemo/"):] for p in VARIANT}
        assert manifest["preload"][label] == [f"_libs/libwmdemo_rt.{label}.so.1"]


# --- determinism -------------------------------------------------------------------------------

def test_deterministic_across_runs_and_input_order(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                                   merged: Path, tmp_path: Path) -> None:
    again = merge_into(wheelmerge_bin, tmp_path / "again", demo_wheels.cu12, demo_wheels.cu13)
    swapped = merge_into(wheelmerge_bin, tmp_path / "swapped", demo_wheels.cu13, demo_wheels.cu12)
    assert again.read_bytes() == merged.read_bytes()
    assert swapped.read_bytes() == merged.read_bytes()


@pytest.mark.parametrize("epoch", [1700000000, 1700000001])
def test_source_date_epoch_sets_every_timestamp(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                                merged: Path, tmp_path: Path, epoch: int) -> None:
    out = merge_into(wheelmerge_bin, tmp_path, demo_wheels.cu12, demo_wheels.cu13,
                     env={"SOURCE_DATE_EPOCH": str(epoch)})
    assert out.read_bytes() != merged.read_bytes()
    utc = time.gmtime(epoch)
    # DOS times have two-second resolution: 1700000001 is written as ...:20 like 1700000000.
    expected = (utc.tm_year, utc.tm_mon, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec // 2 * 2)
    assert {info.date_time for info in read_zip(out).infolist()} == {expected}
    # Only the timestamps change: the same members, the same bytes.
    with read_zip(out) as z, read_zip(merged) as m:
        assert z.namelist() == m.namelist()
        assert all(z.read(n) == m.read(n) for n in z.namelist())


def test_source_date_epoch_is_clamped_to_1980(wheelmerge_bin: Path, demo_wheels: DemoWheels,
                                              tmp_path: Path) -> None:
    out = merge_into(wheelmerge_bin, tmp_path, demo_wheels.cu12, demo_wheels.cu13,
                     env={"SOURCE_DATE_EPOCH": "0"})
    assert {info.date_time for info in read_zip(out).infolist()} == {(1980, 1, 1, 0, 0, 0)}


# --- inspect -----------------------------------------------------------------------------------

def test_inspect_json(wheelmerge_bin: Path, merged: Path, merged_zip: zipfile.ZipFile) -> None:
    report = json.loads(wheelmerge(wheelmerge_bin, "inspect", merged, "--json").stdout)
    assert report["variants"] == list(LABELS)
    _, _, _, tags = parse_wheel_filename(merged.name)
    assert sorted(report["tags"]) == sorted(str(t) for t in tags)
    files = report["files"]
    assert isinstance(files, list)
    sizes = {f["path"]: f["size"] for f in files}
    payload = {n: merged_zip.getinfo(n).file_size for n in merged_zip.namelist()
               if not n.startswith(DIST_INFO)}
    # Every payload file is listed with its size (dist-info files may or may not be).
    assert {p: s for p, s in sizes.items() if p in payload} == payload
    assert set(sizes) - set(payload) <= set(merged_zip.namelist())
    # ... and with the variant it belongs to, none for a shared file.
    variant_of = {stored(p, label): label for p in VARIANT for label in LABELS}
    assert {f["path"]: f["variant"] for f in files if f["path"] in payload} == {
        p: variant_of.get(p) for p in payload}


# --- installed: selection at import time -------------------------------------------------------

PROBE = r"""
import json, pathlib, sys
import wmdemo, wmdemo.sub
from wmdemo import _core, _wheelmerge
from wmdemo.sub import _nested
kernel = pathlib.Path(_wheelmerge.path("kernels/scale.cubin"))
maps = pathlib.Path("/proc/self/maps").read_text().splitlines()
print(json.dumps({
    "build_major": wmdemo.build_major(),
    "nested_major": wmdemo.sub.build_major(),
    "runtime_major": wmdemo.runtime_major(),
    "scale": wmdemo.scale(2.0),
    "selected": _wheelmerge.selected(),
    "kernel": str(kernel),
    "kernel_hex": kernel.read_bytes().hex(),
    "kernel_path": str(wmdemo.kernel_path()),
    "core_file": _core.__file__,
    "nested_file": _nested.__file__,
    "runtime_libraries": sorted({line.split()[-1] for line in maps if "libwmdemo_rt" in line}),
}))
"""

IMPORT_ERROR_PROBE = r"""
import json
try:
    import wmdemo
except ImportError as error:
    print(json.dumps({"type": type(error).__name__, "message": str(error)}))
else:
    print(json.dumps({"type": None, "build_major": wmdemo.build_major()}))
"""


def probe(venv: Venv, env: dict[str, str] | None = None) -> dict:
    return json.loads(venv.run("-c", PROBE, env=env).stdout)


def assert_selected(facts: dict, label: str, input_zips) -> None:
    major = int(label[2:])
    assert facts["selected"] == label
    assert facts["build_major"] == facts["nested_major"] == facts["runtime_major"] == major
    assert facts["scale"] == 2.0 * major  # computed by the private library
    assert facts["kernel"].endswith(f"scale.{label}.cubin")
    assert Path(facts["kernel_path"]).name == f"scale.{label}.cubin"
    assert bytes.fromhex(facts["kernel_hex"]) == input_zips[label].read("wmdemo/kernels/scale.cubin")
    assert facts["core_file"].endswith(f"_core.{label}{EXT}")
    assert facts["nested_file"].endswith(f"_nested.{label}{EXT}")
    assert [Path(p).name for p in facts["runtime_libraries"]] == [f"libwmdemo_rt.{label}.so.1"]


def installed_version(venv: Venv, distribution: str) -> str | None:
    code = ("import importlib.metadata as m, sys\n"
            "try: print(m.version(sys.argv[1]))\n"
            "except m.PackageNotFoundError: print('')\n")
    return venv.run("-c", code, distribution).stdout.strip() or None


@pytest.fixture(scope="module")
def venvs(make_venv, merged: Path, wheel_cache: WheelCache) -> dict[str, Venv]:
    """One environment per cuda-bindings major, and one without: each with the merged wheel."""
    made = {}
    for label in (*LABELS, "none"):
        venv = make_venv(f"e2e-{label}")
        requirements = [wheel_cache.requirement(label)] if label in LABELS else []
        venv.install(*requirements, merged, find_links=[wheel_cache.path])
        made[label] = venv
    return made


@pytest.mark.parametrize("label", LABELS)
def test_installed_selects_the_build_of_the_installed_cuda_bindings(venvs, input_zips,
                                                                    label: str) -> None:
    assert installed_version(venvs[label], "cuda-bindings") == CUDA_BINDINGS[label]
    assert_selected(probe(venvs[label]), label, input_zips)


def test_without_cuda_bindings_import_fails_with_advice(venvs) -> None:
    venv = venvs["none"]
    assert installed_version(venv, "cuda-bindings") is None
    outcome = json.loads(venv.run("-c", IMPORT_ERROR_PROBE).stdout)
    assert outcome["type"] is not None, f"import wmdemo succeeded: {outcome}"
    message = outcome["message"]
    # What was detected (no cuda-bindings), the builds the wheel holds, and the fix.
    assert "cuda-bindings" in message, message
    assert re.search(r"not installed|not found|no cuda-bindings|none", message, re.I), message
    assert "cu12" in message and "cu13" in message, message
    assert 'pip install "wmdemo[cu13]"' in message, message


@pytest.mark.parametrize("value", ["12", "cu12"])
def test_override_contradicting_cuda_bindings_is_refused(venvs, value: str) -> None:
    """cuda-bindings 13 is installed: a cu12 build would fail inside Cython with "does not
    export expected C function"; the loader refuses first, naming both."""
    outcome = json.loads(venvs["cu13"].run("-c", IMPORT_ERROR_PROBE, env={"WHEELMERGE_CUDA_MAJOR": value}).stdout)
    assert outcome["type"] is not None, f"import wmdemo succeeded: {outcome}"
    message = outcome["message"]
    assert "WHEELMERGE_CUDA_MAJOR" in message and CUDA_BINDINGS["cu13"] in message, message
    assert "WHEELMERGE_IGNORE_CUDA_BINDINGS" in message, message


@pytest.mark.parametrize("value", ["12", "cu12"])
def test_override_wins_over_cuda_bindings_when_told_to(venvs, input_zips, value: str) -> None:
    facts = probe(venvs["cu13"], env={"WHEELMERGE_CUDA_MAJOR": value, "WHEELMERGE_IGNORE_CUDA_BINDINGS": "1"})
    assert_selected(facts, "cu12", input_zips)


def test_override_variable_without_cuda_bindings(venvs, input_zips) -> None:
    assert_selected(probe(venvs["none"], env={"WHEELMERGE_CUDA_MAJOR": "13"}), "cu13", input_zips)


def test_pip_install_extra_pulls_the_matching_cuda_bindings(make_venv, merged: Path,
                                                             wheel_cache: WheelCache,
                                                             input_zips) -> None:
    venv = make_venv("e2e-extra-cu12")
    venv.install("wmdemo[cu12]", find_links=[merged.parent, wheel_cache.path])
    assert installed_version(venv, "cuda-bindings") == CUDA_BINDINGS["cu12"]
    assert installed_version(venv, "wmdemo") == "0.1.0"
    assert_selected(probe(venv), "cu12", input_zips)


def test_loader_diagnosis(venvs) -> None:
    result = venvs["cu12"].run("-m", "wmdemo._wheelmerge")
    output = result.stdout + result.stderr
    assert "wmdemo" in output, output
    assert "cu12" in output and "cu13" in output, output
    assert "cuda-bindings" in output and CUDA_BINDINGS["cu12"] in output, output


def test_loader_diagnosis_when_no_build_fits(venvs) -> None:
    # The report matters most when `import wmdemo` fails: it must come all the same.
    result = venvs["none"].run("-m", "wmdemo._wheelmerge", check=False)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert "cu12" in output and "cu13" in output, output
    assert "cuda-bindings" in output and 'pip install "wmdemo[cu13]"' in output, output


@pytest.mark.parametrize("label", LABELS)
def test_each_module_has_one_name(venvs, label: str) -> None:
    """Every module Python's walker finds in the installed merged wheel imports under one name:
    no module object or file twice in sys.modules, no labelled name importable (one_name.py)."""
    report = one_name_report(lambda *args: venvs[label].run(*args), "wmdemo", list(LABELS))
    assert {"wmdemo._core", "wmdemo.sub._nested", "wmdemo._wheelmerge"} <= set(report["found"]), report["found"]
    assert_one_name_per_module(report)
