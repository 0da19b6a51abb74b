"""cudademo: a small CUDA extension, built once per CUDA major and merged by wheelmerge.

Each build compiles its host code (cudademo._core) against one toolkit's runtime, ships that
toolkit's libcudart.so.<major> in cudademo/_libs/, and carries the kernel as PTX compiled by the
same toolkit's NVRTC (cudademo/kernels/scale.ptx). In a merged wheel, wheelmerge's loader picks
the build that matches the installed cuda-bindings.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path

from . import _core
from ._core import build_major, device_count, runtime_version

__all__ = ["build_major", "device_count", "kernel_path", "runtime_version", "scale"]

_KERNEL = "kernels/scale.ptx"


def kernel_path() -> Path:
    """The PTX of the build in use (in a merged wheel, the selected build's labelled copy)."""
    try:
        loader = importlib.import_module(f"{__name__}._wheelmerge")
    except ModuleNotFoundError:  # a single build: the file is where the build put it
        return Path(__file__).resolve().parent / _KERNEL
    return Path(loader.path(_KERNEL))


def scale(values: Sequence[float], factor: float) -> list[float]:
    """Multiplies `values` by `factor` on the GPU, in single precision.

    Raises RuntimeError when there is no usable CUDA device (no GPU, or no driver recent enough
    for this build's runtime).
    """
    return _core.scale(values, float(factor), str(kernel_path()))
