"""Runs the wheelmerge binary as one child and measures it: exit code, output, wall time and
peak RSS (wait4), optionally under an address-space limit. Shared by the suites that hold the
binary to resource budgets (test_bad_inputs.py, test_hostile.py)."""

from __future__ import annotations

import dataclasses
import functools
import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("WHEELMERGE") or ROOT / "build" / "wheelmerge")


@dataclasses.dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    wall_s: float
    maxrss_kib: int
    timed_out: bool = False
    # User and system CPU time of the child: the budgets' measure, as it does not grow when
    # other processes (parallel test workers) share the cores, while wall time does.
    cpu_s: float = 0.0


@functools.lru_cache(maxsize=None)
def sanitized_binary(binary: Path = BINARY) -> bool:
    """Sanitizer runtimes reserve terabytes of address space (no RLIMIT_AS for them) and hold
    shadow memory, so memory and time budgets are the release build's to keep."""
    data = binary.read_bytes()
    return any(s in data for s in (b"__asan_init", b"__tsan_init", b"__msan_init", b"__hwasan_init"))


def run_measured(args: list[str], cwd: Path, *, timeout: float, limit_as: int | None = None,
                 binary: Path = BINARY) -> Run:
    """Runs `binary args` in `cwd`; past `timeout` seconds the child is killed and the Run says
    timed_out. `limit_as`: an address-space limit, left out for sanitizer builds."""
    env = dict(os.environ, NO_COLOR="1", LC_ALL="C.UTF-8")
    use_limit = limit_as is not None and not sanitized_binary(binary)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen([str(binary), *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, preexec_fn=limit if use_limit else None)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.002)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return Run(os.waitstatus_to_exitcode(status), out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), wall, usage.ru_maxrss, timed_out,
                   usage.ru_utime + usage.ru_stime)
