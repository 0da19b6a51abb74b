"""Selects the build of this package to import (written by wheelmerge; docs/loader.md):
the usual case here, the rest in _wheelmerge_rules.py, which is read only when needed."""

from __future__ import annotations

import os
import sys
from _thread import RLock
from importlib.machinery import (
    EXTENSION_SUFFIXES,
    ExtensionFileLoader,
    ModuleSpec,
    SourceFileLoader,
)

#: manifest

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_VARIANT_MODULES = frozenset(name for build in _MODULES.values() for name in build)


class SelectionError(ImportError):
    """No build of this package fits this environment."""


class PreloadError(ImportError):
    """A private shared library of the selected build failed to load."""


def variants() -> list[str]:
    """The labels of the builds in this wheel, e.g. ``["cu12", "cu13"]``."""
    return list(_VARIANTS)


def selected() -> str:
    """The label of the build this process uses; selects it on first use."""
    return _select()[0]


def path(relative: str) -> str:
    """The absolute path of the selected build's copy of the variant file ``relative``
    (its original path inside the package, e.g. ``"kernels/x.cubin"``)."""
    label = selected()
    if relative not in _FILES[label]:
        have = ", ".join(sorted(_FILES[label])) or "none"
        what = f"{relative!r} is not a variant file of {_DISTRIBUTION}"
        raise LookupError(f"{what}; its {label} build has: {have}")
    return _absolute(_FILES[label][relative])


def build_info() -> dict[str, str]:
    """What the merger recorded about the selected build (may be empty)."""
    return dict(_BUILD_INFO[selected()])


def diagnose() -> str:
    """A report of the builds, what was detected and which build is selected."""
    return str(_rules("report"))


class _State:
    def __init__(self) -> None:
        self.package_dir = _PACKAGE_DIR
        self.lock = RLock()
        self.selection: tuple[str, str] | None = None  # (label, how it was chosen)
        self.libraries: dict[str, int] = {}  # path -> handle, kept loaded


class _Finder:
    """Finds the selected build's file of each variant module, and no other module."""

    def __init__(self) -> None:
        self.wheelmerge_package_dir = _PACKAGE_DIR

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if fullname not in _VARIANT_MODULES:
            return None
        label = _prepare()
        if fullname not in _MODULES[label]:
            return None  # this build lacks the module: the import fails as unmerged
        origin = _absolute(_MODULES[label][fullname])
        if not os.path.isfile(origin):
            raise _failure("missing", fullname, origin)
        package = os.path.basename(origin).startswith("__init__.")
        extension = origin.endswith(tuple(EXTENSION_SUFFIXES))
        kinds = (SourceFileLoader, ExtensionFileLoader, _PkgSource, _PkgExtension)
        loader = kinds[2 * package + extension](fullname, origin)
        spec = ModuleSpec(fullname, loader, origin=origin, is_package=package)
        spec.has_location = True
        if package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec


class _PkgSource(SourceFileLoader):
    def is_package(self, fullname: str) -> bool:
        return True


class _PkgExtension(ExtensionFileLoader):
    def is_package(self, fullname: str) -> bool:
        return True


def _absolute(stored: str) -> str:
    return os.path.normpath(os.path.join(_PACKAGE_DIR, *stored.split("/")))


def _prepare() -> str:
    """Selects the build and loads its private libraries; the label of the build."""
    with _STATE.lock:
        label = _select()[0]
        _preload(label)
        return label


def _select() -> tuple[str, str]:
    with _STATE.lock:
        # Only success is kept, and never replaced: one process never mixes builds.
        if (
            _STATE.selection is None
        ):  # (label, how): the usual case here, others by the rules
            found = _usual() or _rules("detect")
            _STATE.selection = found if isinstance(found, tuple) else ("", "")
        return _STATE.selection


def _preload(label: str) -> None:
    """Loads LABEL's private libraries by path, dependencies first, so that its extensions'
    DT_NEEDED entries find them by SONAME (they are on no search path)."""
    for library in [_absolute(stored) for stored in _PRELOAD[label]]:
        import _ctypes  # ctypes' C part: loads a library without ctypes' import cost

        try:
            if library not in _STATE.libraries and sys.platform == "win32":
                _STATE.libraries[library] = _ctypes.LoadLibrary(library)
            elif library not in _STATE.libraries:
                _STATE.libraries[library] = _ctypes.dlopen(library, os.RTLD_LOCAL)
        except OSError as error:
            raise _failure("preload", label, library, str(error)) from error


def _distribution(name: str) -> tuple[str | None, str | None]:
    """(version, where) of NAME, as importlib.metadata finds it (rules: distribution)."""
    wanted = name.lower().replace("-", "_").replace(".", "_")
    for entry in sys.path:
        try:
            children = os.listdir(entry or ".")
        except NotADirectoryError:  # a zip or egg file: importlib.metadata reads it
            break
        except OSError:
            continue
        keys = [c[: c.rfind(".")].partition("-")[0].lower() for c in children]
        found = [c for c, k in zip(children, keys) if k.replace(".", "_") == wanted]
        found = [c for c in found if c.lower().endswith((".dist-info", ".egg-info"))]
        if len(found) == 1 and found[0].lower().endswith(".dist-info"):
            return _version(os.path.join(entry or ".", found[0]))
        if found or entry.endswith(".egg"):
            break
    else:
        return None, None
    asked = _rules("distribution", name)
    assert isinstance(asked, tuple)
    return asked


def _version(directory: str) -> tuple[str | None, str]:
    try:
        with open(os.path.join(directory, "METADATA"), encoding="utf-8") as file:
            for key, _, value in (line.partition(":") for line in file):
                if not key.strip() or key.lower() == "version":
                    return value.strip() or None, directory
    except (OSError, ValueError):
        pass
    return None, directory


#: selector


def _failure(kind: str, *details: str) -> ImportError:
    error = _rules("failure", kind, *details)
    return error if isinstance(error, ImportError) else SelectionError(str(error))


def _rules(function: str, *args: str) -> object:
    """Calls FUNCTION of _wheelmerge_rules.py, beside this module, read on first use."""
    name = __name__ + "_rules"
    origin = os.path.join(_PACKAGE_DIR, "_wheelmerge_rules.py")
    if getattr(sys.modules.get(name), "__file__", None) != origin:
        sys.modules[name] = module = type(sys)(name)
        module.__file__ = origin
        SourceFileLoader(name, origin).exec_module(module)
    return getattr(sys.modules[name], function)(globals(), *args)


def _shared_state() -> _State:
    """The process-wide state, kept on this package's finder in ``sys.meta_path`` (installed
    on first run), where a reload or a second copy of this module finds it."""
    key = "wheelmerge_package_dir"
    mine = [f for f in sys.meta_path if getattr(f, key, 0) == _PACKAGE_DIR]
    finder = mine[0] if mine else _Finder()
    if not mine:
        sys.meta_path.insert(0, finder)
    state: _State | None = getattr(finder, "wheelmerge_state", None)
    state = state or globals().get("_STATE")  # a reload finds its state in its globals
    if state is None or getattr(state, "package_dir", None) != _PACKAGE_DIR:
        state = _State()
    vars(finder)["wheelmerge_state"] = state
    return state


def _started_as_main() -> bool:
    """Whether this is ``python -m <this module>`` and runpy imports the parent package."""
    if sys.argv[:1] != ["-m"]:  # runpy's argv[0] while it imports the parents
        return False
    import re  # Python 3.9 has no sys.orig_argv: it keeps the ordinary behaviour

    command = " ".join(getattr(sys, "orig_argv", [])[1:])
    return bool(re.search(rf"(?:^| )-[A-Za-z]*m ?{re.escape(__name__)}( |$)", command))


_STATE = _shared_state()

# Under `python -m`, report before the package's __init__ imports a variant module, so that
# the report also comes when no build fits (the import would fail before runpy ran us).
if __name__ == "__main__" or _started_as_main():
    _rules("main")
