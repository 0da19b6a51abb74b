"""`wheelmerge ci init`: the workflow it writes passes actionlint (its call checked against the
reusable workflow's real inputs) and the workflow schema, and for the documented option sets it
is the example shipped in ci/examples/."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from conftest import run
from test_ci import EXAMPLES, REUSABLE, Linters, assert_clean, linters  # noqa: F401  (fixture)

OPTION_SETS = {
    "defaults": [],
    "container-publish": ["--container", "--publish"],
    "py312-pinned-ref": ["--python", "3.12", "--cuda", "12,13", "--ref", "v0.1.0"],
    "one-python": ["--python", "3.13", "--container"],
    "variants-publish": ["--variants", "--publish"],
    "variants": ["--variants"],
}


def init(wheelmerge_bin: Path, project: Path, *args: str, check: bool = True):
    return run([wheelmerge_bin, "ci", "init", project, "--import-name", "mypkg", *args], check=check)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    (p / "pyproject.toml").write_text('[project]\nname = "My-Pkg"\nversion = "1.0"\n\n'
                                      '[tool.wheelmerge]\ncuda = [12, 13]\nvariant-files = ["mypkg/_info.py"]\n')
    return p


@pytest.mark.parametrize("options", OPTION_SETS.values(), ids=OPTION_SETS.keys())
def test_generated_workflow_passes_actionlint_and_schema(wheelmerge_bin, linters: Linters, project, options):
    init(wheelmerge_bin, project, *options)
    workflow = project / ".github" / "workflows" / "wheels.yml"
    # Make the call local so actionlint checks it against the reusable workflow's inputs.
    (project / ".github" / "workflows" / REUSABLE.name).write_text(REUSABLE.read_text())
    workflow.write_text(re.sub(r"uses: wheelmerge/wheelmerge/(\.github/workflows/[^@]+)@\S+", r"uses: ./\1",
                               workflow.read_text()))
    run(["git", "init", "-q", project])
    assert_clean(linters.actionlint(cwd=project), "actionlint")
    assert_clean(linters.schema("vendor.github-workflows", workflow), "schema check")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_documented_examples_are_what_init_writes(wheelmerge_bin, linters: Linters, tmp_path, example):
    command = re.search(r"`wheelmerge ci init([^`]*)`", example.read_text()).group(1).split()
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "mypkg"\n')
    run([wheelmerge_bin, "ci", "init", project, *command])
    assert linters.yaml(project / ".github" / "workflows" / "wheels.yml") == linters.yaml(example)


def test_inputs_follow_the_project(wheelmerge_bin, linters: Linters, project):
    run([wheelmerge_bin, "ci", "init", project, "--python", "3.11,3.12"])
    wheels = linters.yaml(project / ".github" / "workflows" / "wheels.yml")["jobs"]["wheels"]["with"]
    assert wheels["import-name"] == "my_pkg"  # from [project] name
    assert wheels["python-versions"] == '["3.11", "3.12"]'
    assert wheels["cuda-majors"] == "[12, 13]"
    assert wheels["variant-files"] == "mypkg/_info.py"
    assert wheels["container"] is False


def test_refuses_to_overwrite_without_force(wheelmerge_bin, project):
    init(wheelmerge_bin, project)
    workflow = project / ".github" / "workflows" / "wheels.yml"
    workflow.write_text("# mine\n")
    result = init(wheelmerge_bin, project, check=False)
    assert result.returncode == 2
    assert "already exists" in result.stderr and str(workflow) in result.stderr
    assert workflow.read_text() == "# mine\n"
    init(wheelmerge_bin, project, "--force")
    assert workflow.read_text() != "# mine\n"


def test_bad_majors_are_refused(wheelmerge_bin, project):
    result = init(wheelmerge_bin, project, "--cuda", "12,thirteen", check=False)
    assert result.returncode == 2
    assert "invalid --cuda" in result.stderr
    assert not (project / ".github").exists()
