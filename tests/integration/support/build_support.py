"""Helpers of the `wheelmerge build` suites (building/test_build*.py): toolkit roots made in a
test's temporary directory, the binary run in a controlled environment (`build_env`), and
readers of merged wheels."""

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
from conftest import ROOT, clean_env, loader_manifest, run, tool_python

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
