"""A variant's build writes the CUDA major it was built for into recpkg/_variant.py (the hooks
that run outside any variant's build, get_requires and build_sdist, leave it alone)."""

import os
from pathlib import Path

from setuptools import setup

MAJOR = os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR")
if MAJOR:
    Path("recpkg", "_variant.py").write_text(f"MAJOR = {int(MAJOR)}\n")

setup()
