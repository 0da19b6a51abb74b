"""The GPU code wheelmerge reads from CUDA fat binaries, and the sm_arch properties it derives.

`wheelmerge inspect --gpu-code` lists the code of every file's fat binaries (entry headers of
the `.nv_fatbin` section, or of a `.fatbin` file). It is checked against cuobjdump (NVIDIA's
own reader, from the `nvidia-cuda-cuobjdump` wheel pinned in scripts/requirements-test.txt) on
an extension module and a fat binary compiled here by nvcc 13 with SASS, PTX, arch-specific
(`sm_90a`) and family (`sm_100f`) targets, and on every extension module of CuPy's real cu12
and cu13 wheels (built by CuPy's publisher with CUDA 12.9 and 13.x).

The sm_arch values of CuPy's builds then steer uv (--preview-features wheel-variants, with the
NVIDIA provider's override variables): CUDA 13 dropped Volta, so a GPU of compute capability
7.0 with a CUDA 13 driver must get the cu12 build, where the driver alone would pick cu13.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest

import real_wheels
import wheelgen
from conftest import clean_env, run, tool_python
from test_cupy import CUPY, find_python312

CUOBJDUMP = Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13" / "bin" / "cuobjdump"
KERNEL = r"""
__global__ void add(float* a) { a[threadIdx.x] += 1.0f; }
extern "C" void launch(float* a) { add<<<1, 32>>>(a); }
"""
TARGETS = ["-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_80,code=[sm_86,compute_80]",
           "-gencode", "arch=compute_90a,code=sm_90a", "-gencode", "arch=compute_100f,code=sm_100f",
           "-gencode", "arch=compute_120,code=[sm_120,compute_120]"]


def cuobjdump_code(path: Path) -> list[str]:
    """The code entries cuobjdump lists, spelled as wheelmerge does (PTX as compute_NN)."""
    result = subprocess.run([CUOBJDUMP, path], capture_output=True, text=True)
    if result.returncode != 0:
        assert "does not contain device code" in result.stdout + result.stderr, result.stdout + result.stderr
        return []
    found = re.findall(r"^Fatbin (elf|ptx) code:\n=+\narch = sm_(\w+)$", result.stdout, re.MULTILINE)
    assert found, result.stdout[:2000]
    return sorted({("sm_" if kind == "elf" else "compute_") + arch for kind, arch in found})


def inspect(wheelmerge_bin: Path, wheel: Path) -> dict:
    return json.loads(run([wheelmerge_bin, "inspect", "--gpu-code", "--json", wheel], env=clean_env()).stdout)


def nvcc() -> str:
    found = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    assert Path(found).exists(), "nvcc of the CUDA 13 toolkit (this machine's) is needed"
    return found


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("nvcc")
    (work / "k.cu").write_text(KERNEL)
    run([nvcc(), "-shared", "-Xcompiler", "-fPIC", "-o", work / "k.so", work / "k.cu", *TARGETS])
    run([nvcc(), "-fatbin", "-o", work / "k.fatbin", work / "k.cu", *TARGETS])
    return {"so": work / "k.so", "fatbin": work / "k.fatbin"}


def test_cuobjdump_is_the_pinned_one() -> None:
    assert CUOBJDUMP.exists(), f"{CUOBJDUMP}: install scripts/requirements-test.txt"


def test_nvcc_output_reads_as_cuobjdump_reads_it(wheelmerge_bin: Path, compiled: dict[str, Path], tmp_path: Path) -> None:
    files = {"pkg/_k.cpython-311-x86_64-linux-gnu.so": compiled["so"].read_bytes(),
             "pkg/kernels/k.fatbin": compiled["fatbin"].read_bytes(),
             "pkg/__init__.py": b"", "pkg/not_code.fatbin": b"no fat binary here"}
    wheel = wheelgen.build_wheel(tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl", files)
    report = inspect(wheelmerge_bin, wheel)
    code = {f["path"]: sorted(f.get("gpu_code", [])) for f in report["files"]}
    expected = ["compute_120", "compute_80", "sm_100f", "sm_120", "sm_75", "sm_86", "sm_90a"]
    assert cuobjdump_code(compiled["so"]) == expected
    assert cuobjdump_code(compiled["fatbin"]) == expected
    assert code["pkg/_k.cpython-311-x86_64-linux-gnu.so"] == expected
    assert code["pkg/kernels/k.fatbin"] == expected
    assert code["pkg/not_code.fatbin"] == [] and code["pkg/__init__.py"] == []
    # sm_90a runs on 9.0 alone, which no sm_arch value says: major 9 has none. PTX for 8.0
    # would also run on majors 9 and 11, which the provider does not match.
    assert report["sm_arch"] == {"": ["120_real", "100_real", "80_virtual", "75_real"]}
    assert any("compute_80" in note and "major 9, 11" in note for note in report["sm_arch_notes"])


def test_a_truncated_fat_binary_is_unreadable_and_gives_no_sm_arch(wheelmerge_bin: Path, compiled: dict[str, Path],
                                                                    tmp_path: Path) -> None:
    data = compiled["fatbin"].read_bytes()
    wheel = wheelgen.build_wheel(tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl",
                                 {"pkg/k.fatbin": data[: len(data) // 2], "pkg/__init__.py": b""})
    report = inspect(wheelmerge_bin, wheel)
    entry = next(f for f in report["files"] if f["path"] == "pkg/k.fatbin")
    assert "fat binary of" in entry["gpu_code_unreadable"]
    assert report["sm_arch"] == {"": []}
    assert any("cannot read the GPU code of pkg/k.fatbin" in note for note in report["sm_arch_notes"])


def assert_reads_as_cuobjdump(wheelmerge_bin: Path, wheel: Path, tmp_path: Path) -> dict:
    """Every shared library of `wheel` (`.so`, `.so.N`) holds the code entries cuobjdump finds in
    it, no more and no fewer, by inspect --gpu-code; returns the inspect report."""
    report = inspect(wheelmerge_bin, wheel)
    ours = {f["path"]: sorted(f.get("gpu_code", [])) for f in report["files"]}
    with_code = 0
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if not re.search(r"\.so(\.[0-9]+)*$", name):
                continue
            target = tmp_path / "member.so"
            with z.open(name) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            theirs = cuobjdump_code(target)
            assert ours[name] == theirs, name
            with_code += bool(theirs)
    report["with_code"] = with_code
    return report


@pytest.mark.parametrize("label", ["cu12", "cu13"])
def test_cupy_extension_modules_read_as_cuobjdump_reads_them(wheelmerge_bin: Path, label: str, tmp_path: Path) -> None:
    report = assert_reads_as_cuobjdump(wheelmerge_bin, real_wheels.fetch(CUPY[label]), tmp_path)
    assert report["with_code"] >= 3  # cub, thrust, the random generator API


def test_torch_libraries_read_as_cuobjdump_reads_them(wheelmerge_bin: Path, tmp_path: Path) -> None:
    """torch 2.15's CUDA 13 build: libtorch_cuda.so (520 MB, 2,981 code entries, with sm_90a,
    sm_100a, sm_103f, sm_120a and sm_121a beside the plain architectures), libtorch_cuda_linalg.so
    and libtorch_nvshmem.so. Its sm_arch is what all three have SASS for: not 8.9, which
    libtorch_cuda.so alone has, and none of the arch-specific or family code."""
    torch = next(w for w in real_wheels.WHEELS if w.name == "torch")
    report = assert_reads_as_cuobjdump(wheelmerge_bin, real_wheels.fetch(torch), tmp_path)
    assert report["with_code"] == 3
    code = {f["path"]: f["gpu_code"] for f in report["files"] if f.get("gpu_code")}
    assert {"sm_90a", "sm_100a", "sm_103f", "sm_120a", "sm_121a", "sm_89"} <= set(code["torch/lib/libtorch_cuda.so"])
    assert report["sm_arch"] == {"": ["120_real", "100_real", "90_real", "80_real", "75_real"]}


@pytest.fixture(scope="module")
def cupy_variants(wheelmerge_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("cupy-variants")
    summary = json.loads(run([wheelmerge_bin, "variants", "--name", "cupy", "--json", real_wheels.fetch(CUPY["cu12"]),
                              real_wheels.fetch(CUPY["cu13"]), "-o", out], env=clean_env()).stdout)
    return out, summary


def test_cupy_builds_get_the_architectures_they_have_code_for(cupy_variants) -> None:
    out, summary = cupy_variants
    # cu12: SASS from sm_50 to sm_120; cu13: from sm_75 (CUDA 13 dropped Maxwell to Volta).
    assert summary["sm_arch"]["cu12"] == ["120_real", "100_real", "90_real", "80_real", "70_real", "60_real", "50_real"]
    assert summary["sm_arch"]["cu13"] == ["120_real", "100_real", "90_real", "80_real", "75_real"]
    index = json.loads((out / "cupy-14.2.0-variants.json").read_text())
    for label in ("cu12", "cu13"):
        assert index["variants"][label]["nvidia"]["sm_arch"] == summary["sm_arch"][label]


def test_no_sm_arch_gives_the_driver_bound_alone(wheelmerge_bin: Path, tmp_path: Path) -> None:
    summary = json.loads(run([wheelmerge_bin, "variants", "--name", "cupy", "--no-sm-arch", "--json",
                              real_wheels.fetch(CUPY["cu12"]), real_wheels.fetch(CUPY["cu13"]), "-o", tmp_path],
                             env=clean_env()).stdout)
    assert summary["sm_arch"] == {"cu12": [], "cu13": []}
    index = json.loads((tmp_path / "cupy-14.2.0-variants.json").read_text())
    assert index["variants"] == {label: {"nvidia": {"cuda_version_lower_bound": [label[2:]]}} for label in ("cu12", "cu13")}


def uv_selects(variants_dir: Path, python: Path, driver: str, sm: str) -> str:
    """The file uv picks for `cupy` (its resolver's debug line), or its error."""
    result = run([tool_python(), "-m", "uv", "pip", "install", "--python", python, "--preview-features", "wheel-variants",
                  "--no-index", "--find-links", variants_dir, "--no-deps", "--dry-run", "-v", "cupy"],
                 env=clean_env({"NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": driver,
                                "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": sm}), check=False)
    found = re.search(r"Selecting: cupy==14\.2\.0 \[compatible\] \((\S+\.whl)\)", result.stderr + result.stdout)
    if found:
        return found[1].rsplit("-", 1)[1][: -len(".whl")]
    assert "only unsupported wheel variants" in result.stderr, result.stderr[-3000:]
    return "none"


def test_verify_refuses_sm_arch_the_gpu_code_does_not_back(wheelmerge_bin: Path, cupy_variants,
                                                           tmp_path: Path) -> None:
    """CuPy's cu13 variant wheel as `variants` wrote it verifies; with 70_real added to its
    sm_arch (CUDA 13 has no Volta code: cuobjdump lists no sm_70 in it), uv would install it on a
    7.0 GPU, and verify refuses it, naming the value and what the code backs."""
    from test_variants import rewritten

    out, summary = cupy_variants
    source = next(out.glob("cupy-*-cu13.whl"))
    run([wheelmerge_bin, "verify", source], env=clean_env())
    with zipfile.ZipFile(source) as z:
        dist_info = next(n for n in z.namelist() if n.endswith(".dist-info/variant.json"))
        metadata = json.loads(z.read(dist_info))
        kernel = next(n for n in z.namelist() if n.startswith("cupy/cuda/cub.") and n.endswith(".so"))
        (tmp_path / "k.so").write_bytes(z.read(kernel))
    assert not any(c.endswith("_70") for c in cuobjdump_code(tmp_path / "k.so"))
    claimed = metadata["variants"]["cu13"]["nvidia"]["sm_arch"]
    assert claimed == summary["sm_arch"]["cu13"]
    metadata["variants"]["cu13"]["nvidia"]["sm_arch"] = [*claimed, "70_real"]
    (tmp_path / "forged").mkdir()
    forged = rewritten(source, tmp_path / "forged" / source.name, dist_info, json.dumps(metadata).encode())
    index = json.loads((out / "cupy-14.2.0-variants.json").read_text())  # what uv reads first
    index["variants"] = {"cu13": metadata["variants"]["cu13"]}
    (tmp_path / "forged" / "cupy-14.2.0-variants.json").write_text(json.dumps(index))
    python312, _ = find_python312()
    venv = tmp_path / "venv"
    run([python312, "-m", "venv", "--without-pip", venv])
    assert uv_selects(forged.parent, venv / "bin" / "python", "13.0", "7.0") == "cu13"  # what the claim does
    result = run([wheelmerge_bin, "verify", forged], env=clean_env(), check=False)
    assert result.returncode == 3, result.stderr
    assert f"{dist_info}: nvidia :: sm_arch 70_real promises GPUs 7.0 and later of major 7" in result.stderr, result.stderr
    assert f"expected values the GPU code backs ({' '.join(claimed)})" in result.stderr, result.stderr


@pytest.mark.parametrize("driver, sm, expected", [
    ("13.0", "9.0", "cu13"),   # both fit: the higher driver bound wins
    ("13.0", "7.0", "cu12"),   # Volta: only cu12 has code for it
    ("12.8", "9.0", "cu12"),   # a CUDA 12 driver
    ("13.0", "11.0", "none"),  # no build has SASS for 11.x, and PTX is matched only on its own major
    ("12.8", "3.5", "none"),   # below every build
])
def test_uv_picks_the_build_with_code_for_the_gpu(cupy_variants, tmp_path: Path, driver: str, sm: str,
                                                 expected: str) -> None:
    python312, _ = find_python312()
    venv = tmp_path / "venv"
    run([python312, "-m", "venv", "--without-pip", venv])
    assert uv_selects(cupy_variants[0], venv / "bin" / "python", driver, sm) == expected


# --- ELF files whose sections are unusual or hostile ----------------------------------------------

def elf_with_sections(sections: list[tuple[str, int, bytes]], *, gap: int = 0, shoff: int | None = None,
                      shnum: int | None = None, override: dict[str, tuple[int, int]] | None = None) -> bytes:
    """A 64-bit little-endian ELF shared object holding `sections` (name, type, content), then
    `.shstrtab`, then `gap` zero bytes, then the section header table. `override` gives a
    section (by name) another (offset, size) in its header; `shoff` and `shnum` replace the ELF
    header's fields."""
    names = b"\0"
    offsets: list[int] = []
    body = bytearray(b"\0" * 64)
    named = [*sections, (".shstrtab", 3, b"")]
    name_at = []
    for name, _, _ in named:
        name_at.append(len(names))
        names += name.encode() + b"\0"
    named[-1] = (".shstrtab", 3, names)
    for _, _, data in named:
        while len(body) % 8:
            body += b"\0"
        offsets.append(len(body))
        body += data
    body += b"\0" * gap
    while len(body) % 8:
        body += b"\0"
    table = len(body)
    headers = [bytes(64)]
    for (name, kind, data), at, offset in zip(named, name_at, offsets):
        off, size = (override or {}).get(name, (offset, len(data)))
        headers.append(struct.pack("<IIQQQQIIQQ", at, kind, 2 if kind == 1 else 0, 0, off, size, 0, 0, 8, 0))
    body += b"".join(headers)
    count = len(headers)
    header = struct.pack("<4sBBBBBxxxxxxxHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, 3, 62, 1, 0, 0,
                         table if shoff is None else shoff, 0, 64, 56, 0, 64, count if shnum is None else shnum, count - 1)
    body[:64] = header
    return bytes(body)


def inspect_member(wheelmerge_bin: Path, tmp_path: Path, data: bytes) -> dict:
    wheel = wheelgen.build_wheel(tmp_path / "pkg-1.0-cp311-cp311-linux_x86_64.whl",
                                 {"pkg/_k.cpython-311-x86_64-linux-gnu.so": data, "pkg/__init__.py": b""})
    report = inspect(wheelmerge_bin, wheel)
    return next(f for f in report["files"] if f["path"].endswith(".so")) | {"sm_arch": report["sm_arch"]}


EXPECTED = ["compute_120", "compute_80", "sm_100f", "sm_120", "sm_75", "sm_86", "sm_90a"]


def test_a_fat_binary_section_is_read_wherever_the_section_names_lie(wheelmerge_bin: Path, compiled: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    fatbin = compiled["fatbin"].read_bytes()
    near = elf_with_sections([(".text", 1, b"\x90" * 100), (".nv_fatbin", 1, fatbin)])
    assert sorted(inspect_member(wheelmerge_bin, tmp_path, near)["gpu_code"]) == EXPECTED
    # 300 KiB between the names and the section table: past what the first pass keeps, so the
    # names are fetched by a second pass and the fat binary by a third.
    far = elf_with_sections([(".nv_fatbin", 1, fatbin)], gap=300 << 10)
    assert sorted(inspect_member(wheelmerge_bin, tmp_path, far)["gpu_code"]) == EXPECTED
    # Named otherwise, or not PROGBITS: not a fat binary section.
    other = elf_with_sections([(".nv_fatbin2", 1, fatbin), (".rodata", 1, fatbin)])
    assert "gpu_code" not in inspect_member(wheelmerge_bin, tmp_path, other)
    nobits = elf_with_sections([(".nv_fatbin", 8, b"")], override={".nv_fatbin": (64, 1 << 40)})
    assert "gpu_code" not in inspect_member(wheelmerge_bin, tmp_path, nobits)


@pytest.mark.parametrize("case, why", [
    ("section past the end", "lies outside the file"),
    ("overlapping sections", "overlap"),
    ("truncated fat binary", "fat binary of"),
    ("garbage fat binary", "no fat binary header"),
])
def test_unreadable_fat_binary_sections_say_why_and_give_no_sm_arch(wheelmerge_bin: Path, compiled: dict[str, Path],
                                                                      tmp_path: Path, case: str, why: str) -> None:
    fatbin = compiled["fatbin"].read_bytes()
    data = {
        "section past the end": lambda: elf_with_sections([(".nv_fatbin", 1, fatbin)],
                                                          override={".nv_fatbin": (64, 1 << 62)}),
        "overlapping sections": lambda: elf_with_sections([(".nv_fatbin", 1, fatbin), (".nv_fatbin", 1, fatbin)],
                                                          override={".nv_fatbin": (64, len(fatbin))}),
        "truncated fat binary": lambda: elf_with_sections([(".nv_fatbin", 1, fatbin[: len(fatbin) // 2])]),
        "garbage fat binary": lambda: elf_with_sections([(".nv_fatbin", 1, b"\x01" * 4096)]),
    }[case]()
    member = inspect_member(wheelmerge_bin, tmp_path, data)
    assert why in member["gpu_code_unreadable"], member
    assert member["sm_arch"] == {"": []}


def test_elf_files_without_sections_have_no_gpu_code(wheelmerge_bin: Path, compiled: dict[str, Path],
                                                     tmp_path: Path) -> None:
    """e_shnum 0 with section 0's sh_size 0: no sections (the gABI), as readelf says."""
    fatbin = compiled["fatbin"].read_bytes()
    member = inspect_member(wheelmerge_bin, tmp_path, elf_with_sections([(".nv_fatbin", 1, fatbin)], shnum=0))
    assert "gpu_code" not in member and "gpu_code_unreadable" not in member, member


@pytest.mark.parametrize("case, why", [
    ("table past the end", "lies past its end"),
    ("65535 sections past the end", "lies past its end"),
    ("absurd extended count", "more than the 262144 read"),
])
def test_elf_files_whose_section_table_cannot_be_read_give_no_sm_arch(wheelmerge_bin: Path, compiled: dict[str, Path],
                                                                      tmp_path: Path, case: str, why: str) -> None:
    """A table that cannot be read may hide a fat binary: the file is unreadable, and its build
    gets no sm_arch values rather than those of its other files."""
    fatbin = compiled["fatbin"].read_bytes()
    data = {
        "table past the end": lambda: elf_with_sections([(".nv_fatbin", 1, fatbin)], shoff=1 << 40),
        "65535 sections past the end": lambda: elf_with_sections([(".nv_fatbin", 1, fatbin)], shnum=65535),
        "absurd extended count": lambda: extended_numbering(elf_with_sections([(".nv_fatbin", 1, fatbin)]), True,
                                                            count=1 << 40),
    }[case]()
    member = inspect_member(wheelmerge_bin, tmp_path, data)
    assert "gpu_code" not in member and why in member["gpu_code_unreadable"], member
    assert member["sm_arch"] == {"": []}


def extended_numbering(data: bytes, names: bool, count: int | None = None) -> bytes:
    """`data` (a 64-bit little-endian ELF file) with the gABI's extended section numbering:
    e_shnum 0 and the count in section 0's sh_size; with `names`, e_shstrndx SHN_XINDEX and
    the names' index in section 0's sh_link."""
    out = bytearray(data)
    shoff, = struct.unpack_from("<Q", out, 40)
    shnum, shstrndx = struct.unpack_from("<HH", out, 60)
    assert shoff and shnum and struct.unpack_from("<QI", out, shoff + 32) == (0, 0)
    struct.pack_into("<Q", out, shoff + 32, shnum if count is None else count)
    struct.pack_into("<H", out, 60, 0)
    if names:
        struct.pack_into("<I", out, shoff + 40, shstrndx)
        struct.pack_into("<H", out, 62, 0xFFFF)
    return bytes(out)


def readelf_sections(path: Path) -> list[str]:
    """readelf's count line and section rows, less section 0's (which carries the numbers)."""
    out = run(["readelf", "-S", "-W", path]).stdout
    return [line for line in out.splitlines()
            if line.startswith("There are") or (line.lstrip().startswith("[") and "[ 0]" not in line)]


@pytest.mark.parametrize("names", [False, True], ids=["count", "count and names"])
def test_extended_section_numbering_reads_as_readelf_and_cuobjdump_read_it(wheelmerge_bin: Path,
                                                                           compiled: dict[str, Path],
                                                                           tmp_path: Path, names: bool) -> None:
    """nvcc's shared library rewritten to extended numbering: readelf lists the same sections,
    cuobjdump the same code, and wheelmerge the same code and sm_arch values as for the original."""
    original = compiled["so"]
    extended = tmp_path / "k-extended.so"
    extended.write_bytes(extended_numbering(original.read_bytes(), names))
    assert struct.unpack_from("<H", extended.read_bytes(), 60) == (0,)
    assert readelf_sections(extended) == readelf_sections(original)
    assert any(".nv_fatbin" in line for line in readelf_sections(extended))
    assert cuobjdump_code(extended) == cuobjdump_code(original) == EXPECTED
    list_elf = [run([CUOBJDUMP, "--list-elf", path]).stdout.replace(path.stem + ".", "k.") for path in (original, extended)]
    assert list_elf[0] == list_elf[1] and "sm_75" in list_elf[0]
    for sub in ("original", "extended"):
        (tmp_path / sub).mkdir()
    theirs = inspect_member(wheelmerge_bin, tmp_path / "original", original.read_bytes())
    ours = inspect_member(wheelmerge_bin, tmp_path / "extended", extended.read_bytes())
    assert sorted(ours["gpu_code"]) == sorted(theirs["gpu_code"]) == EXPECTED
    assert ours["sm_arch"] == theirs["sm_arch"] == {"": ["120_real", "100_real", "80_virtual", "75_real"]}


# --- the loader's report: the selected build's GPU code against the visible GPUs ---------------

REPORT_PROBE = """
import json, os
os.environ["WHEELMERGE_VARIANT"] = "cu13"
from pkg import _wheelmerge as loader
import pkg._wheelmerge_rules as rules
rules._bind(vars(loader))
gpus = [(0, "sm_70 GPU", 70), (1, "sm_75 GPU", 75), (2, "sm_89 GPU", 89), (3, "sm_90 GPU", 90),
        (4, "sm_103 GPU", 103), (5, "sm_121 GPU", 121)]
print(json.dumps([list(w) for w in rules._kernel_warnings(gpus)]))
"""
MODULE = f"pkg/_k{sysconfig.get_config_var('EXT_SUFFIX')}"


@pytest.fixture(scope="module")
def merged_kernels(wheelmerge_bin: Path, compiled: dict[str, Path], tmp_path_factory) -> Path:
    """cu12 and cu13 builds of a package whose extension module is nvcc's library (the cu12
    one with eight bytes more at its end, which readers of its sections do not see), merged."""
    work = tmp_path_factory.mktemp("kernels")
    wheels = []
    for label, tail in (("cu12", b"\0" * 8), ("cu13", b"")):
        files = {MODULE: compiled["so"].read_bytes() + tail, "pkg/__init__.py": b""}
        (work / label).mkdir()
        wheel = wheelgen.build_wheel(work / label / "pkg-1.0-cp312-cp312-linux_x86_64.whl", files,
                                     tags="cp312-cp312-linux_x86_64")
        wheels.append(f"{wheel}={label}")
    run([wheelmerge_bin, "merge", *wheels, "-o", work / "out"], env=clean_env())
    return next((work / "out").glob("*.whl"))


def loader_of(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read("pkg/_wheelmerge.py").decode()


def test_the_loader_manifest_carries_each_builds_gpu_code_as_cuobjdump_reads_it(merged_kernels: Path,
                                                                               compiled: dict[str, Path]) -> None:
    from conftest import loader_manifest

    code = loader_manifest(loader_of(merged_kernels))["gpu_code"]
    stored = {label: MODULE.replace("pkg/_k.", f"_k.{label}.") for label in ("cu12", "cu13")}
    assert {label: list(files) for label, files in code.items()} == {label: [stored[label]] for label in stored}
    for label in stored:
        listed = code[label][stored[label]]
        assert sorted(listed) == cuobjdump_code(compiled["so"])
        # In wheelmerge's order of GPU code: SASS before PTX, then by architecture.
        assert listed == ["sm_75", "sm_86", "sm_90a", "sm_100f", "sm_120", "compute_80", "compute_120"]


def test_the_report_compares_the_visible_gpus_with_the_selected_builds_code(merged_kernels: Path, tmp_path: Path) -> None:
    """`python -m pkg._wheelmerge` warns for each visible GPU that a file of the selected build
    has no code for, from the code the manifest carries (the GPUs are given here, as NVML would
    list them: this machine has none)."""
    from loader_fixtures import run_python

    site = tmp_path / "site"
    with zipfile.ZipFile(merged_kernels) as archive:
        archive.extractall(site)
    result = run_python(Path(tool_python()), site, "-c", REPORT_PROBE)
    assert result.returncode == 0, result.stderr
    have = "compute_120, compute_80, sm_100f, sm_120, sm_75, sm_86, sm_90a"
    # sm_75 runs on 7.5, sm_86 on 8.9, sm_90a on 9.0 alone, sm_100f on 10.3, compute_120 on 12.1.
    assert json.loads(result.stdout) == [["warning: GPU 0", f"sm_70 GPU (sm_70): {Path(MODULE).name.replace('_k.', '_k.cu13.')}"
                                          f" of the cu13 build has code for {have} only; its kernels would fail"
                                          " with 'no kernel image is available'"]]


def test_verify_refuses_a_manifest_whose_gpu_code_is_not_the_files(wheelmerge_bin: Path, merged_kernels: Path,
                                                                    tmp_path: Path) -> None:
    """A loader rendered for a manifest that claims other GPU code than a file holds (here: no
    sm_75 in the cu13 build) is what this wheelmerge writes for that manifest, and still refused."""
    from conftest import loader_manifest
    from loader_fixtures import render_loader

    manifest = loader_manifest(loader_of(merged_kernels))
    stored = MODULE.replace("pkg/_k.", "_k.cu13.")
    manifest["gpu_code"]["cu13"][stored].remove("sm_75")
    (tmp_path / "pkg").mkdir()
    render_loader(manifest, tmp_path / "pkg")
    with zipfile.ZipFile(merged_kernels) as archive:
        files = {name: archive.read(name) for name in archive.namelist()
                 if ".dist-info/" not in name}
    files["pkg/_wheelmerge.py"] = (tmp_path / "pkg" / "_wheelmerge.py").read_bytes()
    assert files["pkg/_wheelmerge.py"] != loader_of(merged_kernels).encode()
    tampered = wheelgen.build_wheel(tmp_path / merged_kernels.name, files, tags="cp312-cp312-linux_x86_64")
    assert subprocess.run([wheelmerge_bin, "verify", merged_kernels], capture_output=True).returncode == 0
    result = subprocess.run([wheelmerge_bin, "verify", tampered], capture_output=True, text=True)
    assert result.returncode != 0
    assert f"manifest gpu_code of cu13 is not the GPU code of {stored}" in result.stderr, result.stderr
