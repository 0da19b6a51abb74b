"""The runtime-wheel table (merger/runtime_wheels.cpp) against NVIDIA's real runtime wheels: the
nvidia-* distributions torch 2.10.0 (CUDA 12.8) and 2.11.0 (CUDA 13.0) install, in the
environments of scripts/torch-envs.sh, read with readelf and their installed RECORDs:

* every shared library those distributions install with a SONAME of the form `lib*.so*` (the
  ones an extension can link), linked by a build of that CUDA major, is reported by `inspect`
  as shipped by the distribution that installed it; NPP and nvJPEG, which torch does not
  require, come from the cuda-toolkit metapackage's extras (its METADATA, beside torch 2.11's);
* a torch build of that release is told torch brings exactly the libraries torch's environment
  holds (torch requires them), and no other;
* `merge --runtime-requirements` writes requirements pip resolves, with no index, from torch
  2.11's downloads: `pip install "merged[cu13]"` brings the runtime wheels the cu13 build links.
"""

from __future__ import annotations

import csv
import json
import re
import zipfile
from pathlib import Path

import pytest

import torch_envs
import wheelgen as wg
from conftest import run, tool_python
from torch_envs import TorchEnv

EXT = "pkg/_ext.so"
MAJORS = {"torch210_cu12": 12, "torch211_cu13": 13}


@pytest.fixture(scope="module")
def envs() -> dict[str, TorchEnv]:
    found, _, _ = torch_envs.prepare(list(torch_envs.BUILT))
    return found


def site_packages(env: TorchEnv) -> Path:
    (found,) = (env.python.parent.parent / "lib").glob("python3.*/site-packages")
    return found


def installed_libraries(env: TorchEnv) -> dict[str, str]:
    """SONAME -> the distribution that installed the file, over every nvidia-* distribution of
    the environment (their RECORDs), as readelf reads the SONAMEs."""
    site = site_packages(env)
    found: dict[str, str] = {}
    for info in sorted(site.glob("nvidia_*.dist-info")):
        distribution = info.name.split("-", 1)[0].replace("_", "-")  # nvidia_cublas-13.1.0.3.dist-info
        with open(info / "RECORD", newline="") as f:
            paths = [row[0] for row in csv.reader(f) if row and re.search(r"/lib[^/]*\.so(\.[0-9.]+)?$", row[0])]
        for path in paths:
            dynamic = run(["readelf", "-d", site / path]).stdout
            soname = re.search(r"\(SONAME\)\s+Library soname: \[(.+)\]", dynamic)
            if soname and soname[1].startswith("lib"):
                found[soname[1]] = distribution
    return found


def toolkit_extras(env: TorchEnv) -> dict[str, str]:
    """cuda-toolkit's extra -> the distribution it requires, from the metapackage's METADATA."""
    (wheel,) = env.wheels.glob("cuda_toolkit-*.whl")
    with zipfile.ZipFile(wheel) as z:
        (metadata,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        text = z.read(metadata).decode()
    return {extra: name for name, extra in re.findall(r"^Requires-Dist: ([\w-]+)==.*extra == '(\w+)'$", text, re.MULTILINE)
            if extra != "all"}


def linking_wheel(directory: Path, sonames: list[str], label: str) -> Path:
    """A wheel of build `label` whose extension links every SONAME (stubs of those names)."""
    stubs = directory / "stubs"
    stubs.mkdir(parents=True)
    flags = []
    for i, soname in enumerate(sonames):
        (stubs / f"s{i}.c").write_text(f"int wm_stub_{i}(void) {{ return {i}; }}\n")
        run(["gcc", "-shared", "-fPIC", "-o", stubs / f"libs{i}.so", stubs / f"s{i}.c", f"-Wl,-soname,{soname}"])
        flags.append(f"-ls{i}")
    (directory / "ext.c").write_text("int wm_probe(void) { return 0; }\n")
    run(["gcc", "-shared", "-fPIC", "-o", directory / "ext.so", directory / "ext.c", f"-L{stubs}",
         "-Wl,--no-as-needed", *flags])
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", run(["readelf", "-d", directory / "ext.so"]).stdout)
    assert sorted(n for n in needed if n != "libc.so.6") == sorted(sonames)
    return wg.build_wheel(directory / wg.wheel_filename("pkg", "1.0", "cp311-cp311-linux_x86_64", label=label),
                          {"pkg/__init__.py": b"", EXT: (directory / "ext.so").read_bytes()}, name="pkg",
                          version="1.0")


def runtime_of(wheelmerge_bin: Path, wheel: Path) -> dict[str, dict]:
    report = json.loads(run([wheelmerge_bin, "inspect", "--json", wheel]).stdout)
    (needs,) = report["runtime"].values()
    return {n["library"]: n for n in needs}


@pytest.mark.parametrize("torch_label", list(MAJORS))
def test_the_table_names_the_wheel_that_installs_each_library(wheelmerge_bin: Path, envs: dict[str, TorchEnv],
                                                              torch_label: str, tmp_path: Path) -> None:
    env, major = envs[torch_label], MAJORS[torch_label]
    real = installed_libraries(env)
    # Every distribution torch brings that ships libraries: cuBLAS, the runtime, cuFFT, cuDNN, NCCL...
    assert len(set(real.values())) >= 13 and f"libcudart.so.{major}" in real, real
    extras = toolkit_extras(envs["torch211_cu13"])
    suffix = "-cu12" if major == 12 else ""
    beyond_torch = {f"libnppc.so.{major}": f"nvidia-npp{suffix}", f"libnppif.so.{major}": f"nvidia-npp{suffix}",
                    f"libnvjpeg.so.{major}": f"nvidia-nvjpeg{suffix}"}
    sonames = sorted(real) + sorted(beyond_torch)
    found = runtime_of(wheelmerge_bin, linking_wheel(tmp_path / "cuda", sonames, f"cu{major}"))
    assert {lib: n["distribution"] for lib, n in found.items()} == {**real, **beyond_torch}
    for need in found.values():
        assert need["provided_by"] is None, need
        # The metapackage's extra requires that distribution (CUDA 13's names; CUDA 12's are suffixed).
        if need["toolkit_extra"]:
            assert extras[need["toolkit_extra"]] + suffix == need["distribution"], need
    # A torch build: torch brings what its environment installed (torch requires it), not the rest.
    torch_build = runtime_of(wheelmerge_bin, linking_wheel(tmp_path / "torch", sonames, torch_label))
    assert {lib for lib, n in torch_build.items() if n["provided_by"] == "torch"} == set(real)
    assert {lib for lib, n in torch_build.items() if n["provided_by"] is None} == set(beyond_torch)


def test_runtime_requirements_resolve_with_pip(wheelmerge_bin: Path, envs: dict[str, TorchEnv],
                                               tmp_path: Path) -> None:
    real = installed_libraries(envs["torch211_cu13"])
    linked = ["libcublas.so.13", "libcufft.so.12", "libnccl.so.2"]
    assert {real[lib] for lib in linked} == {"nvidia-cublas", "nvidia-cufft", "nvidia-nccl-cu13"}
    cu13 = linking_wheel(tmp_path / "13", linked, "cu13")
    cu12 = linking_wheel(tmp_path / "12", ["libcublas.so.12"], "cu12")
    result = run([wheelmerge_bin, "merge", "--runtime-requirements", cu12, cu13, "-o", tmp_path / "out"])
    assert "warning" not in result.stderr, result.stderr
    (merged,) = (tmp_path / "out").glob("*.whl")
    report = tmp_path / "report.json"
    run([tool_python(), "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-index", "--quiet",
         "--find-links", envs["torch211_cu13"].wheels, "--report", report, f"pkg[cu13] @ {merged.as_uri()}"])
    installed = {item["metadata"]["name"] for item in json.loads(report.read_text())["install"]}
    assert {"pkg", "cuda-toolkit", "nvidia-cublas", "nvidia-cufft", "nvidia-nccl-cu13"} <= installed, installed
    assert not any(name.endswith("-cu12") for name in installed), installed
