#!/usr/bin/env python3
"""Writes the seed corpus of the libFuzzer harnesses, one directory per harness:

    tests/fuzz/make_corpus.py OUT_DIR [--wmdemo CACHE_DIR] [--wheel PATH ...]
    tests/fuzz/make_corpus.py --flags HARNESS     # its libFuzzer options (-max_len, -dict)
    tests/fuzz/make_corpus.py --harnesses         # the harness names

Seeds come from valid wheels built here (with Python's ``zipfile``, as setuptools and wheel
write them, and with ``tests/integration/support/wheelgen.py``), from the bad-input corpus of
``tests/integration/hostile/test_bad_inputs.py`` (when pytest is importable), from real wheels of the
bundled example ``examples/wmdemo`` (built once per CUDA major into CACHE_DIR with
``--wmdemo``; skipped with a note when that fails), from any ``--wheel`` given, and from the
parts of all of these (RECORD, WHEEL, METADATA, file names, ``__init__.py``, ELF files).
Everything but the wmdemo build is deterministic. Seeds larger than the harness's maximum
input length are left out.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration" / "support"))
sys.path.insert(1, str(ROOT / "tests" / "integration" / "hostile"))  # test_bad_inputs
import wheelgen as wg  # noqa: E402

# Must match kWheelSeparator in fuzz_common.hpp.
SEPARATOR = b"\n@@WHEELMERGE-FUZZ-NEXT-WHEEL@@\n"

# The -max_len each harness runs with (run.sh and test_fuzz.py read this table).
MAX_LEN = {
    "fuzz_zip": 65536,
    "fuzz_record": 8192,
    "fuzz_headers": 8192,
    "fuzz_filename": 1024,
    "fuzz_loader_inject": 8192,
    "fuzz_elf": 32768,
    "fuzz_merge": 131072,
    "fuzz_merge_valid": 163840,
    "fuzz_requirement": 4096,
    "fuzz_inflate": 65536,
    "fuzz_fatbin": 8192,
    "fuzz_variant_json": 8192,
    "fuzz_workflow": 4096,
    "fuzz_shadow": 4096,
}

# The dictionary each harness runs with, in tests/fuzz/dicts/.
DICT = {
    "fuzz_zip": "zip.dict",
    "fuzz_record": "record.dict",
    "fuzz_headers": "headers.dict",
    "fuzz_filename": "filename.dict",
    "fuzz_loader_inject": "loader_inject.dict",
    "fuzz_merge": "zip.dict",
    "fuzz_merge_valid": "merge_valid.dict",
    "fuzz_variant_json": "variant_json.dict",
    "fuzz_shadow": "shadow.dict",
    "fuzz_workflow": "workflow.dict",
}


def flags(harness: str) -> list[str]:
    """The libFuzzer options a harness runs with, beyond time and corpus."""
    out = [f"-max_len={MAX_LEN[harness]}"]
    if harness in DICT:
        out.append(f"-dict={HERE / 'dicts' / DICT[harness]}")
    return out


# (kind, arch, flags, payload, header): SASS, PTX, arch-specific, family, longer headers.
FATBINS = [
    [(2, 75, 0x11, 24, 64), (2, 86, 0x11, 8, 64), (1, 80, 0x8011, 17, 80)],
    [(2, 90, 0x100011, 16, 64), (2, 100, 0x1200011, 40, 112), (2, 120, 0x1000011, 8, 96), (1, 120, 0x8011, 9, 80)],
    [],
]

TAGS = "cp311-cp311-linux_x86_64"
DI = "pkg-1.0.dist-info"


# ---------------------------------------------------------------------------------------------
# Building blocks


def zipfile_wheel(files: dict[str, bytes], name: str = "pkg", version: str = "1.0", tags: str = TAGS,
                  *, compression: int = zipfile.ZIP_DEFLATED, directories: bool = False,
                  metadata_extra: str = "", executable: tuple[str, ...] = ()) -> bytes:
    """A valid wheel written by Python's zipfile, the way bdist_wheel lays one out."""
    dist_info = f"{wg.escape_name(name)}-{version}.dist-info"
    members = dict(files)
    members[f"{dist_info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                        f"Summary: a fuzz seed\n{metadata_extra}").encode()
    members[f"{dist_info}/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: bdist_wheel (0.45.1)\nRoot-Is-Purelib: false\n"
                                     + "".join(f"Tag: {t}\n" for t in wg.expand_tags(tags))).encode()
    members[f"{dist_info}/RECORD"] = wg.record_file((wg.record_row(p, d) for p, d in members.items()),
                                                    f"{dist_info}/RECORD")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compression) as z:
        seen_dirs: set[str] = set()
        for path, data in members.items():
            if directories:
                parts = path.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    d = "/".join(parts[:i]) + "/"
                    if d not in seen_dirs:
                        seen_dirs.add(d)
                        info = zipfile.ZipInfo(d, date_time=(1980, 1, 1, 0, 0, 0))
                        info.external_attr = (0o40755 << 16) | 0x10
                        info.create_system = 3
                        z.writestr(info, b"")
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100755 if path in executable else 0o100644) << 16
            info.create_system = 3
            info.compress_type = compression
            z.writestr(info, data)
    return buf.getvalue()


def elf(soname: str | None = None, needed: tuple[str, ...] = (), *, is64: bool = True, et_dyn: bool = True,
        dynamic: bool = True, strtab_vaddr_shift: int = 0, tail: bytes = b"") -> bytes:
    """A minimal little-endian ELF shared object: one PT_LOAD over the whole file, a PT_DYNAMIC
    with DT_NEEDED, DT_SONAME, DT_STRTAB and DT_STRSZ, and the string table after it."""
    strtab = b"\0"
    offsets = {}
    for s in ([soname] if soname else []) + list(needed):
        offsets[s] = len(strtab)
        strtab += s.encode() + b"\0"
    ehsize, phentsize = (64, 56) if is64 else (52, 32)
    phnum = 2 if dynamic else 1
    dyn_off = ehsize + phentsize * phnum
    entries = [(1, offsets[n]) for n in needed] + ([(14, offsets[soname])] if soname else [])
    dyn_count = len(entries) + 3
    dyn_size = dyn_count * (16 if is64 else 8)
    str_off = dyn_off + dyn_size
    entries += [(5, str_off + strtab_vaddr_shift), (10, len(strtab)), (0, 0)]
    total = str_off + len(strtab) + len(tail)
    ident = b"\x7fELF" + bytes([2 if is64 else 1, 1, 1, 0]) + bytes(8)
    if is64:
        head = ident + struct.pack("<HHIQQQIHHHHHH", 3 if et_dyn else 2, 62, 1, 0, ehsize, 0, 0, ehsize,
                                   phentsize, phnum, 64, 0, 0)
        ph = struct.pack("<IIQQQQQQ", 1, 5, 0, strtab_vaddr_shift, 0, total, total, 0x1000)
        if dynamic:
            ph += struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off + strtab_vaddr_shift, 0, dyn_size, dyn_size, 8)
        dyn = b"".join(struct.pack("<qQ", t, v) for t, v in entries)
    else:
        head = ident + struct.pack("<HHIIIIIHHHHHH", 3 if et_dyn else 2, 3, 1, 0, ehsize, 0, 0, ehsize,
                                   phentsize, phnum, 40, 0, 0)
        ph = struct.pack("<IIIIIIII", 1, 0, strtab_vaddr_shift, 0, total, total, 5, 0x1000)
        if dynamic:
            ph += struct.pack("<IIIIIIII", 2, dyn_off, dyn_off + strtab_vaddr_shift, 0, dyn_size, dyn_size, 6, 4)
        dyn = b"".join(struct.pack("<iI", t, v) for t, v in entries)
    out = head + ph + (dyn if dynamic else bytes(dyn_size)) + strtab + tail
    assert len(out) == total
    return out


def gpu_blob(major: int) -> bytes:
    return b"\x7fELF" + bytes([2, 1, 1, 0x33]) + struct.pack("<I", major) + b"kernel sm_80\n" * 4


def pkg_files(major: int) -> dict[str, bytes]:
    """A package built for one CUDA major: shared Python, a variant extension module that needs
    a private library, the private library, and a variant cubin."""
    return {
        "pkg/__init__.py": b'"""pkg: a fuzz seed."""\nfrom __future__ import annotations\n\n__all__ = ["core"]\n',
        "pkg/util.py": b"def answer():\n    return 42\n",
        "pkg/_core.cpython-311-x86_64-linux-gnu.so":
            elf(None, ("libpkgrt-1a2b3c.so.1", "libc.so.6"), tail=f"core for cuda {major}\n".encode()),
        "pkg.libs/libpkgrt-1a2b3c.so.1": elf("libpkgrt-1a2b3c.so.1", ("libdep.so.2",), tail=bytes([major]) * 8),
        "pkg.libs/libdep.so.2": elf("libdep.so.2", (), tail=bytes([major]) * 4),
        "pkg/kernels/scale.cubin": gpu_blob(major),
        "pkg/sub/__init__.py": b"",
        "pkg/sub/_nested.cpython-311-x86_64-linux-gnu.so": elf(None, ("libc.so.6",), tail=bytes([major]) * 2),
    }


def pair(a: bytes, b: bytes) -> bytes:
    return a + SEPARATOR + b


# ---------------------------------------------------------------------------------------------
# Real wheels: the bundled example, built once per CUDA major


def build_wmdemo(cache: Path) -> list[Path]:
    """wmdemo built for CUDA 12 and 13 with pip (no isolation, no CUDA needed), cached."""
    wheels = sorted(cache.glob("wmdemo-*.whl"))
    if len(wheels) == 2:
        return wheels
    cache.mkdir(parents=True, exist_ok=True)
    python = ROOT / ".venv" / "bin" / "python"
    python = python if python.exists() else Path(sys.executable)
    for major in ("12", "13"):
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "wmdemo"
            shutil.copytree(ROOT / "examples" / "wmdemo", src)
            env = dict(os.environ, WMDEMO_CUDA_MAJOR=major, PIP_DISABLE_PIP_VERSION_CHECK="1")
            result = subprocess.run([str(python), "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                                     "-q", "-w", str(cache), str(src)], env=env, capture_output=True, text=True)
            if result.returncode != 0:
                print(f"make_corpus: wmdemo for CUDA {major} not built, its seeds are left out:\n"
                      f"{result.stderr[-2000:]}", file=sys.stderr)
                return []
    return sorted(cache.glob("wmdemo-*.whl"))


def members_of(whl: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(whl)) as z:
        return {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}


def as_pkg(whl: bytes) -> bytes:
    """A real wheel renamed to pkg 1.0 for cp311-cp311-linux_x86_64 (the names fuzz_merge gives
    its inputs): the payload as built, dist-info rewritten, RECORD recomputed."""
    files, extra = {}, ""
    for path, data in members_of(whl).items():
        top = path.split("/")[0]
        if top.endswith(".dist-info"):
            rel = path[len(top) + 1:]
            if rel == "METADATA":
                extra = "".join(line + "\n" for line in data.decode().splitlines()
                                if line.startswith("Requires-Dist:"))
            elif rel not in ("RECORD", "WHEEL"):
                files[f"{DI}/{rel}"] = data
            continue
        files[path] = data
    return zipfile_wheel(files, metadata_extra=extra)


# ---------------------------------------------------------------------------------------------
# Seeds per harness


def wheels_and_parts(real: list[bytes]) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(name -> valid wheel bytes, name -> pair of cu12/cu13 wheels for fuzz_merge)."""
    wheels: dict[str, bytes] = {}
    pairs: dict[str, bytes] = {}
    base = {"pkg/__init__.py": b'"""A wheelmerge test package."""\n', "pkg/util.py": b"def answer():\n    return 42\n"}
    wheels["zipfile_deflated"] = zipfile_wheel(base)
    wheels["zipfile_stored"] = zipfile_wheel(base, compression=zipfile.ZIP_STORED)
    wheels["zipfile_directories"] = zipfile_wheel(base, directories=True)
    wheels["zipfile_executable_data"] = zipfile_wheel(
        dict(base, **{"pkg-1.0.data/scripts/pkg-tool": b"#!python\nprint(1)\n"}),
        executable=("pkg-1.0.data/scripts/pkg-tool",))
    wheels["wheelgen_plain"] = wg.wheel_bytes(base)
    wheels["wheelgen_zip64"] = wg.wheel_bytes(
        base, entries=lambda es: [dataclasses.replace(e, zip64=True) for e in es], zip=dict(zip64_end=True))
    wheels["wheelgen_descriptors"] = wg.wheel_bytes(
        base, entries=lambda es: [dataclasses.replace(e, data_descriptor=True) for e in es])
    wheels["wheelgen_sha512"] = wg.wheel_bytes(base, record=lambda rows: [
        [r[0], wg.record_hash(base[r[0]], "sha512"), r[2]] if r[0] in base else r for r in rows])
    for major in (12, 13):
        wheels[f"native_cu{major}"] = zipfile_wheel(pkg_files(major), metadata_extra=(
            f"Requires-Dist: cuda-bindings~={major}.0\nRequires-Dist: numpy\n"))
    for i, w in enumerate(real):
        wheels[f"real_{i}"] = w

    pairs["identical"] = pair(wheels["zipfile_deflated"], wheels["zipfile_deflated"])
    pairs["stored_deflated"] = pair(wheels["zipfile_stored"], wheels["wheelgen_plain"])
    pairs["native_variants"] = pair(wheels["native_cu12"], wheels["native_cu13"])
    pairs["zip64_descriptors"] = pair(wheels["wheelgen_zip64"], wheels["wheelgen_descriptors"])
    pairs["data_dir"] = pair(wheels["zipfile_executable_data"], wheels["zipfile_executable_data"])
    pairs["variant_py_conflict"] = pair(wg.wheel_bytes(dict(base, **{"pkg/_build.py": b"MAJOR = 12\n"})),
                                        wg.wheel_bytes(dict(base, **{"pkg/_build.py": b"MAJOR = 13\n"})))
    pairs["requires_dist"] = pair(wg.wheel_bytes(base, metadata={"Requires-Dist": ["a", "cuda-bindings~=12.0"]}),
                                  wg.wheel_bytes(base, metadata={"Requires-Dist": ["a", "cuda-bindings~=13.0"]}))
    pairs["sbom"] = pair(wg.wheel_bytes(base, dist_info_files={"sboms/x.json": b'{"cuda": 12}'}),
                         wg.wheel_bytes(base, dist_info_files={"sboms/x.json": b'{"cuda": 13}'}))
    if len(real) >= 2:
        pairs["real_as_pkg"] = pair(as_pkg(real[0]), as_pkg(real[1]))
    return wheels, pairs


def bad_input_pairs() -> dict[str, bytes]:
    """The bad-input corpus of test_bad_inputs.py: each case's (bad, good) wheels, where their
    names are the ones fuzz_merge uses and they are small."""
    try:
        import test_bad_inputs as tb  # noqa: PLC0415 - needs pytest
    except Exception as e:  # noqa: BLE001
        print(f"make_corpus: test_bad_inputs not importable ({e}); its cases are left out", file=sys.stderr)
        return {}
    out = {}
    for c in tb.CASES:
        if c.fast or "bomb" in c.id or c.bad_name != tb.BAD_NAME or c.good_name != tb.GOOD_NAME:
            continue
        if c.bad_label or c.good_label or c.args:
            continue
        try:
            bad, good = c.bad(), c.good()
        except Exception as e:  # noqa: BLE001
            print(f"make_corpus: case {c.id} not built: {e}", file=sys.stderr)
            continue
        out[f"bad_{c.id}"] = pair(bad, good)
    return out


FILENAMES = [
    "pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl",
    "pkg-1.0+cu13-cp311-cp311-linux_x86_64.whl",
    "pkg-1.0-cp311-cp311-linux_x86_64.torch210_cu12.whl",
    "pkg-1.0+x86.64.v3-cp311-cp311-linux_x86_64.whl",
    "cuda_core-0.3.2-1-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.cu12.whl",
    "numpy-2.1.0-cp311-cp311-musllinux_1_2_aarch64.whl",
    "pkg-1.0-py2.py3-none-any.whl",
    "pkg-2!1.0rc1.post2.dev3+local.7-123abc-cp39.cp310-abi3-macosx_11_0_arm64.macosx_10_9_x86_64.whl",
    "Pkg_Name.sub-1.0-cp311-cp311-manylinux1_x86_64.manylinux2010_x86_64.whl",
]
PLATFORM_SETS = [
    "manylinux_2_17_x86_64.manylinux2014_x86_64\n\nmanylinux_2_28_x86_64",
    "manylinux_2_28_x86_64\nmanylinux_2_28_aarch64\n\nmanylinux_2_17_aarch64\nmanylinux_2_34_x86_64",
    "linux_x86_64\n\nmanylinux_2_28_x86_64",
    "musllinux_1_2_x86_64\n\nmusllinux_1_1_x86_64",
    "macosx_11_0_arm64.macosx_10_9_x86_64\n\nmacosx_12_0_arm64.macosx_10_13_x86_64",
    "manylinux1_i686\n\nmanylinux2010_i686\n\nmanylinux_2_5_i686",
    "win_amd64\n\nwin_amd64",
    "any\n\nlinux_x86_64",
]

INIT_SOURCES = [
    b"",
    b'"""Docstring."""\n',
    b'"""Docstring."""\nfrom __future__ import annotations\n\nimport os\n',
    b"# comment\n\n'''doc\nstring'''\nfrom __future__ import (annotations,\n    division)\nfrom __future__ import print_function\nx = 1\n",
    b"r'raw \\' doc'  # trailing comment\nfrom  __future__  import  annotations  \\\n  , generators\n",
    b'\xef\xbb\xbf"""BOM first."""\r\nimport sys\r\n',
    b'"""unterminated\n',
    b"x = 1",
    b'"""doc"""',
    b'"""doc""" + """more\ncontinued"""\nimport os\n',
    b"from __future__ import annotations",
    b'\n\n  \t# indented comment\nf"not a docstring {x}"\n',
    b"b'bytes doc'\nfrom __futures__ import x\n",
]


def tree_texts(names: tuple[str, ...], limit: int) -> dict[str, bytes]:
    """Files of the repository's examples and templates, for text seeds."""
    out = {}
    for base in (ROOT / "examples", ROOT / "templates"):
        for p in sorted(base.rglob("*")):
            if p.is_file() and p.name in names and p.stat().st_size <= limit:
                out[re.sub(r"[^A-Za-z0-9_.-]", "_", str(p.relative_to(ROOT)))] = p.read_bytes()
    return out


def merge_valid_descriptions(real: list[bytes]) -> dict[str, bytes]:
    def describe(files: dict[str, bytes], directives: str = "", executable: tuple[str, ...] = ()) -> bytes:
        out = directives.encode()
        for path, data in files.items():
            out += b">>> " + (b"+x " if path in executable else b"") + path.encode() + b"\n" + data + b"\n"
        return out.rstrip(b"\n") if not files else out[:-1]

    d = {}
    base = {"pkg/__init__.py": b'"""pkg."""\n', "pkg/util.py": b"x = 1\n"}
    d["pure_identical"] = describe(base)
    d["native_variants"] = pair(describe(pkg_files(12)), describe(pkg_files(13)))
    d["variant_glob_fallback"] = pair(
        describe(dict(base, **{"pkg/_build_info.py": b"MAJOR = 12\n"}), "glob: pkg/_build_info.py\nfallback\n"),
        describe(dict(base, **{"pkg/_build_info.py": b"MAJOR = 13\n"})))
    d["requires_dist_extras"] = pair(
        describe(dict(base, **{"$DI/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
                                               b"Provides-Extra: test\nRequires-Dist: cuda-bindings~=12.0\n"
                                               b"Requires-Dist: pytest; extra == \"test\"\n\nLong description.\n"})),
        describe(dict(base, **{"$DI/METADATA": b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
                                               b"Provides-Extra: test\nRequires-Dist: cuda-bindings~=13.0\n"
                                               b"Requires-Dist: pytest; extra == \"test\"\n\nLong description.\n"})))
    d["manylinux_build_tag"] = pair(
        describe(pkg_files(12), "name: pkg-1.0-7-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64\n"),
        describe(pkg_files(13), "name: pkg-1.0-7-cp311-cp311-manylinux_2_28_x86_64\n"))
    d["local_labels"] = pair(describe(pkg_files(12), "name: pkg-1.0+cu12-cp311-cp311-linux_x86_64\n"),
                             describe(pkg_files(13), "name: pkg-1.0+cu13-cp311-cp311-linux_x86_64\n"))
    d["namespace_package"] = pair(
        describe({"cuda/core/__init__.py": b"", "cuda/core/_mod.cpython-311-x86_64-linux-gnu.so": elf(tail=b"12"),
                  "cuda/core/_version.py": b"v = 1\n"}, "name: cuda_core-0.3-cp311-cp311-linux_x86_64\n"),
        describe({"cuda/core/__init__.py": b"", "cuda/core/_mod.cpython-311-x86_64-linux-gnu.so": elf(tail=b"13"),
                  "cuda/core/_version.py": b"v = 1\n"}, "name: cuda_core-0.3-cp311-cp311-linux_x86_64\n"))
    d["data_dir_sbom_exec"] = pair(
        describe(dict(base, **{"pkg-1.0.data/scripts/tool": b"#!python\n", "$DI/sboms/a.json": b"{12}",
                               "$DI/licenses/LICENSE": b"MIT\n"}), executable=("pkg-1.0.data/scripts/tool",)),
        describe(dict(base, **{"pkg-1.0.data/scripts/tool": b"#!python\n", "$DI/sboms/a.json": b"{13}",
                               "$DI/licenses/LICENSE": b"MIT\n"})))
    d["loader_name_taken"] = pair(
        describe(dict(base, **{"pkg/_wheelmerge.py": b"", "pkg/x.so": elf(tail=b"a")})),
        describe(dict(base, **{"pkg/_wheelmerge.py": b"", "pkg/x.so": elf(tail=b"b")})))
    d["no_package_for_variant"] = pair(describe({"top.so": elf(tail=b"a")}), describe({"top.so": elf(tail=b"b")}))
    d["case_collision"] = pair(describe(dict(base, **{"pkg/A.so": elf(tail=b"1"), "pkg/a.cu12.so": b""})),
                               describe(dict(base, **{"pkg/A.so": elf(tail=b"2"), "pkg/a.cu12.so": b""})))
    d["init_unterminated_docstring"] = pair(
        describe({"pkg/__init__.py": b'"""never closed\n', "pkg/m.so": elf(tail=b"1")}),
        describe({"pkg/__init__.py": b'"""never closed\n', "pkg/m.so": elf(tail=b"2")}))
    if len(real) >= 2:
        demo = [members_of(w) for w in real[:2]]
        descs = []
        for files in demo:
            payload = {p: v for p, v in files.items() if ".dist-info/" not in p}
            descs.append(describe(payload, "name: wmdemo-0.1.0-cp311-cp311-linux_x86_64\n"))
        d["wmdemo"] = pair(descs[0], descs[1])
    return d


RECORD_EXTRA = [
    b'pkg/a.py,sha256=AAAA,1\n"pkg/with,comma.py",sha256=BBBB,2\n"pkg/""quoted"".py",,\r\npkg-1.0.dist-info/RECORD,,',
    b'"multi\nline",x,1\n',
    b"a,b\n",
    b"a,b,c,d\n",
    b"\n",
    b'"unterminated,x,1\n',
    b'a"b,c,d\n',
]
REQUIREMENTS = [
    b"numpy",
    b"numpy>=1.21",
    b"cuda-bindings~=12.0",
    b"cuda-python[all]>=12.6,<13; python_version >= '3.9'",
    b"Pkg_Name.sub[Extra-One, extra_two] (>=1.0, !=1.3.*, <2)",
    b"pytest; extra == \"test\"",
    b"requests[security] ==2.31.0 ; python_version < \"3.13\" and sys_platform != 'win32'",
    b"a===arbitrary-string",
    b"b ~= 1.4.5rc1.post2.dev3",
    b"c>=1!2.0+local.7",
    b"pip @ https://github.com/pypa/pip/archive/1.3.1.zip#sha1=da9234ee9982d4bbb3c72346a6de940a148ea686",
    b"name @ file:///tmp/x.whl ; os_name == 'posix'",
    b"name@git+https://example.org/repo.git@v1.0",
    b"x; (python_version < '3.10' or python_version >= '3.12') and platform_machine == 'x86_64'",
    b"x; os.name == 'nt' or (sys.platform == 'darwin' and (platform_machine == 'arm64' or "
    b"platform_machine == 'x86_64'))",
    b"x; ((((extra == 'a'))))",
    b"x; python_implementation == 'CPython' and platform.python_implementation != \"PyPy\"",
    b"x; 'linux' in sys_platform and 'cu12' not in extras",
    b"x; implementation_version >= '3.11' and python_full_version ~= '3.11.0' or platform_release === '6.1'",
    b"x; 'tab\\there' == platform_version and \"it's\" != os_name and '\\x22q\\u00e9' == extra",
    b"x ; extra == \"cu12\" and (extra == 'test' or dependency_groups == 'dev')",
    b"caf\xc3\xa9 ; extra == '\xe2\x82\xac'",
    b"x; python_version >= '3.9' and",
    b"x[; extra == 'a'",
    b"x>=; os_name == 'posix'",
    b"x @ ",
    b"x; (extra == 'a'",
    b"x; extra == 'a')",
    b"1x",
    b"",
]
HEADER_EXTRA = [
    b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\nDescription: first\n  continued\n\tand tabbed\n\nbody\n",
    b"Key:value\r\nOther:  spaced  \r\n\r\nbody with\r\nCRLF",
    b" continuation first\n",
    b"no colon\n",
    b":empty key\n",
    b"\nonly a body",
]


def deflate_streams() -> dict[str, bytes]:
    """Raw deflate data for fuzz_inflate (each behind its step-size byte): zlib at every strategy
    and several levels, stored, empty, truncated, with trailing bytes, and the hand-made blocks
    of tests/integration/hostile/test_bad_inputs.py (an incomplete literal/length code zlib refuses)."""
    text = b"".join(b"def f%d(x):\n    return x * %d + %d\n" % (i, i, i * i) for i in range(400))
    noise = bytes((i * 2654435761 >> 13) & 0xFF for i in range(6000))
    streams: dict[str, bytes] = {}
    for level in (0, 1, 6, 9):
        for sname, strategy in (("default", zlib.Z_DEFAULT_STRATEGY), ("fixed", zlib.Z_FIXED),
                                ("huffman", zlib.Z_HUFFMAN_ONLY), ("rle", zlib.Z_RLE)):
            c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, strategy)
            streams[f"level{level}_{sname}"] = c.compress(text + noise) + c.flush()
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    split = c.compress(text) + c.flush(zlib.Z_FULL_FLUSH) + c.compress(noise) + c.flush()
    streams["full_flush"] = split
    streams["empty"] = b"\x03\x00"
    streams["truncated"] = split[:-7]
    streams["trailing"] = split + b"PK\x03\x04"
    streams["incomplete_code"] = bytes.fromhex(
        "05c001080000008220000000000000000000000000000000000200000000000000000000000000000000"
        "000000000000000000000000000000000000000000000000000000000000800404")
    streams["complete_code"] = bytes.fromhex(
        "05c001040000000010000000000000000001000000000000000000000000000000000000000000008009")
    return {f"{name}_{step}": bytes([step]) + data for name, data in streams.items() for step in (0, 6, 13)}


def compiled_shared_object(source: str) -> bytes:
    """`source` compiled and linked by gcc into a stripped shared object (about 14 KB)."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "s.c").write_text(source)
        subprocess.run(["gcc", "-shared", "-fPIC", "-s", "-pthread", "-o", f"{d}/s.so", f"{d}/s.c"], check=True)
        return (Path(d) / "s.so").read_bytes()


def elf_sections(count: int, extended_count: bool = False, extended_names: bool = False,
                 section0_size: int | None = None) -> bytes:
    """A 64-bit ELF shared object with `count` sections (the null one, `.s` ones, `.shstrtab`
    last) and its section header table at the end; `extended_count` / `extended_names` write the
    gABI's extended numbering (e_shnum 0 with the count in section 0's sh_size, e_shstrndx
    SHN_XINDEX with the index in section 0's sh_link); `section0_size` overrides sh_size."""
    names = b"\0.s\0.shstrtab\0"
    body = bytearray(64) + names
    while len(body) % 8:
        body += b"\0"
    table = len(body)
    headers = [bytearray(64)]
    for i in range(1, count):
        last = i == count - 1
        headers.append(bytearray(struct.pack("<IIQQQQIIQQ", 4 if last else 1, 3 if last else 1, 0, 0,
                                              64 if last else 64, len(names) if last else 0, 0, 0, 1, 0)))
    if extended_count:
        struct.pack_into("<Q", headers[0], 32, count)
    if extended_names:
        struct.pack_into("<I", headers[0], 40, count - 1)
    if section0_size is not None:
        struct.pack_into("<Q", headers[0], 32, section0_size)
    body += b"".join(headers)
    header = struct.pack("<4sBBBBBxxxxxxxHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, 3, 62, 1, 0, 0, table, 0, 64, 56, 0,
                         64, 0 if extended_count else count, 0xFFFF if extended_names else count - 1)
    body[:64] = header
    return bytes(body)


def variant_documents() -> dict[str, bytes]:
    """Variant metadata as wheelmerge writes it, with the other provider kinds, and hostile."""
    schema = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
    nvidia = {"requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
              "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}

    def doc(variants: dict, provider: dict = nvidia, namespace: str = "nvidia") -> bytes:
        return json.dumps({"$schema": schema, "default-priorities": {"namespace": [namespace]},
                           "providers": {namespace: provider}, "variants": variants}, indent=2, sort_keys=True).encode()

    cu12 = {"nvidia": {"cuda_version_lower_bound": ["12"], "sm_arch": ["120_real", "80_virtual"]}}
    cu13 = {"nvidia": {"cuda_version_lower_bound": ["13"]}}
    good = doc({"cu12": cu12})
    d = {
        "wheel_cu12": good,
        "index": doc({"cu12": cu12, "cu13": cu13}),
        "null": doc({"null": {}}),
        "optional": doc({"cu13": cu13}, dict(nvidia, optional=True)),
        "static": doc({"x": {"cpu": {"level": ["v3"], "arch": ["x86_64"]}}},
                      {"static-properties": {"level": ["v3", "v2"], "arch": ["x86_64"]}, "feature-order": ["level", "arch"]},
                      "cpu"),
        "builtin": doc({"x": {"cpu": {"level": ["v3"]}}}, {"builtin": "cpu"}, "cpu"),
        "duplicate_variants": good.replace(b'"variants": {', b'"variants": {"cu12": {}}, "variants": {', 1),
        "duplicate_label": good.replace(b'"variants": {', b'"variants": {"cu12": {}, ', 1),
        "empty_provider": doc({"cu13": cu13}, {}),
        "bad_plugin_api": doc({"cu13": cu13}, dict(nvidia, **{"plugin-api": "not a path!"})),
        "bom": b"\xef\xbb\xbf" + good,
        "unknown_key": good[:-1] + b', "extra": 1}',
    }
    return d


def workflow_options() -> dict[str, bytes]:
    """`ci init` option values for fuzz_workflow: a flags byte, then NUL-separated fields (import
    name, Python versions, CUDA majors, ref, globs...): valid ones and the hostile classes."""
    def options(flags: int, *fields: str) -> bytes:
        return bytes([flags]) + "\0".join(fields).encode()
    return {
        "plain": options(0, "mypkg", "3.10,3.11,3.12,3.13", "12,13", "main"),
        "everything": options(0x1f, "cuda.core", "3.9,3.13t", "12,13", "refs/tags/v1.2.0", "pkg/*.so", "#x.py", "*"),
        "cibuildwheel": options(0x06, "a_b", "3.12", "13", "v0.1.0", "pkg/[ab]?.py"),
        "expression_name": options(0, "pkg${{ secrets.TOKEN }}", "3.12", "12", "main"),
        "expression_glob": options(0, "pkg", "3.12", "12", "main", "a ${{ github.token }}"),
        "newline_python": options(0, "pkg", "3.12\n- 3.13", "12", "main"),
        "quote_ref": options(0, "pkg", "3.12", "12", "ma'in"),
        "space_glob": options(8, "pkg", "3.12", "12", "main", "a b", "c\td"),
    }


def shadow_listings(wheels: dict[str, bytes]) -> dict[str, bytes]:
    """Member lists for fuzz_shadow: the loader's directory, then members; the real listings of
    the seed wheels, and each kind of shadow of the loader and its rules module."""
    out = {}
    for name, whl in wheels.items():
        members = sorted(members_of(whl))
        loaders = [m for m in members if m.endswith("/_wheelmerge.py")]
        out[f"listing_{name}"] = "\n".join([loaders[0].rsplit("/", 1)[0] if loaders else "pkg", *members]).encode()
    shadows = ["pkg/_wheelmerge/__init__.py", "pkg/_wheelmerge.cpython-312-x86_64-linux-gnu.so", "pkg/_wheelmerge.pyc",
               "pkg/_wheelmerge.abi3.so", "pkg/_wheelmerge.pyd", "pkg/__pycache__/_wheelmerge.cpython-312.pyc",
               "pkg/__pycache__/_wheelmerge_rules.cpython-312.pyc", "pkg/_wheelmerge_rules/x.py",
               "x-1.data/purelib/pkg/_wheelmerge_rules.so", "x-1.data/platlib/pkg/_wheelmerge.py",
               "x-1.data/scripts/pkg/_wheelmerge.pyc", "pkg/_wheelmerge_rules.py", "pkg/__init__.py"]
    for i, shadow in enumerate(shadows):
        out[f"shadow_{i}"] = "\n".join(["pkg", "pkg/__init__.py", "pkg/_wheelmerge_rules.py", shadow]).encode()
        out[f"shadow_data_{i}"] = "\n".join(["x-1.data/platlib/pkg", shadow]).encode()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--flags", metavar="HARNESS", help="print the harness's libFuzzer options and exit")
    parser.add_argument("--harnesses", action="store_true", help="print the harness names and exit")
    parser.add_argument("--wmdemo", type=Path, metavar="CACHE_DIR",
                        help="build examples/wmdemo for CUDA 12 and 13 into CACHE_DIR (once) and seed with it")
    parser.add_argument("--wheel", type=Path, action="append", default=[], help="a further real wheel to seed with")
    args = parser.parse_args()
    if args.flags:
        print(" ".join(flags(args.flags)))
        return 0
    if args.harnesses:
        print(" ".join(MAX_LEN))
        return 0
    if args.out is None:
        parser.error("OUT_DIR is required")

    real_paths = build_wmdemo(args.wmdemo) if args.wmdemo else []
    real_paths += args.wheel
    real = [p.read_bytes() for p in real_paths]

    seeds: dict[str, dict[str, bytes]] = {h: {} for h in MAX_LEN}
    wheels, pairs = wheels_and_parts(real)
    seeds["fuzz_zip"].update(wheels)
    seeds["fuzz_zip"]["tiny_zip"] = wg.write_zip([wg.Entry("evil.py", b"print('hidden')\n")])
    seeds["fuzz_zip"]["empty_zip"] = wg.write_zip([])
    seeds["fuzz_merge"].update(pairs)
    bad = bad_input_pairs()
    seeds["fuzz_merge"].update(bad)
    for name, data in bad.items():  # each bad wheel alone, for the zip reader
        seeds["fuzz_zip"][name] = data.split(SEPARATOR)[0]

    # The parts of every wheel: RECORD, WHEEL, METADATA, __init__.py, ELF files.
    for wname, whl in wheels.items():
        for path, data in members_of(whl).items():
            key = f"{wname}_{re.sub(r'[^A-Za-z0-9_.-]', '_', path)}"
            if path.endswith(".dist-info/RECORD"):
                seeds["fuzz_record"][key] = data
            elif path.endswith((".dist-info/WHEEL", ".dist-info/METADATA")):
                seeds["fuzz_headers"][key] = data
            elif path.endswith("__init__.py"):
                seeds["fuzz_loader_inject"][key] = data
            elif data[:4] == b"\x7fELF":
                seeds["fuzz_elf"][key] = b"\x00" + data
                seeds["fuzz_elf"][key + "_chunk7"] = b"\x02" + data
    for i, s in enumerate(RECORD_EXTRA):
        seeds["fuzz_record"][f"extra_{i}"] = s
    for i, s in enumerate(HEADER_EXTRA):
        seeds["fuzz_headers"][f"extra_{i}"] = s
    for i, s in enumerate(INIT_SOURCES):
        seeds["fuzz_loader_inject"][f"init_{i}"] = s
    seeds["fuzz_loader_inject"].update(tree_texts(("__init__.py", "loader.py"), 8192))
    for i, name in enumerate(FILENAMES):
        seeds["fuzz_filename"][f"name_{i}"] = (name + "\n" + PLATFORM_SETS[i % len(PLATFORM_SETS)]).encode()
    for i, sets in enumerate(PLATFORM_SETS):
        seeds["fuzz_filename"][f"platforms_{i}"] = ("\n" + sets).encode()
    for i, (kw, shift) in enumerate([
            (dict(soname="libx.so.1", needed=("liby.so.2", "libc.so.6")), 0),
            (dict(soname="libx.so.1", needed=("liby.so.2",), is64=False), 0),
            (dict(needed=("libc.so.6",)), 0x1000),
            (dict(et_dyn=False, dynamic=False), 0),
            (dict(soname="libz.so", tail=bytes(300)), 0)]):
        for chunk in (0, 1, 3):
            seeds["fuzz_elf"][f"elf_{i}_{chunk}"] = bytes([chunk]) + elf(strtab_vaddr_shift=shift, **kw)
    # A shared object gcc links, with the version needs (.gnu.version_r) the synthetic ones lack.
    versioned = compiled_shared_object("#include <pthread.h>\nstatic void* run(void* a) { return a; }\n"
                                       "int probe(void) { pthread_t t; return pthread_create(&t, 0, run, 0); }\n")
    for chunk in (0, 1, 3):
        seeds["fuzz_elf"][f"gcc_versioned_{chunk}"] = bytes([chunk]) + versioned
    # Section header tables, extended numbering (e_shnum 0, e_shstrndx SHN_XINDEX) included.
    for name, data in {"sections": elf_sections(4), "sections_ext_count": elf_sections(4, True),
                       "sections_ext_names": elf_sections(4, False, True), "sections_ext_both": elf_sections(4, True, True),
                       "sections_ext_many": elf_sections(300, True, True),
                       "sections_ext_zero": elf_sections(4, True, section0_size=0),
                       "sections_ext_absurd": elf_sections(4, True, True, section0_size=1 << 40)}.items():
        for chunk in (0, 1, 3):
            seeds["fuzz_elf"][f"{name}_{chunk}"] = bytes([chunk]) + data
    seeds["fuzz_variant_json"].update(variant_documents())
    seeds["fuzz_workflow"].update(workflow_options())
    seeds["fuzz_shadow"].update(shadow_listings(wheels))
    for i, entries in enumerate(FATBINS):
        for chunk in (0, 1, 3):
            seeds["fuzz_fatbin"][f"fatbin_{i}_{chunk}"] = bytes([chunk]) + wg.fatbin(entries)
    seeds["fuzz_merge_valid"].update(merge_valid_descriptions(real))
    seeds["fuzz_inflate"].update(deflate_streams())
    for i, s in enumerate(REQUIREMENTS):
        seeds["fuzz_requirement"][f"requirement_{i}"] = s
    requires_dist = sorted({line.split(b":", 1)[1].strip()
                            for whl in wheels.values() for path, data in members_of(whl).items()
                            if path.endswith(".dist-info/METADATA")
                            for line in data.splitlines() if line.startswith(b"Requires-Dist:")})
    for i, s in enumerate(requires_dist):
        seeds["fuzz_requirement"][f"requires_dist_{i}"] = s

    kept = left_out = 0
    for harness, items in seeds.items():
        d = args.out / harness
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        for name, data in sorted(items.items()):
            if len(data) > MAX_LEN[harness]:
                left_out += 1
                print(f"make_corpus: {harness}/{name}: {len(data)} bytes, over -max_len={MAX_LEN[harness]}")
                continue
            (d / name).write_bytes(data)
            kept += 1
    print(f"make_corpus: {kept} seeds in {args.out} ({left_out} over their harness's max_len left out)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
