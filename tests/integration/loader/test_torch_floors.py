"""Torch floor labels (`torch210plus_cu12`: built against torch's stable ABI, for torch 2.10 or a
later 2.x of CUDA major 12) under the real torch releases of the package index: torch 2.10.0
(CUDA 12.8) and 2.11.0 (CUDA 13.0), in the environments of scripts/torch-envs.sh.

The merged wheels are made by the real binary from compiled extensions (test_loader_selectors'
builder), installed with pip into a directory put first on sys.path; the loader selects by the
installed torch's version and `torch.version.cuda`: among the builds of torch's CUDA major whose
floor the torch meets, the highest floor. A torch below every floor, or of a CUDA major without a
build, is refused with the command that fixes it.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

import torch_envs
from test_loader_selectors import PROBE, build_inputs, merge, pip_target
from torch_envs import TorchEnv


@pytest.fixture(scope="module")
def envs() -> dict[str, TorchEnv]:
    found, _, _ = torch_envs.prepare(list(torch_envs.BUILT))
    return {env.release: env for env in found.values()}  # "2.10", "2.11"


def merged_site(wheelmerge_bin: Path, directory: Path, labels: list[str]) -> tuple[Path, Path]:
    """The merged wheel of one build per label (build i returns i + 1), installed into a site."""
    builds = {label: (number + 1, '"nop"', []) for number, label in enumerate(labels)}
    wheel = merge(wheelmerge_bin, build_inputs(directory / "inputs", "wmfloor", builds), directory / "out")
    return wheel, pip_target(directory / "site", wheel)


def probe(env: TorchEnv, site: Path) -> dict:
    return json.loads(env.run("-c", PROBE.replace("PKG", "wmfloor"), site=site).stdout.splitlines()[-1])


def requires_dist(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return [line.split(": ", 1)[1] for line in archive.read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist: ")]


def test_each_torch_gets_the_highest_floor_of_its_cuda_major(wheelmerge_bin, envs, tmp_path):
    labels = ["torch210plus_cu12", "torch210plus_cu13", "torch211plus_cu13"]
    wheel, site = merged_site(wheelmerge_bin, tmp_path, labels)
    # One torch requirement, from the lowest floor, within its major.
    assert [r for r in requires_dist(wheel) if r.startswith("torch")] == ["torch>=2.10,<3"]
    seen = {release: probe(env, site) for release, env in envs.items()}
    assert seen["2.10"]["selected"] == "torch210plus_cu12" and seen["2.10"]["build"] == 1
    # torch 2.11 of CUDA 13: both CUDA 13 builds fit; the higher floor wins.
    assert seen["2.11"]["selected"] == "torch211plus_cu13" and seen["2.11"]["build"] == 3


def test_a_torch_below_every_floor_is_refused_with_the_fix(wheelmerge_bin, envs, tmp_path):
    _, site = merged_site(wheelmerge_bin, tmp_path, ["torch211plus_cu12", "torch211plus_cu13"])
    refused = probe(envs["2.10"], site)
    assert refused["error"] == "SelectionError", refused
    message = refused["message"]
    assert message.startswith("wmfloor: cannot select a torch build: torch 2.10.0")
    assert "no build was compiled for it" in message
    assert 'pip install "torch>=2.11,<3"  # torch211plus_cu12: torch 2.11 or a later 2.x built with CUDA 12' in message
    assert probe(envs["2.11"], site)["selected"] == "torch211plus_cu13"


def test_a_torch_of_a_cuda_major_without_a_build_is_refused(wheelmerge_bin, envs, tmp_path):
    _, site = merged_site(wheelmerge_bin, tmp_path, ["torch210plus_cu12", "torch210plus_cpu"])
    assert probe(envs["2.10"], site)["selected"] == "torch210plus_cu12"
    refused = probe(envs["2.11"], site)  # torch 2.11 of CUDA 13: no CUDA 13 build, and it is not CPU-only
    assert refused["error"] == "SelectionError", refused
    assert "torch 2.11.0+cu130 (built with CUDA 13.0) is installed, and no build was compiled for it" in refused["message"]
    assert "torch210plus_cpu: a CPU-only torch 2.10 or a later 2.x" in refused["message"]
    assert "--index-url https://download.pytorch.org/whl/cpu" in refused["message"]


def test_an_override_of_a_floor_the_torch_does_not_meet_is_refused(wheelmerge_bin, envs, tmp_path):
    _, site = merged_site(wheelmerge_bin, tmp_path, ["torch210plus_cu13", "torch211plus_cu13"])
    env = envs["2.11"]
    chosen = json.loads(env.run("-c", PROBE.replace("PKG", "wmfloor"), site=site,
                                extra={"WHEELMERGE_VARIANT": "torch210plus_cu13"}).stdout.splitlines()[-1])
    assert chosen["selected"] == "torch210plus_cu13"  # a lower floor the torch meets may be chosen
    refused = json.loads(envs["2.10"].run("-c", PROBE.replace("PKG", "wmfloor"), site=site,
                                          extra={"WHEELMERGE_VARIANT": "torch211plus_cu13"}).stdout.splitlines()[-1])
    assert refused["error"] == "SelectionError"
    assert "the torch211plus_cu13 build needs torch 2.11 or a later 2.x built with CUDA 13" in refused["message"]


def test_exact_and_floor_labels_are_not_merged_together(wheelmerge_bin, tmp_path):
    from conftest import run

    wheels = build_inputs(tmp_path / "inputs", "wmfloor", {"torch210_cu12": (1, '"nop"', []),
                                                           "torch211plus_cu13": (2, '"nop"', [])})
    # The long labels also given as PATH=LABEL (torch211plus_cu130 is the longest form).
    plain = [w.rename(w.with_name(w.name.split(".torch")[0] + ".whl")) for w in wheels[:1]] + wheels[1:]
    result = run([wheelmerge_bin, "merge", "-o", tmp_path / "out", f"{plain[0]}=torch210_cu12",
                  f"{plain[1]}=torch211plus_cu13"], check=False)
    assert result.returncode == 2
    assert "torch labels with a floor and without one in one merge" in result.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
