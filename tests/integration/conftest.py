"""Fixtures of the integration suites: the wheelmerge binary, the bundled example's two wheels,
an offline cache of cuda-bindings wheels, and throwaway virtual environments.

Names are prefixed by what they are about (`wheelmerge_bin`, `demo_wheels`, `wheel_cache`,
`make_venv`) so that suites can define fixtures of their own beside them.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import pytest

# The suites live in rooms by surface (merge/, hostile/, loader/, building/, ci/, release/,
# project/); the helpers they share in support/.
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "support"))
# Suites still import helpers from each other (test_merge_e2e's wheelmerge(), test_ci's linters,
# test_scale's inputs): every room is on the path, as the one flat folder was.
for _room in sorted(p for p in HERE.iterdir() if p.is_dir() and p.name not in ("support", "__pycache__")):
    sys.path.append(str(_room))

import build_cache  # noqa: E402  (from support/)

ROOT = HERE.parents[1]
EXAMPLE = ROOT / "examples" / "wmdemo"
WHEEL_CACHE = build_cache.cache_home() / "wheels"

# The cuda-bindings each variant is tested with, and the pins of their dependencies, so that a
# cache filled later holds the same wheels.
CUDA_BINDINGS = {"cu12": "12.9.4", "cu13": "13.0.3"}
CACHE_CONSTRAINTS = ("cuda-pathfinder==1.9.0",)
# What the cache is for: CPython 3.11 on manylinux x86_64.
CACHE_TARGET = (
    "--only-binary=:all:", "--implementation", "cp", "--python-version", "3.11",
    "--abi", "cp311", "--abi", "abi3", "--abi", "none",
    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
    "--platform", "manylinux2014_x86_64",
)

# Variables of the outer environment that would change what a child Python or pip does.
_LEAKY_VARIABLES = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV",
                    "WHEELMERGE_CUDA_MAJOR", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL",
                    "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_REQUIRE_VIRTUALENV", "PIP_TARGET",
                    "PIP_PREFIX", "PIP_USER", "PIP_CONSTRAINT")


def tool_python() -> Path:
    """The interpreter holding the tools (build, setuptools, pip, installer, twine, ...)."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    return venv_python if venv_python.exists() else Path(sys.executable)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The current environment without what would leak into a child, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_VARIABLES}
    env.update(PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    env.update(extra or {})
    return env


def run(command: Sequence[str | Path], *, check: bool = True, env: Mapping[str, str] | None = None,
        cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """Runs a command, capturing its output; on failure with `check`, fails the test with it."""
    args = [str(c) for c in command]
    result = subprocess.run(args, capture_output=True, text=True, env=env or clean_env(),
                            cwd=cwd, timeout=timeout)
    if check and result.returncode != 0:
        pytest.fail(f"command failed with exit status {result.returncode}: {' '.join(args)}\n"
                    f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}", pytrace=False)
    return result


def wheelmerge(binary: Path, *args: str | Path, env: dict[str, str] | None = None,
               check: bool = True):
    """Runs the binary with a clean environment (no SOURCE_DATE_EPOCH unless given)."""
    environment = clean_env({"NO_COLOR": "1"})
    environment.pop("SOURCE_DATE_EPOCH", None)
    environment.update(env or {})
    return run([binary, *args], env=environment, check=check)


def merge_into(binary: Path, out: Path, *inputs: Path | str, form: str = "merge",
               env: dict[str, str] | None = None) -> Path:
    """Merges `inputs` into the empty directory `out`; returns the one file it holds."""
    command = ["merge"] if form == "merge" else []
    result = wheelmerge(binary, *command, *inputs, "-o", out, env=env)
    files = sorted(out.iterdir())
    assert len(files) == 1, f"expected exactly the merged wheel in {out}, found {files}\n{result.stderr}"
    return files[0]


# --- the binary --------------------------------------------------------------------------------

def loader_manifest(source: str) -> dict:
    """The manifest of a generated loader as Python reads it, in the JSON form of
    docs/interfaces.md ("Loader manifest"): its manifest block executed by the interpreter."""
    begin = source.index("# wheelmerge manifest: ")
    end = source.index("# end of the wheelmerge manifest")
    constants: dict = {}
    exec(compile(source[begin:end], "<loader manifest>", "exec"), constants)  # noqa: S102 (our test input)
    lists = lambda mapping: {key: list(value) for key, value in mapping.items()}  # noqa: E731
    return {"format": 3, "wheelmerge": constants["_WHEELMERGE"], "package": constants["_PACKAGE"],
            "distribution": constants["_DISTRIBUTION"], "selector": constants["_SELECTOR"],
            "variants": list(constants["_VARIANTS"]), "sources": list(constants["_SOURCES"]),
            "extras": lists(constants["_EXTRAS"]), "modules": constants["_MODULES"],
            "files": constants["_FILES"], "preload": lists(constants["_PRELOAD"]),
            "build_info": constants["_BUILD_INFO"],
            "gpu_code": {label: lists(code) for label, code in constants["_GPU_CODE"].items()}}


def wheelmerge_version() -> str:
    """The version CMakeLists.txt gives the project (what a loader names as its writer)."""
    match = re.search(r"^project\(wheelmerge VERSION (\S+)", (ROOT / "CMakeLists.txt").read_text(), re.M)
    assert match, "CMakeLists.txt names no project version"
    return match.group(1)


@pytest.fixture(scope="session")
def wheelmerge_bin() -> Path:
    """The wheelmerge executable: $WHEELMERGE, else build/wheelmerge."""
    path = Path(os.environ.get("WHEELMERGE") or ROOT / "build" / "wheelmerge")
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(f"no wheelmerge executable at {path}: build it (cmake -S . -B build -G Ninja "
                    "&& cmake --build build) or point WHEELMERGE at one", pytrace=False)
    return path


# --- the bundled example's wheels --------------------------------------------------------------

@dataclass(frozen=True)
class DemoWheels:
    """The two builds of examples/wmdemo. cu12 is labelled by a `.cu12` suffix before `.whl`
    (and its `+cu12` version), cu13 only by its `+cu13` local version."""

    cu12: Path
    cu13: Path

    def __getitem__(self, label: str) -> Path:
        return {"cu12": self.cu12, "cu13": self.cu13}[label]


def _copy_example(destination: Path) -> None:
    shutil.copytree(EXAMPLE, destination, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.so.*"))


def _build_demo_wheels(base: Path) -> None:
    """Builds examples/wmdemo for CUDA 12 and 13 (`python -m build --wheel --no-isolation`)
    into base/cu12 and base/cu13, each from its own copy of the project so that the builds share
    no build/ directory."""
    work = Path(tempfile.mkdtemp(prefix="wmdemo-build-"))
    builds = {}
    for major in ("12", "13"):
        source = work / f"src-cu{major}"
        _copy_example(source)
        log = (work / f"build-cu{major}.log").open("w")
        # The two builds run side by side: each is mostly a compiler waiting on its own files.
        builds[major] = (subprocess.Popen(
            [str(tool_python()), "-m", "build", "--wheel", "--no-isolation", "-o",
             str(base / f"cu{major}"), str(source)],
            stdout=log, stderr=subprocess.STDOUT, cwd=source,
            env=clean_env({"WMDEMO_CUDA_MAJOR": major})), log)
    for major, (process, log) in builds.items():
        status = process.wait(timeout=600)
        log.close()
        if status != 0:
            pytest.fail(f"building wmdemo for CUDA {major} failed ({status}):\n"
                        f"{Path(log.name).read_text()}", pytrace=False)
        built = sorted((base / f"cu{major}").glob("*.whl"))
        assert len(built) == 1, f"expected one wheel from the cu{major} build, found {built}"
        if major == "12":
            built[0].rename(built[0].with_name(built[0].name[: -len(".whl")] + ".cu12.whl"))
    shutil.rmtree(work)


@pytest.fixture(scope="session")
def demo_wheels() -> DemoWheels:
    """The two builds of examples/wmdemo, made once for its sources and tools (build_cache.py);
    a test that changes one works on a copy."""
    key = build_cache.key_of([EXAMPLE], build_cache.tool_version(
        tool_python(), "-c", "import setuptools, sys; print(sys.version, setuptools.__version__)"),
        build_cache.tool_version("cc", "--version"))
    base = build_cache.cached("wmdemo-wheels", key, _build_demo_wheels)
    (cu12,) = base.glob("cu12/*.cu12.whl")
    (cu13,) = base.glob("cu13/*.whl")
    assert "+cu13-" in cu13.name, cu13.name
    return DemoWheels(cu12=cu12, cu13=cu13)


def without_label(wheel: Path, directory: Path) -> Path:
    """A copy of a demo wheel that names no label (version 0.1.0, no .cuNN suffix), for
    merges that give it one on the command line (PATH=LABEL): a label the name also gave
    would have to agree. The dist-info directory, METADATA's Version and RECORD follow."""
    import zipfile

    import wheelgen

    stem = wheel.name[: -len(".whl")]
    version = stem.split("-")[1]
    base = version.split("+")[0]
    name = stem.split("-")[0]
    tags = re.sub(r"\.cu[0-9]+$", "", "-".join(stem.split("-")[2:]))  # no .cuNN suffix
    target = directory / f"{name}-{base}-{tags}.whl"
    old_info, new_info = f"{name}-{version}.dist-info/", f"{name}-{base}.dist-info/"
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        members = {}
        for info in source.infolist():
            data = source.read(info)
            if info.filename == old_info + "METADATA":
                data = data.replace(f"\nVersion: {version}\n".encode(), f"\nVersion: {base}\n".encode(), 1)
            members[info.filename.replace(old_info, new_info, 1)] = data
        record = new_info + "RECORD"
        members[record] = wheelgen.record_file(
            (wheelgen.record_row(m, d) for m, d in members.items() if m != record), record)
        for member, data in members.items():
            out.writestr(member, data)
    return target


# --- an offline cache of cuda-bindings wheels --------------------------------------------------

@dataclass(frozen=True)
class WheelCache:
    """A find-links directory holding pinned cuda-bindings of each major and their dependencies."""

    path: Path

    def requirement(self, label: str) -> str:
        return f"cuda-bindings=={CUDA_BINDINGS[label]}"

    def pip_args(self) -> list[str]:
        return ["--no-index", "--find-links", str(self.path)]


def _download(requirement: str, constraints: Path, *, offline: bool) -> subprocess.CompletedProcess[str]:
    index = ["--no-index", "--find-links", str(WHEEL_CACHE)] if offline else []
    return run([tool_python(), "-m", "pip", "download", "--quiet", *index, *CACHE_TARGET,
                "-c", constraints, "-d", WHEEL_CACHE, requirement], check=False)


@pytest.fixture(scope="session")
def wheel_cache(tmp_path_factory: pytest.TempPathFactory) -> WheelCache:
    """~/.cache/wheelmerge/wheels, filled from PyPI once and used offline (--no-index) afterwards."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    constraints = tmp_path_factory.mktemp("wheel-cache") / "constraints.txt"
    constraints.write_text("".join(f"{c}\n" for c in CACHE_CONSTRAINTS))
    with build_cache.locked(WHEEL_CACHE):  # parallel workers fill it one at a time
        _fill_wheel_cache(constraints)
    return WheelCache(WHEEL_CACHE)


def _fill_wheel_cache(constraints: Path) -> None:
    for label in CUDA_BINDINGS:
        requirement = f"cuda-bindings=={CUDA_BINDINGS[label]}"
        if _download(requirement, constraints, offline=True).returncode == 0:
            continue
        online = _download(requirement, constraints, offline=False)
        if online.returncode != 0:
            pytest.fail(f"could not fill {WHEEL_CACHE} with {requirement} (needs PyPI once):\n"
                        f"{online.stdout}{online.stderr}", pytrace=False)


# --- wheelmerge's static executables (scripts/static/, test_static_wheels.py) -------------------

# Each zig target and the platform tags of its wheel (scripts/static/wheels.sh).
STATIC_TAGS = {
    "x86_64-linux-musl": "manylinux2014_x86_64.manylinux_2_17_x86_64.musllinux_1_1_x86_64",
    "aarch64-linux-musl": "manylinux2014_aarch64.manylinux_2_17_aarch64.musllinux_1_1_aarch64",
    "x86_64-macos.10.15": "macosx_10_15_x86_64",
    "aarch64-macos.11.0": "macosx_11_0_arm64",
}
# The target this machine runs: its checks compare with the native build, install it in clean
# roots and run the backend from it, so it is always among the chosen.
STATIC_NATIVE = "x86_64-linux-musl"


@functools.lru_cache(maxsize=None)
def static_targets() -> tuple[str, ...]:
    """The static targets test_static_wheels.py builds and checks: WHEELMERGE_STATIC_TARGETS
    (`all`, or zig targets separated by commas), else the native one and every other whose
    executable is built already (`scripts/static/build.sh --cached`, which builds nothing). A cold
    build costs minutes of two cores a target; the release workflow checks all four."""
    wanted = os.environ.get("WHEELMERGE_STATIC_TARGETS", "").strip()
    if wanted == "all":
        return tuple(STATIC_TAGS)
    if wanted:
        chosen = tuple(t.strip() for t in wanted.split(",") if t.strip())
        unknown = [t for t in chosen if t not in STATIC_TAGS]
        if unknown or STATIC_NATIVE not in chosen:
            raise pytest.UsageError(f"WHEELMERGE_STATIC_TARGETS={wanted!r}: expected 'all' or targets among "
                                    f"{', '.join(STATIC_TAGS)}, {STATIC_NATIVE} included")
        return tuple(t for t in STATIC_TAGS if t in chosen)

    def built(target: str) -> bool:
        script = ROOT / "scripts" / "static" / "build.sh"
        return subprocess.run(["bash", str(script), "--cached", target], capture_output=True,
                              check=False).returncode == 0

    return tuple(t for t in STATIC_TAGS if t == STATIC_NATIVE or built(t))


# --- virtual environments ----------------------------------------------------------------------

@dataclass(frozen=True)
class Venv:
    """A virtual environment without pip of its own; the tools' pip installs into it."""

    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def pip(self, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run([tool_python(), "-m", "pip", "--python", self.python, *args], check=check,
                   cwd=self.path)

    def install(self, *requirements: str | Path, find_links: Sequence[Path] = (),
                check: bool = True) -> subprocess.CompletedProcess[str]:
        """pip install, offline: from the given find-links directories only."""
        links = [a for d in find_links for a in ("--find-links", str(d))]
        return self.pip("install", "--no-index", *links, *requirements, check=check)

    def run(self, *args: str | Path, env: Mapping[str, str] | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs this environment's python with `args`, from the environment's own directory
        (so no source tree is on sys.path), with `env` added to a clean environment."""
        return run([self.python, *args], env=clean_env(env), cwd=self.path, check=check)


@pytest.fixture(scope="session")
def make_venv(tmp_path_factory: pytest.TempPathFactory):
    """Factory: make_venv(name) -> a fresh, empty Venv."""
    base = tmp_path_factory.mktemp("venvs")

    def make(name: str) -> Venv:
        path = base / name
        assert not path.exists(), f"venv {name} made twice"
        run([tool_python(), "-m", "venv", "--without-pip", path])
        return Venv(path)

    return make


@pytest.fixture(scope="session", autouse=True)
def children_tmpdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TMPDIR of every child process, inside this run's base directory: what a child killed on
    purpose leaves there (a build's work directory, a partial output) goes with the run's
    directories instead of piling up in /tmp. Tests that check TMPDIR set their own."""
    path = tmp_path_factory.mktemp("children-tmp", numbered=False)
    os.environ["TMPDIR"] = str(path)
    return path


# --- tiers and parallel workers -----------------------------------------------------------------

@dataclass(frozen=True)
class Suite:
    """What a suite needs beyond this checkout and the tools of .venv, as markers (registered in
    pyproject.toml): `network` (the package index on a fresh machine; cached downloads after),
    `torch` (torch wheels or environments: GBs), `qemu` (emulated CPUs), `gpu` (checks that change
    where a GPU is present), `slow` (minutes of compilers, pip or I/O). The quick tier
    (scripts/test.sh --quick) runs the suites without any of them, with the network cut off.
    `cxx`: the suite spends its time in wheelmerge's own code on inputs of many kinds, so
    scripts/test.sh runs it again against the sanitizer build; the others spend theirs in
    compilers, pip, torch or linters. pytest-xdist runs each suite on one worker (--dist
    loadfile: module fixtures are made once); `first`: scheduled before the others, being the
    longest (in the order of FIRST). `release_only`: tests of a `cxx` suite (names up to their
    parameters) that the sanitizer pass leaves to the release pass, their time being pip and
    compilers around driver code that the suite's other tests run under the sanitizers too."""

    marks: tuple[str, ...] = ()
    first: bool = False
    release_only: tuple[str, ...] = ()


# The suites marked `first`, longest first on a fresh machine (cold caches: the static build of
# the native target, the fuzz harnesses' and the torch examples' builds). Each worker takes the
# next suite when it is free, so this is longest-first list scheduling: the order is the wall
# times of the fresh run of `7d86186` in docs/testing.md (static 1,214 s, ci 524, real_wheels 465,
# fuzz 454, backend 255, torchdemo 225, foreign_machines 204, downstream 192, loader_lint 147,
# cupy 146, ci_torch 136, torchstable 106; gpu_code about 90 s warm).
FIRST = (
    "release/test_static_wheels.py", "ci/test_ci.py", "merge/test_real_wheels.py", "hostile/test_fuzz.py",
    "building/test_backend.py", "building/test_torchdemo.py", "merge/test_foreign_machines.py",
    "release/test_downstream_checks.py", "loader/test_loader_lint.py", "merge/test_cupy.py",
    "ci/test_ci_torch.py", "building/test_torchstable.py", "merge/test_gpu_code.py")


SUITES = {
    "building/test_backend.py": Suite(("network", "slow"), first=True),
    "hostile/test_bad_inputs.py": Suite(("cxx",)),
    # Under the sanitizers 40, 33 and 29 s of pip and compilers: the CPU-level isolated build
    # (the same -march flags are built under the sanitizers without isolation, by
    # test_variants_option_gives_cpu_levels_their_level...), the PEP 517 backend (a Python file
    # around `merge`) and pip's isolated build (uv's runs the same driver code there).
    "building/test_build.py": Suite(("network", "slow", "cxx"), release_only=(
        "test_isolated_build_gets_a_fresh_environment_per_variant[pip]",)),
    "building/test_build_config.py": Suite(("network", "slow", "cxx"), release_only=(
        "test_cpu_levels_build_with_their_march_and_own_requirements",
        "test_pep517_backend_isolates_variants_with_their_own_requirements")),
    "building/test_build_toolkits.py": Suite(("network", "slow", "cxx")),
    "ci/test_ci.py": Suite(("network", "slow"), first=True),
    "project/test_cli.py": Suite(("cxx",)),
    "ci/test_ci_init.py": Suite(("cxx",)),
    "ci/test_ci_torch.py": Suite(("network", "torch", "slow"), first=True),
    "building/test_cpulevels.py": Suite(("qemu",)),
    "building/test_cudademo.py": Suite(("network", "gpu", "slow")),
    "merge/test_cupy.py": Suite(("network", "slow"), first=True),
    "merge/test_data_layouts.py": Suite(("cxx",)),
    "release/test_downstream_checks.py": Suite(("network", "slow"), first=True),
    "project/test_docs.py": Suite(),
    "hostile/test_faults.py": Suite(("cxx",)),
    "merge/test_foreign_machines.py": Suite(("network",), first=True),
    "hostile/test_fuzz.py": Suite(("slow",), first=True),
    "hostile/test_fuzz_oracle.py": Suite(("slow", "cxx")),
    "merge/test_gpu_code.py": Suite(("network", "torch", "slow"), first=True),
    "hostile/test_hostile.py": Suite(("cxx",)),
    "hostile/test_hostile_arguments.py": Suite(("cxx",)),
    "hostile/test_hostile_variants.py": Suite(("cxx",)),
    "hostile/test_hostile_workflow.py": Suite(("cxx",)),
    "loader/test_inject.py": Suite(("cxx",)),
    "project/test_layout.py": Suite(),
    "release/test_licenses.py": Suite(("network",)),
    "merge/test_linkage.py": Suite(("cxx",)),
    "loader/test_loader.py": Suite(("network",)),
    "loader/test_loader_lint.py": Suite(("network",), first=True),
    "loader/test_loader_selectors.py": Suite(("network", "torch", "qemu")),
    "merge/test_merge_e2e.py": Suite(("network", "cxx")),
    "project/test_messages.py": Suite(("cxx",)),
    "release/test_own_wheel.py": Suite(("network", "slow")),
    "merge/test_real_wheels.py": Suite(("network", "torch", "slow"), first=True),
    "merge/test_requirements.py": Suite(("network", "torch")),
    "merge/test_runtime_wheels.py": Suite(("network", "torch")),
    "merge/test_scale.py": Suite(("slow", "cxx")),
    "merge/test_single_build.py": Suite(("network", "cxx")),
    "release/test_static_wheels.py": Suite(("network", "qemu", "slow"), first=True),
    "loader/test_torch_floors.py": Suite(("network", "torch")),
    "building/test_torchdemo.py": Suite(("network", "torch", "gpu", "slow"), first=True),
    "building/test_torchstable.py": Suite(("network", "torch", "gpu", "slow"), first=True),
    "merge/test_variants.py": Suite(("network", "cxx")),
    "merge/test_variants_cpu.py": Suite(("cxx",)),
    "merge/test_verify.py": Suite(("cxx",)),
    "merge/test_windows_aarch64.py": Suite(("network", "cxx")),
}


def suite_of(path: Path) -> str:
    """A suite's key in SUITES: its file's path below tests/integration ("merge/test_verify.py")."""
    return Path(path).resolve().relative_to(HERE).as_posix()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks each test by its suite's entry in SUITES (a suite missing there fails the run), and
    puts the longest suites first so that they do not start last (scripts/test.sh keeps this
    order: --no-loadscope-reorder)."""
    missing = sorted({suite_of(item.path) for item in items} - set(SUITES))
    if missing:
        raise pytest.UsageError(f"tests/integration/conftest.py: SUITES has no entry for {', '.join(missing)}")
    for item in items:
        suite = SUITES[suite_of(item.path)]
        release_only = item.name in suite.release_only or item.originalname in suite.release_only
        for mark in suite.marks:
            if not (mark == "cxx" and release_only):
                item.add_marker(getattr(pytest.mark, mark))
    modules = {suite_of(item.path): item.module for item in items if isinstance(item, pytest.Function)}
    unknown = sorted(name for stem, module in modules.items() for name in SUITES[stem].release_only
                     if not callable(getattr(module, name.split("[")[0], None)))
    if unknown:
        raise pytest.UsageError(f"tests/integration/conftest.py: release_only names no test: {unknown}")
    assert {name for name, suite in SUITES.items() if suite.first} == set(FIRST), "conftest.py: FIRST lists the suites marked first"
    items.sort(key=lambda item: FIRST.index(suite_of(item.path)) if SUITES[suite_of(item.path)].first else len(FIRST))
    # A static target that is not chosen has no tests here (test_static_wheels.py parametrizes
    # over the chosen ones); the summary names the targets checked and those left out.
    unchosen = [item for item in items if suite_of(item.path) == "release/test_static_wheels.py"
                and any(m.name == "skip" and str(m.kwargs.get("reason", "")).startswith("got empty parameter set")
                        for m in item.iter_markers())]
    if unchosen:
        config.hook.pytest_deselected(items=unchosen)
        items[:] = [item for item in items if item not in unchosen]


# A skipped test is a failed test, except for these: things a CI machine of this project cannot
# have. Each is a regular expression over the skip reason, with why it may be skipped. Every
# skip is listed at the end of the run; one not on this list fails the run.
ALLOWED_SKIPS = {
    r"^writes about 13 GB": "the >4 GiB archive case runs only with WHEELMERGE_SCALE_FULL=1 "
                            "(13 GB of disk and minutes of I/O; docs/scale.md has its figures)",
    r"^needs \d+ GiB free in ": "the same case, on a disk too small for it",
    r"^this machine has a CUDA (10 or )?11 toolkit under /usr/local": "toolkit discovery cases "
        "that need a machine without old toolkits installed",
    r"^cannot mount a tmpfs here": "the full-disk case, in a container without mount permission",
    r"^the sanitizer runtime reads /proc/self/maps when it starts": "merges with /proc hidden, in the "
        "sanitizer pass only (ASan cannot start without /proc); the release pass runs them",
}
_skips: list[tuple[str, str, str | None]] = []  # (test, reason, why it is allowed or None)


# Per suite: when its first phase (setup, call or teardown) started, when its last one stopped,
# and the seconds its tests took (fixtures included): the summary's table of the longest suites,
# which says where a run's time went (scripts/test.sh prints the phases around it).
_suite_times: dict[str, list[float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    suite = report.nodeid.split("::", 1)[0].split("tests/integration/", 1)[-1]
    start, stop = getattr(report, "start", 0.0), getattr(report, "stop", 0.0)
    if start and stop:
        times = _suite_times.setdefault(suite, [start, stop, 0.0, 0])
        times[0], times[1] = min(times[0], start), max(times[1], stop)
        times[2] += report.duration
        times[3] += report.when == "call"
    if not report.skipped:
        return
    reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
    reason = reason.removeprefix("Skipped: ")
    allowed = next((why for pattern, why in ALLOWED_SKIPS.items() if re.search(pattern, reason)), None)
    _skips.append((report.nodeid, reason, allowed))


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if _suite_times:
        first = min(t[0] for t in _suite_times.values())
        terminalreporter.section("suites by wall time (from the pass's first test)")
        for suite, (start, stop, busy, tests) in sorted(_suite_times.items(), key=lambda kv: kv[1][0] - kv[1][1])[:15]:
            terminalreporter.write_line(f"{stop - start:8.0f} s  {suite} ({tests} tests; started at +{start - first:.0f} s,"
                                        f" ended at +{stop - first:.0f} s)")
    if "release/test_static_wheels.py" in _suite_times:
        chosen = static_targets()
        left = [t for t in STATIC_TAGS if t not in chosen]
        terminalreporter.write_line(f"static targets built and checked here: {', '.join(chosen)}"
                                    + (f"; left to the release workflow (built on none here): {', '.join(left)}"
                                       if left else ""))
    if not _skips:
        return
    terminalreporter.section("skipped tests")
    for nodeid, reason, allowed in _skips:
        verdict = f"allowed: {allowed}" if allowed else "NOT ALLOWED: fails the run"
        terminalreporter.write_line(f"{nodeid}: {reason} ({verdict})")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if any(allowed is None for _, _, allowed in _skips) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
