"""Faults: killed, interrupted, out of space, unwritable, or told to overwrite an input, a merge
leaves either nothing or the complete wheel at the output path, nothing stray beside it, and
its inputs untouched ("Hardening", item 4; WHEEL_RULES.md "Writing", rule 12).

The inputs are two generated wheels of 256 MiB each (stored members of random-ish bytes, so
copying and hashing them is real work): a merge takes about 1.3 s on 2 cores, long enough to
be killed at many distinct moments. A reference merge gives the bytes every complete output
must have; ``python -m wheel unpack`` checks that reference against its RECORD once.

Some checks need what not every machine has; they skip, saying why: strace (signals injected
at a chosen system call), root and mount (a tiny tmpfs as a full disk), setpriv (a run as an
unprivileged user, since root writes anywhere), root and unshare (a run with /proc hidden).
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pytest

from conftest import clean_env, run, tool_python
from test_scale import (LABELS, MIB, NAME, OUTPUT_NAME, common_small_members, input_path,
                        random_block, sanitized_binary, stored_repeated, write_wheel_streaming)

STRACE = shutil.which("strace")
SETPRIV = shutil.which("setpriv")
NOBODY = 65534

BLOCK = 65_521  # a prime number of bytes, repeated: cheap to write, no misplaced copy lines up


def make_inputs(directory: Path, member_mib: int = 32, kernels: int = 6, shared: int = 2,
                small: int = 300) -> list[Path]:
    """Two builds: ``kernels`` variant .cubin files and ``shared`` shared data files of
    ``member_mib`` MiB each (stored), ``small`` small shared modules (deflated)."""
    directory.mkdir(parents=True, exist_ok=True)
    count = (member_mib * MIB) // BLOCK
    modules = {f"{NAME}/mods/m{i:04d}.py": f"X = {i}\n".encode() for i in range(small)}
    data = {f"{NAME}/data/shared{j}.bin": stored_repeated(random_block(100 + j, BLOCK), count)
            for j in range(shared)}
    paths = []
    for label in LABELS:
        before, after = common_small_members()
        variant = {f"{NAME}/kernels/k{j}.cubin": stored_repeated(random_block(int(label[2:]) * 10 + j, BLOCK), count)
                   for j in range(kernels)}
        paths.append(write_wheel_streaming(input_path(directory, label),
                                           {**before, **data, **variant, **modules, **after}))
    return paths


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(8 * MIB):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class FileState:
    """What identifies a file's content and identity: replaced or rewritten, it changes."""

    inode: int
    size: int
    mtime_ns: int

    @staticmethod
    def of(path: Path) -> "FileState":
        s = path.stat()
        return FileState(s.st_ino, s.st_size, s.st_mtime_ns)


@dataclass
class Inputs:
    paths: list[Path]
    digests: dict[Path, str]
    states: dict[Path, FileState]

    @staticmethod
    def of(paths: Sequence[Path]) -> "Inputs":
        return Inputs(list(paths), {p: sha256_file(p) for p in paths}, {p: FileState.of(p) for p in paths})

    def assert_untouched(self, hash_them: bool = True) -> None:
        for p in self.paths:
            assert p.is_file(), f"input {p} is gone"
            assert FileState.of(p) == self.states[p], f"input {p} was modified or replaced"
            if hash_them:
                assert sha256_file(p) == self.digests[p], f"input {p} changed content"


@dataclass
class Reference:
    wheel: Path
    digest: str
    wall_s: float


def wheelmerge_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = clean_env({"NO_COLOR": "1"})
    env.pop("SOURCE_DATE_EPOCH", None)
    env.update(extra or {})
    return env


def merge_command(binary: Path, inputs: Sequence[Path | str], out: Path) -> list[str]:
    return [str(binary), "merge", *map(str, inputs), "-o", str(out)]


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.fixture(scope="module")
def fault_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("faults")


@pytest.fixture(scope="module")
def inputs(fault_dir: Path) -> Inputs:
    return Inputs.of(make_inputs(fault_dir / "inputs"))


@pytest.fixture(scope="module")
def reference(wheelmerge_bin: Path, inputs: Inputs, fault_dir: Path) -> Reference:
    """A merge left alone: the bytes of every complete output; checked by wheel unpack."""
    out = fault_dir / "reference"
    run(merge_command(wheelmerge_bin, inputs.paths, out), env=wheelmerge_env())
    assert listing(out) == [OUTPUT_NAME]
    # How long a run takes, warm (the first run may wait on the inputs' write-back): the kills
    # are spread over this span.
    walls = []
    for i in range(3):
        scratch = fault_dir / f"timing-{i}"
        start = time.perf_counter()
        run(merge_command(wheelmerge_bin, inputs.paths, scratch), env=wheelmerge_env())
        walls.append(time.perf_counter() - start)
        shutil.rmtree(scratch)
    wall = sorted(walls)[1]
    wheel = out / OUTPUT_NAME
    unpacked = fault_dir / "reference-unpacked"
    run([tool_python(), "-m", "wheel", "unpack", "-d", unpacked, wheel])
    shutil.rmtree(unpacked)
    return Reference(wheel, sha256_file(wheel), wall)


def check_outcome(out: Path, reference: Reference, before: Sequence[str] = ()) -> str:
    """The output directory holds what it held before plus, at most, the complete wheel.
    Returns "nothing" or "complete"."""
    names, kept = set(listing(out)), set(before)
    assert kept <= names, f"{out}: lost {sorted(kept - names)}"
    new = names - kept
    assert new <= {OUTPUT_NAME}, f"stray files in {out}: {sorted(new - {OUTPUT_NAME})}"
    if OUTPUT_NAME in new:
        assert sha256_file(out / OUTPUT_NAME) == reference.digest, (
            "an incomplete or different wheel at the output path")
        return "complete"
    return "nothing"


def signal_trials(binary: Path, inputs: Inputs, reference: Reference, work: Path, signum: int,
                  trials: int, seed: int, beside_inputs_every: int = 0) -> list[tuple]:
    """Runs the merge ``trials`` times, sending ``signum`` after a delay drawn from one slice
    of [0, 1.15 x the run's time] per trial (so the moments spread over the whole run),
    then checks the output directory. Every ``beside_inputs_every``-th trial writes into the
    inputs' own directory. Returns (delay, status, outcome, seconds from signal to exit) per
    trial."""
    rng = random.Random(seed)
    # The span is measured again right before the trials, and the shorter time taken: the
    # module's reference may have been timed while the machine was busier than now (a run that
    # now ends in 0.4 s against a 1.2 s reference leaves most kills after its end).
    scratch = work / "timing"
    start = time.perf_counter()
    run(merge_command(binary, inputs.paths, scratch), env=wheelmerge_env())
    span = 1.15 * min(reference.wall_s, time.perf_counter() - start)
    shutil.rmtree(scratch)
    outcomes = []
    input_dir = inputs.paths[0].parent
    input_listing = listing(input_dir)
    for i in range(trials):
        delay = (i + rng.random()) / trials * span
        beside = beside_inputs_every and i % beside_inputs_every == beside_inputs_every - 1
        out = input_dir if beside else work / f"out-{i}"
        process = subprocess.Popen(merge_command(binary, inputs.paths, out), env=wheelmerge_env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(delay)
        still_running = process.poll() is None
        process.send_signal(signum)
        sent = time.perf_counter()
        _, stderr = process.communicate(timeout=120)
        latency = time.perf_counter() - sent
        status = process.returncode
        if still_running and status != 0:
            assert status in (-signum, 128 + signum), (
                f"trial {i}: status {status} after signal {signum}\n{stderr.decode(errors='replace')}")
        else:
            assert status == 0, f"trial {i}: status {status}\n{stderr.decode(errors='replace')}"
        outcome = check_outcome(out, reference, input_listing if beside else ())
        if status == 0:
            assert outcome == "complete", f"trial {i}: success without the wheel"
        outcomes.append((round(delay, 3), status, outcome, round(latency, 3)))
        if beside:
            (input_dir / OUTPUT_NAME).unlink(missing_ok=True)
            assert listing(input_dir) == input_listing
        else:
            shutil.rmtree(out, ignore_errors=True)
        inputs.assert_untouched(hash_them=False)
    inputs.assert_untouched()
    return outcomes


# --- (a) SIGKILL at any moment ----------------------------------------------------------------------

def test_sigkill_at_random_moments(wheelmerge_bin: Path, inputs: Inputs, reference: Reference,
                                   tmp_path: Path) -> None:
    """15 kills spread over the run (every third into the inputs' directory): each leaves the
    complete wheel or nothing, no temporary file, and the inputs as they were."""
    outcomes = signal_trials(wheelmerge_bin, inputs, reference, tmp_path, signal.SIGKILL,
                             trials=15, seed=1, beside_inputs_every=3)
    killed = [o for o in outcomes if o[1] == -signal.SIGKILL]
    # The run lasts about the reference's time: most kills land while it works.
    assert len(killed) >= 5, f"too few kills landed mid-run to mean anything: {outcomes}"
    print(f"SIGKILL trials (delay s, status, outcome, exit after s): {outcomes}")


needs_strace = pytest.mark.skipif(STRACE is None, reason="strace is not installed (signals at a chosen system call)")


def strace_inject(syscall: str, inject: str, command: Sequence[str]) -> list[str]:
    """The command under strace, with ``inject`` (strace's -e inject=SYSCALL:...) at ``syscall``.
    LeakSanitizer cannot run under ptrace, so a sanitizer build's leak check is left off here
    (the rest of the suite runs it)."""
    asan = os.environ.get("ASAN_OPTIONS", "")
    return ["env", f"ASAN_OPTIONS={asan}:detect_leaks=0" if asan else "ASAN_OPTIONS=detect_leaks=0",
            STRACE, "-f", "-qq", "-o", "/dev/null", "-e", f"trace={syscall}",
            "-e", f"inject={syscall}:{inject}", *command]


def strace_kill_at(syscall: str, signame: str, command: Sequence[str]) -> list[str]:
    """The command under strace, ``signame`` injected on entry to the first ``syscall``."""
    return strace_inject(syscall, f"signal={signame}:when=1", command)


@needs_strace
@pytest.mark.parametrize("syscall", ["copy_file_range", "linkat"])
def test_sigkill_at_a_chosen_step(wheelmerge_bin: Path, inputs: Inputs, reference: Reference,
                                  tmp_path: Path, syscall: str) -> None:
    """Killed on entry to the first member copy, or to the link that names the output: an
    unnamed temporary file disappears with the process."""
    out = tmp_path / "out"
    result = subprocess.run(strace_kill_at(syscall, "SIGKILL", merge_command(wheelmerge_bin, inputs.paths, out)),
                            capture_output=True, text=True, env=wheelmerge_env(), timeout=300)
    assert result.returncode in (137, -signal.SIGKILL), (result.returncode, result.stderr)
    assert check_outcome(out, reference) == "nothing"
    inputs.assert_untouched(hash_them=False)


@needs_strace
@pytest.mark.parametrize("when", ["1+", "3+"])
def test_without_copy_file_range(wheelmerge_bin: Path, public_inputs: Inputs, tmp_path: Path,
                                 when: str) -> None:
    """copy_file_range failing with EXDEV (as between some file systems; other systems have no
    such call): members are copied through a buffer instead, from the first call or part way
    through (from the third), and the output has the same bytes."""
    expected = tmp_path / "expected"
    run(merge_command(wheelmerge_bin, public_inputs.paths, expected), env=wheelmerge_env())
    out = tmp_path / "out"
    command = strace_inject("copy_file_range", f"error=EXDEV:when={when}",
                            merge_command(wheelmerge_bin, public_inputs.paths, out))
    run(command, env=wheelmerge_env())
    assert listing(out) == [OUTPUT_NAME]
    assert sha256_file(out / OUTPUT_NAME) == sha256_file(expected / OUTPUT_NAME)
    public_inputs.assert_untouched()


def older_output(binary: Path, inputs: Inputs, out: Path) -> str:
    """A complete wheel of the output's name but other bytes (other timestamps) in ``out``;
    returns its digest."""
    run(merge_command(binary, inputs.paths, out), env=wheelmerge_env({"SOURCE_DATE_EPOCH": "1700000000"}))
    return sha256_file(out / OUTPUT_NAME)


def test_sigkill_while_replacing_an_older_output(wheelmerge_bin: Path, inputs: Inputs,
                                                 reference: Reference, tmp_path: Path) -> None:
    """An older wheel of the same name is in place: after a kill at any moment the path holds
    the old wheel, the new one, or nothing (the old one is removed just before the new one is
    linked), and nothing else is in the directory."""
    rng = random.Random(7)
    out = tmp_path / "out"
    old = older_output(wheelmerge_bin, inputs, out)
    assert old != reference.digest
    seen = []
    trials = 6
    for i in range(trials):
        delay = (i + rng.random()) / trials * 1.15 * reference.wall_s
        process = subprocess.Popen(merge_command(wheelmerge_bin, inputs.paths, out), env=wheelmerge_env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.kill()
        process.wait(timeout=120)
        assert listing(out) in ([OUTPUT_NAME], []), f"trial {i} (delay {delay:.3f} s): {listing(out)}"
        digest = sha256_file(out / OUTPUT_NAME) if listing(out) else None
        assert digest in (old, reference.digest, None), f"trial {i}: neither the old nor the new wheel"
        seen.append((round(delay, 3), process.returncode,
                     {old: "old", reference.digest: "new", None: "nothing"}[digest]))
        if digest != old:
            if digest:
                (out / OUTPUT_NAME).unlink()
            assert older_output(wheelmerge_bin, inputs, out) == old
    print(f"SIGKILL while replacing (delay s, status, wheel at the path): {seen}")
    inputs.assert_untouched()


@needs_strace
@pytest.mark.parametrize("signame", ["SIGKILL", "SIGINT"])
@pytest.mark.parametrize("call", ["unlinkat", "linkat"])
def test_signal_while_replacing_leaves_nothing_stray(wheelmerge_bin: Path, inputs: Inputs,
                                                     reference: Reference, tmp_path: Path,
                                                     signame: str, call: str) -> None:
    """Replacing an existing output removes the old file, then links the new one under the same
    name; no second name is ever used. A signal on entry to either call leaves the old wheel,
    the new one or nothing at the path, and nothing beside it."""
    out = tmp_path / "out"
    old = older_output(wheelmerge_bin, inputs, out)
    command = merge_command(wheelmerge_bin, inputs.paths, out)
    result = subprocess.run(strace_kill_at(call, signame, command),
                            capture_output=True, text=True, env=wheelmerge_env(), timeout=300)
    signum = getattr(signal, signame)
    assert result.returncode in (0, 128 + signum, -signum), (result.returncode, result.stderr)
    assert listing(out) in ([OUTPUT_NAME], []), f"{signame} at {call} left {listing(out)} (exit status {result.returncode})"
    if listing(out):
        assert sha256_file(out / OUTPUT_NAME) in (old, reference.digest)
    inputs.assert_untouched(hash_them=False)


# --- (b) SIGINT / SIGTERM ---------------------------------------------------------------------------

@pytest.mark.parametrize("signame, trials", [("SIGINT", 8), ("SIGTERM", 4)])
def test_interrupted_runs_clean_up(wheelmerge_bin: Path, inputs: Inputs, reference: Reference,
                                   tmp_path: Path, signame: str, trials: int) -> None:
    """Interrupted at moments spread over the run: the status says so (killed by the signal,
    or 128 + signal from a handler), and the directory holds nothing or the whole wheel."""
    signum = getattr(signal, signame)
    outcomes = signal_trials(wheelmerge_bin, inputs, reference, tmp_path, signum, trials=trials,
                             seed=signum, beside_inputs_every=4)
    assert any(o[1] != 0 for o in outcomes), f"no {signame} landed mid-run: {outcomes}"
    print(f"{signame} trials (delay s, status, outcome, exit after s): {outcomes}")


# --- (c) a full disk ----------------------------------------------------------------------------------

def _limit_file_size(limit: int):
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes fail with EFBIG instead
    return preexec


def assert_clear_failure(result: subprocess.CompletedProcess, target: Path, reason: str) -> None:
    message = result.stderr
    assert result.returncode == 1, f"exit status {result.returncode}, expected 1\n{message}"
    assert str(target) in message, f"the message does not name {target}:\n{message}"
    assert reason in message, f"the message does not say {reason!r}:\n{message}"
    assert message.startswith("wheelmerge: error: "), message


@pytest.mark.parametrize("where", ["nothing", "4 KiB", "half", "all but the last byte"])
def test_file_size_limit(wheelmerge_bin: Path, inputs: Inputs, reference: Reference,
                         tmp_path: Path, where: str) -> None:
    """RLIMIT_FSIZE stands for a full disk: writes fail with EFBIG at the first byte, in the
    first member, half way through the copies, or on the end record's last byte."""
    size = reference.wheel.stat().st_size
    limit = {"nothing": 0, "4 KiB": 4096, "half": size // 2, "all but the last byte": size - 1}[where]
    out = tmp_path / "out"
    out.mkdir()
    result = subprocess.run(merge_command(wheelmerge_bin, inputs.paths, out), capture_output=True,
                            text=True, env=wheelmerge_env(), preexec_fn=_limit_file_size(limit), timeout=300)
    assert_clear_failure(result, out / OUTPUT_NAME, os.strerror(errno.EFBIG))
    assert listing(out) == [], f"left behind: {listing(out)}"
    inputs.assert_untouched()


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    """Factory: a tmpfs of the given size mounted in tmp_path (root and mount needed)."""
    mounted = []

    def mount(size: int) -> Path:
        point = tmp_path / f"tmpfs-{len(mounted)}"
        point.mkdir()
        result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(point)],
                                capture_output=True, text=True)
        if result.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root and mount): {result.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], check=True)


@pytest.mark.parametrize("size_mib", [1, 200])
def test_full_tmpfs(wheelmerge_bin: Path, inputs: Inputs, reference: Reference, tiny_tmpfs,
                    size_mib: int) -> None:
    """A real full file system (ENOSPC): a tmpfs of 1 MiB, or 200 MiB (filled half way through
    the copies), as the output directory."""
    assert reference.wheel.stat().st_size > size_mib * MIB
    point = tiny_tmpfs(size_mib * MIB)
    result = subprocess.run(merge_command(wheelmerge_bin, inputs.paths, point), capture_output=True,
                            text=True, env=wheelmerge_env(), timeout=300)
    assert_clear_failure(result, point / OUTPUT_NAME, os.strerror(errno.ENOSPC))
    assert listing(point) == [], f"left behind: {listing(point)}"
    fs = os.statvfs(point)
    assert fs.f_bfree == fs.f_blocks, "space still used on the tmpfs after the failed run"
    inputs.assert_untouched()


# --- (d) an unwritable output directory -------------------------------------------------------------

@pytest.fixture(scope="module")
def public_dir():
    """A directory an unprivileged user can read (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="wheelmerge-faults-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def public_inputs(public_dir: Path) -> Inputs:
    paths = make_inputs(public_dir / "inputs", member_mib=1, kernels=2, shared=1, small=20)
    return Inputs.of(paths)


def as_nobody(command: Sequence[str]) -> list[str]:
    return [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *command]


needs_unprivileged_run = pytest.mark.skipif(
    SETPRIV is None or os.geteuid() != 0,
    reason="needs root and setpriv to run the binary as an unprivileged user (root writes anywhere)")


@needs_unprivileged_run
@pytest.mark.parametrize("case", ["existing directory", "directory to create"])
def test_unwritable_output_directory(wheelmerge_bin: Path, public_inputs: Inputs, public_dir: Path,
                                     case: str) -> None:
    """As user nobody: an existing output directory it cannot write to, or a directory to be
    created inside one. Exit 1, a message naming the output path, nothing created."""
    parent = public_dir / f"unwritable-{case.split()[0]}"
    parent.mkdir(mode=0o755)
    out = parent if case == "existing directory" else parent / "new"
    target = out / OUTPUT_NAME
    probe = subprocess.run(as_nobody(["test", "-r", str(public_inputs.paths[0])]))
    assert probe.returncode == 0, "nobody cannot read the inputs: the test is set up wrong"
    result = subprocess.run(as_nobody(merge_command(wheelmerge_bin, public_inputs.paths, out)),
                            capture_output=True, text=True, env=wheelmerge_env(), timeout=300)
    assert_clear_failure(result, target, os.strerror(errno.EACCES))
    assert listing(parent) == []
    public_inputs.assert_untouched()


@pytest.mark.parametrize("out", ["/proc/wheelmerge-output", "/proc/self"])
def test_output_under_proc(wheelmerge_bin: Path, public_inputs: Inputs, out: str) -> None:
    """/proc takes no new directories or files, even from root."""
    result = subprocess.run(merge_command(wheelmerge_bin, public_inputs.paths, Path(out)),
                            capture_output=True, text=True, env=wheelmerge_env(), timeout=300)
    assert_clear_failure(result, Path(out) / OUTPUT_NAME, "cannot create")
    assert not Path(out, OUTPUT_NAME).exists()
    public_inputs.assert_untouched()


# --- (e) no /proc: a named temporary file ---------------------------------------------------------

UNSHARE = shutil.which("unshare")


def without_proc(command: Sequence[str]) -> list[str]:
    """The command with an empty tmpfs over /proc, in a mount namespace of its own (as in a
    chroot or container without /proc): the unnamed output file has no /proc/self/fd path."""
    return [UNSHARE, "--mount", "--fork", "sh", "-c", 'mount -t tmpfs none /proc && exec "$@"', "sh", *command]


@pytest.fixture
def proc_hidden(wheelmerge_bin: Path) -> None:
    if UNSHARE is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare to hide /proc in a mount namespace")
    if sanitized_binary(wheelmerge_bin):
        pytest.skip("the sanitizer runtime reads /proc/self/maps when it starts")


@pytest.mark.parametrize("case", ["complete", "replacing an older output", "file size limit", "SIGINT"])
def test_without_proc(wheelmerge_bin: Path, public_inputs: Inputs, tmp_path: Path, proc_hidden: None,
                      case: str) -> None:
    """With /proc hidden the output is written under a named temporary file and renamed into
    place: the same bytes as a run with /proc, and on a failure (EFBIG half way) or SIGINT
    (at the first member copy) nothing is left in the directory."""
    expected = tmp_path / "with-proc"
    run(merge_command(wheelmerge_bin, public_inputs.paths, expected), env=wheelmerge_env())
    out = tmp_path / "out"
    command = merge_command(wheelmerge_bin, public_inputs.paths, out)
    if case == "replacing an older output":
        older_digest = older_output(wheelmerge_bin, public_inputs, out)
        assert older_digest != sha256_file(expected / OUTPUT_NAME)
    preexec = None
    if case == "file size limit":
        preexec = _limit_file_size((expected / OUTPUT_NAME).stat().st_size // 2)
    elif case == "SIGINT":
        if STRACE is None:
            pytest.skip("strace is not installed (a signal at a chosen system call)")
        command = strace_kill_at("copy_file_range", "SIGINT", command)
    result = subprocess.run(without_proc(command), capture_output=True, text=True, env=wheelmerge_env(),
                            preexec_fn=preexec, timeout=300)
    if case == "file size limit":
        assert_clear_failure(result, out / OUTPUT_NAME, os.strerror(errno.EFBIG))
        assert listing(out) == [], f"left behind: {listing(out)}"
    elif case == "SIGINT":
        assert result.returncode == 128 + signal.SIGINT, (result.returncode, result.stderr)
        assert listing(out) == [], f"left behind: {listing(out)}"
    else:
        assert result.returncode == 0, result.stderr
        assert listing(out) == [OUTPUT_NAME]
        assert sha256_file(out / OUTPUT_NAME) == sha256_file(expected / OUTPUT_NAME)
    public_inputs.assert_untouched()


# --- (f) the output would replace an input ------------------------------------------------------------

@pytest.fixture
def inputs_named_like_the_output(tmp_path: Path) -> list[Path]:
    """Both builds named exactly like the merged wheel (labels given as PATH=cuNN), each in its
    own directory."""
    built = make_inputs(tmp_path / "built", member_mib=1, kernels=2, shared=1, small=20)
    paths = []
    for label, path in zip(LABELS, built):
        directory = tmp_path / label
        directory.mkdir()
        paths.append(path.rename(directory / OUTPUT_NAME))
    return paths


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("spelling", ["same", "dotted", "hard link"])
def test_output_would_replace_an_input(wheelmerge_bin: Path, inputs_named_like_the_output: list[Path],
                                       tmp_path: Path, which: int, spelling: str) -> None:
    """``merge A=cu12 B=cu13 -o dir-of-A`` where the merged name is A's own: refused (exit 1,
    the message names the input), A intact, nothing else in its directory. The same through
    another spelling of the directory, and where the output path is a hard link to an input."""
    paths = inputs_named_like_the_output
    victim = paths[which]
    out = victim.parent
    if spelling == "dotted":
        out = out / ".." / out.name / "."
    elif spelling == "hard link":
        out = tmp_path / "linked"
        out.mkdir()
        os.link(victim, out / OUTPUT_NAME)
    before = Inputs.of(paths)
    listing_before = listing(out)
    args = [f"{p}={label}" for p, label in zip(paths, LABELS)]
    result = subprocess.run(merge_command(wheelmerge_bin, args, out), capture_output=True, text=True,
                            env=wheelmerge_env(), timeout=300)
    assert result.returncode == 1, f"exit status {result.returncode}\n{result.stderr}"
    assert "would replace an input" in result.stderr and str(victim) in result.stderr, result.stderr
    before.assert_untouched()
    assert listing(out) == listing_before


# --- the process's standard streams --------------------------------------------------------------

def merge_with_streams(binary: Path, inputs: Inputs, out: Path, redirections: str, *extra: str,
                       pipe_closed: bool = False) -> subprocess.CompletedProcess[str]:
    """A merge with the shell's REDIRECTIONS applied to it (`2>&-` closes stderr); with
    PIPE_CLOSED its stdout is a pipe whose reader is gone before it writes (as with `| head`)."""
    command = ["sh", "-c", f'exec "$@" {redirections}', "sh", *merge_command(binary, inputs.paths, out), *extra]
    if not pipe_closed:
        return subprocess.run(command, capture_output=True, text=True, env=wheelmerge_env(), timeout=300)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=wheelmerge_env())
    assert process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate(timeout=300)
    return subprocess.CompletedProcess(command, process.returncode, "", stderr)


@pytest.fixture(scope="module")
def public_reference(wheelmerge_bin: Path, public_inputs: Inputs, public_dir: Path) -> bytes:
    out = public_dir / "streams-reference"
    run(merge_command(wheelmerge_bin, public_inputs.paths, out), env=wheelmerge_env())
    return (out / OUTPUT_NAME).read_bytes()


@pytest.mark.parametrize("redirections", ["2>&-", "<&-", "<&- 2>&-", "2>/dev/full", ">&- 2>&-"])
def test_a_closed_or_failing_stream_loses_messages_not_the_merge(wheelmerge_bin: Path, public_inputs: Inputs,
                                                                  public_reference: bytes, tmp_path: Path,
                                                                  redirections: str) -> None:
    """Before: with stderr closed the merge wrote its output, then died of SIGABRT (an uncaught
    write error), and a closed standard stream's number could be taken by the output file. Now
    the merge completes, exits 0 and writes the same bytes; only messages are lost."""
    result = merge_with_streams(wheelmerge_bin, public_inputs, tmp_path / "out", redirections, "--verbose")
    assert result.returncode == 0, (result.returncode, result.stderr)
    assert (tmp_path / "out" / OUTPUT_NAME).read_bytes() == public_reference
    verified = run([wheelmerge_bin, "verify", tmp_path / "out" / OUTPUT_NAME], check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    public_inputs.assert_untouched()


@pytest.mark.parametrize("redirections, reason", [(">&-", os.strerror(errno.EBADF)),
                                                  (">/dev/full", os.strerror(errno.ENOSPC)),
                                                  ("", os.strerror(errno.EPIPE))])
def test_json_that_cannot_be_written_is_an_error(wheelmerge_bin: Path, public_inputs: Inputs,
                                                 public_reference: bytes, tmp_path: Path, redirections: str,
                                                 reason: str) -> None:
    """--json to a closed stdout, a full disk or a pipe whose reader is gone: before, exit 0
    with the summary lost (or death by SIGPIPE); now exit 1 and a message saying why. The
    merge itself is complete: its output is in place."""
    result = merge_with_streams(wheelmerge_bin, public_inputs, tmp_path / "out", redirections, "--json",
                                pipe_closed=not redirections)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert f"wheelmerge: error: cannot write the output to stdout: {reason}" in result.stderr, result.stderr
    assert (tmp_path / "out" / OUTPUT_NAME).read_bytes() == public_reference


@pytest.mark.parametrize("tmpdir, found", [("missing", "No such file or directory"), ("file", "not a directory")])
def test_an_unusable_tmpdir_is_named(wheelmerge_bin: Path, tmp_path: Path, tmpdir: str, found: str) -> None:
    """Before: `build` with TMPDIR missing or a file ended in `internal error` naming no
    variable. Now the message names TMPDIR and what it holds."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "none"\n'
                                            '[project]\nname = "p"\nversion = "1"\n')
    path = tmp_path / "tmpdir"
    if tmpdir == "file":
        path.write_text("")
    result = subprocess.run([str(wheelmerge_bin), "build", str(project), "--cuda", "13", "--no-isolation",
                             "-o", str(tmp_path / "dist")], capture_output=True, text=True,
                            env=wheelmerge_env({"TMPDIR": str(path)}), timeout=300)
    assert result.returncode != 0 and "internal error" not in result.stderr, result.stderr
    assert f"TMPDIR={path} (the temporary directory): {found}" in result.stderr, result.stderr
    assert "set TMPDIR to one" in result.stderr, result.stderr


@pytest.mark.parametrize("environment", [{}, {"LC_ALL": "xx_XX.BOGUS", "LANG": "xx_XX.BOGUS"}])
def test_no_home_no_locale_no_path(wheelmerge_bin: Path, public_inputs: Inputs, public_reference: bytes,
                                   tmp_path: Path, environment: dict[str, str]) -> None:
    """An empty environment (no HOME, PATH, TMPDIR or locale), or a locale the system lacks:
    the merge writes the same bytes and exits 0."""
    result = subprocess.run(merge_command(wheelmerge_bin, public_inputs.paths, tmp_path / "out"),
                            capture_output=True, text=True, env=environment, timeout=300)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / OUTPUT_NAME).read_bytes() == public_reference
