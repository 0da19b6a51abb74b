"""What README.md and the docs tell a user to run exists: every `wheelmerge` command in their
shell blocks names a real subcommand and options its `--help` lists, every key of the
configuration reference is read by `wheelmerge config` (and every key it reads is in the
reference), and the public wheels of the quick start are the ones the CuPy suite merges."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from conftest import ROOT, run

DOCUMENTS = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md", ROOT / "ci" / "README.md",
             *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").glob("*/README.md"))]
SUBCOMMANDS = {"merge", "inspect", "variants", "build", "verify", "ci", "config", "toolkit"}


def shell_commands(text: str) -> list[str]:
    """The `wheelmerge ...` lines of the ```sh blocks, continuation lines joined, comments cut."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line.startswith("wheelmerge "):
                commands.append(line)
    return commands


def options_of(command: str) -> tuple[str, list[str]]:
    """The subcommand (`ci init` for ci) and the long and short options a documented command uses.
    Optional parts in brackets count as given; `a | b` alternatives each count."""
    words = shlex.split(re.sub(r"[\[\]|]", " ", command))[1:]
    if words[0].startswith("-"):
        return "", words  # wheelmerge --version, --help
    sub = words[0] if words[0] in SUBCOMMANDS else "merge"  # the short form is merge
    if sub == "ci":
        sub = "ci " + words[1]
    return sub, [w.split("=", 1)[0] for w in words if re.fullmatch(r"--?[a-zA-Z][\w-]*(=.*)?", w)]


DOCUMENTED = sorted({(doc.relative_to(ROOT).as_posix(), c) for doc in DOCUMENTS for c in shell_commands(doc.read_text())})


def test_the_readme_has_commands_to_check():
    readme = [c for doc, c in DOCUMENTED if doc == "README.md"]
    assert len(readme) >= 8, readme
    assert {options_of(c)[0] for c in readme} >= {"merge", "inspect", "build", "variants", "ci init"}


@pytest.mark.parametrize("doc,command", DOCUMENTED, ids=[f"{d}:{c[:60]}" for d, c in DOCUMENTED])
def test_documented_command_exists(wheelmerge_bin, doc, command):
    sub, options = options_of(command)
    help_text = run([wheelmerge_bin, *sub.split(), "--help"]).stdout
    assert help_text.strip(), f"`wheelmerge {sub} --help` printed nothing"
    missing = [o for o in options if not re.search(rf"(^|[\s,]){re.escape(o)}\b", help_text, re.M)]
    assert not missing, f"{doc}: `{command}` uses {missing}, which `wheelmerge {sub} --help` does not list"


def reference_keys() -> tuple[set[str], set[str]]:
    """The configuration reference's keys: top-level ones and a variant table's (`LABEL.x`)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Configuration reference", 1)[1].split("\n## ", 1)[0]
    keys = re.findall(r"^\| `([^`]+)` \|", section, re.M)
    top = {k for k in keys if not k.startswith(("LABEL.", "[tool"))}
    variant = {k.removeprefix("LABEL.") for k in keys if k.startswith("LABEL.")}
    return top, variant


SAMPLES = {"cuda": "[12, 13]", "variants": '["cu12", "cu13"]', "backend": '"setuptools.build_meta"',
           "backend-path": '["."]', "variant-files": '["pkg/_info.py"]', "driver-fallback": "true",
           "runtime-requirements": "true",
           "env": '{ A = "1" }', "toolkit": '"/opt/cuda-12"', "build-requires": '["cuda-bindings==12.9.*"]'}


def config_of(wheelmerge_bin, tmp_path: Path, tool: str, check: bool = True):
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    (project / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n'
                                            'build-backend = "setuptools.build_meta"\n\n'
                                            '[project]\nname = "pkg"\nversion = "1"\n\n' + tool)
    return run([wheelmerge_bin, "config", project], check=check)


def test_every_documented_key_is_read_and_every_key_read_is_documented(wheelmerge_bin, tmp_path):
    top, variant = reference_keys()
    assert {"cuda", "variants", "env"} <= top and {"toolkit", "env", "build-requires"} <= variant
    for key in top - {"variants"}:  # cuda and variants exclude each other
        shown = json.loads(config_of(wheelmerge_bin, tmp_path, f"[tool.wheelmerge]\n{key} = {SAMPLES[key]}\n").stdout)
        assert key in shown, (key, shown)
    shown = json.loads(config_of(wheelmerge_bin, tmp_path, f"[tool.wheelmerge]\nvariants = {SAMPLES['variants']}\n"
                                 "[tool.wheelmerge.cu12]\n" + "".join(f"{k} = {SAMPLES[k]}\n" for k in variant)).stdout)
    assert shown["labels"] == ["cu12", "cu13"]
    assert set(shown["variants"]["cu12"]) == variant
    reported = set(shown) - {"source", "selector", "labels", "variants", "build-system"}
    assert reported == top - {"variants"}, "keys `wheelmerge config` reads but the reference lacks, or the reverse"
    refused = config_of(wheelmerge_bin, tmp_path, "[tool.wheelmerge]\ncuda-majors = [12]\n", check=False)
    assert refused.returncode == 2 and "cuda-majors" in refused.stderr


def test_quick_start_wheels_are_the_ones_the_cupy_suite_merges():
    from real_wheels import WHEELS  # the pinned corpus

    readme = (ROOT / "README.md").read_text()
    pins = set(re.findall(r"(cupy-cuda1\dx)==([\d.]+)", readme))
    assert len(pins) == 2
    corpus = {(w.name, w.version) for w in WHEELS if w.name.startswith("cupy-cuda")}
    assert pins <= corpus, (pins, corpus)
