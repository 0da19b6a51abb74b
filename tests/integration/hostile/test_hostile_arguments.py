"""Every option of every subcommand, and every positional argument, fed what a command line can
carry that no option means: bytes that are not UTF-8, very long values, control characters.
Each run ends in a usage error (exit 2) or an ordinary refusal naming what it refused, never in
an internal error, a crash or a file written. NUL cannot reach argv; it is refused where it can
arrive (configuration values: tests/unit/test_config.cpp, and below)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

WHEELMERGE = os.environ.get("WHEELMERGE", "")

# Each subcommand with the arguments that make the rest of its command line valid enough for
# the option under test to be read: a wheel that does not exist, a project without sources.
# `build` and `toolkit` name CUDA 13 (installed here) so that nothing is downloaded; `build`
# also names an x86-64 level, so that it is refused where the labels are chosen (a build of
# one variant would start) and nothing is built.
SUBCOMMANDS: dict[str, list[str]] = {
    "merge": ["a.whl"],
    "inspect": ["a.whl"],
    "variants": ["a.whl"],
    "verify": ["a.whl"],
    "build": ["project", "--variant", "x86_64_v3"],
    "toolkit": [],
    "ci init": ["project"],
    "config": ["project"],
}
# Options whose values are checked (flags take none); read from each subcommand's --help.
OPTION = re.compile(r"^\s+(?:-\w,)?(--[\w-]+) (?:TEXT|INT)\b", re.M)

INVALID_UTF8 = b"x\xff\xfey"
LONG = "a" * 100_000  # below Linux's 128 KiB limit on one argument


def _run(args: list[str | bytes], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([WHEELMERGE.encode(), *[a if isinstance(a, bytes) else a.encode() for a in args]],
                          cwd=cwd, capture_output=True, timeout=120)


def _options(subcommand: str) -> list[str]:
    help_text = subprocess.run([WHEELMERGE, *subcommand.split(), "--help"], capture_output=True, text=True).stdout
    return OPTION.findall(help_text)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
    return tmp_path


def _cases() -> list[tuple[str, str]]:
    if not WHEELMERGE:
        return []
    return [(sub, option) for sub in SUBCOMMANDS for option in _options(sub)] + [(sub, "") for sub in SUBCOMMANDS]


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _refused_cleanly(result: subprocess.CompletedProcess[bytes], where: str) -> str:
    stderr = result.stderr.decode("utf-8", "strict")  # messages are UTF-8 whatever the input
    assert result.returncode > 0, (where, stderr)
    assert result.returncode < 128, (where, result.returncode, stderr)  # no signal, no abort
    assert "internal error" not in stderr, (where, stderr)
    assert stderr.startswith("wheelmerge: error: "), (where, stderr)
    assert all(line.startswith(("wheelmerge: ", "    ", "[", "(wheelmerge ")) for line in stderr.splitlines()), (where, stderr)
    return stderr


@pytest.mark.parametrize("subcommand,option", _cases())
def test_invalid_utf8_is_a_usage_error_naming_the_option(workdir: Path, subcommand: str, option: str) -> None:
    before = _listing(workdir)
    base = subcommand.split() + SUBCOMMANDS[subcommand] + ["--cuda", "13"] * (subcommand in ("build", "toolkit"))
    for args in ([*base, option, INVALID_UTF8], [*base, option.encode() + b"=" + INVALID_UTF8]) if option \
            else ([*base, INVALID_UTF8],):
        args = [a for a in args if a]
        result = _run(args, workdir)
        stderr = _refused_cleanly(result, f"{subcommand} {option}")
        assert result.returncode == 2, stderr
        assert "invalid UTF-8 in the command line" in stderr and "x\\xff\\xfey" in stderr, stderr
        if option:
            assert option in stderr, stderr
    assert _listing(workdir) == before


@pytest.mark.parametrize("value", [LONG, "a\nwheelmerge: a.whl: valid wheel", "\x1b[31mred", "-", "=", ""],
                         ids=["long", "newline", "escape", "dash", "equals", "empty"])
@pytest.mark.parametrize("subcommand,option", _cases())
def test_odd_values_are_refused_without_an_internal_error(workdir: Path, subcommand: str, option: str,
                                                          value: str) -> None:
    before = _listing(workdir)
    base = subcommand.split() + SUBCOMMANDS[subcommand]
    if subcommand in ("build", "toolkit") and option != "--cuda":
        base += ["--cuda", "13"]
    args = [*base, option, value] if option else [*base, value]
    result = _run(args, workdir)
    if result.returncode == 0:  # a value an option takes as it is (a --python path that exists)
        return
    _refused_cleanly(result, f"{subcommand} {option} {value[:20]!r}")
    assert _listing(workdir) in (before, sorted(before + ["project/.github", "project/.github/workflows"])), \
        _listing(workdir)


def test_yaml_keys_given_twice_are_refused_where_yaml_readers_disagree(workdir: Path) -> None:
    """PyYAML keeps the last of two `variant-files` keys (yaml-cpp kept both, read as one list):
    two readings of one file, so wheelmerge refuses it, naming both places."""
    import yaml

    text = "variant-files: [pkg/a.py]\nvariant-files: [pkg/b.py]\n"
    assert yaml.safe_load(text) == {"variant-files": ["pkg/b.py"]}
    project = workdir / "project"
    (project / "wheelmerge.yaml").write_text(text)
    result = _run(["config", "project"], workdir)
    stderr = _refused_cleanly(result, "config")
    assert result.returncode == 2, stderr
    assert 'wheelmerge.yaml:2:1: key "variant-files" given twice' in stderr, stderr
    assert "the key at line 1, column 1 as well" in stderr, stderr


@pytest.mark.parametrize("table", ['"A=B" = "x"', '"" = "x"', '"1A" = "x"', 'A = "x\\u0000y"'])
def test_environment_names_and_nul_values_are_refused(workdir: Path, table: str) -> None:
    """An environment name holding "=" sets another variable than written (or none: ""), and a
    NUL ends the value early in every exec; "1A" no shell can name: refused, as POSIX names."""
    project = workdir / "project"
    with (project / "pyproject.toml").open("a") as f:
        f.write(f"\n[tool.wheelmerge.env]\n{table}\n")
    result = _run(["config", "project"], workdir)
    stderr = _refused_cleanly(result, "config")
    assert result.returncode == 2, stderr
    assert "invalid environment variable" in stderr or "holds a NUL character" in stderr, stderr
