"""The loader (templates/loader/*.py) in real merged-package layouts: compiled extensions per CUDA
build, private libraries found only through the preload, real cuda-bindings installs. Every
import runs in a fresh interpreter."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import zipfile

import pytest

from conftest import CUDA_BINDINGS, tool_python, wheelmerge_version

WHEELMERGE_VERSION = wheelmerge_version()
from loader_fixtures import (
    DISTRIBUTION,
    EXT_SUFFIX,
    LABELS,
    SOURCES,
    add_cuda_bindings,
    build_fake_driver,
    build_native,
    build_unloadable_driver,
    default_manifest,
    make_site,
    run_python,
)

# Imports pkg and reports which build each variant module and file came from.
PROBE = """
import json, pkg, pkg._pyvariant, pkg.sub._nested
from pkg import _wheelmerge
print(json.dumps({
    "selected": _wheelmerge.selected(),
    "variants": _wheelmerge.variants(),
    "build_major": pkg.build_major(),
    "runtime_value": pkg._core.runtime_value(),
    "nested_major": pkg.sub._nested.build_major(),
    "pyvariant": pkg._pyvariant.BUILD,
    "core_file": pkg._core.__file__,
    "pyvariant_file": pkg._pyvariant.__file__,
    "cubin": _wheelmerge.path("kernels/x.cubin"),
    "build_info": _wheelmerge.build_info(),
}))
"""

# Imports pkg and prints the type and message of the failure.
FAILURE_PROBE = """
try:
    import pkg
except ImportError as error:
    print(type(error).__name__)
    print(error)
else:
    print("imported", pkg._wheelmerge.selected())
"""


@pytest.fixture(scope="session")
def native(tmp_path_factory):
    return build_native(tmp_path_factory.mktemp("native"))


@pytest.fixture(scope="session")
def bare_python(make_venv):
    """An interpreter with nothing installed, so no cuda-bindings anywhere."""
    return make_venv("loader-bare").python


@pytest.fixture(scope="session")
def bindings_python(make_venv, wheel_cache):
    """cuda-bindings major -> an interpreter with that real cuda-bindings installed."""
    pythons = {}
    for major in (12, 13):
        venv = make_venv(f"loader-cuda-bindings-{major}")
        venv.install(wheel_cache.requirement(f"cu{major}"), find_links=[wheel_cache.path])
        pythons[major] = venv.python
    return pythons


@pytest.fixture
def site(tmp_path, native):
    """Makes a site directory with pkg, its loader rendered from MANIFEST (default: both builds)."""
    def make(manifest=None):
        return make_site(tmp_path / "site", native, manifest or default_manifest())
    return make


def probe(python, site_dir, env=None):
    result = run_python(python, site_dir, "-c", PROBE, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def failure(python, site_dir, env=None):
    result = run_python(python, site_dir, "-c", FAILURE_PROBE, env=env)
    assert result.returncode == 0, result.stderr
    kind, _, message = result.stdout.partition("\n")
    return kind, message


def assert_fixes(message, labels=("cu12", "cu13"), extras=LABELS, override=True):
    """The message names the wheel's builds and how to fix the environment: the extra of each
    build that is one, else that build's cuda-bindings major; with OVERRIDE, the variable."""
    assert f"This wheel of {DISTRIBUTION} has builds for {', '.join(labels)}." in message
    for label in labels:
        extra = f'    pip install "{DISTRIBUTION}[{label}]"\n'
        bindings = f'    pip install "cuda-bindings=={label[2:]}.*"\n'
        assert (extra in message, bindings in message) == (label in extras, label not in extras)
    assert (f"export WHEELMERGE_CUDA_MAJOR={labels[-1][2:]}" in message) == override


def assert_override_fixes(message, major="13"):
    """The fixes of an override that names no build: name one, or unset it."""
    assert message.endswith(
        "This wheel of pkg-name has builds for cu12, cu13. Set WHEELMERGE_CUDA_MAJOR to the CUDA "
        f"major of one of them:\n    export WHEELMERGE_CUDA_MAJOR={major}\n"
        "or unset it to select by the installed cuda-bindings:\n    unset WHEELMERGE_CUDA_MAJOR\n")


@pytest.mark.parametrize("value, label", [("13", "cu13"), ("cu13", "cu13"), ("12", "cu12"),
                                          ("cu12", "cu12")])
def test_environment_override_selects_the_build(bare_python, site, value, label):
    major = int(label[2:])
    site_dir = site()
    found = probe(bare_python, site_dir, env={"WHEELMERGE_CUDA_MAJOR": value})
    assert found["selected"] == label
    assert found["variants"] == ["cu12", "cu13"]
    assert found["build_major"] == major
    assert found["runtime_value"] == major * 100 + 1  # this build's private libraries
    assert found["nested_major"] == major
    assert found["pyvariant"] == label
    assert found["core_file"] == str(site_dir / "pkg" / f"_core.{label}{EXT_SUFFIX}")
    assert found["pyvariant_file"] == str(site_dir / "pkg" / f"_pyvariant.{label}.py")


@pytest.mark.parametrize("value", ["thirteen", "\uff11\uff13", "cu\u0661\u0663", "1\u00b3"])
def test_invalid_override_is_an_import_error(bare_python, site, value):
    """Words, and digits other than ASCII's (fullwidth, Arabic-Indic, superscript), which
    Python's str.isdigit() takes and int() partly reads, are no CUDA major."""
    kind, message = failure(bare_python, site(), env={"WHEELMERGE_CUDA_MAJOR": value})
    assert kind == "SelectionError"
    assert f"WHEELMERGE_CUDA_MAJOR={value!r} is not a CUDA major version" in message
    assert_override_fixes(message)


def test_invalid_override_proposes_the_installed_cuda_bindings_major(bindings_python, site):
    kind, message = failure(bindings_python[12], site(), env={"WHEELMERGE_CUDA_MAJOR": "12.0"})
    assert kind == "SelectionError"
    assert_override_fixes(message, major="12")


def test_override_naming_a_missing_build(bare_python, site):
    kind, message = failure(bare_python, site(), env={"WHEELMERGE_CUDA_MAJOR": "cu11"})
    assert kind == "SelectionError"
    assert "WHEELMERGE_CUDA_MAJOR=cu11 is set, which needs a cu11 build" in message
    assert_override_fixes(message)


@pytest.mark.parametrize("major", [12, 13])
def test_installed_cuda_bindings_selects_its_major(bindings_python, site, major):
    found = probe(bindings_python[major], site())
    assert found["selected"] == f"cu{major}"
    assert found["build_major"] == major
    assert found["runtime_value"] == major * 100 + 1


@pytest.mark.parametrize("value", ["12", "cu12"])
def test_override_agreeing_with_cuda_bindings(bindings_python, site, value):
    found = probe(bindings_python[12], site(), env={"WHEELMERGE_CUDA_MAJOR": value})
    assert found["selected"] == "cu12"
    assert found["build_major"] == 12


@pytest.mark.parametrize("extras", [LABELS, ()])
@pytest.mark.parametrize("ignore", [None, "", "0", "off"])
def test_override_contradicting_cuda_bindings_is_refused(bindings_python, site, extras, ignore):
    env = {"WHEELMERGE_CUDA_MAJOR": "13"}
    if ignore is not None:
        env["WHEELMERGE_IGNORE_CUDA_BINDINGS"] = ignore
    kind, message = failure(bindings_python[12], site(default_manifest(extras=extras)), env=env)
    assert kind == "SelectionError"
    install = '"pkg-name[cu13]"' if extras else '"cuda-bindings==13.*"'
    assert message == (
        "pkg-name: cannot select a CUDA build: WHEELMERGE_CUDA_MAJOR=13 is set, but cuda-bindings "
        f"{CUDA_BINDINGS['cu12']} is installed (from its distribution metadata); the cu13 build "
        "needs cuda-bindings 13.\n"
        "This wheel of pkg-name has builds for cu12, cu13. Install the cuda-bindings its cu13 "
        f"build needs:\n    pip install {install}\n"
        "or use the cu12 build, which matches the installed cuda-bindings:\n"
        "    unset WHEELMERGE_CUDA_MAJOR\n"
        f"or if the cu13 build works with cuda-bindings {CUDA_BINDINGS['cu12']}, skip this check:\n"
        "    export WHEELMERGE_IGNORE_CUDA_BINDINGS=1\n")


def test_override_contradicting_cuda_bindings_without_its_build(bindings_python, site):
    manifest = default_manifest()
    manifest["variants"] = ["cu13"]
    kind, message = failure(bindings_python[12], site(manifest),
                            env={"WHEELMERGE_CUDA_MAJOR": "13"})
    assert kind == "SelectionError"
    assert f"but cuda-bindings {CUDA_BINDINGS['cu12']} is installed" in message
    assert 'pip install "pkg-name[cu13]"' in message
    assert "unset WHEELMERGE_CUDA_MAJOR" not in message  # no cu12 build to fall back on
    assert "export WHEELMERGE_IGNORE_CUDA_BINDINGS=1" in message


@pytest.mark.parametrize("ignore", ["1", "true", "YES", "on"])
def test_override_may_skip_the_cuda_bindings_check(bindings_python, site, ignore):
    site_dir = site()
    env = {"WHEELMERGE_CUDA_MAJOR": "13", "WHEELMERGE_IGNORE_CUDA_BINDINGS": ignore}
    found = probe(bindings_python[12], site_dir, env=env)
    assert found["selected"] == "cu13"
    assert found["build_major"] == 13
    result = run_python(bindings_python[12], site_dir, "-m", "pkg._wheelmerge", env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"WHEELMERGE_IGNORE_CUDA_BINDINGS: {ignore}" in lines
    assert ("selected: cu13, because WHEELMERGE_CUDA_MAJOR=13 is set "
            f"(WHEELMERGE_IGNORE_CUDA_BINDINGS={ignore}: cuda-bindings not checked)") in lines


def test_malformed_opt_out_is_an_import_error(bindings_python, site):
    env = {"WHEELMERGE_CUDA_MAJOR": "13", "WHEELMERGE_IGNORE_CUDA_BINDINGS": "maybe"}
    kind, message = failure(bindings_python[12], site(), env=env)
    assert kind == "SelectionError"
    assert message.startswith("pkg-name: cannot select a CUDA build: "
                              "WHEELMERGE_IGNORE_CUDA_BINDINGS='maybe' is neither 1 nor 0.\n"
                              "This wheel of pkg-name has builds for cu12, cu13.")
    assert "    export WHEELMERGE_IGNORE_CUDA_BINDINGS=1\n" in message


def test_cuda_bindings_without_metadata_is_read_from_the_module(bare_python, site):
    site_dir = site()
    add_cuda_bindings(site_dir, "'13.0.0'")
    found = probe(bare_python, site_dir)
    assert found["selected"] == "cu13"
    result = run_python(bare_python, site_dir, "-m", "pkg._wheelmerge")
    assert result.returncode == 0
    assert "cuda-bindings: 13.0.0 (from cuda.bindings.__version__)" in result.stdout


def test_cuda_bindings_of_a_major_the_wheel_lacks(bindings_python, site):
    manifest = default_manifest()
    manifest["variants"] = ["cu13"]
    kind, message = failure(bindings_python[12], site(manifest))
    assert kind == "SelectionError"
    assert (f"cannot select a CUDA build: cuda-bindings {CUDA_BINDINGS['cu12']} is installed "
            "(from its distribution metadata), which needs a cu12 build.") in message
    # An override would contradict the installed cuda-bindings: the fix is other cuda-bindings.
    assert_fixes(message, labels=("cu13",), override=False)
    assert "cu12]" not in message


@pytest.mark.parametrize("extras", [LABELS, (), ("cu13",)])
def test_no_cuda_bindings(bare_python, site, extras):
    """The fix offers the distribution's extras where the wheel has them, else cuda-bindings."""
    manifest = default_manifest(extras=extras)
    kind, message = failure(bare_python, site(manifest))
    assert kind == "SelectionError"
    assert message.startswith(
        f"{DISTRIBUTION}: cannot select a CUDA build: no cuda-bindings found: not in distribution "
        "metadata, `import cuda.bindings` failed (ModuleNotFoundError: No module named 'cuda')."
    )
    assert_fixes(message, extras=extras)
    assert "libcuda" not in message  # no driver fallback unless the manifest enables it


def test_driver_fallback_without_a_driver(bare_python, site, tmp_path):
    manifest = default_manifest()
    manifest["sources"] = list(SOURCES["driver-fallback"])
    # Whether or not this machine has a driver, the one found first cannot be loaded.
    driver = build_unloadable_driver(tmp_path / "driver")
    kind, message = failure(bare_python, site(manifest), env={"LD_LIBRARY_PATH": str(driver)})
    assert kind == "SelectionError"
    assert "no cuda-bindings found: not in distribution metadata" in message
    assert (f"the CUDA driver libcuda.so.1 could not be loaded ({driver}/libcuda.so.1: "
            "file too short)") in message
    assert_fixes(message)


@pytest.mark.parametrize("version, status, reason", [
    (None, 0, "the CUDA driver libcuda.so.1 has no cuDriverGetVersion (DRIVER/libcuda.so.1: "
              "undefined symbol: cuDriverGetVersion)"),
    (13000, 34, "the CUDA driver's cuDriverGetVersion failed (CUresult 34, "
                "CUDA_ERROR_STUB_LIBRARY)"),
    (13000, 77, "the CUDA driver's cuDriverGetVersion failed (CUresult 77)"),
    (0, 0, "the CUDA driver's cuDriverGetVersion reported version 0"),
])
def test_unusable_driver_is_a_reason(bare_python, site, tmp_path, version, status, reason):
    """A driver library that lacks the function or fails gives a reason, not an exception."""
    manifest = default_manifest()
    manifest["sources"] = list(SOURCES["driver-fallback"])
    driver = build_fake_driver(tmp_path / "driver", version, status)
    reason = reason.replace("DRIVER", str(driver))
    site_dir = site(manifest)
    env = {"LD_LIBRARY_PATH": str(driver)}
    kind, message = failure(bare_python, site_dir, env=env)
    assert kind == "SelectionError"
    assert message.startswith(f"{DISTRIBUTION}: cannot select a CUDA build: no cuda-bindings found: "
                              "not in distribution metadata, `import cuda.bindings` failed "
                              f"(ModuleNotFoundError: No module named 'cuda'); {reason}.\n")
    assert_fixes(message)
    result = run_python(bare_python, site_dir, "-m", "pkg._wheelmerge", env=env)
    assert (result.returncode, result.stderr) == (1, "")
    assert reason in result.stdout


@pytest.mark.parametrize("version, label", [(12080, "cu12"), (13000, "cu13"), (14010, "cu13")])
def test_driver_fallback_picks_the_newest_build_the_driver_runs(
        bare_python, site, tmp_path, version, label):
    manifest = default_manifest()
    manifest["sources"] = list(SOURCES["driver-fallback"])
    driver = build_fake_driver(tmp_path / "driver", version)
    # The stand-in aborts on cuInit, and a decoy libcuda.so would fail selection if opened.
    found = probe(bare_python, site(manifest), env={"LD_LIBRARY_PATH": str(driver)})
    assert found["selected"] == label
    assert found["build_major"] == int(label[2:])


def test_driver_too_old_for_every_build(bare_python, site, tmp_path):
    manifest = default_manifest()
    manifest["sources"] = list(SOURCES["driver-fallback"])
    driver = build_fake_driver(tmp_path / "driver", 11080)
    kind, message = failure(bare_python, site(manifest), env={"LD_LIBRARY_PATH": str(driver)})
    assert kind == "SelectionError"
    assert "the CUDA driver (libcuda.so.1) supports CUDA 11.8, older than every build" in message


def test_driver_is_ignored_without_driver_fallback(bare_python, site, tmp_path):
    driver = build_fake_driver(tmp_path / "driver", 13000)
    kind, message = failure(bare_python, site(), env={"LD_LIBRARY_PATH": str(driver)})
    assert kind == "SelectionError"
    assert "no cuda-bindings found" in message


def test_selection_is_kept_once_made_and_retried_after_a_failure(bare_python, site):
    code = """
import os
try:
    import pkg
except ImportError as error:
    print(type(error).__name__)
os.environ["WHEELMERGE_CUDA_MAJOR"] = "13"
import pkg
os.environ["WHEELMERGE_CUDA_MAJOR"] = "12"
import pkg.sub._nested
print(pkg._wheelmerge.selected(), pkg.build_major(), pkg.sub._nested.build_major())
"""
    result = run_python(bare_python, site(), "-c", code)
    assert result.stdout.splitlines() == ["SelectionError", "cu13 13 13"], result.stderr


def test_path_build_info_and_variants(bare_python, site):
    site_dir = site()
    found = probe(bare_python, site_dir, env={"WHEELMERGE_CUDA_MAJOR": "13"})
    cubin = site_dir / "pkg" / "kernels" / "x.cu13.cubin"
    assert found["cubin"] == str(cubin)
    assert found["build_info"] == {"cuda": "13.0.2"}
    assert found["variants"] == ["cu12", "cu13"]


def test_path_of_an_unknown_file(bare_python, site):
    code = """
from pkg import _wheelmerge
try:
    _wheelmerge.path("kernels/y.cubin")
except LookupError as error:
    print(type(error).__name__, error)
"""
    result = run_python(bare_python, site(), "-c", code, env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"LookupError 'kernels/y.cubin' is not a variant file of {DISTRIBUTION}; "
        "its cu12 build has:"
    )
    assert "kernels/x.cubin" in result.stdout


def test_empty_build_info(bare_python, site):
    manifest = default_manifest()
    del manifest["build_info"]["cu12"]
    code = "from pkg import _wheelmerge; print(_wheelmerge.build_info())"
    result = run_python(bare_python, site(manifest), "-c", code,
                        env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert result.stdout == "{}\n", result.stderr


def test_module_only_in_the_other_build(bare_python, site):
    code = """
import pkg
try:
    import pkg._extra
except ModuleNotFoundError as error:
    print("missing", error.name)
else:
    print("found", pkg._extra.BUILD)
"""
    site_dir = site()
    for value, expected in [("12", "missing pkg._extra"), ("13", "found cu13")]:
        result = run_python(bare_python, site_dir, "-c", code, env={"WHEELMERGE_CUDA_MAJOR": value})
        assert result.stdout.strip() == expected, result.stderr


def test_extension_needs_the_preload(bare_python, site, native):
    """The fixture is meaningful: nothing but the preload lets the extension find libwmrt."""
    readelf = subprocess.run(["readelf", "-d", str(native / "cu12" / "_core.so")],
                             capture_output=True, text=True, check=True).stdout
    assert "libwmrt.so.1" in readelf
    assert "RPATH" not in readelf and "RUNPATH" not in readelf
    manifest = default_manifest()
    manifest["preload"]["cu12"] = []
    kind, message = failure(bare_python, site(manifest), env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert kind == "ImportError"
    assert "libwmrt.so.1: cannot open shared object file" in message


def test_preload_follows_the_manifest_order(bare_python, site):
    manifest = default_manifest()
    manifest["preload"]["cu12"].reverse()  # libwmrt before libwmdep, which it needs
    site_dir = site(manifest)
    kind, message = failure(bare_python, site_dir, env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert kind == "PreloadError"
    library = site_dir / "pkg.libs" / "libwmrt.cu12.so.1"
    assert f"{DISTRIBUTION}: cannot load {library}, a private library of its cu12 build:" in message
    assert "libwmdep.so.1: cannot open shared object file" in message
    # The other build's order is intact.
    assert probe(bare_python, site_dir, env={"WHEELMERGE_CUDA_MAJOR": "13"})["build_major"] == 13


def test_loader_runs_twice_but_installs_one_finder(bare_python, site):
    code = """
import importlib, importlib.util, sys
import pkg
from pkg import _wheelmerge
importlib.reload(_wheelmerge)
spec = importlib.util.spec_from_file_location("second_copy", _wheelmerge.__file__)
spec.loader.exec_module(importlib.util.module_from_spec(spec))
finders = [f for f in sys.meta_path if hasattr(f, "wheelmerge_package_dir")]
import pkg.sub._nested
print(len(finders), sys.meta_path.index(finders[0]), pkg.sub._nested.build_major())
"""
    result = run_python(bare_python, site(), "-c", code, env={"WHEELMERGE_CUDA_MAJOR": "13"})
    assert result.stdout.split() == ["1", "0", "13"], result.stderr


def test_other_modules_are_untouched(bare_python, site):
    code = """
import importlib.machinery, sys
import pkg.plain
finder = sys.meta_path[0]
print([finder.find_spec(name) for name in ("json", "pkg", "pkg.plain", "pkg.sub", "pkg._cor")])
print(type(pkg.plain.__spec__.loader).__name__, pkg.plain.__spec__.origin)
"""
    site_dir = site()
    result = run_python(bare_python, site_dir, "-c", code, env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert result.stdout.splitlines() == [
        "[None, None, None, None, None]",
        f"SourceFileLoader {site_dir / 'pkg' / 'plain.py'}",
    ], result.stderr


def test_other_modules_import_while_no_build_fits(bare_python, site):
    """Selection runs only for variant modules: with no build selectable, the rest imports."""
    code = """
import importlib.util
spec = importlib.util.spec_from_file_location("loader", "LOADER")
spec.loader.exec_module(importlib.util.module_from_spec(spec))
import csv, email.mime.text, decimal
print("stdlib ok")
try:
    import pkg.plain
except ImportError as error:
    print(type(error).__name__)
"""
    site_dir = site()
    loader = site_dir / "pkg" / "_wheelmerge.py"
    result = run_python(bare_python, site_dir, "-c", code.replace("LOADER", str(loader)))
    assert result.stdout.splitlines() == ["stdlib ok", "SelectionError"], result.stderr


def test_diagnosis_when_a_build_is_selected(bindings_python, site):
    site_dir = site()
    result = run_python(bindings_python[12], site_dir, "-m", "pkg._wheelmerge")
    assert result.returncode == 0
    assert result.stderr == ""  # in particular no runpy warning about pkg._wheelmerge
    lines = result.stdout.splitlines()
    version = CUDA_BINDINGS["cu12"]
    assert lines[:2] == [f"{DISTRIBUTION} (package pkg), merged by wheelmerge {WHEELMERGE_VERSION}",
                         "builds: cu12, cu13"]
    assert lines[2] == "selector: cuda"
    assert lines[3].startswith(f"python: CPython {platform.python_version()} on Linux-")
    assert lines[4:6] == [f"cuda-bindings: {version} (from its distribution metadata)",
                          f"cuda-bindings at: {bindings_python[12].parents[1]}/lib/python"
                          f"{sys.version_info[0]}.{sys.version_info[1]}/site-packages/"
                          f"cuda_bindings-{version}.dist-info"]
    assert lines[6] == "selection sources: cuda-bindings"
    assert "NVIDIA wheels: none" in lines  # the venv has cuda-bindings alone
    assert any(line.startswith("CUDA driver: ") for line in lines)
    assert any(line.startswith("GPUs: ") for line in lines)
    assert (f"selected: cu12, because cuda-bindings {version} is installed "
            "(from its distribution metadata)") in lines
    assert not any(line.startswith("WHEELMERGE_") for line in lines)  # none is set
    assert "cu12 (selected):" in lines
    assert "cu13:" in lines
    assert f"    module pkg._core -> _core.cu12{EXT_SUFFIX}" in lines
    assert "    file kernels/x.cubin -> kernels/x.cu13.cubin" in lines
    assert "    preload ../pkg.libs/libwmdep.cu13.so.1" in lines
    assert lines.index("    preload ../pkg.libs/libwmdep.cu12.so.1") + 1 == lines.index(
        "    preload ../pkg.libs/libwmrt.cu12.so.1")
    assert not any("(missing)" in line for line in lines)


def test_diagnosis_when_no_build_fits(bare_python, site):
    site_dir = site()
    (site_dir / "pkg" / "kernels" / "x.cu13.cubin").unlink()
    result = run_python(bare_python, site_dir, "-m", "pkg._wheelmerge")
    assert result.returncode == 1
    assert result.stderr == ""  # a report, not a traceback
    assert "selection failed:\n    pkg-name: cannot select a CUDA build: no cuda-bindings found" \
        in result.stdout
    assert '        pip install "pkg-name[cu13]"' in result.stdout
    assert "(selected)" not in result.stdout
    assert "    file kernels/x.cubin -> kernels/x.cu13.cubin (missing)" in result.stdout


def test_diagnosis_reports_a_failed_preload(bare_python, site):
    manifest = default_manifest()
    manifest["preload"]["cu13"].reverse()
    result = run_python(bare_python, site(manifest), "-m", "pkg._wheelmerge",
                        env={"WHEELMERGE_CUDA_MAJOR": "cu13"})
    assert result.returncode == 1
    assert "WHEELMERGE_CUDA_MAJOR: cu13" in result.stdout
    assert "selection failed:\n    pkg-name: cannot load " in result.stdout
    assert "libwmdep.so.1: cannot open shared object file" in result.stdout


def test_diagnosis_api_and_direct_script(bare_python, site):
    site_dir = site()
    code = "from pkg import _wheelmerge; print(_wheelmerge.diagnose())"
    env = {"WHEELMERGE_CUDA_MAJOR": "13"}
    from_api = run_python(bare_python, site_dir, "-c", code, env=env)
    as_script = run_python(bare_python, site_dir, str(site_dir / "pkg" / "_wheelmerge.py"),
                           env=env)
    assert "selected: cu13, because WHEELMERGE_CUDA_MAJOR=13 is set" in from_api.stdout
    assert as_script.returncode == 0
    assert as_script.stdout == from_api.stdout


def test_other_module_run_with_m_still_raises(bare_python, site):
    """Only `-m pkg._wheelmerge` turns a failed import into the report."""
    result = run_python(bare_python, site(), "-m", "pkg.plain")
    assert result.returncode == 1
    assert "selection failed" not in result.stdout
    assert "SelectionError: pkg-name: cannot select a CUDA build" in result.stderr


def test_diagnosis_with_combined_interpreter_options(bare_python, site):
    result = run_python(bare_python, site(), "-Bm", "pkg._wheelmerge")
    assert result.returncode == 1
    assert result.stdout.startswith(f"{DISTRIBUTION} (package pkg)")
    assert result.stderr == ""


# --- the selection holds for the whole process -------------------------------------------------

def test_reload_and_a_second_copy_keep_the_selection(bare_python, site):
    code = """
import importlib, importlib.util, json, os, sys
import pkg
from pkg import _wheelmerge
finder = next(f for f in sys.meta_path if hasattr(f, "wheelmerge_package_dir"))
state = finder.wheelmerge_state
handles = list(state.libraries.values())
os.environ["WHEELMERGE_CUDA_MAJOR"] = "12"
importlib.reload(_wheelmerge)
spec = importlib.util.spec_from_file_location("second_copy", _wheelmerge.__file__)
copy = importlib.util.module_from_spec(spec)
spec.loader.exec_module(copy)
import pkg._pyvariant, pkg.sub._nested
print(json.dumps({
    "reloaded": _wheelmerge.selected(),
    "copy": copy.selected(),
    "copy_cubin": copy.path("kernels/x.cubin").rsplit("/", 1)[1],
    "pyvariant": pkg._pyvariant.BUILD,
    "nested": pkg.sub._nested.build_major(),
    "same_state": finder.wheelmerge_state is state and _wheelmerge._STATE is state
                  and copy._STATE is state,
    "same_handles": [a is b for a, b in zip(handles, state.libraries.values())],
    "libraries": len(state.libraries),
    "finders": sum(hasattr(f, "wheelmerge_package_dir") for f in sys.meta_path),
    "kept": [line for line in copy.diagnose().splitlines() if line.startswith("kept:")],
}))
"""
    result = run_python(bare_python, site(), "-c", code, env={"WHEELMERGE_CUDA_MAJOR": "13"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "reloaded": "cu13", "copy": "cu13", "copy_cubin": "x.cu13.cubin", "pyvariant": "cu13",
        "nested": 13, "same_state": True, "same_handles": [True, True], "libraries": 2,
        "finders": 1,
        "kept": ["kept: cu13, selected earlier in this process, which never mixes builds; "
                 "now WHEELMERGE_CUDA_MAJOR=12 is set, which would select cu12"],
    }


def test_reload_after_the_finder_was_removed_keeps_the_selection(bare_python, site):
    code = """
import importlib, os, sys
import pkg
from pkg import _wheelmerge
sys.meta_path[:] = [f for f in sys.meta_path if not hasattr(f, "wheelmerge_package_dir")]
os.environ["WHEELMERGE_CUDA_MAJOR"] = "13"
importlib.reload(_wheelmerge)
import pkg._pyvariant
print(_wheelmerge.selected(), pkg._pyvariant.BUILD, type(sys.meta_path[0]).__name__)
"""
    result = run_python(bare_python, site(), "-c", code, env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert result.stdout.split() == ["cu12", "cu12", "_Finder"], result.stderr


def test_selection_survives_a_failed_diagnosis_of_the_environment(bare_python, site):
    """When the environment now could select nothing, the kept build still serves imports."""
    code = """
import os
import pkg
os.environ["WHEELMERGE_CUDA_MAJOR"] = "cu11"
import pkg.sub._nested
print(pkg.sub._nested.build_major())
print(pkg._wheelmerge.diagnose())
"""
    result = run_python(bare_python, site(), "-c", code, env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "12"
    assert "selected: cu12, because WHEELMERGE_CUDA_MAJOR=12 is set" in lines
    assert ("kept: cu12, selected earlier in this process, which never mixes builds; selecting "
            "now would fail: WHEELMERGE_CUDA_MAJOR=cu11 is set, which needs a cu11 build.") in lines


def test_installing_other_cuda_bindings_later_keeps_the_selection(make_venv, wheel_cache, site):
    """A real pip install of cuda-bindings 13 into the running interpreter's environment: the
    process keeps cu12, says why, and only a new process selects cu13."""
    venv = make_venv("loader-cuda-bindings-upgraded")
    venv.install(wheel_cache.requirement("cu12"), find_links=[wheel_cache.path])
    site_dir = site()
    install = [str(tool_python()), "-m", "pip", "--python", str(venv.python), "install",
               "--quiet", "--disable-pip-version-check", "--no-index", "--find-links",
               str(wheel_cache.path), wheel_cache.requirement("cu13")]
    code = """
import importlib, importlib.metadata, json, subprocess, sys
import pkg
subprocess.run(json.loads(sys.argv[1]), check=True)
importlib.invalidate_caches()
import pkg._pyvariant, pkg.sub._nested
print(json.dumps({
    "installed": importlib.metadata.version("cuda-bindings"),
    "selected": pkg._wheelmerge.selected(),
    "pyvariant": pkg._pyvariant.BUILD,
    "nested": pkg.sub._nested.build_major(),
    "diagnosis": pkg._wheelmerge.diagnose().splitlines(),
}))
"""
    result = run_python(venv.python, site_dir, "-c", code, json.dumps(install))
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    new = CUDA_BINDINGS["cu13"]
    assert found["installed"] == new
    assert (found["selected"], found["pyvariant"], found["nested"]) == ("cu12", "cu12", 12)
    assert f"cuda-bindings: {new} (from its distribution metadata)" in found["diagnosis"]
    assert (f"selected: cu12, because cuda-bindings {CUDA_BINDINGS['cu12']} is installed "
            "(from its distribution metadata)") in found["diagnosis"]
    assert ("kept: cu12, selected earlier in this process, which never mixes builds; now "
            f"cuda-bindings {new} is installed (from its distribution metadata), which would "
            "select cu13") in found["diagnosis"]
    assert probe(venv.python, site_dir)["selected"] == "cu13"


def test_threads_share_one_selection(bare_python, site):
    """Threads racing to select, one of them changing the override: all see one build, and its
    libraries are loaded once."""
    code = """
import importlib.util, json, os, sys, threading
spec = importlib.util.spec_from_file_location("loader", "LOADER")
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)
barrier = threading.Barrier(16)
seen = []
def work(i):
    barrier.wait()
    if i == 0:
        os.environ["WHEELMERGE_CUDA_MAJOR"] = "12"
    seen.append((loader.selected(), loader.path("kernels/x.cubin").rsplit("/", 1)[1]))
    if i % 2:
        loader._prepare()
threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
for thread in threads: thread.start()
for thread in threads: thread.join()
import pkg, pkg._pyvariant
print(json.dumps({"seen": sorted(set(seen)), "count": len(seen),
                  "libraries": len(loader._STATE.libraries),
                  "module": [pkg._pyvariant.BUILD, pkg.build_major()]}))
"""
    site_dir = site()
    loader = site_dir / "pkg" / "_wheelmerge.py"
    result = run_python(bare_python, site_dir, "-c", code.replace("LOADER", str(loader)),
                        env={"WHEELMERGE_CUDA_MAJOR": "13"})
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    label = found["seen"][0][0]
    assert found["seen"] == [[label, f"x.{label}.cubin"]]
    assert found["count"] == 16
    assert found["libraries"] == 2
    assert found["module"] == [label, int(label[2:])]


def test_loading_the_loader_imports_no_cuda_bindings(bare_python, site):
    site_dir = site()
    add_cuda_bindings(site_dir, "'13.0.0'")
    code = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("loader", "LOADER")
spec.loader.exec_module(importlib.util.module_from_spec(spec))
print("cuda.bindings" in sys.modules)
import pkg._pyvariant
print("cuda.bindings" in sys.modules, pkg._pyvariant.BUILD)
"""
    loader = site_dir / "pkg" / "_wheelmerge.py"
    result = run_python(bare_python, site_dir, "-c", code.replace("LOADER", str(loader)))
    assert result.stdout.split() == ["False", "True", "cu13"], result.stderr


# --- packages whose __init__ is per build ------------------------------------------------------

@pytest.mark.parametrize("label", LABELS)
def test_variant_package_inits_load_as_packages(bare_python, site, label):
    code = """
import json, pkg.vsub.shared, pkg.esub.helper
print(json.dumps({
    "vsub": pkg.vsub.BUILD,
    "vsub_file": pkg.vsub.__file__,
    "vsub_path": list(pkg.vsub.__path__),
    "shared": pkg.vsub.shared.VALUE,
    "esub": pkg.esub.build_major(),
    "esub_file": pkg.esub.__file__,
    "esub_path": list(pkg.esub.__spec__.submodule_search_locations),
    "helper": pkg.esub.helper.VALUE,
    "packages": [pkg.vsub.__package__, pkg.esub.__package__],
    "is_package": [pkg.vsub.__loader__.is_package("pkg.vsub"),
                   pkg.esub.__loader__.is_package("pkg.esub")],
}))
"""
    site_dir = site()
    result = run_python(bare_python, site_dir, "-c", code,
                        env={"WHEELMERGE_CUDA_MAJOR": label})
    assert result.returncode == 0, result.stderr
    package = site_dir / "pkg"
    assert json.loads(result.stdout) == {
        "vsub": label,
        "vsub_file": str(package / "vsub" / f"__init__.{label}.py"),
        "vsub_path": [str(package / "vsub")],
        "shared": f"shared with {label}",
        "esub": int(label[2:]),
        "esub_file": str(package / "esub" / f"__init__.{label}{EXT_SUFFIX}"),
        "esub_path": [str(package / "esub")],
        "helper": f"helper of {label[2:]}",
        "packages": ["pkg.vsub", "pkg.esub"],
        "is_package": [True, True],
    }


# --- cuda-bindings with incomplete metadata ----------------------------------------------------

@pytest.mark.parametrize("metadata, problem", [
    ("Metadata-Version: 2.1\nName: cuda-bindings\n", "its distribution metadata has no Version"),
    ("", "its distribution metadata has no Version"),
    ("Metadata-Version: 2.1\nName: cuda-bindings\nVersion: unknown\n",
     "its distribution metadata has Version 'unknown', without a major number"),
])
def test_incomplete_metadata_falls_back_to_the_module(bare_python, site, metadata, problem):
    site_dir = site()
    add_cuda_bindings(site_dir, "'13.0.1'", metadata=metadata)
    assert probe(bare_python, site_dir)["selected"] == "cu13"
    result = run_python(bare_python, site_dir, "-m", "pkg._wheelmerge")
    assert result.returncode == 0, result.stderr
    how = f"13.0.1 is installed (from cuda.bindings.__version__, as {problem})"
    assert f"cuda-bindings: 13.0.1 (from cuda.bindings.__version__, as {problem})" in result.stdout
    assert f"selected: cu13, because cuda-bindings {how}" in result.stdout


def test_incomplete_metadata_without_the_module(bare_python, site):
    site_dir = site()
    add_cuda_bindings(site_dir, "'13.0.1'", metadata="Name: cuda-bindings\n")
    shutil.rmtree(site_dir / "cuda")  # the dist-info stays, without the module
    kind, message = failure(bare_python, site_dir)
    assert kind == "SelectionError"
    assert message.startswith(
        "pkg-name: cannot select a CUDA build: no cuda-bindings found: its distribution metadata "
        "has no Version, `import cuda.bindings` failed (ModuleNotFoundError: No module named "
        "'cuda').\n")


def test_real_cuda_bindings_with_metadata_lacking_version(make_venv, wheel_cache, site):
    venv = make_venv("loader-cuda-bindings-no-version")
    venv.install(wheel_cache.requirement("cu12"), find_links=[wheel_cache.path])
    [metadata] = venv.path.glob("lib/python*/site-packages/cuda_bindings-*.dist-info/METADATA")
    text = metadata.read_text()
    assert f"\nVersion: {CUDA_BINDINGS['cu12']}\n" in text
    metadata.write_text(text.replace(f"\nVersion: {CUDA_BINDINGS['cu12']}\n", "\n"))
    site_dir = site()
    found = probe(venv.python, site_dir)
    assert (found["selected"], found["build_major"]) == ("cu12", 12)
    result = run_python(venv.python, site_dir, "-m", "pkg._wheelmerge")
    assert result.returncode == 0, result.stderr
    assert (f"cuda-bindings: {CUDA_BINDINGS['cu12']} (from cuda.bindings.__version__, as its "
            "distribution metadata has no Version)") in result.stdout.splitlines()


# --- every failure is an ImportError that says what to do --------------------------------------

def test_preload_error_names_the_selection_and_the_fix(bare_python, site):
    manifest = default_manifest()
    manifest["preload"]["cu12"].reverse()
    site_dir = site(manifest)
    info = site_dir / "pkg_name-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg-name\nVersion: 1.2.3\n")
    kind, message = failure(bare_python, site_dir, env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert kind == "PreloadError"
    assert message.endswith(
        "libwmdep.so.1: cannot open shared object file: No such file or directory.\n"
        "The cu12 build was selected because WHEELMERGE_CUDA_MAJOR=12 is set.\n"
        "This wheel of pkg-name has builds for cu12, cu13. Reinstall it if files are missing or "
        'damaged:\n    pip install --force-reinstall --no-deps "pkg-name==1.2.3"\n')


def test_a_broken_cuda_bindings_is_an_import_error(bare_python, site):
    """Whatever goes wrong while detecting, importing a variant module raises ImportError."""
    site_dir = site()
    add_cuda_bindings(site_dir, "type('V', (), {'__str__': lambda self: 1 / 0})()")
    kind, message = failure(bare_python, site_dir)
    assert kind == "SelectionError"
    assert message.startswith("pkg-name: cannot select a CUDA build: no cuda-bindings found: "
                              "detecting it failed (ZeroDivisionError: division by zero).\n")
    assert_fixes(message)
    result = run_python(bare_python, site_dir, "-m", "pkg._wheelmerge")
    assert (result.returncode, result.stderr) == (1, "")


@pytest.mark.parametrize("module, stored", [("pkg._pyvariant", "_pyvariant.cu12.py"),
                                            ("pkg.vsub", "vsub/__init__.cu12.py")])
def test_missing_file_of_the_selected_build_is_an_import_error(bare_python, site, module, stored):
    site_dir = site()
    missing = site_dir / "pkg" / stored
    missing.unlink()
    code = f"""
import pkg
try:
    import {module}
except ImportError as error:
    print(type(error).__name__, error.name, error.path)
    print(error)
"""
    result = run_python(bare_python, site_dir, "-c", code, env={"WHEELMERGE_CUDA_MAJOR": "12"})
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"ImportError {module} {missing}\n"
        f"pkg-name: cannot import {module}: {missing}, its file in the cu12 build, is missing.\n"
        "The cu12 build was selected because WHEELMERGE_CUDA_MAJOR=12 is set.\n"
        "This wheel of pkg-name has builds for cu12, cu13. Reinstall it:\n"
        '    pip install --force-reinstall --no-deps "pkg-name"\n')


# --- the override of one distribution ------------------------------------------------------------

def test_the_distributions_own_override_wins_over_the_global_ones(bare_python, site):
    """WHEELMERGE_VARIANT_<NAME> (the normalized name in upper case) pins this distribution
    alone: the global WHEELMERGE_VARIANT and WHEELMERGE_CUDA_MAJOR are not read for it."""
    env = {"WHEELMERGE_VARIANT_PKG_NAME": "cu13", "WHEELMERGE_VARIANT": "cu12", "WHEELMERGE_CUDA_MAJOR": "12"}
    site_dir = site()
    found = probe(bare_python, site_dir, env=env)
    assert (found["selected"], found["build_major"]) == ("cu13", 13)
    how = run_python(bare_python, site_dir, "-c", "from pkg import _wheelmerge as w; print(w._select()[1])", env=env)
    assert how.stdout == "WHEELMERGE_VARIANT_PKG_NAME=cu13 is set\n", how.stderr


def test_another_distributions_override_is_not_read(bare_python, site):
    found = probe(bare_python, site(), env={"WHEELMERGE_VARIANT_OTHER_PKG": "cu13",
                                            "WHEELMERGE_CUDA_MAJOR": "12"})
    assert (found["selected"], found["build_major"]) == ("cu12", 12)


def test_a_distributions_override_naming_no_build_is_refused_naming_it(bare_python, site):
    kind, message = failure(bare_python, site(), env={"WHEELMERGE_VARIANT_PKG_NAME": "cu11"})
    assert kind == "SelectionError"
    assert message.startswith("pkg-name: cannot select a CUDA build: WHEELMERGE_VARIANT_PKG_NAME='cu11' "
                              "names no build of this wheel.\n")
    assert "    export WHEELMERGE_VARIANT_PKG_NAME=cu13\n" in message
    assert "    unset WHEELMERGE_VARIANT_PKG_NAME\n" in message


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_the_report_escapes_undecodable_environment_bytes_visibly(bare_python, site, flag):
    """An environment value that is not UTF-8 (Python holds its bytes as lone surrogates) is
    reported as \\xNN text: the output is strict UTF-8, and --json a document with no lone
    surrogate escape (RFC 7493), as strict readers require."""
    site_dir = site()
    env = {b"PATH": os.environ["PATH"].encode(), b"PYTHONPATH": str(site_dir).encode(), b"PYTHONNOUSERSITE": b"1",
           b"LANG": b"C.UTF-8", b"WHEELMERGE_CUDA_MAJOR": b"1\xff3", b"WHEELMERGE_NOTE\xfe": b"caf\xe9"}
    result = subprocess.run([str(bare_python), "-m", "pkg._wheelmerge", *flag], env=env, cwd=site_dir.parent,
                            capture_output=True, timeout=60)
    assert result.returncode == 1, result.stderr  # the override names no build
    text = result.stdout.decode("utf-8")  # strict: a lone surrogate would not have been written
    if flag:
        document = json.loads(text)
        assert document["environment"] == {"WHEELMERGE_CUDA_MAJOR": "1\\xff3", "WHEELMERGE_NOTE\\xfe": "caf\\xe9"}
        assert "WHEELMERGE_CUDA_MAJOR" in document["error"], document["error"]
        strings = []
        def walk(value):
            if isinstance(value, str):
                strings.append(value)
            elif isinstance(value, dict):
                for k, v in value.items():
                    walk(k), walk(v)
            elif isinstance(value, list):
                for v in value:
                    walk(v)
        walk(document)
        assert not [s for s in strings if any(0xD800 <= ord(c) <= 0xDFFF for c in s)]
    else:
        assert "WHEELMERGE_CUDA_MAJOR: 1\\xff3" in text.splitlines(), text


METADATA_PROBE = """
import json, sys
import pkg
from pkg import _wheelmerge
imported = "importlib.metadata" in sys.modules
import importlib.metadata
print(json.dumps({"selected": _wheelmerge.selected(), "metadata": importlib.metadata.version(sys.argv[1]),
                  "imported": imported}))
"""


def _dist_info(where: Path, name: str, version: str, kind: str) -> None:
    """NAME's metadata in WHERE as KIND: a .dist-info, an .egg-info directory or file."""
    stem = f"{name.replace('-', '_')}-{version}"
    text = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if kind == "dist-info":
        (where / f"{stem}.dist-info").mkdir(parents=True)
        (where / f"{stem}.dist-info" / "METADATA").write_text(text)
    elif kind == "egg-info dir":
        (where / f"{stem}-py3.11.egg-info").mkdir(parents=True)
        (where / f"{stem}-py3.11.egg-info" / "PKG-INFO").write_text(text)
    else:
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{stem}-py3.11.egg-info").write_text(text)


@pytest.mark.parametrize("first", ["dist-info", "egg-info dir", "egg-info file", "zip", "two in one entry"])
@pytest.mark.parametrize("name", ["cuda-bindings", "nvidia-cuda-runtime"])
def test_the_loader_reads_distributions_as_importlib_metadata_does(bare_python, site, tmp_path, first, name):
    """Before: the loader's fast path read .dist-info directories alone, so a CUDA 12 install
    as .egg-info (or in a zip) first on sys.path and a CUDA 13 .dist-info later selected cu13
    while importlib.metadata (and `import cuda.bindings`) said 12. Now the selection follows
    importlib.metadata's answer: the loader's listing reads a lone .dist-info itself and asks
    importlib.metadata for anything else, paying for its import only then."""
    manifest = default_manifest()
    if name != "cuda-bindings":
        manifest["sources"] = list(SOURCES["no cuda-bindings"])
    site_dir = site(manifest)
    early, late = tmp_path / "early", tmp_path / "late"
    twelve = "12.9.79" if name == "nvidia-cuda-runtime" else "12.9.4"
    _dist_info(late, name, "13.0.3", "dist-info")
    if first == "zip":
        staging = tmp_path / "staging"
        _dist_info(staging, name, twelve, "dist-info")
        early.mkdir()
        archive = early / "deps.zip"
        with zipfile.ZipFile(archive, "w") as z:
            for path in staging.rglob("*"):
                if path.is_file():
                    z.write(path, path.relative_to(staging).as_posix())
        entries = [archive, site_dir, late]
    elif first == "two in one entry":
        _dist_info(early, name, twelve, "egg-info dir")
        _dist_info(early, name, "13.0.1", "dist-info")
        entries = [early, site_dir, late]
    else:
        _dist_info(early, name, twelve, first)
        entries = [early, site_dir, late]
    env = {"PYTHONPATH": os.pathsep.join(map(str, entries))}
    result = run_python(bare_python, site_dir, "-c", METADATA_PROBE, name, env=env)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    expected = f"cu{found['metadata'].split('.')[0]}"
    assert found["selected"] == expected, found  # the same answer as importlib.metadata's
    if first != "two in one entry":
        assert found["metadata"] == twelve
    # The fast path reads a lone .dist-info; anything else is asked of importlib.metadata.
    assert found["imported"] == (first != "dist-info"), found
    report = run_python(bare_python, site_dir, "-m", "pkg._wheelmerge", env=env)
    assert f"selected: {expected}" in report.stdout, report.stdout
    if name == "cuda-bindings":
        assert ("(read by importlib.metadata)" in report.stdout) == (first != "dist-info"), report.stdout
