"""Writes what the build saw (environment, the nvcc on PATH, interpreter, directory) into the
generated module envprobe/_buildenv.py.

With WMTEST_RENDEZVOUS=DIR, the build of each major marks DIR/started-MAJOR and waits (up to
WMTEST_RENDEZVOUS_TIMEOUT seconds) for a mark of another major: it succeeds only when two
variants are built at the same time.
"""

import os
import shutil
import sys
import time
from pathlib import Path

import setuptools
from setuptools import setup
from setuptools.command.build_py import build_py

KEYS = ("WHEELMERGE_BUILD_CUDA_MAJOR", "CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDAToolkit_ROOT",
        "CUDA_TOOLKIT_ROOT_DIR", "CUDA_BIN_PATH", "CUDACXX", "PATH", "PYTHONPATH", "VIRTUAL_ENV",
        "WMTEST_GLOBAL", "WMTEST_CU12_ONLY", "WMTEST_OVERRIDE")


def rendezvous(directory: str) -> list:
    major = os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR", "?")
    marks = Path(directory)
    (marks / f"started-{major}").write_text(str(time.time()))
    deadline = time.monotonic() + float(os.environ.get("WMTEST_RENDEZVOUS_TIMEOUT", "30"))
    while time.monotonic() < deadline:
        others = sorted(p.name for p in marks.glob("started-*") if p.name != f"started-{major}")
        if others:
            return others
        time.sleep(0.05)
    raise RuntimeError(f"envprobe-rendezvous: no other variant started while cu{major} was building")


class BuildPy(build_py):
    def run(self):
        super().run()
        seen = {
            "env": {k: os.environ.get(k) for k in KEYS},
            "nvcc": shutil.which("nvcc"),
            "cwd": os.getcwd(),
            "sys_prefix": sys.prefix,
            "sys_base_prefix": sys.base_prefix,
            "setuptools_version": setuptools.__version__,
            "setuptools_file": setuptools.__file__,
            "others_seen": rendezvous(os.environ["WMTEST_RENDEZVOUS"]) if os.environ.get("WMTEST_RENDEZVOUS") else None,
        }
        target = Path(self.build_lib) / "envprobe" / "_buildenv.py"
        target.write_text(f"SEEN = {seen!r}\n")


setup(cmdclass={"build_py": BuildPy})
