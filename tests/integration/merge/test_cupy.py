"""CuPy's two distributions of one package, merged into one `cupy` with `--name`.

CuPy 14.2.0 is published as `cupy-cuda12x` and `cupy-cuda13x` (pinned in the real-wheel corpus,
cp312): 2,438 files each, of which 18 extension modules and `cupy/.data/_wheel.json` (the build's
preload configuration) differ. The merge takes its labels from the names' suffixes, stores the
differing files once per build, and must be checked by the tools a publisher would use
(`wheelmerge verify`, `wheel unpack`, `check-wheel-contents`, `twine check`). Installed with real
pip into Python 3.12 environments, `import cupy` must select the build of the CUDA runtime wheels
installed beside it (`nvidia-cuda-runtime-cu12`, `nvidia-cuda-runtime` 13.x), and without them
the build of the driver's CUDA major (a compiled stand-in libcuda.so.1). The extras that differ
per build (`ctk`) resolve with pip against the package index.

docs/real-wheels.md ("CuPy") says what the merge needs and what it cannot make right.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

import real_wheels
from conftest import clean_env, run, tool_python
from loader_fixtures import build_fake_driver
from one_name import assert_one_name_per_module, one_name_report

CUPY = {label: next(w for w in real_wheels.WHEELS if w.name == f"cupy-cuda{label[2:]}x") for label in ("cu12", "cu13")}
RUNTIME = {"cu12": "nvidia-cuda-runtime-cu12", "cu13": "nvidia-cuda-runtime"}
# What the installs need besides the merged wheel, all from the corpus (so they run offline):
# CuPy's requirements and the CUDA runtime wheels.
CORPUS_DEPENDENCIES = ("numpy", "cuda-pathfinder", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime")
# The CUDA runtime version each build reports (CuPy links the runtime statically).
RUNTIME_VERSION = {"cu12": 12090, "cu13": 13020}
VARIANT_FILE = "cupy/.data/_wheel.json"
MERGED_NAME = "cupy-14.2.0-cp312-cp312-manylinux2014_x86_64.whl"
# The packages holding differing extension modules, each with a loader.
PACKAGES = ("cupy", "cupy_backends", "cupyx")
# Why a module of CuPy may fail to import here: the environments hold the CUDA runtime wheels
# alone, not the libraries (cuBLAS, cuFFT, NVRTC, cuTENSOR, ...) that some of its modules link or
# look for, nor the optional packages some modules use (IPython); never a module of CuPy's own.
MISSING_LIBRARY = re.compile(r'ImportError: (lib\w+\.so\.[\d.]+: cannot open shared object file|Failure finding "lib\w+\.so)'
                             r"|ModuleNotFoundError: No module named '(?!cupy)")

PROBE = """
import json, sys
import cupy, cupy_backends, cupyx
import cupy_backends.cuda.api.runtime as runtime
import cupy._wheelmerge as loader
print(json.dumps({
    "selected": [p._wheelmerge.selected() for p in (cupy, cupy_backends, cupyx)],
    "runtime_module": runtime.__file__,
    "runtime_version": runtime.runtimeGetVersion(),
    "build_config": json.load(open(loader.path(".data/_wheel.json"))),
    "preload_config": cupy._environment.get_preload_config(),
    "array_type": type(cupy.ndarray).__name__,
}))
"""


def wheelmerge(binary: Path, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([binary, *args], env=clean_env({"NO_COLOR": "1"}), check=check)


# --- Python 3.12 --------------------------------------------------------------------------------

def _python_version(python: Path) -> str | None:
    try:
        result = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                capture_output=True, text=True, timeout=60)
    except OSError:
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def _uv(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tool_python()), "-m", "uv", *args], capture_output=True, text=True,
                          env=clean_env(), timeout=600)


def find_python312() -> tuple[Path, str]:
    """A CPython 3.12 (CuPy's wheels are cp312) and how it was found: `uv python find 3.12`,
    else pyenv's installed 3.12, else `uv python install 3.12` (which uv caches)."""
    tried = []
    found = _uv("python", "find", "3.12")
    if found.returncode == 0 and _python_version(Path(found.stdout.strip())) == "3.12":
        return Path(found.stdout.strip()), "uv python find 3.12"
    tried.append(f"uv python find 3.12: {found.stderr.strip().splitlines()[-1:] or found.stdout}")
    pyenv_root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    for candidate in sorted(pyenv_root.glob("versions/3.12*/bin/python3.12"), reverse=True):
        if _python_version(candidate) == "3.12":
            return candidate, f"pyenv's {candidate.parents[1].name}"
    tried.append(f"no 3.12 under {pyenv_root}/versions")
    installed = _uv("python", "install", "3.12")
    found = _uv("python", "find", "--managed-python", "3.12")
    if installed.returncode == 0 and found.returncode == 0:
        return Path(found.stdout.strip()), "uv python install 3.12"
    tried.append(f"uv python install 3.12: {installed.stderr.strip().splitlines()[-1:]}")
    pytest.fail("no Python 3.12 for CuPy's cp312 wheels: " + "; ".join(map(str, tried)), pytrace=False)


@pytest.fixture(scope="module")
def python312() -> Path:
    python, how = find_python312()
    print(f"Python 3.12 for CuPy: {python} ({how})")
    return python


# --- the merge ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def inputs() -> dict[str, Path]:
    return {label: real_wheels.fetch(wheel) for label, wheel in CUPY.items()}


@pytest.fixture(scope="module")
def merged(wheelmerge_bin: Path, inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cupy-merged")
    started = time.monotonic()
    # No --driver-fallback: builds that require no cuda-bindings select by the runtime wheels
    # and the driver anyway.
    result = wheelmerge(wheelmerge_bin, "merge", "--name", "cupy", "--json", inputs["cu12"],
                        inputs["cu13"], "-o", out, "--variant-file", VARIANT_FILE)
    print(f"merged CuPy in {time.monotonic() - started:.1f} s")
    summary = json.loads(result.stdout)
    assert summary["variants"] == ["cu12", "cu13"]
    assert sorted(summary["loaders"]) == list(PACKAGES)
    assert summary["variant_files"] == 2 * 19  # 18 extension modules and the build-info file, per build
    assert Path(summary["output"]).name == MERGED_NAME
    # CuPy opens its build-info file by path; kept per build, it is only found through path().
    assert any(w.startswith(VARIANT_FILE + " differs per build") and "path()" in w for w in summary["warnings"]), summary
    return Path(summary["output"])


@pytest.fixture(scope="module")
def links(merged: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A find-links directory: the merged wheel and, from the corpus, what installing it needs."""
    directory = tmp_path_factory.mktemp("cupy-links")
    shutil.copy(merged, directory)
    for wheel in real_wheels.WHEELS:
        if wheel.name in CORPUS_DEPENDENCIES:
            os.symlink(real_wheels.fetch(wheel), directory / wheel.filename)
    return directory


def test_differing_names_need_name(wheelmerge_bin: Path, inputs: dict[str, Path], tmp_path: Path) -> None:
    result = wheelmerge(wheelmerge_bin, "merge", f"{inputs['cu12']}=cu12", f"{inputs['cu13']}=cu13", "-o", tmp_path,
                        "--variant-file", VARIANT_FILE, check=False)
    assert result.returncode == 3, result.stderr
    assert "different distribution name" in result.stderr
    assert "--name NAME" in result.stderr
    assert not list(tmp_path.iterdir())


def test_names_without_a_label_form_need_name(wheelmerge_bin: Path, inputs: dict[str, Path], tmp_path: Path) -> None:
    # Without --name the names' suffixes are no labels.
    result = wheelmerge(wheelmerge_bin, "merge", inputs["cu12"], inputs["cu13"], "-o", tmp_path, check=False)
    assert result.returncode == 2, result.stderr
    assert "no variant label" in result.stderr
    assert "found none (the name cupy_cuda12x gives cu12 with --name NAME)" in result.stderr


def test_an_invalid_name_is_a_usage_error(wheelmerge_bin: Path, inputs: dict[str, Path], tmp_path: Path) -> None:
    result = wheelmerge(wheelmerge_bin, "merge", "--name", "cu py", inputs["cu12"], inputs["cu13"], "-o", tmp_path,
                        check=False)
    assert result.returncode == 2, result.stderr
    assert 'invalid --name: expected a project name' in result.stderr


def test_the_build_info_file_is_refused_unless_named(wheelmerge_bin: Path, inputs: dict[str, Path], tmp_path: Path) -> None:
    result = wheelmerge(wheelmerge_bin, "merge", "--name", "cupy", inputs["cu12"], inputs["cu13"], "-o", tmp_path,
                        check=False)
    assert result.returncode == 4, result.stderr
    assert f"{VARIANT_FILE}: differs between builds and is not native or GPU code" in result.stderr
    assert not list(tmp_path.iterdir())


# A member of each build that links a CUDA library of its own major, as readelf reads it.
LINKED = {"cu12": ("cupy/cuda/cufft.cpython-312-x86_64-linux-gnu.so", "libcufft.so.11", 12),
          "cu13": ("cupy/cuda/cufft.cpython-312-x86_64-linux-gnu.so", "libcufft.so.12", 13)}


def test_a_label_contradicting_the_build_is_refused(wheelmerge_bin: Path, inputs: dict[str, Path],
                                                    tmp_path: Path) -> None:
    """Each distribution given the other's label: refused for the CUDA libraries its extensions
    link (cupy-cuda12x's cuFFT extension needs libcufft.so.11, CUDA 12's, as readelf -d reads
    it), and `verify` refuses a cupy-cuda12x named for cu13 (a ".cu13" suffix) alike; nothing is
    written."""
    result = wheelmerge(wheelmerge_bin, "merge", "--name", "cupy", f"{inputs['cu12']}=cu13", f"{inputs['cu13']}=cu12",
                        "-o", tmp_path / "out", "--variant-file", VARIANT_FILE, check=False)
    assert result.returncode == 3, result.stderr
    assert not (tmp_path / "out").exists()
    for built, given in (("cu12", "cu13"), ("cu13", "cu12")):
        member, library, major = LINKED[built]
        with zipfile.ZipFile(inputs[built]) as wheel:
            (tmp_path / built).write_bytes(wheel.read(member))
        dynamic = run(["readelf", "-d", tmp_path / built]).stdout
        assert f"Shared library: [{library}]" in dynamic, dynamic
        assert (f"{inputs[built].name}: {member}: the {given} build links a CUDA library of another major: expected "
                f"CUDA {given[2:]}'s libraries ({given}), found DT_NEEDED {library}, a library of CUDA {major}"
                ) in result.stderr, result.stderr
    relabelled = tmp_path / inputs["cu12"].name.replace(".whl", ".cu13.whl")
    shutil.copy(inputs["cu12"], relabelled)
    verified = wheelmerge(wheelmerge_bin, "verify", relabelled, check=False)
    assert verified.returncode == 3, verified.stderr
    assert "the cu13 build links a CUDA library of another major" in verified.stderr, verified.stderr


def test_merged_wheel_is_one_build_plus_the_differing_files(merged: Path, inputs: dict[str, Path]) -> None:
    with zipfile.ZipFile(inputs["cu12"]) as a, zipfile.ZipFile(inputs["cu13"]) as b, zipfile.ZipFile(merged) as m:
        a_infos = {i.filename: i for i in a.infolist()}
        differing = [i for i in b.infolist() if i.filename in a_infos and i.CRC != a_infos[i.filename].CRC
                     and ".dist-info/" not in i.filename]
        assert len(differing) == 19
        extra = sum(i.compress_size for i in differing)
        names = set(m.namelist())
        for info in differing:  # stored once per build, labelled: x.cpython-...so -> x.cu12.cpython-...so
            directory, base = info.filename.rsplit("/", 1)
            stem, rest = base[:base.find(".", 1)], base[base.find(".", 1):]
            for label in ("cu12", "cu13"):
                assert f"{directory}/{stem}.{label}{rest}" in names
            assert info.filename not in names
    size, one_build = merged.stat().st_size, inputs["cu12"].stat().st_size
    print(f"merged {size:,} bytes; cu12 {one_build:,} + cu13's differing members {extra:,} = {one_build + extra:,}")
    # One build, the other's differing members, loaders and central directory: within 1 MB.
    assert one_build + extra <= size <= one_build + extra + (1 << 20)


def test_metadata_names_cupy_and_keeps_one_extras_spelling_per_build(merged: Path) -> None:
    with zipfile.ZipFile(merged) as z:
        assert {n.split("/")[0] for n in z.namelist() if ".dist-info/" in n} == {"cupy-14.2.0.dist-info"}
        metadata = z.read("cupy-14.2.0.dist-info/METADATA").decode()
        record = z.read("cupy-14.2.0.dist-info/RECORD").decode()
    assert re.search(r"^Name: cupy$", metadata, re.M)
    extras = re.findall(r"^Provides-Extra: (.*)$", metadata, re.M)
    assert extras == ["all", "test", "ctk", "ctk-cu12", "ctk-cu13"]
    requirements = re.findall(r"^Requires-Dist: (.*)$", metadata, re.M)
    toolkit = [r for r in requirements if r.startswith("cuda-toolkit")]
    assert toolkit == ['cuda-toolkit[cublas,cudart,cufft,curand,cusolver,cusparse,nvrtc]==12.*; extra == "ctk-cu12"',
                       'cuda-toolkit[cublas,cudart,cufft,curand,cusolver,cusparse,nvrtc]==13.*; extra == "ctk-cu13"']
    assert "cupy_cuda1" not in record
    # Each build's own paragraphs of the description stay, attributed to it.
    assert "For the cu12 build (from cupy-cuda12x 14.2.0):" in metadata
    assert "For the cu13 build (from cupy-cuda13x 14.2.0):" in metadata
    assert metadata.count("CuPy : NumPy & SciPy for GPU\n====") == 1


def test_verify_and_publishing_tools_accept_it(wheelmerge_bin: Path, merged: Path, inputs: dict[str, Path],
                                               tmp_path: Path) -> None:
    verify = wheelmerge(wheelmerge_bin, "verify", "--json", merged)
    report = json.loads(verify.stdout)["wheels"][0]
    assert report["valid"] is True
    run([tool_python(), "-m", "wheel", "unpack", "-d", tmp_path, merged])
    unpacked = tmp_path / "cupy-14.2.0"
    assert (unpacked / "cupy" / "_wheelmerge.py").is_file()
    assert (unpacked / "cupy" / ".data" / "_wheel.cu13.json").is_file()
    twine = run([tool_python(), "-m", "twine", "check", "--strict", merged])
    assert "PASSED" in twine.stdout

    def codes(wheel: Path) -> dict[str, set[str]]:
        output = run([tool_python(), "-m", "check_wheel_contents", wheel], check=False).stdout
        found: dict[str, set[str]] = {}
        for block in re.split(r"^(?=\S)", output, flags=re.M):
            match = re.match(r"\S+: ([WE]\d{3}): ", block)
            if match:
                found.setdefault(match.group(1), set()).update(re.findall(r"^  (\S+)$", block, re.M))
        return found

    original, merged_codes = codes(inputs["cu12"]), codes(merged)
    # CuPy's own findings (duplicate files, three top-level packages) stay as they were; W004
    # names exactly the labelled extension modules, which the loaders import by their real names.
    assert set(merged_codes) == set(original) | {"W004"}
    assert merged_codes["W002"] == original["W002"]
    assert all(re.search(r"\.cu1[23]\.cpython-312-x86_64-linux-gnu\.so$", p) for p in merged_codes["W004"])
    assert len(merged_codes["W004"]) == 36


# --- installed with pip, imported -----------------------------------------------------------------

def make_env(python312: Path, path: Path, links: Path, *requirements: str) -> Path:
    run([python312, "-m", "venv", "--without-pip", path])
    run([tool_python(), "-m", "pip", "--python", path / "bin" / "python", "install", "--no-index",
         "--find-links", links, *requirements], timeout=900)
    return path / "bin" / "python"


def probe(python: Path, env: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    return run([python, "-c", PROBE], env=clean_env(env), cwd=python.parent, check=check)


@pytest.fixture(scope="module")
def bare_env(python312: Path, links: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """cupy alone: no CUDA runtime wheels."""
    return make_env(python312, tmp_path_factory.mktemp("cupy-bare") / "env", links, "cupy")


@pytest.mark.parametrize("label", ["cu12", "cu13"])
def test_import_selects_the_build_of_the_installed_runtime_wheels(
        label: str, python312: Path, links: Path, tmp_path: Path) -> None:
    runtime = RUNTIME[label] + ("==13.*" if label == "cu13" else "")
    python = make_env(python312, tmp_path / "env", links, "cupy", runtime)
    # No driver can be loaded here: the runtime wheels alone decide.
    broken_driver = tmp_path / "no-driver"
    broken_driver.mkdir()
    (broken_driver / "libcuda.so.1").write_bytes(b"")
    seen = json.loads(probe(python, {"LD_LIBRARY_PATH": str(broken_driver)}).stdout)
    assert seen["selected"] == [label] * 3
    assert Path(seen["runtime_module"]).name == f"runtime.{label}.cpython-312-x86_64-linux-gnu.so"
    assert seen["runtime_version"] == RUNTIME_VERSION[label]
    assert seen["build_config"]["cuda"] == f"{label[2:]}.x"
    assert seen["array_type"] == "type"
    # CuPy reads its preload configuration by path, which the merged wheel stores per build:
    # docs/real-wheels.md ("CuPy") says what that costs (cuTENSOR and NCCL are not preloaded).
    assert seen["preload_config"] is None
    # One name per module (one_name.py): every module of the three packages and every module
    # the loaders' manifests name, imported; none held under two names, no labelled name
    # importable.
    for package in PACKAGES:
        report = one_name_report(
            lambda *args: run([python, *args], env=clean_env({"LD_LIBRARY_PATH": str(broken_driver)}),
                              cwd=python.parent), package, ["cu12", "cu13"])
        assert len(report["found"]) > 10, report["found"]
        assert_one_name_per_module(report, {name for name, why in report["failed"].items()
                                            if MISSING_LIBRARY.match(why)})
    # The README's quick start ends with the diagnosis: it names the build and why.
    report = run([python, "-m", "cupy._wheelmerge"], env=clean_env({"LD_LIBRARY_PATH": str(broken_driver)}),
                 cwd=python.parent)
    assert f"selected: {label}, because " in report.stdout and RUNTIME[label] in report.stdout, report.stdout


@pytest.mark.parametrize("label,version", [("cu12", 12080), ("cu13", 13000)])
def test_without_runtime_wheels_the_driver_decides(label: str, version: int, bare_env: Path, tmp_path: Path) -> None:
    driver = build_fake_driver(tmp_path / "driver", version)
    seen = json.loads(probe(bare_env, {"LD_LIBRARY_PATH": str(driver)}).stdout)
    assert seen["selected"] == [label] * 3
    assert seen["runtime_version"] == RUNTIME_VERSION[label]


def test_without_runtime_wheels_or_driver_import_fails_clearly(bare_env: Path, tmp_path: Path) -> None:
    broken_driver = tmp_path / "no-driver"
    broken_driver.mkdir()
    (broken_driver / "libcuda.so.1").write_bytes(b"")
    result = probe(bare_env, {"LD_LIBRARY_PATH": str(broken_driver)}, check=False)
    assert result.returncode == 1
    assert "cupy: cannot select a CUDA build" in result.stderr
    assert "builds for cu12, cu13" in result.stderr
    # The fix is CuPy's own extra of each build, never cuda-bindings, which CuPy does not use.
    assert ('Install what one of them needs:\n    pip install "cupy[ctk-cu12]"\n'
            '    pip install "cupy[ctk-cu13]"') in result.stderr, result.stderr
    assert "cuda-bindings" not in result.stderr
    # The override still imports a build on a machine without any CUDA.
    seen = json.loads(probe(bare_env, {"LD_LIBRARY_PATH": str(broken_driver), "WHEELMERGE_CUDA_MAJOR": "13"}).stdout)
    assert seen["selected"] == ["cu13"] * 3


# --- the extras that differ per build, resolved by pip against the index -------------------------

def test_pip_resolves_each_builds_toolkit_extra(merged: Path, python312: Path, tmp_path: Path) -> None:
    run([python312, "-m", "venv", "--without-pip", tmp_path / "env"])
    python = tmp_path / "env" / "bin" / "python"
    links = tmp_path / "links"
    links.mkdir()
    shutil.copy(merged, links)
    spellings = {"cupy[ctk-cu12]": "12.", "cupy[ctk-cu13]": "13.", "cupy": None, "cupy[ctk]": None}
    # The resolutions run side by side: each mostly waits on the index.
    env = clean_env()
    processes = {
        spelling: subprocess.Popen(
            [str(tool_python()), "-m", "pip", "--python", str(python), "install", "--dry-run", "--quiet",
             "--report", "-", "--find-links", str(links), "--only-binary", ":all:", spelling],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for spelling in spellings}
    for spelling, major in spellings.items():
        out, err = processes[spelling].communicate(timeout=900)
        assert processes[spelling].returncode == 0, f"{spelling}:\n{err}"
        installs = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(out)["install"]}
        assert installs["cupy"] == "14.2.0"
        if major is None:
            assert "cuda-toolkit" not in installs, (spelling, installs)
            assert not any(name.startswith("nvidia-") for name in installs), (spelling, installs)
        else:
            assert installs["cuda-toolkit"].startswith(major), (spelling, installs)
            runtime = "nvidia-cuda-runtime-cu12" if major == "12." else "nvidia-cuda-runtime"
            assert installs[runtime].startswith(major), (spelling, installs)


def test_variant_wheels_of_cupy_hold_each_build_as_built_under_one_name(wheelmerge_bin: Path, inputs: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    """`wheelmerge variants --name cupy`: the two distributions become variant wheels of one release,
    each build's files under their own names (CuPy finds its build-info file by path again)."""
    out = tmp_path / "variants"
    summary = json.loads(wheelmerge(wheelmerge_bin, "variants", "--name", "cupy", "--json", inputs["cu12"], inputs["cu13"],
                                    "-o", out).stdout)
    stem = MERGED_NAME[: -len(".whl")]
    assert [Path(w).name for w in summary["variant_wheels"]] == [f"{stem}-cu12.whl", f"{stem}-cu13.whl"]
    assert Path(summary["index"]).name == "cupy-14.2.0-variants.json"
    for label, wheel in zip(("cu12", "cu13"), summary["variant_wheels"]):
        # Compared by digest, a MiB at a time: holding both builds' bytes would grow this
        # process by hundreds of MiB, which every later child would inherit as its peak RSS
        # (Linux copies the parent's RSS high-water mark at fork), and the RSS budgets of the
        # later suites measure children.
        with zipfile.ZipFile(inputs[label]) as given, zipfile.ZipFile(wheel) as z:
            def digest(archive: zipfile.ZipFile, name: str) -> str:
                h = hashlib.sha256()
                with archive.open(name) as member:
                    for chunk in iter(lambda: member.read(1 << 20), b""):
                        h.update(chunk)
                return h.hexdigest()

            def digests(archive: zipfile.ZipFile) -> dict[str, str]:
                return {n: digest(archive, n) for n in archive.namelist() if ".dist-info/" not in n}
            own, written = digests(given), digests(z)
            assert written == own, sorted(set(written) ^ set(own))[:10]
            assert VARIANT_FILE in written
            metadata = z.read("cupy-14.2.0.dist-info/METADATA").decode()
            assert "\nName: cupy\n" in metadata
            variant = json.loads(z.read("cupy-14.2.0.dist-info/variant.json"))
        # sm_arch: the architectures of CuPy's fat binaries (tests/integration/merge/test_gpu_code.py).
        assert variant["variants"] == {label: {"nvidia": {"cuda_version_lower_bound": [label[2:]],
                                                          "sm_arch": summary["sm_arch"][label]}}}
    verified = json.loads(wheelmerge(wheelmerge_bin, "verify", "--json", *summary["variant_wheels"]).stdout)
    assert [w["valid"] for w in verified["wheels"]] == [True, True]
