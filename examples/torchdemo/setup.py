"""Builds torchdemo against the torch of the running interpreter and the CUDA toolkit at CUDA_HOME.

torch decides the build: its headers and libraries (torch.utils.cpp_extension.CUDAExtension),
its release (the requirement `torch>=2.10,<2.11` for a build against 2.10) and its CUDA major,
which the toolkit must share. Build without build isolation, in the environment of the torch to
build against (`pip wheel --no-build-isolation .`), or let `wheelmerge build` do it per variant.

The device code (csrc/scale_add.cu) is compiled with the toolkit's NVRTC
($CUDA_HOME/lib64/libnvrtc.so.<major>, through ctypes) into a cubin for each architecture of
TORCH_CUDA_ARCH_LIST (default "9.0"; "+PTX" adds PTX of that architecture), embedded into the
extension module as a generated header. No nvcc is needed, so a toolkit assembled from NVIDIA's
wheels (scripts/cuda12-toolkit.sh) builds the same way as a full installation.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
from pathlib import Path

from setuptools import setup

try:
    import torch
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension
except ImportError as error:
    raise SystemExit(f"torchdemo: building needs the torch to build against in the build environment "
                     f"({type(error).__name__}: {error}); build with `wheelmerge build`, which installs "
                     "each variant's torch, or with --no-build-isolation where that torch is installed") from error

HERE = Path(__file__).resolve().parent
KERNEL_SOURCE = HERE / "csrc" / "scale_add.cu"
DEFAULT_ARCH_LIST = "9.0"


def fail(message: str) -> SystemExit:
    return SystemExit(f"torchdemo: {message}")


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


def check_toolkit(toolkit: tuple[int, int], root: Path) -> None:
    """The extension runs on the CUDA runtime torch loads, so the toolkit's major must be torch's."""
    if torch.version.cuda is None:
        raise fail(f"torch {torch.__version__} is built without CUDA; torchdemo needs a CUDA build")
    torch_major = int(torch.version.cuda.split(".")[0])
    if toolkit[0] != torch_major:
        raise fail(f"torch {torch.__version__} is built with CUDA {torch.version.cuda}, but the toolkit "
                   f"at CUDA_HOME={root} is CUDA {toolkit[0]}.{toolkit[1]}; use a CUDA {torch_major} toolkit")
    wanted = os.environ.get("WHEELMERGE_BUILD_CUDA_MAJOR", "")
    if wanted and wanted != str(toolkit[0]):
        raise fail(f"WHEELMERGE_BUILD_CUDA_MAJOR={wanted}, but the toolkit at CUDA_HOME={root} "
                   f"is CUDA {toolkit[0]}")
    # `wheelmerge build` names the variant it builds: torch210_cu12 is torch 2.10 with CUDA 12.
    label = f"torch{TORCH[0]}{TORCH[1]}_cu{torch_major}"
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
             "#include <cstddef>", "namespace torchdemo {",
             "struct KernelImage { int arch; bool ptx; const unsigned char* data; std::size_t size; };"]
    for index, image in enumerate(images):
        body = ",".join(str(b) for b in image)
        lines.append(f"inline constexpr unsigned char kImage{index}[] = {{{body}}};")
    entries = ", ".join(f"{{{arch}, {'true' if ptx else 'false'}, kImage{index}, sizeof kImage{index}}}"
                        for index, (arch, ptx) in enumerate(targets))
    lines += [f"inline constexpr KernelImage kKernelImages[] = {{{entries}}};", "}  // namespace torchdemo", ""]
    return "\n".join(lines)


TORCH = torch_release()
TOOLKIT = toolkit_root()
TOOLKIT_VERSION = toolkit_version(TOOLKIT)
check_toolkit(TOOLKIT_VERSION, TOOLKIT)


class BuildExt(BuildExtension):
    """Compiles the device code into a header, then the extension that embeds it."""

    def build_extensions(self) -> None:
        generated = Path(self.build_temp).resolve() / "torchdemo-generated"  # ninja runs elsewhere
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
    # The torch release built against, and no other: its C++ ABI changes with every release.
    install_requires=[f"torch>={TORCH[0]}.{TORCH[1]},<{TORCH[0]}.{TORCH[1] + 1}"],
    ext_modules=[
        CUDAExtension(
            "torchdemo._C",
            sources=["csrc/ops.cpp", "csrc/scale_add_cuda.cpp"],
            # Numbers, not a string literal: a build through ninja's shell would lose the quotes.
            define_macros=[("TORCHDEMO_TORCH_CUDA_MAJOR", torch.version.cuda.split(".")[0]),
                           ("TORCHDEMO_TORCH_CUDA_MINOR", torch.version.cuda.split(".")[1])],
        ),
    ],
    cmdclass={"build_ext": BuildExt},
)
