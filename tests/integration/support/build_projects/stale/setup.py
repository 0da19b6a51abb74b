"""A C extension and a generated module, both carrying the CUDA major they were built for.

Like most builds, this one reuses what it finds in build/: setuptools skips an extension whose
build/lib.* file is newer than its sources, and build_py below keeps an existing generated
module, the way caching code generators do. A build/ left by a build for another major therefore
leaks into the wheel unless the build starts from a clean tree.
"""

import os
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

MAJOR = os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR", "")
if not MAJOR.isdigit():
    raise SystemExit(f"stalepkg: WHEELMERGE_BUILD_CUDA_MAJOR must be a CUDA major (found {MAJOR!r})")
# What the source tree held when this build started (a copy made by wheelmerge holds neither).
STALE_AT_START = sorted(p.name for p in Path.cwd().iterdir() if p.name == "build" or p.name.endswith(".egg-info"))


class BuildPy(build_py):
    def run(self):
        super().run()
        generated = Path(self.build_lib) / "stalepkg" / "_generated.py"
        if generated.exists():  # "up to date": kept as it is
            return
        generated.write_text(f"MAJOR = {int(MAJOR)}\nSTALE_AT_START = {STALE_AT_START!r}\n")


setup(
    ext_modules=[Extension("stalepkg._ext", ["src/ext.c"], define_macros=[("STALEPKG_MAJOR", MAJOR)])],
    cmdclass={"build_py": BuildPy},
)
