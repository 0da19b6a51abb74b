"""`wheelmerge build`: a project built once per variant (CUDA major, torch release, CPU level)
through its own PEP 517 backend, each build from a clean copy of the source tree and with its
variant's environment (toolkit, -march flags, build-requires), then merged.

The projects built are examples/wmdemo and the small projects of build_projects/ (see its
README.md); every test copies the project it builds into its temporary directory first.

CUDA toolkits: most tests use toolkit roots made in the test's temporary directory. A root
holding only include/cuda.h (`#define CUDA_VERSION 12090`), only version.json or only bin/nvcc
(a script printing `nvcc --version`'s release line) is a legitimate toolkit as far as
wheelmerge's discovery goes: that is where it reads a toolkit's version from, and the projects
built here compile no CUDA code. The real toolkit under /usr/local is used where discovery of it
is the point.

Every build runs with a controlled environment (`build_env`): no CUDA_HOME, CUDA_PATH, CUDACXX or
WHEELMERGE_CUDA_N from outside unless a test sets them, no nvcc on PATH, and TMPDIR in the
test's directory so that what the binary leaves in the temporary directory can be checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pytest

import wheelgen
from conftest import ROOT, clean_env, run, tool_python, loader_manifest

PROJECTS = Path(__file__).resolve().parents[1] / "support" / "build_projects"
WMDEMO = ROOT / "examples" / "wmdemo"
PYTHON = tool_python()
LABELS = ("cu12", "cu13")
# Variables that would decide the toolkit or the build's major if they leaked in from outside.
_OUTSIDE_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAToolkit_ROOT", "CUDA_TOOLKIT_ROOT_DIR",
                      "CUDA_BIN_PATH", "CUDACXX", "WMDEMO_CUDA_MAJOR", "WHEELMERGE_BUILD_CUDA_MAJOR")


# --- toolkits ----------------------------------------------------------------------------------

def make_toolkit(root: Path, *, cuda_version: int | None = None, version_json: str | None = None,
                 nvcc_release: str | None = None) -> Path:
    """A toolkit root as far as discovery goes: include/cuda.h with CUDA_VERSION, version.json
    with cuda.version, and/or bin/nvcc printing `release X.Y, VX.Y.Z` (no CUDA code is
    compiled by the projects built here)."""
    root.mkdir(parents=True)
    if cuda_version is not None:
        (root / "include").mkdir()
        (root / "include" / "cuda.h").write_text(
            f"#ifndef __cuda_cuda_h__\n#define __cuda_cuda_h__\n#define CUDA_VERSION {cuda_version}\n#endif\n")
    if version_json is not None:
        (root / "version.json").write_text(json.dumps(
            {"cuda": {"name": "CUDA SDK", "version": version_json},
             "cuda_nvcc": {"name": "CUDA NVCC", "version": version_json}}))
    if nvcc_release is not None:
        (root / "bin").mkdir()
        nvcc = root / "bin" / "nvcc"
        short = ".".join(nvcc_release.split(".")[:2])
        nvcc.write_text("#!/bin/sh\n"
                        "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
                        f"echo 'Cuda compilation tools, release {short}, V{nvcc_release}'\n")
        nvcc.chmod(0o755)
    return root


@dataclass(frozen=True)
class Toolkits:
    cu12: Path  # include/cuda.h only: CUDA 12.9, no nvcc
    cu13: Path  # include/cuda.h (CUDA 13.0) and bin/nvcc

    def __getitem__(self, label: str) -> Path:
        return {"cu12": self.cu12, "cu13": self.cu13}[label]

    def args(self) -> list[str]:
        return ["--cuda", f"12={self.cu12}", "--cuda", f"13={self.cu13}"]


@pytest.fixture
def toolkits(tmp_path: Path) -> Toolkits:
    base = tmp_path / "toolkits"
    return Toolkits(cu12=make_toolkit(base / "cuda-12.9", cuda_version=12090),
                    cu13=make_toolkit(base / "cuda-13.0", cuda_version=13000, nvcc_release="13.0.88"))


def real(path: Path | str) -> str:
    return os.path.realpath(path)


# --- running the binary ------------------------------------------------------------------------

def path_without_nvcc() -> str:
    return ":".join(d for d in os.environ.get("PATH", "").split(":") if d and not (Path(d) / "nvcc").exists())


def build_env(tmp_path: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = clean_env({"NO_COLOR": "1"})
    for key in list(env):
        if key in _OUTSIDE_VARIABLES or re.fullmatch(r"WHEELMERGE_CUDA_\d+", key):
            del env[key]
    env["PATH"] = path_without_nvcc()
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmpdir)
    env.update(extra or {})
    return env


def wheelmerge(binary: Path, *args: str | Path, tmp_path: Path, env: Mapping[str, str] | None = None,
               cwd: Path | None = None, check: bool = False, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return run([binary, *args], env=build_env(tmp_path, env), cwd=cwd or tmp_path, check=check, timeout=timeout)


def copy_project(name: str, tmp_path: Path) -> Path:
    source = WMDEMO if name == "wmdemo" else PROJECTS / name
    target = tmp_path / "projects" / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(
        "build", "dist", "*.egg-info", "__pycache__", "*.so", "*.so.*"))
    return target


@dataclass
class Built:
    summary: dict[str, Any]   # the --json output
    wheel: Path               # the one file in the output directory
    stderr: str

    def variant(self, label: str) -> dict[str, Any]:
        return next(v for v in self.summary["variants"] if v["label"] == label)


def describe(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit status {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def build_ok(binary: Path, project: Path, tmp_path: Path, *args: str | Path,
             env: Mapping[str, str] | None = None, isolation: bool = False, name: str = "out") -> Built:
    """Builds with --json into the new directory tmp_path/name; fails the test unless it worked."""
    out = tmp_path / name
    assert not out.exists()
    extra = [] if isolation else ["--no-isolation", "--python", str(PYTHON)]
    result = wheelmerge(binary, "build", project, "-o", out, "--json", *extra, *args, tmp_path=tmp_path, env=env)
    assert result.returncode == 0, describe(result)
    files = sorted(out.iterdir())
    assert len(files) == 1, f"expected one merged wheel in {out}, found {files}\n{describe(result)}"
    return Built(json.loads(result.stdout), files[0], result.stderr)


# --- reading merged wheels ---------------------------------------------------------------------

def manifest(wheel: Path, package: str) -> dict[str, Any]:
    """The loader manifest of `package` in the merged wheel (docs/interfaces.md)."""
    with zipfile.ZipFile(wheel) as z:
        loader = z.read(f"{package}/_wheelmerge.py").decode()
    return loader_manifest(loader)


def variant_bytes(wheel: Path, package: str, label: str, original: str) -> bytes:
    """The bytes of `label`'s build of `package/original`, found through the manifest."""
    files = manifest(wheel, package)["files"][label]
    assert original in files, f"{original} is not a {label} variant file of {package}: {files}"
    with zipfile.ZipFile(wheel) as z:
        return z.read(f"{package}/{files[original]}")


def variant_module(wheel: Path, package: str, label: str, original: str) -> dict[str, Any]:
    """The globals of a generated variant module (plain literals)."""
    namespace: dict[str, Any] = {}
    exec(compile(variant_bytes(wheel, package, label, original), original, "exec"), namespace)
    return namespace


def inspect_json(binary: Path, wheel: Path, tmp_path: Path) -> dict[str, Any]:
    result = wheelmerge(binary, "inspect", wheel, "--json", tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    return json.loads(result.stdout)


def snapshot(tree: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under `tree`: kind, mtime and content hash, to tell whether anything changed."""
    out = {}
    for path in sorted(tree.rglob("*")):
        st = path.lstat()
        if path.is_symlink():
            out[str(path.relative_to(tree))] = ("link", st.st_mtime_ns, os.readlink(path))
        elif path.is_dir():
            out[str(path.relative_to(tree))] = ("dir", st.st_mtime_ns, "")
        else:
            out[str(path.relative_to(tree))] = ("file", st.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


# --- (1) the bundled example -------------------------------------------------------------------

IMPORT_REPORT = """
import json, wmdemo
from wmdemo import _wheelmerge
info = wmdemo.runtime_info()
print(json.dumps({"build_major": wmdemo.build_major(), "runtime": info, "selected": _wheelmerge.selected(),
                  "build_info": _wheelmerge.build_info(), "variants": _wheelmerge.variants(),
                  "kernel": open(wmdemo.kernel_path(), "rb").read().decode("latin-1")}))
"""


def test_wmdemo_build_merges_both_majors_and_imports_each(wheelmerge_bin, toolkits, make_venv, tmp_path):
    project = copy_project("wmdemo", tmp_path)
    before = snapshot(project)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args())
    assert snapshot(project) == before, "the build changed the source tree"
    assert not (project / "build").exists()
    assert re.fullmatch(r"wmdemo-0\.1\.0-(cp3\d+)-\1-linux_x86_64\.whl", built.wheel.name), built.wheel.name

    report = inspect_json(wheelmerge_bin, built.wheel, tmp_path)
    assert report["merged"] is True
    assert report["variants"] == list(LABELS)
    loaders = {l["package"]: l for l in report["loaders"]}
    assert set(loaders) == {"wmdemo"}, loaders
    assert loaders["wmdemo"]["build_info"] == {"cu12": {"cuda_version": "12.9"}, "cu13": {"cuda_version": "13.0"}}
    variant_paths = {f["path"] for f in report["files"] if f["variant"] is not None}
    for label in LABELS:
        assert any(re.fullmatch(rf"wmdemo/_core\.{label}\..*\.so", p) for p in variant_paths), variant_paths
        assert f"wmdemo/kernels/scale.{label}.cubin" in variant_paths, variant_paths

    venv = make_venv("build-wmdemo")
    venv.install("--no-deps", built.wheel)  # cuda-bindings is not needed: the override selects
    for label, major in (("cu12", 12), ("cu13", 13)):
        result = venv.run("-c", IMPORT_REPORT, env={"WHEELMERGE_CUDA_MAJOR": str(major)})
        seen = json.loads(result.stdout)
        assert seen["selected"] == label, seen
        assert seen["build_major"] == major, seen
        assert seen["runtime"]["core_build_major"] == major, seen
        assert seen["runtime"]["nested_build_major"] == major, seen
        assert seen["runtime"]["runtime_library_major"] == major, seen
        assert f"built for CUDA {major}" in seen["kernel"], seen["kernel"]
        assert seen["build_info"] == {"cuda_version": {12: "12.9", 13: "13.0"}[major]}, seen
        assert seen["variants"] == list(LABELS)


# --- (2) the default, isolated build -----------------------------------------------------------

HELPER = "wheelmerge-itest-helper"


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_isolated_build_gets_a_fresh_environment_per_variant(wheelmerge_bin, toolkits, tmp_path, installer):
    """The default: a venv per variant, the project's build requirements installed into it from
    PyPI (settings/ asks for setuptools>=70, newer than the setuptools 65 that Python 3.11's venv
    bundles, so pip has to fetch it), then what get_requires_for_build_wheel asks for, here a
    helper only a --find-links directory holds. With --installer uv the same, made by the uv
    beside --python (the pinned test requirement in .venv/bin)."""
    project = copy_project("settings", tmp_path)
    requirements = project / "pyproject.toml"
    requirements.write_text(requirements.read_text().replace('"setuptools>=61"', '"setuptools>=70"'))
    links = tmp_path / "links"
    links.mkdir()
    wheelgen.build_wheel(links / wheelgen.wheel_filename("wheelmerge_itest_helper", "1.0", "py3-none-any"),
                         {"wheelmerge_itest_helper/__init__.py": b'VALUE = "from --find-links"\n'},
                         name="wheelmerge_itest_helper", version="1.0", tags="py3-none-any", root_is_purelib=True)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "--python", PYTHON,
                     "--find-links", links, "-C", f"probe-extra-requires={HELPER}",
                     "--log-dir", tmp_path / "logs", "--installer", installer, isolation=True)
    uv = re.escape(str(PYTHON.parent / "uv"))

    prefixes = {}
    for label in LABELS:
        calls = variant_module(built.wheel, "settingsprobe", label, "_settings.py")["CALLS"]
        assert [c["hook"] for c in calls] == ["get_requires_for_build_wheel", "build_wheel"], calls
        for call in calls:
            assert call["major"] == label[2:], call
            assert call["config_settings"] == {"probe-extra-requires": HELPER}, call
            # A virtual environment of its own: not the interpreter given with --python, not
            # the other variant's.
            assert call["sys_prefix"] != call["sys_base_prefix"], call
            assert real(call["sys_prefix"]) != real(PYTHON.parent.parent), call
            assert call["virtual_env"] and real(call["virtual_env"]) == real(call["sys_prefix"]), call
            # setuptools from the build environment, as new as the project asks.
            assert real(call["setuptools_file"]).startswith(real(call["sys_prefix"]) + os.sep), call
            assert int(call["setuptools_version"].split(".")[0]) >= 70, call
        assert calls[-1]["helper"] == "from --find-links", calls
        prefixes[label] = real(calls[0]["sys_prefix"])
        log = (tmp_path / "logs" / f"{label}.log").read_text()
        if installer == "pip":
            assert re.search(r"\$ \S+/python3?(\.\d+)? -m venv ", log), log
            assert re.search(r"\$ \S+ -m pip install .*'?setuptools>=70'?", log), log
            assert re.search(r"Successfully installed .*setuptools-\d", log), log
            assert re.search(rf"\$ \S+ -m pip install .*--find-links {re.escape(str(links))} .*{HELPER}", log), log
        else:
            assert re.search(rf"\$ {uv} venv --quiet --python {re.escape(str(PYTHON))} ", log), log
            assert re.search(rf"\$ {uv} pip install --python \S+ .*'?setuptools>=70'?", log), log
            assert re.search(r"^ \+ setuptools==\d", log, re.M), log
            assert re.search(rf"\$ {uv} pip install .*--find-links {re.escape(str(links))} .*{HELPER}", log), log
            assert " -m pip " not in log, log
    assert prefixes["cu12"] != prefixes["cu13"], prefixes
    # The source tree was not built in: the backend wrote its files into a copy.
    assert not (project / ".probe_calls.json").exists()
    assert not (project / "settingsprobe" / "_settings.py").exists()


# --- (3), (4) toolkits -------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["command line", "WHEELMERGE_CUDA_12", "config"])
def test_explicit_toolkit_of_another_major_is_refused(wheelmerge_bin, toolkits, tmp_path, where):
    project = copy_project("envprobe", tmp_path)
    out = tmp_path / "out"
    args: list[str | Path] = ["--cuda", f"13={toolkits.cu13}"]
    env = {}
    rule = {"command line": "--cuda 12=PATH", "WHEELMERGE_CUDA_12": "WHEELMERGE_CUDA_12",
            "config": "[tool.wheelmerge.cu12] toolkit"}[where]
    if where == "command line":
        args += ["--cuda", f"12={toolkits.cu13}"]
    elif where == "WHEELMERGE_CUDA_12":
        args += ["--cuda", "12"]
        env["WHEELMERGE_CUDA_12"] = str(toolkits.cu13)
    else:
        args += ["--cuda", "12"]
        with (project / "pyproject.toml").open("a") as f:
            f.write(f'toolkit = "{toolkits.cu13}"\n')  # appended to [tool.wheelmerge.cu12]
    result = wheelmerge(wheelmerge_bin, "build", project, *args, "-o", out, "--no-isolation", tmp_path=tmp_path, env=env)
    assert result.returncode == 2, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert len(errors) == 1, describe(result)
    assert str(toolkits.cu13) in errors[0], errors
    assert rule in errors[0], errors
    assert "CUDA 12" in errors[0] and "13.0" in errors[0], errors
    assert "include/cuda.h" in errors[0], errors  # where the version was read
    assert "copying the source tree" not in result.stderr, "a build started anyway"
    assert not out.exists()

    as_json = wheelmerge(wheelmerge_bin, "build", project, *args, "-o", out, "--no-isolation", "--json",
                         tmp_path=tmp_path, env=env)
    assert as_json.returncode == 2
    error = json.loads(as_json.stdout)["error"]
    assert error["kind"] == "usage", error
    assert error["problems"][0]["file"] == str(toolkits.cu13), error


def test_missing_toolkit_lists_every_place_looked_at(wheelmerge_bin, toolkits, tmp_path):
    if list(Path("/usr/local").glob("cuda-11*")):
        pytest.skip("this machine has a CUDA 11 toolkit under /usr/local")
    project = copy_project("envprobe", tmp_path)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, "--cuda", "11", "--cuda", f"13={toolkits.cu13}",
                        "-o", out, "--no-isolation", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "no CUDA 11 toolkit found" in result.stderr, result.stderr
    for place in ("--cuda 11=PATH", "WHEELMERGE_CUDA_11", "[tool.wheelmerge.cu11] toolkit",
                  "found none named", "no /usr/local/cuda-11.*", "no nvcc on PATH"):
        assert place in result.stderr, f"{place!r} missing from:\n{result.stderr}"
    assert "copying the source tree" not in result.stderr
    assert not out.exists()


def test_missing_toolkit_names_the_candidates_passed_over(wheelmerge_bin, toolkits, tmp_path):
    """CUDA_HOME, CUDA_PATH and nvcc on PATH of other majors are candidates, not errors; when no
    toolkit fits, the message says what each of them was. Two missing majors: both reported."""
    if list(Path("/usr/local").glob("cuda-1[01]*")):
        pytest.skip("this machine has a CUDA 10 or 11 toolkit under /usr/local")
    project = copy_project("envprobe", tmp_path)
    env = {"CUDA_HOME": str(toolkits.cu13), "CUDA_PATH": str(toolkits.cu12),
           "PATH": f"{toolkits.cu13}/bin:{path_without_nvcc()}"}
    result = wheelmerge(wheelmerge_bin, "build", project, "--cuda", "10", "--cuda", "11",
                        "-o", tmp_path / "out", "--no-isolation", tmp_path=tmp_path, env=env)
    assert result.returncode == 2, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert len(errors) == 2, describe(result)
    for major, error in zip((10, 11), errors):
        assert f"no CUDA {major} toolkit found" in error, error
        assert f"{real(toolkits.cu13)} from CUDA_HOME (CUDA 13.0)" in error, error
        assert f"{real(toolkits.cu12)} from CUDA_PATH (CUDA 12.9)" in error, error
        assert f"{real(toolkits.cu13)} from nvcc on PATH (CUDA 13.0)" in error, error


@pytest.mark.parametrize("layout, version, source", [
    ({"version_json": "12.8.1"}, "12.8.1", "version.json"),
    ({"cuda_version": 12040}, "12.4", "include/cuda.h"),
    ({"nvcc_release": "12.6.85"}, "12.6.85", "bin/nvcc --version"),
    ({"version_json": "12.8.1", "cuda_version": 12040, "nvcc_release": "12.6.85"}, "12.8.1", "version.json"),
    ({"cuda_version": 12040, "nvcc_release": "12.6.85"}, "12.4", "include/cuda.h"),
], ids=["version.json", "cuda.h", "nvcc", "version.json first", "cuda.h before nvcc"])
def test_toolkit_version_sources(wheelmerge_bin, toolkits, tmp_path, layout, version, source):
    """The version a root reports, read through the refusal of a root given for another major
    (the message says the version found and where it came from; nothing is built)."""
    root = make_toolkit(tmp_path / "candidate", **layout)
    project = copy_project("envprobe", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", project, "--cuda", "11", "--cuda", f"11={root}",
                        "-o", tmp_path / "out", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert f"found CUDA {version} (from {source})" in result.stderr, result.stderr


def test_toolkit_root_without_a_version_is_refused(wheelmerge_bin, toolkits, tmp_path):
    empty = tmp_path / "empty-toolkit"
    empty.mkdir()
    project = copy_project("envprobe", tmp_path)
    for args, rule in (([f"12={empty}"], "--cuda 12=PATH"), ([f"12={tmp_path / 'nowhere'}"], "--cuda 12=PATH")):
        result = wheelmerge(wheelmerge_bin, "build", project, "--cuda", *args, "--cuda", f"13={toolkits.cu13}",
                            "-o", tmp_path / "out", tmp_path=tmp_path)
        assert result.returncode == 2, describe(result)
        assert f"no CUDA toolkit at the path {rule} names" in result.stderr, result.stderr
    # A broken WHEELMERGE_CUDA_12 is an error too, unless the command line names a root first.
    env = {"WHEELMERGE_CUDA_12": str(empty)}
    result = wheelmerge(wheelmerge_bin, "build", project, "--cuda", "12", "--cuda", f"13={toolkits.cu13}",
                        "-o", tmp_path / "out", tmp_path=tmp_path, env=env)
    assert result.returncode == 2, describe(result)
    assert "no CUDA toolkit at the path WHEELMERGE_CUDA_12 names" in result.stderr, result.stderr


@pytest.mark.parametrize("case", ["CUDA_HOME and CUDA_PATH", "env and nvcc on PATH", "config", "command line first"])
def test_toolkit_discovery(wheelmerge_bin, toolkits, tmp_path, case):
    project = copy_project("envprobe", tmp_path)
    cu14 = make_toolkit(tmp_path / "toolkits" / "nvcc-only-14", nvcc_release="14.1.7")
    if case == "CUDA_HOME and CUDA_PATH":
        # Each variable is used for the major it holds, whichever variable that is.
        env = {"CUDA_HOME": str(toolkits.cu13), "CUDA_PATH": str(toolkits.cu12)}
        args, expected = ["--cuda", "12", "--cuda", "13"], {
            "cu12": ("CUDA_PATH", toolkits.cu12, "12.9"), "cu13": ("CUDA_HOME", toolkits.cu13, "13.0")}
    elif case == "env and nvcc on PATH":
        # CUDA 14 is nowhere under /usr/local: found by the nvcc on PATH (version from nvcc).
        env = {"WHEELMERGE_CUDA_12": str(toolkits.cu12), "PATH": f"{cu14}/bin:{path_without_nvcc()}"}
        args, expected = ["--cuda", "12", "--cuda", "14"], {
            "cu12": ("WHEELMERGE_CUDA_12", toolkits.cu12, "12.9"), "cu14": ("nvcc on PATH", cu14, "14.1.7")}
    elif case == "config":
        # Majors and toolkits from [tool.wheelmerge]; no --cuda at all.
        text = (project / "pyproject.toml").read_text().replace(
            "[tool.wheelmerge]\n", "[tool.wheelmerge]\ncuda = [12, 13]\n")
        text += f'toolkit = "{toolkits.cu12}"\n\n[tool.wheelmerge.cu13]\ntoolkit = "{toolkits.cu13}"\n'
        (project / "pyproject.toml").write_text(text)
        env, args = {}, []
        expected = {"cu12": ("[tool.wheelmerge.cu12] toolkit", toolkits.cu12, "12.9"),
                    "cu13": ("[tool.wheelmerge.cu13] toolkit", toolkits.cu13, "13.0")}
    else:
        # --cuda N=PATH is looked at before WHEELMERGE_CUDA_N (which names nothing here).
        env = {"WHEELMERGE_CUDA_12": str(tmp_path / "nowhere"), "CUDA_HOME": str(toolkits.cu13)}
        args = ["--cuda", f"12={toolkits.cu12}"]  # names a toolkit; the builds stay the default 12 and 13
        expected = {"cu12": ("--cuda 12=PATH", toolkits.cu12, "12.9"), "cu13": ("CUDA_HOME", toolkits.cu13, "13.0")}
    built = build_ok(wheelmerge_bin, project, tmp_path, *args, env=env)
    assert [v["label"] for v in built.summary["variants"]] == sorted(expected), built.summary
    for label, (rule, root, version) in expected.items():
        v = built.variant(label)
        assert (v["found_by"], v["toolkit"], v["cuda_version"]) == (rule, real(root), version), v
        seen = variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"]
        assert seen["env"]["CUDA_HOME"] == real(root), seen
        assert seen["env"]["WHEELMERGE_BUILD_CUDA_MAJOR"] == label[2:], seen
    # build_info has the toolkit's major.minor, the part the loader's floors compare.
    assert manifest(built.wheel, "envprobe")["build_info"] == {
        label: {"cuda_version": ".".join(version.split(".")[:2])} for label, (_, _, version) in expected.items()}


def test_installed_cuda13_is_discovered_under_usr_local(wheelmerge_bin, toolkits, tmp_path):
    installed = sorted((p for p in Path("/usr/local").glob("cuda-13.*") if (p / "include" / "cuda.h").exists()),
                       reverse=True)
    if not installed:
        pytest.skip("no CUDA 13 toolkit under /usr/local")
    project = copy_project("envprobe", tmp_path)
    built = build_ok(wheelmerge_bin, project, tmp_path, "--cuda", f"12={toolkits.cu12}")
    v = built.variant("cu13")
    assert v["found_by"] == "/usr/local/cuda-13.*", v
    assert v["toolkit"] == real(installed[0]), v
    assert re.fullmatch(r"13\.\d+(\.\d+)?", v["cuda_version"]), v
    seen = variant_module(built.wheel, "envprobe", "cu13", "_buildenv.py")["SEEN"]
    assert seen["env"]["CUDACXX"] == f"{real(installed[0])}/bin/nvcc", seen


# --- (5) a failing build -----------------------------------------------------------------------

SENTINEL = "failpkg-sentinel: this project refuses to build for CUDA 12"


def test_failing_build_reports_variant_command_and_log(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("failing", tmp_path)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out,
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path)
    assert result.returncode == 1, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert len(errors) == 1, describe(result)  # the cu13 build worked
    error = errors[0]
    assert error.startswith("wheelmerge: error: cu12: "), error
    # The command that failed, and the end of its log with the backend's message.
    assert re.search(rf"\$ {re.escape(str(PYTHON))} \S*hook_runner\.py build_wheel setuptools\.build_meta", error), error
    assert SENTINEL in result.stderr, result.stderr
    match = re.search(r"last lines of (\S+\.log):", result.stderr)
    assert match, result.stderr
    log = Path(match.group(1))
    assert log.is_file(), f"the log {log} named in the message does not exist"
    assert SENTINEL in log.read_text()
    # The same log as announced when the variant started, under the default log directory (in TMPDIR).
    assert f"[cu12] CUDA 12.9 at {real(toolkits.cu12)}" in result.stderr
    assert re.search(rf"^\[cu12\] .*; log: {re.escape(str(log))}$", result.stderr, re.M), result.stderr
    assert real(log).startswith(real(tmp_path / "tmpdir") + os.sep), log
    # Nothing written to the output directory.
    assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())

    as_json = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out, "--json",
                         "--no-isolation", "--python", PYTHON, tmp_path=tmp_path)
    assert as_json.returncode == 1, describe(as_json)
    error_json = json.loads(as_json.stdout)["error"]
    assert [p["file"] for p in error_json["problems"]] == ["cu12"], error_json
    assert SENTINEL in error_json["problems"][0]["found"], error_json
    assert not out.exists() or not any(out.iterdir())


def test_failing_build_log_tail_is_readable(wheelmerge_bin, toolkits, tmp_path):
    """The end of the log is shown as the log's lines, on stderr and in --json's "found", not
    folded into one line of escaped \\n sequences."""
    project = copy_project("failing", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out", "--json",
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path)
    assert result.returncode == 1, describe(result)
    last_line = f"RuntimeError: {SENTINEL}"
    assert last_line in [l.strip() for l in result.stderr.splitlines()], (
        f"the log's last line {last_line!r} is not a line of stderr:\n{result.stderr}")
    found = json.loads(result.stdout)["error"]["problems"][0]["found"]
    assert last_line in [l.strip() for l in found.splitlines()], f"not a line of the JSON's found: {found!r}"


# --- (6) stale build outputs in the source tree ------------------------------------------------

def test_stale_build_of_the_other_major_is_not_reused(wheelmerge_bin, toolkits, make_venv, tmp_path):
    project = copy_project("stale", tmp_path)
    # Leave build/ (extension object, build/lib.*/ files) and stalepkg.egg-info/ of a CUDA 13
    # build in the source tree, the way an earlier `setup.py build` leaves them.
    stale_env = clean_env({"WHEELMERGE_BUILD_CUDA_MAJOR": "13"})
    run([PYTHON, "setup.py", "-q", "build", "egg_info"], env=stale_env, cwd=project)
    stale_lib = next((project / "build").glob("lib.*/stalepkg"))
    assert (stale_lib / "_generated.py").read_text().startswith("MAJOR = 13")
    assert list(stale_lib.glob("_ext*.so")) and (project / "stalepkg.egg-info").is_dir()

    # The trap is real: an in-place rebuild for CUDA 12 reuses the CUDA 13 files.
    naive = tmp_path / "naive"
    shutil.copytree(project, naive, symlinks=True)
    run([PYTHON, "-m", "build", "--wheel", "--no-isolation", "-o", tmp_path / "naive-out", naive],
        env=clean_env({"WHEELMERGE_BUILD_CUDA_MAJOR": "12"}), cwd=naive)
    naive_wheel = next((tmp_path / "naive-out").glob("*.whl"))
    with zipfile.ZipFile(naive_wheel) as z:
        assert z.read("stalepkg/_generated.py").startswith(b"MAJOR = 13"), "fixture no longer traps a naive rebuild"
        assert b"stalepkg-built-for-cuda-13;" in z.read(next(n for n in z.namelist() if n.endswith(".so")))

    before = snapshot(project)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args())
    assert snapshot(project) == before, "the build changed the source tree"

    for label in LABELS:
        major = int(label[2:])
        generated = variant_module(built.wheel, "stalepkg", label, "_generated.py")
        assert generated["MAJOR"] == major, (label, generated)
        assert generated["STALE_AT_START"] == [], (label, generated)  # the copy had no build/ or egg-info
        ext = manifest(built.wheel, "stalepkg")["modules"][label]["stalepkg._ext"]
        with zipfile.ZipFile(built.wheel) as z:
            code = z.read(f"stalepkg/{ext}")
        assert f"stalepkg-built-for-cuda-{major};".encode() in code, label
        assert f"stalepkg-built-for-cuda-{25 - major};".encode() not in code, label

    venv = make_venv("build-stale")
    venv.install("--no-deps", built.wheel)
    for major in (12, 13):
        result = venv.run("-c", "import stalepkg, stalepkg._generated as g; print(stalepkg.build_major(), g.MAJOR)",
                          env={"WHEELMERGE_CUDA_MAJOR": str(major)})
        assert result.stdout.split() == [str(major), str(major)], result.stdout


# --- (7) the environment of each variant's build -----------------------------------------------

TOOLKIT_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAToolkit_ROOT", "CUDA_TOOLKIT_ROOT_DIR", "CUDA_BIN_PATH")


def test_variant_environment_reaches_the_build(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    before = snapshot(project)
    # Outside: another toolkit's nvcc on PATH and its variables, a PYTHONPATH, a variable the
    # configuration overrides.
    other = make_toolkit(tmp_path / "toolkits" / "other-13.1", cuda_version=13010, nvcc_release="13.1.80")
    outer_path = path_without_nvcc()
    outside = {"PATH": f"{other}/bin:{outer_path}", "PYTHONPATH": str(tmp_path / "outer-pythonpath"),
               "WMTEST_OVERRIDE": "outer", **{k: str(other) for k in TOOLKIT_VARIABLES}}
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), env=outside)
    assert snapshot(project) == before
    seen = {label: variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"] for label in LABELS}
    for label in LABELS:
        env, root = seen[label]["env"], real(toolkits[label])
        assert env["WHEELMERGE_BUILD_CUDA_MAJOR"] == label[2:], env
        for key in TOOLKIT_VARIABLES:
            assert env[key] == root, (key, env)
        # The toolkit's bin first; the other toolkit's bin (it holds an nvcc) hidden.
        assert env["PATH"] == f"{root}/bin:{outer_path}", env
        # --no-isolation: the frontend's environment is the build environment, PYTHONPATH
        # included (pip's build isolation works through it).
        assert env["PYTHONPATH"] == str(tmp_path / "outer-pythonpath"), env
        assert env["WMTEST_GLOBAL"] == "from-tool-wheelmerge", env
        # The build ran in a copy, not in the project directory.
        assert not real(seen[label]["cwd"]).startswith(real(project)), seen[label]["cwd"]
    # CUDACXX and nvcc only where the toolkit has bin/nvcc.
    assert seen["cu12"]["env"]["CUDACXX"] is None, seen["cu12"]
    assert seen["cu12"]["nvcc"] is None, seen["cu12"]
    assert seen["cu13"]["env"]["CUDACXX"] == f"{real(toolkits.cu13)}/bin/nvcc", seen["cu13"]
    assert real(seen["cu13"]["nvcc"]) == real(toolkits.cu13 / "bin" / "nvcc"), seen["cu13"]
    # [tool.wheelmerge.cu12] env: for cu12 only, over [tool.wheelmerge] env, over the outer environment.
    assert seen["cu12"]["env"]["WMTEST_CU12_ONLY"] == "only-for-cu12"
    assert seen["cu13"]["env"]["WMTEST_CU12_ONLY"] is None
    assert seen["cu12"]["env"]["WMTEST_OVERRIDE"] == "cu12"
    assert seen["cu13"]["env"]["WMTEST_OVERRIDE"] == "global"
    assert seen["cu12"]["cwd"] != seen["cu13"]["cwd"]


def test_inherited_cudacxx_does_not_reach_a_toolkit_without_nvcc(wheelmerge_bin, toolkits, tmp_path):
    """A CUDACXX from outside names some other toolkit's nvcc; the cu12 toolkit has none, so its
    build must not be handed the outside one (CMake and meson would compile with it)."""
    project = copy_project("envprobe", tmp_path)
    outer = "/opt/some-other-cuda/bin/nvcc"
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), env={"CUDACXX": outer})
    seen = {label: variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"] for label in LABELS}
    assert seen["cu13"]["env"]["CUDACXX"] == f"{real(toolkits.cu13)}/bin/nvcc", seen["cu13"]
    assert seen["cu12"]["env"]["CUDACXX"] != outer, (
        f"the cu12 build (toolkit {toolkits.cu12}, no bin/nvcc) was given the outer CUDACXX={outer}")
    assert seen["cu12"]["env"]["CUDACXX"] is None, seen["cu12"]


# --- (8) where the configuration comes from ----------------------------------------------------

CONFIG_MARKER = "# --- wheelmerge configuration"


def without_config(project: Path) -> str:
    """The project's pyproject.toml up to its wheelmerge configuration."""
    text = (project / "pyproject.toml").read_text()
    assert CONFIG_MARKER in text
    return text[: text.index(CONFIG_MARKER)]


def test_config_from_wheelmerge_yaml(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    (project / "pyproject.toml").write_text(without_config(project))
    (project / "wheelmerge.yaml").write_text(f"""\
# the same schema as [tool.wheelmerge]
cuda: [12, 13]
variant-files:
  - envprobe/_buildenv.py
env:
  WMTEST_GLOBAL: from-yaml
  WMTEST_OVERRIDE: global-yaml
cu12:
  env:
    WMTEST_CU12_ONLY: yaml-for-cu12
    WMTEST_OVERRIDE: cu12-yaml
cu13:
  toolkit: {toolkits.cu13}
""")
    built = build_ok(wheelmerge_bin, project, tmp_path, env={"WHEELMERGE_CUDA_12": str(toolkits.cu12)})
    assert built.variant("cu13")["found_by"] == "[tool.wheelmerge.cu13] toolkit", built.summary
    assert built.variant("cu12")["found_by"] == "WHEELMERGE_CUDA_12", built.summary
    seen = {label: variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"]["env"] for label in LABELS}
    assert seen["cu12"]["WMTEST_GLOBAL"] == seen["cu13"]["WMTEST_GLOBAL"] == "from-yaml", seen
    assert (seen["cu12"]["WMTEST_CU12_ONLY"], seen["cu13"]["WMTEST_CU12_ONLY"]) == ("yaml-for-cu12", None), seen
    assert (seen["cu12"]["WMTEST_OVERRIDE"], seen["cu13"]["WMTEST_OVERRIDE"]) == ("cu12-yaml", "global-yaml"), seen


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# Each case: the configuration file's text and, per problem, a text on its line and the message.
INVALID_CONFIGS = {
    "toml unknown key": ("pyproject.toml", '[tool.wheelmerge]\nvariant-files = ["envprobe/_buildenv.py"]\ncolour = "blue"\n',
                         [("colour", 'unknown key "colour"')]),
    "toml unknown cu12 key": ("pyproject.toml", '[tool.wheelmerge]\nvariant-files = ["envprobe/_buildenv.py"]\n'
                              '[tool.wheelmerge.cu12]\ncolour = "blue"\n',
                              [("colour", 'unknown key "cu12.colour"')]),
    "toml wrong types": ("pyproject.toml", '[tool.wheelmerge]\ncuda = "12"\ndriver-fallback = "yes"\n',
                         [("cuda =", '"cuda" must be an array'),
                          ("driver-fallback", '"driver-fallback" must be true or false')]),
    "yaml unknown key": ("wheelmerge.yaml", "variant-files:\n  - envprobe/_buildenv.py\ncolour: blue\n",
                         [("colour", 'unknown key "colour"')]),
    "yaml unknown cu12 key": ("wheelmerge.yaml", "variant-files: [envprobe/_buildenv.py]\ncu12:\n  env: {A: b}\n  colour: blue\n",
                              [("colour", 'unknown key "cu12.colour"')]),
}


@pytest.mark.parametrize("case", sorted(INVALID_CONFIGS))
def test_invalid_config_is_located(wheelmerge_bin, toolkits, tmp_path, case):
    """Exit 2 with FILE:LINE:COL of each problem, before any build starts."""
    project = copy_project("envprobe", tmp_path)
    name, text, problems = INVALID_CONFIGS[case]
    base = without_config(project)
    if name == "pyproject.toml":
        text = base + text
    else:
        (project / "pyproject.toml").write_text(base)
    config_file = project / name
    config_file.write_text(text)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out, "--no-isolation",
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert len(errors) == len(problems), describe(result)
    lines = text.splitlines()
    for needle, what in problems:
        line = _line_of(text, needle)
        located = [re.match(rf"wheelmerge: error: {re.escape(str(config_file))}:(\d+):(\d+): ", e) for e in errors
                   if what in e]
        assert located and located[0], f"no {config_file}:LINE:COL: ...{what}... in:\n{result.stderr}"
        assert int(located[0].group(1)) == line, (line, errors)
        assert 1 <= int(located[0].group(2)) <= len(lines[line - 1]), (lines[line - 1], errors)
    assert "copying the source tree" not in result.stderr
    assert not out.exists()


def test_config_in_both_places_is_refused(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    (project / "wheelmerge.yaml").write_text("variant-files: [envprobe/_buildenv.py]\n")
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out, "--no-isolation",
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert str(project / "wheelmerge.yaml") in result.stderr, result.stderr
    assert "configuration in two places" in result.stderr, result.stderr
    assert not out.exists()


@pytest.mark.parametrize("args, expected", [
    (["--cuda", "twelve", "--cuda", "13=TK13"], "invalid --cuda"),
    (["--cuda", "12=", "--cuda", "13=TK13"], "invalid --cuda"),
    (["--cuda", "12=TK12", "--cuda", "13=TK13", "-C", "novalue"], "invalid -C"),
    (["--cuda", "12=TK12", "--cuda", "13=TK13", "-C", "=value"], "invalid -C"),
])
def test_usage_errors(wheelmerge_bin, toolkits, tmp_path, args, expected):
    project = copy_project("envprobe", tmp_path)
    args = [a.replace("TK12", str(toolkits.cu12)).replace("TK13", str(toolkits.cu13)) for a in args]
    result = wheelmerge(wheelmerge_bin, "build", project, *args, "-o", tmp_path / "out", "--no-isolation",
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert expected in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_installer_uv_without_uv_is_refused_before_building(wheelmerge_bin, toolkits, tmp_path):
    """--installer uv with no uv beside --python nor on PATH: refused before any build, naming
    both places; an installer of another name is a usage error of the command line."""
    project = copy_project("envprobe", tmp_path)
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.symlink_to(PYTHON)
    env = {"PATH": str(python.parent) + ":/usr/bin:/bin"}
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out", "--python", python,
                        "--installer", "uv", tmp_path=tmp_path, env=env)
    assert result.returncode == 2, describe(result)
    assert "--installer uv needs uv" in result.stderr, result.stderr
    assert (f"expected uv beside {python} or on PATH (pip install uv), found no executable uv in {python.parent} "
            "or on PATH") in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
    assert "creating an isolated build environment" not in result.stderr, result.stderr

    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out",
                        "--installer", "conda", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "--installer" in result.stderr and "conda" in result.stderr, result.stderr


def test_project_without_pyproject_is_refused(wheelmerge_bin, toolkits, tmp_path):
    empty = tmp_path / "empty-project"
    empty.mkdir()
    result = wheelmerge(wheelmerge_bin, "build", empty, *toolkits.args(), "-o", tmp_path / "out", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert str(empty / "pyproject.toml") in result.stderr, result.stderr


# --- (9) -C reaches the project's backend ------------------------------------------------------

def test_config_settings_reach_the_backend(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("settings", tmp_path)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(),
                     "-C", "probe-alpha=1", "-C", "probe-beta=two words", "-C", "probe-gamma=x=y")
    for label in LABELS:
        calls = variant_module(built.wheel, "settingsprobe", label, "_settings.py")["CALLS"]
        wheel_calls = [c for c in calls if c["hook"] == "build_wheel"]
        assert len(wheel_calls) == 1, calls
        call = wheel_calls[0]
        assert call["config_settings"] == {"probe-alpha": "1", "probe-beta": "two words", "probe-gamma": "x=y"}, call
        assert call["major"] == label[2:], call
        # The in-tree backend was imported from backend-path in the build's copy of the project.
        assert real(call["backend_file"]) == real(Path(call["cwd"]) / "_backend" / "probe_backend.py"), call
        assert not real(call["backend_file"]).startswith(real(project)), call
    assert not (project / ".probe_calls.json").exists()
    assert not (project / "settingsprobe" / "_settings.py").exists()


# --- (10) variants built at once ---------------------------------------------------------------

def test_jobs_2_builds_both_variants_at_once(wheelmerge_bin, toolkits, tmp_path):
    """envprobe's rendezvous: each variant's build waits for the other to start; with -j 1 it
    times out (the control), with -j 2 both finish."""
    project = copy_project("envprobe", tmp_path)
    sequential = tmp_path / "rendezvous-sequential"
    sequential.mkdir()
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out-j1", "-j", "1",
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path,
                        env={"WMTEST_RENDEZVOUS": str(sequential), "WMTEST_RENDEZVOUS_TIMEOUT": "2"})
    assert result.returncode == 1, describe(result)
    assert "envprobe-rendezvous: no other variant started while cu12 was building" in result.stderr

    together = tmp_path / "rendezvous"
    together.mkdir()
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "-j", "2",
                     env={"WMTEST_RENDEZVOUS": str(together), "WMTEST_RENDEZVOUS_TIMEOUT": "30"})
    assert sorted(p.name for p in together.iterdir()) == ["started-12", "started-13"]
    for label in LABELS:
        seen = variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"]
        other = "13" if label == "cu12" else "12"
        assert seen["others_seen"] == [f"started-{other}"], seen
        assert seen["env"]["WHEELMERGE_BUILD_CUDA_MAJOR"] == label[2:]
    # Each variant's progress is labelled, interleaved or not.
    for label in LABELS:
        assert re.search(rf"^\[{label}\] built envprobe-1\.0-py3-none-any\.whl", built.stderr, re.M), built.stderr


# --- (11) --json and what is left behind -------------------------------------------------------

def test_json_summary(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    logs = tmp_path / "logs"
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "--log-dir", logs)
    s = built.summary
    assert set(s) == {"output", "variants", "log_dir", "shared", "variant_files", "seconds"}, s
    assert real(s["output"]) == real(built.wheel), s
    assert real(s["log_dir"]) == real(logs), s
    assert [v["label"] for v in s["variants"]] == list(LABELS), s
    for label, version in (("cu12", "12.9"), ("cu13", "13.0")):
        v = built.variant(label)
        assert set(v) == {"label", "cuda_version", "toolkit", "found_by", "build_info", "log", "seconds"}, v
        assert v["build_info"] == {"cuda_version": version}, v
        assert v["cuda_version"] == version, v
        assert v["toolkit"] == real(toolkits[label]), v
        assert v["found_by"] == f"--cuda {label[2:]}=PATH", v
        assert real(v["log"]) == real(logs / f"{label}.log"), v
        assert "hook_runner.py build_wheel" in Path(v["log"]).read_text()
        assert isinstance(v["seconds"], (int, float)) and 0 < v["seconds"] <= s["seconds"], v
    # Files: envprobe/__init__.py and the dist-info files shared; _buildenv.py once per variant.
    assert s["variant_files"] == 2, s
    with zipfile.ZipFile(built.wheel) as z:
        names = set(z.namelist())
    assert "envprobe/__init__.py" in names and s["shared"] >= 1, s
    # Human messages only on stderr: stdout is the JSON document alone.
    assert built.stderr.rstrip().splitlines()[-1].startswith(f"wrote {s['output']}"), built.stderr


def test_variants_option_writes_the_variant_wheels_and_their_index_beside_the_merged_wheel(
        wheelmerge_bin, toolkits, tmp_path):
    """`build --variants`: the merged wheel, one variant wheel per build holding that build's own
    files as built (here its _buildenv.py), and the index file; docs/variants.md."""
    project = copy_project("envprobe", tmp_path)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, "-o", out, "--json", "--variants", "--no-isolation",
                        "--python", str(PYTHON), *toolkits.args(), tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    s = json.loads(result.stdout)
    files = sorted(p.name for p in out.iterdir())
    merged = Path(s["output"]).name
    stem = merged[: -len(".whl")]
    assert files == sorted([merged, f"{stem}-cu12.whl", f"{stem}-cu13.whl", Path(s["variants_index"]).name]), files
    assert [Path(w).name for w in s["variant_wheels"]] == [f"{stem}-cu12.whl", f"{stem}-cu13.whl"]
    # One reading of the builds gives both: the merged wheel's plan is reported as by a plain build.
    assert "merging cu12 and cu13, and writing their variant wheels" in result.stderr, result.stderr
    assert s["shared"] >= 1 and s["variant_files"] >= 1, s
    verified = wheelmerge(wheelmerge_bin, "verify", s["output"], tmp_path=tmp_path)
    assert verified.returncode == 0, describe(verified)
    index = json.loads(Path(s["variants_index"]).read_text())
    assert sorted(index["variants"]) == list(LABELS)
    for label, wheel in zip(LABELS, s["variant_wheels"]):
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            assert not any("_wheelmerge" in n for n in names), names
            assert "envprobe/_buildenv.py" in names, names
            variant = json.loads(z.read(next(n for n in names if n.endswith(".dist-info/variant.json"))))
        assert variant["variants"] == {label: index["variants"][label]}


def test_variants_option_gives_cpu_levels_their_level_and_refuses_torch_labels_before_building(
        wheelmerge_bin, tmp_path):
    """cpuflags' x86-64 levels get variant wheels marked `x86_64 :: level :: vN`
    (test_variants_cpu.py installs such wheels with uv); torch labels have no provider an
    installer serves and are refused before anything is built."""
    project = copy_project("cpuflags", tmp_path)
    # Without x86_64_v3's own build requirement, which needs an isolated build.
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().split("# One variant pins")[0])
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, "-o", out, "--json", "--variants", "--no-isolation",
                        "--python", str(PYTHON), tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    s = json.loads(result.stdout)
    index = json.loads(Path(s["variants_index"]).read_text())
    assert index["providers"] == {"x86_64": {"requires": ["x86-64-variant-provider"]}}
    assert index["variants"] == {"x86_64_v1": {"x86_64": {"level": ["v1"]}},
                                 "x86_64_v3": {"x86_64": {"level": ["v3"]}}}
    assert [Path(w).name.rsplit("-", 1)[1] for w in s["variant_wheels"]] == ["x86_64_v1.whl", "x86_64_v3.whl"]

    refused = tmp_path / "refused"
    result = wheelmerge(wheelmerge_bin, "build", project, "--variant", "torch210_cu12", "--variant", "torch211_cu13",
                        "-o", refused, "--variants", "--no-isolation", "--python", str(PYTHON), tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "--variants: no variant properties for a build's label" in result.stderr, describe(result)
    assert "torch builds have no variant provider installers serve" in result.stderr, describe(result)
    assert "built" not in result.stderr, describe(result)
    assert not refused.exists() or not any(refused.iterdir())


def test_no_temporary_files_left_behind(wheelmerge_bin, toolkits, tmp_path):
    """After a successful build nothing remains in the temporary directory, logs included (the
    summary names none), and nothing either when --log-dir puts the logs elsewhere (kept there):
    no source copies, build environments or wheels. tests/integration/project/test_cli.py has the
    failed build, whose logs stay."""
    project = copy_project("envprobe", tmp_path)
    tmpdir = tmp_path / "tmpdir"
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args())
    assert built.summary["log_dir"] is None and all(v["log"] is None for v in built.summary["variants"]), built.summary
    assert "logs in" not in built.stderr, built.stderr
    left = sorted(str(p.relative_to(tmpdir)) for p in tmpdir.rglob("*"))
    assert left == [], f"left in TMPDIR after a successful build: {left}"

    shutil.rmtree(tmpdir)
    build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "--log-dir", tmp_path / "logs", name="out2")
    left = sorted(str(p.relative_to(tmpdir)) for p in tmpdir.rglob("*"))
    assert left == [], f"left in TMPDIR after a build with --log-dir: {left}"
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["cu12.log", "cu13.log"]


def test_interpreter_that_cannot_run_is_reported(wheelmerge_bin, toolkits, tmp_path):
    """--python naming no file: the message says the interpreter could not be run, not only
    that a hook "did not report back" (the log holds nothing but the command)."""
    project = copy_project("envprobe", tmp_path)
    missing = tmp_path / "no-such-python"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out",
                        "--no-isolation", "--python", missing, tmp_path=tmp_path)
    assert result.returncode == 1, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert [e.split(":")[2].strip() for e in errors] == ["cu12", "cu13"], errors
    for error in errors:
        assert str(missing) in error, error
        assert re.search(r"cannot run|No such file or directory", error), error


# --- relative paths ----------------------------------------------------------------------------

def test_relative_paths_are_relative_to_the_current_directory(wheelmerge_bin, toolkits, tmp_path):
    copy_project("envprobe", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", "projects/envprobe", "--cuda", "12=toolkits/cuda-12.9",
                        "--cuda", "13=toolkits/cuda-13.0", "-o", "out", "--log-dir", "logs", "--json",
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    summary = json.loads(result.stdout)
    assert (tmp_path / summary["output"]).is_file(), summary
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [Path(summary["output"]).name]
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["cu12.log", "cu13.log"]
    assert summary["variants"][0]["toolkit"] == real(toolkits.cu12), summary


def test_relative_toolkit_in_config_is_relative_to_the_project(wheelmerge_bin, toolkits, tmp_path):
    """A relative `toolkit` in [tool.wheelmerge.cuNN] is read relative to the project directory,
    like every other path in pyproject.toml (backend-path, readme, license-files), not relative
    to wherever wheelmerge happens to be run from."""
    project = copy_project("envprobe", tmp_path)
    shutil.copytree(toolkits.cu12, project / "toolkits" / "cuda-12")
    with (project / "pyproject.toml").open("a") as f:
        f.write('toolkit = "toolkits/cuda-12"\n')  # appended to [tool.wheelmerge.cu12]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = wheelmerge(wheelmerge_bin, "build", project, "--cuda", f"13={toolkits.cu13}",
                        "-o", tmp_path / "out", "--json", "--no-isolation", "--python", PYTHON,
                        tmp_path=tmp_path, cwd=elsewhere)
    assert result.returncode == 0, describe(result)
    cu12 = json.loads(result.stdout)["variants"][0]
    assert (cu12["found_by"], cu12["toolkit"]) == ("[tool.wheelmerge.cu12] toolkit", real(project / "toolkits" / "cuda-12"))


def test_relative_python_is_relative_to_the_current_directory(wheelmerge_bin, toolkits, tmp_path):
    """--python bin/python, given from the directory that holds bin/python."""
    copy_project("envprobe", tmp_path)
    (tmp_path / "bin").mkdir()
    # A wrapper, not a symlink: a venv's interpreter finds its pyvenv.cfg next to the path it was
    # started from, so a symlink elsewhere would run outside the venv.
    wrapper = tmp_path / "bin" / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n')
    wrapper.chmod(0o755)
    result = wheelmerge(wheelmerge_bin, "build", "projects/envprobe", *toolkits.args(), "-o", "out", "--json",
                        "--no-isolation", "--python", "bin/python", tmp_path=tmp_path, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    assert (tmp_path / json.loads(result.stdout)["output"]).is_file()


# --- (12) variant labels: CPU levels, per-variant build requirements, --build-info -----------

CPU_LABELS = ("x86_64_v1", "x86_64_v3")
# What x86-64-v3 asks of a CPU beyond v2, as /proc/cpuinfo names it (abm is LZCNT).
_V3_FLAGS = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def level_module(wheel: Path, label: str) -> bytes:
    """The bytes of `label`'s build of cpuflags._level."""
    files = manifest(wheel, "cpuflags")["files"][label]
    originals = [f for f in files if f.startswith("_level.") and f.endswith(".so")]
    assert len(originals) == 1, files
    return variant_bytes(wheel, "cpuflags", label, originals[0])


def test_cpu_levels_build_with_their_march_and_own_requirements(wheelmerge_bin, tmp_path, make_venv):
    """cpuflags, built in isolation for x86_64_v1 and x86_64_v3 (the labels from `variants`): each
    build's C compiler saw its -march (v3 compiled with __AVX2__ defined, v1 without), after
    CFLAGS from outside; x86_64_v3's build-requires pin (packaging==24.0) was resolved together
    with the project's packaging>=23 in that variant only; the merged wheel imports the right build."""
    project = copy_project("cpuflags", tmp_path)
    logs = tmp_path / "logs"
    built = build_ok(wheelmerge_bin, project, tmp_path, "--python", PYTHON, "--log-dir", logs,
                     isolation=True, env={"CFLAGS": "-DWMTEST_OUTSIDE=1"})
    assert [v["label"] for v in built.summary["variants"]] == list(CPU_LABELS), built.summary
    for v in built.summary["variants"]:
        assert "toolkit" not in v and "cuda_version" not in v, v  # no CUDA toolkit for a CPU level
    assert "[x86_64_v3] -march=x86-64-v3; log:" in built.stderr, built.stderr

    m = manifest(built.wheel, "cpuflags")
    assert m["selector"] == "cpu", m
    assert m["build_info"] == {"x86_64_v1": {"march": "x86-64"}, "x86_64_v3": {"march": "x86-64-v3"}}, m
    # The compiled code says which flags reached the compiler.
    assert b"cpuflags-compiled-without-avx2" in level_module(built.wheel, "x86_64_v1")
    assert b"cpuflags-compiled-with-avx2" in level_module(built.wheel, "x86_64_v3")
    info = {label: variant_module(built.wheel, "cpuflags", label, "_buildinfo.py") for label in CPU_LABELS}
    assert info["x86_64_v1"]["CFLAGS"] == "-DWMTEST_OUTSIDE=1 -march=x86-64", info
    assert info["x86_64_v3"]["CFLAGS"] == "-DWMTEST_OUTSIDE=1 -march=x86-64-v3", info
    # An unset CXXFLAGS starts from the interpreter's CFLAGS (-O3 and all), which setuptools
    # would have used had it stayed unset.
    python_cflags = run([PYTHON, "-c", "import sysconfig; print(sysconfig.get_config_var('CFLAGS'))"]).stdout.strip()
    assert "-O" in python_cflags, python_cflags
    assert info["x86_64_v3"]["CXXFLAGS"] == f"{python_cflags} -march=x86-64-v3", info
    assert info["x86_64_v3"]["VARIANT"] == "x86_64_v3", info
    # The pin is x86_64_v3's alone; x86_64_v1 has the newest packaging the project allows.
    assert info["x86_64_v3"]["PACKAGING"] == "24.0", info
    assert info["x86_64_v1"]["PACKAGING"] not in (None, "24.0"), info
    v3_log = (logs / "x86_64_v3.log").read_text()
    # One resolve of both, so packaging is installed once.
    assert re.search(r"pip install .*packaging>=23.* packaging==24\.0", v3_log), v3_log
    assert len(re.findall(r"pip install ", v3_log)) == 1, v3_log
    assert "packaging==24.0" not in (logs / "x86_64_v1.log").read_text()

    env = make_venv("cpuflags")
    env.install(built.wheel)
    probe = "import json, cpuflags; print(json.dumps([cpuflags._wheelmerge.selected(), cpuflags.avx2()]))"
    forced = env.run("-c", probe, env={"WHEELMERGE_VARIANT": "x86_64_v1"})
    assert json.loads(forced.stdout) == ["x86_64_v1", False], forced.stdout
    best = "x86_64_v3" if _V3_FLAGS <= cpu_flags() else "x86_64_v1"
    chosen = env.run("-c", probe)
    assert json.loads(chosen.stdout) == [best, best == "x86_64_v3"], chosen.stdout


def test_variant_option_overrides_the_configured_labels(wheelmerge_bin, tmp_path):
    """--variant picks the builds; a variant's own CFLAGS replaces the -march default (no build
    needed: `toolkit --json` shows each variant's environment)."""
    project = copy_project("cpuflags", tmp_path)
    with (project / "pyproject.toml").open("a") as f:
        f.write('env = { CFLAGS = "-O1 -march=haswell" }\n')  # into [tool.wheelmerge.x86_64_v3]
    result = wheelmerge(wheelmerge_bin, "toolkit", project, "--variant", "x86_64_v3", "--variant", "x86_64_v4",
                        "--python", PYTHON, "--json", tmp_path=tmp_path, env={"CFLAGS": "-g", "CXXFLAGS": "-O2"})
    assert result.returncode == 0, describe(result)
    envs = {t["label"]: t["env"] for t in json.loads(result.stdout)["toolkits"]}
    assert envs == {
        "x86_64_v3": {"CFLAGS": "-O1 -march=haswell", "CXXFLAGS": "-O2 -march=x86-64-v3",
                      "WHEELMERGE_BUILD_VARIANT": "x86_64_v3"},
        "x86_64_v4": {"CFLAGS": "-g -march=x86-64-v4", "CXXFLAGS": "-O2 -march=x86-64-v4",
                      "WHEELMERGE_BUILD_VARIANT": "x86_64_v4"}}, envs


@pytest.mark.parametrize("args, expected", [
    (["--variant", "x86_64_v5", "--variant", "x86_64_v3"], "invalid --variant"),
    (["--variant", "cu12", "--variant", "x86_64_v3"], "variant labels of different selectors"),
    (["--variant", "x86_64_v3", "--cuda", "12"], "variant labels of different selectors"),
    (["--variant", "x86_64_v1", "--variant", "x86_64_v3", "--no-isolation"],
     "[tool.wheelmerge.x86_64_v3] build-requires needs an isolated build"),
])
def test_variant_usage_errors(wheelmerge_bin, tmp_path, args, expected):
    project = copy_project("cpuflags", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", project, *args, "-o", tmp_path / "out", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert expected in result.stderr, result.stderr
    assert "copying the source tree" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_config_shows_selector_labels_and_build_requires(wheelmerge_bin, tmp_path):
    project = copy_project("cpuflags", tmp_path)
    result = wheelmerge(wheelmerge_bin, "config", project, tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    config = json.loads(result.stdout)
    assert (config["selector"], config["labels"], config["cuda"]) == ("cpu", list(CPU_LABELS), []), config
    assert config["variants"] == {"x86_64_v3": {"toolkit": "", "env": {}, "build-requires": ["packaging==24.0"]}}
    # cuda and variants together are refused, naming the file.
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text.replace("[tool.wheelmerge]\n", "[tool.wheelmerge]\ncuda = [12, 13]\n"))
    result = wheelmerge(wheelmerge_bin, "config", project, tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert f"{project / 'pyproject.toml'}:14:8" in result.stderr, result.stderr
    assert '"cuda" and "variants" both name the builds' in result.stderr, result.stderr


def test_build_info_given_to_merge_lands_in_the_manifest(wheelmerge_bin, tmp_path):
    """merge --build-info LABEL:KEY=VALUE: recorded for that label, read back by inspect and by
    the loader's manifest; a label no input has, a bad key or a bad form is a usage error."""
    wheels = []
    for label in ("cu12", "cu13"):
        path = tmp_path / "in" / wheelgen.wheel_filename("bipkg", "1.0", "cp311-cp311-linux_x86_64", label=label)
        path.parent.mkdir(exist_ok=True)
        wheelgen.build_wheel(path, {"bipkg/__init__.py": b"", "bipkg/_core.cpython-311-x86_64-linux-gnu.so":
                                    wheelgen.elf_shared_object(f"{label}.so")},
                             name="bipkg", version="1.0", tags="cp311-cp311-linux_x86_64")
        wheels.append(path)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "merge", *wheels, "-o", out, "--build-info", "cu12:cuda_bindings=12.9.4",
                        "--build-info", "cu12:cuda_version=12.9", "--build-info", "cu13:note=a=b c",
                        tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    merged = next(out.iterdir())
    assert manifest(merged, "bipkg")["build_info"] == {
        "cu12": {"cuda_bindings": "12.9.4", "cuda_version": "12.9"}, "cu13": {"note": "a=b c"}}
    assert "12.9.4" in json.dumps(inspect_json(wheelmerge_bin, merged, tmp_path))

    for bad, expected in (("cu11:cuda_version=11.8", "--build-info cu11:cuda_version=11.8 names no input"),
                          ("cu12:cuda-version=12.9", "invalid key in --build-info"),
                          ("cu12=12.9", "invalid --build-info"),
                          ("cu1x:k=v", "invalid label in --build-info"),
                          ("cu12:=v", "invalid key in --build-info")):
        result = wheelmerge(wheelmerge_bin, "merge", *wheels, "-o", tmp_path / "bad", "--build-info", bad,
                            tmp_path=tmp_path)
        assert result.returncode == 2, describe(result)
        assert expected in result.stderr, (bad, result.stderr)
        assert not (tmp_path / "bad").exists()


def test_torch_labels_are_checked_against_the_build_environment(wheelmerge_bin, toolkits, tmp_path):
    """With the environment of scripts/torch-envs.sh's torch 2.10.0 (CUDA 12.8) as the build's:
    build_info records the torch and cuda-bindings found there; a torch label is built against
    its CUDA major's toolkit when that torch fits it, and a label it does not fit stops the build
    with the label that environment has."""
    import torch_envs
    torch = torch_envs.prepare(["torch210_cu12"])[0]["torch210_cu12"]
    bindings = torch.run("-c", "from importlib import metadata; print(metadata.version('cuda-bindings'))").stdout.strip()
    project = copy_project("envprobe", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out", "--json",
                        "--no-isolation", "--python", torch.python, tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    wheel = Path(json.loads(result.stdout)["output"])
    assert manifest(wheel, "envprobe")["build_info"] == {
        label: {"cuda_version": version, "torch": "2.10.0", "torch_cuda": "12.8", "cuda_bindings": bindings}
        for label, version in (("cu12", "12.9"), ("cu13", "13.0"))}

    result = wheelmerge(wheelmerge_bin, "build", project, "--variant", "torch211_cu13", "--variant", "torch210_cu12",
                        *toolkits.args(), "-o", tmp_path / "torch-out", "--no-isolation", "--python", torch.python,
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    # --cuda N=PATH named the toolkits; it added no cuNN builds beside the torch labels.
    assert f"[torch210_cu12] CUDA 12.9 at {real(toolkits.cu12)}" in result.stderr, result.stderr
    assert f"[torch211_cu13] CUDA 13.0 at {real(toolkits.cu13)}" in result.stderr, result.stderr
    assert "[cu12]" not in result.stderr and "[cu13]" not in result.stderr, result.stderr
    assert re.search(r"^\[torch210_cu12\] built envprobe-1\.0-py3-none-any\.whl", result.stderr, re.M), result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("wheelmerge: error: ")]
    assert len(errors) == 1, result.stderr
    assert "torch211_cu13: the build environment does not fit the label" in errors[0], errors
    assert "the environment has torch 2.10.0 built with CUDA 12.8, whose label is torch210_cu12" in errors[0], errors
    assert "[torch211_cu13] building the wheel" not in result.stderr, result.stderr
    assert not (tmp_path / "torch-out").exists()


def test_build_info_for_labels_from_distribution_names(wheelmerge_bin, tmp_path):
    """With --name, --build-info takes the labels the inputs' name suffixes give (cupy-style)."""
    wheels = []
    for major in (12, 13):
        name = f"bipkg_cuda{major}x"
        wheels.append(wheelgen.build_wheel(
            tmp_path / wheelgen.wheel_filename(name, "1.0", "cp311-cp311-linux_x86_64"),
            {"bipkg/__init__.py": b"", "bipkg/_core.cpython-311-x86_64-linux-gnu.so": wheelgen.elf_shared_object(f"cu{major}.so")},
            name=name, version="1.0", tags="cp311-cp311-linux_x86_64"))
    result = wheelmerge(wheelmerge_bin, "merge", *wheels, "--name", "bipkg", "--build-info", "cu13:cuda_bindings=13.0.3",
                        "-o", tmp_path / "out", tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    assert manifest(next((tmp_path / "out").iterdir()), "bipkg")["build_info"] == {
        "cu12": {}, "cu13": {"cuda_bindings": "13.0.3"}}
    result = wheelmerge(wheelmerge_bin, "merge", *wheels, "--name", "bipkg", "--build-info", "cu11:cuda_bindings=11.8",
                        "-o", tmp_path / "bad", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "expected a label of an input (cu12, cu13), found cu11" in result.stderr, result.stderr


def test_pep517_backend_isolates_variants_with_their_own_requirements(wheelmerge_bin, tmp_path):
    """build-backend = "wheelmerge.backend" and a variant with build-requires: the frontend's
    one environment cannot hold both variants' pins, so build_wheel lets `wheelmerge build`
    make an environment per variant (without it, --no-isolation would refuse build-requires).
    The package is the source tree's python/wheelmerge with this binary as its executable. The
    project requires wheelmerge-cuda, as a project using the backend does: the variants' own
    environments leave it out (the inner backend does not need it)."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "python" / "wheelmerge", site / "wheelmerge",
                    ignore=shutil.ignore_patterns("__pycache__", "_bin"))
    (site / "wheelmerge" / "_bin").mkdir()
    shutil.copy2(wheelmerge_bin, site / "wheelmerge" / "_bin" / "wheelmerge")
    project = copy_project("cpuflags", tmp_path)
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace('build-backend = "setuptools.build_meta"', 'build-backend = "wheelmerge.backend"')
            .replace('requires = ["setuptools>=70"', 'requires = ["WheelMerge_CUDA>=0.1", "setuptools>=70"')
            .replace("[tool.wheelmerge]\n", '[tool.wheelmerge]\nbackend = "setuptools.build_meta"\n'))
    out = tmp_path / "out"
    hook = ("import sys, wheelmerge.backend as b; print(b.build_wheel(sys.argv[1], "
            "{'wheelmerge.jobs': '1'}))")
    result = run([PYTHON, "-c", hook, out], env=build_env(tmp_path, {"PYTHONPATH": str(site)}), cwd=project,
                 check=False, timeout=600)
    assert result.returncode == 0, describe(result)
    wheel = out / result.stdout.strip().splitlines()[-1]
    info = {label: variant_module(wheel, "cpuflags", label, "_buildinfo.py") for label in CPU_LABELS}
    assert info["x86_64_v3"]["PACKAGING"] == "24.0", info
    assert info["x86_64_v1"]["PACKAGING"] not in (None, "24.0"), info
    assert re.search(r"\[x86_64_v3\] installing build requirements: .*packaging>=23.*, packaging==24\.0",
                     result.stderr), result.stderr
    installed = re.findall(r"installing build requirements: (.*)", result.stderr)
    assert len(installed) == 2 and not any("wheelmerge" in line.lower() for line in installed), installed
