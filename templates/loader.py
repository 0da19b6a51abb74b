"""Selects which build of this package to import (written by wheelmerge).

This wheel holds several builds of one package; each build's files carry their label in the
name (``_core.cu12.cpython-311-x86_64-linux-gnu.so``) so that no build shadows another. A finder
at the front of ``sys.meta_path`` maps this package's variant modules to the selected build's
files. The manifest's selector says what decides:

- ``cuda`` (labels ``cu12``, ``cu13``): ``WHEELMERGE_VARIANT`` or ``WHEELMERGE_CUDA_MAJOR``
  (refused when it contradicts the installed cuda-bindings unless
  ``WHEELMERGE_IGNORE_CUDA_BINDINGS=1``), the major version of the installed cuda-bindings, and,
  when the wheel was merged with ``--driver-fallback``, the installed CUDA runtime wheels' major,
  then the newest build the CUDA driver supports;
- ``torch`` (labels ``torch210_cu12``): the installed torch's major.minor and CUDA major;
- ``cpu`` (labels ``x86_64_v1`` to ``x86_64_v4``): the highest x86-64 psABI level the running
  CPU and OS support among the builds.

The first selection holds for the rest of the process, across reloads and copies of this module.
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
# Wheels merged before there were other selectors have no "selector": they are CUDA builds.
_SELECTOR = _MANIFEST.get("selector", "cuda")
# What the builds differ in, for messages: "cannot select a CUDA build".
_WHAT = {"cuda": "CUDA", "torch": "torch", "cpu": "CPU"}.get(_SELECTOR, _SELECTOR)
_ENV_VAR = "WHEELMERGE_CUDA_MAJOR"
# Names the build to use by its label, for every selector.
_VARIANT_VAR = "WHEELMERGE_VARIANT"
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
# The CUDA runtime component wheels and the CUDA major each holds (None: its version's major).
_CUDA_RUNTIME_WHEELS = (("nvidia-cuda-runtime-cu12", 12), ("nvidia-cuda-runtime", None))


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
            f"cannot select a {_WHAT} build: detection failed ({type(error).__name__}: {error})",
            *_general_fixes(),
        ) from error


def _detect_from_environment() -> tuple[str, str]:
    detect = {"cuda": _detect_cuda, "torch": _detect_torch, "cpu": _detect_cpu}.get(_SELECTOR)
    if detect is None:
        raise _error(f"cannot select a build: this loader does not know the selector "
                     f"{_SELECTOR!r} (it knows cuda, torch and cpu)",
                     ("Reinstall it", [_reinstall_command()]))
    return detect()


def _general_fixes() -> list[tuple[str, list[str]]]:
    """The fixes an error offers when no more is known than the selector."""
    if _SELECTOR == "cuda":
        return [_install_fixes(variants()), _override_fix(_cuda_major(_newest()))]
    if _SELECTOR == "torch":
        return [_torch_fix(variants())]
    return [("choose a build explicitly", [f"export {_VARIANT_VAR}={variants()[0]}"])]


# --- labels ------------------------------------------------------------------------------------
# The three forms of docs/loader.md, "Selectors and labels"; None for text of another form.

def _cuda_label(label: str) -> int | None:
    """"cu12" -> 12: "cu" and the CUDA major, one to three digits without a leading zero."""
    match = re.fullmatch(r"cu([1-9][0-9]{0,2})", label)
    return int(match.group(1)) if match else None


def _torch_label(label: str) -> tuple[int, int, int] | None:
    """"torch210_cu12" -> (2, 10, 12): torch 2.10 built with CUDA 12. The torch major is one
    digit, the minor one or two (no leading zero), then "_cu" and the CUDA major."""
    match = re.fullmatch(r"torch([1-9])(0|[1-9][0-9]?)_cu([1-9][0-9]{0,2})", label)
    return tuple(int(part) for part in match.groups()) if match else None


def _cpu_label(label: str) -> int | None:
    """"x86_64_v3" -> 3: the x86-64 psABI level, 1 to 4."""
    match = re.fullmatch(r"x86_64_v([1-4])", label)
    return int(match.group(1)) if match else None


def _cuda_major(label: str) -> int:
    return _cuda_label(label)  # manifest labels of the cuda selector are valid by construction


def _newest() -> str:
    return variants()[-1]  # the manifest lists builds in ascending order


def _major_of(version: str) -> int | None:
    """The major number a version starts with, or None when it has none."""
    match = re.match(r"\d+", version.strip())
    return int(match.group()) if match else None


def _major_minor(version: str) -> tuple[int, int] | None:
    """(major, minor) a version starts with ("2.10.0+cu128" -> (2, 10)), or None."""
    match = re.match(r"(\d+)\.(\d+)", version.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def _variant_override() -> tuple[str, str] | None:
    """(label, how) when WHEELMERGE_VARIANT names a build of this wheel; None when it is unset.
    Raises SelectionError when it names none."""
    value = os.environ.get(_VARIANT_VAR, "")
    if not value.strip():
        return None
    label = value.strip()
    if label not in variants():
        raise _error(
            f"cannot select a {_WHAT} build: {_VARIANT_VAR}={value!r} names no build of this wheel",
            (f"Set {_VARIANT_VAR} to one of them", [f"export {_VARIANT_VAR}={_suggested()}"]),
            ("unset it to select automatically", [f"unset {_VARIANT_VAR}"]))
    return label, f"{_VARIANT_VAR}={value} is set"


def _suggested() -> str:
    """The build an override fix proposes: the one that fits the environment, if any."""
    if _SELECTOR == "cuda":
        version, _ = _cuda_bindings()
        installed = f"cu{_major_of(version)}" if version is not None else None
        return installed if installed in variants() else _newest()
    if _SELECTOR == "cpu":
        level = _cpu().level
        runnable = [label for label in variants() if _cpu_label(label) <= level]
        return runnable[-1] if runnable else variants()[0]
    return _newest()


# --- selector cuda -----------------------------------------------------------------------------

def _detect_cuda() -> tuple[str, str]:
    override = _cuda_override()
    if override is not None:
        return _checked_override(*override)

    version, source = _cuda_bindings()
    if version is not None:
        how = f"cuda-bindings {version} is installed ({source})"
        label = f"cu{_major_of(version)}"
        if label not in variants():
            raise _error(f"cannot select a CUDA build: {how}, which needs a {label} build",
                         _install_fixes(variants()))
        _check_floor(label, version, source)
        return label, how

    found = f"no cuda-bindings found: {source}"
    unfit = [_install_fixes(variants()), _override_fix(_cuda_major(_newest()))]
    if _MANIFEST["driver_fallback"] != 1:
        raise _error(f"cannot select a CUDA build: {found}", *unfit)
    # Packages that do not use cuda-bindings (CuPy) select by the CUDA runtime wheels as well.
    unfit.insert(1, ("install the CUDA runtime wheel of one of them",
                     [_runtime_command(label) for label in variants()]))
    runtime, label = _runtime_choice()
    if label is not None:
        return label, f"{found}; {runtime}"
    if runtime:
        found += f"; {runtime}"
    driver, how = _driver_major()
    if driver is None:
        raise _error(f"cannot select a CUDA build: {found}; {how}", *unfit)
    # A driver runs builds for its own and older CUDA majors, so take the newest it supports.
    supported = [label for label in variants() if _cuda_major(label) <= driver]
    if not supported:
        raise _error(f"cannot select a CUDA build: {found}; {how}, older than every build", *unfit)
    return supported[-1], f"{found}; {how}"


def _cuda_override() -> tuple[str, str, str] | None:
    """(label, how, the variable to unset) of WHEELMERGE_VARIANT or WHEELMERGE_CUDA_MAJOR, or
    None when neither is set; raises SelectionError for a malformed one or when they disagree."""
    variant = _variant_override()
    override = os.environ.get(_ENV_VAR, "")
    if not override:
        return None if variant is None else (*variant, _VARIANT_VAR)
    match = re.fullmatch(r"(?:cu)?(\d+)", override.strip())
    if match is None:
        raise _error(
            f"cannot select a CUDA build: {_ENV_VAR}={override!r} is not a CUDA major version "
            "(expected e.g. 13 or cu13)",
            *_override_fixes())
    label = f"cu{int(match.group(1))}"
    how = f"{_ENV_VAR}={override} is set"
    if variant is not None and variant[0] != label:
        raise _error(
            f"cannot select a CUDA build: {variant[1]} and {how}, and they name different builds",
            ("Unset one of them", [f"unset {_ENV_VAR}", f"unset {_VARIANT_VAR}"]))
    if label not in variants():
        raise _error(f"cannot select a CUDA build: {how}, which needs a {label} build",
                     *_override_fixes())
    return label, how, _ENV_VAR


def _checked_override(label: str, how: str, variable: str) -> tuple[str, str]:
    """The overriding LABEL, unless the installed cuda-bindings contradicts it."""
    major = _cuda_major(label)
    ignore = os.environ.get(_IGNORE_VAR, "")
    if ignore.strip().lower() in ("1", "true", "yes", "on"):
        return label, f"{how} ({_IGNORE_VAR}={ignore}: cuda-bindings not checked)"
    if ignore.strip().lower() not in ("", "0", "false", "no", "off"):
        raise _error(
            f"cannot select a CUDA build: {_IGNORE_VAR}={ignore!r} is neither 1 nor 0",
            ("Set it to 1 to let {0} choose a build whatever cuda-bindings is installed, or "
             "unset it".format(variable), [f"export {_IGNORE_VAR}=1", f"unset {_IGNORE_VAR}"]))
    # With no cuda-bindings installed, the override alone decides.
    version, source = _cuda_bindings()
    if version is None:
        return label, how
    if _major_of(version) == major:
        _check_floor(label, version, source)
        return label, how
    installed = f"cu{_major_of(version)}"
    fixes = [(f"Install the cuda-bindings its {label} build needs", _install_commands([label]))]
    if installed in variants():
        fixes.append((f"use the {installed} build, which matches the installed cuda-bindings",
                      [f"unset {variable}"]))
    fixes.append((f"if the {label} build works with cuda-bindings {version}, skip this check",
                  [f"export {_IGNORE_VAR}=1"]))
    raise _error(
        f"cannot select a CUDA build: {how}, but cuda-bindings {version} is installed "
        f"({source}); the {label} build needs cuda-bindings {major}",
        *fixes)


def _check_floor(label: str, version: str, source: str) -> None:
    """Refuses cuda-bindings VERSION when LABEL's build was compiled against a newer minor of
    the same major (its build_info "cuda_bindings"): the build's extensions may call what the
    older minor lacks."""
    floor = _MANIFEST.get("build_info", {}).get(label, {}).get("cuda_bindings")
    needed = _major_minor(floor) if isinstance(floor, str) else None
    found = _major_minor(version)
    if needed is None or found is None or found[0] != needed[0] or found[1] >= needed[1]:
        return
    major, minor = needed
    raise _error(
        f"cannot select a CUDA build: the {label} build was compiled against cuda-bindings "
        f"{floor} and needs {major}.{minor} or newer, but cuda-bindings {version} is installed "
        f"({source})",
        (f"Install cuda-bindings {major}.{minor} or a newer {major}.x",
         [f'pip install "cuda-bindings>={major}.{minor},<{major + 1}"']))


def _cuda_runtimes() -> tuple[list[tuple[str, str, int]], list[str]]:
    """The installed CUDA runtime component wheels as (distribution, version, CUDA major), and
    what went wrong reading them. Never raises."""
    found, problems = [], []
    for name, major in _CUDA_RUNTIME_WHEELS:
        try:
            version = _distribution_version(name)
        except Exception as error:
            problems.append(f"reading {name}'s metadata failed ({type(error).__name__}: {error})")
            continue
        if version is None:
            continue
        runs = major if major is not None else _major_of(version)
        if runs is None:
            problems.append(f"{name} {version} has no major number")
            continue
        found.append((name, version, runs))
    return found, problems


def _distribution_version(name: str) -> str | None:
    """The installed version of distribution NAME, or None when it is not installed."""
    # Two spellings: older importlib.metadata does not normalize the name.
    for spelling in (name, name.replace("-", "_")):
        try:
            version = importlib.metadata.version(spelling)
        except importlib.metadata.PackageNotFoundError:
            continue
        return str(version).strip() if version else None
    return None


def _runtime_choice() -> tuple[str, str | None]:
    """(what the CUDA runtime wheels say, the build they select or None). The first is empty
    when none is installed, so the driver's reason then follows cuda-bindings' alone."""
    found, problems = _cuda_runtimes()
    majors = sorted({major for _, _, major in found})
    wheels = ", ".join(f"{name} {version}" for name, version, _ in found)
    if len(majors) > 1:
        said = (f"CUDA runtime wheels of more than one CUDA major are installed ({wheels}), so "
                "they select no build")
    elif majors and f"cu{majors[0]}" not in variants():
        said = (f"the CUDA runtime wheel {wheels} is installed, but this wheel has no "
                f"cu{majors[0]} build")
    elif majors:
        return f"the CUDA runtime wheel {wheels} is installed", f"cu{majors[0]}"
    else:
        said = ""
    return "; ".join(filter(None, [said] + problems)), None


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
            else f'pip install "cuda-bindings=={_cuda_major(label)}.*"' for label in labels]


def _runtime_command(label: str) -> str:
    """The command that installs the CUDA runtime component wheel of a cuNN build."""
    major = _cuda_major(label)
    # NVIDIA's wheels are named per major up to 12, and versioned by major from 13 on.
    return (f'pip install "nvidia-cuda-runtime-cu{major}"' if major <= 12
            else f'pip install "nvidia-cuda-runtime=={major}.*"')


def _install_fixes(labels) -> tuple[str, list[str]]:
    return "Install the cuda-bindings of one of them", _install_commands(labels)


def _override_fix(major: int) -> tuple[str, list[str]]:
    return "choose a build explicitly", [f"export {_ENV_VAR}={major}"]


def _override_fixes() -> list[tuple[str, list[str]]]:
    """Fixes for an override that names no build: name one, or let cuda-bindings decide."""
    major = _cuda_major(_suggested())
    return [(f"Set {_ENV_VAR} to the CUDA major of one of them", [f"export {_ENV_VAR}={major}"]),
            ("unset it to select by the installed cuda-bindings", [f"unset {_ENV_VAR}"])]


# --- selector torch ----------------------------------------------------------------------------

def _detect_torch() -> tuple[str, str]:
    override = _variant_override()
    found = _torch()
    if found.version is None:
        needs = f"the {override[0]} build" if override else "every build"
        raise _error(f"cannot select a torch build: {found.why}, and {needs} needs torch",
                     _torch_fix([override[0]] if override else variants()))
    fitting = [label for label in variants() if _torch_fits(label, found)]
    if override is not None:
        label, how = override
        if label in fitting:
            return label, f"{how}, and {found.described} is installed"
        fixes = [_torch_fix([label])]
        if fitting:
            fixes.append((f"use the {fitting[-1]} build, which fits the installed torch",
                          [f"unset {_VARIANT_VAR}"]))
        raise _error(f"cannot select a torch build: {how}, but {found.described} is installed; "
                     f"the {label} build needs {_torch_needs(label)}", *fixes)
    if not fitting:
        raise _error(f"cannot select a torch build: {found.described} is installed, and no "
                     "build was compiled for it", _torch_fix(variants()))
    return fitting[-1], f"{found.described} is installed"


def _torch() -> types.SimpleNamespace:
    """The installed torch: version (None when it cannot be imported, with why), cuda
    (torch.version.cuda; None for a CPU-only torch) and a description. Imports torch, as every
    build needs it loaded before its extensions. Never raises."""
    try:
        torch = importlib.import_module("torch")
    except ModuleNotFoundError as error:
        if error.name != "torch":
            return _no_torch(f"`import torch` failed ({type(error).__name__}: {error})")
        return _no_torch(f"torch is not installed ({error})")
    except BaseException as error:  # a broken torch can fail with anything, SystemExit included
        if isinstance(error, KeyboardInterrupt):
            raise
        return _no_torch(f"`import torch` failed ({type(error).__name__}: {error})")
    try:
        version = str(torch.__version__).strip()
        cuda = getattr(getattr(torch, "version", None), "cuda", None)
        cuda = None if cuda is None else str(cuda).strip()
    except Exception as error:
        return _no_torch(f"reading torch's version failed ({type(error).__name__}: {error})")
    built = f"built with CUDA {cuda}" if cuda else "CPU-only: torch.version.cuda is None"
    return types.SimpleNamespace(version=version, cuda=cuda, why=None,
                                 described=f"torch {version} ({built})")


def _no_torch(why: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(version=None, cuda=None, why=why, described=why)


def _torch_fits(label: str, found: types.SimpleNamespace) -> bool:
    """Whether LABEL's build runs with torch FOUND: the same torch major.minor (the C++ ABI of
    torch changes between minors) and the same CUDA major. No build fits a CPU-only torch."""
    major, minor, cuda_major = _torch_label(label)
    return (found.cuda is not None and _major_minor(found.version) == (major, minor)
            and _major_of(found.cuda) == cuda_major)


def _torch_needs(label: str) -> str:
    """"torch 2.10 built with CUDA 12" for torch210_cu12."""
    major, minor, cuda_major = _torch_label(label)
    return f"torch {major}.{minor} built with CUDA {cuda_major}"


def _torch_fix(labels) -> tuple[str, list[str]]:
    """Installing the torch of each of LABELS. The package index has one CUDA build of each
    torch; where the build recorded which CUDA its torch had (build_info "torch_cuda"),
    PyTorch's own index for that CUDA is named as well."""
    commands = []
    for label in labels:
        major, minor, cuda_major = _torch_label(label)
        install = f'pip install "torch=={major}.{minor}.*"'
        commands.append(f"{install}  # {label}: {_torch_needs(label)}")
        torch_cuda = _MANIFEST.get("build_info", {}).get(label, {}).get("torch_cuda", "")
        recorded = _major_minor(torch_cuda) if isinstance(torch_cuda, str) else None
        if recorded is not None and recorded[0] == cuda_major:
            commands.append(f"{install} --index-url https://download.pytorch.org/whl/"
                            f"cu{recorded[0]}{recorded[1]}  # the same with CUDA "
                            f"{recorded[0]}.{recorded[1]}, which {label} was built with")
    which = "it was" if len(labels) == 1 else "one of them was"
    return (f"Install the torch {which} built for (its torch.version.cuda must be of the CUDA "
            "major the label names)", commands)


# --- selector cpu ------------------------------------------------------------------------------

# The x86-64 psABI levels above the baseline: what each adds, as (name, CPUID leaf, register
# index in (EAX, EBX, ECX, EDX), bit, the /proc/cpuinfo flag). Every level includes the ones below.
_CPU_FEATURES = {
    2: (("CMPXCHG16B", 1, 2, 13, "cx16"), ("LAHF-SAHF", 0x80000001, 2, 0, "lahf_lm"),
        ("POPCNT", 1, 2, 23, "popcnt"), ("SSE3", 1, 2, 0, "pni"), ("SSE4_1", 1, 2, 19, "sse4_1"),
        ("SSE4_2", 1, 2, 20, "sse4_2"), ("SSSE3", 1, 2, 9, "ssse3")),
    3: (("AVX", 1, 2, 28, "avx"), ("AVX2", 7, 1, 5, "avx2"), ("BMI1", 7, 1, 3, "bmi1"),
        ("BMI2", 7, 1, 8, "bmi2"), ("F16C", 1, 2, 29, "f16c"), ("FMA", 1, 2, 12, "fma"),
        ("LZCNT", 0x80000001, 2, 5, "abm"), ("MOVBE", 1, 2, 22, "movbe"),
        ("OSXSAVE", 1, 2, 27, "xsave")),
    4: (("AVX512F", 7, 1, 16, "avx512f"), ("AVX512BW", 7, 1, 30, "avx512bw"),
        ("AVX512CD", 7, 1, 28, "avx512cd"), ("AVX512DQ", 7, 1, 17, "avx512dq"),
        ("AVX512VL", 7, 1, 31, "avx512vl")),
}
# The register state the OS must save for a level's instructions to work: XCR0 bits.
_XCR0_BITS = {3: (("XCR0 SSE state", 1), ("XCR0 AVX state", 2)),
              4: (("XCR0 opmask state", 5), ("XCR0 ZMM_Hi256 state", 6),
                  ("XCR0 Hi16_ZMM state", 7))}
# void cpuid(uint32_t leaf /* edi */, uint32_t subleaf /* esi */, uint32_t out[4] /* rdx */):
# push rbx; mov r8, rdx; mov eax, edi; mov ecx, esi; cpuid; mov [r8], eax; mov [r8+4], ebx;
# mov [r8+8], ecx; mov [r8+12], edx; pop rbx; ret
_CPUID_CODE = bytes.fromhex("534989d089f889f10fa241890041895804418948084189500c5bc3")
# uint64_t xgetbv(uint32_t xcr /* edi */): mov ecx, edi; xgetbv; shl rdx, 32; or rax, rdx; ret
_XGETBV_CODE = bytes.fromhex("89f90f01d048c1e2204809d0c3")


def _detect_cpu() -> tuple[str, str]:
    cpu = _cpu()
    if cpu.level == 0:
        raise _error(f"cannot select a CPU build: {cpu.described}, and every build is for "
                     "x86-64", (f"Install a build of {_DISTRIBUTION} for this machine",
                                [f'pip install --force-reinstall "{_DISTRIBUTION}"']))
    runnable = [label for label in variants() if _cpu_label(label) <= cpu.level]
    override = _variant_override()
    if override is not None:
        label, how = override
        if label in runnable:
            return label, f"{how}, and {cpu.described}"
        raise _error(
            f"cannot select a CPU build: {how}, but {cpu.described}; the {label} build would "
            "stop with an illegal instruction here",
            *([("choose a build this CPU runs", [f"export {_VARIANT_VAR}={runnable[-1]}"])]
              if runnable else []),
            ("unset it to select the highest build this CPU runs", [f"unset {_VARIANT_VAR}"]))
    if not runnable:
        raise _error(f"cannot select a CPU build: {cpu.described}, below every build",
                     (f"Install a wheel of it with a build for this CPU (x86_64_v{cpu.level} or "
                      "lower)", [f'pip install --force-reinstall "{_DISTRIBUTION}"']))
    return runnable[-1], cpu.described


def _cpu() -> types.SimpleNamespace:
    """This CPU's psABI level: level (0: not x86-64), method (how it was found; None when it
    was not), missing (what the next level lacks) and a description. Never raises."""
    import platform  # only the cpu selector needs it

    machine = platform.machine()
    if machine.lower() not in ("x86_64", "amd64"):
        return types.SimpleNamespace(level=0, method=None, missing=[],
                                     described=f"platform.machine() is {machine!r}, not x86-64")
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return types.SimpleNamespace(level=0, method=None, missing=[],
                                     described="this Python is 32-bit, not x86-64")
    try:
        present = _cpuid_features()
        method = "CPUID and XGETBV"
    except Exception as error:
        why = f"{type(error).__name__}: {error}"
        try:
            present = _cpuinfo_features()
            method = f"/proc/cpuinfo flags; CPUID could not be run: {why}"
        except Exception as second:
            # Every x86-64 CPU runs the baseline; nothing above it is certain.
            return types.SimpleNamespace(
                level=1, method=None, missing=[], described=(
                    f"this CPU's level could not be detected (CPUID: {why}; /proc/cpuinfo: "
                    f"{type(second).__name__}: {second}), so only x86-64-v1 is certain"))
    level, missing = 1, []
    for candidate in (2, 3, 4):
        needed = [name for name, *_ in _CPU_FEATURES[candidate]]
        needed += [name for name, _ in _XCR0_BITS.get(candidate, ())]
        missing = [name for name in needed if name not in present]
        if missing:
            break
        level = candidate
    return types.SimpleNamespace(
        level=level, method=method, missing=missing,
        described=f"this CPU supports x86-64-v{level} (detected with {method})")


def _cpuid_features() -> set[str]:
    """The level features this CPU has and the OS enables, by executing CPUID and XGETBV."""
    registers = {}
    with _MachineCode(_CPUID_CODE + _XGETBV_CODE) as address:
        cpuid = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32,
                                 ctypes.POINTER(ctypes.c_uint32 * 4))(address)
        xgetbv = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint32)(address + len(_CPUID_CODE))

        def query(leaf):
            out = (ctypes.c_uint32 * 4)()
            cpuid(leaf, 0, ctypes.byref(out))
            return tuple(out)

        highest = query(0)[0]
        highest_extended = query(0x80000000)[0]
        for leaf in (1, 7, 0x80000001):
            available = highest_extended if leaf >= 0x80000000 else highest
            registers[leaf] = query(leaf) if leaf <= available else (0, 0, 0, 0)
        present = {name for features in _CPU_FEATURES.values()
                   for name, leaf, register, bit, _ in features
                   if registers[leaf][register] >> bit & 1}
        # XGETBV raises #UD unless the OS set CR4.OSXSAVE, which CPUID reports as OSXSAVE.
        xcr0 = xgetbv(0) if "OSXSAVE" in present else 0
    present.update(name for bits in _XCR0_BITS.values() for name, bit in bits if xcr0 >> bit & 1)
    return present


class _MachineCode:
    """An anonymous page holding CODE, made executable (never writable and executable at
    once); its address while in the with block, unmapped after."""

    def __init__(self, code: bytes) -> None:
        self.code = code

    def __enter__(self) -> int:
        import mmap  # only the cpu selector needs it

        libc = ctypes.CDLL(None, use_errno=True)
        self.mmap, self.mprotect, self.munmap = libc.mmap, libc.mprotect, libc.munmap
        self.mmap.restype = ctypes.c_void_p
        self.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        self.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.size = mmap.PAGESIZE
        address = self.mmap(None, self.size, mmap.PROT_READ | mmap.PROT_WRITE,
                            mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
        if address is None or address == ctypes.c_void_p(-1).value:
            raise _os_error("mmap")
        self.address = address
        ctypes.memmove(address, self.code, len(self.code))
        # Hardened kernels (SELinux execmem, PaX) refuse this.
        if self.mprotect(address, self.size, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
            error = _os_error("mprotect(PROT_EXEC)")
            self.munmap(address, self.size)
            raise error
        return address

    def __exit__(self, *exc) -> None:
        self.munmap(self.address, self.size)


def _os_error(call: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{call} failed: {os.strerror(number)}")


def _cpuinfo_features() -> set[str]:
    """The level features /proc/cpuinfo lists for the first CPU. Linux clears the flags of
    instructions whose register state it does not enable, so they stand for XCR0 as well."""
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            if key.strip() == "flags":
                flags = set(value.split())
                break
        else:
            raise LookupError("/proc/cpuinfo has no flags line")
    present = {name for features in _CPU_FEATURES.values()
               for name, _, _, _, flag in features if flag in flags}
    present.update(name for level, bits in _XCR0_BITS.items() for name, _ in bits
                   if all(feature[0] in present for feature in _CPU_FEATURES[level]))
    return present


def _error(problem: str, *fixes: tuple[str, list[str]], kind=SelectionError,
           **attributes) -> ImportError:
    """KIND with the distribution, PROBLEM (what was detected), the builds and the FIXES;
    ATTRIBUTES: ImportError's name and path."""
    text = (f"{_DISTRIBUTION}: {problem}.\n"
            f"This wheel of {_DISTRIBUTION} has builds for {', '.join(variants())}.")
    for i, (intro, commands) in enumerate(fixes):
        # The first fix starts a sentence, the others follow "or".
        text += (" " + intro[:1].upper() + intro[1:] if i == 0 else "\nor " + intro) + ":"
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
    lines = [
        f"{_DISTRIBUTION} (package {_MANIFEST['package']}), merged by wheelmerge",
        f"builds: {', '.join(variants())}",
    ]
    if _SELECTOR == "cuda":
        lines += _cuda_report()
    else:
        lines.append(f"selector: {_SELECTOR}")
        lines.append(f"{_VARIANT_VAR}: {os.environ.get(_VARIANT_VAR) or '(not set)'}")
        lines += {"torch": _torch_report, "cpu": _cpu_report}.get(_SELECTOR, list)()
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


def _cuda_report() -> list[str]:
    version, source = _cuda_bindings()
    lines = [f"{_ENV_VAR}: {os.environ.get(_ENV_VAR) or '(not set)'}"]
    if os.environ.get(_VARIANT_VAR):
        lines.append(f"{_VARIANT_VAR}: {os.environ[_VARIANT_VAR]}")
    if os.environ.get(_IGNORE_VAR):
        lines.append(f"{_IGNORE_VAR}: {os.environ[_IGNORE_VAR]}")
    lines += [
        f"cuda-bindings: {version} ({source})" if version else f"cuda-bindings: {source}",
        f"driver fallback: {'on' if _MANIFEST['driver_fallback'] == 1 else 'off'}",
    ]
    floors = [f"{label} needs cuda-bindings >= {info['cuda_bindings']}"
              for label, info in _MANIFEST.get("build_info", {}).items()
              if isinstance(info, dict) and info.get("cuda_bindings")]
    if floors:
        lines.append(f"floors: {'; '.join(floors)}")
    if _MANIFEST["driver_fallback"] == 1:
        found, problems = _cuda_runtimes()
        wheels = [f"{name} {version} (CUDA {major})" for name, version, major in found]
        lines.append("CUDA runtime wheels: " + ("; ".join(wheels + problems) or "none of "
                     + ", ".join(name for name, _ in _CUDA_RUNTIME_WHEELS) + " installed"))
        major, how = _driver_major()
        lines.append(f"CUDA driver: {how}")
    return lines


def _torch_report() -> list[str]:
    return [f"torch: {_torch().described}"]


def _cpu_report() -> list[str]:
    cpu = _cpu()
    if cpu.method is None:
        return [f"CPU: {cpu.described}"]
    lines = [f"CPU: x86-64-v{cpu.level} (detected with {cpu.method})"]
    if cpu.missing:
        lines.append(f"CPU lacks for x86-64-v{cpu.level + 1}: {', '.join(cpu.missing)}")
    return lines


def _drift(label: str) -> list[str]:
    """Lines saying that the environment now would select otherwise, if it would."""
    try:
        now, how = _detect()
    except ImportError as error:
        first = str(error).splitlines()[0]
        would = ("selecting now would fail: "
                 + first.replace(f"{_DISTRIBUTION}: cannot select a {_WHAT} build: ", "", 1))
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
