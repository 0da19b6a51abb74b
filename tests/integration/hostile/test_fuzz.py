"""The engine's libFuzzer harnesses (tests/fuzz/): a short run of each, and a replay of every
input kept in tests/fuzz/regressions/HARNESS/ (each a crash once found, minimised).

The harnesses are built into build-fuzz/ ($WM_FUZZ_BUILD) by tests/fuzz/build.sh when missing
or stale: clang 16 or later with its libFuzzer runtime (Debian: clang-19 libclang-rt-19-dev),
AddressSanitizer and UndefinedBehaviorSanitizer over every engine source. Without such a clang
the tests are skipped, saying so. The seed corpus is written by tests/fuzz/make_corpus.py.
$WM_FUZZ_SECONDS sets the length of each short run (default 7 s per harness). The long runs
and their figures: tests/fuzz/run.sh and tests/fuzz/README.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from measured_run import GNU_TIME

ROOT = Path(__file__).resolve().parents[3]
FUZZ = ROOT / "tests" / "fuzz"
BUILD = Path(os.environ.get("WM_FUZZ_BUILD") or ROOT / "build-fuzz")
SECONDS = int(os.environ.get("WM_FUZZ_SECONDS", "7"))
REGRESSIONS = FUZZ / "regressions"

sys.path.insert(0, str(FUZZ))
import make_corpus  # noqa: E402

HARNESSES = list(make_corpus.MAX_LEN)
REGRESSION_INPUTS = sorted(p for p in REGRESSIONS.glob("*/*") if p.is_file() and not p.name.startswith("."))
# Smaller quarantine than the default 256 MiB: the harnesses allocate 1 MiB stream buffers.
ASAN_OPTIONS = "quarantine_size_mb=64:malloc_context_size=20"


def _clang_for_fuzzing() -> str | None:
    """The clang++ build.sh would pick, if it is recent enough (16+: the engine captures
    structured bindings in lambdas) and has the libFuzzer runtime."""
    candidates = [os.environ["WM_FUZZ_CXX"]] if os.environ.get("WM_FUZZ_CXX") else \
        [f"clang++-{v}" for v in range(21, 15, -1)] + ["clang++"]
    for cxx in candidates:
        path = shutil.which(cxx)
        if not path:
            continue
        version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"clang version (\d+)", version)
        if not m or int(m.group(1)) < 16:
            return None
        runtime = subprocess.run([path, "-print-file-name=libclang_rt.fuzzer-x86_64.a"],
                                 capture_output=True, text=True).stdout.strip()
        resource = subprocess.run([path, "-print-resource-dir"], capture_output=True, text=True).stdout.strip()
        has_runtime = Path(runtime).is_file() or any(Path(resource).glob("lib/**/libclang_rt.fuzzer*.a"))
        return path if has_runtime else None
    return None


@pytest.fixture(scope="session")
def fuzz_build() -> Path:
    """build-fuzz/ with every harness built and the seed corpus in seeds/."""
    cxx = _clang_for_fuzzing()
    if cxx is None:
        pytest.skip("no clang++ 16+ with the libFuzzer runtime (apt-get install clang-19 libclang-rt-19-dev)")
    env = dict(os.environ, WM_FUZZ_CXX=os.environ.get("WM_FUZZ_CXX", cxx))
    built = subprocess.run([str(FUZZ / "build.sh"), str(BUILD)], capture_output=True, text=True, env=env,
                           timeout=1800)
    if built.returncode != 0:
        pytest.fail(f"building the fuzz harnesses failed:\n{built.stdout[-4000:]}\n{built.stderr[-4000:]}",
                    pytrace=False)
    python = ROOT / ".venv" / "bin" / "python"
    seeds = subprocess.run([str(python if python.exists() else sys.executable), str(FUZZ / "make_corpus.py"),
                            str(BUILD / "seeds"), "--wmdemo", str(BUILD / "wmdemo-wheels")],
                           capture_output=True, text=True, timeout=600)
    if seeds.returncode != 0:
        pytest.fail(f"writing the seed corpus failed:\n{seeds.stderr[-4000:]}", pytrace=False)
    return BUILD


# Harnesses run as GNU time's child, not this test worker's: a process forked from the worker
# starts with the worker's peak RSS (kept across exec), which libFuzzer reads as its own and
# takes for an out-of-memory on the first input once the worker has read a large wheel.
FRESH = [GNU_TIME, "-q", "-o", os.devnull]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WM_FUZZ_")}  # never skip known issues
    env["ASAN_OPTIONS"] = ASAN_OPTIONS
    env["UBSAN_OPTIONS"] = "print_stacktrace=1"
    return env


def _tail(text: str, lines: int = 60) -> str:
    return "\n".join(text.splitlines()[-lines:])


@pytest.mark.parametrize("harness", HARNESSES)
def test_short_fuzz_run(fuzz_build: Path, harness: str, tmp_path: Path) -> None:
    """SECONDS of fuzzing from the seed corpus: no crash, leak, timeout or property failure."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    command = [*FRESH, str(fuzz_build / harness), f"-max_total_time={SECONDS}", "-timeout=30", "-rss_limit_mb=4096",
               *make_corpus.flags(harness), f"-artifact_prefix={tmp_path}/", str(corpus),
               str(fuzz_build / "seeds" / harness)]
    result = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=SECONDS + 300)
    artifacts = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    if result.returncode != 0:
        pytest.fail(f"{harness} failed (exit {result.returncode}); input kept in {tmp_path}: {artifacts}\n"
                    f"replay: {fuzz_build / harness} {tmp_path / (artifacts[0] if artifacts else 'CRASH')}\n"
                    f"{_tail(result.stderr)}", pytrace=False)
    if not re.search(r"Done \d+ runs", result.stderr):
        pytest.fail(f"{harness} did not finish its run:\n{_tail(result.stderr)}", pytrace=False)


@pytest.mark.parametrize("case", REGRESSION_INPUTS, ids=[f"{p.parent.name}/{p.name}" for p in REGRESSION_INPUTS])
def test_regression_input(fuzz_build: Path, case: Path) -> None:
    """A kept crash input runs through its harness without a crash or a property failure."""
    harness = case.parent.name
    assert harness in HARNESSES, f"{case}: no harness {harness}"
    result = subprocess.run([*FRESH, str(fuzz_build / harness), str(case)], capture_output=True, text=True,
                            env=_env(), timeout=300)
    if result.returncode != 0:
        pytest.fail(f"{harness} {case} (exit {result.returncode}):\n{_tail(result.stderr)}", pytrace=False)


def test_every_harness_has_a_seed_corpus(fuzz_build: Path) -> None:
    for harness in HARNESSES:
        assert (fuzz_build / harness).is_file(), harness
        assert any((fuzz_build / "seeds" / harness).iterdir()), f"no seeds for {harness}"
