"""Refuses to build for CUDA 12, with a message the tests look for."""

import os

from setuptools import setup

if os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR") == "12":
    print("failpkg: about to fail for CUDA 12", flush=True)
    raise RuntimeError("failpkg-sentinel: this project refuses to build for CUDA 12")

setup()
