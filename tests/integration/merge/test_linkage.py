"""Each build is what its label and tags say (docs/WHEEL_RULES.md, "Builds"), over extensions
compiled here with gcc and read back with readelf:

* a build labelled cu13 whose extension links CUDA 12's runtime (`DT_NEEDED libcudart.so.12`,
  against a stub with that SONAME, as the toolkit's would give) is refused by `merge` and by
  `verify`, naming the input, the member and the library; so is a CPU-only torch build linking
  any CUDA library;
* an x86-64 extension in a wheel tagged for aarch64 is refused by both, naming the machine as
  readelf names it by number;
* an extension calling pthread_create, which this glibc (2.36) versions GLIBC_2.34, in a wheel
  tagged manylinux_2_17 (or musllinux) is refused by both, naming the version readelf -V lists.

Nothing is written and the inputs are left as they were.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

import wheelgen as wg
from conftest import run, tool_python
from oracle import assert_consumers_agree, provided_extras, requirements_of

SOURCE = "int wm_linkage_probe(void) { return 42; }\n"
CALLS_CUDART = "extern int cudaRuntimeGetVersion(int*);\nint wm_probe(void) { int v = 0; return cudaRuntimeGetVersion(&v); }\n"
THREADS = ("#include <pthread.h>\nstatic void* run(void* a) { return a; }\n"
           "int wm_probe(void) { pthread_t t; return pthread_create(&t, 0, run, 0); }\n")
EXT = "pkg/_ext.so"


def compile_shared(out: Path, source: str, *flags: str) -> Path:
    src = out.with_suffix(".c")
    src.write_text(source)
    run(["gcc", "-shared", "-fPIC", "-o", out, src, *flags])
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """A stub CUDA 12 runtime (SONAME libcudart.so.12), an extension linked against it, and one
    that links nothing of CUDA's."""
    d = tmp_path_factory.mktemp("linkage")
    stub = d / "stub"
    stub.mkdir()
    compile_shared(stub / "libcudart.so", "int cudaRuntimeGetVersion(int* v) { *v = 12090; return 0; }\n",
                   "-Wl,-soname,libcudart.so.12")
    cuda12 = compile_shared(d / "ext12.so", CALLS_CUDART, f"-L{stub}", "-lcudart")
    plain = compile_shared(d / "plain.so", SOURCE)
    threads = compile_shared(d / "threads.so", THREADS, "-pthread")
    dynamic = run(["readelf", "-d", cuda12]).stdout
    assert "Shared library: [libcudart.so.12]" in dynamic, dynamic  # what readelf reads: the check's input
    return {"cuda12": cuda12.read_bytes(), "plain": plain.read_bytes(), "threads": threads.read_bytes(),
            "threads_versions": run(["readelf", "-V", threads]).stdout}


def wheel(directory: Path, ext: bytes, tags: str = "cp311-cp311-linux_x86_64", label: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return wg.build_wheel(directory / wg.wheel_filename("pkg", "1.0", tags, label=label),
                          {"pkg/__init__.py": b"", EXT: ext}, name="pkg", version="1.0", tags=tags)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheelmerge(binary: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return run([binary, *args], check=False)


def test_a_cu13_build_linking_cuda_12s_runtime_is_refused(wheelmerge_bin: Path, built: dict[str, bytes],
                                                         tmp_path: Path) -> None:
    good = wheel(tmp_path / "in", built["cuda12"], label="cu12")
    bad = wheel(tmp_path / "in" / "bad", built["cuda12"], label="cu13")
    before = {p: digest(p) for p in (good, bad)}
    result = wheelmerge(wheelmerge_bin, "merge", good, bad, "-o", tmp_path / "out")
    assert result.returncode == 3, result.stderr
    assert (f"wheelmerge: error: {bad.name}: {EXT}: the cu13 build links a CUDA library of another major: expected "
            "CUDA 13's libraries (cu13), found DT_NEEDED libcudart.so.12, a library of CUDA 12\n") == result.stderr
    assert not (tmp_path / "out").exists()
    assert {p: digest(p) for p in before} == before
    verified = wheelmerge(wheelmerge_bin, "verify", bad)
    assert verified.returncode == 3 and "the cu13 build links a CUDA library" in verified.stderr, verified.stderr
    assert wheelmerge(wheelmerge_bin, "verify", good).returncode == 0


def test_a_cpu_only_torch_build_linking_cuda_is_refused(wheelmerge_bin: Path, built: dict[str, bytes],
                                                        tmp_path: Path) -> None:
    cuda = wheel(tmp_path / "a", built["cuda12"])
    cpu = wheel(tmp_path / "b", built["cuda12"])
    result = wheelmerge(wheelmerge_bin, "merge", f"{cuda}=torch210_cu12", f"{cpu}=torch210_cpu", "-o", tmp_path / "out")
    assert result.returncode == 3, result.stderr
    assert ("the torch210_cpu build links a CUDA library of another major: expected no CUDA library (torch210_cpu is "
            "a torch without CUDA), found DT_NEEDED libcudart.so.12, a library of CUDA 12") in result.stderr
    assert result.stderr.count("wheelmerge: error:") == 1, result.stderr  # the CUDA 12 build is what it says
    ok = wheelmerge(wheelmerge_bin, "merge", f"{cuda}=torch210_cu12", f"{wheel(tmp_path / 'c', built['plain'])}"
                    "=torch210_cpu", "-o", tmp_path / "merged")
    assert ok.returncode == 0, ok.stderr


def test_an_x86_64_extension_in_an_aarch64_wheel_is_refused(wheelmerge_bin: Path, built: dict[str, bytes],
                                                            tmp_path: Path) -> None:
    (tmp_path / "plain.so").write_bytes(built["plain"])
    header = run(["readelf", "-h", tmp_path / "plain.so"]).stdout
    assert "Advanced Micro Devices X86-64" in header and "ELF64" in header, header
    tags = "cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64"
    wheels = [wheel(tmp_path / label, built["plain"], tags, label) for label in ("cu12", "cu13")]
    expected = ("a native file for another machine than the wheel's platform tags: expected AArch64 (e_machine 183, "
                "64-bit, little-endian), as manylinux_2_17_aarch64.manylinux2014_aarch64 says, found x86-64 "
                "(e_machine 62, 64-bit, little-endian)")
    verified = wheelmerge(wheelmerge_bin, "verify", wheels[0])
    assert verified.returncode == 3, verified.stderr
    assert f"{wheels[0].name}: {EXT}: {expected}" in verified.stderr, verified.stderr
    merged = wheelmerge(wheelmerge_bin, "merge", *wheels, "-o", tmp_path / "out")
    assert merged.returncode == 3 and merged.stderr.count(expected) == 2, merged.stderr
    assert not (tmp_path / "out").exists()
    # The same file in an x86_64 wheel, and in a pure one (no machine to hold it to), is accepted.
    assert wheelmerge(wheelmerge_bin, "verify", wheel(tmp_path / "x86", built["plain"])).returncode == 0
    assert wheelmerge(wheelmerge_bin, "verify", wheel(tmp_path / "any", built["plain"], "py3-none-any")).returncode == 0


def test_an_extension_needing_a_newer_glibc_than_its_tag_is_refused(wheelmerge_bin: Path, built: dict[str, bytes],
                                                                    tmp_path: Path) -> None:
    versions = built["threads_versions"]
    assert "Name: GLIBC_2.34" in versions, versions  # pthread_create's version since glibc 2.34
    old = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"
    wheels = [wheel(tmp_path / label, built["threads"], old, label) for label in ("cu12", "cu13")]
    expected = ("a native file that needs a newer glibc than the wheel's platform tags: expected GLIBC_2.17 or older, "
                "as manylinux_2_17_x86_64 says, found GLIBC_2.34 of libc.so.6")
    verified = wheelmerge(wheelmerge_bin, "verify", wheels[0])
    assert verified.returncode == 3 and f"{wheels[0].name}: {EXT}: {expected}" in verified.stderr, verified.stderr
    merged = wheelmerge(wheelmerge_bin, "merge", *wheels, "-o", tmp_path / "out")
    assert merged.returncode == 3 and merged.stderr.count(expected) == 2, merged.stderr
    assert not (tmp_path / "out").exists()
    musl = wheelmerge(wheelmerge_bin, "verify", wheel(tmp_path / "musl", built["threads"], "cp311-cp311-musllinux_1_2_x86_64"))
    assert musl.returncode == 3, musl.stderr
    assert ("a native file that needs glibc in a musllinux wheel: expected no glibc symbol versions, as "
            "musllinux_1_2_x86_64 says, found GLIBC_2.34 of libc.so.6") in musl.stderr, musl.stderr
    # Tagged for the glibc it needs, or with no claim (linux_x86_64), it is accepted.
    for tags in ("cp311-cp311-manylinux_2_34_x86_64", "cp311-cp311-linux_x86_64"):
        assert wheelmerge(wheelmerge_bin, "verify", wheel(tmp_path / tags, built["threads"], tags)).returncode == 0


# --- the CUDA runtime each build needs ------------------------------------------------------------

CALLS_RUNTIME = ("extern int cublasCreate_v2(void**);\nextern int ncclGetVersion(int*);\n"
                 "int wm_probe(void) { void* h = 0; int v = 0; return cublasCreate_v2(&h) + ncclGetVersion(&v); }\n")


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Extensions linking cuBLAS (libcublas.so.12 or .13) and NCCL (libnccl.so.2), against stubs
    of those SONAMEs, as the toolkits' libraries would give."""
    d = tmp_path_factory.mktemp("runtime")
    out = {}
    for major in (12, 13):
        stub = d / f"stub{major}"
        stub.mkdir()
        compile_shared(stub / "libcublas.so", "int cublasCreate_v2(void** h) { return 0; }\n",
                       f"-Wl,-soname,libcublas.so.{major}")
        compile_shared(stub / "libnccl.so", "int ncclGetVersion(int* v) { return 0; }\n", "-Wl,-soname,libnccl.so.2")
        ext = compile_shared(d / f"ext{major}.so", CALLS_RUNTIME, f"-L{stub}", "-lcublas", "-lnccl")
        dynamic = run(["readelf", "-d", ext]).stdout
        assert f"Shared library: [libcublas.so.{major}]" in dynamic and "Shared library: [libnccl.so.2]" in dynamic
        out[f"cu{major}"] = ext.read_bytes()
        out[f"cublas{major}"] = (stub / "libcublas.so").read_bytes()
    return out


def runtime_wheel(directory: Path, ext: bytes, label: str, requires: list[str] | None = None,
                  more: dict[str, bytes] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return wg.build_wheel(directory / wg.wheel_filename("pkg", "1.0", "cp311-cp311-linux_x86_64", label=label),
                          {"pkg/__init__.py": b"", EXT: ext, **(more or {})}, name="pkg", version="1.0",
                          metadata={"Requires-Dist": requires} if requires else None)


def runtime_warning(wheel: Path, label: str, library: str, distribution: str, extra: str | None) -> str:
    toolkit = f" or cuda-toolkit[{extra}]" if extra else ""
    return (f"wheelmerge: warning: {wheel.name}: {EXT}: the {label} build links {library}, which the wheel does not "
            f"bundle and none of its requirements brings; NVIDIA's runtime wheel {distribution} ships it: require "
            f"it{toolkit} (merge --runtime-requirements adds that), or the file loads only where a toolkit or system "
            f"package installed {library}\n")


def test_a_runtime_library_no_requirement_brings_is_named_with_its_wheel(wheelmerge_bin: Path,
                                                                          runtime: dict[str, bytes],
                                                                          tmp_path: Path) -> None:
    cu12 = runtime_wheel(tmp_path / "12", runtime["cu12"], "cu12")
    cu13 = runtime_wheel(tmp_path / "13", runtime["cu13"], "cu13")
    merged = wheelmerge(wheelmerge_bin, "merge", cu12, cu13, "-o", tmp_path / "out")
    assert merged.returncode == 0, merged.stderr
    expected = [runtime_warning(cu12, "cu12", "libcublas.so.12", "nvidia-cublas-cu12", "cublas"),
                runtime_warning(cu12, "cu12", "libnccl.so.2", "nvidia-nccl-cu12", None),
                runtime_warning(cu13, "cu13", "libcublas.so.13", "nvidia-cublas", "cublas"),
                runtime_warning(cu13, "cu13", "libnccl.so.2", "nvidia-nccl-cu13", None)]
    for warning in expected:
        assert warning in merged.stderr, merged.stderr
    verified = wheelmerge(wheelmerge_bin, "verify", cu13)
    assert verified.returncode == 0 and verified.stderr.startswith("".join(expected[2:])), verified.stderr
    assert verified.stderr.count("warning:") == 2, verified.stderr
    report = json.loads(run([wheelmerge_bin, "inspect", "--json", cu13]).stdout)
    assert report["runtime"] == {"cu13": [
        {"library": "libcublas.so.13", "member": EXT, "distribution": "nvidia-cublas", "toolkit_extra": "cublas",
         "provided_by": None},
        {"library": "libnccl.so.2", "member": EXT, "distribution": "nvidia-nccl-cu13", "toolkit_extra": "",
         "provided_by": None}]}


def test_a_runtime_library_a_requirement_brings_or_the_wheel_bundles_is_not(wheelmerge_bin: Path,
                                                                             runtime: dict[str, bytes],
                                                                             tmp_path: Path) -> None:
    # CuPy's spelling (the toolkit metapackage under an extra), a plain requirement, and a wheel
    # that bundles its own copy of the library.
    brought = runtime_wheel(tmp_path / "13", runtime["cu13"], "cu13",
                            ['cuda-toolkit[cudart,cublas]==13.*; extra == "ctk"', "nvidia-nccl-cu13>=2.28"])
    bundled = runtime_wheel(tmp_path / "12", runtime["cu12"], "cu12", ["nvidia_nccl_cu12"],
                            {"pkg/libcublas.so.12": runtime["cublas12"]})
    merged = wheelmerge(wheelmerge_bin, "merge", bundled, brought, "-o", tmp_path / "out")
    assert merged.returncode == 0 and "runtime wheel" not in merged.stderr, merged.stderr
    report = json.loads(run([wheelmerge_bin, "inspect", "--json", brought]).stdout)
    assert [n["provided_by"] for n in report["runtime"]["cu13"]] == [
        'cuda-toolkit[cudart,cublas]==13.*; extra == "ctk"', "nvidia-nccl-cu13>=2.28"]
    merged_report = json.loads(run([wheelmerge_bin, "inspect", "--json", *(tmp_path / "out").glob("*.whl")]).stdout)
    assert [n["library"] for n in merged_report["runtime"]["cu12"]] == ["libnccl.so.2"]


def test_runtime_requirements_become_each_builds_extra(wheelmerge_bin: Path, runtime: dict[str, bytes],
                                                        tmp_path: Path) -> None:
    cu12 = runtime_wheel(tmp_path / "12", runtime["cu12"], "cu12")
    cu13 = runtime_wheel(tmp_path / "13", runtime["cu13"], "cu13")
    merged = wheelmerge(wheelmerge_bin, "merge", "--runtime-requirements", cu12, cu13, "-o", tmp_path / "out")
    assert merged.returncode == 0 and "runtime wheel" not in merged.stderr, merged.stderr
    (out,) = (tmp_path / "out").glob("*.whl")
    requirements = {str(r) for r in requirements_of(out)}
    assert requirements == {'cuda-toolkit[cublas]==12.*; extra == "cu12"', 'nvidia-nccl-cu12; extra == "cu12"',
                            'cuda-toolkit[cublas]==13.*; extra == "cu13"', 'nvidia-nccl-cu13; extra == "cu13"'}
    assert {"cu12", "cu13"} <= provided_extras(out)
    assert wheelmerge(wheelmerge_bin, "verify", out).returncode == 0
    assert_consumers_agree(out)


# --- libstdc++ against the manylinux policy (a warning) -------------------------------------------

CXX_STRING = "#include <string>\nextern \"C\" int wm_probe(const char* s) { std::string x(s); return int(x.size()); }\n"


def test_an_extension_needing_a_newer_libstdcxx_than_its_tag_is_warned_of_as_auditwheel_sees_it(
        wheelmerge_bin: Path, tmp_path: Path) -> None:
    src = tmp_path / "ext.cpp"
    src.write_text(CXX_STRING)
    run(["g++", "-shared", "-fPIC", "-o", tmp_path / "ext.so", src])
    needs = re.findall(r"Name: (GLIBCXX_3\.4\.\d+)", run(["readelf", "-V", tmp_path / "ext.so"]).stdout)
    newest = max(needs, key=lambda v: int(v.rsplit(".", 1)[1]))
    assert int(newest.rsplit(".", 1)[1]) > 19, needs  # the C++11 std::string is GLIBCXX_3.4.21
    ext = (tmp_path / "ext.so").read_bytes()
    old = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"
    wheels = [wheel(tmp_path / label, ext, old, label) for label in ("cu12", "cu13")]
    expected = (f"{EXT}: needs {newest} of libstdc++.so.6, newer than manylinux_2_17_x86_64 allows (GLIBCXX_3.4.19 "
                "and CXXABI_1.3.7 or older, auditwheel's policy manylinux_2_17)")
    verified = wheelmerge(wheelmerge_bin, "verify", wheels[0])
    assert verified.returncode == 0 and f"warning: {wheels[0].name}: {expected}" in verified.stderr, verified.stderr
    merged = wheelmerge(wheelmerge_bin, "merge", *wheels, "-o", tmp_path / "out")
    assert merged.returncode == 0 and merged.stderr.count(expected) == 2, merged.stderr
    # auditwheel agrees: the versioned symbols allow no manylinux_2_17 tag; at the tag they allow,
    # nothing is said.
    shown = json.loads(run([tool_python(), "-m", "auditwheel", "show", "--json", wheels[0]]).stdout)
    sym_tag = shown["sym_tag"]
    assert re.fullmatch(r"manylinux_2_(\d+)_x86_64", sym_tag) and int(sym_tag.split("_")[2]) > 17, shown
    fitting = wheel(tmp_path / "fit", ext, f"cp311-cp311-{sym_tag}", "cu12")
    result = wheelmerge(wheelmerge_bin, "verify", fitting)
    assert result.returncode == 0 and "libstdc++" not in result.stderr, result.stderr
