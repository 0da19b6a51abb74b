"""Helpers shared by every build of wmdemo (this file is identical in all of them)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent


def _loader() -> Any | None:
    """wheelmerge's loader when this is a merged install, None for a single build."""
    try:
        return importlib.import_module("wmdemo._wheelmerge")
    except ModuleNotFoundError:
        return None


def kernel_path(name: str = "scale.cubin") -> Path:
    """Where the selected build's kernel file lies."""
    relative = f"kernels/{name}"
    loader = _loader()
    if loader is None:
        return _PACKAGE_DIR / relative
    return Path(loader.path(relative))


def runtime_info() -> dict[str, Any]:
    """What was loaded: the build majors of each native part and the selected variant."""
    from . import _core
    from .sub import _nested

    loader = _loader()
    return {
        "core_build_major": _core.build_major(),
        "nested_build_major": _nested.build_major(),
        "runtime_library_major": _core.runtime_major(),
        "kernel": str(kernel_path()),
        "variant": loader.selected() if loader is not None else None,
    }
