"""The reusable workflow on a torch configuration, rehearsed (ci/rehearse.sh): examples/torchstable
with its floor labels torch210plus_cu12 and torch211plus_cu13. Each build job runs `wheelmerge
build --no-merge` (the build action), which installs the label's torch with uv from the
downloads of scripts/torch-envs.sh (no index) and builds against it with that CUDA major's
toolkit; each test job installs the merged wheel beside that torch with uv and checks the build
it imports. Also the build step's refusal of a torch other than the label's. Each job's
environment is removed when the job is done, and the rehearsal's directory after its test."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Iterator

import pytest

from conftest import ROOT, WheelCache, clean_env, run
from test_ci import CI, Rehearsal, build_step, tool_uv


# --- the rehearsal of a torch configuration ----------------------------------------------------

TORCHSTABLE = ROOT / "examples" / "torchstable"
TORCH_LABELS = ["torch210plus_cu12", "torch211plus_cu13"]


@pytest.fixture(scope="module")
def torch_rehearsal(tmp_path_factory: pytest.TempPathFactory, wheelmerge_bin: Path,
                    wheel_cache: WheelCache) -> Iterator[Rehearsal]:
    """ci/rehearse.sh on examples/torchstable (floor labels): each build job installs its label's
    torch (2.10 with CUDA 12, 2.11 with CUDA 13, from scripts/torch-envs.sh's downloads, no
    index) and builds against it with that CUDA major's toolkit; each test job installs the merged
    wheel beside that torch."""
    import torch_envs

    envs, _, _ = torch_envs.prepare(["torch210_cu12", "torch211_cu13"])  # the downloads, checked
    # The CUDA 12 toolkit the build compiles against (made from NVIDIA's wheels, once).
    cuda12 = run([ROOT / "scripts" / "cuda12-toolkit.sh"], env=clean_env(), timeout=900).stdout.splitlines()[-1]
    directory = tmp_path_factory.mktemp("torch-rehearsal")
    env = clean_env({"WHEELMERGE": str(wheelmerge_bin), "WHEEL_CACHE": str(wheel_cache.path), "WHEELMERGE_CUDA_12": cuda12,
                     "REHEARSE_DIR": str(directory), "REHEARSE_ENV": "TORCH_CUDA_ARCH_LIST=9.0",
                     "TORCH_FIND_LINKS": " ".join(str(env.wheels) for env in envs.values()),
                     # The jobs' uv (the actions would install it from the index, which torch jobs
                     # here have none of).
                     "REHEARSE_UV": tool_uv()})
    result = run(["bash", CI / "rehearse.sh", TORCHSTABLE, "torchstable"], check=False, cwd=ROOT, timeout=2400,
                 env=env)
    yield Rehearsal(result, directory)
    shutil.rmtree(directory, ignore_errors=True)


def test_rehearsal_of_torch_floor_labels(torch_rehearsal: Rehearsal, wheelmerge_bin: Path) -> None:
    from packaging.metadata import Metadata

    log = torch_rehearsal.log
    assert torch_rehearsal.result.returncode == 0, log
    assert "(include/cuda.h only" not in log  # real toolkits, no stand-in
    assert re.search(r"all 6 jobs passed: plan, " + ", ".join(rf"build py3\.\d+ {l}" for l in TORCH_LABELS) +
                     r", merge py3\.\d+, " + ", ".join(rf"test py3\.\d+ {l}" for l in TORCH_LABELS), log), log
    for label in TORCH_LABELS:
        assert re.search(rf"build\.sh: running: \S+/wheelmerge build \. --variant {label} --no-merge --installer uv ", log)
    # What each build was made against (wheelmerge build's probe of its environment), carried to
    # the merge job in build-info.json and recorded for the loader's build_info().
    infos = {json.loads(p.read_text())["variants"][0]["label"]: json.loads(p.read_text())["variants"][0]["build_info"]
             for p in (torch_rehearsal.directory / "artifacts").glob("wheel-*/build-info.json")}
    assert {label: (info["torch"], info["torch_cuda"]) for label, info in infos.items()} == {
        "torch210plus_cu12": ("2.10.0", "12.8"), "torch211plus_cu13": ("2.11.0", "13.0")}, infos
    assert "torchstable: selected torch210plus_cu12 with torch 2.10.0" in log, log
    assert "torchstable: selected torch211plus_cu13 with torch 2.11.0" in log, log
    # Each floor label's test job also loads the merged wheel under the newest torch its floor
    # admits on its index (here the downloads: 2.11.0, built with CUDA 13, for both).
    for floor in ("2.10", "2.11"):
        assert (f"torchstable: selected torch211plus_cu13 with torch 2.11.0 (the newest torch>={floor},<3 on "
                "https://pypi.org/simple)") in log, log
    merged = next((torch_rehearsal.directory / "artifacts").glob("merged-*/*.whl"))
    report = json.loads(run([wheelmerge_bin, "inspect", merged, "--json"]).stdout)
    assert report["valid"] and report["variants"] == TORCH_LABELS
    with zipfile.ZipFile(merged) as wheel:
        metadata = Metadata.from_email(wheel.read("torchstable-0.1.0.dist-info/METADATA"), validate=False)
    assert [str(r) for r in metadata.requires_dist or [] if r.name == "torch"] == ["torch<3,>=2.10"]


def test_build_step_refuses_a_torch_other_than_the_labels(tmp_path: Path, wheelmerge_bin: Path) -> None:
    """torch210_cu13 asks for torch 2.10 built with CUDA 13 (its own requirement torch==2.10.*, the
    project naming none for it); the downloads given hold torch 2.10 with CUDA 12.8: wheelmerge
    build refuses the build after its probe, naming both, and the step fails."""
    import torch_envs

    envs, _, _ = torch_envs.prepare(["torch210_cu12"])
    workspace = tmp_path / "job" / "workspace"
    shutil.copytree(TORCHSTABLE, workspace, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    result = build_step(tmp_path / "job", workspace, wheelmerge_bin, "torch210_cu13", check=False,
                        torch_index="https://example.invalid/cu130",
                        job_env={"UV_NO_INDEX": "1", "UV_OFFLINE": "1", "UV_FIND_LINKS": str(envs["torch210_cu12"].wheels)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert ("the build environment does not fit the label: expected torch 2.10 built with CUDA 13 (pin it with "
            "build-requires in [tool.wheelmerge.torch210_cu13]), found the environment has torch 2.10.0 built with "
            "CUDA 12.8, whose label is torch210_cu12") in result.stderr, result.stderr
    assert "installing build requirements: setuptools>=77, torch==2.10.*" in result.stderr, result.stderr
