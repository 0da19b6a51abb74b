"""Builds cudademo against the CUDA toolkit that CUDA_HOME points to.

The toolkit decides the build: its runtime headers and libcudart.so.<major> for the extension
module cudademo._core (linked dynamically, with the run path $ORIGIN/_libs), a copy of that
libcudart in cudademo/_libs/, and its NVRTC (lib64/libnvrtc.so.<major>) compiling
csrc/scale.cu into cudademo/kernels/scale.ptx. No nvcc is needed, so a toolkit assembled from
NVIDIA's wheels (scripts/cuda12-toolkit.sh) builds the same way as a full installation.

The toolkit's major sets the version's local label (0.1.0+cu12) and the cuda-bindings
requirement. WHEELMERGE_BUILD_CUDA_MAJOR, which `wheelmerge build` sets, must agree with it.
"""

from __future__ import annotations

import ctypes
import os
import re
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

VERSION = "0.1.0"
HERE = Path(__file__).resolve().parent
KERNEL_SOURCE = HERE / "csrc" / "scale.cu"
# PTX for the oldest architecture CUDA 13 still supports (Turing); the driver JIT-compiles it
# for the GPU it runs on, any newer architecture included.
KERNEL_ARCH = "compute_75"


def toolkit_root() -> Path:
    home = os.environ.get("CUDA_HOME", "")
    if not home:
        raise SystemExit("cudademo: set CUDA_HOME to the root of the CUDA toolkit to build against "
                         "(the directory holding include/cuda_runtime_api.h and lib64/)")
    root = Path(home)
    if not (root / "include" / "cuda_runtime_api.h").is_file():
        raise SystemExit(f"cudademo: CUDA_HOME={home} is not a CUDA toolkit: "
                         "it has no include/cuda_runtime_api.h")
    return root


def toolkit_major(root: Path) -> int:
    """The major of the toolkit's runtime headers (CUDART_VERSION 12090 -> 12)."""
    header = root / "include" / "cuda_runtime_api.h"
    found = re.search(r"^#define\s+CUDART_VERSION\s+(\d+)", header.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"cudademo: {header} defines no CUDART_VERSION")
    major = int(found[1]) // 1000
    wanted = os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR", "")
    if wanted and wanted != str(major):
        raise SystemExit(f"cudademo: WHEELMERGE_BUILD_CUDA_MAJOR={wanted}, but the toolkit at "
                         f"CUDA_HOME={root} is CUDA {major}")
    return major


TOOLKIT = toolkit_root()
MAJOR = toolkit_major(TOOLKIT)
RUNTIME = f"libcudart.so.{MAJOR}"


def nvrtc_ptx(library: Path, source: Path, arch: str) -> bytes:
    """Compiles CUDA C++ `source` to PTX for `arch` with the NVRTC shared library `library`."""
    # NVRTC opens its builtins library by name; loading the toolkit's copy first by full path
    # makes that name resolve to it, whatever the library search path holds.
    for builtins in sorted(library.parent.glob(f"libnvrtc-builtins.so.{MAJOR}.*")):
        ctypes.CDLL(str(builtins))
    nvrtc = ctypes.CDLL(str(library))
    nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{library}: {what}: {nvrtc.nvrtcGetErrorString(status).decode()}")

    major, minor = ctypes.c_int(), ctypes.c_int()
    check(nvrtc.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    if major.value != MAJOR:
        raise RuntimeError(f"{library} is NVRTC {major.value}.{minor.value}, not CUDA {MAJOR}")
    program = ctypes.c_void_p()
    check(nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.read_bytes(), source.name.encode(),
                                   0, None, None), "nvrtcCreateProgram")
    try:
        options = [f"--gpu-architecture={arch}".encode()]
        status = nvrtc.nvrtcCompileProgram(program, len(options),
                                           (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        check(nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
        log = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
        check(status, f"compiling {source}:\n{log.value.decode(errors='replace')}")
        check(nvrtc.nvrtcGetPTXSize(program, ctypes.byref(size)), "nvrtcGetPTXSize")
        ptx = ctypes.create_string_buffer(size.value)
        check(nvrtc.nvrtcGetPTX(program, ptx), "nvrtcGetPTX")
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    return ptx.value  # without the terminating NUL


class BuildExt(build_ext):
    """Builds _core, then puts the toolkit's libcudart and the kernel's PTX beside it."""

    def build_extensions(self) -> None:
        # The interpreter's own link flags may carry run paths of the build machine (pyenv adds
        # -Wl,-rpath,<prefix>/lib); a wheel must not, so only the extension's run path stays.
        self.compiler.linker_so = [
            arg for arg in self.compiler.linker_so if not arg.startswith("-Wl,-rpath,")
        ]
        super().build_extensions()

    def run(self) -> None:
        super().run()
        package = Path(self.build_lib) / "cudademo"
        # The wheel is built from build_lib, so the library and the kernel go there.
        (package / "_libs").mkdir(parents=True, exist_ok=True)
        self.copy_file(str((TOOLKIT / "lib64" / RUNTIME).resolve()), str(package / "_libs" / RUNTIME))
        kernels = package / "kernels"
        kernels.mkdir(parents=True, exist_ok=True)
        nvrtc = TOOLKIT / "lib64" / f"libnvrtc.so.{MAJOR}"
        self.announce(f"compiling {KERNEL_SOURCE.name} for {KERNEL_ARCH} with {nvrtc}", level=2)
        (kernels / "scale.ptx").write_bytes(nvrtc_ptx(nvrtc, KERNEL_SOURCE, KERNEL_ARCH))


setup(
    version=f"{VERSION}+cu{MAJOR}",
    install_requires=[f"cuda-bindings>={MAJOR}.0,<{MAJOR + 1}"],
    ext_modules=[
        Extension(
            "cudademo._core",
            sources=["csrc/core.c"],
            define_macros=[("CUDADEMO_CUDA_MAJOR", str(MAJOR))],
            include_dirs=[str(TOOLKIT / "include")],
            library_dirs=[str(TOOLKIT / "lib64")],
            libraries=["cudart"],  # lib64/libcudart.so -> libcudart.so.<major>: NEEDED by SONAME
            # The wheel's own copy of libcudart, as auditwheel would place it; wheelmerge's
            # loader preloads the selected build's copy by full path instead.
            runtime_library_dirs=["$ORIGIN/_libs"],
            extra_link_args=["-Wl,--disable-new-dtags"],  # DT_RPATH, as auditwheel writes it
        ),
    ],
    cmdclass={"build_ext": BuildExt},
)
