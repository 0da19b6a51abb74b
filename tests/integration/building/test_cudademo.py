"""End to end with real CUDA code: build examples/cudademo against a CUDA 12 toolkit (assembled
from NVIDIA's wheels by scripts/cuda12-toolkit.sh) and against the CUDA 13 toolkit at
/usr/local/cuda, check that each build is made of its own toolkit (headers, libcudart, NVRTC),
merge the two with the real binary, install the merged wheel beside cuda-bindings 12 and 13, and
check which build each process imports and which libcudart it maps.

Nothing here is skipped: a missing toolkit, tool or download fails the suite.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.metadata import Metadata

from conftest import CUDA_BINDINGS, ROOT, Venv, WheelCache, clean_env, run, tool_python

EXAMPLE = ROOT / "examples" / "cudademo"
TOOLKIT_SCRIPT = ROOT / "scripts" / "cuda12-toolkit.sh"
CUDA13_HOME = Path("/usr/local/cuda")
MAJORS = {"cu12": 12, "cu13": 13}
EXT = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so
CORE = f"cudademo/_core{EXT}"
KERNEL = "cudademo/kernels/scale.ptx"
SHARED = ["cudademo/__init__.py", "cudademo/_core.pyi", "cudademo/py.typed"]
# The PTX ISA major of each CUDA major's NVRTC (CUDA 12.x writes PTX 8.x, CUDA 13.x PTX 9.x).
PTX_ISA_MAJOR = {"cu12": 8, "cu13": 9}


def runtime(label: str) -> str:
    return f"cudademo/_libs/libcudart.so.{MAJORS[label]}"


def cudart_version(home: Path) -> int:
    header = home / "include" / "cuda_runtime_api.h"
    if not header.is_file():
        pytest.fail(f"no CUDA toolkit at {home}: {header} is missing", pytrace=False)
    return int(re.search(r"^#define\s+CUDART_VERSION\s+(\d+)", header.read_text(), re.M)[1])


def readelf(path: Path) -> str:
    if shutil.which("readelf") is None:
        pytest.fail("readelf (binutils) is needed to check the builds' dynamic sections", pytrace=False)
    return run(["readelf", "-d", path]).stdout


def dynamic_entries(path: Path, tag: str) -> list[str]:
    """The values of one tag of an ELF file's dynamic section (NEEDED, SONAME, RPATH, ...)."""
    return re.findall(rf"\({tag}\)\s+.*?\[(.*)\]", readelf(path))


# --- the toolkits ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def toolkits() -> dict[str, Path]:
    """The root of each label's toolkit: cu12 assembled by the script, cu13 the installed one."""
    first = run([TOOLKIT_SCRIPT], env=clean_env(), timeout=900)
    cu12 = Path(first.stdout.splitlines()[-1])
    homes = {"cu12": cu12, "cu13": CUDA13_HOME}
    for label, home in homes.items():
        assert cudart_version(home) // 1000 == MAJORS[label], f"{home} is not a CUDA {MAJORS[label]} toolkit"
    return homes


def test_toolkit_script_is_idempotent(toolkits: dict[str, Path]) -> None:
    again = run([TOOLKIT_SCRIPT], env=clean_env(), timeout=60)
    assert Path(again.stdout.splitlines()[-1]) == toolkits["cu12"]
    assert "already assembled" in again.stderr


def test_toolkit_layout(toolkits: dict[str, Path]) -> None:
    home = toolkits["cu12"]
    assert cudart_version(home) == 12090
    for path in ["include/cuda_runtime_api.h", "include/crt/host_defines.h", "include/nvrtc.h",
                 "include/cuda/std/version", "include/thrust/version.h", "lib64/libcudart.so.12",
                 "lib64/libcudart_static.a", "lib64/libnvrtc.so.12", "nvvm/libdevice/libdevice.10.bc"]:
        assert (home / path).is_file(), path
    assert (home / "lib64" / "libcudart.so").readlink() == Path("libcudart.so.12")
    assert (home / "lib64" / "libnvrtc.so").readlink() == Path("libnvrtc.so.12")
    assert (home / "nvvm" / "lib64" / "libnvvm.so.4").resolve().is_file()
    ptxas = run([home / "bin" / "ptxas", "--version"]).stdout
    assert "release 12.9" in ptxas, ptxas
    assert not (home / "bin" / "nvcc").exists(), "the wheels hold no nvcc; nothing may stand in for one"
    assert dynamic_entries(home / "lib64" / "libcudart.so.12", "SONAME") == ["libcudart.so.12"]


def test_toolkit_version_json(toolkits: dict[str, Path]) -> None:
    text = (toolkits["cu12"] / "version.json").read_text()
    assert text.startswith('{\n   "cuda" : {\n      "name" : "CUDA SDK",\n')  # the real file's format
    versions = {key: entry["version"] for key, entry in json.loads(text).items()}
    assert versions == {"cuda": "12.9.1", "cuda_cccl": "12.9.27", "cuda_cudart": "12.9.79",
                        "cuda_nvcc": "12.9.86", "cuda_nvrtc": "12.9.86"}


def test_toolkit_headers_are_self_contained(toolkits: dict[str, Path], tmp_path: Path) -> None:
    """Every header the runtime API pulls in comes from the assembled toolkit. The compiler's
    default search path may hold another toolkit's headers (here /usr/local/include has CUDA
    13's), which would fill any gap silently."""
    home = toolkits["cu12"]
    source = tmp_path / "probe.c"
    source.write_text("#include <cuda_runtime_api.h>\n#include <cuda_runtime.h>\n#include <nvrtc.h>\n")
    for compiler in (["cc", "-x", "c"], ["c++", "-x", "c++"]):
        depends = run([*compiler, "-M", "-I", home / "include", source]).stdout
        headers = [h for h in depends.replace("\\\n", " ").split()[1:] if h != str(source)]
        cuda = [h for h in headers if not h.startswith(("/usr/include/", "/usr/lib/gcc/"))]
        assert cuda and all(h.startswith(f"{home}/include/") for h in cuda), cuda


# --- the two builds ----------------------------------------------------------------------------

def build_env(home: Path, major: int) -> dict[str, str]:
    """What `wheelmerge build` sets for a variant's build."""
    env = clean_env()
    env.update(CUDA_HOME=str(home), CUDA_PATH=str(home), PATH=f"{home / 'bin'}:{env['PATH']}",
               WHEELMERGE_BUILD_CUDA_MAJOR=str(major))
    if (home / "bin" / "nvcc").exists():
        env["CUDACXX"] = str(home / "bin" / "nvcc")
    return env


def copy_example(destination: Path) -> None:
    shutil.copytree(EXAMPLE, destination, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.so.*"))


@dataclass(frozen=True)
class Build:
    """One build of cudademo: its wheel, and the wheel unpacked."""

    wheel: Path
    tree: Path


@pytest.fixture(scope="session")
def builds(toolkits: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Build]:
    """cudademo built for each label (`python -m build --wheel --no-isolation` with the tools'
    Python), each from its own copy of the project, both at once."""
    base = tmp_path_factory.mktemp("cudademo")
    running = {}
    for label, home in toolkits.items():
        source = base / f"src-{label}"
        copy_example(source)
        log = (base / f"build-{label}.log").open("w")
        running[label] = (subprocess.Popen(
            [str(tool_python()), "-m", "build", "--wheel", "--no-isolation", "-o",
             str(base / "wheels" / label), str(source)],
            stdout=log, stderr=subprocess.STDOUT, cwd=source, env=build_env(home, MAJORS[label])), log)
    result = {}
    for label, (process, log) in running.items():
        status = process.wait(timeout=600)
        log.close()
        if status != 0:
            pytest.fail(f"building cudademo for {label} failed ({status}):\n"
                        f"{Path(log.name).read_text()}", pytrace=False)
        wheels = sorted((base / "wheels" / label).glob("*.whl"))
        assert len(wheels) == 1, wheels
        tree = base / f"unpacked-{label}"
        zipfile.ZipFile(wheels[0]).extractall(tree)
        result[label] = Build(wheels[0], tree)
    return result


def test_build_names_and_metadata(builds: dict[str, Build]) -> None:
    for label, build in builds.items():
        assert build.wheel.name == f"cudademo-0.1.0+{label}-cp311-cp311-linux_x86_64.whl"
        (metadata_file,) = build.tree.glob("*.dist-info/METADATA")
        metadata = Metadata.from_email(metadata_file.read_bytes(), validate=True)
        assert str(metadata.version) == f"0.1.0+{label}"
        major = MAJORS[label]
        assert [str(r) for r in metadata.requires_dist] == [f"cuda-bindings<{major + 1},>={major}.0"]


def test_build_contents(builds: dict[str, Build]) -> None:
    for label, build in builds.items():
        files = sorted(str(p.relative_to(build.tree)) for p in build.tree.rglob("*")
                       if p.is_file() and ".dist-info/" not in str(p))
        assert files == sorted([*SHARED, CORE, KERNEL, runtime(label)])


def test_shared_files_are_identical(builds: dict[str, Build]) -> None:
    for path in SHARED:
        assert (builds["cu12"].tree / path).read_bytes() == (builds["cu13"].tree / path).read_bytes(), path


def test_core_needs_its_own_libcudart(builds: dict[str, Build]) -> None:
    for label, build in builds.items():
        needed = dynamic_entries(build.tree / CORE, "NEEDED")
        assert [n for n in needed if n.startswith("libcudart")] == [f"libcudart.so.{MAJORS[label]}"], needed
        assert dynamic_entries(build.tree / CORE, "RPATH") == ["$ORIGIN/_libs"]


def test_bundled_libcudart_is_the_toolkits(builds: dict[str, Build], toolkits: dict[str, Path]) -> None:
    for label, build in builds.items():
        bundled = build.tree / runtime(label)
        assert dynamic_entries(bundled, "SONAME") == [bundled.name]
        toolkit_copy = toolkits[label] / "lib64" / bundled.name
        assert bundled.read_bytes() == toolkit_copy.read_bytes(), f"{bundled} is not {toolkit_copy}"


def test_kernels_are_each_toolkits_ptx(builds: dict[str, Build], toolkits: dict[str, Path]) -> None:
    texts = {label: (build.tree / KERNEL).read_text() for label, build in builds.items()}
    assert texts["cu12"] != texts["cu13"]
    for label, text in texts.items():
        version = cudart_version(toolkits[label])
        assert f"Cuda compilation tools, release {version // 1000}.{version % 1000 // 10}," in text, text[:300]
        assert re.search(r"^\.version (\d+)\.\d+$", text, re.M)[1] == str(PTX_ISA_MAJOR[label])
        assert re.search(r"^\.target (\S+)$", text, re.M)[1] == "sm_75"
        assert ".visible .entry cudademo_scale(" in text


@pytest.mark.parametrize("env, message", [
    ({"CUDA_HOME": ""}, "set CUDA_HOME"),
    ({"WHEELMERGE_BUILD_CUDA_MAJOR": "13"}, "WHEELMERGE_BUILD_CUDA_MAJOR=13, but the toolkit"),
])
def test_build_refuses_a_missing_or_mismatched_toolkit(toolkits: dict[str, Path], tmp_path: Path,
                                                       env: dict[str, str], message: str) -> None:
    copy_example(tmp_path / "src")
    environment = build_env(toolkits["cu12"], 12)
    environment.update(env)
    result = run([tool_python(), "setup.py", "--version"], env=environment, cwd=tmp_path / "src", check=False)
    assert result.returncode != 0 and message in result.stderr, result.stderr


# --- merged and installed ----------------------------------------------------------------------

@pytest.fixture(scope="session")
def merged(builds: dict[str, Build], wheelmerge_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cudademo-merged")
    run([wheelmerge_bin, "merge", builds["cu12"].wheel, builds["cu13"].wheel, "-o", out],
        env=clean_env({"NO_COLOR": "1"}))
    (wheel,) = out.iterdir()
    return wheel


def test_merged_layout(merged: Path) -> None:
    assert merged.name == "cudademo-0.1.0-cp311-cp311-linux_x86_64.whl"
    names = {n for n in zipfile.ZipFile(merged).namelist() if ".dist-info/" not in n}
    variant = {f"cudademo/_core.{label}{EXT}" for label in MAJORS}
    variant |= {f"cudademo/_libs/libcudart.{label}.so.{major}" for label, major in MAJORS.items()}
    variant |= {f"cudademo/kernels/scale.{label}.ptx" for label in MAJORS}
    assert names == {*SHARED, "cudademo/_wheelmerge.py", "cudademo/_wheelmerge_rules.py", *variant}


# Runs in an installed environment: what was imported, and which libcudart the process maps.
PROBE = r"""
import json, pathlib
import cudademo, cudademo._core
maps = pathlib.Path("/proc/self/maps").read_text().splitlines()
try:
    scaled = cudademo.scale([1.0, 2.0, -0.5], 3.0)
except RuntimeError as error:
    scaled = "RuntimeError: " + str(error)
print(json.dumps({
    "runtime_version": cudademo.runtime_version(),
    "build_major": cudademo.build_major(),
    "device_count": cudademo.device_count(),
    "selected": cudademo._wheelmerge.selected(),
    "core": cudademo._core.__file__,
    "kernel": str(cudademo.kernel_path()),
    "package": str(pathlib.Path(cudademo.__file__).resolve().parent),
    "cudart": sorted({line.split()[-1] for line in maps if "libcudart" in line}),
    "scaled": scaled,
}))
"""


@pytest.fixture(scope="session")
def installed(merged: Path, make_venv, wheel_cache: WheelCache) -> dict[str, Venv]:
    """A fresh environment per label holding the merged wheel and that label's cuda-bindings."""
    venvs = {}
    for label in MAJORS:
        venv = make_venv(f"cudademo-{label}")
        venv.install(wheel_cache.requirement(label), merged, find_links=[wheel_cache.path])
        venvs[label] = venv
    return venvs


@pytest.mark.parametrize("label", list(MAJORS))
def test_installed_imports_the_build_of_its_cuda_bindings(installed: dict[str, Venv], label: str,
                                                           toolkits: dict[str, Path]) -> None:
    major = MAJORS[label]
    report = json.loads(installed[label].run("-c", PROBE).stdout)
    assert f"Version: {CUDA_BINDINGS[label]}\n" in installed[label].pip("show", "cuda-bindings").stdout
    assert report["selected"] == label
    assert report["runtime_version"] // 1000 == major
    assert report["runtime_version"] == cudart_version(toolkits[label])  # the bundled copy's
    assert report["build_major"] == major
    package = Path(report["package"])
    assert Path(report["core"]) == package / f"_core.{label}{EXT}"
    assert Path(report["kernel"]) == package / "kernels" / f"scale.{label}.ptx"
    # Exactly one libcudart, the selected build's private copy: not the other build's, and not
    # a system one (/usr/local/lib holds CUDA 13's, on the default search path).
    assert report["cudart"] == [str(package / "_libs" / f"libcudart.{label}.so.{major}")]
    if report["device_count"] == 0:
        assert report["scaled"].startswith("RuntimeError: cudademo.scale needs a CUDA GPU"), report["scaled"]
    else:
        assert report["scaled"] == [3.0, 6.0, -1.5]

