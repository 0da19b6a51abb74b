"""PE images in Windows wheels and Mach-O files in macOS wheels are held to the machines of the
wheel's platform tags, as ELF files are to Linux tags (docs/WHEEL_RULES.md, "Builds"), over
real files read back with file(1):

* the extension modules of cuda-core 1.2.2's real win_arm64 wheel (ARM64 images) in a wheel
  tagged win_amd64 are refused by `verify` and `merge`, naming the machines; in their own wheel,
  and an x86-64 DLL built with the pinned zig in a win_amd64 wheel, they are accepted;
* an arm64 dylib built with zig in a macosx_10_15_x86_64 wheel is refused; an x86_64 one, a
  universal ("fat") file holding both (made here as lipo makes it) in either wheel, and each
  thin file in a universal2 wheel, are accepted;
* a Java class file, whose magic is the universal Mach-O one, is not taken for one;
* the DLLs a PE image imports read as pefile reads them (cuda-core's real Windows wheels) and as
  objdump does (a DLL zig links against `cudart64_12.dll`), which a cu13 build may not import.
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest

import wheelgen as wg
from conftest import ROOT, run
from real_wheels import WHEELS, fetch_all

ARM64_WHEEL = "cuda_core-1.2.2-cp312-cp312-win_arm64.whl"
AMD64_WHEEL = "cuda_core-1.2.2-cp312-cp312-win_amd64.whl"


@pytest.fixture(scope="module")
def zig() -> Path:
    """The pinned zig toolchain's bin/ (scripts/static/zig.sh), with wrappers for both macOS targets."""
    for target in ("aarch64-macos.11.0", "x86_64-macos.10.15"):
        bin_dir = Path(run(["bash", ROOT / "scripts" / "static" / "zig.sh", target], timeout=1800).stdout.strip())
    return bin_dir


def built(zig: Path, target: str, out: Path) -> bytes:
    src = out.with_suffix(".c")
    src.write_text("int wm_probe(void) { return 42; }\n")
    run([zig / f"{target}-cc", "-shared", "-o", out, src], timeout=600)
    return out.read_bytes()


def described(tmp_path: Path, data: bytes) -> str:
    (tmp_path / "probe").write_bytes(data)
    return run(["file", "-b", tmp_path / "probe"]).stdout


def one_file_wheel(directory: Path, member: str, data: bytes, tags: str, label: str = "cu13") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return wg.build_wheel(directory / wg.wheel_filename("pkg", "1.0", tags, label=label),
                          {"pkg/__init__.py": b"", member: data}, name="pkg", version="1.0", tags=tags)


def verify(wheelmerge_bin: Path, wheel: Path):
    return run([wheelmerge_bin, "verify", wheel], check=False)


def assert_refused_by_verify_and_merge(wheelmerge_bin: Path, tmp_path: Path, member: str, data: bytes, tags: str,
                                       expected: str) -> None:
    """Two builds holding the file are refused by `verify` and `merge` with `expected` (after the
    member's name), and nothing is written."""
    wheels = [one_file_wheel(tmp_path / label, member, data, tags, label) for label in ("cu12", "cu13")]
    expected = f"{member}: a native file for another machine than the wheel's platform tags: {expected}"
    result = verify(wheelmerge_bin, wheels[0])
    assert result.returncode == 3 and f"error: {wheels[0].name}: {expected}\n" in result.stderr, result.stderr
    merged = run([wheelmerge_bin, "merge", *wheels, "-o", tmp_path / "out"], check=False)
    assert merged.returncode == 3 and merged.stderr.count(expected) == 2, merged.stderr
    assert not (tmp_path / "out").exists()


def test_an_arm64_windows_extension_in_an_amd64_wheel_is_refused(wheelmerge_bin: Path, tmp_path: Path) -> None:
    files = fetch_all([w for w in WHEELS if w.filename in (ARM64_WHEEL, AMD64_WHEEL)])
    with zipfile.ZipFile(files[ARM64_WHEEL]) as z:
        member = "cuda/core/_context.cp312-win_arm64.pyd"
        arm64 = z.read(member)
    assert "Aarch64, for MS Windows" in described(tmp_path, arm64)
    assert_refused_by_verify_and_merge(wheelmerge_bin, tmp_path, member, arm64, "cp312-cp312-win_amd64",
                                       "expected x64 (PE machine 0x8664), as win_amd64 says, found ARM64 (PE machine "
                                       "0xaa64)")
    # The real wheels themselves, and the file in a wheel of its own machine, are accepted.
    for real in (ARM64_WHEEL, AMD64_WHEEL):
        assert verify(wheelmerge_bin, files[real]).returncode == 0
    assert verify(wheelmerge_bin, one_file_wheel(tmp_path / "own", member, arm64, "cp312-cp312-win_arm64")).returncode == 0


def test_an_x86_64_windows_dll_built_with_zig_fits_win_amd64_only(wheelmerge_bin: Path, zig: Path,
                                                                   tmp_path: Path) -> None:
    src = tmp_path / "p.c"
    src.write_text("int wm_probe(void) { return 42; }\n")
    run([zig.parent / "ziglang" / "zig", "cc", "-target", "x86_64-windows-gnu", "-shared", "-o", tmp_path / "p.dll",
         src], timeout=600)
    dll = (tmp_path / "p.dll").read_bytes()
    assert "x86-64, for MS Windows" in described(tmp_path, dll)
    assert verify(wheelmerge_bin, one_file_wheel(tmp_path / "a", "pkg/p.dll", dll, "cp312-cp312-win_amd64")).returncode == 0
    refused = verify(wheelmerge_bin, one_file_wheel(tmp_path / "b", "pkg/p.dll", dll, "cp312-cp312-win_arm64"))
    assert refused.returncode == 3, refused.stderr
    assert ("expected ARM64 (PE machine 0xaa64) or ARM64EC (PE machine 0xa641), as win_arm64 says, found x64 (PE "
            "machine 0x8664)") in refused.stderr, refused.stderr


def objdump_imports(path: Path) -> list[str]:
    """The DLLs binutils' objdump lists a PE image as importing, in its order."""
    return [line.split(":", 1)[1].strip() for line in run(["objdump", "-p", path]).stdout.splitlines()
            if line.strip().startswith("DLL Name:")]


def inspected_imports(wheelmerge_bin: Path, wheel: Path) -> dict[str, list[str]]:
    report = json.loads(run([wheelmerge_bin, "inspect", "--json", wheel]).stdout)
    assert not any("imports_unreadable" in f for f in report["files"]), report["files"]
    return {f["path"]: f["imports"] for f in report["files"] if "imports" in f}


def pefile_imports(data: bytes) -> list[str]:
    """The DLLs pefile lists a PE image as importing, in its order, then those it delay-loads."""
    import pefile

    image = pefile.PE(data=data, fast_load=True)
    image.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
                                              pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"]])
    return [entry.dll.decode() for entry in [*getattr(image, "DIRECTORY_ENTRY_IMPORT", []),
                                              *getattr(image, "DIRECTORY_ENTRY_DELAY_IMPORT", [])]]


@pytest.mark.parametrize("wheel_name", [AMD64_WHEEL, ARM64_WHEEL])
def test_pe_imports_read_as_pefile_reads_them(wheelmerge_bin: Path, wheel_name: str) -> None:
    """Every extension module of cuda-core's real Windows wheels (MSVC's linker, x64 and ARM64)
    imports the DLLs pefile lists, in its order."""
    wheel = fetch_all([w for w in WHEELS if w.filename == wheel_name])[wheel_name]
    ours = inspected_imports(wheelmerge_bin, wheel)
    assert len(ours) > 10, ours
    with zipfile.ZipFile(wheel) as z:
        for member, imports in ours.items():
            assert imports == pefile_imports(z.read(member)), member
            assert not member.endswith(".pyd") or "python312.dll" in imports, (member, imports)


def cuda_dll(zig: Path, tmp_path: Path, imported: str) -> bytes:
    """An x86-64 DLL built with the pinned zig that imports `imported` (its import library made by
    zig's dlltool from a .def file, as for a toolkit's cudart.lib)."""
    zig_binary = zig.parent / "ziglang" / "zig"
    (tmp_path / "cuda.def").write_text(f"LIBRARY {imported}\nEXPORTS\n  cudaGetDeviceCount\n")
    run([zig_binary, "dlltool", "-d", tmp_path / "cuda.def", "-l", tmp_path / "cuda.lib", "-m", "i386:x86-64"])
    (tmp_path / "k.c").write_text("int cudaGetDeviceCount(int*);\n"
                                  "__declspec(dllexport) int count(void) { int n = 0; cudaGetDeviceCount(&n); return n; }\n")
    run([zig_binary, "cc", "-target", "x86_64-windows-gnu", "-shared", "-o", tmp_path / "k.dll", tmp_path / "k.c",
         tmp_path / "cuda.lib"], timeout=600)
    return (tmp_path / "k.dll").read_bytes()


def test_a_cu13_build_whose_dll_imports_cudart_12_is_refused(wheelmerge_bin: Path, zig: Path, tmp_path: Path) -> None:
    """A DLL importing cudart64_12.dll: objdump, pefile and wheelmerge read the imports alike; a cu12
    build holding it verifies, a cu13 one is refused by verify and merge naming the DLL, and
    nothing is written."""
    dll = cuda_dll(zig, tmp_path, "cudart64_12.dll")
    (tmp_path / "k.dll").write_bytes(dll)
    tags = "cp312-cp312-win_amd64"
    wheels = {label: one_file_wheel(tmp_path / label, "pkg/k.dll", dll, tags, label) for label in ("cu12", "cu13")}
    assert inspected_imports(wheelmerge_bin, wheels["cu12"])["pkg/k.dll"] == objdump_imports(tmp_path / "k.dll")
    assert objdump_imports(tmp_path / "k.dll") == pefile_imports(dll)
    assert objdump_imports(tmp_path / "k.dll")[0] == "cudart64_12.dll"
    assert verify(wheelmerge_bin, wheels["cu12"]).returncode == 0
    expected = ("pkg/k.dll: the cu13 build links a CUDA library of another major: expected CUDA 13's libraries "
                "(cu13), found imports cudart64_12.dll, a library of CUDA 12")
    refused = verify(wheelmerge_bin, wheels["cu13"])
    assert refused.returncode == 3 and expected in refused.stderr, refused.stderr
    merged = run([wheelmerge_bin, "merge", *wheels.values(), "-o", tmp_path / "out"], check=False)
    assert merged.returncode == 3 and expected in merged.stderr, merged.stderr
    assert not (tmp_path / "out").exists()


def fat(slices: list[bytes], cpus: list[int]) -> bytes:
    """A universal Mach-O file as lipo writes it: the big-endian fat header, one fat_arch per
    slice (cputype, cpusubtype, offset, size, align 2^14), each slice at a 16 KiB boundary."""
    align = 1 << 14
    header = struct.pack(">II", 0xCAFEBABE, len(slices))
    offset, body, entries = align, b"", b""
    for data, cpu in zip(slices, cpus):
        entries += struct.pack(">iiIII", cpu, 3 if cpu == 0x1000007 else 0, offset, len(data), 14)
        body += data + b"\0" * (-len(data) % align)
        offset += len(data) + (-len(data) % align)
    head = header + entries
    return head + b"\0" * (align - len(head)) + body


def test_mach_o_files_are_held_to_the_macos_tags_cpu(wheelmerge_bin: Path, zig: Path, tmp_path: Path) -> None:
    arm64 = built(zig, "aarch64-macos.11.0", tmp_path / "arm64.so")
    x86_64 = built(zig, "x86_64-macos.10.15", tmp_path / "x86_64.so")
    universal = fat([x86_64, arm64], [0x1000007, 0x100000C])
    assert "Mach-O 64-bit arm64" in described(tmp_path, arm64)
    assert "Mach-O 64-bit x86_64" in described(tmp_path, x86_64)
    assert "Mach-O universal binary with 2 architectures" in described(tmp_path, universal)
    member = "pkg/_ext.cpython-312-darwin.so"
    intel = "cp312-cp312-macosx_10_15_x86_64"
    assert_refused_by_verify_and_merge(wheelmerge_bin, tmp_path, member, arm64, intel,
                                       "expected x86_64 (Mach-O CPU type 0x1000007), as macosx_10_15_x86_64 says, "
                                       "found arm64 (Mach-O CPU type 0x100000c)")
    accepted = [(x86_64, intel), (universal, intel), (universal, "cp312-cp312-macosx_11_0_arm64"),
                (arm64, "cp312-cp312-macosx_11_0_universal2"), (x86_64, "cp312-cp312-macosx_11_0_universal2"),
                (arm64, "cp312-cp312-macosx_11_0_arm64")]
    for i, (data, tags) in enumerate(accepted):
        result = verify(wheelmerge_bin, one_file_wheel(tmp_path / f"ok{i}", member, data, tags))
        assert result.returncode == 0, (tags, result.stderr)
    # A universal file is read slice by slice: one of arm64 alone is refused in the x86_64 wheel.
    only_arm64 = one_file_wheel(tmp_path / "fat-arm64", member, fat([arm64], [0x100000C]), intel)
    result = verify(wheelmerge_bin, only_arm64)
    assert result.returncode == 3 and "found arm64 (Mach-O CPU type 0x100000c)" in result.stderr, result.stderr
    # A Java class file (magic 0xcafebabe, then its version where a fat header's count is).
    java = struct.pack(">IHH", 0xCAFEBABE, 0, 61) + b"\0" * 64
    assert "Java" in described(tmp_path, java)
    result = verify(wheelmerge_bin, one_file_wheel(tmp_path / "java", "pkg/A.class", java, intel))
    assert result.returncode == 0, result.stderr
