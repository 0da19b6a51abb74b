"""torchdemo: a torch C++/CUDA extension built once per torch release and merged by wheelmerge.

``scale_add(x, y, alpha)`` computes ``x * alpha + y`` with the custom operator
``torch.ops.torchdemo.scale_add``, which has a CPU kernel and a CUDA kernel; ``build()`` says
which torch and CUDA toolkit the loaded build was compiled with.
"""

from __future__ import annotations

import torch  # loads libtorch and libc10, which the extension module links to

from . import _C  # registers torch.ops.torchdemo.scale_add

__all__ = ["build", "scale_add"]


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """``x * alpha + y`` for float32 or float64 tensors of one shape on one device."""
    return torch.ops.torchdemo.scale_add(x, y, alpha)


def build() -> dict:
    """What the loaded build was compiled with, fixed at compile time, e.g. ``{"torch": "2.10",
    "torch_cuda": "12.8", "cuda": "12.9", "cuda_version": 12090, "kernels": ["sm_90"]}``:
    the torch release (TORCH_VERSION_MAJOR/MINOR), the CUDA version that torch was built with,
    the toolkit's CUDA_VERSION, and the GPU architectures of the embedded kernels."""
    return _C.build()
