"""Builds merged-package layouts for the loader tests: real C extensions and private shared
libraries per CUDA build, and the loader and rules module the merger writes for a manifest
(`wheelmerge loader MANIFEST.json`, which renders them as a merge does)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")  # ".cpython-311-x86_64-linux-gnu.so"
LABELS = ("cu12", "cu13")
DISTRIBUTION = "pkg-name"

INIT_PY = '''"""A package merged by wheelmerge."""

from __future__ import annotations

from . import _wheelmerge as _wheelmerge  # wheelmerge: selects this package's build

from ._core import build_major
'''

# Extension module NAME; with WM_RUNTIME it calls into the private library libwmrt.
EXTENSION_C = """
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *build_major(PyObject *self, PyObject *args) { return PyLong_FromLong(WM_MAJOR); }
#ifdef WM_RUNTIME
int wmrt_value(void);
static PyObject *runtime_value(PyObject *self, PyObject *args) {
    return PyLong_FromLong(wmrt_value());
}
#endif
static PyMethodDef methods[] = {
    {"build_major", build_major, METH_NOARGS, NULL},
#ifdef WM_RUNTIME
    {"runtime_value", runtime_value, METH_NOARGS, NULL},
#endif
    {NULL, NULL, 0, NULL},
};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "NAME", NULL, -1, methods};
PyMODINIT_FUNC PyInit_NAME(void) { return PyModule_Create(&module); }
"""
# libwmrt needs libwmdep, so the preload order matters.
WMDEP_C = "int wmdep_value(void) { return WM_MAJOR * 100; }\n"
WMRT_C = "int wmdep_value(void);\nint wmrt_value(void) { return wmdep_value() + 1; }\n"
# A stand-in CUDA driver: reports DRIVER_VERSION (or fails with DRIVER_STATUS), and aborts the
# process if cuInit is called. Without WITH_VERSION it lacks cuDriverGetVersion altogether.
LIBCUDA_C = """
#include <stdlib.h>
#ifndef DRIVER_STATUS
#define DRIVER_STATUS 0
#endif
#ifdef WITH_VERSION
int cuDriverGetVersion(int *version) { *version = DRIVER_VERSION; return DRIVER_STATUS; }
#endif
int cuInit(unsigned int flags) { abort(); }
"""


def render_loader(manifest: dict, directory: Path) -> Path:
    """Writes the loader and rules module of MANIFEST into DIRECTORY, as a merge does."""
    source = directory / "_wheelmerge.manifest.json"
    # Tests that drop a build from "variants" leave its sections: the merger would not write them.
    manifest = {"gpu_code": {}, **manifest}
    manifest = {key: {label: value.get(label, [] if key in ("extras", "preload") else {})
                      for label in manifest["variants"]}
                if key in ("extras", "modules", "files", "preload", "build_info", "gpu_code") else value
                for key, value in manifest.items()}
    source.write_text(json.dumps(manifest))
    binary = os.environ.get("WHEELMERGE") or str(ROOT / "build" / "wheelmerge")
    result = subprocess.run([binary, "loader", str(source), "-o", str(directory)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    source.unlink()
    return directory / "_wheelmerge.py"


def compile_shared(source: str, output: Path, *, defines=(), soname=None, libs=(), libdir=None):
    """Compiles C source into a shared object with cc; links LIBS from LIBDIR without recording
    any RPATH/RUNPATH, so at run time only preloading can satisfy them."""
    src = output.with_name(output.name + ".c")
    src.write_text(source)
    command = ["cc", "-shared", "-fPIC", "-O0", "-o", str(output), str(src),
               f"-I{sysconfig.get_paths()['include']}"]
    command += [f"-D{define}" for define in defines]
    if soname:
        command.append(f"-Wl,-soname,{soname}")
    if libdir:
        # -rpath-link resolves libwmrt's own NEEDED at link time only.
        command += [f"-L{libdir}", f"-Wl,-rpath-link,{libdir}"]
    command += [f"-l{lib}" for lib in libs]
    subprocess.run(command, check=True, capture_output=True, text=True)
    return output


def build_native(directory: Path) -> Path:
    """Compiles every build's binaries into DIRECTORY/LABEL/ under their unlabelled names."""
    for label in LABELS:
        out = directory / label
        out.mkdir(parents=True)
        major = f"WM_MAJOR={label[2:]}"
        compile_shared(WMDEP_C, out / "libwmdep.so", defines=[major], soname="libwmdep.so.1")
        compile_shared(WMRT_C, out / "libwmrt.so", defines=[major], soname="libwmrt.so.1",
                       libs=["wmdep"], libdir=out)
        compile_shared(EXTENSION_C.replace("NAME", "_core"), out / "_core.so",
                       defines=[major, "WM_RUNTIME"], libs=["wmrt"], libdir=out)
        compile_shared(EXTENSION_C.replace("NAME", "_nested"), out / "_nested.so", defines=[major])
        # The labelled extension __init__ of package pkg.esub: its init function is PyInit_esub.
        compile_shared(EXTENSION_C.replace("NAME", "esub"), out / "esub.so", defines=[major])
    return directory


def build_fake_driver(directory: Path, version: int | None, status: int = 0) -> Path:
    """A directory with a libcuda.so.1 whose cuDriverGetVersion reports VERSION and returns
    STATUS (VERSION None: a libcuda.so.1 without cuDriverGetVersion), and a decoy libcuda.so
    reporting 11000 that the loader must never open. Put on LD_LIBRARY_PATH, it is found before
    any driver installed on the machine."""
    directory.mkdir(parents=True)
    defines = ([] if version is None else
               ["WITH_VERSION", f"DRIVER_VERSION={version}", f"DRIVER_STATUS={status}"])
    compile_shared(LIBCUDA_C, directory / "libcuda.so.1", defines=defines, soname="libcuda.so.1")
    compile_shared(LIBCUDA_C, directory / "libcuda.so",
                   defines=["WITH_VERSION", "DRIVER_VERSION=11000"], soname="libcuda.so")
    return directory


def build_unloadable_driver(directory: Path) -> Path:
    """A directory whose libcuda.so.1 is an empty file. On LD_LIBRARY_PATH it is found first and
    dlopen stops at it ("file too short") instead of searching further, so the driver cannot be
    loaded whether or not the machine has a real one."""
    directory.mkdir(parents=True)
    (directory / "libcuda.so.1").write_bytes(b"")
    return directory


def add_cuda_bindings(site: Path, version, *, metadata: str | None = None) -> Path:
    """Puts a stand-in cuda.bindings with __version__ VERSION (Python source of the value, e.g.
    "'13.0.0'") into SITE; cuda stays a namespace package, as installed. With METADATA, also a
    cuda_bindings dist-info whose METADATA file holds exactly that text (e.g. no Version)."""
    bindings = site / "cuda" / "bindings"
    bindings.mkdir(parents=True)
    (bindings / "__init__.py").write_text(f"__version__ = {version}\n")
    if metadata is not None:
        info = site / "cuda_bindings-0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(metadata)
    return bindings


def default_manifest(extras=LABELS) -> dict:
    """The manifest of the layout make_site builds (format 3, docs/interfaces.md). EXTRAS: the
    labels that are extras of the distribution (a wheel whose builds required different
    cuda-bindings); the others have none."""
    def for_each(make):
        return {label: make(label) for label in LABELS}

    modules = for_each(lambda label: {
        "pkg._core": f"_core.{label}{EXT_SUFFIX}",
        "pkg.sub._nested": f"sub/_nested.{label}{EXT_SUFFIX}",
        "pkg._pyvariant": f"_pyvariant.{label}.py",
        # Packages whose __init__ differs per build: Python source and an extension.
        "pkg.vsub": f"vsub/__init__.{label}.py",
        "pkg.esub": f"esub/__init__.{label}{EXT_SUFFIX}",
    })
    modules["cu13"]["pkg._extra"] = "_extra.cu13.py"  # a module only the cu13 build has
    files = for_each(lambda label: {
        f"_core{EXT_SUFFIX}": f"_core.{label}{EXT_SUFFIX}",
        f"sub/_nested{EXT_SUFFIX}": f"sub/_nested.{label}{EXT_SUFFIX}",
        "_pyvariant.py": f"_pyvariant.{label}.py",
        "kernels/x.cubin": f"kernels/x.{label}.cubin",
        "vsub/__init__.py": f"vsub/__init__.{label}.py",
        f"esub/__init__{EXT_SUFFIX}": f"esub/__init__.{label}{EXT_SUFFIX}",
    })
    files["cu13"]["_extra.py"] = "_extra.cu13.py"
    return {
        "format": 3,
        "wheelmerge": "",
        "package": "pkg",
        "distribution": DISTRIBUTION,
        "selector": "cuda",
        "variants": list(LABELS),
        "sources": list(SOURCES["cuda-bindings"]),
        "extras": for_each(lambda label: [label] if label in extras else []),
        "modules": modules,
        "files": files,
        # Dependencies first: libwmrt needs libwmdep.
        "preload": for_each(lambda label: [f"../pkg.libs/libwmdep.{label}.so.1",
                                           f"../pkg.libs/libwmrt.{label}.so.1"]),
        "build_info": {"cu12": {"cuda": "12.9.1"}, "cu13": {"cuda": "13.0.2"}},
    }


# The orders of selection sources a cuda manifest may have: builds that use cuda-bindings, the
# same merged with --driver-fallback, and builds that do not use cuda-bindings (CuPy).
SOURCES = {
    "cuda-bindings": ("cuda-bindings",),
    "driver-fallback": ("cuda-bindings", "runtime", "driver"),
    "no cuda-bindings": ("runtime", "driver"),
}


def make_site(site: Path, native: Path, manifest: dict) -> Path:
    """A site directory holding pkg as a merged wheel installs it, with MANIFEST's loader."""
    package = site / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "kernels").mkdir()
    (site / "pkg.libs").mkdir()
    (package / "__init__.py").write_text(INIT_PY)
    render_loader(manifest, package)
    (package / "sub" / "__init__.py").write_text("")
    (package / "plain.py").write_text("VALUE = 'plain'\n")
    (package / "_extra.cu13.py").write_text("BUILD = 'cu13'\n")
    # Modules shared by every build inside the packages whose __init__ is per build.
    (package / "vsub").mkdir()
    (package / "vsub" / "shared.py").write_text(
        "from . import BUILD\n\nVALUE = 'shared with ' + BUILD\n")
    (package / "esub").mkdir()
    (package / "esub" / "helper.py").write_text(
        "from . import build_major\n\nVALUE = 'helper of ' + str(build_major())\n")
    for label in LABELS:
        built = native / label
        shutil.copy(built / "_core.so", package / f"_core.{label}{EXT_SUFFIX}")
        shutil.copy(built / "_nested.so", package / "sub" / f"_nested.{label}{EXT_SUFFIX}")
        shutil.copy(built / "libwmdep.so", site / "pkg.libs" / f"libwmdep.{label}.so.1")
        shutil.copy(built / "libwmrt.so", site / "pkg.libs" / f"libwmrt.{label}.so.1")
        (package / f"_pyvariant.{label}.py").write_text(f"BUILD = {label!r}\n")
        (package / "vsub" / f"__init__.{label}.py").write_text(f"BUILD = {label!r}\n")
        shutil.copy(built / "esub.so", package / "esub" / f"__init__.{label}{EXT_SUFFIX}")
        (package / "kernels" / f"x.{label}.cubin").write_text(f"{label} kernel\n")
    return site


def run_python(python: Path, site: Path, *args: str, env: dict | None = None):
    """Runs PYTHON ARGS with only SITE added to its path and a minimal environment."""
    environment = {"PATH": os.environ["PATH"], "PYTHONPATH": str(site), "PYTHONNOUSERSITE": "1",
                   "LANG": "C.UTF-8"}
    environment.update(env or {})
    return subprocess.run([str(python), *args], check=False, cwd=site.parent, env=environment,
                          capture_output=True, text=True, timeout=60)
