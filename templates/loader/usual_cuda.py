def _usual() -> tuple[str, str] | None:
    """The usual case, None for any other: no override, and cuda-bindings' metadata (or for
    builds that do not use it, the CUDA runtime wheels) naming a build whose floor is met."""
    if any(os.environ.get(name) for name in (*_VARIANT_VARS, *_CUDA_VARS)):
        return None
    if "cuda-bindings" in _SOURCES:
        version = _distribution("cuda-bindings")[0] or ""
        label = f"cu{_number(version)}"
        if label not in _VARIANTS or _below_floor(label, version):
            return None
        how = f"cuda-bindings {version} is installed (from its distribution metadata)"
        return label, how
    found = [(n, m, _distribution(n)[0]) for n, m in _RUNTIME_WHEELS]
    majors = {m or _number(v) for _, m, v in found if v is not None}
    if len(majors) != 1 or f"cu{min(majors)}" not in _VARIANTS:
        return None
    wheels = ", ".join(f"{n} {v}" for n, _, v in found if v is not None)
    return f"cu{min(majors)}", f"the CUDA runtime wheel {wheels} is installed"


# The CUDA runtime component wheels and the CUDA major each holds (0: its version's major).
_RUNTIME_WHEELS = (("nvidia-cuda-runtime-cu12", 12), ("nvidia-cuda-runtime", 0))
_CUDA_VARS = ("WHEELMERGE_CUDA_MAJOR", "WHEELMERGE_IGNORE_CUDA_BINDINGS")


def _number(text: str, part: int = 0) -> int:
    """The number part PART of a version starts with ("12.9rc1" -> 12; 1 -> 9), else -1."""
    pieces = text.strip().split(".")
    if part and (len(pieces) <= part or pieces[0].strip("0123456789") or not pieces[0]):
        return -1
    digits = pieces[part][: len(pieces[part]) - len(pieces[part].lstrip("0123456789"))]
    return int(digits) if digits else -1


def _below_floor(label: str, version: str) -> bool:
    """Whether VERSION is of the major of the cuda-bindings LABEL's build was compiled
    against (build_info "cuda_bindings") but of an older minor."""
    floor = _BUILD_INFO[label].get("cuda_bindings", "")
    found, needed = (
        (_number(version), _number(version, 1)),
        (_number(floor), _number(floor, 1)),
    )
    return (
        min(found[1], needed[1]) >= 0 and found[0] == needed[0] and found[1] < needed[1]
    )
