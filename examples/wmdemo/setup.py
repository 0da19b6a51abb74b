"""Builds wmdemo for one CUDA major, chosen by WMDEMO_CUDA_MAJOR (else WHEELMERGE_BUILD_CUDA_MAJOR, which `wheelmerge build` sets).

The major sets the C define WMDEMO_CUDA_MAJOR, the version's local label (0.1.0+cu12) and the
cuda-bindings requirement, the way a real CUDA project's build would. Besides the two extension
modules, build_ext compiles a private shared library, libwmdemo_rt.so.1, with plain cc and places
it in wmdemo/_libs/, and writes the variant data file wmdemo/kernels/scale.cubin.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

VERSION = "0.1.0"
SUPPORTED_MAJORS = ("12", "13")
RUNTIME_SONAME = "libwmdemo_rt.so.1"
HERE = Path(__file__).resolve().parent


def cuda_major() -> str:
    major = os.environ.get("WMDEMO_CUDA_MAJOR") or os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR", "")
    if major not in SUPPORTED_MAJORS:
        raise SystemExit(
            f"wmdemo: set WMDEMO_CUDA_MAJOR to one of {', '.join(SUPPORTED_MAJORS)} (found {major!r})"
        )
    return major


MAJOR = cuda_major()
DEFINES = [("WMDEMO_CUDA_MAJOR", MAJOR)]


def kernel_placeholder(major: str) -> bytes:
    """Stands in for a compiled CUBIN: an ELF-like header and bytes that differ per major."""
    body = f"wmdemo scale kernel, sm_80, built for CUDA {major}\n".encode()
    return b"\x7fELF" + bytes([2, 1, 1, 0x33]) + int(major).to_bytes(4, "little") + body


class BuildExt(build_ext):
    """Builds the private runtime library first, then links the extensions against it."""

    def run(self) -> None:
        self.runtime_library = self.build_runtime_library()
        for ext in self.extensions:
            if ext.name == "wmdemo._core":
                ext.extra_objects.append(str(self.runtime_library))
        super().run()
        self.write_kernel()

    def build_extensions(self) -> None:
        # The interpreter's own link flags may carry run paths of the build machine (pyenv adds
        # -Wl,-rpath,<prefix>/lib); a wheel must not, so only the extensions' own run paths stay.
        self.compiler.linker_so = [
            arg for arg in self.compiler.linker_so if not arg.startswith("-Wl,-rpath,")
        ]
        super().build_extensions()

    def package_dir(self) -> Path:
        return Path(self.build_lib) / "wmdemo"

    def build_runtime_library(self) -> Path:
        build_temp = Path(self.build_temp)
        build_temp.mkdir(parents=True, exist_ok=True)
        library = build_temp / RUNTIME_SONAME
        cc = shlex.split(os.environ.get("CC", "cc"))
        command = [
            *cc, "-shared", "-fPIC", "-O2", f"-DWMDEMO_CUDA_MAJOR={MAJOR}",
            f"-Wl,-soname,{RUNTIME_SONAME}", "-I", str(HERE / "csrc"),
            "-o", str(library), str(HERE / "csrc" / "wmdemo_rt.c"),
        ]
        self.announce(" ".join(command), level=2)
        subprocess.run(command, check=True)
        # The wheel is built from build_lib, so the library goes there, next to the extension.
        libs = self.package_dir() / "_libs"
        libs.mkdir(parents=True, exist_ok=True)
        self.copy_file(str(library), str(libs / RUNTIME_SONAME))
        return library

    def write_kernel(self) -> None:
        kernels = self.package_dir() / "kernels"
        kernels.mkdir(parents=True, exist_ok=True)
        (kernels / "scale.cubin").write_bytes(kernel_placeholder(MAJOR))


setup(
    # Built by hand (WMDEMO_CUDA_MAJOR), each wheel carries its label as a local version; built by
    # wheelmerge, the label comes from the build and the version stays that of the sdist.
    version=f"{VERSION}+cu{MAJOR}" if os.environ.get("WMDEMO_CUDA_MAJOR") else VERSION,
    install_requires=[f"cuda-bindings>={MAJOR}.0,<{int(MAJOR) + 1}"],
    ext_modules=[
        Extension(
            "wmdemo._core",
            sources=["csrc/core.c"],
            include_dirs=["csrc"],
            define_macros=DEFINES,
            # Found at run time next to the extension; wheelmerge's loader preloads the
            # selected build's copy instead, matched by its SONAME.
            runtime_library_dirs=["$ORIGIN/_libs"],
            # DT_RPATH rather than DT_RUNPATH, as auditwheel writes it.
            extra_link_args=["-Wl,--disable-new-dtags"],
        ),
        Extension(
            "wmdemo.sub._nested",
            sources=["csrc/nested.c"],
            define_macros=DEFINES,
        ),
    ],
    cmdclass={"build_ext": BuildExt},
)
