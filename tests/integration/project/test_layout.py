"""The source tree's rooms: merger/base, merger/zip, merger/format, the merge stages in merger/,
then driver/, ci/ and cli/. A file may include only files of its own room or of rooms before it,
so the include graph reads bottom-up (ARCHITECTURE.md, "Folder map")."""
import re

from conftest import ROOT

# Rooms in order; a room may include itself and any room listed before it.
ROOMS = ["merger/base", "merger/zip", "merger/format", "merger", "driver", "ci", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def room_of(path: str) -> str:
    return path.rsplit("/", 1)[0]


def test_includes_point_only_down():
    checked = 0
    upward = []
    for room in ROOMS:
        rank = ROOMS.index(room)
        for source in sorted((ROOT / room).glob("*.[ch]pp")):
            for target in INCLUDE.findall(source.read_text(encoding="utf-8")):
                if target == "merger/version.hpp":  # generated, includes nothing
                    continue
                target_room = room_of(target)
                assert target_room in ROOMS, f"{source}: includes {target}, in no known room"
                assert (ROOT / target).is_file(), f"{source}: includes {target}, which does not exist"
                checked += 1
                if ROOMS.index(target_room) > rank:
                    upward.append(f"{source.relative_to(ROOT)} -> {target}")
    assert checked > 100
    assert not upward, "includes pointing up the layers:\n" + "\n".join(upward)


def test_merger_root_holds_only_stages():
    """Nothing of the lower rooms is left loose in merger/ (a moved file stays moved)."""
    lower = {p.stem for room in ROOMS[:3] for p in (ROOT / room).glob("*.[ch]pp")}
    loose = {p.stem for p in (ROOT / "merger").glob("*.[ch]pp")}
    assert lower and loose
    assert not lower & loose


PRODUCTION = ["merger", "driver", "ci", "cli"]  # the C++ that ships in the executable


def production_sources() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for room in PRODUCTION for p in (ROOT / room).rglob("*.[ch]pp"))


def test_no_production_function_is_over_80_lines():
    """CONTRIBUTING's rule, as lizard (an independent C++ reader) counts a function's lines."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "lizard", "-l", "cpp", "-L", "80", "-C", "10000", "-a", "100",
                             "-w", *PRODUCTION], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr
    listed = subprocess.run([sys.executable, "-m", "lizard", "-l", "cpp", *PRODUCTION], cwd=ROOT,
                            capture_output=True, text=True).stdout
    assert len(re.findall(r"^\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\S+@\d+-\d+@", listed, re.MULTILINE)) > 500, listed[-2000:]


def test_production_code_is_formatted_as_clang_format_says():
    """.clang-format holds: clang-format-14 changes nothing in the production C++."""
    import shutil
    import subprocess

    tool = shutil.which("clang-format-14")
    assert tool, "clang-format-14 (Debian's package of that name; scripts/setup.sh installs it)"
    result = subprocess.run([tool, "--dry-run", "-Werror", *production_sources()], cwd=ROOT, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr[-4000:]


def test_the_engine_compiles_as_one_translation_unit(wheelmerge_bin, tmp_path):
    """The engine compiles in unity batches (CMakeLists.txt, WHEELMERGE_UNITY), in orders that
    differ between builds (CMakeLists' list in batches of eight; the fuzz harnesses glob it):
    what one source defines in its unnamed namespace must not clash with another's. All of
    merger/'s sources included into one file compile without a warning (syntax only), with the
    flags its build used. (The driver and the executable are batched alike everywhere, so
    their builds show a clash.)"""
    import json
    import shlex
    import subprocess

    commands = json.loads((wheelmerge_bin.parent / "compile_commands.json").read_text())
    entry = next(e for e in commands if "CMakeFiles/wheelmerge_engine.dir/" in e["command"])
    argv = shlex.split(entry["command"])
    compiler = next(a for a in argv if not a.endswith("ccache"))
    flags = [a for before, a in zip(argv, argv[1:])
             if a.startswith(("-I", "-D", "-std=", "-isystem", "-f", "-W")) or before == "-isystem"]
    whole = tmp_path / "engine.cpp"
    whole.write_text("".join(f'#include "{s}"\n' for s in sorted((ROOT / "merger").rglob("*.cpp"))))
    result = subprocess.run([compiler, *flags, "-fsyntax-only", str(whole)], check=False, cwd=entry["directory"],
                            capture_output=True, text=True)
    assert result.returncode == 0 and "warning" not in result.stderr, result.stderr[-4000:]


def test_the_command_line_is_a_table_of_commands():
    """cli/main.cpp holds the table and dispatch; each command family lives in its own file."""
    lines = (ROOT / "cli" / "main.cpp").read_text(encoding="utf-8").count("\n")
    assert lines <= 400, lines
    for family in ("merge", "build", "check", "ci"):
        assert (ROOT / "cli" / f"{family}_commands.cpp").is_file(), family


def test_the_loader_file_holds_the_loader_alone():
    """merger/loader.cpp renders and reads loaders; Python literals and Python source have
    their own files in merger/format/ (python_literal, python_source)."""
    lines = (ROOT / "merger" / "loader.cpp").read_text(encoding="utf-8").count("\n")
    assert lines <= 450, lines
    for name in ("python_literal", "python_source"):
        assert (ROOT / "merger" / "format" / f"{name}.cpp").is_file(), name
