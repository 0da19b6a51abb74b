"""Outputs of expensive builds the suites need as inputs (the bundled examples' wheels, the
wheelmerge wheel, the torch example's merged wheel), kept between runs and keyed by a hash of
everything they are made from: the source files, the tools' versions, and, where wheelmerge
itself makes the output, the wheelmerge executable's bytes. A key that changes builds anew; the
same key is the same computation, done once.

Cache: `${WHEELMERGE_WHEEL_CACHE:-$HOME/.cache/wheelmerge}/builds/NAME/KEY/` (outside the
checkout, so a fresh clone of the same sources finds it). Parallel test workers (pytest-xdist)
and concurrent runs take turns through a lock per NAME: the first builds, the others wait and
use its result. An entry is complete only once renamed into place, and used only while its
files match the sha256 list written with it; the three newest keys of a NAME are kept.
WHEELMERGE_TEST_REBUILD=1 ignores every entry (and replaces it).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator

ROOT = Path(__file__).resolve().parents[3]
KEEP = 3
# Each entry's files and their sha256, checked on every use: an entry that something changed
# (a test writing beside a cached input) is built anew instead of being used.
MANIFEST = ".files"
_SKIPPED_PARTS = {"__pycache__", "build", "dist", ".pytest_cache"}


def cache_home() -> Path:
    """Where the suites keep what they download or build between runs, outside the checkout (a
    fresh clone of the same sources finds it): $WHEELMERGE_WHEEL_CACHE, else ~/.cache/wheelmerge."""
    return Path(os.environ.get("WHEELMERGE_WHEEL_CACHE") or Path.home() / ".cache" / "wheelmerge")


def cache_root() -> Path:
    return cache_home() / "builds"


def source_files(entries: Iterable[str | Path]) -> list[Path]:
    """The files of `entries` (paths relative to the repository root, or absolute): a file, or
    every file below a directory but build outputs and bytecode."""
    files: list[Path] = []
    for entry in entries:
        path = ROOT / entry
        if path.is_file():
            files.append(path)
            continue
        assert path.is_dir(), f"build cache: {path} does not exist"
        files.extend(sorted(
            p for p in path.rglob("*")
            if p.is_file() and not _SKIPPED_PARTS & set(p.relative_to(path).parts[:-1])
            and not p.name.endswith((".pyc", ".so", ".whl")) and ".egg-info" not in str(p)))
    return files


def tool_version(*command: str | Path) -> str:
    """What a tool says its version is (stdout and stderr), for a key."""
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, check=False)
    return f"{' '.join(map(str, command))} -> {result.returncode}\n{result.stdout}{result.stderr}"


def key_of(sources: Iterable[str | Path], *parts: str | bytes | Path) -> str:
    """A hash of the named source files (names and bytes) and of `parts`: strings, bytes, or
    files whose bytes count (an executable)."""
    digest = hashlib.sha256()
    for file in source_files(sources):
        name = file.relative_to(ROOT) if file.is_relative_to(ROOT) else file
        digest.update(f"{name}\0".encode() + file.read_bytes() + b"\0")
    for part in parts:
        if isinstance(part, Path):
            part = part.read_bytes()
        digest.update((part if isinstance(part, bytes) else part.encode()) + b"\0")
    return digest.hexdigest()[:20]


def _manifest(entry: Path) -> str:
    return "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(entry)}\n"
                   for p in sorted(entry.rglob("*")) if p.is_file() and p.name != MANIFEST)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Holds DIRECTORY/.lock (made with its directory if missing) for the block."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def cached(name: str, key: str, build: Callable[[Path], None]) -> Path:
    """The directory holding NAME's output for KEY: the cached one, else `build(directory)`
    fills a fresh directory, which is then kept under KEY."""
    home = cache_root() / name
    entry = home / key
    with locked(home):
        if entry.is_dir() and os.environ.get("WHEELMERGE_TEST_REBUILD") != "1":
            if (entry / MANIFEST).is_file() and (entry / MANIFEST).read_text() == _manifest(entry):
                os.utime(entry)
                return entry
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=home))
        try:
            build(staging)
            (staging / MANIFEST).write_text(_manifest(staging))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        shutil.rmtree(entry, ignore_errors=True)
        staging.rename(entry)
        entries = sorted((d for d in home.iterdir() if d.is_dir() and not d.name.startswith(".")),
                         key=lambda d: d.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            shutil.rmtree(old, ignore_errors=True)
        return entry

