"""Records what its build was given into the generated module labelenv/_built.py: DRV_MARK and
LABELENV_SHARED ([tool.wheelmerge] env), the label, and the packaging release its build
environment holds ([tool.wheelmerge.LABEL] build-requires). Refuses to build without DRV_MARK,
as a project whose build needs a per-variant setting does."""

import os
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self):
        super().run()
        if "DRV_MARK" not in os.environ:
            raise RuntimeError("labelenv: DRV_MARK is not set; [tool.wheelmerge.LABEL] env sets it")
        import packaging

        built = {"drv_mark": os.environ["DRV_MARK"], "shared": os.environ.get("LABELENV_SHARED"),
                 "variant": os.environ.get("WHEELMERGE_BUILD_VARIANT"), "packaging": packaging.__version__}
        (Path(self.build_lib) / "labelenv" / "_built.py").write_text(f"BUILT = {built!r}\n")


major = os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR")
setup(cmdclass={"build_py": BuildPy}, install_requires=[f"cuda-bindings=={major}.*"] if major else [])
