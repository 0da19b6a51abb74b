"""skdemo: one C extension module, built once per CUDA major."""

from ._core import build_major, cuda_version, flavor

__all__ = ["build_major", "cuda_version", "flavor"]
