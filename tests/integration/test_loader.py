"""The loader (templates/loader.py) in real merged-package layouts: compiled extensions per CUDA
build, private libraries found only through the preload, real cuda-bindings installs. Every
import runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess

import pytest

from conftest import CUDA_BINDINGS
from loader_fixtures import (
    DISTRIBUTION,
    EXT_SUFFIX,
    MANIFEST_LINE,
    TEMPLATE,
    build_fake_driver,
    build_native,
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


def assert_fixes(message, labels=("cu12", "cu13")):
    """The message names the wheel's builds and how to fix the environment."""
    assert f"This wheel of {DISTRIBUTION} has builds for {', '.join(labels)}." in message
    for label in labels:
        assert f'pip install "{DISTRIBUTION}[{label}]"' in message
    assert f"export WHEELMERGE_CUDA_MAJOR={labels[-1][2:]}" in message


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


def test_invalid_override_is_an_import_error(bare_python, site):
    kind, message = failure(bare_python, site(), env={"WHEELMERGE_CUDA_MAJOR": "thirteen"})
    assert kind == "SelectionError"
    assert "WHEELMERGE_CUDA_MAJOR='thirteen' is not a CUDA major version" in message
    assert_fixes(message)


def test_override_naming_a_missing_build(bare_python, site):
    kind, message = failure(bare_python, site(), env={"WHEELMERGE_CUDA_MAJOR": "cu11"})
    assert kind == "SelectionError"
    assert "WHEELMERGE_CUDA_MAJOR=cu11 is set, which needs a cu11 build" in message
    assert_fixes(message)


@pytest.mark.parametrize("major", [12, 13])
def test_installed_cuda_bindings_selects_its_major(bindings_python, site, major):
    found = probe(bindings_python[major], site())
    assert found["selected"] == f"cu{major}"
    assert found["build_major"] == major
    assert found["runtime_value"] == major * 100 + 1


def test_override_wins_over_cuda_bindings(bindings_python, site):
    found = probe(bindings_python[12], site(), env={"WHEELMERGE_CUDA_MAJOR": "13"})
    assert found["selected"] == "cu13"
    assert found["build_major"] == 13


def test_cuda_bindings_without_metadata_is_read_from_the_module(bare_python, site):
    site_dir = site()
    bindings = site_dir / "cuda" / "bindings"  # cuda stays a namespace package, as installed
    bindings.mkdir(parents=True)
    (bindings / "__init__.py").write_text("__version__ = '13.0.0'\n")
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
    assert_fixes(message, labels=("cu13",))
    assert "cu12]" not in message


def test_no_cuda_bindings(bare_python, site):
    kind, message = failure(bare_python, site())
    assert kind == "SelectionError"
    assert message.startswith(
        f"{DISTRIBUTION}: cannot select a CUDA build: no cuda-bindings found: not in distribution "
        "metadata, `import cuda.bindings` failed (ModuleNotFoundError: No module named 'cuda')."
    )
    assert_fixes(message)
    assert "libcuda" not in message  # no driver fallback unless the manifest enables it


def test_driver_fallback_without_a_driver(bare_python, site):
    manifest = default_manifest()
    manifest["driver_fallback"] = 1
    kind, message = failure(bare_python, site(manifest))
    assert kind == "SelectionError"
    assert "no cuda-bindings found: not in distribution metadata" in message
    assert "the CUDA driver libcuda.so.1 could not be loaded (libcuda.so.1: cannot open" in message
    assert_fixes(message)


@pytest.mark.parametrize("version, label", [(12080, "cu12"), (13000, "cu13"), (14010, "cu13")])
def test_driver_fallback_picks_the_newest_build_the_driver_runs(
        bare_python, site, tmp_path, version, label):
    manifest = default_manifest()
    manifest["driver_fallback"] = 1
    driver = build_fake_driver(tmp_path / "driver", version)
    # The stand-in aborts on cuInit, and a decoy libcuda.so would fail selection if opened.
    found = probe(bare_python, site(manifest), env={"LD_LIBRARY_PATH": str(driver)})
    assert found["selected"] == label
    assert found["build_major"] == int(label[2:])


def test_driver_too_old_for_every_build(bare_python, site, tmp_path):
    manifest = default_manifest()
    manifest["driver_fallback"] = 1
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
    assert lines[:6] == [
        f"{DISTRIBUTION} (package pkg), merged by wheelmerge",
        "builds: cu12, cu13",
        "WHEELMERGE_CUDA_MAJOR: (not set)",
        f"cuda-bindings: {CUDA_BINDINGS['cu12']} (from its distribution metadata)",
        "driver fallback: off",
        f"selected: cu12, because cuda-bindings {CUDA_BINDINGS['cu12']} is installed "
        "(from its distribution metadata)",
    ]
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


def test_template_holds_the_manifest_line_once():
    template = TEMPLATE.read_text()
    compile(template, str(TEMPLATE), "exec")
    assert template.split("\n").count(MANIFEST_LINE) == 1
