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
