"""The loader's selectors beyond cuda-bindings' major: CPU-level builds (x86_64_v1 .. v4) on this
CPU, on CPUs emulated by qemu-user and under a kernel filter that refuses executable memory;
the cuda selector's CUDA runtime wheels, cuda-bindings floors and WHEELMERGE_VARIANT; the torch
selector without torch; the label forms. Merged wheels are made by the real binary from real
compiled extensions and installed with pip; cuda-bindings and the CUDA runtime wheels are the
real ones from the package index (cached under ~/.cache/wheelmerge/loader-selectors).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sysconfig
from pathlib import Path

import pytest

from conftest import CUDA_BINDINGS, WheelCache, clean_env, run, tool_python
from loader_fixtures import EXT_SUFFIX, build_fake_driver
from wheelgen import build_wheel

LEVELS = (1, 2, 3, 4)
# CPUs qemu-user emulates and their x86-64 psABI level (Haswell has no AVX-512).
QEMU_CPUS = {"Nehalem": 2, "Haswell": 3}
QEMU = "qemu-x86_64"
LD_SO = "/lib64/ld-linux-x86-64.so.2"
INDEX_CACHE = Path.home() / ".cache" / "wheelmerge" / "loader-selectors"
# Real wheels from the package index, installed --no-deps beside the merged wheels.
RUNTIME_CU12 = "nvidia-cuda-runtime-cu12==12.8.90"
RUNTIME_CU13 = "nvidia-cuda-runtime==13.0.96"
OLD_BINDINGS = "cuda-bindings==12.8.0"
INDEX_TARGET = ("--only-binary=:all:", "--implementation", "cp", "--python-version", "3.11",
                "--abi", "cp311", "--abi", "abi3", "--abi", "none",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                "--platform", "manylinux2014_x86_64")

# An extension whose init executes INSTRUCTION, so that a build loaded on a CPU without its
# level dies of SIGILL instead of importing.
EXTENSION_C = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *build(PyObject *self, PyObject *args) { return PyLong_FromLong(WM_BUILD); }
static PyMethodDef methods[] = {{"build", build, METH_NOARGS, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_core", NULL, -1, methods};
PyMODINIT_FUNC PyInit__core(void) {
    __asm__ volatile(INSTRUCTION);
    return PyModule_Create(&module);
}
"""
# One instruction that each level adds (v1: the baseline's SSE2).
LEVEL_INSTRUCTIONS = {
    1: '"pxor %%xmm1, %%xmm1" ::: "xmm1"',
    2: '"popcnt %%eax, %%eax" ::: "eax", "cc"',
    3: '"andn %%eax, %%eax, %%eax\\n\\tvpxor %%ymm1, %%ymm1, %%ymm1" ::: "eax", "xmm1", "cc"',
    4: '"vpxord %%zmm16, %%zmm16, %%zmm16" ::: "xmm16"',
}
MARCH = {1: "x86-64", 2: "x86-64-v2", 3: "x86-64-v3", 4: "x86-64-v4"}

# Kernel-side refusal of executable memory gained after the fact, as systemd's
# MemoryDenyWriteExecute= and SELinux's execmem do: a seccomp filter failing mprotect with
# PROT_EXEC (EACCES); then runs argv[1:].
NO_EXEC_MEMORY_C = r"""
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

int main(int argc, char **argv) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mprotect, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, PROT_EXEC, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program)) {
        perror("seccomp");
        return 125;
    }
    execv(argv[1], argv + 1);
    perror("execv");
    return 126;
}
"""

# Imports the package's variant module and reports the selection, or the error.
PROBE = """
import json
try:
    import PKG._core as core
except ImportError as error:
    print(json.dumps({"error": type(error).__name__, "message": str(error)}))
else:
    from PKG import _wheelmerge
    print(json.dumps({"selected": _wheelmerge.selected(), "build": core.build(),
                      "build_info": _wheelmerge.build_info()}))
"""


# --- building and installing merged wheels ----------------------------------------------------

def build_inputs(directory: Path, package: str, builds: dict[str, tuple[int, str, list[str]]],
                 requires: dict[str, list[str]] | None = None):
    """One wheel of PACKAGE per label: its extension returns the build number, executes the
    instruction and is compiled with the flags BUILDS gives (label -> (number, instruction,
    flags)); the label is the .LABEL suffix of the file name. REQUIRES: each label's
    Requires-Dist."""
    directory.mkdir(parents=True, exist_ok=True)
    wheels = []
    for label, (number, instruction, flags) in builds.items():
        source = directory / f"{label}.c"
        source.write_text(EXTENSION_C.replace("INSTRUCTION", instruction))
        extension = directory / f"{label}.so"
        run(["cc", "-shared", "-fPIC", "-O2", *flags, f"-DWM_BUILD={number}",
             f"-I{sysconfig.get_paths()['include']}", "-o", extension, source])
        files = {f"{package}/__init__.py": b'"""A package with one build per label."""\n',
                 f"{package}/_core{EXT_SUFFIX}": extension.read_bytes()}
        metadata = {"Requires-Dist": (requires or {}).get(label, [])}
        wheels.append(build_wheel(
            directory / f"{package}-1.0-cp311-cp311-linux_x86_64.{label}.whl", files,
            name=package, metadata=metadata))
    return wheels


def merge(wheelmerge_bin: Path, wheels, output: Path, *options: str) -> Path:
    run([wheelmerge_bin, "merge", "-q", "-o", output, *wheels, *options])
    merged = sorted(output.glob("*.whl"))
    assert len(merged) == 1, merged
    return merged[0]


def pip_target(target: Path, *wheels: Path) -> Path:
    """Installs WHEELS (no dependencies) into directory TARGET with the real pip."""
    run([tool_python(), "-m", "pip", "install", "--quiet", "--no-index", "--no-deps",
         "--target", target, *wheels])
    return target


def index_wheel(requirement: str) -> Path:
    """The wheel of REQUIREMENT (name==version) for CPython 3.11 on manylinux x86_64, from the
    cache, else downloaded from the package index into it."""
    name, version = requirement.split("==")
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    cached = sorted(INDEX_CACHE.glob(pattern))
    if not cached:
        INDEX_CACHE.mkdir(parents=True, exist_ok=True)
        run([tool_python(), "-m", "pip", "download", "--quiet", "--no-deps", *INDEX_TARGET,
             "-d", INDEX_CACHE, requirement])
        cached = sorted(INDEX_CACHE.glob(pattern))
    assert len(cached) == 1, f"expected one wheel of {requirement} in {INDEX_CACHE}: {cached}"
    return cached[0]


def python_run(python: Path, sites, *args: str, env=None, prefix=()) -> subprocess.CompletedProcess:
    """Runs PYTHON (under PREFIX, e.g. qemu) with only SITES on its path beside its own."""
    environment = clean_env({"PYTHONPATH": ":".join(str(site) for site in sites)})
    environment.update(env or {})
    return subprocess.run([*prefix, str(python), *args], capture_output=True, text=True,
                          env=environment, cwd=Path(sites[0]).parent, timeout=120)


def probe(python: Path, sites, package: str, env=None, prefix=()) -> dict:
    result = python_run(python, sites, "-c", PROBE.replace("PKG", package), env=env,
                        prefix=prefix)
    assert result.returncode == 0, (f"the probe ended with {result.returncode}"
                                    f"{' (SIGILL)' if result.returncode == -signal.SIGILL else ''}"
                                    f":\n{result.stdout}{result.stderr}")
    return json.loads(result.stdout.splitlines()[-1])


def diagnosis(python: Path, sites, package: str, env=None, prefix=()):
    return python_run(python, sites, "-m", f"{package}._wheelmerge", env=env, prefix=prefix)


@pytest.fixture(scope="session")
def python(make_venv) -> Path:
    """An interpreter with nothing installed: no torch, no cuda-bindings."""
    return make_venv("selectors").python


# --- selector cpu ------------------------------------------------------------------------------

def ld_so_level(prefix=()) -> int:
    """The highest x86-64 level glibc's dynamic loader says the CPU supports."""
    text = subprocess.run([*prefix, LD_SO, "--help"], capture_output=True, text=True,
                          check=True).stdout
    levels = [int(level) for level in re.findall(r"x86-64-v(\d) \(supported", text)]
    assert levels, f"{LD_SO} --help names no supported x86-64 level:\n{text}"
    return max(levels)


def cpuinfo_level() -> int:
    """The level /proc/cpuinfo's flags amount to (Linux clears the flags of state it does not
    enable)."""
    flags = set(re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)[1].split())
    needs = {2: "cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3",
             3: "avx avx2 bmi1 bmi2 f16c fma abm movbe xsave",
             4: "avx512f avx512bw avx512cd avx512dq avx512vl"}
    level = 1
    while level < 4 and set(needs[level + 1].split()) <= flags:
        level += 1
    return level


@pytest.fixture(scope="session")
def host_level() -> int:
    by_glibc, by_flags = ld_so_level(), cpuinfo_level()
    assert by_glibc == by_flags, f"ld.so says x86-64-v{by_glibc}, /proc/cpuinfo x86-64-v{by_flags}"
    return by_glibc


@pytest.fixture(scope="session")
def cpu_inputs(tmp_path_factory) -> dict[str, Path]:
    builds = {f"x86_64_v{level}": (level, LEVEL_INSTRUCTIONS[level], [f"-march={MARCH[level]}"])
              for level in LEVELS}
    wheels = build_inputs(tmp_path_factory.mktemp("cpu-inputs"), "wmcpu", builds)
    return dict(zip(builds, wheels))


@pytest.fixture(scope="session")
def cpu_site(cpu_inputs, wheelmerge_bin, tmp_path_factory) -> Path:
    """The merged wheel of all four levels, installed."""
    base = tmp_path_factory.mktemp("cpu-all")
    return pip_target(base / "site", merge(wheelmerge_bin, cpu_inputs.values(), base / "out"))


def cpu_site_of(labels, cpu_inputs, wheelmerge_bin, base: Path) -> Path:
    merged = merge(wheelmerge_bin, [cpu_inputs[label] for label in labels], base / "out")
    return pip_target(base / "site", merged)


def qemu(cpu: str) -> list[str]:
    if shutil.which(QEMU) is None:
        pytest.fail(f"{QEMU} (qemu-user) is needed to emulate other CPUs", pytrace=False)
    return [QEMU, "-cpu", cpu]


def test_this_cpu_selects_its_level(python, cpu_site, host_level):
    found = probe(python, [cpu_site], "wmcpu")
    assert (found["selected"], found["build"]) == (f"x86_64_v{host_level}", host_level)
    report = diagnosis(python, [cpu_site], "wmcpu")
    assert report.returncode == 0, report.stdout + report.stderr
    lines = report.stdout.splitlines()
    assert "selector: cpu" in lines
    assert f"CPU: x86-64-v{host_level} (detected with CPUID and XGETBV)" in lines
    assert (f"selected: x86_64_v{host_level}, because this CPU supports x86-64-v{host_level} "
            "(detected with CPUID and XGETBV)") in lines


@pytest.mark.parametrize("level", LEVELS)
def test_override_on_this_cpu(python, cpu_site, host_level, level):
    label = f"x86_64_v{level}"
    found = probe(python, [cpu_site], "wmcpu", env={"WHEELMERGE_VARIANT": label})
    if level <= host_level:
        assert (found["selected"], found["build"]) == (label, level)
    else:
        assert found["error"] == "SelectionError", found
        assert f"the {label} build would stop with an illegal instruction" in found["message"]


@pytest.mark.parametrize("value", ["x86_64_v5", "cu12", "x86-64-v3"])
def test_override_naming_no_build(python, cpu_site, value):
    found = probe(python, [cpu_site], "wmcpu", env={"WHEELMERGE_VARIANT": value})
    assert found["error"] == "SelectionError", found
    assert found["message"].startswith(
        f"wmcpu: cannot select a CPU build: WHEELMERGE_VARIANT='{value}' names no build of this "
        "wheel.\nThis wheel of wmcpu has builds for x86_64_v1, x86_64_v2, x86_64_v3, x86_64_v4. "
        "Set WHEELMERGE_VARIANT to one of them:\n    export WHEELMERGE_VARIANT=x86_64_v")
    assert found["message"].endswith("or unset it to select automatically:\n"
                                     "    unset WHEELMERGE_VARIANT")


@pytest.mark.parametrize("cpu", QEMU_CPUS)
def test_emulated_cpu(python, cpu_site, cpu):
    """Under qemu's CPU model the loader selects that model's level, refuses every build above
    it with its error, and the diagnosis says how it found the level."""
    level = QEMU_CPUS[cpu]
    assert ld_so_level(qemu(cpu)) == level  # the oracle agrees with the model
    found = probe(python, [cpu_site], "wmcpu", prefix=qemu(cpu))
    assert (found["selected"], found["build"]) == (f"x86_64_v{level}", level)
    refused = probe(python, [cpu_site], "wmcpu", prefix=qemu(cpu),
                    env={"WHEELMERGE_VARIANT": "x86_64_v4"})
    assert refused["error"] == "SelectionError", refused
    assert refused["message"].startswith(
        f"wmcpu: cannot select a CPU build: WHEELMERGE_VARIANT=x86_64_v4 is set, but this CPU "
        f"supports x86-64-v{level} (detected with CPUID and XGETBV); the x86_64_v4 build would "
        "stop with an illegal instruction here.\n")
    assert f"    export WHEELMERGE_VARIANT=x86_64_v{level}\n" in refused["message"]
    report = diagnosis(python, [cpu_site], "wmcpu", prefix=qemu(cpu))
    assert report.returncode == 0, report.stdout + report.stderr
    assert f"CPU: x86-64-v{level} (detected with CPUID and XGETBV)" in report.stdout
    lacks = {2: "CPU lacks for x86-64-v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, "
                "OSXSAVE, XCR0 SSE state, XCR0 AVX state",
             3: "CPU lacks for x86-64-v4: AVX512F, AVX512BW, AVX512CD, AVX512DQ, AVX512VL, "
                "XCR0 opmask state, XCR0 ZMM_Hi256 state, XCR0 Hi16_ZMM state"}
    assert lacks[level] in report.stdout.splitlines()


def test_build_above_the_emulated_cpu_dies_of_sigill(python, cpu_inputs, tmp_path):
    """The fixture is meaningful: imported directly, the build one level above the CPU's
    level dies of SIGILL where the loader refuses it."""
    site = pip_target(tmp_path / "site", cpu_inputs["x86_64_v3"])
    code = "import wmcpu._core as core; print(core.build())"
    assert python_run(python, [site], "-c", code).stdout.split() == ["3"]
    emulated = python_run(python, [site], "-c", code, prefix=qemu("Nehalem"))
    assert emulated.returncode == -signal.SIGILL, (emulated.returncode, emulated.stderr)


def test_highest_build_at_or_below_the_cpu(python, cpu_inputs, wheelmerge_bin, tmp_path):
    """A wheel without the CPU's own level takes the highest build below it; one whose builds
    are all above the CPU refuses with its error."""
    partial = cpu_site_of(["x86_64_v2", "x86_64_v4"], cpu_inputs, wheelmerge_bin, tmp_path / "a")
    found = probe(python, [partial], "wmcpu", prefix=qemu("Haswell"))
    assert (found["selected"], found["build"]) == ("x86_64_v2", 2)
    high = cpu_site_of(["x86_64_v3", "x86_64_v4"], cpu_inputs, wheelmerge_bin, tmp_path / "b")
    refused = probe(python, [high], "wmcpu", prefix=qemu("Nehalem"))
    assert refused["error"] == "SelectionError", refused
    assert refused["message"].startswith(
        "wmcpu: cannot select a CPU build: this CPU supports x86-64-v2 (detected with CPUID and "
        "XGETBV), below every build.\nThis wheel of wmcpu has builds for x86_64_v3, x86_64_v4.")


def test_without_executable_memory_cpuinfo_decides(python, cpu_site, host_level, tmp_path):
    """When the kernel refuses to make memory executable, /proc/cpuinfo's flags decide, and
    the diagnosis says so."""
    wrapper = tmp_path / "no-exec-memory"
    source = tmp_path / "no-exec-memory.c"
    source.write_text(NO_EXEC_MEMORY_C)
    run(["cc", "-O1", "-o", wrapper, source])
    found = probe(python, [cpu_site], "wmcpu", prefix=[str(wrapper)])
    assert (found["selected"], found["build"]) == (f"x86_64_v{host_level}", host_level)
    report = diagnosis(python, [cpu_site], "wmcpu", prefix=[str(wrapper)])
    assert report.returncode == 0, report.stdout + report.stderr
    assert (f"CPU: x86-64-v{host_level} (detected with /proc/cpuinfo flags; CPUID could not be "
            "run: PermissionError: [Errno 13] mprotect(PROT_EXEC) failed: Permission denied)"
            ) in report.stdout.splitlines()


def test_not_x86_64_fits_no_cpu_build(python, cpu_site):
    """Under the i686 personality (setarch), platform.machine() is not x86-64: nothing is
    selected, an override included, and the diagnosis says why."""
    prefix = ["setarch", "i686"]
    for env in ({}, {"WHEELMERGE_VARIANT": "x86_64_v1"}):
        found = probe(python, [cpu_site], "wmcpu", prefix=prefix, env=env)
        assert found["error"] == "SelectionError", found
        assert found["message"].startswith(
            "wmcpu: cannot select a CPU build: platform.machine() is 'i686', not x86-64, and "
            "every build is for x86-64.\n")
    report = diagnosis(python, [cpu_site], "wmcpu", prefix=prefix)
    assert report.returncode == 1
    assert "CPU: platform.machine() is 'i686', not x86-64" in report.stdout.splitlines()


# --- selector cuda -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def cuda_inputs(tmp_path_factory) -> list[Path]:
    """Builds that use cuda-bindings: each requires its major's."""
    builds = {f"cu{major}": (major, '"nop"', []) for major in (12, 13)}
    requires = {f"cu{major}": [f"cuda-bindings=={major}.*"] for major in (12, 13)}
    return build_inputs(tmp_path_factory.mktemp("cuda-inputs"), "wmcuda", builds, requires)


@pytest.fixture(scope="session")
def runtime_inputs(tmp_path_factory) -> list[Path]:
    """Builds that do not use cuda-bindings (as CuPy's): each brings its CUDA runtime through a
    `ctk` extra, which the merge splits into ctk-cu12 and ctk-cu13."""
    builds = {f"cu{major}": (major, '"nop"', []) for major in (12, 13)}
    requires = {"cu12": ['nvidia-cuda-runtime-cu12; extra == "ctk"'],
                "cu13": ['nvidia-cuda-runtime==13.*; extra == "ctk"']}
    return build_inputs(tmp_path_factory.mktemp("runtime-inputs"), "wmcuda", builds, requires)


@pytest.fixture(scope="session")
def cuda_site(cuda_inputs, wheelmerge_bin, tmp_path_factory) -> Path:
    """cu12 and cu13 merged with --driver-fallback, installed."""
    base = tmp_path_factory.mktemp("cuda-merged")
    merged = merge(wheelmerge_bin, cuda_inputs, base / "out", "--driver-fallback")
    return pip_target(base / "site", merged)


@pytest.fixture(scope="session")
def runtimes(tmp_path_factory) -> dict[str, Path]:
    """Sites holding the real CUDA runtime wheels: of CUDA 12, of 13, and both."""
    base = tmp_path_factory.mktemp("cuda-runtimes")
    cu12, cu13 = index_wheel(RUNTIME_CU12), index_wheel(RUNTIME_CU13)
    return {"cu12": pip_target(base / "cu12", cu12), "cu13": pip_target(base / "cu13", cu13),
            "both": pip_target(base / "both", cu12, cu13)}


@pytest.fixture(scope="session")
def drivers(tmp_path_factory) -> dict[int, Path]:
    """Stand-in drivers supporting CUDA 12.8 and 13.0."""
    base = tmp_path_factory.mktemp("drivers")
    return {version: build_fake_driver(base / str(version), version) for version in (12080, 13000)}


@pytest.mark.parametrize("runtime, driver, label", [("cu12", 13000, "cu12"),
                                                    ("cu13", 12080, "cu13")])
def test_runtime_wheel_selects_before_the_driver(python, cuda_site, runtimes, drivers,
                                                 runtime, driver, label):
    env = {"LD_LIBRARY_PATH": str(drivers[driver])}
    found = probe(python, [cuda_site, runtimes[runtime]], "wmcuda", env=env)
    assert (found["selected"], found["build"]) == (label, int(label[2:]))
    wheel = {"cu12": "nvidia-cuda-runtime-cu12 12.8.90", "cu13": "nvidia-cuda-runtime 13.0.96"}
    report = diagnosis(python, [cuda_site, runtimes[runtime]], "wmcuda", env=env)
    assert report.returncode == 0, report.stdout + report.stderr
    lines = report.stdout.splitlines()
    assert f"CUDA runtime wheels: {wheel[runtime]} (CUDA {label[2:]})" in lines
    major, minor = divmod(driver, 1000)
    assert f"CUDA driver: the CUDA driver (libcuda.so.1) supports CUDA {major}.{minor // 10}" in lines
    assert (f"selected: {label}, because no cuda-bindings found: not in distribution metadata, "
            "`import cuda.bindings` failed (ModuleNotFoundError: No module named 'cuda'); the "
            f"CUDA runtime wheel {wheel[runtime]} is installed") in lines


@pytest.mark.parametrize("driver, label", [(12080, "cu12"), (13000, "cu13")])
def test_runtime_wheels_of_both_majors_fall_through_to_the_driver(
        python, cuda_site, runtimes, drivers, driver, label):
    env = {"LD_LIBRARY_PATH": str(drivers[driver])}
    sites = [cuda_site, runtimes["both"]]
    found = probe(python, sites, "wmcuda", env=env)
    assert (found["selected"], found["build"]) == (label, int(label[2:]))
    report = diagnosis(python, sites, "wmcuda", env=env)
    assert ("CUDA runtime wheels: nvidia-cuda-runtime-cu12 12.8.90 (CUDA 12); "
            "nvidia-cuda-runtime 13.0.96 (CUDA 13)") in report.stdout.splitlines()
    assert ("CUDA runtime wheels of more than one CUDA major are installed "
            "(nvidia-cuda-runtime-cu12 12.8.90, nvidia-cuda-runtime 13.0.96), so they select no "
            f"build; the CUDA driver (libcuda.so.1) supports CUDA {driver // 1000}."
            ) in report.stdout


def test_runtime_wheels_need_driver_fallback(python, cuda_inputs, runtimes, wheelmerge_bin,
                                             tmp_path):
    """Builds that use cuda-bindings: without --driver-fallback the runtime wheels decide
    nothing, as before."""
    site = pip_target(tmp_path / "site", merge(wheelmerge_bin, cuda_inputs, tmp_path / "out"))
    found = probe(python, [site, runtimes["cu12"]], "wmcuda")
    assert found["error"] == "SelectionError", found
    assert "runtime" not in found["message"]
    report = diagnosis(python, [site, runtimes["cu12"]], "wmcuda")
    assert "CUDA runtime wheels" not in report.stdout
    assert "selection sources: cuda-bindings\n" in report.stdout


@pytest.mark.parametrize("runtime, label", [("cu12", "cu12"), ("cu13", "cu13")])
def test_builds_without_cuda_bindings_select_by_runtime_wheels(
        python, runtime_inputs, runtimes, wheelmerge_bin, tmp_path, runtime, label):
    """Builds that require no cuda-bindings (CuPy) select by the CUDA runtime wheels with no
    merge flag, and never propose cuda-bindings: the fix is the build's own extra."""
    site = pip_target(tmp_path / "site", merge(wheelmerge_bin, runtime_inputs, tmp_path / "out"))
    found = probe(python, [site, runtimes[runtime]], "wmcuda")
    assert (found["selected"], found["build"]) == (label, int(label[2:]))
    empty = tmp_path / "no-driver"
    empty.mkdir()
    refused = probe(python, [site], "wmcuda", env={"LD_LIBRARY_PATH": str(empty)})
    assert refused["error"] == "SelectionError", refused
    message = refused["message"]
    assert message.startswith("wmcuda: cannot select a CUDA build: the CUDA driver libcuda.so.1 "
                              "could not be loaded")
    assert ('Install what one of them needs:\n    pip install "wmcuda[ctk-cu12]"\n'
            '    pip install "wmcuda[ctk-cu13]"\n') in message
    assert "cuda-bindings" not in message
    report = diagnosis(python, [site, runtimes[runtime]], "wmcuda")
    assert "selection sources: runtime, driver\n" in report.stdout


def test_nothing_to_select_by_proposes_the_runtime_wheels(python, cuda_site, tmp_path):
    """With --driver-fallback, no cuda-bindings, no runtime wheel and no usable driver: the fixes
    name the CUDA runtime wheel of each build beside cuda-bindings and the override."""
    empty = tmp_path / "no-driver"
    empty.mkdir()
    found = probe(python, [cuda_site], "wmcuda", env={"LD_LIBRARY_PATH": str(empty)})
    assert found["error"] == "SelectionError", found
    message = found["message"]
    assert ('or install the CUDA runtime wheel of one of them:\n'
            '    pip install "nvidia-cuda-runtime-cu12"\n'
            '    pip install "nvidia-cuda-runtime==13.*"') in message
    # The builds require cuda-bindings 12 and 13: installing the build's extra brings it.
    assert 'pip install "wmcuda[cu12]"' in message
    assert "export WHEELMERGE_CUDA_MAJOR=13" in message


@pytest.fixture(scope="session")
def bindings(wheel_cache: WheelCache, tmp_path_factory) -> dict[str, Path]:
    """Sites holding real cuda-bindings: 12.8.0 (from the index), 12.9.4 and 13.0.3 (the
    suite's cache)."""
    base = tmp_path_factory.mktemp("bindings")
    sites = {"12.8.0": pip_target(base / "12.8.0", index_wheel(OLD_BINDINGS))}
    for label, version in CUDA_BINDINGS.items():
        wheel = sorted(wheel_cache.path.glob(f"cuda_bindings-{version}-cp311-*.whl"))
        assert len(wheel) == 1, f"no cuda-bindings {version} for cp311 in {wheel_cache.path}"
        sites[version] = pip_target(base / version, wheel[0])
    return sites


@pytest.fixture(scope="session")
def floor_site(cuda_inputs, wheelmerge_bin, tmp_path_factory) -> Path:
    """cu12 and cu13 merged with the cuda-bindings each was compiled against."""
    base = tmp_path_factory.mktemp("cuda-floor")
    merged = merge(wheelmerge_bin, cuda_inputs, base / "out",
                   "--build-info", "cu12:cuda_bindings=12.9.4",
                   "--build-info", "cu13:cuda_bindings=13.0.3")
    return pip_target(base / "site", merged)


@pytest.mark.parametrize("env", [{}, {"WHEELMERGE_CUDA_MAJOR": "12"},
                                 {"WHEELMERGE_VARIANT": "cu12"}])
def test_cuda_bindings_older_than_the_build_is_refused(python, floor_site, bindings, env):
    found = probe(python, [floor_site, bindings["12.8.0"]], "wmcuda", env=env)
    assert found["error"] == "SelectionError", found
    assert found["message"] == (
        "wmcuda: cannot select a CUDA build: the cu12 build was compiled against cuda-bindings "
        "12.9.4 and needs 12.9 or newer, but cuda-bindings 12.8.0 is installed (from its "
        "distribution metadata).\nThis wheel of wmcuda has builds for cu12, cu13. Install "
        'cuda-bindings 12.9 or a newer 12.x:\n    pip install "cuda-bindings>=12.9,<13"')
    report = diagnosis(python, [floor_site, bindings["12.8.0"]], "wmcuda", env=env)
    assert report.returncode == 1
    assert ("floors: cu12 needs cuda-bindings >= 12.9.4; cu13 needs cuda-bindings >= 13.0.3"
            in report.stdout.splitlines())


@pytest.mark.parametrize("version, label", [("12.9.4", "cu12"), ("13.0.3", "cu13")])
def test_cuda_bindings_at_the_floor_is_accepted(python, floor_site, bindings, version, label):
    found = probe(python, [floor_site, bindings[version]], "wmcuda")
    assert (found["selected"], found["build"]) == (label, int(label[2:]))
    assert found["build_info"] == {"cuda_bindings": version}


def test_variant_override_for_cuda(python, cuda_site, bindings):
    found = probe(python, [cuda_site], "wmcuda", env={"WHEELMERGE_VARIANT": "cu13"})
    assert (found["selected"], found["build"]) == ("cu13", 13)
    agreeing = probe(python, [cuda_site], "wmcuda",
                     env={"WHEELMERGE_VARIANT": "cu12", "WHEELMERGE_CUDA_MAJOR": "12"})
    assert (agreeing["selected"], agreeing["build"]) == ("cu12", 12)
    # The variant's build needs cuda-bindings of its major, as WHEELMERGE_CUDA_MAJOR's does.
    contradicted = probe(python, [cuda_site, bindings["12.9.4"]], "wmcuda",
                         env={"WHEELMERGE_VARIANT": "cu13"})
    assert contradicted["error"] == "SelectionError", contradicted
    assert contradicted["message"].startswith(
        "wmcuda: cannot select a CUDA build: WHEELMERGE_VARIANT=cu13 is set, but cuda-bindings "
        "12.9.4 is installed (from its distribution metadata); the cu13 build needs "
        "cuda-bindings 13.\n")
    assert "    unset WHEELMERGE_VARIANT\n" in contradicted["message"]


def test_conflicting_overrides_are_refused(python, cuda_site):
    found = probe(python, [cuda_site], "wmcuda",
                  env={"WHEELMERGE_VARIANT": "cu12", "WHEELMERGE_CUDA_MAJOR": "13"})
    assert found["error"] == "SelectionError", found
    assert found["message"] == (
        "wmcuda: cannot select a CUDA build: WHEELMERGE_VARIANT=cu12 is set and "
        "WHEELMERGE_CUDA_MAJOR=13 is set, and they name different builds.\n"
        "This wheel of wmcuda has builds for cu12, cu13. Unset one of them:\n"
        "    unset WHEELMERGE_CUDA_MAJOR\n    unset WHEELMERGE_VARIANT")


def test_variant_naming_no_cuda_build(python, cuda_site):
    found = probe(python, [cuda_site], "wmcuda", env={"WHEELMERGE_VARIANT": "cu11"})
    assert found["error"] == "SelectionError", found
    assert found["message"] == (
        "wmcuda: cannot select a CUDA build: WHEELMERGE_VARIANT='cu11' names no build of this "
        "wheel.\nThis wheel of wmcuda has builds for cu12, cu13. Set WHEELMERGE_VARIANT to one "
        "of them:\n    export WHEELMERGE_VARIANT=cu13\nor unset it to select automatically:\n"
        "    unset WHEELMERGE_VARIANT")


# --- selector torch ----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def torch_site(wheelmerge_bin, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("torch-merged")
    builds = {"torch29_cu12": (29, '"nop"', []), "torch210_cu12": (210, '"nop"', [])}
    wheels = build_inputs(base / "inputs", "wmtorch", builds)
    return pip_target(base / "site", merge(wheelmerge_bin, wheels, base / "out"))


def test_torch_not_installed(python, torch_site):
    """Importing the package selects nothing; its variant module fails with the loader's
    error, which names the torch each build needs and how to install it."""
    plain = python_run(python, [torch_site], "-c", "import wmtorch; print('imported')")
    assert (plain.returncode, plain.stdout) == (0, "imported\n"), plain.stderr
    found = probe(python, [torch_site], "wmtorch")
    assert found["error"] == "SelectionError", found
    assert found["message"] == (
        "wmtorch: cannot select a torch build: torch is not installed (No module named 'torch'), "
        "and every build needs torch.\nThis wheel of wmtorch has builds for torch29_cu12, "
        "torch210_cu12. Install the torch one of them was built for (its torch.version.cuda "
        "must be of the CUDA major the label names):\n"
        '    pip install "torch==2.9.*"  # torch29_cu12: torch 2.9 built with CUDA 12\n'
        '    pip install "torch==2.10.*"  # torch210_cu12: torch 2.10 built with CUDA 12')
    overridden = probe(python, [torch_site], "wmtorch", env={"WHEELMERGE_VARIANT": "torch210_cu12"})
    assert overridden["message"].startswith(
        "wmtorch: cannot select a torch build: torch is not installed (No module named 'torch'), "
        "and the torch210_cu12 build needs torch.\n")
    report = diagnosis(python, [torch_site], "wmtorch")
    assert report.returncode == 1 and report.stderr == ""
    lines = report.stdout.splitlines()
    assert lines[2] == "selector: torch"
    assert lines[3].startswith("python: ")
    assert lines[4] == "torch: torch is not installed (No module named 'torch')"


# --- labels ------------------------------------------------------------------------------------

LABEL_CASES = {
    "cu12": ("cuda", 12), "cu9": ("cuda", 9), "cu130": ("cuda", 130), "cu012": None,
    "cu": None, "cu1234": None, "torch210_cu12": ("torch", [2, 10, 12, False]),
    "torch29_cu12": ("torch", [2, 9, 12, False]), "torch20_cu11": ("torch", [2, 0, 11, False]),
    "torch211_cu13": ("torch", [2, 11, 13, False]), "torch2100_cu12": None, "torch200_cu12": None,
    "torch2_cu12": None, "torch210cu12": None, "torch210_cu": None, "torch010_cu12": None,
    "torch210plus_cu12": ("torch", [2, 10, 12, True]), "torch211plus_cu130": ("torch", [2, 11, 130, True]),
    "torch210_cpu": ("torch", [2, 10, None, False]), "torch29plus_cpu": ("torch", [2, 9, None, True]),
    "torch210plus": None, "torch210_cpu1": None, "torchplus_cu12": None, "torch210pluscu12": None,
    "x86_64_v1": ("cpu", 1), "x86_64_v4": ("cpu", 4), "x86_64_v0": None, "x86_64_v5": None,
    "x86_64_v12": None, "x86-64-v3": None, "x86_64": None,
}
# How the loaders read the labels the merger accepted: the torch rules split theirs.
TORCH_LABELS = {label: case[1] for label, case in LABEL_CASES.items() if case and case[0] == "torch"}


def test_label_parsers(python, torch_site, wheelmerge_bin, tmp_path):
    """The merger accepts exactly the labels of merger/format/label.cpp (a manifest with any other is
    refused), and the torch rules read the accepted ones back as the merger means them."""
    code = f"""
import json
from wmtorch import _wheelmerge_rules as rules
print(json.dumps({{label: rules._torch_label(label) for label in {list(TORCH_LABELS)!r}}}))
"""
    result = python_run(python, [torch_site], "-c", code)
    assert result.returncode == 0, result.stderr
    assert {label: list(parts) for label, parts in json.loads(result.stdout).items()} == TORCH_LABELS
    for label, case in LABEL_CASES.items():
        manifest = tmp_path / f"{label}.json"
        selector = case[0] if case else "cuda"
        other = "torch29plus_cu99" if case and case[0] == "torch" and case[1][3] else "torch29_cu99"
        labels = [label, {"cuda": "cu99", "torch": other, "cpu": "x86_64_v2"}[selector]]
        sections = {key: {each: [] if key in ("extras", "preload") else {} for each in labels}
                    for key in ("extras", "modules", "files", "preload", "build_info", "gpu_code")}
        manifest.write_text(json.dumps({
            "format": 3, "wheelmerge": "", "package": "p", "distribution": "p",
            "selector": selector, "variants": labels,
            "sources": ["cuda-bindings"] if selector == "cuda" else [], **sections}))
        rendered = subprocess.run([str(wheelmerge_bin), "loader", str(manifest), "-o", str(tmp_path)],
                                  capture_output=True, text=True, check=False)
        assert (rendered.returncode == 0) == (case is not None), (label, rendered.stderr)
