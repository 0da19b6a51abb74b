# --- selector cpu: labels x86_64_v1 to x86_64_v4 (the x86-64 psABI level) -------------------

# The x86-64 psABI levels above the baseline: what each adds, as (name, CPUID leaf, register
# index in (EAX, EBX, ECX, EDX), bit, the /proc/cpuinfo flag). Every level includes the ones below.
_CPU_FEATURES = {
    2: (
        ("CMPXCHG16B", 1, 2, 13, "cx16"),
        ("LAHF-SAHF", 0x80000001, 2, 0, "lahf_lm"),
        ("POPCNT", 1, 2, 23, "popcnt"),
        ("SSE3", 1, 2, 0, "pni"),
        ("SSE4_1", 1, 2, 19, "sse4_1"),
        ("SSE4_2", 1, 2, 20, "sse4_2"),
        ("SSSE3", 1, 2, 9, "ssse3"),
    ),
    3: (
        ("AVX", 1, 2, 28, "avx"),
        ("AVX2", 7, 1, 5, "avx2"),
        ("BMI1", 7, 1, 3, "bmi1"),
        ("BMI2", 7, 1, 8, "bmi2"),
        ("F16C", 1, 2, 29, "f16c"),
        ("FMA", 1, 2, 12, "fma"),
        ("LZCNT", 0x80000001, 2, 5, "abm"),
        ("MOVBE", 1, 2, 22, "movbe"),
        ("OSXSAVE", 1, 2, 27, "xsave"),
    ),
    4: (
        ("AVX512F", 7, 1, 16, "avx512f"),
        ("AVX512BW", 7, 1, 30, "avx512bw"),
        ("AVX512CD", 7, 1, 28, "avx512cd"),
        ("AVX512DQ", 7, 1, 17, "avx512dq"),
        ("AVX512VL", 7, 1, 31, "avx512vl"),
    ),
}
# The register state the OS must save for a level's instructions to work: XCR0 bits.
_XCR0_BITS = {
    3: (("XCR0 SSE state", 1), ("XCR0 AVX state", 2)),
    4: (
        ("XCR0 opmask state", 5),
        ("XCR0 ZMM_Hi256 state", 6),
        ("XCR0 Hi16_ZMM state", 7),
    ),
}
# void cpuid(uint32_t leaf /* edi */, uint32_t subleaf /* esi */, uint32_t out[4] /* rdx */):
# push rbx; mov r8, rdx; mov eax, edi; mov ecx, esi; cpuid; mov [r8], eax; mov [r8+4], ebx;
# mov [r8+8], ecx; mov [r8+12], edx; pop rbx; ret
_CPUID_CODE = bytes.fromhex("534989d089f889f10fa241890041895804418948084189500c5bc3")
# uint64_t xgetbv(uint32_t xcr /* edi */): mov ecx, edi; xgetbv; shl rdx, 32; or rax, rdx; ret
_XGETBV_CODE = bytes.fromhex("89f90f01d048c1e2204809d0c3")


def _detect_build() -> tuple[str, str]:
    cpu = _cpu()
    if cpu.level == 0:
        raise _error(
            f"cannot select a CPU build: {cpu.described}, and every build is for "
            "x86-64",
            (
                f"Install a build of {_DISTRIBUTION} for this machine",
                [f'pip install --force-reinstall "{_DISTRIBUTION}"'],
            ),
        )
    runnable = [label for label in _VARIANTS if int(label[-1]) <= cpu.level]
    override = _override()
    if override is not None:
        label, how, variable = override
        if label in runnable:
            return label, f"{how}, and {cpu.described}"
        raise _error(
            f"cannot select a CPU build: {how}, but {cpu.described}; the {label} build would "
            "stop with an illegal instruction here",
            *(
                [
                    (
                        "choose a build this CPU runs",
                        [f"export {variable}={runnable[-1]}"],
                    )
                ]
                if runnable
                else []
            ),
            (
                "unset it to select the highest build this CPU runs",
                [f"unset {variable}"],
            ),
        )
    if not runnable:
        raise _error(
            f"cannot select a CPU build: {cpu.described}, below every build",
            (
                f"Install a wheel of it with a build for this CPU (x86_64_v{cpu.level} or lower)",
                [f'pip install --force-reinstall "{_DISTRIBUTION}"'],
            ),
        )
    return runnable[-1], cpu.described


def _cpu() -> _Cpu:
    """This CPU's psABI level: level (0: not x86-64), method (how it was found; None when it
    was not), missing (what the next level lacks) and a description. Never raises."""
    import ctypes

    # platform.machine(), without the cost of importing platform (and re).
    if sys.platform == "win32":
        machine = os.environ.get("PROCESSOR_ARCHITECTURE", "")
    else:
        machine = os.uname().machine
    if machine.lower() not in ("x86_64", "amd64"):
        return _Cpu(
            level=0,
            method=None,
            missing=[],
            described=f"platform.machine() is {machine!r}, not x86-64",
        )
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return _Cpu(
            level=0,
            method=None,
            missing=[],
            described="this Python is 32-bit, not x86-64",
        )
    try:
        with _Attempt():
            present = _cpuid_features()
        method = "CPUID and XGETBV"
    except _Unknown as error:
        why = str(error)
        try:
            with _Attempt():
                present = _cpuinfo_features()
            method = f"/proc/cpuinfo flags; CPUID could not be run: {why}"
        except _Unknown as second:
            # Every x86-64 CPU runs the baseline; nothing above it is certain.
            return _Cpu(
                level=1,
                method=None,
                missing=[],
                described=(
                    f"this CPU's level could not be detected (CPUID: {why}; /proc/cpuinfo: "
                    f"{second}), so only x86-64-v1 is certain"
                ),
            )
    level, missing = 1, []
    for candidate in (2, 3, 4):
        needed = [name for name, *_ in _CPU_FEATURES[candidate]]
        needed += [name for name, _ in _XCR0_BITS.get(candidate, ())]
        missing = [name for name in needed if name not in present]
        if missing:
            break
        level = candidate
    return _Cpu(
        level=level,
        method=method,
        missing=missing,
        described=f"this CPU supports x86-64-v{level} (detected with {method})",
    )


def _cpuid_features() -> set[str]:
    """The level features this CPU has and the OS enables, by executing CPUID and XGETBV."""
    import ctypes

    registers = {}
    with _MachineCode(_CPUID_CODE + _XGETBV_CODE) as address:
        cpuid = ctypes.CFUNCTYPE(
            None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint32 * 4)
        )(address)
        xgetbv = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint32)(
            address + len(_CPUID_CODE)
        )

        def query(leaf: int) -> tuple[int, ...]:
            out = (ctypes.c_uint32 * 4)()
            cpuid(leaf, 0, ctypes.byref(out))
            return tuple(out)

        highest = query(0)[0]
        highest_extended = query(0x80000000)[0]
        for leaf in (1, 7, 0x80000001):
            available = highest_extended if leaf >= 0x80000000 else highest
            registers[leaf] = query(leaf) if leaf <= available else (0, 0, 0, 0)
        present = {
            name
            for features in _CPU_FEATURES.values()
            for name, leaf, register, bit, _ in features
            if registers[leaf][register] >> bit & 1
        }
        # XGETBV raises #UD unless the OS set CR4.OSXSAVE, which CPUID reports as OSXSAVE.
        xcr0 = int(xgetbv(0)) if "OSXSAVE" in present else 0
    present.update(
        name for bits in _XCR0_BITS.values() for name, bit in bits if xcr0 >> bit & 1
    )
    return present


class _MachineCode:
    """An anonymous page holding CODE, made executable (never writable and executable at
    once); its address while in the with block, unmapped after."""

    def __init__(self, code: bytes) -> None:
        self.code = code

    def __enter__(self) -> int:
        import ctypes
        import mmap

        libc = ctypes.CDLL(None, use_errno=True)
        self.mmap, self.mprotect, self.munmap = libc.mmap, libc.mprotect, libc.munmap
        self.mmap.restype = ctypes.c_void_p
        self.mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        self.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self.size = mmap.PAGESIZE
        address: int | None = self.mmap(
            None,
            self.size,
            mmap.PROT_READ | mmap.PROT_WRITE,
            mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
            -1,
            0,
        )
        if address is None or address == ctypes.c_void_p(-1).value:
            raise _os_error("mmap")
        self.address = address
        ctypes.memmove(address, self.code, len(self.code))
        # Hardened kernels (SELinux execmem, PaX) refuse this.
        if self.mprotect(address, self.size, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
            error = _os_error("mprotect(PROT_EXEC)")
            self.munmap(address, self.size)
            raise error
        return address

    def __exit__(self, *exc: object) -> None:
        self.munmap(self.address, self.size)


def _os_error(call: str) -> OSError:
    import ctypes

    number = ctypes.get_errno()
    return OSError(number, f"{call} failed: {os.strerror(number)}")


def _cpuinfo_features() -> set[str]:
    """The level features /proc/cpuinfo lists for the first CPU. Linux clears the flags of
    instructions whose register state it does not enable, so they stand for XCR0 as well."""
    with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
        for line in cpuinfo:
            key, _, value = line.partition(":")
            if key.strip() == "flags":
                flags = set(value.split())
                break
        else:
            raise LookupError("/proc/cpuinfo has no flags line")
    present = {
        name
        for features in _CPU_FEATURES.values()
        for name, _, _, _, flag in features
        if flag in flags
    }
    present.update(
        name
        for level, bits in _XCR0_BITS.items()
        for name, _ in bits
        if all(feature[0] in present for feature in _CPU_FEATURES[level])
    )
    return present


class _Cpu:
    """This CPU's psABI level (0: not x86-64), how it was found (None: it was not), what the
    next level lacks, and a description."""

    def __init__(
        self, level: int, method: str | None, missing: list[str], described: str
    ) -> None:
        self.level, self.method, self.missing, self.described = (
            level,
            method,
            missing,
            described,
        )


def _general_fixes() -> list[tuple[str, list[str]]]:
    return [
        ("choose a build explicitly", [f"export {_VARIANT_VARS[-1]}={_VARIANTS[0]}"])
    ]


def _suggested() -> str:
    runnable = [label for label in _VARIANTS if int(label[-1]) <= _cpu().level]
    return runnable[-1] if runnable else _VARIANTS[0]


def _detected() -> list[tuple[str, str]]:
    cpu = _cpu()
    if cpu.method is None:
        return [("CPU", cpu.described)]
    lacks = (f"CPU lacks for x86-64-v{cpu.level + 1}", ", ".join(cpu.missing))
    return [("CPU", f"x86-64-v{cpu.level} (detected with {cpu.method})"), lacks]
