"""The generated loader and rules module as downstream projects see them: they pass the linters
those projects run on their own packages, with no configuration and no suppression comments
(the current ruff's default rules and its formatter, mypy --strict for Python 3.9 to 3.14),
they are small, and importing the package loads nothing heavy on the usual path."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import tool_python
from loader_fixtures import DISTRIBUTION, EXT_SUFFIX, SOURCES, build_native, default_manifest, make_site, run_python, render_loader

BIN = Path(tool_python()).parent
PYTHON_VERSIONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14"]


def labelled(manifest: dict, labels: list[str], selector: str) -> dict:
    """MANIFEST with its cu12/cu13 builds renamed to LABELS, for another selector."""
    text = json.dumps(manifest)
    for old, new in zip(("cu12", "cu13"), labels):
        text = text.replace(f'"{old}"', f'"{new}"').replace(f".{old}.", f".{new}.")
    out = json.loads(text)
    out["selector"] = selector
    out["sources"] = []
    out["extras"] = {label: [] for label in labels}
    return out


def manifests() -> dict[str, dict]:
    """One manifest per selector and cuda source order, some with long or unusual names."""
    cuda = default_manifest()
    runtime = default_manifest(extras=())
    runtime["sources"] = list(SOURCES["no cuda-bindings"])
    runtime["extras"] = {"cu12": ["ctk-cu12"], "cu13": ["ctk-cu13"]}
    fallback = default_manifest()
    fallback["sources"] = list(SOURCES["driver-fallback"])
    # Names that are long, hold quotes, backslashes and characters outside ASCII.
    fallback["files"]["cu12"]['kernels/"quoted"\\back é 中 \U0001f600.cubin'] = "kernels/odd.cu12.cubin"
    fallback["build_info"]["cu13"]["note"] = "x" * 120
    fallback["modules"]["cu12"]["pkg." + "long_module_name_" * 5] = "long" * 20 + ".cu12.py"
    return {
        "cuda": cuda,
        "cuda-runtime": runtime,
        "cuda-fallback": fallback,
        "torch": labelled(default_manifest(), ["torch210_cu12", "torch211_cu13"], "torch"),
        "cpu": labelled(default_manifest(), ["x86_64_v1", "x86_64_v3"], "cpu"),
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, Path]:
    """Per manifest, a package directory holding the loader and rules module it gets."""
    out = {}
    for name, manifest in manifests().items():
        package = tmp_path_factory.mktemp("lint") / "pkg"
        package.mkdir()
        (package / "__init__.py").write_text('"""A merged package."""\n')
        render_loader(manifest, package)
        out[name] = package
    return out


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("name", list(manifests()))
def test_ruff_check_and_format_pass_with_no_configuration(generated, name):
    package = generated[name]
    files = ["_wheelmerge.py", "_wheelmerge_rules.py"]
    check = run(BIN / "ruff", "check", "--isolated", "--no-cache", *files, cwd=package)
    assert check.returncode == 0, check.stdout + check.stderr
    formatted = run(BIN / "ruff", "format", "--isolated", "--no-cache", "--check", "--diff", *files, cwd=package)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    for file in files:
        text = (package / file).read_text()
        assert "noqa" not in text and "type: ignore" not in text


@pytest.mark.parametrize("version", PYTHON_VERSIONS)
def test_mypy_strict_passes_for_every_python(generated, version):
    for name, package in generated.items():
        result = run(BIN / "mypy", "--strict", "--no-incremental", "--python-version", version,
                     "-p", "pkg", cwd=package.parent)
        assert result.returncode == 0, f"{name}, Python {version}:\n{result.stdout}{result.stderr}"


def test_the_loader_is_small(generated, tmp_path):
    """The loader of a two-build cuda package with one extension module is at most 305 lines,
    and its code (all but the manifest, which grows with the package) at most 280; torch and
    CPU code are in their own selectors' rules modules only."""
    manifest = default_manifest()
    for section in ("modules", "files"):
        manifest[section] = {label: dict(list(files.items())[:1]) for label, files in manifest[section].items()}
    manifest["preload"] = {label: [] for label in manifest["variants"]}
    loader = render_loader(manifest, tmp_path).read_text().splitlines()
    begin = next(i for i, line in enumerate(loader) if line.startswith("# wheelmerge manifest: "))
    end = loader.index("# end of the wheelmerge manifest")
    assert len(loader) <= 305
    assert len(loader) - (end + 1 - begin) <= 280
    for selector in ("cuda", "torch", "cpu"):
        loader_text = (generated[selector] / "_wheelmerge.py").read_text()
        rules = (generated[selector] / "_wheelmerge_rules.py").read_text()
        assert ("CPUID" in rules) == (selector == "cpu")
        assert ('import_module("torch")' in rules) == (selector == "torch")
        assert "CPUID" not in loader_text and "import_module" not in loader_text


# Imports pkg and prints which of the modules the loader must not need are loaded.
HEAVY = ["importlib.metadata", "importlib.util", "importlib.abc", "importlib.resources", "ctypes",
         "json", "email", "re", "threading", "typing", "_wheelmerge_rules", "pkg._wheelmerge_rules"]
PROBE = f"""
import sys
before = set(sys.modules)
import pkg
print(pkg.build_major(), sorted(m for m in {HEAVY!r} if m in sys.modules and m not in before))
"""


@pytest.fixture(scope="module")
def bindings_python(make_venv, wheel_cache):
    venv = make_venv("lint-cuda-bindings-12")
    venv.install(wheel_cache.requirement("cu12"), find_links=[wheel_cache.path])
    return venv.python


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    return build_native(tmp_path_factory.mktemp("native"))


def test_the_usual_import_loads_nothing_heavy(bindings_python, native, tmp_path):
    """cuda-bindings installed the usual way: the loader decides alone, from its metadata."""
    site = make_site(tmp_path / "site", native, default_manifest())
    result = run_python(bindings_python, site, "-c", PROBE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 1) == ["12", "[]\n"]


def test_runtime_wheels_select_without_anything_heavy(make_venv, native, tmp_path):
    """A package without cuda-bindings (CuPy): an installed CUDA runtime wheel decides."""
    manifest = default_manifest(extras=())
    manifest["sources"] = list(SOURCES["no cuda-bindings"])
    site = make_site(tmp_path / "site", native, manifest)
    info = site / "nvidia_cuda_runtime-13.0.96.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cuda-runtime\nVersion: 13.0.96\n")
    result = run_python(make_venv("lint-bare").python, site, "-c", PROBE)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 1) == ["13", "[]\n"]
    how = run_python(make_venv("lint-bare-2").python, site, "-c",
                     "from pkg import _wheelmerge as w; print(w._select()[1])")
    assert how.stdout == "the CUDA runtime wheel nvidia-cuda-runtime 13.0.96 is installed\n"


def test_the_usual_case_agrees_with_the_rules(bindings_python, native, tmp_path):
    """The loader's own decision is the one the rules module makes for the same environment."""
    site = make_site(tmp_path / "site", native, default_manifest())
    code = ("from pkg import _wheelmerge as w; import json; "
            "print(json.dumps([list(w._usual()), list(w._rules('detect'))]))")
    result = run_python(bindings_python, site, "-c", code)
    assert result.returncode == 0, result.stderr
    usual, rules = json.loads(result.stdout)
    assert usual == rules
    assert usual[0] == "cu12"


def test_the_report_module_helps_and_prints_json(bindings_python, native, tmp_path):
    site = make_site(tmp_path / "site", native, default_manifest())
    helped = run_python(bindings_python, site, "-m", "pkg._wheelmerge", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: python -m pkg._wheelmerge [--json]")
    wrong = run_python(bindings_python, site, "-m", "pkg._wheelmerge", "--bogus")
    assert wrong.returncode == 2 and "unknown arguments" in wrong.stderr
    result = run_python(bindings_python, site, "-m", "pkg._wheelmerge", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["distribution"] == DISTRIBUTION
    assert report["selected"] == "cu12"
    assert report["builds"] == ["cu12", "cu13"]
    assert report["detected"]["cuda-bindings at"].endswith(".dist-info")
    assert any(entry["stored"] == f"_core.cu12{EXT_SUFFIX}" for entry in report["files"]["cu12"])
    assert sys.version.split()[0] in report["python"]
