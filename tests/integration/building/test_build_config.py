"""`wheelmerge build` reading its configuration: pyproject.toml's [tool.wheelmerge] or
wheelmerge.yaml, located errors, usage errors, and the variant labels it builds (CPU levels with
their own requirements, --variant, --build-info, torch labels checked against the build
environment, the PEP 517 backend)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import wheelgen
from build_support import (  # noqa: F401 (toolkits: a fixture)
    LABELS,
    PYTHON,
    build_env,
    build_ok,
    copy_project,
    describe,
    inspect_json,
    manifest,
    real,
    toolkits,
    variant_bytes,
    variant_module,
    wheelmerge,
)
from conftest import ROOT, run

# --- (8) where the configuration comes from ----------------------------------------------------

CONFIG_MARKER = "# --- wheelmerge configuration"


def without_config(project: Path) -> str:
    """The project's pyproject.toml up to its wheelmerge configuration."""
    text = (project / "pyproject.toml").read_text()
    assert CONFIG_MARKER in text
    return text[: text.index(CONFIG_MARKER)]


def test_config_from_wheelmerge_yaml(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    (project / "pyproject.toml").write_text(without_config(project))
    (project / "wheelmerge.yaml").write_text(f"""\
# the same schema as [tool.wheelmerge]
cuda: [12, 13]
variant-files:
  - envprobe/_buildenv.py
env:
  WMTEST_GLOBAL: from-yaml
  WMTEST_OVERRIDE: global-yaml
cu12:
  env:
    WMTEST_CU12_ONLY: yaml-for-cu12
    WMTEST_OVERRIDE: cu12-yaml
cu13:
  toolkit: {toolkits.cu13}
""")
    built = build_ok(wheelmerge_bin, project, tmp_path, env={"WHEELMERGE_CUDA_12": str(toolkits.cu12)})
    assert built.variant("cu13")["found_by"] == "[tool.wheelmerge.cu13] toolkit", built.summary
    assert built.variant("cu12")["found_by"] == "WHEELMERGE_CUDA_12", built.summary
    seen = {label: variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"]["env"] for label in LABELS}
    assert seen["cu12"]["WMTEST_GLOBAL"] == seen["cu13"]["WMTEST_GLOBAL"] == "from-yaml", seen
    assert (seen["cu12"]["WMTEST_CU12_ONLY"], seen["cu13"]["WMTEST_CU12_ONLY"]) == ("yaml-for-cu12", None), seen
    assert (seen["cu12"]["WMTEST_OVERRIDE"], seen["cu13"]["WMTEST_OVERRIDE"]) == ("cu12-yaml", "global-yaml"), seen


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# Each case: the configuration file's text and, per problem, a text on its line and the message.
INVALID_CONFIGS = {
    "toml unknown key": ("pyproject.toml", '[tool.wheelmerge]\nvariant-files = ["envprobe/_buildenv.py"]\ncolour = "blue"\n',
                         [("colour", 'unknown key "colour"')]),
    "toml unknown cu12 key": ("pyproject.toml", '[tool.wheelmerge]\nvariant-files = ["envprobe/_buildenv.py"]\n'
                              '[tool.wheelmerge.cu12]\ncolour = "blue"\n',
                              [("colour", 'unknown key "cu12.colour"')]),
    "toml wrong types": ("pyproject.toml", '[tool.wheelmerge]\ncuda = "12"\ndriver-fallback = "yes"\n',
                         [("cuda =", '"cuda" must be an array'),
                          ("driver-fallback", '"driver-fallback" must be true or false')]),
    "yaml unknown key": ("wheelmerge.yaml", "variant-files:\n  - envprobe/_buildenv.py\ncolour: blue\n",
                         [("colour", 'unknown key "colour"')]),
    "yaml unknown cu12 key": ("wheelmerge.yaml", "variant-files: [envprobe/_buildenv.py]\ncu12:\n  env: {A: b}\n  colour: blue\n",
                              [("colour", 'unknown key "cu12.colour"')]),
}


@pytest.mark.parametrize("case", sorted(INVALID_CONFIGS))
def test_invalid_config_is_located(wheelmerge_bin, toolkits, tmp_path, case):
    """Exit 2 with FILE:LINE:COL of each problem, before any build starts."""
    project = copy_project("envprobe", tmp_path)
    name, text, problems = INVALID_CONFIGS[case]
    base = without_config(project)
    if name == "pyproject.toml":
        text = base + text
    else:
        (project / "pyproject.toml").write_text(base)
    config_file = project / name
    config_file.write_text(text)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out, "--no-isolation",
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert len(errors) == len(problems), describe(result)
    lines = text.splitlines()
    for needle, what in problems:
        line = _line_of(text, needle)
        located = [re.match(rf"wheelmerge: error: {re.escape(str(config_file))}:(\d+):(\d+): ", e) for e in errors
                   if what in e]
        assert located and located[0], f"no {config_file}:LINE:COL: ...{what}... in:\n{result.stderr}"
        assert int(located[0].group(1)) == line, (line, errors)
        assert 1 <= int(located[0].group(2)) <= len(lines[line - 1]), (lines[line - 1], errors)
    assert "copying the source tree" not in result.stderr
    assert not out.exists()


def test_config_in_both_places_is_refused(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    (project / "wheelmerge.yaml").write_text("variant-files: [envprobe/_buildenv.py]\n")
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out, "--no-isolation",
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert str(project / "wheelmerge.yaml") in result.stderr, result.stderr
    assert "configuration in two places" in result.stderr, result.stderr
    assert not out.exists()


@pytest.mark.parametrize("args, expected", [
    (["--cuda", "twelve", "--cuda", "13=TK13"], "invalid --cuda"),
    (["--cuda", "12=", "--cuda", "13=TK13"], "invalid --cuda"),
    (["--cuda", "12=TK12", "--cuda", "13=TK13", "-C", "novalue"], "invalid -C"),
    (["--cuda", "12=TK12", "--cuda", "13=TK13", "-C", "=value"], "invalid -C"),
])
def test_usage_errors(wheelmerge_bin, toolkits, tmp_path, args, expected):
    project = copy_project("envprobe", tmp_path)
    args = [a.replace("TK12", str(toolkits.cu12)).replace("TK13", str(toolkits.cu13)) for a in args]
    result = wheelmerge(wheelmerge_bin, "build", project, *args, "-o", tmp_path / "out", "--no-isolation",
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert expected in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_installer_uv_without_uv_is_refused_before_building(wheelmerge_bin, toolkits, tmp_path):
    """--installer uv with no uv beside --python nor on PATH: refused before any build, naming
    both places; an installer of another name is a usage error of the command line."""
    project = copy_project("envprobe", tmp_path)
    python = tmp_path / "bin" / "python3"
    python.parent.mkdir()
    python.symlink_to(PYTHON)
    env = {"PATH": str(python.parent) + ":/usr/bin:/bin"}
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out", "--python", python,
                        "--installer", "uv", tmp_path=tmp_path, env=env)
    assert result.returncode == 2, describe(result)
    assert "--installer uv needs uv" in result.stderr, result.stderr
    assert (f"expected uv beside {python} or on PATH (pip install uv), found no executable uv in {python.parent} "
            "or on PATH") in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
    assert "creating an isolated build environment" not in result.stderr, result.stderr

    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out",
                        "--installer", "conda", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "--installer" in result.stderr and "conda" in result.stderr, result.stderr


def test_project_without_pyproject_is_refused(wheelmerge_bin, toolkits, tmp_path):
    empty = tmp_path / "empty-project"
    empty.mkdir()
    result = wheelmerge(wheelmerge_bin, "build", empty, *toolkits.args(), "-o", tmp_path / "out", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert str(empty / "pyproject.toml") in result.stderr, result.stderr


# --- (12) variant labels: CPU levels, per-variant build requirements, --build-info -----------

CPU_LABELS = ("x86_64_v1", "x86_64_v3")
# What x86-64-v3 asks of a CPU beyond v2, as /proc/cpuinfo names it (abm is LZCNT).
_V3_FLAGS = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}


def cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def level_module(wheel: Path, label: str) -> bytes:
    """The bytes of `label`'s build of cpuflags._level."""
    files = manifest(wheel, "cpuflags")["files"][label]
    originals = [f for f in files if f.startswith("_level.") and f.endswith(".so")]
    assert len(originals) == 1, files
    return variant_bytes(wheel, "cpuflags", label, originals[0])


def test_cpu_levels_build_with_their_march_and_own_requirements(wheelmerge_bin, tmp_path, make_venv):
    """cpuflags, built in isolation for x86_64_v1 and x86_64_v3 (the labels from `variants`): each
    build's C compiler saw its -march (v3 compiled with __AVX2__ defined, v1 without), after
    CFLAGS from outside; x86_64_v3's build-requires pin (packaging==24.0) was resolved together
    with the project's packaging>=23 in that variant only; the merged wheel imports the right build."""
    project = copy_project("cpuflags", tmp_path)
    logs = tmp_path / "logs"
    built = build_ok(wheelmerge_bin, project, tmp_path, "--python", PYTHON, "--log-dir", logs,
                     isolation=True, env={"CFLAGS": "-DWMTEST_OUTSIDE=1"})
    assert [v["label"] for v in built.summary["variants"]] == list(CPU_LABELS), built.summary
    for v in built.summary["variants"]:
        assert "toolkit" not in v and "cuda_version" not in v, v  # no CUDA toolkit for a CPU level
    assert "[x86_64_v3] -march=x86-64-v3; log:" in built.stderr, built.stderr

    m = manifest(built.wheel, "cpuflags")
    assert m["selector"] == "cpu", m
    assert m["build_info"] == {"x86_64_v1": {"march": "x86-64"}, "x86_64_v3": {"march": "x86-64-v3"}}, m
    # The compiled code says which flags reached the compiler.
    assert b"cpuflags-compiled-without-avx2" in level_module(built.wheel, "x86_64_v1")
    assert b"cpuflags-compiled-with-avx2" in level_module(built.wheel, "x86_64_v3")
    info = {label: variant_module(built.wheel, "cpuflags", label, "_buildinfo.py") for label in CPU_LABELS}
    assert info["x86_64_v1"]["CFLAGS"] == "-DWMTEST_OUTSIDE=1 -march=x86-64", info
    assert info["x86_64_v3"]["CFLAGS"] == "-DWMTEST_OUTSIDE=1 -march=x86-64-v3", info
    # An unset CXXFLAGS starts from the interpreter's CFLAGS (-O3 and all), which setuptools
    # would have used had it stayed unset.
    python_cflags = run([PYTHON, "-c", "import sysconfig; print(sysconfig.get_config_var('CFLAGS'))"]).stdout.strip()
    assert "-O" in python_cflags, python_cflags
    assert info["x86_64_v3"]["CXXFLAGS"] == f"{python_cflags} -march=x86-64-v3", info
    assert info["x86_64_v3"]["VARIANT"] == "x86_64_v3", info
    # The pin is x86_64_v3's alone; x86_64_v1 has the newest packaging the project allows.
    assert info["x86_64_v3"]["PACKAGING"] == "24.0", info
    assert info["x86_64_v1"]["PACKAGING"] not in (None, "24.0"), info
    v3_log = (logs / "x86_64_v3.log").read_text()
    # One resolve of both, so packaging is installed once.
    assert re.search(r"pip install .*packaging>=23.* packaging==24\.0", v3_log), v3_log
    assert len(re.findall(r"pip install ", v3_log)) == 1, v3_log
    assert "packaging==24.0" not in (logs / "x86_64_v1.log").read_text()

    env = make_venv("cpuflags")
    env.install(built.wheel)
    probe = "import json, cpuflags; print(json.dumps([cpuflags._wheelmerge.selected(), cpuflags.avx2()]))"
    forced = env.run("-c", probe, env={"WHEELMERGE_VARIANT": "x86_64_v1"})
    assert json.loads(forced.stdout) == ["x86_64_v1", False], forced.stdout
    best = "x86_64_v3" if _V3_FLAGS <= cpu_flags() else "x86_64_v1"
    chosen = env.run("-c", probe)
    assert json.loads(chosen.stdout) == [best, best == "x86_64_v3"], chosen.stdout


def test_variant_option_overrides_the_configured_labels(wheelmerge_bin, tmp_path):
    """--variant picks the builds; a variant's own CFLAGS replaces the -march default (no build
    needed: `toolkit --json` shows each variant's environment)."""
    project = copy_project("cpuflags", tmp_path)
    with (project / "pyproject.toml").open("a") as f:
        f.write('env = { CFLAGS = "-O1 -march=haswell" }\n')  # into [tool.wheelmerge.x86_64_v3]
    result = wheelmerge(wheelmerge_bin, "toolkit", project, "--variant", "x86_64_v3", "--variant", "x86_64_v4",
                        "--python", PYTHON, "--json", tmp_path=tmp_path, env={"CFLAGS": "-g", "CXXFLAGS": "-O2"})
    assert result.returncode == 0, describe(result)
    envs = {t["label"]: t["env"] for t in json.loads(result.stdout)["toolkits"]}
    assert envs == {
        "x86_64_v3": {"CFLAGS": "-O1 -march=haswell", "CXXFLAGS": "-O2 -march=x86-64-v3",
                      "WHEELMERGE_BUILD_VARIANT": "x86_64_v3"},
        "x86_64_v4": {"CFLAGS": "-g -march=x86-64-v4", "CXXFLAGS": "-O2 -march=x86-64-v4",
                      "WHEELMERGE_BUILD_VARIANT": "x86_64_v4"}}, envs


@pytest.mark.parametrize("args, expected", [
    (["--variant", "x86_64_v5", "--variant", "x86_64_v3"], "invalid --variant"),
    (["--variant", "cu12", "--variant", "x86_64_v3"], "variant labels of different selectors"),
    (["--variant", "x86_64_v3", "--cuda", "12"], "variant labels of different selectors"),
    (["--variant", "x86_64_v1", "--variant", "x86_64_v3", "--no-isolation"],
     "[tool.wheelmerge.x86_64_v3] build-requires needs an isolated build"),
])
def test_variant_usage_errors(wheelmerge_bin, tmp_path, args, expected):
    project = copy_project("cpuflags", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", project, *args, "-o", tmp_path / "out", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert expected in result.stderr, result.stderr
    assert "copying the source tree" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_config_shows_selector_labels_and_build_requires(wheelmerge_bin, tmp_path):
    project = copy_project("cpuflags", tmp_path)
    result = wheelmerge(wheelmerge_bin, "config", project, tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    config = json.loads(result.stdout)
    assert (config["selector"], config["labels"], config["cuda"]) == ("cpu", list(CPU_LABELS), []), config
    assert config["variants"] == {"x86_64_v3": {"toolkit": "", "env": {}, "build-requires": ["packaging==24.0"]}}
    # cuda and variants together are refused, naming the file.
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(text.replace("[tool.wheelmerge]\n", "[tool.wheelmerge]\ncuda = [12, 13]\n"))
    result = wheelmerge(wheelmerge_bin, "config", project, tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert f"{project / 'pyproject.toml'}:14:8" in result.stderr, result.stderr
    assert '"cuda" and "variants" both name the builds' in result.stderr, result.stderr


def test_build_info_given_to_merge_lands_in_the_manifest(wheelmerge_bin, tmp_path):
    """merge --build-info LABEL:KEY=VALUE: recorded for that label, read back by inspect and by
    the loader's manifest; a label no input has, a bad key or a bad form is a usage error."""
    wheels = []
    for label in ("cu12", "cu13"):
        path = tmp_path / "in" / wheelgen.wheel_filename("bipkg", "1.0", "cp311-cp311-linux_x86_64", label=label)
        path.parent.mkdir(exist_ok=True)
        wheelgen.build_wheel(path, {"bipkg/__init__.py": b"", "bipkg/_core.cpython-311-x86_64-linux-gnu.so":
                                    wheelgen.elf_shared_object(f"{label}.so")},
                             name="bipkg", version="1.0", tags="cp311-cp311-linux_x86_64")
        wheels.append(path)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "merge", *wheels, "-o", out, "--build-info", "cu12:cuda_bindings=12.9.4",
                        "--build-info", "cu12:cuda_version=12.9", "--build-info", "cu13:note=a=b c",
                        tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    merged = next(out.iterdir())
    assert manifest(merged, "bipkg")["build_info"] == {
        "cu12": {"cuda_bindings": "12.9.4", "cuda_version": "12.9"}, "cu13": {"note": "a=b c"}}
    assert "12.9.4" in json.dumps(inspect_json(wheelmerge_bin, merged, tmp_path))

    for bad, expected in (("cu11:cuda_version=11.8", "--build-info cu11:cuda_version=11.8 names no input"),
                          ("cu12:cuda-version=12.9", "invalid key in --build-info"),
                          ("cu12=12.9", "invalid --build-info"),
                          ("cu1x:k=v", "invalid label in --build-info"),
                          ("cu12:=v", "invalid key in --build-info")):
        result = wheelmerge(wheelmerge_bin, "merge", *wheels, "-o", tmp_path / "bad", "--build-info", bad,
                            tmp_path=tmp_path)
        assert result.returncode == 2, describe(result)
        assert expected in result.stderr, (bad, result.stderr)
        assert not (tmp_path / "bad").exists()


def test_torch_labels_are_checked_against_the_build_environment(wheelmerge_bin, toolkits, tmp_path):
    """With the environment of scripts/torch-envs.sh's torch 2.10.0 (CUDA 12.8) as the build's:
    build_info records the torch and cuda-bindings found there; a torch label is built against
    its CUDA major's toolkit when that torch fits it, and a label it does not fit stops the build
    with the label that environment has."""
    import torch_envs
    torch = torch_envs.prepare(["torch210_cu12"])[0]["torch210_cu12"]
    bindings = torch.run("-c", "from importlib import metadata; print(metadata.version('cuda-bindings'))").stdout.strip()
    project = copy_project("envprobe", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out", "--json",
                        "--no-isolation", "--python", torch.python, tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    wheel = Path(json.loads(result.stdout)["output"])
    assert manifest(wheel, "envprobe")["build_info"] == {
        label: {"cuda_version": version, "torch": "2.10.0", "torch_cuda": "12.8", "cuda_bindings": bindings}
        for label, version in (("cu12", "12.9"), ("cu13", "13.0"))}

    result = wheelmerge(wheelmerge_bin, "build", project, "--variant", "torch211_cu13", "--variant", "torch210_cu12",
                        *toolkits.args(), "-o", tmp_path / "torch-out", "--no-isolation", "--python", torch.python,
                        tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    # --cuda N=PATH named the toolkits; it added no cuNN builds beside the torch labels.
    assert f"[torch210_cu12] CUDA 12.9 at {real(toolkits.cu12)}" in result.stderr, result.stderr
    assert f"[torch211_cu13] CUDA 13.0 at {real(toolkits.cu13)}" in result.stderr, result.stderr
    assert "[cu12]" not in result.stderr and "[cu13]" not in result.stderr, result.stderr
    assert re.search(r"^\[torch210_cu12\] built envprobe-1\.0-py3-none-any\.whl", result.stderr, re.M), result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("wheelmerge: error: ")]
    assert len(errors) == 1, result.stderr
    assert "torch211_cu13: the build environment does not fit the label" in errors[0], errors
    assert "the environment has torch 2.10.0 built with CUDA 12.8, whose label is torch210_cu12" in errors[0], errors
    assert "[torch211_cu13] building the wheel" not in result.stderr, result.stderr
    assert not (tmp_path / "torch-out").exists()


def test_build_info_for_labels_from_distribution_names(wheelmerge_bin, tmp_path):
    """With --name, --build-info takes the labels the inputs' name suffixes give (cupy-style)."""
    wheels = []
    for major in (12, 13):
        name = f"bipkg_cuda{major}x"
        wheels.append(wheelgen.build_wheel(
            tmp_path / wheelgen.wheel_filename(name, "1.0", "cp311-cp311-linux_x86_64"),
            {"bipkg/__init__.py": b"", "bipkg/_core.cpython-311-x86_64-linux-gnu.so": wheelgen.elf_shared_object(f"cu{major}.so")},
            name=name, version="1.0", tags="cp311-cp311-linux_x86_64"))
    result = wheelmerge(wheelmerge_bin, "merge", *wheels, "--name", "bipkg", "--build-info", "cu13:cuda_bindings=13.0.3",
                        "-o", tmp_path / "out", tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    assert manifest(next((tmp_path / "out").iterdir()), "bipkg")["build_info"] == {
        "cu12": {}, "cu13": {"cuda_bindings": "13.0.3"}}
    result = wheelmerge(wheelmerge_bin, "merge", *wheels, "--name", "bipkg", "--build-info", "cu11:cuda_bindings=11.8",
                        "-o", tmp_path / "bad", tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "expected a label of an input (cu12, cu13), found cu11" in result.stderr, result.stderr


def test_pep517_backend_isolates_variants_with_their_own_requirements(wheelmerge_bin, tmp_path):
    """build-backend = "wheelmerge.backend" and a variant with build-requires: the frontend's
    one environment cannot hold both variants' pins, so build_wheel lets `wheelmerge build`
    make an environment per variant (without it, --no-isolation would refuse build-requires).
    The package is the source tree's python/wheelmerge with this binary as its executable. The
    project requires wheelmerge-cuda, as a project using the backend does: the variants' own
    environments leave it out (the inner backend does not need it)."""
    site = tmp_path / "site"
    shutil.copytree(ROOT / "python" / "wheelmerge", site / "wheelmerge",
                    ignore=shutil.ignore_patterns("__pycache__", "_bin"))
    (site / "wheelmerge" / "_bin").mkdir()
    shutil.copy2(wheelmerge_bin, site / "wheelmerge" / "_bin" / "wheelmerge")
    project = copy_project("cpuflags", tmp_path)
    text = (project / "pyproject.toml").read_text()
    (project / "pyproject.toml").write_text(
        text.replace('build-backend = "setuptools.build_meta"', 'build-backend = "wheelmerge.backend"')
            .replace('requires = ["setuptools>=70"', 'requires = ["WheelMerge_CUDA>=0.1", "setuptools>=70"')
            .replace("[tool.wheelmerge]\n", '[tool.wheelmerge]\nbackend = "setuptools.build_meta"\n'))
    out = tmp_path / "out"
    hook = ("import sys, wheelmerge.backend as b; print(b.build_wheel(sys.argv[1], "
            "{'wheelmerge.jobs': '1'}))")
    result = run([PYTHON, "-c", hook, out], env=build_env(tmp_path, {"PYTHONPATH": str(site)}), cwd=project,
                 check=False, timeout=600)
    assert result.returncode == 0, describe(result)
    wheel = out / result.stdout.strip().splitlines()[-1]
    info = {label: variant_module(wheel, "cpuflags", label, "_buildinfo.py") for label in CPU_LABELS}
    assert info["x86_64_v3"]["PACKAGING"] == "24.0", info
    assert info["x86_64_v1"]["PACKAGING"] not in (None, "24.0"), info
    assert re.search(r"\[x86_64_v3\] installing build requirements: .*packaging>=23.*, packaging==24\.0",
                     result.stderr), result.stderr
    installed = re.findall(r"installing build requirements: (.*)", result.stderr)
    assert len(installed) == 2 and not any("wheelmerge" in line.lower() for line in installed), installed
