"""wmdemo: wheelmerge's bundled example package.

One source tree is built once per CUDA major (cu12, cu13). wheelmerge merges the two wheels into
one, whose loader imports the build matching the installed cuda-bindings.
"""

from __future__ import annotations

from ._core import build_major, runtime_major, scale
from .util import kernel_path, runtime_info

__all__ = ["build_major", "kernel_path", "runtime_info", "runtime_major", "scale"]
