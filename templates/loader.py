"""Selects which CUDA build of this package to import (written by wheelmerge).

This wheel holds one build per CUDA major version; each build's files carry their label in the
name (``_core.cu12.cpython-311-x86_64-linux-gnu.so``) so that no build shadows another. A finder
at the front of ``sys.meta_path`` maps this package's variant modules to the selected build's
files. Selection, first that applies: ``WHEELMERGE_CUDA_MAJOR`` (``13`` or ``cu13``), the major
version of the installed cuda-bindings, and, when the wheel was merged with
``--driver-fallback``, the newest build the CUDA driver supports.

``python -m <package>._wheelmerge`` prints what was detected and which build is used.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import threading

# wheelmerge replaces this line with the package's manifest (ASCII-only JSON).
_MANIFEST_JSON = r"""{}"""

_MANIFEST = json.loads(_MANIFEST_JSON)
_DISTRIBUTION = _MANIFEST["distribution"]
_ENV_VAR = "WHEELMERGE_CUDA_MAJOR"
# Manifest paths are relative to the package directory, which holds this file.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_VARIANT_MODULES = frozenset(name for modules in _MANIFEST["modules"].values() for name in modules)
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)

# Selection and preloading run once per process, in whichever thread first imports a variant
# module.
_lock = threading.Lock()
_selection: tuple[str, str] | None = None  # (label, how it was chosen)
_preloaded: list[ctypes.CDLL] = []  # kept referenced: the libraries must stay loaded
_preloaded_label: str | None = None


class SelectionError(ImportError):
    """No build of this package fits this environment."""


class PreloadError(ImportError):
    """A private shared library of the selected build failed to load."""


def variants() -> list[str]:
    """The labels of the builds in this wheel, e.g. ``["cu12", "cu13"]``."""
    return list(_MANIFEST["variants"])


def selected() -> str:
    """The label of the build this process uses, e.g. ``"cu13"``; selects it on first use."""
    return _select()[0]


def path(relative: str) -> str:
    """The absolute path of the selected build's copy of a variant file.

    ``relative`` is the file's original path inside the package, e.g. ``"kernels/x.cubin"``.
    """
    label = selected()
    files = _MANIFEST["files"].get(label, {})
    if relative not in files:
        raise LookupError(
            f"{relative!r} is not a variant file of {_DISTRIBUTION}; "
            f"its {label} build has: {', '.join(sorted(files)) or 'none'}"
        )
    return _absolute(files[relative])


def build_info() -> dict:
    """What the merger recorded about the selected build (may be empty)."""
    return dict(_MANIFEST.get("build_info", {}).get(selected(), {}))


def diagnose() -> str:
    """A report of the builds in this wheel, what was detected and which build is selected."""
    return _diagnosis()[1]


class _VariantFinder(importlib.abc.MetaPathFinder):
    """Finds the selected build's file for each variant module; ignores every other module."""

    def __init__(self) -> None:
        # Identifies this package's finder when the loader runs again (reload, a second copy).
        self.wheelmerge_package_dir = _PACKAGE_DIR

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _VARIANT_MODULES:
            return None
        label = selected()
        stored = _MANIFEST["modules"][label].get(fullname)
        if stored is None:
            return None  # this build lacks the module: the import fails as it would without us
        _preload(label)
        origin = _absolute(stored)
        if origin.endswith(_EXTENSION_SUFFIXES):
            loader = importlib.machinery.ExtensionFileLoader(fullname, origin)
        else:
            loader = importlib.machinery.SourceFileLoader(fullname, origin)
        return importlib.util.spec_from_file_location(fullname, origin, loader=loader)


def _absolute(stored: str) -> str:
    return os.path.normpath(os.path.join(_PACKAGE_DIR, *stored.split("/")))


def _select() -> tuple[str, str]:
    global _selection
    with _lock:
        # Only success is cached: after fixing the environment, a retried import can succeed.
        if _selection is None:
            _selection = _detect()
        return _selection


def _detect() -> tuple[str, str]:
    override = os.environ.get(_ENV_VAR, "")
    if override:
        match = re.fullmatch(r"(?:cu)?(\d+)", override)
        if match is None:
            raise _selection_error(
                f"{_ENV_VAR}={override!r} is not a CUDA major version (expected e.g. 13 or cu13)"
            )
        return _exact(int(match.group(1)), f"{_ENV_VAR}={override} is set")

    version, source = _cuda_bindings()
    if version is not None:
        how = f"cuda-bindings {version} is installed ({source})"
        match = re.match(r"\d+", version)
        if match is None:
            raise _selection_error(f"{how}, but its version has no major number")
        return _exact(int(match.group()), how)

    found = f"no cuda-bindings found: {source}"
    if _MANIFEST["driver_fallback"] != 1:
        raise _selection_error(found)
    driver, how = _driver_major()
    if driver is None:
        raise _selection_error(f"{found}; {how}")
    # A driver runs builds for its own and older CUDA majors, so take the newest it supports.
    supported = [label for label in variants() if _major(label) <= driver]
    if not supported:
        raise _selection_error(f"{found}; {how}, older than every build")
    return max(supported, key=_major), f"{found}; {how}"


def _major(label: str) -> int:
    return int(label[2:])  # labels are "cu" and the CUDA major


def _exact(major: int, how: str) -> tuple[str, str]:
    label = f"cu{major}"
    if label not in variants():
        raise _selection_error(f"{how}, which needs a {label} build")
    return label, how


def _cuda_bindings() -> tuple[str | None, str]:
    """cuda-bindings' version and where it came from, or None and why it was not found."""
    # Two spellings: older importlib.metadata does not normalize the name.
    for name in ("cuda-bindings", "cuda_bindings"):
        try:
            return importlib.metadata.version(name), "from its distribution metadata"
        except importlib.metadata.PackageNotFoundError:
            pass
    try:
        bindings = importlib.import_module("cuda.bindings")
    except Exception as error:  # a broken install can fail with more than ImportError
        return None, (
            "not in distribution metadata, "
            f"`import cuda.bindings` failed ({type(error).__name__}: {error})"
        )
    version = getattr(bindings, "__version__", None)
    if version is None:
        return None, "not in distribution metadata, cuda.bindings has no __version__"
    return str(version), "from cuda.bindings.__version__"


def _driver_major() -> tuple[int | None, str]:
    """The CUDA major the driver supports, or None and why it is unknown."""
    try:
        # The driver's SONAME: "libcuda.so" only comes with development packages, or is the
        # toolkit's stub library, which reports no real driver.
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        return None, f"the CUDA driver libcuda.so.1 could not be loaded ({error})"
    version = ctypes.c_int()
    # Needs no cuInit, so no CUDA context is created just to pick a build.
    status = libcuda.cuDriverGetVersion(ctypes.byref(version))
    if status != 0:
        return None, f"the CUDA driver's cuDriverGetVersion failed (CUresult {status})"
    major, minor = divmod(version.value, 1000)
    return major, f"the CUDA driver (libcuda.so.1) supports CUDA {major}.{minor // 10}"


def _selection_error(found: str) -> SelectionError:
    labels = variants()
    newest = max(labels, key=_major)
    fixes = "".join(f'    pip install "{_DISTRIBUTION}[{label}]"\n' for label in labels)
    return SelectionError(
        f"{_DISTRIBUTION}: cannot select a CUDA build: {found}.\n"
        f"This wheel of {_DISTRIBUTION} has builds for {', '.join(labels)}. "
        "Install the cuda-bindings of one of them:\n"
        f"{fixes}"
        "or choose a build explicitly:\n"
        f"    export {_ENV_VAR}={_major(newest)}"
    )


def _preload(label: str) -> None:
    """Loads the build's private libraries by full path, dependencies first, so that its
    extensions' DT_NEEDED entries match them by SONAME (they are not on any search path)."""
    global _preloaded_label
    with _lock:
        if _preloaded_label == label:
            return
        for stored in _MANIFEST["preload"].get(label, []):
            library = _absolute(stored)
            try:
                _preloaded.append(ctypes.CDLL(library))
            except OSError as error:
                raise PreloadError(
                    f"{_DISTRIBUTION}: cannot load {library}, a private library of its {label} "
                    f"build: {error}"
                ) from error
        _preloaded_label = label


def _diagnosis() -> tuple[bool, str]:
    version, source = _cuda_bindings()
    lines = [
        f"{_DISTRIBUTION} (package {_MANIFEST['package']}), merged by wheelmerge",
        f"builds: {', '.join(variants())}",
        f"{_ENV_VAR}: {os.environ.get(_ENV_VAR) or '(not set)'}",
        f"cuda-bindings: {version} ({source})" if version else f"cuda-bindings: {source}",
        f"driver fallback: {'on' if _MANIFEST['driver_fallback'] == 1 else 'off'}",
    ]
    try:
        label, how = _select()
        _preload(label)
    except ImportError as error:
        ok = False
        lines += ["selection failed:"] + [f"    {line}" for line in str(error).splitlines()]
    else:
        ok = True
        lines.append(f"selected: {label}, because {how}")
    for label in variants():
        lines.append(f"{label}{' (selected)' if ok and label == selected() else ''}:")
        for name, stored in sorted(_MANIFEST["modules"].get(label, {}).items()):
            lines.append(f"    module {name} -> {_described(stored)}")
        for original, stored in sorted(_MANIFEST["files"].get(label, {}).items()):
            lines.append(f"    file {original} -> {_described(stored)}")
        for stored in _MANIFEST["preload"].get(label, []):
            lines.append(f"    preload {_described(stored)}")
    return ok, "\n".join(lines)


def _described(stored: str) -> str:
    return stored if os.path.exists(_absolute(stored)) else f"{stored} (missing)"


def _started_as_main() -> bool:
    """Whether this process is ``python -m <this module>`` and runpy is importing the parent
    package, whose ``__init__`` imports this module before its variant modules."""
    if sys.argv[:1] != ["-m"]:  # runpy sets argv[0] to "-m" while it imports the parents
        return False
    # Python 3.9 has no sys.orig_argv and cannot tell which module -m runs: it keeps the
    # ordinary behaviour (an ImportError when no build fits).
    command = " ".join(getattr(sys, "orig_argv", [])[1:])
    return re.search(rf"(?:^| )-[A-Za-z]*m ?{re.escape(__name__)}(?: |$)", command) is not None


def _main() -> int:
    ok, report = _diagnosis()
    print(report)
    return 0 if ok else 1


if not any(
    getattr(finder, "wheelmerge_package_dir", None) == _PACKAGE_DIR for finder in sys.meta_path
):
    sys.meta_path.insert(0, _VariantFinder())

# Under `python -m`, report before the package's __init__ imports a variant module, so that the
# report also comes when no build fits (the import would fail before runpy ran this module).
if __name__ == "__main__" or _started_as_main():
    sys.exit(_main())
