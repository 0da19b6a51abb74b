"""Runs the wheelmerge binary as one child and measures it: exit code, output, wall time and
peak RSS (GNU time), optionally under an address-space limit. Shared by the suites that hold the
binary to resource budgets (test_bad_inputs.py, test_hostile.py)."""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BINARY = Path(os.environ.get("WHEELMERGE") or ROOT / "build" / "wheelmerge")


# GNU time (Debian's `time` package, installed by scripts/setup.sh): the binary's own peak RSS.
GNU_TIME = "/usr/bin/time"


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
    # The peak RSS is GNU time's (%M: its own child's wait4), not this process's wait4: a child
    # of this test worker starts with the worker's high-water mark (fork or vfork, it is kept
    # across exec), so ru_maxrss here would be the larger of the worker's and the binary's. The
    # address-space limit is set by util-linux's prlimit, which then execs the binary.
    command = [str(binary), *args]
    if use_limit:
        command = ["prlimit", f"--as={limit_as}:{limit_as}", "--", *command]

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as stats:
        start = time.monotonic()
        proc = subprocess.Popen([GNU_TIME, "-o", stats.name, "-f", "%M", *command], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                _, status, usage = os.wait4(proc.pid, 0)
                timed_out = True
                break
            time.sleep(0.002)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        rc, maxrss_kib = os.waitstatus_to_exitcode(status), 0
        for line in stats.read().splitlines():  # "Command terminated by signal N", then %M
            if line.startswith("Command terminated by signal "):
                rc = -int(line.rsplit(" ", 1)[1])
            elif line.isdigit():
                maxrss_kib = int(line)
        return Run(rc, out.read().decode("utf-8", "replace"),
                   err.read().decode("utf-8", "replace"), wall, maxrss_kib, timed_out,
                   usage.ru_utime + usage.ru_stime)
