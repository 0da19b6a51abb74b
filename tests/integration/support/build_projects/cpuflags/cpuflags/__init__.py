from cpuflags._level import avx2, compiled  # noqa: F401
