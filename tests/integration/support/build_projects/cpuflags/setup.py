"""Records what the build saw (the packaging version of its build environment, CFLAGS, the
variant) in cpuflags/_buildinfo.py, and builds cpuflags._level from C."""

import os
from importlib import metadata

from setuptools import Extension, setup


def packaging_version():
    try:
        return metadata.version("packaging")
    except metadata.PackageNotFoundError:
        return None


with open(os.path.join("cpuflags", "_buildinfo.py"), "w") as f:
    f.write(f"PACKAGING = {packaging_version()!r}\n"
            f"CFLAGS = {os.environ.get('CFLAGS')!r}\n"
            f"CXXFLAGS = {os.environ.get('CXXFLAGS')!r}\n"
            f"VARIANT = {os.environ.get('WHEELMERGE_BUILD_VARIANT')!r}\n")

setup(ext_modules=[Extension("cpuflags._level", [os.path.join("cpuflags", "_level.c")])])
