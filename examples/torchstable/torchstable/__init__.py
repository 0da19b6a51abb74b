"""torchstable: a torch C++/CUDA extension built against torch's stable ABI, once per CUDA major,
and merged by wheelmerge.

``scale_add(x, y, alpha)`` computes ``x * alpha + y`` with the custom operator
``torch.ops.torchstable.scale_add``, which has a CPU kernel and a CUDA kernel; ``build()`` says
what the loaded build was compiled with. A build against torch 2.10's stable ABI runs with torch
2.10 and every later 2.x of its CUDA major.
"""

from __future__ import annotations

import torch  # loads libtorch_cpu (the C shim the extension calls) and the CUDA runtime

from . import _C  # registers torch.ops.torchstable.scale_add

__all__ = ["build", "scale_add"]


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    """``x * alpha + y`` for float32 or float64 tensors of one shape on one device."""
    return torch.ops.torchstable.scale_add(x, y, alpha)


def build() -> dict:
    """What the loaded build was compiled with, fixed at compile time, e.g. ``{"abi": "2.10",
    "torch": "2.11", "cuda": "13.0", "cuda_version": 13000, "kernels": ["sm_90"]}``: the stable
    ABI targeted (TORCH_TARGET_VERSION), the torch whose headers built it, the toolkit's
    CUDA_VERSION, and the GPU architectures of the embedded kernels."""
    return _C.build()
