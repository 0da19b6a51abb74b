"""Declares cpulevels' extension module. The level it is built for comes from the compiler flags
alone (CFLAGS="... -march=x86-64-v3"), which setuptools passes to the compiler.

`wheelmerge build` names the variant it builds in WHEELMERGE_BUILD_VARIANT ("x86_64_v3"); when
it is set, the extension refuses to compile unless the flags target exactly that level, so a
build whose -march got lost on the way fails instead of shipping under the wrong label.
"""

from __future__ import annotations

import os
import re

from setuptools import Extension, setup


def expected_level() -> list[tuple[str, str]]:
    variant = os.environ.get("WHEELMERGE_BUILD_VARIANT", "")
    if not variant:
        return []
    level = re.fullmatch(r"x86_64_v([1-4])", variant)
    if level is None:
        raise SystemExit(f"cpulevels: WHEELMERGE_BUILD_VARIANT={variant} is not an x86-64 level; "
                         "expected x86_64_v1 to x86_64_v4")
    return [("CPULEVELS_EXPECTED_LEVEL", level[1])]


setup(ext_modules=[Extension("cpulevels._core", sources=["csrc/core.c"],
                             define_macros=expected_level())])
