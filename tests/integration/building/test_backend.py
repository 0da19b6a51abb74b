"""wheelmerge as a build backend (`build-backend = "wheelmerge.backend"`), and wheelmerge's own
installability.

The wheelmerge wheel is made once (`pip wheel` of this repository, scikit-build-core, packing
the executable under test) and cached under ~/.cache/wheelmerge/builds/wheelmerge-wheel/KEY/
(build_cache.py), KEY a hash of the sources and the executable; $WHEELMERGE_WHEEL names a
prebuilt wheel to use instead. Build frontends get it from a --find-links directory
(PIP_FIND_LINKS for pip and build, --find-links for uv) that also holds wmtest-backends, the
inner backends of backend_projects/backends/ packed into a wheel; everything else a build asks
for (setuptools, scikit-build-core) comes from PyPI.

Projects (backend_projects/README.md): examples/wmdemo switched to the wheelmerge backend over
setuptools, skdemo (scikit-build-core, a CMake C extension), recpkg (an inner backend that records
its config_settings), failing (refuses CUDA 12).

Toolkits: CUDA 13 is $CUDA_HOME (else /usr/local/cuda); CUDA 12 is the root that
scripts/cuda12-toolkit.sh assembles (.toolkits/cuda-12). No CUDA code is compiled: the projects
read the major from WHEELMERGE_BUILD_CUDA_MAJOR and skdemo reads CUDA_VERSION from the toolkit's
cuda.h. Every frontend runs with a controlled environment (`frontend_env`): CUDA_HOME is the
CUDA 13 root, nothing else names a toolkit unless a test says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest

import build_cache
import wheelgen
from conftest import CUDA_BINDINGS, ROOT, clean_env, run, tool_python
from test_licenses import assert_licenses_in_sdist, assert_licenses_in_wheel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PY = tool_python()
PROJECTS = Path(__file__).resolve().parents[1] / "support" / "backend_projects"
CACHE = build_cache.cache_home()
UV_VERSION = "0.13.9"
LABELS = ("cu12", "cu13")
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

# What goes into the wheelmerge wheel: its cache key hashes these (files, or every file below).
WHEEL_SOURCES = ("pyproject.toml", "CMakeLists.txt", "README.md", "LICENSE", "THIRD_PARTY_NOTICES.md", "cmake", "merger",
                 "cli", "driver", "ci", "python", "templates", "third_party", "scripts/isal.sh")
# Variables that would pick a toolkit or a major if they leaked in from outside.
_TOOLKIT_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDA_ROOT", "CUDAToolkit_ROOT",
                      "WMDEMO_CUDA_MAJOR", "WHEELMERGE_BUILD_CUDA_MAJOR", "WMTEST_RECORD")


def output(result: subprocess.CompletedProcess[str]) -> str:
    return f"$ {' '.join(map(str, result.args))}\n--- exit status {result.returncode}\n" \
           f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


# --- the wheelmerge wheel ----------------------------------------------------------------------

def _wheel_of(executable: Path, out: Path) -> None:
    # The project's own PEP 517 build (scikit-build-core) packing the executable under test
    # (WHEELMERGE_PREBUILT, as scripts/static/wheels.sh packs the static ones): the backend and
    # its installation are what these suites check. That the sdist compiles into a working wheel
    # is checked by the release workflow (.github/workflows/release.yml), on the sdist it uploads;
    # here, that the sdist holds every file the compile reads
    # (test_sdist_holds_every_file_the_build_reads).
    run([PY, "-m", "pip", "wheel", "--no-deps", "-w", out,
         f"--config-settings=cmake.define.WHEELMERGE_PREBUILT={executable}", ROOT], timeout=900)


@pytest.fixture(scope="session")
def wheelmerge_wheel(wheelmerge_bin: Path) -> Path:
    """The wheelmerge wheel of this source tree holding the executable under test, made once per
    hash of the sources and the executable's bytes (build_cache.py)."""
    if os.environ.get("WHEELMERGE_WHEEL"):
        given = Path(os.environ["WHEELMERGE_WHEEL"]).resolve()
        assert given.is_file(), f"WHEELMERGE_WHEEL={given} is not a file"
        return given
    key = build_cache.key_of(WHEEL_SOURCES, wheelmerge_bin, build_cache.tool_version(PY, "-m", "pip", "--version"))
    built = sorted(build_cache.cached("wheelmerge-wheel", key, lambda out: _wheel_of(wheelmerge_bin, out))
                   .glob("wheelmerge_cuda-*.whl"))
    assert len(built) == 1, f"pip wheel made {built}"
    return built[0]


@pytest.fixture(scope="session")
def find_links(wheelmerge_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A --find-links directory: the wheelmerge wheel and wmtest-backends. uv takes a find-links
    directory for an index whose wheels never change, and keeps what it unpacked by the
    directory's address and the wheel's file name (both wheels are 0.1.0 / 1.0 on every commit),
    so the directory is named for what it holds: a test run at a path an earlier run used, with
    other contents, would otherwise build with that run's wheelmerge."""
    source = PROJECTS / "backends" / "wmtest_backends"
    files = {f"wmtest_backends/{p.name}": p.read_bytes() for p in sorted(source.glob("*.py"))}
    digest = hashlib.sha256(wheelmerge_wheel.read_bytes())
    for name, data in files.items():
        digest.update(name.encode() + b"\0" + data)
    links = tmp_path_factory.mktemp(f"find-links-{digest.hexdigest()[:16]}")
    shutil.copy2(wheelmerge_wheel, links / wheelmerge_wheel.name)
    wheelgen.build_wheel(links / wheelgen.wheel_filename("wmtest_backends", "1.0", "py3-none-any"), files,
                         name="wmtest_backends", version="1.0", tags="py3-none-any", root_is_purelib=True)
    return links


@pytest.fixture(scope="session")
def uv() -> Path:
    """uv, pinned, from PyPI into a tools venv under ~/.cache/wheelmerge (made once)."""
    home = CACHE / f"uv-{UV_VERSION}"
    exe = home / "bin" / "uv"
    if not exe.is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".uv-{UV_VERSION}-", dir=CACHE))
        run([PY, "-m", "venv", "--without-pip", staging])
        run([PY, "-m", "pip", "--python", staging / "bin" / "python", "install", "--quiet", f"uv=={UV_VERSION}"])
        try:
            staging.rename(home)
        except OSError:
            shutil.rmtree(staging)
    version = run([exe, "--version"]).stdout
    assert version.startswith(f"uv {UV_VERSION}"), version
    return exe


# --- toolkits ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class CudaToolkits:
    cu12: Path
    cu13: Path
    cuda_version: Mapping[str, int]  # CUDA_VERSION of each root's include/cuda.h

    def __getitem__(self, label: str) -> Path:
        return {"cu12": self.cu12, "cu13": self.cu13}[label]


def _cuda_version(root: Path) -> int:
    header = root / "include" / "cuda.h"
    match = re.search(r"^#define CUDA_VERSION (\d+)", header.read_text(errors="replace"), re.M) if header.is_file() else None
    assert match, f"{header}: no #define CUDA_VERSION"
    return int(match.group(1))


@pytest.fixture(scope="session")
def cuda_toolkits() -> CudaToolkits:
    cu13 = Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda")
    if not (cu13 / "include" / "cuda.h").is_file():
        pytest.fail(f"no CUDA 13 toolkit at {cu13} (set CUDA_HOME)", pytrace=False)
    made = run(["bash", ROOT / "scripts" / "cuda12-toolkit.sh"], timeout=1800)
    cu12 = Path(made.stdout.strip().splitlines()[-1])
    versions = {"cu12": _cuda_version(cu12), "cu13": _cuda_version(cu13)}
    assert versions["cu12"] // 1000 == 12 and versions["cu13"] // 1000 == 13, versions
    return CudaToolkits(cu12=cu12, cu13=cu13, cuda_version=versions)


def frontend_env(links: Path, toolkits: CudaToolkits, tmp: Path,
                 extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment for a build frontend: CUDA_HOME is the CUDA 13 root, no other toolkit
    hint, wheelmerge from `links`, temporary files under `tmp`."""
    env = clean_env()
    for name in list(env):
        if name in _TOOLKIT_VARIABLES or re.fullmatch(r"WHEELMERGE_CUDA_\d+", name) or name.startswith("UV_"):
            del env[name]
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(CUDA_HOME=str(toolkits.cu13), PIP_FIND_LINKS=str(links), TMPDIR=str(tmp),
               UV_CACHE_DIR=str(CACHE / "uv-cache"), UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    env.update(extra or {})
    return env


def frontend(command: Sequence[str | Path], env: Mapping[str, str], cwd: Path,
             timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, env=dict(env),
                          cwd=cwd, timeout=timeout)


# --- projects ----------------------------------------------------------------------------------

WMDEMO_BUILD_SYSTEM = """[build-system]
requires = ["wheelmerge-cuda", "setuptools>=77"]
build-backend = "wheelmerge.backend"

"""
WMDEMO_WHEELMERGE = """
[tool.wheelmerge]
backend = "setuptools.build_meta"
cuda = [12, 13]
"""


def make_project(name: str, dest: Path) -> Path:
    """A copy of a project: `wmdemo` is examples/wmdemo switched to the wheelmerge backend (with
    backend_projects/wmdemo/ laid over it), the others come from backend_projects/."""
    ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "*.so", "*.so.*")
    if name == "wmdemo":
        shutil.copytree(ROOT / "examples" / "wmdemo", dest, ignore=ignore)
        shutil.copytree(PROJECTS / "wmdemo", dest, dirs_exist_ok=True)
        pyproject = dest / "pyproject.toml"
        text, count = re.subn(r"(?ms)^\[build-system\]\n.*?(?=^\[)", WMDEMO_BUILD_SYSTEM, pyproject.read_text(), count=1)
        assert count == 1, "examples/wmdemo/pyproject.toml has no [build-system] table followed by another"
        pyproject.write_text(text + WMDEMO_WHEELMERGE)
    else:
        shutil.copytree(PROJECTS / name, dest, ignore=ignore)
    return dest


def set_inner_backend(project: Path, spec: str) -> None:
    pyproject = project / "pyproject.toml"
    text, count = re.subn(r'(?m)^backend = "[^"]*"$', f'backend = "{spec}"', pyproject.read_text())
    assert count == 1
    pyproject.write_text(text)


# --- merged wheels -----------------------------------------------------------------------------

def inspect_merged(wheelmerge_bin: Path, wheel: Path, package: str) -> dict[str, Any]:
    """`wheelmerge inspect --json` of a merged wheel, checked: variants cu12 and cu13, one loader."""
    result = run([wheelmerge_bin, "inspect", wheel, "--json"], check=False)
    assert result.returncode == 0, output(result)
    report = json.loads(result.stdout)
    assert report["merged"] is True, report
    assert report["variants"] == list(LABELS), report["variants"]
    assert [l["package"] for l in report["loaders"]] == [package], report["loaders"]
    assert report["loaders"][0]["variants"] == list(LABELS), report["loaders"]
    with zipfile.ZipFile(wheel) as z:
        assert f"{package}/_wheelmerge.py" in z.namelist()
    return report


WMDEMO_PROBE = """
import json, wmdemo
from wmdemo import _wheelmerge
print(json.dumps({"selected": _wheelmerge.selected(), "build_major": wmdemo.build_major(),
                  "runtime": wmdemo.runtime_info(), "build_info": _wheelmerge.build_info()}))
"""
SKDEMO_PROBE = """
import json, skdemo
from skdemo import _wheelmerge
print(json.dumps({"selected": _wheelmerge.selected(), "build_major": skdemo.build_major(),
                  "cuda_version": skdemo.cuda_version(), "flavor": skdemo.flavor(),
                  "build_info": _wheelmerge.build_info()}))
"""


def install_and_import(wheel: Path, project: str, make_venv, wheel_cache, toolkits: CudaToolkits,
                       name: str, flavor: str | None = None) -> None:
    """Installs the merged wheel into a fresh venv per major beside that major's cuda-bindings
    (the two at once) and checks that the import selects the matching build."""
    def one(label: str) -> None:
        major = int(label[2:])
        venv = make_venv(f"{name}-{label}")
        requirement = f"{wheel}[{label}]" if project == "wmdemo" else str(wheel)  # wmdemo's extras
        venv.install(requirement, wheel_cache.requirement(label), find_links=[wheel_cache.path])
        seen = json.loads(venv.run("-c", WMDEMO_PROBE if project == "wmdemo" else SKDEMO_PROBE).stdout)
        assert seen["selected"] == label, seen
        assert seen["build_major"] == major, seen
        assert seen["build_info"]["cuda_version"].startswith(f"{major}."), seen
        if project == "wmdemo":
            assert seen["runtime"]["core_build_major"] == major, seen
            assert seen["runtime"]["nested_build_major"] == major, seen
            assert seen["runtime"]["runtime_library_major"] == major, seen
        else:
            assert seen["cuda_version"] == toolkits.cuda_version[label], seen
            assert seen["flavor"] == flavor, seen
        bindings = venv.run("-c", "import importlib.metadata as m; print(m.version('cuda-bindings'))").stdout.strip()
        assert bindings == CUDA_BINDINGS[label]

    with ThreadPoolExecutor(len(LABELS)) as pool:
        for future in [pool.submit(one, label) for label in LABELS]:
            future.result()


# --- (1) the wheelmerge wheel and its installation ---------------------------------------------

def test_sdist_holds_every_file_the_build_reads(tmp_path):
    """The sdist holds every tracked file below what the wheel is made from (WHEEL_SOURCES: the
    CMake project, its sources and templates, ISA-L's patches and script, the Python package),
    so a compile from it finds them; the release workflow compiles the uploaded sdist."""
    run([PY, "-m", "build", "--sdist", "--outdir", tmp_path, ROOT], timeout=600)
    (sdist,) = tmp_path.glob("wheelmerge_cuda-*.tar.gz")
    with tarfile.open(sdist) as tar:
        top = f"{sdist.name.removesuffix('.tar.gz')}/"
        members = {m.name.removeprefix(top) for m in tar.getmembers() if m.isfile()}
    tracked = run(["git", "-C", ROOT, "ls-files", "--", *WHEEL_SOURCES]).stdout.split()
    assert len(tracked) > 100, tracked
    missing = sorted(set(tracked) - members)
    assert not missing, f"{sdist.name} lacks {missing}"


def test_sdist_is_wheelmerge_cuda_with_its_license_files(tmp_path):
    run([PY, "-m", "build", "--sdist", "--outdir", tmp_path, ROOT], timeout=600)
    (sdist,) = tmp_path.glob("wheelmerge_cuda-*.tar.gz")
    assert_licenses_in_sdist(sdist)
    checked = run([PY, "-m", "twine", "check", "--strict", sdist], check=False)
    assert checked.returncode == 0, output(checked)


def test_wheel_installs_the_command_and_the_module(wheelmerge_wheel, make_venv):
    venv = make_venv("wheelmerge-from-wheel")
    venv.install(wheelmerge_wheel)
    on_path = run(["wheelmerge", "--version"], env=clean_env({"PATH": f"{venv.path / 'bin'}:{os.environ['PATH']}"}),
                  cwd=venv.path)
    assert on_path.stdout.strip() == VERSION, output(on_path)
    assert shutil.which("wheelmerge", path=str(venv.path / "bin")) == str(venv.path / "bin" / "wheelmerge")
    assert venv.run("-m", "wheelmerge", "--version").stdout.strip() == VERSION
    # The executable found by the package is the one installed with it, and it runs.
    exe = Path(venv.run("-c", "import wheelmerge; print(wheelmerge.executable())").stdout.strip())
    assert str(exe).startswith(str(venv.path) + os.sep) and os.access(exe, os.X_OK), exe
    assert "build a project once per CUDA major" in venv.run("-m", "wheelmerge", "build", "--help").stdout
    # The backend module imports (its hooks are looked up lazily, against a project).
    venv.run("-c", "import wheelmerge.backend")


def test_wheel_is_a_valid_wheel(wheelmerge_wheel, wheelmerge_bin, tmp_path):
    assert re.fullmatch(rf"wheelmerge_cuda-{re.escape(VERSION)}-[^-]+-[^-]+-[^-]+\.whl", wheelmerge_wheel.name), wheelmerge_wheel
    inspected = run([wheelmerge_bin, "inspect", wheelmerge_wheel], check=False)
    assert inspected.returncode == 0, output(inspected)
    verified = run([wheelmerge_bin, "verify", wheelmerge_wheel], check=False)
    assert verified.returncode == 0, output(verified)

    with zipfile.ZipFile(wheelmerge_wheel) as z:
        names = set(z.namelist())
        executable = z.getinfo("wheelmerge/_bin/wheelmerge")
        assert (executable.external_attr >> 16) & 0o111, oct(executable.external_attr >> 16)
        assert z.read("wheelmerge/_bin/wheelmerge")[:4] == b"\x7fELF"
        entry_points = z.read(f"wheelmerge_cuda-{VERSION}.dist-info/entry_points.txt").decode()
    assert {"wheelmerge/__init__.py", "wheelmerge/__main__.py", "wheelmerge/backend.py"} <= names, names
    assert re.search(r"^wheelmerge = wheelmerge\.__main__:main$", entry_points, re.M), entry_points
    # The distribution is wheelmerge-cuda; its license and the third-party notices are in
    # .dist-info/licenses/ (PEP 639).
    assert_licenses_in_wheel(wheelmerge_wheel)
    checked = run([PY, "-m", "twine", "check", "--strict", wheelmerge_wheel], check=False)
    assert checked.returncode == 0, output(checked)

    unpacked = run([PY, "-m", "wheel", "unpack", "-d", tmp_path / "unpacked", wheelmerge_wheel], check=False)
    assert unpacked.returncode == 0, output(unpacked)
    tree = tmp_path / "unpacked" / f"wheelmerge_cuda-{VERSION}"
    assert os.access(tree / "wheelmerge" / "_bin" / "wheelmerge", os.X_OK)
    if "WHEELMERGE_WHEEL" not in os.environ:
        assert (tree / "wheelmerge" / "backend.py").read_bytes() == (ROOT / "python" / "wheelmerge" / "backend.py").read_bytes()

    root = tmp_path / "root"
    installed = run([PY, "-m", "installer", "--validate-record", "all", "--destdir", root, wheelmerge_wheel], check=False)
    assert installed.returncode == 0, output(installed)
    binaries = list(root.rglob("wheelmerge/_bin/wheelmerge"))
    assert len(binaries) == 1 and os.access(binaries[0], os.X_OK), binaries
    assert run([binaries[0], "--version"]).stdout.strip() == VERSION
    assert [p for p in root.rglob("bin/wheelmerge") if "_bin" not in p.parts], "no console script installed"


# --- (2) build frontends, each giving one merged wheel -----------------------------------------

FRONTENDS = ("build-wheel", "build", "pip-wheel", "uv-build")
MATRIX_PROJECTS = ("wmdemo", "skdemo")


@dataclass
class FrontendRun:
    project: Path
    out: Path
    result: subprocess.CompletedProcess[str]
    seconds: float
    flavor: str


def run_frontend(name: str, how: str, base: Path, links: Path, toolkits: CudaToolkits, uv: Path) -> FrontendRun:
    """Builds a fresh copy of project `name` with frontend `how`. The CUDA 12 toolkit is given
    as -C wheelmerge.cuda-12 (build --wheel, pip wheel, uv build) or as WHEELMERGE_CUDA_12
    (build); CUDA 13 is found through CUDA_HOME, except for pip wheel, which names it too."""
    work = base / f"{name}-{how}"
    project = make_project(name, work / name)
    out = work / "out"
    flavor = f"flavor-{how}"
    inner = ["-C", f"cmake.define.SKDEMO_FLAVOR={flavor}"] if name == "skdemo" else []
    cuda12 = f"wheelmerge.cuda-12={toolkits.cu12}"
    extra = {}
    if how == "build-wheel":
        command = [PY, "-m", "build", "--wheel", "-o", out, "-C", cuda12, *inner, project]
    elif how == "build":  # the sdist, then the wheel from it
        command = [PY, "-m", "build", "-o", out, *inner, project]
        extra["WHEELMERGE_CUDA_12"] = str(toolkits.cu12)
    elif how == "pip-wheel":
        command = [PY, "-m", "pip", "wheel", "--no-deps", "-w", out, "-C", cuda12,
                   "-C", f"wheelmerge.cuda-13={toolkits.cu13}", "-C", "wheelmerge.jobs=2", *inner, project]
    else:  # uv build: the sdist, then the wheel from it
        command = [uv, "build", "--no-config", "--python", PY, "--find-links", links, "-o", out,
                   "-C", cuda12, "-C", "wheelmerge.jobs=2", *inner, project]
    start = time.monotonic()
    result = frontend(command, frontend_env(links, toolkits, work / "tmp", extra), cwd=work)
    return FrontendRun(project, out, result, time.monotonic() - start, flavor)


@pytest.fixture(scope="session")
def frontend_builds(find_links, cuda_toolkits, uv, tmp_path_factory):
    """Every (project, frontend) build, started at once (three at a time) on first use."""
    base = tmp_path_factory.mktemp("frontends")
    pool = ThreadPoolExecutor(3)
    futures: dict[tuple[str, str], Future[FrontendRun]] = {
        (name, how): pool.submit(run_frontend, name, how, base, find_links, cuda_toolkits, uv)
        for how in FRONTENDS for name in MATRIX_PROJECTS}
    yield futures
    pool.shutdown(wait=True)


SDIST_NEEDS = {
    "wmdemo": ("setup.py", "pyproject.toml", "csrc/core.c", "csrc/nested.c", "csrc/wmdemo_rt.c", "csrc/wmdemo_rt.h",
               "wmdemo/__init__.py", "wmdemo/sub/__init__.py"),
    "skdemo": ("pyproject.toml", "CMakeLists.txt", "src/core.c", "src/skdemo/__init__.py"),
}


@pytest.mark.parametrize("how", FRONTENDS)
@pytest.mark.parametrize("name", MATRIX_PROJECTS)
def test_frontend_builds_one_merged_wheel(name, how, frontend_builds, wheelmerge_bin, wheel_cache,
                                          make_venv, cuda_toolkits):
    built = frontend_builds[(name, how)].result()
    assert built.result.returncode == 0, output(built.result)
    wheels = sorted(built.out.glob("*.whl"))
    assert len(wheels) == 1, f"expected one merged wheel, found {wheels}\n{output(built.result)}"
    wheel = wheels[0]
    version = "0.1.0" if name == "wmdemo" else "0.2.0"
    assert re.fullmatch(rf"{name}-{re.escape(version)}-(cp3\d+)-\1-linux_x86_64\.whl", wheel.name), wheel.name

    sdists = sorted(built.out.glob("*.tar.gz"))
    if how in ("build", "uv-build"):
        # The wheel was built from this sdist: it holds what the build needs.
        assert len(sdists) == 1, sdists
        with tarfile.open(sdists[0]) as tar:
            members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
            pyproject = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/pyproject.toml")
                                             and m.name.count("/") == 1)).read().decode()
        missing = [f for f in SDIST_NEEDS[name] if f not in members]
        assert not missing, f"{sdists[0].name} lacks {missing}: {sorted(members)}"
        assert 'build-backend = "wheelmerge.backend"' in pyproject
        # One version for both: the sdist's is the merged wheel's (uv build checks this itself).
        assert sdists[0].name == f"{name}-{version}.tar.gz", sdists[0].name
    else:
        assert not sdists, sdists

    if how in ("build-wheel", "build", "uv-build"):
        # wheelmerge's progress reaches the frontend's output (pip shows it only on failure).
        both = built.result.stdout + built.result.stderr
        for label in LABELS:
            assert re.search(rf"^\[{label}\] CUDA {label[2:]}\.\S* at \S+", both, re.M), output(built.result)

    inspect_merged(wheelmerge_bin, wheel, name)
    install_and_import(wheel, name, make_venv, wheel_cache, cuda_toolkits, f"{name}-{how}", built.flavor)


# --- (3) editable installs ---------------------------------------------------------------------

def editable_install(venv, project: Path, settings: Sequence[str], env: Mapping[str, str]):
    args = [a for s in settings for a in ("--config-settings", s)]
    return frontend([PY, "-m", "pip", "--python", venv.python, "install", "--no-deps", "-e", project, *args],
                    env, cwd=venv.path)


def test_editable_install_builds_the_variant_asked_for(find_links, cuda_toolkits, make_venv, tmp_path):
    """scikit-build-core's editable install of skdemo, cu13 asked for while CUDA 12 is also
    given: the module is built against CUDA 13 (cuda.h of the CUDA 13 root) and inner settings
    still reach CMake."""
    project = make_project("skdemo", tmp_path / "skdemo")
    venv = make_venv("editable-skdemo")
    env = frontend_env(find_links, cuda_toolkits, tmp_path / "tmp")
    result = editable_install(venv, project, ["wheelmerge.editable-variant=cu13", f"wheelmerge.cuda-12={cuda_toolkits.cu12}",
                                              "cmake.define.SKDEMO_FLAVOR=editable"], env)
    assert result.returncode == 0, output(result)
    seen = json.loads(venv.run("-c", "import json, skdemo; print(json.dumps({'major': skdemo.build_major(), "
                               "'cuda': skdemo.cuda_version(), 'flavor': skdemo.flavor(), 'file': skdemo.__file__}))").stdout)
    assert seen == {"major": 13, "cuda": cuda_toolkits.cuda_version["cu13"], "flavor": "editable",
                    "file": str(project / "src" / "skdemo" / "__init__.py")}, seen


def read_record(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.parametrize("toolkits_given", ["cuda-12 and cuda-13", "cuda-13 only"])
def test_editable_install_without_a_variant_takes_the_first_toolkit_found(toolkits_given, find_links, cuda_toolkits,
                                                                         make_venv, tmp_path):
    """No wheelmerge.editable-variant: the first variant whose toolkit is found. With both
    toolkits findable that is cu12; with only CUDA 13 findable (no CUDA 12 hint, CUDA_HOME is 13)
    it is cu13. recpkg's setup.py writes the major into recpkg/_variant.py, in place."""
    project = make_project("recpkg", tmp_path / "recpkg")
    record = tmp_path / "record.jsonl"
    extra = {"WMTEST_RECORD": str(record)}
    if toolkits_given == "cuda-12 and cuda-13":
        extra["WHEELMERGE_CUDA_12"] = str(cuda_toolkits.cu12)
    expected = 12 if toolkits_given == "cuda-12 and cuda-13" else 13
    venv = make_venv(f"editable-recpkg-{expected}")
    result = editable_install(venv, project, [], frontend_env(find_links, cuda_toolkits, tmp_path / "tmp", extra))
    assert result.returncode == 0, output(result)
    seen = json.loads(venv.run("-c", "import json, recpkg, recpkg._variant as v; "
                               "print(json.dumps({'major': v.MAJOR, 'file': recpkg.__file__}))").stdout)
    assert seen == {"major": expected, "file": str(project / "recpkg" / "__init__.py")}, seen
    calls = read_record(record)
    editable = [c for c in calls if c["hook"] == "build_editable"]
    assert len(editable) == 1 and editable[0]["major"] == str(expected), calls
    # Every editable hook ran in the chosen variant's environment, with no wheelmerge.* setting.
    for call in calls:
        if "editable" in call["hook"]:
            assert call["major"] == str(expected), call
        assert not any(k.startswith("wheelmerge.") for k in (call["config_settings"] or {})), call


# --- (4) a failing variant ---------------------------------------------------------------------

SENTINEL = "bkfail-sentinel-5e1d: this project refuses to build for CUDA 12"


@pytest.mark.parametrize("how", ["build-wheel", "pip-wheel", "uv-build"])
def test_failing_variant_fails_the_frontend_with_label_command_and_log(how, find_links, cuda_toolkits, uv, tmp_path):
    project = make_project("failing", tmp_path / "failing")
    out = tmp_path / "out"
    env = frontend_env(find_links, cuda_toolkits, tmp_path / "tmp", {"WHEELMERGE_CUDA_12": str(cuda_toolkits.cu12)})
    command = {
        "build-wheel": [PY, "-m", "build", "--wheel", "-o", out, project],
        "pip-wheel": [PY, "-m", "pip", "wheel", "--no-deps", "-w", out, project],
        "uv-build": [uv, "build", "--no-config", "--wheel", "--python", PY, "--find-links", find_links, "-o", out, project],
    }[how]
    result = frontend(command, env, cwd=tmp_path)
    both = result.stdout + result.stderr
    assert result.returncode != 0, output(result)
    assert not out.exists() or not list(out.glob("*.whl")), sorted(out.iterdir())
    # The variant, the command that failed, and the end of its log with the backend's error.
    assert re.search(r"\bcu12: ", both), output(result)
    assert re.search(r"\$ \S+python\S* \S*hook_runner\.py build_wheel setuptools\.build_meta", both), output(result)
    assert re.search(r"last lines of \S+cu12\.log:", both), output(result)
    assert SENTINEL in both, output(result)
    # The log's lines are shown as lines: the error line starts one.
    assert re.search(rf"^\s*RuntimeError: {re.escape(SENTINEL)}\s*$", both, re.M), output(result)


# --- (5) config settings -----------------------------------------------------------------------

@pytest.mark.parametrize("setting", ["wheelmerge.bogus=1", "wheelmerge.jobsx=2", "wheelmerge.editable-variants=cu13",
                                     "wheelmerge.cuda12=/opt/cuda"])
def test_unknown_wheelmerge_setting_fails_naming_it(setting, find_links, cuda_toolkits, tmp_path):
    project = make_project("recpkg", tmp_path / "recpkg")
    env = frontend_env(find_links, cuda_toolkits, tmp_path / "tmp", {"WHEELMERGE_CUDA_12": str(cuda_toolkits.cu12)})
    result = frontend([PY, "-m", "build", "--wheel", "-o", tmp_path / "out", "-C", setting, project], env, cwd=tmp_path)
    assert result.returncode != 0, output(result)
    key = setting.split("=")[0]
    assert re.search(rf"unknown config setting '{re.escape(key)}'", result.stdout + result.stderr), output(result)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.whl"))


def test_unknown_wheelmerge_setting_fails_under_pip(find_links, cuda_toolkits, tmp_path):
    project = make_project("recpkg", tmp_path / "recpkg")
    env = frontend_env(find_links, cuda_toolkits, tmp_path / "tmp", {"WHEELMERGE_CUDA_12": str(cuda_toolkits.cu12)})
    result = frontend([PY, "-m", "pip", "wheel", "--no-deps", "-w", tmp_path / "out", "-C", "wheelmerge.bogus=1", project],
                      env, cwd=tmp_path)
    assert result.returncode != 0, output(result)
    assert "wheelmerge.bogus" in result.stdout + result.stderr, output(result)


@pytest.mark.parametrize("how", ["build", "pip-wheel", "uv-build"])
def test_inner_settings_reach_the_inner_backend(how, find_links, cuda_toolkits, wheelmerge_bin, uv, tmp_path):
    """Inner settings, one of them given twice, through `python -m build` (sdist, then the wheel
    from it), `pip wheel` and `uv build`: every hook of the recording inner backend gets exactly
    the inner settings, the variants' build_wheel each in its own major, wheelmerge's own
    settings are not passed on, and every hook runs in the frontend's build environment (the
    same wmtest_backends and setuptools, which only the build environment has)."""
    project = make_project("recpkg", tmp_path / "recpkg")
    record = tmp_path / "record.jsonl"
    env = frontend_env(find_links, cuda_toolkits, tmp_path / "tmp", {"WMTEST_RECORD": str(record)})
    out = tmp_path / "out"
    settings = ["-C", "rec-color=blue", "-C", "rec-list=a", "-C", "rec-list=b",
                "-C", f"wheelmerge.cuda-12={cuda_toolkits.cu12}", "-C", f"wheelmerge.cuda-13={cuda_toolkits.cu13}",
                "-C", "wheelmerge.jobs=2"]
    command = {
        "build": [PY, "-m", "build", "-o", out, *settings, project],
        "pip-wheel": [PY, "-m", "pip", "wheel", "--no-deps", "-w", out, *settings, project],
        "uv-build": [uv, "build", "--no-config", "--python", PY, "--find-links", find_links, "-o", out, *settings, project],
    }[how]
    result = frontend(command, env, cwd=tmp_path)
    assert result.returncode == 0, output(result)
    inner = {"rec-color": "blue", "rec-list": ["a", "b"]}
    calls = read_record(record)
    hooks = {c["hook"] for c in calls}
    assert "get_requires_for_build_wheel" in hooks, calls
    assert ("build_sdist" in hooks) == (how != "pip-wheel"), calls
    for call in calls:
        assert call["config_settings"] == inner, call
    variant_builds = sorted(c["major"] for c in calls if c["hook"] == "build_wheel")
    assert variant_builds == ["12", "13"], calls
    # The wheel's hooks, the frontend's and the variants', in one environment (the sdist is
    # built in an environment of its own).
    wheel_calls = [c for c in calls if c["hook"] in ("get_requires_for_build_wheel", "build_wheel")]
    assert len({c["backend_file"] for c in wheel_calls}) == 1, wheel_calls
    assert len({c["setuptools_file"] for c in wheel_calls}) == 1, wheel_calls
    wheels = sorted(out.glob("*.whl"))
    assert [w.name for w in wheels] == ["recpkg-1.0-py3-none-any.whl"], wheels
    report = run([wheelmerge_bin, "inspect", wheels[0], "--json"])
    assert json.loads(report.stdout)["variants"] == list(LABELS)


# --- (6) the optional hooks --------------------------------------------------------------------

HOOKS = ("build_wheel", "build_sdist", "get_requires_for_build_wheel", "get_requires_for_build_sdist",
         "build_editable", "get_requires_for_build_editable", "prepare_metadata_for_build_editable",
         "prepare_metadata_for_build_wheel")
HOOK_PROBE = f"""
import json, sys, tomllib
with open("pyproject.toml", "rb") as f:
    sys.path[:0] = tomllib.load(f)["build-system"].get("backend-path", [])  # as a frontend does
import wheelmerge.backend as backend
print(json.dumps({{hook: hasattr(backend, hook) for hook in {HOOKS!r}}}))
"""


@pytest.fixture(scope="session")
def backend_venv(make_venv, find_links):
    """wheelmerge with the inner backends the hook tests name: setuptools, scikit-build-core,
    wmtest-backends."""
    venv = make_venv("backend-hooks")
    venv.pip("install", "--quiet", "--find-links", find_links, "wheelmerge-cuda", "wmtest-backends", "setuptools>=77",
             "scikit-build-core==1.1.2")
    return venv


def in_tree_plain(tmp_path: Path) -> Path:
    """recpkg with the mandatory-hooks-only backend in the tree (backend-path = ["_backend"])."""
    project = make_project("recpkg", tmp_path / "intree")
    (project / "_backend").mkdir()
    shutil.copy2(PROJECTS / "backends" / "wmtest_backends" / "plain.py", project / "_backend" / "plain_backend.py")
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text().replace('build-backend = "wheelmerge.backend"\n',
                                         'build-backend = "wheelmerge.backend"\nbackend-path = ["_backend"]\n')
    pyproject.write_text(text)
    set_inner_backend(project, "plain_backend")
    return project


def yaml_configured(tmp_path: Path) -> Path:
    """recpkg with its wheelmerge configuration in wheelmerge.yaml instead of [tool.wheelmerge]."""
    project = make_project("recpkg", tmp_path / "yaml")
    pyproject = project / "pyproject.toml"
    text, count = re.subn(r"(?ms)^\[tool\.wheelmerge\]\n.*", "", pyproject.read_text())
    assert count == 1
    pyproject.write_text(text)
    (project / "wheelmerge.yaml").write_text(
        "backend: setuptools.build_meta\ncuda: [12, 13]\nvariant-files: [recpkg/_variant.py]\n")
    return project


@pytest.mark.parametrize("inner", ["setuptools", "scikit-build-core", "recorder", "plain", "in-tree plain",
                                   "setuptools from wheelmerge.yaml"])
def test_optional_hooks_follow_the_inner_backend(inner, backend_venv, tmp_path):
    if inner == "setuptools":
        project = make_project("wmdemo", tmp_path / "wmdemo")
    elif inner == "setuptools from wheelmerge.yaml":
        project = yaml_configured(tmp_path)
    elif inner == "scikit-build-core":
        project = make_project("skdemo", tmp_path / "skdemo")
    elif inner == "in-tree plain":
        project = in_tree_plain(tmp_path)
    else:
        project = make_project("recpkg", tmp_path / "recpkg")
        set_inner_backend(project, f"wmtest_backends.{inner}")
    result = run([backend_venv.python, "-c", HOOK_PROBE], cwd=project, env=clean_env())
    has = json.loads(result.stdout)
    editable = inner not in ("plain", "in-tree plain")
    assert has == {**{h: True for h in HOOKS[:4]}, "build_editable": editable, "get_requires_for_build_editable": editable,
                   "prepare_metadata_for_build_editable": editable, "prepare_metadata_for_build_wheel": False}, has


def test_pip_refuses_editable_when_the_inner_backend_cannot(find_links, cuda_toolkits, make_venv, tmp_path):
    project = make_project("recpkg", tmp_path / "recpkg")
    set_inner_backend(project, "wmtest_backends.plain")
    venv = make_venv("editable-plain")
    result = editable_install(venv, project, [], frontend_env(find_links, cuda_toolkits, tmp_path / "tmp"))
    assert result.returncode != 0, output(result)
    assert "build_editable" in result.stdout + result.stderr, output(result)


def test_in_tree_inner_backend_through_tool_wheelmerge_backend_path(find_links, cuda_toolkits, tmp_path):
    project = in_tree_plain(tmp_path)
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text().replace('backend-path = ["_backend"]\n', "")
    pyproject.write_text(text.replace('backend = "plain_backend"', 'backend = "plain_backend"\nbackend-path = ["_backend"]'))
    env = frontend_env(find_links, cuda_toolkits, tmp_path / "tmp", {"WHEELMERGE_CUDA_12": str(cuda_toolkits.cu12)})
    result = frontend([PY, "-m", "build", "--wheel", "-o", tmp_path / "out", project], env, cwd=tmp_path)
    assert result.returncode == 0, output(result)
    assert len(list((tmp_path / "out").glob("*.whl"))) == 1


# --- (1, continued) pip install from the source tree -------------------------------------------

def test_pip_install_from_the_source_tree(make_venv, wheelmerge_bin, tmp_path):
    """`pip install` of this repository into a clean venv: scikit-build-core installs the command,
    the module and the executable (here the one under test, WHEELMERGE_PREBUILT; the compile
    from source, minutes of two cores, is the release workflow's check of the uploaded sdist)."""
    venv = make_venv("wheelmerge-from-source")
    result = run([PY, "-m", "pip", "--python", venv.python, "install",
                  f"--config-settings=cmake.define.WHEELMERGE_PREBUILT={wheelmerge_bin}", ROOT],
                 env=clean_env({"TMPDIR": str(tmp_path)}), timeout=3600)
    assert "Successfully installed wheelmerge-cuda-" in result.stdout, output(result)
    assert venv.run("-m", "wheelmerge", "--version").stdout.strip() == VERSION
    on_path = run(["wheelmerge", "--version"], env=clean_env({"PATH": f"{venv.path / 'bin'}:{os.environ['PATH']}"}),
                  cwd=venv.path)
    assert on_path.stdout.strip() == VERSION
    exe = Path(venv.run("-c", "import wheelmerge; print(wheelmerge.executable())").stdout.strip())
    assert str(exe).startswith(str(venv.path) + os.sep) and os.access(exe, os.X_OK), exe
    assert exe.read_bytes() == wheelmerge_bin.read_bytes(), "the installed executable is not the one given"
    venv.run("-c", "import wheelmerge.backend")
