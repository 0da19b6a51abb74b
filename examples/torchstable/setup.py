"""Builds torchstable against the stable ABI of the running interpreter's torch, and the CUDA
toolkit at CUDA_HOME.

The extension uses only torch's stable ABI (torch/csrc/stable, torch/headeronly), compiled with
TORCH_TARGET_VERSION naming torch 2.10's, and links only libtorch_cpu and libtorch_cuda (whose C shim it calls)
and the toolkit's CUDA runtime: one build serves torch 2.10 and every later 2.x of the same CUDA
major, so the variant label is a floor (torch210plus_cu12) and the requirement `torch>=2.10,<3`.
The torch built against must be at least 2.10 and share the toolkit's CUDA major. Build without
build isolation, in an environment holding that torch, or let `wheelmerge build` do it per variant.

The device code (csrc/scale_add.cu) is compiled with the toolkit's NVRTC into a cubin for each
architecture of TORCH_CUDA_ARCH_LIST (default "9.0"; "+PTX" adds PTX), embedded as a generated
header, as in examples/torchdemo: no nvcc is needed.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:
    import torch
    from torch.utils.cpp_extension import include_paths, library_paths
except ImportError as error:
    raise SystemExit(f"torchstable: building needs a torch (2.10 or later) in the build environment "
                     f"({type(error).__name__}: {error}); build with `wheelmerge build`, which installs "
                     "each variant's torch, or with --no-build-isolation where that torch is installed") from error

HERE = Path(__file__).resolve().parent
KERNEL_SOURCE = HERE / "csrc" / "scale_add.cu"
DEFAULT_ARCH_LIST = "9.0"
# The stable ABI targeted: torch 2.10's, (major << 56) | (minor << 48).
ABI = (2, 10)
TARGET_VERSION = f"0x{ABI[0]:02x}{ABI[1]:02x}000000000000"


def fail(message: str) -> SystemExit:
    return SystemExit(f"torchstable: {message}")


def torch_release() -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", torch.__version__)
    if found is None:
        raise fail(f"cannot read the release of torch {torch.__version__}")
    return int(found[1]), int(found[2])


def toolkit_root() -> Path:
    home = os.environ.get("CUDA_HOME", "")
    if not home:
        raise fail("set CUDA_HOME to the root of the CUDA toolkit to build against "
                   "(the directory holding include/cuda.h and lib64/)")
    root = Path(home)
    if not (root / "include" / "cuda.h").is_file():
        raise fail(f"CUDA_HOME={home} is not a CUDA toolkit: it has no include/cuda.h")
    return root


def toolkit_version(root: Path) -> tuple[int, int]:
    """The toolkit's CUDA_VERSION as (major, minor): 12090 -> (12, 9)."""
    header = root / "include" / "cuda.h"
    found = re.search(r"^#define\s+CUDA_VERSION\s+(\d+)", header.read_text(), re.MULTILINE)
    if found is None:
        raise fail(f"{header} defines no CUDA_VERSION")
    return int(found[1]) // 1000, int(found[1]) % 1000 // 10


def check(toolkit: tuple[int, int], root: Path) -> None:
    """A torch with the stable ABI targeted, built with CUDA of the toolkit's major (the kernel
    runs on the CUDA runtime torch loads), and the variant `wheelmerge build` names, if any."""
    if TORCH < ABI:
        raise fail(f"torch {torch.__version__} is older than {ABI[0]}.{ABI[1]}, whose stable ABI this build targets")
    if torch.version.cuda is None:
        raise fail(f"torch {torch.__version__} is built without CUDA; torchstable has a CUDA kernel")
    torch_major = int(torch.version.cuda.split(".")[0])
    if toolkit[0] != torch_major:
        raise fail(f"torch {torch.__version__} is built with CUDA {torch.version.cuda}, but the toolkit "
                   f"at CUDA_HOME={root} is CUDA {toolkit[0]}.{toolkit[1]}; use a CUDA {torch_major} toolkit")
    # `wheelmerge build` names the variant: torch210plus_cu12 is a build against torch 2.10's
    # stable ABI with CUDA 12, made with a torch 2.10 (or later) of CUDA 12.
    label = f"torch{TORCH[0]}{TORCH[1]}plus_cu{torch_major}"
    wanted = os.environ.get("WHEELMERGE_BUILD_VARIANT", "")
    if wanted and wanted != label:
        raise fail(f"WHEELMERGE_BUILD_VARIANT={wanted}, but this build is {label} "
                   f"(torch {torch.__version__}, CUDA {torch.version.cuda})")


def architectures() -> list[tuple[int, bool]]:
    """(arch, ptx) pairs from TORCH_CUDA_ARCH_LIST: "8.0;9.0+PTX" -> (80, False), (90, False), (90, True)."""
    text = os.environ.get("TORCH_CUDA_ARCH_LIST") or DEFAULT_ARCH_LIST
    result = []
    for entry in re.split(r"[;\s]+", text.strip()):
        found = re.fullmatch(r"(\d+)\.(\d)(\+PTX)?", entry)
        if found is None:
            raise fail(f"TORCH_CUDA_ARCH_LIST={text!r}: {entry!r} is no architecture such as 9.0 or 9.0+PTX")
        arch = int(found[1]) * 10 + int(found[2])
        result.append((arch, False))
        if found[3]:
            result.append((arch, True))
    return result


def nvrtc_images(library: Path, major: int, targets: list[tuple[int, bool]]) -> list[bytes]:
    """`KERNEL_SOURCE` compiled by the NVRTC `library`: a cubin, or NUL-terminated PTX, per target."""
    # NVRTC opens its builtins library by name; loading the toolkit's copy first by full path
    # makes that name resolve to it, whatever the library search path holds.
    for builtins in sorted(library.parent.glob(f"libnvrtc-builtins.so.{major}.*")):
        ctypes.CDLL(str(builtins))
    nvrtc = ctypes.CDLL(str(library))
    nvrtc.nvrtcGetErrorString.restype = ctypes.c_char_p

    def check(status: int, what: str) -> None:
        if status != 0:
            raise fail(f"{library}: {what}: {nvrtc.nvrtcGetErrorString(status).decode()}")

    found_major, found_minor = ctypes.c_int(), ctypes.c_int()
    check(nvrtc.nvrtcVersion(ctypes.byref(found_major), ctypes.byref(found_minor)), "nvrtcVersion")
    if found_major.value != major:
        raise fail(f"{library} is NVRTC {found_major.value}.{found_minor.value}, not CUDA {major}")
    images = []
    for arch, ptx in targets:
        program = ctypes.c_void_p()
        check(nvrtc.nvrtcCreateProgram(ctypes.byref(program), KERNEL_SOURCE.read_bytes(),
                                       KERNEL_SOURCE.name.encode(), 0, None, None), "nvrtcCreateProgram")
        try:
            options = [f"--gpu-architecture={'compute' if ptx else 'sm'}_{arch}".encode()]
            status = nvrtc.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
            size = ctypes.c_size_t()
            check(nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size)), "nvrtcGetProgramLogSize")
            log = ctypes.create_string_buffer(size.value)
            check(nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
            check(status, f"compiling {KERNEL_SOURCE} for {options[0].decode()}:\n{log.value.decode(errors='replace')}")
            kind = "PTX" if ptx else "CUBIN"
            check(getattr(nvrtc, f"nvrtcGet{kind}Size")(program, ctypes.byref(size)), f"nvrtcGet{kind}Size")
            image = ctypes.create_string_buffer(size.value)
            check(getattr(nvrtc, f"nvrtcGet{kind}")(program, image), f"nvrtcGet{kind}")
            images.append(image.raw)  # PTX comes with its terminating NUL, as cudaLibraryLoadData wants
        finally:
            nvrtc.nvrtcDestroyProgram(ctypes.byref(program))
    return images


def images_header(targets: list[tuple[int, bool]], images: list[bytes]) -> str:
    lines = ["// Generated by setup.py from csrc/scale_add.cu; do not edit.", "#pragma once",
             "#include <cstddef>", "namespace torchstable {",
             "struct KernelImage { int arch; bool ptx; const unsigned char* data; std::size_t size; };"]
    for index, image in enumerate(images):
        body = ",".join(str(b) for b in image)
        lines.append(f"inline constexpr unsigned char kImage{index}[] = {{{body}}};")
    entries = ", ".join(f"{{{arch}, {'true' if ptx else 'false'}, kImage{index}, sizeof kImage{index}}}"
                        for index, (arch, ptx) in enumerate(targets))
    lines += [f"inline constexpr KernelImage kKernelImages[] = {{{entries}}};", "}  // namespace torchstable", ""]
    return "\n".join(lines)


TORCH = torch_release()
TOOLKIT = toolkit_root()
TOOLKIT_VERSION = toolkit_version(TOOLKIT)
check(TOOLKIT_VERSION, TOOLKIT)


class BuildExt(build_ext):
    """Compiles the device code into a header, then the extension that embeds it."""

    def build_extensions(self) -> None:
        generated = Path(self.build_temp).resolve() / "torchstable-generated"
        generated.mkdir(parents=True, exist_ok=True)
        targets = architectures()
        nvrtc = TOOLKIT / "lib64" / f"libnvrtc.so.{TOOLKIT_VERSION[0]}"
        names = ", ".join(f"{'compute' if ptx else 'sm'}_{arch}" for arch, ptx in targets)
        self.announce(f"compiling {KERNEL_SOURCE.name} for {names} with {nvrtc}", level=logging.INFO)
        header = images_header(targets, nvrtc_images(nvrtc, TOOLKIT_VERSION[0], targets))
        (generated / "scale_add_images.h").write_text(header)
        for extension in self.extensions:
            extension.include_dirs.append(str(generated))
        super().build_extensions()


setup(
    # Torch 2.10's stable ABI: this release and every later 2.x.
    install_requires=[f"torch>={ABI[0]}.{ABI[1]},<{ABI[0] + 1}"],
    ext_modules=[
        Extension(
            "torchstable._C",
            sources=["csrc/ops.cpp"],
            language="c++",
            include_dirs=[*include_paths(), str(TOOLKIT / "include")],
            # libtorch_cpu holds the C shim, libtorch_cuda its CUDA part (the current stream);
            # torch, imported first, has loaded them and the CUDA runtime of its major, which
            # these names then resolve to.
            library_dirs=[*library_paths(), str(TOOLKIT / "lib64")],
            libraries=["torch_cpu", "torch_cuda", "cudart"],
            # USE_CUDA: the shim's CUDA declarations (aoti_torch_get_current_cuda_stream).
            define_macros=[("TORCH_TARGET_VERSION", TARGET_VERSION), ("USE_CUDA", "1")],
            extra_compile_args=["-std=c++17", "-fvisibility=hidden"],
        ),
    ],
    cmdclass={"build_ext": BuildExt},
)
