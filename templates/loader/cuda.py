# --- selector cuda: labels cu12, cu13 (the CUDA major) ---------------------------------------
_ENV_VAR = "WHEELMERGE_CUDA_MAJOR"
_IGNORE_VAR = "WHEELMERGE_IGNORE_CUDA_BINDINGS"
_CU_RESULTS = {
    3: "CUDA_ERROR_NOT_INITIALIZED",
    34: "CUDA_ERROR_STUB_LIBRARY",
    35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
    100: "CUDA_ERROR_NO_DEVICE",
    999: "CUDA_ERROR_UNKNOWN",
}


def _detect_build() -> tuple[str, str]:
    override = _cuda_override()
    if override is not None:
        return _checked_override(*override)
    found = ""
    if "cuda-bindings" in _SOURCES:
        version, source = _cuda_bindings()
        if version is not None:
            how = f"cuda-bindings {version} is installed ({source})"
            label = f"cu{_major(version)}"
            if label not in _VARIANTS:
                raise _error(
                    f"cannot select a CUDA build: {how}, which needs a {label} build",
                    _install_fix(),
                )
            _check_floor(label, version, source)
            return label, how
        found = f"no cuda-bindings found: {source}"
        if "runtime" not in _SOURCES:
            raise _error(f"cannot select a CUDA build: {found}")
    runtime, chosen = _runtime_choice()
    found = "; ".join(filter(None, [found, runtime]))
    if chosen is not None:
        return chosen, found
    driver, how = _driver_major()
    found = "; ".join(filter(None, [found, how]))
    if driver is None:
        raise _error(f"cannot select a CUDA build: {found}")
    # A driver runs builds for its own and older CUDA majors: take the newest it supports.
    supported = [label for label in _VARIANTS if _major(label) <= driver]
    if not supported:
        raise _error(f"cannot select a CUDA build: {found}, older than every build")
    return supported[-1], found


def _major(text: str) -> int:
    """The number "cu13" or "13.0.2" starts with (-1 when none)."""
    return _number(text.strip().removeprefix("cu"))


def _cuda_override() -> tuple[str, str, str] | None:
    """(label, how, the variable to unset) of the variant override or WHEELMERGE_CUDA_MAJOR;
    None when neither is set. SelectionError for a malformed one, or when they disagree. The
    per-distribution variable, when set, decides alone."""
    variant = _override()
    value = os.environ.get(_ENV_VAR, "")
    if not value or (variant is not None and variant[2] == _VARIANT_VARS[0]):
        return variant
    digits = value.strip().removeprefix("cu")
    if not (digits.isascii() and digits.isdigit()):
        raise _error(
            f"cannot select a CUDA build: {_ENV_VAR}={value!r} is not a CUDA major version "
            "(expected e.g. 13 or cu13)",
            *_override_fixes(),
        )
    label, how = f"cu{_major(value)}", f"{_ENV_VAR}={value} is set"
    if variant is not None and variant[0] != label:
        raise _error(
            f"cannot select a CUDA build: {variant[1]} and {how}, and they name different builds",
            ("Unset one of them", [f"unset {_ENV_VAR}", f"unset {variant[2]}"]),
        )
    if label not in _VARIANTS:
        raise _error(
            f"cannot select a CUDA build: {how}, which needs a {label} build",
            *_override_fixes(),
        )
    return label, how, _ENV_VAR


def _checked_override(label: str, how: str, variable: str) -> tuple[str, str]:
    """The overriding LABEL, unless the installed cuda-bindings contradicts it."""
    ignore = os.environ.get(_IGNORE_VAR, "")
    if ignore.strip().lower() in ("1", "true", "yes", "on"):
        return label, f"{how} ({_IGNORE_VAR}={ignore}: cuda-bindings not checked)"
    if ignore.strip().lower() not in ("", "0", "false", "no", "off"):
        raise _error(
            f"cannot select a CUDA build: {_IGNORE_VAR}={ignore!r} is neither 1 nor 0",
            (
                (
                    f"Set it to 1 to let {variable} choose a build whatever cuda-bindings "
                    "is installed, or unset it"
                ),
                [f"export {_IGNORE_VAR}=1", f"unset {_IGNORE_VAR}"],
            ),
        )
    if "cuda-bindings" not in _SOURCES:
        return label, how
    version, source = _cuda_bindings()
    if version is None:  # with no cuda-bindings installed, the override alone decides
        return label, how
    if _major(version) == _major(label):
        _check_floor(label, version, source)
        return label, how
    installed = f"cu{_major(version)}"
    fixes = [
        (
            f"Install the cuda-bindings its {label} build needs",
            [_install_command(label)],
        )
    ]
    if installed in _VARIANTS:
        fixes.append(
            (
                f"use the {installed} build, which matches the installed cuda-bindings",
                [f"unset {variable}"],
            )
        )
    skip = f"if the {label} build works with cuda-bindings {version}, skip this check"
    fixes.append((skip, [f"export {_IGNORE_VAR}=1"]))
    raise _error(
        f"cannot select a CUDA build: {how}, but cuda-bindings {version} is installed "
        f"({source}); the {label} build needs cuda-bindings {_major(label)}",
        *fixes,
    )


def _check_floor(label: str, version: str, source: str) -> None:
    """Refuses cuda-bindings VERSION when LABEL's build was compiled against a newer minor of
    the same major (its build_info "cuda_bindings")."""
    if not _below_floor(label, version):
        return
    floor = _BUILD_INFO[label]["cuda_bindings"]
    major, minor = _number(floor), _number(floor, 1)
    raise _error(
        f"cannot select a CUDA build: the {label} build was compiled against cuda-bindings "
        f"{floor} and needs {major}.{minor} or newer, but cuda-bindings {version} is installed "
        f"({source})",
        (
            f"Install cuda-bindings {major}.{minor} or a newer {major}.x",
            [f'pip install "cuda-bindings>={major}.{minor},<{major + 1}"'],
        ),
    )


def _cuda_bindings() -> tuple[str | None, str]:
    """cuda-bindings' version and where it came from, or None and why it was not found: its
    distribution metadata, else ``cuda.bindings.__version__``. Never raises."""
    try:
        with _Attempt("detecting it failed"):
            return _find_cuda_bindings()
    except _Unknown as why:
        return None, str(why)


def _find_cuda_bindings() -> tuple[str | None, str]:
    import importlib

    where = "not in distribution metadata"
    version, directory = _distribution("cuda-bindings")
    if directory is None:
        version = _metadata_version("cuda-bindings")
    if version is not None and _major(version) >= 0:
        return version, "from its distribution metadata"
    if version is not None:
        where = (
            f"its distribution metadata has Version {version!r}, without a major number"
        )
    elif directory is not None:
        where = "its distribution metadata has no Version"
    with _Attempt(f"{where}, `import cuda.bindings` failed"):
        module = importlib.import_module("cuda.bindings")
    found = getattr(module, "__version__", None)
    if found is None:
        return None, f"{where}, cuda.bindings has no __version__"
    if _major(str(found)) < 0:
        return None, f"{where}, cuda.bindings.__version__ {found!r} has no major number"
    if where == "not in distribution metadata":
        return str(found).strip(), "from cuda.bindings.__version__"
    return str(found).strip(), f"from cuda.bindings.__version__, as {where}"


def _metadata_version(name: str) -> str | None:
    """NAME's version from importlib.metadata, for what no directory listing finds (zip files
    on sys.path, other finders): slower, so only asked when the listing found nothing."""
    import importlib.metadata

    try:
        version = importlib.metadata.version(name)
    except (ImportError, LookupError, OSError, ValueError):  # not found, or no Version
        return None
    return str(version).strip() if version else None


def _runtime_choice() -> tuple[str, str | None]:
    """(what the CUDA runtime wheels say, the build they select or None)."""
    found = []
    for name, major in _RUNTIME_WHEELS:
        version = _distribution(name)[0]
        if version is not None:
            found.append((f"{name} {version}", major or _major(version)))
    wheels = ", ".join(name for name, _ in found)
    majors = sorted({major for _, major in found})
    if len(majors) > 1:
        return (
            f"CUDA runtime wheels of more than one CUDA major are installed ({wheels}), so they select no build",
            None,
        )
    if majors and f"cu{majors[0]}" not in _VARIANTS:
        return (
            f"the CUDA runtime wheel {wheels} is installed, but this wheel has no cu{majors[0]} build",
            None,
        )
    if majors:
        return f"the CUDA runtime wheel {wheels} is installed", f"cu{majors[0]}"
    return "", None


def _driver_major() -> tuple[int | None, str]:
    """The CUDA major the driver supports, or None and why it is unknown. Never raises."""
    import ctypes

    try:
        # The driver's SONAME: "libcuda.so" is a development link or the toolkit's stub.
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        return None, f"the CUDA driver libcuda.so.1 could not be loaded ({error})"
    try:
        get_version = libcuda.cuDriverGetVersion
    except AttributeError as error:
        return None, f"the CUDA driver libcuda.so.1 has no cuDriverGetVersion ({error})"
    try:
        get_version.restype = ctypes.c_int
        get_version.argtypes = [ctypes.POINTER(ctypes.c_int)]
        version = ctypes.c_int(0)
        status = get_version(
            ctypes.byref(version)
        )  # needs no cuInit: no CUDA context is made
    except (OSError, TypeError, ValueError, ctypes.ArgumentError) as error:
        what = f"{type(error).__name__}: {error}"
        return None, f"calling cuDriverGetVersion of libcuda.so.1 failed ({what})"
    if status != 0:
        name = _CU_RESULTS.get(status)
        return (
            None,
            f"the CUDA driver's cuDriverGetVersion failed (CUresult {status}{', ' + name if name else ''})",
        )
    if version.value <= 0:
        return (
            None,
            f"the CUDA driver's cuDriverGetVersion reported version {version.value}",
        )
    major, minor = divmod(version.value, 1000)
    return major, f"the CUDA driver (libcuda.so.1) supports CUDA {major}.{minor // 10}"


def _install_command(label: str) -> str:
    """What installs what LABEL's build needs: its extras, else cuda-bindings or the runtime."""
    major = _major(label)
    if _EXTRAS[label]:
        return f'pip install "{_DISTRIBUTION}[{",".join(_EXTRAS[label])}]"'
    if "cuda-bindings" in _SOURCES:
        return f'pip install "cuda-bindings=={major}.*"'
    return _runtime_command(major)


def _runtime_command(major: int) -> str:
    # NVIDIA's runtime wheels are named per major up to 12, and versioned by major from 13 on.
    if major <= 12:
        return f'pip install "nvidia-cuda-runtime-cu{major}"'
    return f'pip install "nvidia-cuda-runtime=={major}.*"'


def _install_fix() -> tuple[str, list[str]]:
    what = (
        "the cuda-bindings of one of them"
        if "cuda-bindings" in _SOURCES
        else "what one of them needs"
    )
    return f"Install {what}", [_install_command(label) for label in _VARIANTS]


def _general_fixes() -> list[tuple[str, list[str]]]:
    fixes = [
        _install_fix(),
        ("choose a build explicitly", [f"export {_ENV_VAR}={_major(_VARIANTS[-1])}"]),
    ]
    if "cuda-bindings" in _SOURCES and "runtime" in _SOURCES:
        runtime = [_runtime_command(_major(label)) for label in _VARIANTS]
        fixes.insert(1, ("install the CUDA runtime wheel of one of them", runtime))
    return fixes


def _suggested() -> str:
    """The build an override fix proposes: the one that fits the environment, if any."""
    version = _cuda_bindings()[0] if "cuda-bindings" in _SOURCES else None
    installed = f"cu{_major(version)}" if version is not None else ""
    return installed if installed in _VARIANTS else _VARIANTS[-1]


def _override_fixes() -> list[tuple[str, list[str]]]:
    major, by = (
        _major(_suggested()),
        "the installed cuda-bindings"
        if "cuda-bindings" in _SOURCES
        else "the environment",
    )
    return [
        (
            f"Set {_ENV_VAR} to the CUDA major of one of them",
            [f"export {_ENV_VAR}={major}"],
        ),
        (f"unset it to select by {by}", [f"unset {_ENV_VAR}"]),
    ]


def _detected() -> list[tuple[str, str]]:
    """What the cuda rules look at, for the report."""
    version, source = _cuda_bindings()
    floors = [
        f"{label} needs cuda-bindings >= {info['cuda_bindings']}"
        for label, info in _BUILD_INFO.items()
        if info.get("cuda_bindings")
    ]
    found = [(name, major, _distribution(name)[0]) for name, major in _RUNTIME_WHEELS]
    runtimes = [
        f"{n} {v} (CUDA {m or _major(v)})" for n, m, v in found if v is not None
    ]
    wheels = []
    for entry in sys.path:
        try:
            children = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for child in children:
            if child.startswith("nvidia_") and child.endswith(".dist-info"):
                name, _, release = child[: -len(".dist-info")].partition("-")
                wheels.append(f"{name.replace('_', '-')} {release}")
    none = "none of " + ", ".join(name for name, _ in _RUNTIME_WHEELS) + " installed"
    gpus, why = _gpus()
    return [
        ("cuda-bindings", f"{version} ({source})" if version else source),
        ("cuda-bindings at", _distribution("cuda-bindings")[1] or ""),
        ("selection sources", ", ".join(_SOURCES)),
        ("floors", "; ".join(floors)),
        (
            "CUDA runtime wheels",
            ("; ".join(runtimes) or none) if "runtime" in _SOURCES else "",
        ),
        ("NVIDIA wheels", ", ".join(wheels) or "none"),
        ("CUDA driver", _driver_major()[1]),
        ("GPUs", ", ".join(f"{i}: {name} (sm_{cc})" for i, name, cc in gpus) or why),
        *_kernel_warnings(gpus),
    ]


def _gpus() -> tuple[list[tuple[int, str, int]], str]:
    """The GPUs NVML sees as (index, name, compute capability as 90), or none and why; it
    creates no CUDA context."""
    import ctypes

    try:
        nvml = ctypes.CDLL(
            "nvml.dll" if sys.platform == "win32" else "libnvidia-ml.so.1"
        )
        if nvml.nvmlInit_v2() != 0:
            return [], "unknown: nvmlInit_v2 failed"
    except (OSError, AttributeError) as error:
        return [], f"unknown: NVML could not be loaded ({error})"
    found = []
    try:
        count = ctypes.c_uint(0)
        nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
        for index in range(min(count.value, 64)):
            handle = ctypes.c_void_p()
            if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
                continue
            name = ctypes.create_string_buffer(96)
            nvml.nvmlDeviceGetName(handle, name, 96)
            major, minor = ctypes.c_int(0), ctypes.c_int(0)
            capability = nvml.nvmlDeviceGetCudaComputeCapability
            capability(handle, ctypes.byref(major), ctypes.byref(minor))
            label = name.value.decode(errors="replace")
            found.append((index, label, major.value * 10 + minor.value))
    finally:
        nvml.nvmlShutdown()
    return found, "none"


def _kernel_warnings(gpus: list[tuple[int, str, int]]) -> list[tuple[str, str]]:
    """A warning per visible GPU that some file of the selected build has no code for, which
    would fail with "no kernel image is available" when a kernel is launched. The code of each
    file is what wheelmerge read from its fat binaries when it merged the wheel (_GPU_CODE)."""
    try:
        label = _select()[0]
    except ImportError:
        return []
    warnings = []
    for stored, spelled in sorted(_GPU_CODE[label].items()):
        code = [_code(each) for each in spelled]
        for index, name, capability in gpus:
            if not any(
                _runs(kind, arch, suffix, capability) for kind, arch, suffix in code
            ):
                have = ", ".join(sorted(spelled))
                names = os.path.basename(stored)
                why = f"{names} of the {label} build has code for {have} only"
                kernels = "its kernels would fail with 'no kernel image is available'"
                warnings.append(
                    (
                        f"warning: GPU {index}",
                        f"{name} (sm_{capability}): {why}; {kernels}",
                    )
                )
    return warnings


def _runs(kind: int, arch: int, suffix: str, capability: int) -> bool:
    """Whether code of KIND (1 PTX, 2 SASS) for ARCH runs on a GPU of CAPABILITY: PTX on any
    later GPU, SASS within its major from its minor on (arch-specific SASS on its own GPU)."""
    if kind == 1:
        return arch <= capability
    if suffix == "a":
        return arch == capability
    return arch // 10 == capability // 10 and arch <= capability


def _code(spelled: str) -> tuple[int, int, str]:
    """(kind, architecture, suffix) of GPU code as nvcc spells it: "sm_90a" -> (2, 90, "a"),
    "compute_80" -> (1, 80, "")."""
    kind, _, arch = spelled.partition("_")
    suffix = arch[-1] if arch[-1:] in ("a", "f") else ""
    return (1 if kind == "compute" else 2, int(arch[: len(arch) - len(suffix)]), suffix)


def _number(text: str, part: int = 0) -> int:
    found: int = _loader._number(text, part)
    return found


def _below_floor(label: str, version: str) -> bool:
    found: bool = _loader._below_floor(label, version)
    return found
