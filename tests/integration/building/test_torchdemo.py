"""End to end with a real torch extension: `wheelmerge build` builds examples/torchdemo against
torch 2.10 (CUDA 12, with the CUDA 12.9 toolkit assembled by scripts/cuda12-toolkit.sh) and
against torch 2.11 (CUDA 13, with the toolkit at /usr/local/cuda), installing each torch from
the downloads of scripts/torch-envs.sh without the network, and merges the two; the merged wheel
is then installed beside each torch (in the environments of scripts/torch-envs.sh, left as they
are), and each process is checked: which build it imports, what that build was compiled with,
and that the operator computes the right numbers. A torch that the chosen build was not made
for is refused by the loader's SelectionError, before the extension is loaded.

The operator's CUDA kernel runs only where torch.cuda.is_available(); elsewhere the CPU kernel
is checked, the CUDA kernel's registration is checked, and the output says the CUDA path was not
run. Nothing is skipped: a missing toolkit, environment or download fails the suite.
"""

from __future__ import annotations

import json
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
from conftest import ROOT, clean_env, run, tool_python, loader_manifest
from torch_envs import TorchEnv

EXAMPLE = ROOT / "examples" / "torchdemo"
TOOLKIT_SCRIPT = ROOT / "scripts" / "cuda12-toolkit.sh"
CUDA13_HOME = Path("/usr/local/cuda")
LABELS = list(torch_envs.BUILT)  # torch210_cu12, torch211_cu13
# The toolkit each build is compiled with: CUDA_VERSION of its cuda.h, as build() reports it.
TOOLKIT_CUDA = {"torch210_cu12": "12.9", "torch211_cu13": "13.0"}
ARCH_LIST = "9.0"  # what the example's [tool.wheelmerge] env sets
EXT = sysconfig.get_config_var("EXT_SUFFIX")  # .cpython-311-x86_64-linux-gnu.so
SHARED = ["torchdemo/__init__.py", "torchdemo/_C.pyi", "torchdemo/py.typed"]
WHEEL_NAME = "torchdemo-0.1.0-cp311-cp311-linux_x86_64.whl"


def say(config: pytest.Config, line: str) -> None:
    """A line in the test run's output, whatever pytest captures."""
    with config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        config.pluginmanager.get_plugin("terminalreporter").write_line(f"test_torchdemo: {line}")


# --- the environments and toolkits -------------------------------------------------------------

@pytest.fixture(scope="session")
def envs(pytestconfig: pytest.Config) -> dict[str, TorchEnv]:
    found, messages, seconds = torch_envs.prepare(LABELS)
    say(pytestconfig, f"torch environments ready in {seconds:.1f} s")
    return found


@pytest.fixture(scope="session")
def toolkits() -> dict[str, Path]:
    """The CUDA toolkit each label builds with."""
    cu12 = Path(run([TOOLKIT_SCRIPT], env=clean_env(), timeout=900).stdout.splitlines()[-1])
    return {"torch210_cu12": cu12, "torch211_cu13": CUDA13_HOME}


def test_environments_hold_their_torch(envs: dict[str, TorchEnv], pytestconfig: pytest.Config) -> None:
    for label, env in envs.items():
        started = time.monotonic()
        found = env.run("-c", "import torch; print(torch.__version__, torch.version.cuda, "
                              "torch.cuda.is_available())").stdout.split()
        say(pytestconfig, f"import torch {env.version}: {time.monotonic() - started:.1f} s")
        assert found[0].split("+")[0] == env.version and found[1] == env.cuda, (label, found)
        # The environments are shared by every run: nothing a test builds is installed there.
        assert env.run("-c", "import importlib.util; print(importlib.util.find_spec('torchdemo'))").stdout.strip() == "None"


def test_environments_are_reused(envs: dict[str, TorchEnv]) -> None:
    again, messages, seconds = torch_envs.prepare(LABELS)
    assert again == envs
    for env in envs.values():
        assert f"torch {env.version}: reusing {env.python.parent.parent}" in messages, messages
    assert seconds < 30, f"reusing the environments took {seconds:.1f} s"


# --- built and merged with one command ---------------------------------------------------------

@dataclass(frozen=True)
class Built:
    """What `wheelmerge build` made: the merged wheel, and its JSON summary."""

    wheel: Path
    summary: dict


def toolkit_identity(home: Path) -> str:
    """A toolkit for a cache key: where it is, its version.json, and what its nvcc says."""
    parts = [str(home.resolve())]
    for name in ("version.json", "bin/nvcc"):
        path = home / name
        if path.is_file():
            parts.append(path.read_text() if name.endswith(".json") else build_cache.tool_version(path, "--version"))
    return "\n".join(parts)


@pytest.fixture(scope="session")
def built(envs: dict[str, TorchEnv], toolkits: dict[str, Path], wheelmerge_bin: Path,
          pytestconfig: pytest.Config) -> Built:
    """examples/torchdemo built by `wheelmerge build` once per variant of its configuration,
    both at once, each in an isolated environment that uv fills from the torch downloads alone
    (--installer uv, UV_OFFLINE: torch hardlinked from uv's cache, which scripts/torch-envs.sh
    filled, in a second where pip copies it in a minute or two; pip's way is test_build's and
    the workflow rehearsals'), then merged. Kept (build_cache.py) for the example's sources, this wheelmerge
    executable's bytes, the toolkits' nvcc, the torch versions and the interpreter: what the
    build is made of. WHEELMERGE_TEST_REBUILD=1 builds it anew."""
    links = [a for label in LABELS for a in ("--find-links", str(envs[label].wheels))]

    def build(base: Path) -> None:
        started = time.monotonic()
        work = base / "work"
        result = run([wheelmerge_bin, "build", EXAMPLE, "--cuda", f"12={toolkits['torch210_cu12']}",
                      "--cuda", f"13={toolkits['torch211_cu13']}", *links, "--python", tool_python(),
                      "-o", base / "dist", "--log-dir", work / "logs", "--jobs", "2", "--json", "--installer", "uv"],
                     env=clean_env({"UV_OFFLINE": "1", "NO_COLOR": "1"}), timeout=2400)
        seconds = time.monotonic() - started
        summary = json.loads(result.stdout)
        for variant in summary["variants"]:
            say(pytestconfig, f"built {variant['label']} in {variant['seconds']:.0f} s (both at once)")
        say(pytestconfig, f"wheelmerge build: {seconds:.0f} s in all")
        assert Path(summary["output"]).parent == base / "dist", summary["output"]
        (base / "summary.json").write_text(json.dumps(summary))
        shutil.rmtree(work, ignore_errors=True)

    key = build_cache.key_of(
        [EXAMPLE], wheelmerge_bin, tool_python(), build_cache.tool_version(tool_python(), "--version"), "installer=uv",
        *(toolkit_identity(toolkits[label]) for label in LABELS),
        *(f"{label}={envs[label].version}+{envs[label].cuda}" for label in LABELS))
    base = build_cache.cached("torchdemo-build", key, build)
    summary = json.loads((base / "summary.json").read_text())
    wheel = base / "dist" / Path(summary["output"]).name
    summary["output"] = str(wheel)
    return Built(wheel, summary)


@pytest.fixture(scope="session")
def merged(built: Built) -> Path:
    return built.wheel


def test_build_records_each_variant(built: Built, envs: dict[str, TorchEnv], toolkits: dict[str, Path]) -> None:
    variants = {variant["label"]: variant for variant in built.summary["variants"]}
    assert list(variants) == LABELS
    for label, variant in variants.items():
        env = envs[label]
        assert Path(variant["toolkit"]).resolve() == toolkits[label].resolve()
        wanted = {"torch": env.version, "torch_cuda": env.cuda, "cuda_version": TOOLKIT_CUDA[label]}
        assert {key: variant["build_info"].get(key) for key in wanted} == wanted, variant


def build_env(home: Path) -> dict[str, str]:
    """What `wheelmerge build` sets for a build against the toolkit at `home`."""
    env = clean_env({"CUDA_HOME": str(home), "CUDA_PATH": str(home), "TORCH_CUDA_ARCH_LIST": ARCH_LIST})
    env["PATH"] = f"{home / 'bin'}:{env['PATH']}"
    return env


def test_build_refuses_a_toolkit_of_another_major(envs: dict[str, TorchEnv], tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = envs["torch210_cu12"]
    result = run([env.python, "setup.py", "--version"], env=build_env(CUDA13_HOME), cwd=tmp_path / "src", check=False)
    assert result.returncode != 0
    assert (f"torchdemo: torch {env.version}" in result.stderr and f"is built with CUDA {env.cuda}, but the "
            f"toolkit at CUDA_HOME={CUDA13_HOME} is CUDA 13.0; use a CUDA 12 toolkit") in result.stderr, result.stderr


def test_build_refuses_a_variant_of_another_torch(envs: dict[str, TorchEnv], toolkits: dict[str, Path],
                                                  tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "src", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = envs["torch210_cu12"]
    environment = build_env(toolkits["torch210_cu12"])
    environment["WHEELMERGE_BUILD_VARIANT"] = "torch211_cu13"
    result = run([env.python, "setup.py", "--version"], env=environment, cwd=tmp_path / "src", check=False)
    assert result.returncode != 0
    assert (f"torchdemo: WHEELMERGE_BUILD_VARIANT=torch211_cu13, but this build is torch210_cu12 "
            f"(torch {env.version}") in result.stderr, result.stderr


# --- merged ------------------------------------------------------------------------------------

def manifest(wheel: Path) -> dict:
    loader = zipfile.ZipFile(wheel).read("torchdemo/_wheelmerge.py").decode()
    return loader_manifest(loader)


def test_merged_layout(merged: Path) -> None:
    assert merged.name == WHEEL_NAME
    names = {n for n in zipfile.ZipFile(merged).namelist() if ".dist-info/" not in n}
    assert names == {*SHARED, "torchdemo/_wheelmerge.py", "torchdemo/_wheelmerge_rules.py", *(f"torchdemo/_C.{label}{EXT}" for label in LABELS)}
    found = manifest(merged)
    assert found["selector"] == "torch"
    assert found["variants"] == LABELS
    assert found["modules"] == {label: {"torchdemo._C": f"_C.{label}{EXT}"} for label in LABELS}


def test_merged_requires_one_torch_range(merged: Path) -> None:
    with zipfile.ZipFile(merged) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Metadata.from_email(archive.read(name), validate=True)
    assert [str(r) for r in metadata.requires_dist] == ["torch<2.12,>=2.10"]
    assert not metadata.provides_extra


# --- installed beside each torch ---------------------------------------------------------------

@pytest.fixture(scope="session")
def site_of(tmp_path_factory: pytest.TempPathFactory):
    """site_of(wheel): a directory the wheel is installed into, put first on a torch
    environment's sys.path; the environment itself is never changed."""
    return torch_envs.site_factory(tmp_path_factory.mktemp("torchdemo-sites"))


# Runs in a torch environment with torchdemo installed: what was imported, compiled and computed.
PROBE = r"""
import json, sys
import torchdemo, torch
order = [m for m in sys.modules if m in ("torchdemo._wheelmerge", "torch", "torchdemo._C")]
x64 = torch.tensor([1.0, 2.0, -0.5, 3.25, 0.0], dtype=torch.float64)
y64 = torch.tensor([0.5, -4.0, 1.0, 2.0, 7.0], dtype=torch.float64)
cpu = {str(dtype): torchdemo.scale_add(x64.to(dtype), y64.to(dtype), 3.0).tolist()
       for dtype in (torch.float32, torch.float64)}
strided = torchdemo.scale_add(x64.reshape(1, 5).expand(2, 5).t(), y64.reshape(5, 1).expand(5, 2), -2.0)
try:
    torchdemo.scale_add(x64, y64[:3], 1.0)
    mismatch = None
except RuntimeError as error:
    mismatch = str(error).splitlines()[0]
cuda = None
if torch.cuda.is_available():
    cuda = torchdemo.scale_add(x64.float().cuda(), y64.float().cuda(), 3.0).cpu().tolist()
print(json.dumps({
    "selected": torchdemo._wheelmerge.selected(),
    "build_info": torchdemo._wheelmerge.build_info(),
    "build": torchdemo.build(),
    "torch": torch.__version__, "torch_cuda": torch.version.cuda,
    "core": torchdemo._C.__file__,
    "order": order,
    "cpu": cpu, "strided": strided.tolist(), "mismatch": mismatch,
    "cuda_kernel_registered": torch._C._dispatch_has_kernel_for_dispatch_key("torchdemo::scale_add", "CUDA"),
    "cuda_available": torch.cuda.is_available(), "cuda": cuda,
}))
"""


@pytest.mark.parametrize("label", LABELS)
def test_each_torch_imports_its_build(label: str, envs: dict[str, TorchEnv], merged: Path, site_of,
                                      pytestconfig: pytest.Config) -> None:
    env = envs[label]
    site = site_of(merged)
    report = json.loads(env.run("-c", PROBE, site=site).stdout)
    assert report["selected"] == label
    assert Path(report["core"]) == site / "torchdemo" / f"_C.{label}{EXT}"
    # The package imports the loader first, then torch, then the selected build's extension.
    assert report["order"] == ["torchdemo._wheelmerge", "torch", "torchdemo._C"]
    # Compiled against the running torch's release, with a toolkit of its CUDA major.
    running = ".".join(report["torch"].split("+")[0].split(".")[:2])
    assert report["build"]["torch"] == running == env.release
    assert report["build"]["torch_cuda"] == report["torch_cuda"] == env.cuda
    assert report["build"]["cuda"] == TOOLKIT_CUDA[label]
    assert report["build"]["cuda_version"] // 1000 == int(env.cuda.split(".")[0])
    assert report["build"]["kernels"] == ["sm_90"]
    # What `wheelmerge build` recorded of the build (also cuda_bindings: torch's own dependency).
    wanted = {"torch": env.version, "torch_cuda": env.cuda, "cuda_version": TOOLKIT_CUDA[label]}
    assert {key: report["build_info"].get(key) for key in wanted} == wanted, report["build_info"]

    expected = [3.5, 2.0, -0.5, 11.75, 7.0]  # x * 3 + y, exact in float32 and float64
    assert report["cpu"] == {"torch.float32": expected, "torch.float64": expected}
    x, y = [1.0, 2.0, -0.5, 3.25, 0.0], [0.5, -4.0, 1.0, 2.0, 7.0]
    assert report["strided"] == [[x[i] * -2.0 + y[i]] * 2 for i in range(5)]
    assert report["mismatch"] == "torchdemo.scale_add: x has shape [5] but y has [3]; both must have one shape"
    assert report["cuda_kernel_registered"] is True
    if report["cuda_available"]:
        assert report["cuda"] == expected
        say(pytestconfig, f"{label}: CUDA kernel run on the GPU")
    else:
        assert report["cuda"] is None
        say(pytestconfig, f"{label}: CUDA path not run (torch.cuda.is_available() is False); "
                          "the CPU kernel was checked, and the CUDA kernel's registration")


def assert_refused(report: dict, wanted: str, installed: TorchEnv) -> None:
    assert report["error"] == "SelectionError" and report["module"] == "torchdemo._wheelmerge", report
    message = report["message"]
    assert "undefined symbol" not in message
    assert wanted in message and f"torch {installed.version}" in message, message


@pytest.mark.parametrize("label, other", [("torch210_cu12", "torch211_cu13"), ("torch211_cu13", "torch210_cu12")])
def test_override_naming_the_other_torchs_build_is_refused(label: str, other: str, envs: dict[str, TorchEnv],
                                                           merged: Path, site_of) -> None:
    env = envs[label]
    refused = env.import_report("torchdemo", site_of(merged), extra={"WHEELMERGE_VARIANT": other})
    assert_refused(refused, other, env)
    # The override naming the build that fits is taken.
    fits = env.import_report("torchdemo", site_of(merged), extra={"WHEELMERGE_VARIANT": label})
    assert fits == {"error": None, "selected": label}


# The loader alone, executed from its file without the package's __init__ (which imports torch
# itself): importing it and asking for the builds must not import torch.
LOADER_ONLY = r"""
import importlib.util, json, pathlib, sys
path = pathlib.Path(sys.argv[1]) / "torchdemo" / "_wheelmerge.py"
spec = importlib.util.spec_from_file_location("torchdemo._wheelmerge", path)
loader = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = loader
spec.loader.exec_module(loader)
torch_modules = lambda: sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
after_import = torch_modules()
variants = loader.variants()
after_variants = torch_modules()
import torchdemo  # the package now: its loader is this one
print(json.dumps({"after_import": after_import, "after_variants": after_variants, "variants": variants,
                  "same_loader": torchdemo._wheelmerge is loader, "selected": loader.selected()}))
"""


@pytest.mark.parametrize("label", LABELS)
def test_loader_does_not_import_torch_before_a_variant_module(label: str, envs: dict[str, TorchEnv],
                                                              merged: Path, site_of) -> None:
    site = site_of(merged)
    report = json.loads(envs[label].run("-c", LOADER_ONLY, str(site), site=site).stdout)
    assert report == {"after_import": [], "after_variants": [], "variants": LABELS, "same_loader": True,
                      "selected": label}
