"""Fails to build for CUDA 12, the way a compile error would: in a build command, with a message
test_backend.py looks for. setup.py itself runs for every major (get_requires runs it too)."""

import os

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        if os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR") == "12":
            print("bkfail: about to fail for CUDA 12", flush=True)
            raise RuntimeError("bkfail-sentinel-5e1d: this project refuses to build for CUDA 12")
        super().run()


setup(cmdclass={"build_py": BuildPy})
