"""`wheelmerge build` finding the CUDA toolkit of each variant: an explicit root of another major
refused, every place looked at listed when none is found, the version read from cuda.h,
version.json or nvcc, and the installed toolkit under /usr/local (support/build_support.py
makes toolkit roots in the test's temporary directory)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from build_support import (  # noqa: F401 (toolkits: a fixture)
    build_ok,
    copy_project,
    describe,
    make_toolkit,
    manifest,
    path_without_nvcc,
    real,
    toolkits,
    variant_module,
    wheelmerge,
)

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
