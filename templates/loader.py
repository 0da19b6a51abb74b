"""Selects which CUDA build of this package to import (written by wheelmerge).

This wheel holds one build per CUDA major version; each build's files carry their label in the
name (``_core.cu12.cpython-311-x86_64-linux-gnu.so``) so that no build shadows another. A finder
at the front of ``sys.meta_path`` maps this package's variant modules to the selected build's
files. Selection, first that applies: ``WHEELMERGE_CUDA_MAJOR`` (``13`` or ``cu13``; refused when
it contradicts the installed cuda-bindings unless ``WHEELMERGE_IGNORE_CUDA_BINDINGS=1``), the
major version of the installed cuda-bindings, and, when the wheel was merged with
``--driver-fallback``, the newest build the CUDA driver supports. The first selection holds for
the rest of the process, across reloads and copies of this module.

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
import types

# wheelmerge replaces this line with the package's manifest (ASCII-only JSON).
_MANIFEST_JSON = r"""{}"""

_MANIFEST = json.loads(_MANIFEST_JSON)
_DISTRIBUTION = _MANIFEST["distribution"]
_ENV_VAR = "WHEELMERGE_CUDA_MAJOR"
# Lets WHEELMERGE_CUDA_MAJOR select a build whose CUDA major differs from cuda-bindings'.
_IGNORE_VAR = "WHEELMERGE_IGNORE_CUDA_BINDINGS"
# Manifest paths are relative to the package directory, which holds this file.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_VARIANT_MODULES = frozenset(name for modules in _MANIFEST["modules"].values() for name in modules)
# Labels that are extras of the distribution (``pip install "dist[cu13]"`` pulls the build's
# cuda-bindings); without one, the fix is to install cuda-bindings of that major.
_EXTRAS = frozenset(_MANIFEST.get("extras") or ())
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)
# Names of CUresult codes cuDriverGetVersion returns when there is no usable driver.
_CU_RESULTS = {3: "CUDA_ERROR_NOT_INITIALIZED", 34: "CUDA_ERROR_STUB_LIBRARY",
               35: "CUDA_ERROR_INSUFFICIENT_DRIVER", 100: "CUDA_ERROR_NO_DEVICE",
               999: "CUDA_ERROR_UNKNOWN"}


class SelectionError(ImportError):
    """No build of this package fits this environment."""


class PreloadError(ImportError):
    """A private shared library of the selected build failed to load."""


def variants() -> list[str]:
    """The labels of the builds in this wheel, e.g. ``["cu12", "cu13"]``."""
    return list(_MANIFEST["variants"])


def selected() -> str:
    """The label of the build this process uses, e.g. ``"cu13"``; selects it on first use.

    Once made, the selection holds for the rest of the process."""
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
    """Finds the selected build's file for each variant module; ignores every other module.

    It also holds the process-wide state (``wheelmerge_state``), so that a reload or a second
    copy of this module finds the selection already made and the libraries already loaded."""

    def __init__(self, state: types.SimpleNamespace) -> None:
        # Identifies this package's finder when the loader runs again (reload, a second copy).
        self.wheelmerge_package_dir = _PACKAGE_DIR
        self.wheelmerge_state = state

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _VARIANT_MODULES:
            return None
        label = _prepare()
        stored = _MANIFEST["modules"].get(label, {}).get(fullname)
        if stored is None:
            return None  # this build lacks the module: the import fails as it would without us
        if not os.path.isfile(_absolute(stored)):
            # Else a Python module would fail with FileNotFoundError, which is no ImportError.
            raise _error(
                f"cannot import {fullname}: {_absolute(stored)}, its file in the {label} build, "
                f"is missing.\nThe {label} build was selected because {_select()[1]}",
                ("Reinstall it", [_reinstall_command()]),
                kind=ImportError, name=fullname, path=_absolute(stored))
        return _spec(fullname, stored)


class _PackageSourceLoader(importlib.machinery.SourceFileLoader):
    """A package's labelled ``__init__.cuNN.py``, which the stock loader takes for a module."""

    def is_package(self, fullname):
        return True


class _PackageExtensionLoader(importlib.machinery.ExtensionFileLoader):
    """A package's labelled extension ``__init__.cuNN.<suffix>``."""

    def is_package(self, fullname):
        return True


def _spec(fullname: str, stored: str):
    origin = _absolute(stored)
    extension = origin.endswith(_EXTENSION_SUFFIXES)
    # The merger maps a package to its labelled __init__ file ("pkg.sub": "sub/__init__.cu12.py").
    if os.path.basename(origin).startswith("__init__."):
        loader_class = _PackageExtensionLoader if extension else _PackageSourceLoader
        return importlib.util.spec_from_file_location(
            fullname, origin, loader=loader_class(fullname, origin),
            submodule_search_locations=[os.path.dirname(origin)])
    if extension:
        loader = importlib.machinery.ExtensionFileLoader(fullname, origin)
    else:
        loader = importlib.machinery.SourceFileLoader(fullname, origin)
    return importlib.util.spec_from_file_location(fullname, origin, loader=loader)


def _absolute(stored: str) -> str:
    return os.path.normpath(os.path.join(_PACKAGE_DIR, *stored.split("/")))


def _prepare() -> str:
    """Selects the build and loads its private libraries; the label of the build."""
    with _STATE.lock:
        label = _select()[0]
        _preload()
        return label


def _select() -> tuple[str, str]:
    state = _STATE
    with state.lock:
        # Only success is kept: after fixing the environment, a retried import can succeed. A
        # success is never replaced, so one process never mixes builds.
        if state.selection is None:
            state.selection = _detect()
        return state.selection


def _detect() -> tuple[str, str]:
    """(label, how it was chosen) from the environment as it is now; raises SelectionError."""
    try:
        return _detect_from_environment()
    except ImportError:
        raise
    except Exception as error:  # whatever goes wrong, importing a variant module sees ImportError
        raise _error(
            f"cannot select a CUDA build: detection failed ({type(error).__name__}: {error})",
            _install_fixes(variants()) + [_override_fix(_major(_newest()))],
        ) from error


def _detect_from_environment() -> tuple[str, str]:
    override = os.environ.get(_ENV_VAR, "")
    if override:
        return _from_override(override)

    version, source = _cuda_bindings()
    if version is not None:
        how = f"cuda-bindings {version} is installed ({source})"
        label = f"cu{_major_of(version)}"
        if label not in variants():
            raise _error(f"cannot select a CUDA build: {how}, which needs a {label} build",
                         _install_fixes(variants()))
        return label, how

    found = f"no cuda-bindings found: {source}"
    unfit = [_install_fixes(variants()), _override_fix(_major(_newest()))]
    if _MANIFEST["driver_fallback"] != 1:
        raise _error(f"cannot select a CUDA build: {found}", *unfit)
    driver, how = _driver_major()
    if driver is None:
        raise _error(f"cannot select a CUDA build: {found}; {how}", *unfit)
    # A driver runs builds for its own and older CUDA majors, so take the newest it supports.
    supported = [label for label in variants() if _major(label) <= driver]
    if not supported:
        raise _error(f"cannot select a CUDA build: {found}; {how}, older than every build", *unfit)
    return max(supported, key=_major), f"{found}; {how}"


def _from_override(override: str) -> tuple[str, str]:
    match = re.fullmatch(r"(?:cu)?(\d+)", override.strip())
    if match is None:
        raise _error(
            f"cannot select a CUDA build: {_ENV_VAR}={override!r} is not a CUDA major version "
            "(expected e.g. 13 or cu13)",
            *_override_fixes())
    major = int(match.group(1))
    label = f"cu{major}"
    how = f"{_ENV_VAR}={override} is set"
    if label not in variants():
        raise _error(f"cannot select a CUDA build: {how}, which needs a {label} build",
                     *_override_fixes())
    ignore = os.environ.get(_IGNORE_VAR, "")
    if ignore.strip().lower() in ("1", "true", "yes", "on"):
        return label, f"{how} ({_IGNORE_VAR}={ignore}: cuda-bindings not checked)"
    if ignore.strip().lower() not in ("", "0", "false", "no", "off"):
        raise _error(
            f"cannot select a CUDA build: {_IGNORE_VAR}={ignore!r} is neither 1 nor 0",
            ("Set it to 1 to let {0} choose a build whatever cuda-bindings is installed, or "
             "unset it".format(_ENV_VAR), [f"export {_IGNORE_VAR}=1", f"unset {_IGNORE_VAR}"]))
    # With no cuda-bindings installed, the override alone decides.
    version, source = _cuda_bindings()
    if version is None or _major_of(version) == major:
        return label, how
    installed = f"cu{_major_of(version)}"
    fixes = [(f"Install the cuda-bindings its {label} build needs", _install_commands([label]))]
    if installed in variants():
        fixes.append((f"use the {installed} build, which matches the installed cuda-bindings",
                      [f"unset {_ENV_VAR}"]))
    fixes.append((f"if the {label} build works with cuda-bindings {version}, skip this check",
                  [f"export {_IGNORE_VAR}=1"]))
    raise _error(
        f"cannot select a CUDA build: {how}, but cuda-bindings {version} is installed "
        f"({source}); the {label} build needs cuda-bindings {major}",
        *fixes)


def _major(label: str) -> int:
    return int(label[2:])  # labels are "cu" and the CUDA major


def _newest() -> str:
    return max(variants(), key=_major)


def _major_of(version: str) -> int | None:
    """The major number a version starts with, or None when it has none."""
    match = re.match(r"\d+", version.strip())
    return int(match.group()) if match else None


def _cuda_bindings() -> tuple[str | None, str]:
    """cuda-bindings' version and where it came from, or None and why it was not found.
    Never raises: detection and diagnosis rely on that."""
    try:
        return _find_cuda_bindings()
    except Exception as error:
        return None, f"detecting it failed ({type(error).__name__}: {error})"


def _find_cuda_bindings() -> tuple[str | None, str]:
    where = "not in distribution metadata"
    # Two spellings: older importlib.metadata does not normalize the name.
    for name in ("cuda-bindings", "cuda_bindings"):
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        except Exception as error:  # newer Pythons raise KeyError for metadata without Version
            where = (f"its distribution metadata is incomplete ({type(error).__name__}: "
                     f"{error})")
            break
        if isinstance(version, str) and _major_of(version) is not None:
            return version.strip(), "from its distribution metadata"
        if version is None or not str(version).strip():
            where = "its distribution metadata has no Version"
        else:
            where = f"its distribution metadata has Version {version!r}, without a major number"
        break
    try:
        bindings = importlib.import_module("cuda.bindings")
    except Exception as error:  # a broken install can fail with more than ImportError
        return None, f"{where}, `import cuda.bindings` failed ({type(error).__name__}: {error})"
    version = getattr(bindings, "__version__", None)
    if version is None:
        return None, f"{where}, cuda.bindings has no __version__"
    if _major_of(str(version)) is None:
        return None, f"{where}, cuda.bindings.__version__ {version!r} has no major number"
    if where == "not in distribution metadata":
        return str(version).strip(), "from cuda.bindings.__version__"
    return str(version).strip(), f"from cuda.bindings.__version__, as {where}"


def _driver_major() -> tuple[int | None, str]:
    """The CUDA major the driver supports, or None and why it is unknown. Never raises."""
    try:
        # The driver's SONAME: "libcuda.so" only comes with development packages, or is the
        # toolkit's stub library, which reports no real driver.
        libcuda = ctypes.CDLL("libcuda.so.1")
    except Exception as error:  # OSError, as a rule
        return None, f"the CUDA driver libcuda.so.1 could not be loaded ({error})"
    try:
        get_version = libcuda.cuDriverGetVersion
    except AttributeError as error:
        return None, f"the CUDA driver libcuda.so.1 has no cuDriverGetVersion ({error})"
    try:
        get_version.restype = ctypes.c_int
        get_version.argtypes = [ctypes.POINTER(ctypes.c_int)]
        version = ctypes.c_int(0)
        # Needs no cuInit, so no CUDA context is created just to pick a build.
        status = get_version(ctypes.byref(version))
    except Exception as error:
        return None, (f"calling cuDriverGetVersion of libcuda.so.1 failed "
                      f"({type(error).__name__}: {error})")
    if status != 0:
        name = _CU_RESULTS.get(status)
        return None, (f"the CUDA driver's cuDriverGetVersion failed (CUresult {status}"
                      f"{', ' + name if name else ''})")
    if version.value <= 0:
        return None, f"the CUDA driver's cuDriverGetVersion reported version {version.value}"
    major, minor = divmod(version.value, 1000)
    return major, f"the CUDA driver (libcuda.so.1) supports CUDA {major}.{minor // 10}"


def _install_commands(labels) -> list[str]:
    """The commands that install the cuda-bindings of each of LABELS."""
    return [f'pip install "{_DISTRIBUTION}[{label}]"' if label in _EXTRAS
            else f'pip install "cuda-bindings=={_major(label)}.*"' for label in labels]


def _install_fixes(labels) -> tuple[str, list[str]]:
    return "Install the cuda-bindings of one of them", _install_commands(labels)


def _override_fix(major: int) -> tuple[str, list[str]]:
    return "choose a build explicitly", [f"export {_ENV_VAR}={major}"]


def _override_fixes() -> list[tuple[str, list[str]]]:
    """Fixes for an override that names no build: name one, or let cuda-bindings decide."""
    version, _ = _cuda_bindings()
    installed = f"cu{_major_of(version)}" if version is not None else None
    major = _major(installed if installed in variants() else _newest())
    return [(f"Set {_ENV_VAR} to the CUDA major of one of them", [f"export {_ENV_VAR}={major}"]),
            ("unset it to select by the installed cuda-bindings", [f"unset {_ENV_VAR}"])]


def _error(problem: str, *fixes: tuple[str, list[str]], kind=SelectionError,
           **attributes) -> ImportError:
    """KIND with the distribution, PROBLEM (what was detected), the builds and the FIXES;
    ATTRIBUTES: ImportError's name and path."""
    text = (f"{_DISTRIBUTION}: {problem}.\n"
            f"This wheel of {_DISTRIBUTION} has builds for {', '.join(variants())}.")
    for i, (intro, commands) in enumerate(fixes):
        text += (" " if i == 0 else "\nor ") + intro + ":"
        text += "".join(f"\n    {command}" for command in commands)
    return kind(text, **attributes)


def _preload() -> None:
    """Loads the selected build's private libraries by full path, dependencies first, so that
    its extensions' DT_NEEDED entries match them by SONAME (they are not on any search path)."""
    state = _STATE
    with state.lock:
        label, how = _select()
        if state.preloaded == label:
            return
        for stored in _MANIFEST["preload"].get(label, []):
            library = _absolute(stored)
            if library in state.libraries:
                continue  # loaded by an earlier try that failed at a later library
            try:
                state.libraries[library] = ctypes.CDLL(library)
            except Exception as error:  # OSError, as a rule
                raise _error(
                    f"cannot load {library}, a private library of its {label} build: {error}.\n"
                    f"The {label} build was selected because {how}",
                    ("Reinstall it if files are missing or damaged", [_reinstall_command()]),
                    kind=PreloadError,
                ) from error
        state.preloaded = label


def _reinstall_command() -> str:
    try:
        version = importlib.metadata.version(_DISTRIBUTION)
    except Exception:
        version = None
    pinned = f"{_DISTRIBUTION}=={version}" if version else _DISTRIBUTION
    return f'pip install --force-reinstall --no-deps "{pinned}"'


def _diagnosis() -> tuple[bool, str]:
    state = _STATE
    version, source = _cuda_bindings()
    lines = [
        f"{_DISTRIBUTION} (package {_MANIFEST['package']}), merged by wheelmerge",
        f"builds: {', '.join(variants())}",
        f"{_ENV_VAR}: {os.environ.get(_ENV_VAR) or '(not set)'}",
    ]
    if os.environ.get(_IGNORE_VAR):
        lines.append(f"{_IGNORE_VAR}: {os.environ[_IGNORE_VAR]}")
    lines += [
        f"cuda-bindings: {version} ({source})" if version else f"cuda-bindings: {source}",
        f"driver fallback: {'on' if _MANIFEST['driver_fallback'] == 1 else 'off'}",
    ]
    kept = state.selection is not None
    try:
        label, how = _select()
        _preload()
    except ImportError as error:
        ok = False
        lines += ["selection failed:"] + [f"    {line}" for line in str(error).splitlines()]
    else:
        ok = True
        lines.append(f"selected: {label}, because {how}")
        if kept:
            lines += _drift(label)
    for build in variants():
        lines.append(f"{build}{' (selected)' if ok and build == label else ''}:")
        for name, stored in sorted(_MANIFEST["modules"].get(build, {}).items()):
            lines.append(f"    module {name} -> {_described(stored)}")
        for original, stored in sorted(_MANIFEST["files"].get(build, {}).items()):
            lines.append(f"    file {original} -> {_described(stored)}")
        for stored in _MANIFEST["preload"].get(build, []):
            lines.append(f"    preload {_described(stored)}")
    return ok, "\n".join(lines)


def _drift(label: str) -> list[str]:
    """Lines saying that the environment now would select otherwise, if it would."""
    try:
        now, how = _detect()
    except ImportError as error:
        first = str(error).splitlines()[0]
        would = ("selecting now would fail: "
                 + first.replace(f"{_DISTRIBUTION}: cannot select a CUDA build: ", "", 1))
    else:
        if now == label:
            return []
        would = f"now {how}, which would select {now}"
    return [f"kept: {label}, selected earlier in this process, which never mixes builds; {would}",
            "    (a new process selects again)"]


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


def _shared_state() -> types.SimpleNamespace:
    """This package's process-wide state, kept on its finder in ``sys.meta_path``; installs the
    finder on first run. A reload or a second copy of this module finds both there."""
    finder = next((f for f in sys.meta_path
                   if getattr(f, "wheelmerge_package_dir", None) == _PACKAGE_DIR), None)
    state = getattr(finder, "wheelmerge_state", None)
    if state is None:
        # A reload runs in the same globals: if the finder was removed meanwhile, keep the state.
        previous = globals().get("_STATE")
        if getattr(previous, "package_dir", None) == _PACKAGE_DIR:
            state = previous
        else:
            state = types.SimpleNamespace(
                package_dir=_PACKAGE_DIR,
                lock=threading.RLock(),  # selection and preloading, in whichever thread is first
                selection=None,  # (label, how it was chosen), once made
                preloaded=None,  # the label whose private libraries are all loaded
                libraries={},  # path -> ctypes.CDLL, kept referenced so they stay loaded
            )
    if finder is None:
        finder = _VariantFinder(state)
        sys.meta_path.insert(0, finder)
    finder.wheelmerge_state = state
    return state


_STATE = _shared_state()

# Under `python -m`, report before the package's __init__ imports a variant module, so that the
# report also comes when no build fits (the import would fail before runpy ran this module).
if __name__ == "__main__" or _started_as_main():
    sys.exit(_main())
