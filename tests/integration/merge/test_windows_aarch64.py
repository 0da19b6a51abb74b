"""cuda-core's wheels for Windows (win_amd64, win_arm64) and Linux aarch64, merged here.

cuda-core 1.2.2 publishes, besides the x86_64 wheel, a `manylinux_2_28_aarch64` and a `win_amd64`
wheel merged per CUDA major by its publisher's script (one build per `cuda/core/cuNN/` tree;
bench/make_real.py splits them back into the two builds that script took, as for x86_64), and a
`win_arm64` wheel with its CUDA 13 build alone. Windows wheels hold `.pyd` extension modules and
delvewheel's `cuda_core.libs/` with a name-mangled `msvcp140` DLL, which the package's
`__init__.py` adds with `os.add_dll_directory`.

Each split pair is merged, and the `win_arm64` build alone: `wheelmerge verify` and `inspect`,
`wheel unpack`, `twine check`, and the consumers of oracle.py (pip, installer, zipfile, unzip)
must all read the outputs, and the loaders must import each build's `.pyd` / aarch64 `.so`
modules by their module names. Importing cannot run here (Linux x86-64, no Windows or aarch64
interpreter): the loader's Windows path (an extension module loaded by its full path, its DLLs
found in its own directory and the ones `os.add_dll_directory` added) is the one CPython takes
for any `.pyd`, and per-build DLLs, which Windows would not find under labelled names, are
refused (tests/unit/test_plan.cpp).
"""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path

import pytest

import real_wheels
from conftest import run, tool_python, wheelmerge
from oracle import consumers_disagreement

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import make_real  # noqa: E402  (the splitter of the benchmark's real input)

PLATFORMS = {
    "win_amd64": "cuda_core-1.2.2-cp312-cp312-win_amd64.whl",
    "aarch64": "cuda_core-1.2.2-cp312-cp312-manylinux_2_24_aarch64.manylinux_2_28_aarch64.whl",
}
WIN_ARM64 = "cuda_core-1.2.2-cp312-cp312-win_arm64.whl"


def corpus(filename: str) -> Path:
    return real_wheels.fetch(next(w for w in real_wheels.WHEELS if w.filename == filename))


@pytest.fixture(scope="module")
def merged(wheelmerge_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("cuda-core-platforms")
    out = {}
    for platform, filename in PLATFORMS.items():
        splits = [work / make_real.write_split(corpus(filename), label, work)[0] for label in ("cu12", "cu13")]
        summary = json.loads(wheelmerge(wheelmerge_bin, "merge", *splits, "-o", work / "out", "--json").stdout)
        out[platform] = Path(summary["output"])
    single = work / WIN_ARM64.replace(".whl", ".cu13.whl")
    single.write_bytes(corpus(WIN_ARM64).read_bytes())
    summary = json.loads(wheelmerge(wheelmerge_bin, "merge", single, "-o", work / "out", "--json").stdout)
    out["win_arm64"] = Path(summary["output"])
    return out


@pytest.mark.parametrize("platform", ["win_amd64", "aarch64", "win_arm64"])
def test_merged_wheels_keep_their_name_and_tags(merged: dict[str, Path], platform: str) -> None:
    expected = PLATFORMS.get(platform, WIN_ARM64)
    assert merged[platform].name == expected


@pytest.mark.parametrize("platform, suffix, variants", [
    ("win_amd64", ".cp312-win_amd64.pyd", ["cu12", "cu13"]),
    ("aarch64", ".cpython-312-aarch64-linux-gnu.so", ["cu12", "cu13"]),
    ("win_arm64", ".cp312-win_arm64.pyd", ["cu13"]),
])
def test_loaders_import_each_builds_extension_modules(wheelmerge_bin: Path, merged: dict[str, Path], platform: str,
                                                      suffix: str, variants: list[str]) -> None:
    report = json.loads(wheelmerge(wheelmerge_bin, "inspect", "--json", merged[platform]).stdout)
    assert report["variants"] == variants
    (loader,) = report["loaders"]
    assert loader["package"] == "cuda.core" and loader["selector"] == "cuda"
    for label in variants:
        modules = loader["modules"][label]
        assert "cuda.core._device" in modules, sorted(modules)[:5]
        for module, stored in modules.items():
            assert module.startswith("cuda.core.") and stored.endswith(suffix), (module, stored)
            # Two builds: each under its labelled name; one build: under its own name.
            assert (f".{label}." in stored) == (len(variants) > 1), stored
        assert loader["preload"][label] == []  # delvewheel's DLL is shared, found by add_dll_directory
    with zipfile.ZipFile(merged[platform]) as z:
        names = set(z.namelist())
        init = z.read("cuda/core/__init__.py").decode()
    assert "cuda/core/_wheelmerge.py" in names
    if platform.startswith("win"):
        assert any(re.fullmatch(r"cuda_core\.libs/msvcp140-[0-9a-f]+\.dll", n) for n in names)
        assert "os.add_dll_directory(libs_dir)" in init  # delvewheel's patch stays


@pytest.mark.parametrize("platform", ["win_amd64", "aarch64", "win_arm64"])
def test_verify_and_publishing_tools_accept_them(wheelmerge_bin: Path, merged: dict[str, Path], platform: str,
                                                  tmp_path: Path) -> None:
    wheel = merged[platform]
    report = json.loads(wheelmerge(wheelmerge_bin, "verify", "--json", wheel).stdout)["wheels"][0]
    assert report["valid"] is True and report["loaders"] == ["cuda/core/_wheelmerge.py"]
    run([tool_python(), "-m", "wheel", "unpack", "-d", tmp_path, wheel])
    assert (tmp_path / "cuda_core-1.2.2" / "cuda" / "core" / "_wheelmerge.py").is_file()
    assert "PASSED" in run([tool_python(), "-m", "twine", "check", "--strict", wheel]).stdout
    assert consumers_disagreement(wheel) is None
