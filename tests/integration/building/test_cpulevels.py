"""End to end with CPU levels: `wheelmerge build` examples/cpulevels for x86-64 levels 1, 3 and 4
(one command: three builds, then the merge), check that each build holds its level's
instructions and was compiled as the interpreter compiles extensions, verify the merged wheel,
install it, and check which build a process imports: on this CPU, under the override, and under
emulated CPUs (qemu-user with a Haswell, level 3, and a Nehalem, level 2), where the builds above
the CPU's level must be refused with the loader's error rather than die of SIGILL.

The level of each CPU is found independently of the loader: glibc's dynamic loader lists the
glibc-hwcaps levels the CPU supports (`ld.so --help`, run under the same emulated CPU), and on
the real CPU /proc/cpuinfo's flags must agree with it. (Under qemu-user /proc/cpuinfo is the
host's file, so it says nothing about the emulated CPU.)

Nothing here is skipped: a missing compiler, objdump or qemu-x86_64 fails the suite.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import signal
import sysconfig
import zipfile
from pathlib import Path
from typing import Sequence

import pytest

from conftest import ROOT, Venv, clean_env, run, tool_python

EXAMPLE = ROOT / "examples" / "cpulevels"
LEVELS = {"x86_64_v1": 1, "x86_64_v3": 3, "x86_64_v4": 4}
# gcc and clang call level 1 plain x86-64; there is no -march=x86-64-v1.
MARCH = {1: "x86-64", 2: "x86-64-v2", 3: "x86-64-v3", 4: "x86-64-v4"}
KERNELS = {1: "portable", 3: "avx2", 4: "avx512"}
EXT = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so
LD_SO = Path("/lib64/ld-linux-x86-64.so.2")
QEMU = "qemu-x86_64"
# Emulated CPUs and their psABI level: Haswell has AVX2, BMI2 and FMA but no AVX-512; Nehalem
# has SSE4.2 and POPCNT but no AVX.
QEMU_CPUS = {"Haswell": 3, "Nehalem": 2}

# The features each level adds (x86-64 psABI), as /proc/cpuinfo names them (`abm` is LZCNT).
PSABI_FLAGS = {
    2: {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"},
    3: {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
    4: {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
}


def expected_build(cpu_level: int) -> str:
    """The label the loader must select on a CPU of this level: the highest build at or below it."""
    return max((label for label, level in LEVELS.items() if level <= cpu_level), key=LEVELS.get)


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is needed by this suite and is not on PATH (scripts/setup.sh installs it)",
                    pytrace=False)
    return path


# --- the independent oracle of a CPU's level ---------------------------------------------------

def hwcaps_level(prefix: list[str]) -> int:
    """The highest x86-64-vN glibc's dynamic loader reports as supported, 1 when none is."""
    text = run([*prefix, LD_SO, "--help"]).stdout
    listed = re.findall(r"^\s+x86-64-v(\d)(.*)$", text, re.M)
    assert {int(n) for n, _ in listed} >= {2, 3, 4}, f"ld.so --help lists no glibc-hwcaps levels:\n{text}"
    return max([int(n) for n, state in listed if "supported" in state], default=1)


def cpuinfo_level() -> int:
    """The psABI level the flags of /proc/cpuinfo (of the real CPU) amount to."""
    flags = set(re.search(r"^flags\s*:(.*)$", Path("/proc/cpuinfo").read_text(), re.M)[1].split())
    level = 1
    while level < 4 and PSABI_FLAGS[level + 1] <= flags:
        level += 1
    return level


@pytest.fixture(scope="session")
def host_level() -> int:
    by_glibc, by_flags = hwcaps_level([]), cpuinfo_level()
    assert by_glibc == by_flags, f"ld.so says x86-64-v{by_glibc}, /proc/cpuinfo x86-64-v{by_flags}"
    return by_glibc


def qemu(cpu: str) -> list[str]:
    return [need_tool(QEMU), "-cpu", cpu]


@pytest.mark.parametrize("cpu", QEMU_CPUS)
def test_emulated_cpu_levels(cpu: str) -> None:
    """The emulated CPUs are what the tests below take them for."""
    assert hwcaps_level(qemu(cpu)) == QEMU_CPUS[cpu]


# --- the builds --------------------------------------------------------------------------------

def python_cflags() -> list[str]:
    """The compile flags of the Python that builds, which setuptools gives every extension."""
    code = "import sysconfig; print(sysconfig.get_config_var('CFLAGS'))"
    return run([tool_python(), "-c", code]).stdout.split()


def build_env(label: str) -> dict[str, str]:
    """A level's build environment as the example's README makes it by hand: the interpreter's
    flags, then -march, and the label."""
    flags = " ".join([*python_cflags(), f"-march={MARCH[LEVELS[label]]}"])
    return clean_env({"CFLAGS": flags, "WHEELMERGE_BUILD_VARIANT": label})


@pytest.fixture(scope="session")
def merged(wheelmerge_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The merged wheel, from one command: `wheelmerge build` builds the project's `variants`
    (the three levels at once, with the tools' Python) and merges them."""
    need_tool("cc")
    out = tmp_path_factory.mktemp("cpulevels-merged")
    result = run([wheelmerge_bin, "build", EXAMPLE, "-o", out, "--no-isolation", "--python", tool_python(),
                  "-j", str(len(LEVELS)), "--json"], env=clean_env({"NO_COLOR": "1"}), timeout=900)
    summary = json.loads(result.stdout)
    assert {v["label"]: v["build_info"] for v in summary["variants"]} == {
        label: {"march": MARCH[level]} for label, level in LEVELS.items()}, summary
    (wheel,) = out.iterdir()
    assert summary["output"] == str(wheel)
    return wheel


@pytest.fixture(scope="session")
def extensions(merged: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each build's extension module, as stored in the merged wheel."""
    tree = tmp_path_factory.mktemp("cpulevels-unpacked")
    zipfile.ZipFile(merged).extractall(tree)
    return {label: tree / "cpulevels" / f"_core.{label}{EXT}" for label in LEVELS}


@pytest.mark.parametrize("label, march", [("x86_64_v4", "x86-64-v3"), ("x86_64_v1", "x86-64-v2")])
def test_build_refuses_flags_of_another_level(tmp_path: Path, label: str, march: str) -> None:
    """A build labelled with one level whose flags target another fails to compile."""
    shutil.copytree(EXAMPLE, tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = build_env(label)
    env["CFLAGS"] += f" -march={march}"
    result = run([tool_python(), "setup.py", "-q", "build_ext"], env=env, cwd=tmp_path / "src", check=False)
    assert result.returncode != 0, result.stdout
    assert "the compiler flags do not target the level WHEELMERGE_BUILD_VARIANT names" in result.stderr, result.stderr


def disassembly(path: Path) -> list[str]:
    """The instructions of an ELF file's code sections, one `mnemonic operands` per line."""
    text = run([need_tool("objdump"), "-d", "--no-show-raw-insn", path]).stdout
    return [m[1] for m in re.finditer(r"^\s+[0-9a-f]+:\s+(\S.*)$", text, re.M)]


def test_merged_layout(merged: Path) -> None:
    assert merged.name == "cpulevels-0.1.0-cp311-cp311-linux_x86_64.whl"
    names = {n for n in zipfile.ZipFile(merged).namelist() if ".dist-info/" not in n}
    assert names == {"cpulevels/__init__.py", "cpulevels/_core.pyi", "cpulevels/py.typed",
                     "cpulevels/_wheelmerge.py", "cpulevels/_wheelmerge_rules.py", *(f"cpulevels/_core.{label}{EXT}" for label in LEVELS)}


def test_merged_wheel_verifies(merged: Path, wheelmerge_bin: Path) -> None:
    result = run([wheelmerge_bin, "verify", "--json", merged], env=clean_env({"NO_COLOR": "1"}))
    (report,) = json.loads(result.stdout)["wheels"]
    assert report["valid"] and report["merged"], report
    assert report["loaders"] == ["cpulevels/_wheelmerge.py"]
    (loader,) = json.loads(run([wheelmerge_bin, "inspect", "--json", merged]).stdout)["loaders"]
    assert loader["selector"] == "cpu" and loader["variants"] == list(LEVELS), loader
    assert loader["modules"] == {label: {"cpulevels._core": f"_core.{label}{EXT}"} for label in LEVELS}
    assert loader["build_info"] == {label: {"march": MARCH[level]} for label, level in LEVELS.items()}


def test_each_build_holds_its_levels_instructions(extensions: dict[str, Path]) -> None:
    """v4 uses 512-bit registers (the AVX-512 kernel), v3 256-bit ones and none wider, v1 no
    VEX- or EVEX-encoded instruction at all (every AVX instruction's mnemonic starts with v)."""
    code = {label: disassembly(path) for label, path in extensions.items()}
    zmm = {label: sum("%zmm" in line for line in lines) for label, lines in code.items()}
    ymm = {label: sum("%ymm" in line for line in lines) for label, lines in code.items()}
    vex = {label: [line for line in lines if line.startswith("v")] for label, lines in code.items()}
    assert zmm["x86_64_v4"] > 0 and any("%k" in line for line in code["x86_64_v4"]), "no AVX-512 in v4"
    assert zmm["x86_64_v3"] == 0 and ymm["x86_64_v3"] > 0, (zmm, ymm)
    assert vex["x86_64_v1"] == [], vex["x86_64_v1"][:10]


def test_each_build_keeps_pythons_compile_flags(extensions: dict[str, Path]) -> None:
    """The compiler's own record (DW_AT_producer: the options that shape the code) holds each
    level's -march beside the interpreter's -g and -O level. setuptools (since 75.7) takes a
    CFLAGS variable instead of the interpreter's flags, not after them: a build given only
    CFLAGS=-march=... compiles without optimization (and without -DNDEBUG)."""
    python_flags = python_cflags()
    optimization = [flag for flag in python_flags if flag.startswith("-O")][-1:]
    assert "-g" in python_flags and optimization, f"expected -g and -O in the interpreter's CFLAGS: {python_flags}"
    for label, path in extensions.items():
        info = run([need_tool("readelf"), "--debug-dump=info", path]).stdout
        producers = re.findall(r"DW_AT_producer\s*:.*?(GNU C.*)$", info, re.M)
        assert producers, (f"{path.name} has no debug information: it was compiled without the "
                           f"interpreter's flags ({' '.join(python_flags)})")
        options = producers[0].split()
        assert f"-march={MARCH[LEVELS[label]]}" in options, producers[0]
        assert optimization[0] in options, (
            f"{path.name} was compiled without the interpreter's {optimization[0]}: {producers[0]}")


# --- installed ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def venv(merged: Path, make_venv) -> Venv:
    env = make_venv("cpulevels")
    env.install("--no-deps", merged)
    return env


def vectors() -> tuple[list[int], list[int]]:
    """Two int16 vectors whose length is no multiple of any vector width, with the extremes
    (-32768 * -32768 overflows a 32-bit pairwise sum) at both ends."""
    rng = random.Random(11)
    a = [-32768] * 9 + [rng.randint(-32768, 32767) for _ in range(1000)] + [32767, -32768]
    b = [-32768] * 9 + [rng.randint(-32768, 32767) for _ in range(1000)] + [-32768, -32768]
    return a, b


A, B = vectors()
DOT = sum(x * y for x, y in zip(A, B))
DOT_SHORT = sum(x * y for x, y in zip(A[:5], B[:5]))

# Runs in the installed environment: which build was selected, what it reports, its dot product
# of a list and of array('h') buffers; or the ImportError the import raised.
PROBE = r"""
import array, json, sys
a, b = json.loads(sys.argv[1])
try:
    import cpulevels
    from cpulevels import _wheelmerge
except ImportError as error:
    print(json.dumps({"error": [c.__name__ for c in type(error).__mro__], "message": str(error)}))
    sys.exit(0)
print(json.dumps({"selected": _wheelmerge.selected(), "level": cpulevels.level(),
                  "kernel": cpulevels.kernel(), "dot": cpulevels.dot(a, b),
                  "dot_buffer": cpulevels.dot(array.array("h", a), array.array("h", b)),
                  "dot_short": cpulevels.dot(a[:5], b[:5]), "dot_empty": cpulevels.dot([], [])}))
"""


def probe(venv: Venv, prefix: Sequence[str] = (), variant: str | None = None) -> dict:
    env = clean_env({"WHEELMERGE_VARIANT": variant} if variant else None)
    result = run([*prefix, venv.python, "-c", PROBE, json.dumps([A, B])], env=env, cwd=venv.path,
                 check=False)
    assert result.returncode == 0, (f"the probe ended with {result.returncode} "
                                    f"{'(SIGILL)' if result.returncode == -signal.SIGILL else ''}:\n"
                                    f"{result.stdout}\n{result.stderr}")
    return json.loads(result.stdout.splitlines()[-1])


def assert_runs(found: dict, label: str) -> None:
    level = LEVELS[label]
    assert "error" not in found, found
    assert found == {"selected": label, "level": level, "kernel": KERNELS[level], "dot": DOT,
                     "dot_buffer": DOT, "dot_short": DOT_SHORT, "dot_empty": 0}


def assert_refused(found: dict, label: str, cpu_level: int) -> None:
    """The loader's error: an ImportError that names the build asked for, the CPU's level (by
    its psABI name, x86-64-vN) and the override that selects the highest build it runs."""
    assert "error" in found, f"{label} was imported on a x86-64-v{cpu_level} CPU: {found}"
    assert "ImportError" in found["error"], found
    message = found["message"]
    assert label in message and re.search(rf"\bx86-64-v{cpu_level}\b", message), message
    assert f"WHEELMERGE_VARIANT={expected_build(cpu_level)}" in message, message


def test_this_cpu_selects_its_highest_build(venv: Venv, host_level: int) -> None:
    assert_runs(probe(venv), expected_build(host_level))


@pytest.mark.parametrize("label", LEVELS)
def test_override_on_this_cpu(venv: Venv, host_level: int, label: str) -> None:
    found = probe(venv, variant=label)
    if LEVELS[label] <= host_level:
        assert_runs(found, label)
    else:
        assert_refused(found, label, host_level)


BAD_INPUTS = r"""
import array, sys
import cpulevels
for a, b, error, text in [
        ([1, 2], [1], ValueError, "a has 2 items, b has 1; expected equal lengths"),
        ([1, 32768], [1, 1], OverflowError, "a[1] = 32768 is outside the 16-bit range"),
        ([1], [-32769], OverflowError, "b[0] = -32769 is outside the 16-bit range"),
        (b"ab", b"cd", TypeError, "a is a buffer of format 'B'"),
        (array.array("h", [1]), array.array("i", [1]), TypeError, "b is a buffer of format 'i'"),
        ([1.5], [1], TypeError, "float"),
        (7, [1], TypeError, "expected a sequence of ints")]:
    try:
        cpulevels.dot(a, b)
    except error as raised:
        assert text in str(raised), (text, str(raised))
    else:
        sys.exit(f"dot({a!r}, {b!r}) raised nothing; expected {error.__name__}")
print(cpulevels.level())
"""


def test_dot_rejects_bad_input(venv: Venv, host_level: int) -> None:
    for label in [label for label, level in LEVELS.items() if level <= host_level]:
        result = venv.run("-c", BAD_INPUTS, env={"WHEELMERGE_VARIANT": label})
        assert result.stdout.split() == [str(LEVELS[label])], result.stdout


@pytest.mark.parametrize("cpu", QEMU_CPUS)
def test_emulated_cpu_selects_its_highest_build(venv: Venv, cpu: str) -> None:
    assert_runs(probe(venv, qemu(cpu)), expected_build(QEMU_CPUS[cpu]))


@pytest.mark.parametrize("cpu, label", [(cpu, label) for cpu, level in QEMU_CPUS.items()
                                        for label in LEVELS if LEVELS[label] > level])
def test_emulated_cpu_refuses_builds_above_it(venv: Venv, cpu: str, label: str) -> None:
    assert_refused(probe(venv, qemu(cpu), variant=label), label, QEMU_CPUS[cpu])


@pytest.mark.parametrize("cpu", QEMU_CPUS)
def test_emulated_cpu_override_to_a_lower_build(venv: Venv, cpu: str) -> None:
    assert_runs(probe(venv, qemu(cpu), variant="x86_64_v1"), "x86_64_v1")


def test_v4_build_dies_of_sigill_where_the_loader_refuses_it(extensions: dict[str, Path], host_level: int) -> None:
    """Why the refusal matters: imported directly, past the loader, the v4 build's dot product
    kills an emulated Haswell with SIGILL (AVX-512 is not there)."""
    code = ("import importlib.util, sys\n"
            "spec = importlib.util.spec_from_file_location('cpulevels._core', sys.argv[1])\n"
            "core = importlib.util.module_from_spec(spec); spec.loader.exec_module(core)\n"
            "print(core.level(), core.dot([1] * 40, [2] * 40))\n")
    runnable = expected_build(host_level)
    native = run([tool_python(), "-c", code, extensions[runnable]])
    assert native.stdout.split() == [str(LEVELS[runnable]), "80"]
    emulated = run([*qemu("Haswell"), tool_python(), "-c", code, extensions["x86_64_v4"]], check=False)
    assert emulated.returncode == -signal.SIGILL, (emulated.returncode, emulated.stdout, emulated.stderr)


@pytest.mark.parametrize("cpu", [None, *QEMU_CPUS])
def test_diagnosis_names_the_detected_level(venv: Venv, host_level: int, cpu: str | None) -> None:
    level = host_level if cpu is None else QEMU_CPUS[cpu]
    result = run([*(qemu(cpu) if cpu else []), venv.python, "-m", "cpulevels._wheelmerge"],
                 cwd=venv.path, check=False)
    report = result.stdout
    assert result.returncode == 0, (result.returncode, report, result.stderr)
    # The psABI's name of the level (labels are written x86_64_vN), e.g. "x86-64-v2".
    assert re.search(rf"\bx86-64-v{level}\b", report), report
    assert re.search(rf"^selected: {expected_build(level)}\b", report, re.M), report
