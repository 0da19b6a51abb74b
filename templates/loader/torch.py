# --- selector torch: labels torch210_cu12 (torch's major.minor, the CUDA major) ---------------


def _torch_label(label: str) -> tuple[int, int, int | None, bool]:
    """ "torch210_cu12" -> (2, 10, 12, False): torch 2.10 built with CUDA 12;
    "torch210plus_cu13" -> (2, 10, 13, True): torch 2.10 or later with CUDA 13;
    "torch210_cpu" -> (2, 10, None, False): a CPU-only torch 2.10."""
    version, _, build = label[len("torch") :].partition("_")
    floor = version.endswith("plus")
    version = version[: len(version) - 4] if floor else version
    cuda = None if build == "cpu" else int(build[len("cu") :])
    return int(version[0]), int(version[1:]), cuda, floor


def _major_minor(version: str) -> tuple[int, int] | None:
    """(major, minor) a version starts with ("2.10.0+cu128" -> (2, 10)), or None."""
    parts = version.strip().split(".")
    digits = [part[: len(part) - len(part.lstrip("0123456789"))] for part in parts[:2]]
    if len(digits) < 2 or not digits[0] or not digits[1] or digits[0] != parts[0]:
        return None
    return int(digits[0]), int(digits[1])


def _detect_build() -> tuple[str, str]:
    override = _override()
    found = _torch()
    if found.version is None:
        needs = f"the {override[0]} build" if override else "every build"
        raise _error(
            f"cannot select a torch build: {found.why}, and {needs} needs torch",
            _torch_fix([override[0]] if override else list(_VARIANTS)),
        )
    fitting = [label for label in _VARIANTS if _torch_fits(label, found)]
    if override is not None:
        label, how, variable = override
        if label in fitting:
            return label, f"{how}, and {found.described} is installed"
        fixes = [_torch_fix([label])]
        if fitting:
            fixes.append(
                (
                    f"use the {fitting[-1]} build, which fits the installed torch",
                    [f"unset {variable}"],
                )
            )
        raise _error(
            f"cannot select a torch build: {how}, but {found.described} is installed; "
            f"the {label} build needs {_torch_needs(label)}",
            *fixes,
        )
    if not fitting:
        raise _error(
            f"cannot select a torch build: {found.described} is installed, and no build was compiled for it",
            _torch_fix(list(_VARIANTS)),
        )
    return fitting[-1], f"{found.described} is installed"


class _Torch:
    """The installed torch: version (None when it cannot be imported, with why), cuda
    (torch.version.cuda; None for a CPU-only torch) and a description."""

    def __init__(self, version: str | None, cuda: str | None, why: str) -> None:
        self.version, self.cuda, self.why = version, cuda, why
        built = (
            f"built with CUDA {cuda}"
            if cuda
            else "CPU-only: torch.version.cuda is None"
        )
        self.described = f"torch {version} ({built})" if version is not None else why


def _torch() -> _Torch:
    """Imports torch, as every build needs it loaded before its extensions. Never raises."""
    try:
        with _Attempt():
            return _import_torch()
    except _Unknown as why:
        return _Torch(None, None, str(why))


def _import_torch() -> _Torch:
    import importlib

    try:
        torch = importlib.import_module("torch")
    except ModuleNotFoundError as error:
        what = f"`import torch` failed ({type(error).__name__}: {error})"
        raise _Unknown(
            what if error.name != "torch" else f"torch is not installed ({error})"
        )
    except SystemExit as error:  # a broken torch can fail with anything
        raise _Unknown(f"`import torch` failed (SystemExit: {error})") from error
    except Exception as error:
        raise _Unknown(
            f"`import torch` failed ({type(error).__name__}: {error})"
        ) from error
    with _Attempt("reading torch's version failed"):
        version = str(torch.__version__).strip()
        cuda = getattr(getattr(torch, "version", None), "cuda", None)
    return _Torch(version, None if cuda is None else str(cuda).strip(), "")


def _torch_fits(label: str, found: _Torch) -> bool:
    """Whether LABEL's build runs with torch FOUND: the same torch major.minor (the C++ ABI of
    torch changes between minors), or for a floor label (a build against torch's stable ABI)
    that major.minor or later; and the same CUDA major, or a CPU-only torch for a _cpu label."""
    major, minor, cuda_major, floor = _torch_label(label)
    installed = None if found.version is None else _major_minor(found.version)
    if installed is None:
        return False
    if found.cuda is None:
        fits_cuda = cuda_major is None
    else:
        cuda = _major_minor(found.cuda + ".0")
        fits_cuda = cuda is not None and cuda[0] == cuda_major
    if floor:
        return fits_cuda and installed[0] == major and installed[1] >= minor
    return fits_cuda and installed == (major, minor)


def _torch_needs(label: str) -> str:
    """ "torch 2.10 built with CUDA 12" for torch210_cu12, "torch 2.10 or a later 2.x built with
    CUDA 13" for torch210plus_cu13, "a CPU-only torch 2.10" for torch210_cpu."""
    major, minor, cuda_major, floor = _torch_label(label)
    version = f"{major}.{minor} or a later {major}.x" if floor else f"{major}.{minor}"
    if cuda_major is None:
        return f"a CPU-only torch {version}"
    return f"torch {version} built with CUDA {cuda_major}"


def _torch_fix(labels: list[str]) -> tuple[str, list[str]]:
    """Installing the torch of each of LABELS; where the build recorded which CUDA its torch
    had (build_info "torch_cuda"), PyTorch's own index for that CUDA is named as well, and for
    a CPU-only build PyTorch's CPU index."""
    commands = []
    for label in labels:
        major, minor, cuda_major, floor = _torch_label(label)
        wanted = (
            f"torch>={major}.{minor},<{major + 1}"
            if floor
            else f"torch=={major}.{minor}.*"
        )
        install = f'pip install "{wanted}"'
        if cuda_major is None:
            commands.append(
                f"{install} --index-url https://download.pytorch.org/whl/cpu  # {label}: {_torch_needs(label)}"
            )
            continue
        commands.append(f"{install}  # {label}: {_torch_needs(label)}")
        recorded = _major_minor(_BUILD_INFO[label].get("torch_cuda", ""))
        if recorded is not None and recorded[0] == cuda_major:
            cu = f"cu{recorded[0]}{recorded[1]}"
            commands.append(
                f"{install} --index-url https://download.pytorch.org/whl/{cu}  # the same with "
                f"CUDA {recorded[0]}.{recorded[1]}, which {label} was built with"
            )
    which = "it was" if len(labels) == 1 else "one of them was"
    needs = "its torch.version.cuda must be of the CUDA major the label names"
    if any(label.endswith("_cpu") for label in labels):
        needs += ", None for a _cpu build"
    return f"Install the torch {which} built for ({needs})", commands


def _general_fixes() -> list[tuple[str, list[str]]]:
    return [_torch_fix(list(_VARIANTS))]


def _suggested() -> str:
    return _VARIANTS[-1]


def _detected() -> list[tuple[str, str]]:
    return [("torch", _torch().described)]
