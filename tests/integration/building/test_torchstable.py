"""End to end with a real stable-ABI torch extension: `wheelmerge build` builds
examples/torchstable against torch 2.10 (CUDA 12, with the CUDA 12.9 toolkit of
scripts/cuda12-toolkit.sh) and torch 2.11 (CUDA 13, the toolkit at /usr/local/cuda), both
targeting torch 2.10's stable ABI, from the downloads of scripts/torch-envs.sh without the
network, and merges them with floor labels. The merged wheel is installed beside torch 2.10.0,
2.11.0 and 2.15.0 (the newest on the index when pinned, CUDA 13.2), in the environments of
scripts/torch-envs.sh (left as they are), and each process is checked: which build it imports,
what that build was compiled with, what the operator computes. The build against 2.11 running
under 2.15 is the stable ABI at work; each build's extension is checked to call nothing of
torch's C++ API. A torch below a build's floor is refused before the extension loads.

No GPU here: the CUDA kernel's registration is checked, and the output says its run was not.
Nothing is skipped: a missing toolkit, environment or download fails the suite.
"""

from __future__ import annotations

import json
import re
import shutil
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.metadata import Metadata

import build_cache
import torch_envs
from conftest import ROOT, clean_env, loader_manifest, run, tool_python
from torch_envs import TorchEnv

EXAMPLE = ROOT / "examples" / "torchstable"
TOOLKIT_SCRIPT = ROOT / "scripts" / "cuda12-toolkit.sh"
CUDA13_HOME = Path("/usr/local/cuda")
LABELS = ["torch210plus_cu12", "torch211plus_cu13"]
# The torch environment each label is built in, and those the merged wheel is run in: the label
# each must select.
BUILT_IN = {"torch210plus_cu12": "torch210_cu12", "torch211plus_cu13": "torch211_cu13"}
RUNS = {"torch210_cu12": "torch210plus_cu12", "torch211_cu13": "torch211plus_cu13",
        "torch215_cu13": "torch211plus_cu13"}
TOOLKIT_CUDA = {"torch210plus_cu12": "12.9", "torch211plus_cu13": "13.0"}
EXT = sysconfig.get_config_var("EXT_SUFFIX")
WHEEL_NAME = "torchstable-0.1.0-cp311-cp311-linux_x86_64.whl"
# Demangled names of torch's C++ API, which a stable-ABI build must not call.
CXX_API = re.compile(r"\b(c10|at|torch|caffe2)::")


def say(config: pytest.Config, line: str) -> None:
    with config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        config.pluginmanager.get_plugin("terminalreporter").write_line(f"test_torchstable: {line}")


@pytest.fixture(scope="session")
def envs() -> dict[str, TorchEnv]:
    found, _, _ = torch_envs.prepare(list(RUNS))
    return found


@pytest.fixture(scope="session")
def toolkits() -> dict[str, Path]:
    cu12 = Path(run([TOOLKIT_SCRIPT], env=clean_env(), timeout=900).stdout.splitlines()[-1])
    return {"torch210plus_cu12": cu12, "torch211plus_cu13": CUDA13_HOME}


@dataclass(frozen=True)
class Built:
    wheel: Path  # the merge of both builds
    one: Path  # a one-build wheel of torch211plus_cu13
    summary: dict


@pytest.fixture(scope="session")
def built(envs: dict[str, TorchEnv], toolkits: dict[str, Path], wheelmerge_bin: Path,
          pytestconfig: pytest.Config) -> Built:
    """`wheelmerge build` of the example (both variants at once, each environment filled by uv
    from the torch downloads alone, --installer uv and UV_OFFLINE), and of its torch211plus_cu13
    variant alone; kept by build_cache.py for
    what the builds are made of."""
    links = [a for label in LABELS for a in ("--find-links", str(envs[BUILT_IN[label]].wheels))]
    cuda = ["--cuda", f"12={toolkits['torch210plus_cu12']}", "--cuda", f"13={toolkits['torch211plus_cu13']}"]

    def build(base: Path) -> None:
        started = time.monotonic()
        result = run([wheelmerge_bin, "build", EXAMPLE, *cuda, *links, "--python", tool_python(),
                      "-o", base / "dist", "--jobs", "2", "--json", "--installer", "uv"],
                     env=clean_env({"UV_OFFLINE": "1", "NO_COLOR": "1"}), timeout=2400)
        summary = json.loads(result.stdout)
        for variant in summary["variants"]:
            say(pytestconfig, f"built {variant['label']} in {variant['seconds']:.0f} s (both at once)")
        say(pytestconfig, f"wheelmerge build: {time.monotonic() - started:.0f} s in all")
        (base / "summary.json").write_text(json.dumps(summary))
        run([wheelmerge_bin, "build", EXAMPLE, "--variant", "torch211plus_cu13", *cuda, *links,
             "--python", tool_python(), "-o", base / "one", "--installer", "uv"],
            env=clean_env({"UV_OFFLINE": "1", "NO_COLOR": "1"}), timeout=2400)

    key = build_cache.key_of(
        [EXAMPLE], wheelmerge_bin, tool_python(), build_cache.tool_version(tool_python(), "--version"), "installer=uv",
        *(str(toolkits[label].resolve()) for label in LABELS),
        *(f"{label}={envs[BUILT_IN[label]].version}" for label in LABELS))
    base = build_cache.cached("torchstable-build", key, build)
    summary = json.loads((base / "summary.json").read_text())
    return Built(base / "dist" / WHEEL_NAME, base / "one" / WHEEL_NAME, summary)


def test_build_records_each_variant(built: Built, envs: dict[str, TorchEnv], toolkits: dict[str, Path]) -> None:
    variants = {variant["label"]: variant for variant in built.summary["variants"]}
    assert list(variants) == LABELS
    for label, variant in variants.items():
        env = envs[BUILT_IN[label]]
        assert Path(variant["toolkit"]).resolve() == toolkits[label].resolve()
        wanted = {"torch": env.version, "torch_cuda": env.cuda, "cuda_version": TOOLKIT_CUDA[label]}
        assert {key: variant["build_info"].get(key) for key in wanted} == wanted, variant


def test_merged_wheel_requires_torch_from_the_lowest_floor(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as archive:
        metadata = Metadata.from_email(archive.read("torchstable-0.1.0.dist-info/METADATA"), validate=True)
        loader = archive.read("torchstable/_wheelmerge.py").decode()
        names = {n for n in archive.namelist() if ".dist-info/" not in n}
    assert [str(r) for r in metadata.requires_dist] == ["torch<3,>=2.10"]
    manifest = loader_manifest(loader)
    assert manifest["selector"] == "torch" and manifest["variants"] == LABELS
    assert {f"torchstable/_C.{label}{EXT}" for label in LABELS} <= names


def undefined_cxx_api(library: Path) -> list[str]:
    """The undefined dynamic symbols of `library` that belong to torch's C++ API, demangled."""
    listed = run(["nm", "-D", "-C", "--undefined-only", library]).stdout.splitlines()
    return [line.split(None, 1)[-1] for line in listed if CXX_API.search(line)]


def test_each_build_calls_only_the_c_shim(built: Built, envs: dict[str, TorchEnv], tmp_path: Path) -> None:
    """The stable-ABI claim, read from the builds themselves with nm: nothing of c10::, at:: or
    torch::, only the C shim. The same check finds torch's C++ API in libtorch_python, which is
    built against it."""
    with zipfile.ZipFile(built.wheel) as archive:
        archive.extractall(tmp_path)
    for label in LABELS:
        library = tmp_path / "torchstable" / f"_C.{label}{EXT}"
        assert undefined_cxx_api(library) == [], label
        undefined = run(["nm", "-D", "--undefined-only", library]).stdout
        assert "aoti_torch_get_current_cuda_stream" in undefined and "torch_library_impl" in undefined
    torch_python = envs["torch210_cu12"].python.parent.parent.glob("lib/python3.*/site-packages/torch/lib/libtorch_python.so")
    assert len(undefined_cxx_api(next(torch_python))) > 100


# --- installed beside each torch -----------------------------------------------------------------

@pytest.fixture(scope="session")
def site_of(tmp_path_factory: pytest.TempPathFactory):
    """site_of(wheel): a directory the wheel is installed into, put first on a torch
    environment's sys.path; the environment itself is never changed."""
    return torch_envs.site_factory(tmp_path_factory.mktemp("torchstable-sites"))


PROBE = r"""
import json
import torch, torchstable
x64 = torch.tensor([1.0, 2.0, -0.5, 3.25, 0.0], dtype=torch.float64)
y64 = torch.tensor([0.5, -4.0, 1.0, 2.0, 7.0], dtype=torch.float64)
cpu = {str(dtype): torchstable.scale_add(x64.to(dtype), y64.to(dtype), 3.0).tolist()
       for dtype in (torch.float32, torch.float64)}
dispatched = torch.ops.torchstable.scale_add(x64, y64, 3.0).tolist()
strided = torchstable.scale_add(x64.reshape(1, 5).expand(2, 5).t(), y64.reshape(5, 1).expand(5, 2), -2.0)
try:
    torchstable.scale_add(x64, y64[:3], 1.0)
    mismatch = None
except RuntimeError as error:
    mismatch = str(error).splitlines()[0]
cuda = torchstable.scale_add(x64.float().cuda(), y64.float().cuda(), 3.0).cpu().tolist() if torch.cuda.is_available() else None
print(json.dumps({
    "selected": torchstable._wheelmerge.selected(), "build": torchstable.build(),
    "torch": torch.__version__, "torch_cuda": torch.version.cuda, "core": torchstable._C.__file__,
    "cpu": cpu, "dispatched": dispatched, "strided": strided.tolist(), "mismatch": mismatch,
    "cuda_kernel_registered": torch._C._dispatch_has_kernel_for_dispatch_key("torchstable::scale_add", "CUDA"),
    "cuda_available": torch.cuda.is_available(), "cuda": cuda,
}))
"""


@pytest.mark.parametrize("torch_label", list(RUNS))
def test_each_torch_imports_the_build_of_its_cuda_major(torch_label: str, envs: dict[str, TorchEnv], built: Built,
                                                        site_of, pytestconfig: pytest.Config) -> None:
    env = envs[torch_label]
    label = RUNS[torch_label]
    site = site_of(built.wheel)
    report = json.loads(env.run("-W", "ignore", "-c", PROBE, site=site).stdout)
    assert report["selected"] == label
    assert Path(report["core"]) == site / "torchstable" / f"_C.{label}{EXT}"
    assert report["torch"].split("+")[0] == env.version and report["torch_cuda"] == env.cuda
    # Compiled for torch 2.10's stable ABI, with the headers of the torch the label names.
    built_against = envs[BUILT_IN[label]]
    assert report["build"] == {"abi": "2.10", "torch": built_against.release, "cuda": TOOLKIT_CUDA[label],
                               "cuda_version": report["build"]["cuda_version"], "kernels": ["sm_90"]}
    assert report["build"]["cuda_version"] // 1000 == int(env.cuda.split(".")[0])
    expected = [3.5, 2.0, -0.5, 11.75, 7.0]  # x * 3 + y, exact in float32 and float64
    assert report["cpu"] == {"torch.float32": expected, "torch.float64": expected}
    assert report["dispatched"] == expected
    x, y = [1.0, 2.0, -0.5, 3.25, 0.0], [0.5, -4.0, 1.0, 2.0, 7.0]
    assert report["strided"] == [[x[i] * -2.0 + y[i]] * 2 for i in range(5)]
    assert report["mismatch"] == "torchstable.scale_add: x has shape [5] but y has [3]; both must have one shape"
    assert report["cuda_kernel_registered"] is True
    if report["cuda_available"]:
        assert report["cuda"] == expected
        say(pytestconfig, f"torch {env.version}: {label}'s CUDA kernel run on the GPU")
    else:
        assert report["cuda"] is None
        say(pytestconfig, f"torch {env.version}: {label} selected; CUDA path not run (no GPU), the CPU kernel "
                          "and the CUDA kernel's registration checked")


def test_a_torch_below_the_floor_is_refused_with_the_fix(built: Built, envs: dict[str, TorchEnv], site_of) -> None:
    """The torch211plus_cu13 build alone (a one-build wheel) beside torch 2.10: refused before
    the extension loads, naming the torch found and the requirement that fixes it; beside 2.11
    and 2.15 it is selected."""
    site = site_of(built.one)
    refused = envs["torch210_cu12"].import_report("torchstable", site)
    assert refused["error"] == "SelectionError" and refused["module"] == "torchstable._wheelmerge", refused
    message = refused["message"]
    assert message.startswith("torchstable: cannot select a torch build: torch 2.10.0"), message
    assert "undefined symbol" not in message and "libcudart" not in message
    assert ('pip install "torch>=2.11,<3"  # torch211plus_cu13: torch 2.11 or a later 2.x built with CUDA 13'
            in message), message
    for torch_label in ("torch211_cu13", "torch215_cu13"):
        chosen = envs[torch_label].import_report("torchstable", site)
        assert chosen == {"error": None, "selected": "torch211plus_cu13"}
    with zipfile.ZipFile(built.one) as archive:
        metadata = Metadata.from_email(archive.read("torchstable-0.1.0.dist-info/METADATA"), validate=True)
    assert [str(r) for r in metadata.requires_dist] == ["torch<3,>=2.11"]


def test_setup_refuses_a_variant_of_another_build(envs: dict[str, TorchEnv], toolkits: dict[str, Path],
                                                  tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = envs["torch210_cu12"]
    home = toolkits["torch210plus_cu12"]
    environment = clean_env({"CUDA_HOME": str(home), "WHEELMERGE_BUILD_VARIANT": "torch211plus_cu13"})
    result = run([env.python, "setup.py", "--version"], env=environment, cwd=tmp_path / "src", check=False)
    assert result.returncode != 0
    assert (f"torchstable: WHEELMERGE_BUILD_VARIANT=torch211plus_cu13, but this build is torch210plus_cu12 "
            f"(torch {env.version}") in result.stderr, result.stderr
    environment = clean_env({"CUDA_HOME": str(CUDA13_HOME)})
    result = run([env.python, "setup.py", "--version"], env=environment, cwd=tmp_path / "src", check=False)
    assert result.returncode != 0
    assert (f"is built with CUDA {env.cuda}, but the toolkit at CUDA_HOME={CUDA13_HOME} is CUDA 13.0; use a CUDA 12 "
            "toolkit") in result.stderr, result.stderr
