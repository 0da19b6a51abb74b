"""The rest of the build selection of package PACKAGE (written by wheelmerge).

``_wheelmerge.py`` decides the usual case itself and reads this module only for the others:
overrides, fallbacks, every error with its fixes, and the report of
``python -m <package>._wheelmerge [--json]``. Each public function takes the loader's
globals first.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

# The loader's manifest and names, bound by _bind (see the loader for what each holds).
_WHEELMERGE = ""
_DISTRIBUTION = ""
_PACKAGE = ""
_SELECTOR = ""
_VARIANTS: tuple[str, ...] = ()
_SOURCES: tuple[str, ...] = ()
_EXTRAS: dict[str, tuple[str, ...]] = {}
_MODULES: dict[str, dict[str, str]] = {}
_FILES: dict[str, dict[str, str]] = {}
_PRELOAD: dict[str, tuple[str, ...]] = {}
_BUILD_INFO: dict[str, dict[str, str]] = {}
_GPU_CODE: dict[str, dict[str, tuple[str, ...]]] = {}
_VARIANT_VARS: tuple[str, ...] = ()
_RUNTIME_WHEELS: tuple[tuple[str, int], ...] = ()
_BOUND = [name for name in globals() if name.isupper() and name.startswith("_")]
_loader = SimpleNamespace()  # the loader's globals, as attributes


def _bind(loader: dict[str, object]) -> None:
    global _loader
    _loader = SimpleNamespace(**loader)
    globals().update({name: loader[name] for name in _BOUND if name in loader})


def detect(loader: dict[str, object]) -> tuple[str, str]:
    """(label, how it was chosen) from the environment as it is now; raises SelectionError."""
    _bind(loader)
    try:
        return _detect_build()
    except ImportError:
        raise
    except (
        Exception
    ) as error:  # whatever goes wrong, importing a variant module sees ImportError
        what = f"{type(error).__name__}: {error}"
        raise _error(
            f"cannot select a {_what()} build: detection failed ({what})"
        ) from error


def failure(loader: dict[str, object], kind: str, *details: str) -> ImportError:
    """The error of a selected build that cannot be loaded: a file is "missing"
    (module, path) or a library failed to "preload" (label, path, why)."""
    _bind(loader)
    label, how = _select()
    reinstall = ("Reinstall it", [_reinstall_command()])
    if kind == "missing":
        module, origin = details
        text = f"cannot import {module}: {origin}, its file in the {label} build, is missing"
        error = _error(
            f"{text}.\nThe {label} build was selected because {how}", reinstall
        )
        return ImportError(str(error), name=module, path=origin)
    library, why = details[1:]
    text = f"cannot load {library}, a private library of its {label} build: {why}"
    reinstall = ("Reinstall it if files are missing or damaged", reinstall[1])
    error = _error(f"{text}.\nThe {label} build was selected because {how}", reinstall)
    preload: ImportError = _loader.PreloadError(str(error))
    return preload


class _Unknown(Exception):
    """Why what the rules look for is not known; it never leaves this module."""


class _Attempt:
    """A block whose exception (a broken install can raise anything) becomes _Unknown
    saying WHAT failed, and how."""

    def __init__(self, what: str = "") -> None:
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: object, error: BaseException | None, trace: object
    ) -> None:
        if isinstance(error, Exception) and not isinstance(error, _Unknown):
            how = f"{type(error).__name__}: {error}"
            raise _Unknown(f"{self.what} ({how})" if self.what else how) from error


def _select() -> tuple[str, str]:
    found: tuple[str, str] = _loader._select()
    return found


def _distribution(name: str) -> tuple[str | None, str | None]:
    found: tuple[str | None, str | None] = _loader._distribution(name)
    return found


def distribution(loader: dict[str, object], name: str) -> tuple[str | None, str | None]:
    """What importlib.metadata says of NAME: (version, where, naming importlib.metadata).
    The loader lists sys.path's directories for NAME's .dist-info, the first as
    importlib.metadata finds it, and asks here where a listing cannot be sure to agree: an
    .egg-info, a zip or an egg on the path before it, two of NAME's in one entry (which
    importlib.metadata takes in the directory's listing order)."""
    import importlib.metadata

    try:
        found = importlib.metadata.distribution(name)
        version = found.version
    except (ImportError, LookupError, OSError, ValueError):  # not found, or unreadable
        return None, None
    where = str(getattr(found, "_path", "") or "a distribution")
    text = (str(version).strip() or None) if version else None
    return text, f"{where} (read by importlib.metadata)"


def _what() -> str:
    return {"cuda": "CUDA", "torch": "torch", "cpu": "CPU"}[_SELECTOR]


def _override() -> tuple[str, str, str] | None:
    """(label, how, the variable) when WHEELMERGE_VARIANT_<DISTRIBUTION>, else
    WHEELMERGE_VARIANT, is set; SelectionError when the one set names no build."""
    for variable in _VARIANT_VARS:
        value = os.environ.get(variable, "")
        if value.strip():
            break
    else:
        return None
    if value.strip() not in _VARIANTS:
        raise _error(
            f"cannot select a {_what()} build: {variable}={value!r} names no build of this wheel",
            (f"Set {variable} to one of them", [f"export {variable}={_suggested()}"]),
            ("unset it to select automatically", [f"unset {variable}"]),
        )
    return value.strip(), f"{variable}={value} is set", variable


def _error(problem: str, *fixes: tuple[str, list[str]]) -> ImportError:
    """SelectionError saying PROBLEM (what was detected), the builds and the FIXES."""
    builds = ", ".join(_VARIANTS)
    text = f"{_DISTRIBUTION}: {problem}.\nThis wheel of {_DISTRIBUTION} has builds for {builds}."
    for i, (intro, commands) in enumerate(fixes or _general_fixes()):
        # The first fix starts a sentence, the others follow "or".
        text += " " + intro[:1].upper() + intro[1:] if i == 0 else "\nor " + intro
        text += ":" + "".join(f"\n    {command}" for command in commands)
    error: ImportError = _loader.SelectionError(text)
    return error


def _reinstall_command() -> str:
    version = _distribution(_DISTRIBUTION)[0]
    pinned = f"{_DISTRIBUTION}=={version}" if version else _DISTRIBUTION
    return f'pip install --force-reinstall --no-deps "{pinned}"'


#: selector


#: include report
