"""cpulevels: a small C extension, built once per x86-64 level and merged by wheelmerge.

Each build compiles cpulevels._core with `-march=x86-64-vN`: `level()` reports the level the
compiler was told to target, `dot()` runs the kernel of that level (AVX-512 for v4, AVX2 for v3,
portable C below). In a merged wheel, wheelmerge's loader imports the build of the highest level
the running CPU supports.
"""

from __future__ import annotations

from ._core import dot, kernel, level

__all__ = ["dot", "kernel", "level"]
