"""`wheelmerge build`: a project built once per variant (CUDA major, torch release, CPU level)
through its own PEP 517 backend, each build from a clean copy of the source tree and with its
variant's environment (toolkit, -march flags, build-requires), then merged.

The projects built are examples/wmdemo and the small projects of build_projects/ (see its
README.md); every test copies the project it builds into its temporary directory first.

CUDA toolkits: most tests use toolkit roots made in the test's temporary directory. A root
holding only include/cuda.h (`#define CUDA_VERSION 12090`), only version.json or only bin/nvcc
(a script printing `nvcc --version`'s release line) is a legitimate toolkit as far as
wheelmerge's discovery goes: that is where it reads a toolkit's version from, and the projects
built here compile no CUDA code. The real toolkit under /usr/local is used where discovery of it
is the point.

Every build runs with a controlled environment (`build_env`): no CUDA_HOME, CUDA_PATH, CUDACXX or
WHEELMERGE_CUDA_N from outside unless a test sets them, no nvcc on PATH, and TMPDIR in the
test's directory so that what the binary leaves in the temporary directory can be checked.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import pytest
import wheelgen
from build_support import (  # noqa: F401 (toolkits: a fixture)
    LABELS,
    PYTHON,
    build_ok,
    copy_project,
    describe,
    inspect_json,
    make_toolkit,
    manifest,
    path_without_nvcc,
    real,
    snapshot,
    toolkits,
    variant_module,
    wheelmerge,
)
from conftest import clean_env, run

# --- (1) the bundled example -------------------------------------------------------------------

IMPORT_REPORT = """
import json, wmdemo
from wmdemo import _wheelmerge
info = wmdemo.runtime_info()
print(json.dumps({"build_major": wmdemo.build_major(), "runtime": info, "selected": _wheelmerge.selected(),
                  "build_info": _wheelmerge.build_info(), "variants": _wheelmerge.variants(),
                  "kernel": open(wmdemo.kernel_path(), "rb").read().decode("latin-1")}))
"""


def test_wmdemo_build_merges_both_majors_and_imports_each(wheelmerge_bin, toolkits, make_venv, tmp_path):
    project = copy_project("wmdemo", tmp_path)
    before = snapshot(project)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args())
    assert snapshot(project) == before, "the build changed the source tree"
    assert not (project / "build").exists()
    assert re.fullmatch(r"wmdemo-0\.1\.0-(cp3\d+)-\1-linux_x86_64\.whl", built.wheel.name), built.wheel.name

    report = inspect_json(wheelmerge_bin, built.wheel, tmp_path)
    assert report["merged"] is True
    assert report["variants"] == list(LABELS)
    loaders = {l["package"]: l for l in report["loaders"]}
    assert set(loaders) == {"wmdemo"}, loaders
    assert loaders["wmdemo"]["build_info"] == {"cu12": {"cuda_version": "12.9"}, "cu13": {"cuda_version": "13.0"}}
    variant_paths = {f["path"] for f in report["files"] if f["variant"] is not None}
    for label in LABELS:
        assert any(re.fullmatch(rf"wmdemo/_core\.{label}\..*\.so", p) for p in variant_paths), variant_paths
        assert f"wmdemo/kernels/scale.{label}.cubin" in variant_paths, variant_paths

    venv = make_venv("build-wmdemo")
    venv.install("--no-deps", built.wheel)  # cuda-bindings is not needed: the override selects
    for label, major in (("cu12", 12), ("cu13", 13)):
        result = venv.run("-c", IMPORT_REPORT, env={"WHEELMERGE_CUDA_MAJOR": str(major)})
        seen = json.loads(result.stdout)
        assert seen["selected"] == label, seen
        assert seen["build_major"] == major, seen
        assert seen["runtime"]["core_build_major"] == major, seen
        assert seen["runtime"]["nested_build_major"] == major, seen
        assert seen["runtime"]["runtime_library_major"] == major, seen
        assert f"built for CUDA {major}" in seen["kernel"], seen["kernel"]
        assert seen["build_info"] == {"cuda_version": {12: "12.9", 13: "13.0"}[major]}, seen
        assert seen["variants"] == list(LABELS)


# --- (2) the default, isolated build -----------------------------------------------------------

HELPER = "wheelmerge-itest-helper"


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_isolated_build_gets_a_fresh_environment_per_variant(wheelmerge_bin, toolkits, tmp_path, installer):
    """The default: a venv per variant, the project's build requirements installed into it from
    PyPI (settings/ asks for setuptools>=70, newer than the setuptools 65 that Python 3.11's venv
    bundles, so pip has to fetch it), then what get_requires_for_build_wheel asks for, here a
    helper only a --find-links directory holds. With --installer uv the same, made by the uv
    beside --python (the pinned test requirement in .venv/bin)."""
    project = copy_project("settings", tmp_path)
    requirements = project / "pyproject.toml"
    requirements.write_text(requirements.read_text().replace('"setuptools>=61"', '"setuptools>=70"'))
    links = tmp_path / "links"
    links.mkdir()
    wheelgen.build_wheel(links / wheelgen.wheel_filename("wheelmerge_itest_helper", "1.0", "py3-none-any"),
                         {"wheelmerge_itest_helper/__init__.py": b'VALUE = "from --find-links"\n'},
                         name="wheelmerge_itest_helper", version="1.0", tags="py3-none-any", root_is_purelib=True)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "--python", PYTHON,
                     "--find-links", links, "-C", f"probe-extra-requires={HELPER}",
                     "--log-dir", tmp_path / "logs", "--installer", installer, isolation=True)
    uv = re.escape(str(PYTHON.parent / "uv"))

    prefixes = {}
    for label in LABELS:
        calls = variant_module(built.wheel, "settingsprobe", label, "_settings.py")["CALLS"]
        assert [c["hook"] for c in calls] == ["get_requires_for_build_wheel", "build_wheel"], calls
        for call in calls:
            assert call["major"] == label[2:], call
            assert call["config_settings"] == {"probe-extra-requires": HELPER}, call
            # A virtual environment of its own: not the interpreter given with --python, not
            # the other variant's.
            assert call["sys_prefix"] != call["sys_base_prefix"], call
            assert real(call["sys_prefix"]) != real(PYTHON.parent.parent), call
            assert call["virtual_env"] and real(call["virtual_env"]) == real(call["sys_prefix"]), call
            # setuptools from the build environment, as new as the project asks.
            assert real(call["setuptools_file"]).startswith(real(call["sys_prefix"]) + os.sep), call
            assert int(call["setuptools_version"].split(".")[0]) >= 70, call
        assert calls[-1]["helper"] == "from --find-links", calls
        prefixes[label] = real(calls[0]["sys_prefix"])
        log = (tmp_path / "logs" / f"{label}.log").read_text()
        if installer == "pip":
            assert re.search(r"\$ \S+/python3?(\.\d+)? -m venv ", log), log
            assert re.search(r"\$ \S+ -m pip install .*'?setuptools>=70'?", log), log
            assert re.search(r"Successfully installed .*setuptools-\d", log), log
            assert re.search(rf"\$ \S+ -m pip install .*--find-links {re.escape(str(links))} .*{HELPER}", log), log
        else:
            assert re.search(rf"\$ {uv} venv --quiet --python {re.escape(str(PYTHON))} ", log), log
            assert re.search(rf"\$ {uv} pip install --python \S+ .*'?setuptools>=70'?", log), log
            assert re.search(r"^ \+ setuptools==\d", log, re.M), log
            assert re.search(rf"\$ {uv} pip install .*--find-links {re.escape(str(links))} .*{HELPER}", log), log
            assert " -m pip " not in log, log
    assert prefixes["cu12"] != prefixes["cu13"], prefixes
    # The source tree was not built in: the backend wrote its files into a copy.
    assert not (project / ".probe_calls.json").exists()
    assert not (project / "settingsprobe" / "_settings.py").exists()


# --- (5) a failing build -----------------------------------------------------------------------

SENTINEL = "failpkg-sentinel: this project refuses to build for CUDA 12"


def test_failing_build_reports_variant_command_and_log(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("failing", tmp_path)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out,
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path)
    assert result.returncode == 1, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert len(errors) == 1, describe(result)  # the cu13 build worked
    error = errors[0]
    assert error.startswith("wheelmerge: error: cu12: "), error
    # The command that failed, and the end of its log with the backend's message.
    assert re.search(rf"\$ {re.escape(str(PYTHON))} \S*hook_runner\.py build_wheel setuptools\.build_meta", error), error
    assert SENTINEL in result.stderr, result.stderr
    match = re.search(r"last lines of (\S+\.log):", result.stderr)
    assert match, result.stderr
    log = Path(match.group(1))
    assert log.is_file(), f"the log {log} named in the message does not exist"
    assert SENTINEL in log.read_text()
    # The same log as announced when the variant started, under the default log directory (in TMPDIR).
    assert f"[cu12] CUDA 12.9 at {real(toolkits.cu12)}" in result.stderr
    assert re.search(rf"^\[cu12\] .*; log: {re.escape(str(log))}$", result.stderr, re.M), result.stderr
    assert real(log).startswith(real(tmp_path / "tmpdir") + os.sep), log
    # Nothing written to the output directory.
    assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())

    as_json = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", out, "--json",
                         "--no-isolation", "--python", PYTHON, tmp_path=tmp_path)
    assert as_json.returncode == 1, describe(as_json)
    error_json = json.loads(as_json.stdout)["error"]
    assert [p["file"] for p in error_json["problems"]] == ["cu12"], error_json
    assert SENTINEL in error_json["problems"][0]["found"], error_json
    assert not out.exists() or not any(out.iterdir())


def test_failing_build_log_tail_is_readable(wheelmerge_bin, toolkits, tmp_path):
    """The end of the log is shown as the log's lines, on stderr and in --json's "found", not
    folded into one line of escaped \\n sequences."""
    project = copy_project("failing", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out", "--json",
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path)
    assert result.returncode == 1, describe(result)
    last_line = f"RuntimeError: {SENTINEL}"
    assert last_line in [l.strip() for l in result.stderr.splitlines()], (
        f"the log's last line {last_line!r} is not a line of stderr:\n{result.stderr}")
    found = json.loads(result.stdout)["error"]["problems"][0]["found"]
    assert last_line in [l.strip() for l in found.splitlines()], f"not a line of the JSON's found: {found!r}"


# --- (6) stale build outputs in the source tree ------------------------------------------------

def test_stale_build_of_the_other_major_is_not_reused(wheelmerge_bin, toolkits, make_venv, tmp_path):
    project = copy_project("stale", tmp_path)
    # Leave build/ (extension object, build/lib.*/ files) and stalepkg.egg-info/ of a CUDA 13
    # build in the source tree, the way an earlier `setup.py build` leaves them.
    stale_env = clean_env({"WHEELMERGE_BUILD_CUDA_MAJOR": "13"})
    run([PYTHON, "setup.py", "-q", "build", "egg_info"], env=stale_env, cwd=project)
    stale_lib = next((project / "build").glob("lib.*/stalepkg"))
    assert (stale_lib / "_generated.py").read_text().startswith("MAJOR = 13")
    assert list(stale_lib.glob("_ext*.so")) and (project / "stalepkg.egg-info").is_dir()

    # The trap is real: an in-place rebuild for CUDA 12 reuses the CUDA 13 files.
    naive = tmp_path / "naive"
    shutil.copytree(project, naive, symlinks=True)
    run([PYTHON, "-m", "build", "--wheel", "--no-isolation", "-o", tmp_path / "naive-out", naive],
        env=clean_env({"WHEELMERGE_BUILD_CUDA_MAJOR": "12"}), cwd=naive)
    naive_wheel = next((tmp_path / "naive-out").glob("*.whl"))
    with zipfile.ZipFile(naive_wheel) as z:
        assert z.read("stalepkg/_generated.py").startswith(b"MAJOR = 13"), "fixture no longer traps a naive rebuild"
        assert b"stalepkg-built-for-cuda-13;" in z.read(next(n for n in z.namelist() if n.endswith(".so")))

    before = snapshot(project)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args())
    assert snapshot(project) == before, "the build changed the source tree"

    for label in LABELS:
        major = int(label[2:])
        generated = variant_module(built.wheel, "stalepkg", label, "_generated.py")
        assert generated["MAJOR"] == major, (label, generated)
        assert generated["STALE_AT_START"] == [], (label, generated)  # the copy had no build/ or egg-info
        ext = manifest(built.wheel, "stalepkg")["modules"][label]["stalepkg._ext"]
        with zipfile.ZipFile(built.wheel) as z:
            code = z.read(f"stalepkg/{ext}")
        assert f"stalepkg-built-for-cuda-{major};".encode() in code, label
        assert f"stalepkg-built-for-cuda-{25 - major};".encode() not in code, label

    venv = make_venv("build-stale")
    venv.install("--no-deps", built.wheel)
    for major in (12, 13):
        result = venv.run("-c", "import stalepkg, stalepkg._generated as g; print(stalepkg.build_major(), g.MAJOR)",
                          env={"WHEELMERGE_CUDA_MAJOR": str(major)})
        assert result.stdout.split() == [str(major), str(major)], result.stdout


# --- (7) the environment of each variant's build -----------------------------------------------

TOOLKIT_VARIABLES = ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAToolkit_ROOT", "CUDA_TOOLKIT_ROOT_DIR", "CUDA_BIN_PATH")


def test_variant_environment_reaches_the_build(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    before = snapshot(project)
    # Outside: another toolkit's nvcc on PATH and its variables, a PYTHONPATH, a variable the
    # configuration overrides.
    other = make_toolkit(tmp_path / "toolkits" / "other-13.1", cuda_version=13010, nvcc_release="13.1.80")
    outer_path = path_without_nvcc()
    outside = {"PATH": f"{other}/bin:{outer_path}", "PYTHONPATH": str(tmp_path / "outer-pythonpath"),
               "WMTEST_OVERRIDE": "outer", **{k: str(other) for k in TOOLKIT_VARIABLES}}
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), env=outside)
    assert snapshot(project) == before
    seen = {label: variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"] for label in LABELS}
    for label in LABELS:
        env, root = seen[label]["env"], real(toolkits[label])
        assert env["WHEELMERGE_BUILD_CUDA_MAJOR"] == label[2:], env
        for key in TOOLKIT_VARIABLES:
            assert env[key] == root, (key, env)
        # The toolkit's bin first; the other toolkit's bin (it holds an nvcc) hidden.
        assert env["PATH"] == f"{root}/bin:{outer_path}", env
        # --no-isolation: the frontend's environment is the build environment, PYTHONPATH
        # included (pip's build isolation works through it).
        assert env["PYTHONPATH"] == str(tmp_path / "outer-pythonpath"), env
        assert env["WMTEST_GLOBAL"] == "from-tool-wheelmerge", env
        # The build ran in a copy, not in the project directory.
        assert not real(seen[label]["cwd"]).startswith(real(project)), seen[label]["cwd"]
    # CUDACXX and nvcc only where the toolkit has bin/nvcc.
    assert seen["cu12"]["env"]["CUDACXX"] is None, seen["cu12"]
    assert seen["cu12"]["nvcc"] is None, seen["cu12"]
    assert seen["cu13"]["env"]["CUDACXX"] == f"{real(toolkits.cu13)}/bin/nvcc", seen["cu13"]
    assert real(seen["cu13"]["nvcc"]) == real(toolkits.cu13 / "bin" / "nvcc"), seen["cu13"]
    # [tool.wheelmerge.cu12] env: for cu12 only, over [tool.wheelmerge] env, over the outer environment.
    assert seen["cu12"]["env"]["WMTEST_CU12_ONLY"] == "only-for-cu12"
    assert seen["cu13"]["env"]["WMTEST_CU12_ONLY"] is None
    assert seen["cu12"]["env"]["WMTEST_OVERRIDE"] == "cu12"
    assert seen["cu13"]["env"]["WMTEST_OVERRIDE"] == "global"
    assert seen["cu12"]["cwd"] != seen["cu13"]["cwd"]


def test_inherited_cudacxx_does_not_reach_a_toolkit_without_nvcc(wheelmerge_bin, toolkits, tmp_path):
    """A CUDACXX from outside names some other toolkit's nvcc; the cu12 toolkit has none, so its
    build must not be handed the outside one (CMake and meson would compile with it)."""
    project = copy_project("envprobe", tmp_path)
    outer = "/opt/some-other-cuda/bin/nvcc"
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), env={"CUDACXX": outer})
    seen = {label: variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"] for label in LABELS}
    assert seen["cu13"]["env"]["CUDACXX"] == f"{real(toolkits.cu13)}/bin/nvcc", seen["cu13"]
    assert seen["cu12"]["env"]["CUDACXX"] != outer, (
        f"the cu12 build (toolkit {toolkits.cu12}, no bin/nvcc) was given the outer CUDACXX={outer}")
    assert seen["cu12"]["env"]["CUDACXX"] is None, seen["cu12"]


# --- (9) -C reaches the project's backend ------------------------------------------------------

def test_config_settings_reach_the_backend(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("settings", tmp_path)
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(),
                     "-C", "probe-alpha=1", "-C", "probe-beta=two words", "-C", "probe-gamma=x=y")
    for label in LABELS:
        calls = variant_module(built.wheel, "settingsprobe", label, "_settings.py")["CALLS"]
        wheel_calls = [c for c in calls if c["hook"] == "build_wheel"]
        assert len(wheel_calls) == 1, calls
        call = wheel_calls[0]
        assert call["config_settings"] == {"probe-alpha": "1", "probe-beta": "two words", "probe-gamma": "x=y"}, call
        assert call["major"] == label[2:], call
        # The in-tree backend was imported from backend-path in the build's copy of the project.
        assert real(call["backend_file"]) == real(Path(call["cwd"]) / "_backend" / "probe_backend.py"), call
        assert not real(call["backend_file"]).startswith(real(project)), call
    assert not (project / ".probe_calls.json").exists()
    assert not (project / "settingsprobe" / "_settings.py").exists()


# --- (10) variants built at once ---------------------------------------------------------------

def test_jobs_2_builds_both_variants_at_once(wheelmerge_bin, toolkits, tmp_path):
    """envprobe's rendezvous: each variant's build waits for the other to start; with -j 1 it
    times out (the control), with -j 2 both finish."""
    project = copy_project("envprobe", tmp_path)
    sequential = tmp_path / "rendezvous-sequential"
    sequential.mkdir()
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out-j1", "-j", "1",
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path,
                        env={"WMTEST_RENDEZVOUS": str(sequential), "WMTEST_RENDEZVOUS_TIMEOUT": "2"})
    assert result.returncode == 1, describe(result)
    assert "envprobe-rendezvous: no other variant started while cu12 was building" in result.stderr

    together = tmp_path / "rendezvous"
    together.mkdir()
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "-j", "2",
                     env={"WMTEST_RENDEZVOUS": str(together), "WMTEST_RENDEZVOUS_TIMEOUT": "30"})
    assert sorted(p.name for p in together.iterdir()) == ["started-12", "started-13"]
    for label in LABELS:
        seen = variant_module(built.wheel, "envprobe", label, "_buildenv.py")["SEEN"]
        other = "13" if label == "cu12" else "12"
        assert seen["others_seen"] == [f"started-{other}"], seen
        assert seen["env"]["WHEELMERGE_BUILD_CUDA_MAJOR"] == label[2:]
    # Each variant's progress is labelled, interleaved or not.
    for label in LABELS:
        assert re.search(rf"^\[{label}\] built envprobe-1\.0-py3-none-any\.whl", built.stderr, re.M), built.stderr


# --- (11) --json and what is left behind -------------------------------------------------------

def test_json_summary(wheelmerge_bin, toolkits, tmp_path):
    project = copy_project("envprobe", tmp_path)
    logs = tmp_path / "logs"
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "--log-dir", logs)
    s = built.summary
    assert set(s) == {"output", "variants", "log_dir", "shared", "variant_files", "seconds"}, s
    assert real(s["output"]) == real(built.wheel), s
    assert real(s["log_dir"]) == real(logs), s
    assert [v["label"] for v in s["variants"]] == list(LABELS), s
    for label, version in (("cu12", "12.9"), ("cu13", "13.0")):
        v = built.variant(label)
        assert set(v) == {"label", "cuda_version", "toolkit", "found_by", "build_info", "log", "seconds"}, v
        assert v["build_info"] == {"cuda_version": version}, v
        assert v["cuda_version"] == version, v
        assert v["toolkit"] == real(toolkits[label]), v
        assert v["found_by"] == f"--cuda {label[2:]}=PATH", v
        assert real(v["log"]) == real(logs / f"{label}.log"), v
        assert "hook_runner.py build_wheel" in Path(v["log"]).read_text()
        assert isinstance(v["seconds"], (int, float)) and 0 < v["seconds"] <= s["seconds"], v
    # Files: envprobe/__init__.py and the dist-info files shared; _buildenv.py once per variant.
    assert s["variant_files"] == 2, s
    with zipfile.ZipFile(built.wheel) as z:
        names = set(z.namelist())
    assert "envprobe/__init__.py" in names and s["shared"] >= 1, s
    # Human messages only on stderr: stdout is the JSON document alone.
    assert built.stderr.rstrip().splitlines()[-1].startswith(f"wrote {s['output']}"), built.stderr


def test_variants_option_writes_the_variant_wheels_and_their_index_beside_the_merged_wheel(
        wheelmerge_bin, toolkits, tmp_path):
    """`build --variants`: the merged wheel, one variant wheel per build holding that build's own
    files as built (here its _buildenv.py), and the index file; docs/variants.md."""
    project = copy_project("envprobe", tmp_path)
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, "-o", out, "--json", "--variants", "--no-isolation",
                        "--python", str(PYTHON), *toolkits.args(), tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    s = json.loads(result.stdout)
    files = sorted(p.name for p in out.iterdir())
    merged = Path(s["output"]).name
    stem = merged[: -len(".whl")]
    assert files == sorted([merged, f"{stem}-cu12.whl", f"{stem}-cu13.whl", Path(s["variants_index"]).name]), files
    assert [Path(w).name for w in s["variant_wheels"]] == [f"{stem}-cu12.whl", f"{stem}-cu13.whl"]
    # One reading of the builds gives both: the merged wheel's plan is reported as by a plain build.
    assert "merging cu12 and cu13, and writing their variant wheels" in result.stderr, result.stderr
    assert s["shared"] >= 1 and s["variant_files"] >= 1, s
    verified = wheelmerge(wheelmerge_bin, "verify", s["output"], tmp_path=tmp_path)
    assert verified.returncode == 0, describe(verified)
    index = json.loads(Path(s["variants_index"]).read_text())
    assert sorted(index["variants"]) == list(LABELS)
    for label, wheel in zip(LABELS, s["variant_wheels"]):
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            assert not any("_wheelmerge" in n for n in names), names
            assert "envprobe/_buildenv.py" in names, names
            variant = json.loads(z.read(next(n for n in names if n.endswith(".dist-info/variant.json"))))
        assert variant["variants"] == {label: index["variants"][label]}


def test_variants_option_gives_cpu_levels_their_level_and_refuses_torch_labels_before_building(
        wheelmerge_bin, tmp_path):
    """cpuflags' x86-64 levels get variant wheels marked `x86_64 :: level :: vN`
    (test_variants_cpu.py installs such wheels with uv); torch labels have no provider an
    installer serves and are refused before anything is built."""
    project = copy_project("cpuflags", tmp_path)
    # Without x86_64_v3's own build requirement, which needs an isolated build.
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().split("# One variant pins")[0])
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "build", project, "-o", out, "--json", "--variants", "--no-isolation",
                        "--python", str(PYTHON), tmp_path=tmp_path)
    assert result.returncode == 0, describe(result)
    s = json.loads(result.stdout)
    index = json.loads(Path(s["variants_index"]).read_text())
    assert index["providers"] == {"x86_64": {"requires": ["x86-64-variant-provider"]}}
    assert index["variants"] == {"x86_64_v1": {"x86_64": {"level": ["v1"]}},
                                 "x86_64_v3": {"x86_64": {"level": ["v3"]}}}
    assert [Path(w).name.rsplit("-", 1)[1] for w in s["variant_wheels"]] == ["x86_64_v1.whl", "x86_64_v3.whl"]

    refused = tmp_path / "refused"
    result = wheelmerge(wheelmerge_bin, "build", project, "--variant", "torch210_cu12", "--variant", "torch211_cu13",
                        "-o", refused, "--variants", "--no-isolation", "--python", str(PYTHON), tmp_path=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "--variants: no variant properties for a build's label" in result.stderr, describe(result)
    assert "torch builds have no variant provider installers serve" in result.stderr, describe(result)
    assert "built" not in result.stderr, describe(result)
    assert not refused.exists() or not any(refused.iterdir())


def test_no_temporary_files_left_behind(wheelmerge_bin, toolkits, tmp_path):
    """After a successful build nothing remains in the temporary directory, logs included (the
    summary names none), and nothing either when --log-dir puts the logs elsewhere (kept there):
    no source copies, build environments or wheels. tests/integration/project/test_cli.py has the
    failed build, whose logs stay."""
    project = copy_project("envprobe", tmp_path)
    tmpdir = tmp_path / "tmpdir"
    built = build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args())
    assert built.summary["log_dir"] is None and all(v["log"] is None for v in built.summary["variants"]), built.summary
    assert "logs in" not in built.stderr, built.stderr
    left = sorted(str(p.relative_to(tmpdir)) for p in tmpdir.rglob("*"))
    assert left == [], f"left in TMPDIR after a successful build: {left}"

    shutil.rmtree(tmpdir)
    build_ok(wheelmerge_bin, project, tmp_path, *toolkits.args(), "--log-dir", tmp_path / "logs", name="out2")
    left = sorted(str(p.relative_to(tmpdir)) for p in tmpdir.rglob("*"))
    assert left == [], f"left in TMPDIR after a build with --log-dir: {left}"
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["cu12.log", "cu13.log"]


def test_interpreter_that_cannot_run_is_reported(wheelmerge_bin, toolkits, tmp_path):
    """--python naming no file: the message says the interpreter could not be run, not only
    that a hook "did not report back" (the log holds nothing but the command)."""
    project = copy_project("envprobe", tmp_path)
    missing = tmp_path / "no-such-python"
    result = wheelmerge(wheelmerge_bin, "build", project, *toolkits.args(), "-o", tmp_path / "out",
                        "--no-isolation", "--python", missing, tmp_path=tmp_path)
    assert result.returncode == 1, describe(result)
    errors = [l for l in result.stderr.splitlines() if l.startswith("wheelmerge: error: ")]
    assert [e.split(":")[2].strip() for e in errors] == ["cu12", "cu13"], errors
    for error in errors:
        assert str(missing) in error, error
        assert re.search(r"cannot run|No such file or directory", error), error


# --- relative paths ----------------------------------------------------------------------------

def test_relative_paths_are_relative_to_the_current_directory(wheelmerge_bin, toolkits, tmp_path):
    copy_project("envprobe", tmp_path)
    result = wheelmerge(wheelmerge_bin, "build", "projects/envprobe", "--cuda", "12=toolkits/cuda-12.9",
                        "--cuda", "13=toolkits/cuda-13.0", "-o", "out", "--log-dir", "logs", "--json",
                        "--no-isolation", "--python", PYTHON, tmp_path=tmp_path, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    summary = json.loads(result.stdout)
    assert (tmp_path / summary["output"]).is_file(), summary
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [Path(summary["output"]).name]
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["cu12.log", "cu13.log"]
    assert summary["variants"][0]["toolkit"] == real(toolkits.cu12), summary


def test_relative_toolkit_in_config_is_relative_to_the_project(wheelmerge_bin, toolkits, tmp_path):
    """A relative `toolkit` in [tool.wheelmerge.cuNN] is read relative to the project directory,
    like every other path in pyproject.toml (backend-path, readme, license-files), not relative
    to wherever wheelmerge happens to be run from."""
    project = copy_project("envprobe", tmp_path)
    shutil.copytree(toolkits.cu12, project / "toolkits" / "cuda-12")
    with (project / "pyproject.toml").open("a") as f:
        f.write('toolkit = "toolkits/cuda-12"\n')  # appended to [tool.wheelmerge.cu12]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = wheelmerge(wheelmerge_bin, "build", project, "--cuda", f"13={toolkits.cu13}",
                        "-o", tmp_path / "out", "--json", "--no-isolation", "--python", PYTHON,
                        tmp_path=tmp_path, cwd=elsewhere)
    assert result.returncode == 0, describe(result)
    cu12 = json.loads(result.stdout)["variants"][0]
    assert (cu12["found_by"], cu12["toolkit"]) == ("[tool.wheelmerge.cu12] toolkit", real(project / "toolkits" / "cuda-12"))


def test_relative_python_is_relative_to_the_current_directory(wheelmerge_bin, toolkits, tmp_path):
    """--python bin/python, given from the directory that holds bin/python."""
    copy_project("envprobe", tmp_path)
    (tmp_path / "bin").mkdir()
    # A wrapper, not a symlink: a venv's interpreter finds its pyvenv.cfg next to the path it was
    # started from, so a symlink elsewhere would run outside the venv.
    wrapper = tmp_path / "bin" / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{PYTHON}" "$@"\n')
    wrapper.chmod(0o755)
    result = wheelmerge(wheelmerge_bin, "build", "projects/envprobe", *toolkits.args(), "-o", "out", "--json",
                        "--no-isolation", "--python", "bin/python", tmp_path=tmp_path, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    assert (tmp_path / json.loads(result.stdout)["output"]).is_file()
