"""A merge of one build: a platform with one build (cuda-core 1.2.2's win_arm64 holds only its
CUDA 13 build) gets the same loader as its merged siblings, so its wheel says which build it has
and why it cannot load, instead of failing later inside an extension module.

The bundled example's cu13 build alone: its files keep their names; installed with pip beside
cuda-bindings 13 it imports its build through the loader; beside cuda-bindings 12 the import
fails with the loader's error, which names the build the wheel has and the fixes. The published
win_arm64 wheel of cuda-core (tests/integration/merge/test_windows_aarch64.py) is merged the same way.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from conftest import CUDA_BINDINGS, DemoWheels, WheelCache, wheelmerge


@pytest.fixture(scope="module")
def single(wheelmerge_bin: Path, demo_wheels: DemoWheels, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("single")
    summary = json.loads(wheelmerge(wheelmerge_bin, "merge", demo_wheels.cu13, "-o", out, "--json").stdout)
    return Path(summary["output"]), summary


def test_one_build_keeps_its_files_and_names_and_gets_a_loader(single, demo_wheels: DemoWheels) -> None:
    wheel, summary = single
    with zipfile.ZipFile(demo_wheels.cu13) as given, zipfile.ZipFile(wheel) as merged:
        theirs = {n: given.read(n) for n in given.namelist() if ".dist-info/" not in n}
        ours = {n: merged.read(n) for n in merged.namelist() if ".dist-info/" not in n}
    added = sorted(set(ours) - set(theirs))
    assert added == ["wmdemo/_wheelmerge.py", "wmdemo/_wheelmerge_rules.py"], added
    assert not set(theirs) - set(ours)
    changed = sorted(n for n in theirs if theirs[n] != ours[n])
    assert changed == ["wmdemo/__init__.py"]  # the loader import, put in
    assert summary["variants"] == ["cu13"]


def test_verify_and_inspect_read_it_as_a_merged_wheel_of_one_build(wheelmerge_bin: Path, single) -> None:
    wheel, _ = single
    verified = json.loads(wheelmerge(wheelmerge_bin, "verify", "--json", wheel).stdout)
    assert verified["wheels"][0]["valid"] and verified["wheels"][0]["loaders"] == ["wmdemo/_wheelmerge.py"]
    report = json.loads(wheelmerge(wheelmerge_bin, "inspect", "--json", wheel).stdout)
    assert report["variants"] == ["cu13"]
    modules = report["loaders"][0]["modules"]["cu13"]
    assert modules["wmdemo._core"] == "_core.cpython-311-x86_64-linux-gnu.so"
    assert modules["wmdemo.sub._nested"] == "sub/_nested.cpython-311-x86_64-linux-gnu.so"


@pytest.mark.parametrize("bindings", ["cu13", "cu12"])
def test_installed_it_imports_its_build_or_says_why_not(single, make_venv, wheel_cache: WheelCache,
                                                         bindings: str) -> None:
    wheel, _ = single
    venv = make_venv(f"single-{bindings}")
    venv.install(wheel, "--no-deps", find_links=[wheel_cache.path])
    venv.install(f"cuda-bindings=={CUDA_BINDINGS[bindings]}", "--no-deps", find_links=[wheel_cache.path])
    probe = ("import json\n"
             "try:\n"
             "    import wmdemo\n"
             "    print(json.dumps([wmdemo.build_major(), wmdemo._wheelmerge.selected()]))\n"
             "except ImportError as error:\n"
             "    print(json.dumps(['ImportError', str(error)]))\n")
    found = json.loads(venv.run("-c", probe).stdout)
    if bindings == "cu13":
        assert found == [13, "cu13"]
    else:
        assert found[0] == "ImportError"
        assert "cuda-bindings 12" in found[1] and "has builds for cu13" in found[1], found[1]
        assert 'pip install "cuda-bindings==13.*"' in found[1], found[1]
