"""`wheelmerge ci init`: the workflow it writes passes actionlint (its call checked against the
reusable workflow's real inputs) and the workflow schema, and for the documented option sets it
is the example shipped in ci/examples/."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import run, wheelmerge_version
from test_ci import EXAMPLES, REUSABLE, Linters, assert_clean, linters  # noqa: F401  (fixture)

OPTION_SETS = {
    "defaults": [],
    "container-publish": ["--container", "--publish"],
    "py312-pinned-ref": ["--python", "3.12", "--cuda", "12,13", "--ref", "v0.1.0"],
    "one-python": ["--python", "3.13", "--container"],
    "variants-publish": ["--variants", "--publish"],
    "variants": ["--variants"],
    "cibuildwheel-publish": ["--cibuildwheel", "--publish"],
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
    written = linters.yaml(project / ".github" / "workflows" / "wheels.yml")
    shipped = linters.yaml(example)
    # The written call names the release of the wheelmerge that wrote it; the shipped example
    # names the ref that ci/set-ref.sh gives every shipped file (main between releases).
    uses, ref = written["jobs"]["wheels"]["uses"].rsplit("@", 1)
    assert ref == f"v{wheelmerge_version()}"
    assert shipped["jobs"]["wheels"]["uses"].rsplit("@", 1)[0] == uses
    shipped["jobs"]["wheels"]["uses"] = written["jobs"]["wheels"]["uses"]
    assert written == shipped


def test_pinned_to_the_release_that_wrote_it(wheelmerge_bin, project):
    init(wheelmerge_bin, project)
    text = (project / ".github" / "workflows" / "wheels.yml").read_text()
    version = wheelmerge_version()
    assert f"wheelmerge-wheels.yml@v{version}\n" in text
    assert f"pinned at v{version}" in text  # and how to move on, with the options that wrote it:
    assert "`wheelmerge ci init --python 3.10,3.11,3.12,3.13 --cuda 12,13 --import-name mypkg --force`" in text
    init(wheelmerge_bin, project, "--force", "--ref", "main")
    assert "wheelmerge-wheels.yml@main\n" in (project / ".github" / "workflows" / "wheels.yml").read_text()


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


def release_variants_script(wheelmerge_bin: Path, linters: Linters, project: Path) -> str:
    init(wheelmerge_bin, project, "--variants", "--publish")
    workflow = linters.yaml(project / ".github" / "workflows" / "wheels.yml")
    return workflow["jobs"]["release-variants"]["steps"][-1]["run"]


@pytest.mark.parametrize("same", [True, False], ids=["same-index", "index-differs"])
def test_release_job_uploads_one_index_only_when_every_python_version_agrees(wheelmerge_bin, linters: Linters, project,
                                                                             tmp_path, same):
    """The release job's script, run with a stand-in `gh` that records what it is asked to do:
    two Python versions' artifacts (one directory each, as download-artifact writes them without
    merge-multiple) upload every wheel and one index, or fail when the indexes differ."""
    script = release_variants_script(wheelmerge_bin, linters, project)
    work = tmp_path / "job"
    for python, sm in (("3.11", "90_real"), ("3.12", "90_real" if same else "80_real")):
        d = work / "variants" / f"variants-py{python}"
        d.mkdir(parents=True)
        (d / f"my_pkg-1.0-cp{python.replace('.', '')}-cp{python.replace('.', '')}-linux_x86_64-cu12.whl").write_bytes(b"w")
        (d / "my_pkg-1.0-variants.json").write_text('{"sm_arch": "%s"}\n' % sm)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "gh.log"
    (bin_dir / "gh").write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    (bin_dir / "gh").chmod(0o755)
    result = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True,
                            env={"PATH": f"{bin_dir}:/usr/bin:/bin", "TAG": "v1.0", "GITHUB_REPOSITORY": "o/r"})
    if same:
        assert result.returncode == 0, result.stdout + result.stderr
        assert sorted(p.name for p in (work / "release").iterdir()) == [
            "my_pkg-1.0-cp311-cp311-linux_x86_64-cu12.whl", "my_pkg-1.0-cp312-cp312-linux_x86_64-cu12.whl",
            "my_pkg-1.0-variants.json"]
        assert "release upload v1.0 release/" in log.read_text()
    else:
        assert result.returncode == 1
        assert "::error::" in result.stdout and "differs from" in result.stdout
        assert not log.exists() or "upload" not in log.read_text()


def test_cibuildwheel_option_names_the_builder_and_leaves_the_repair_to_it(wheelmerge_bin, linters: Linters, project):
    init(wheelmerge_bin, project, "--cibuildwheel", "--publish")
    call = linters.yaml(project / ".github" / "workflows" / "wheels.yml")["jobs"]["wheels"]["with"]
    assert call["builder"] == "cibuildwheel"
    assert "container" not in call and "repair-command" not in call
    both = init(wheelmerge_bin, project, "--cibuildwheel", "--container", "--force", check=False)
    assert both.returncode != 0 and "excludes" in both.stderr


# --- labels other than CUDA majors: torch releases, x86-64 levels --------------------------------

LABEL_CONFIGS = {
    "torch-floors": ('variants = ["torch210plus_cu12", "torch211plus_cu13"]',
                     ["torch210plus_cu12", "torch211plus_cu13"], "beside the torch each label names"),
    "torch-cpu": ('variants = ["torch210_cpu"]', ["torch210_cpu"], "beside the torch each label names"),
    "cpu-levels": ('variants = ["x86_64_v1", "x86_64_v3"]', ["x86_64_v1", "x86_64_v3"],
                   "on the runner's CPU, each level it runs"),
}


@pytest.mark.parametrize("config, labels, tested", LABEL_CONFIGS.values(), ids=LABEL_CONFIGS.keys())
def test_labels_of_the_configuration_become_one_job_each(wheelmerge_bin, linters: Linters, tmp_path, config, labels,
                                                         tested):
    """A torch or CPU-level configuration gets its own labels as the workflow's builds (not CUDA
    12 and 13 jobs); the file passes actionlint against the reusable workflow, the schema, and
    the workflow's own plan step turns the call into one build and one test job per label."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text(f'[project]\nname = "mypkg"\n\n[tool.wheelmerge]\n{config}\n')
    run([wheelmerge_bin, "ci", "init", project, "--python", "3.12"])
    path = project / ".github" / "workflows" / "wheels.yml"
    text = path.read_text()
    call = linters.yaml(path)["jobs"]["wheels"]["with"]
    assert "cuda-majors" not in call and call["labels"] == "[" + ", ".join(f'"{l}"' for l in labels) + "]"
    assert tested in " ".join(line.lstrip("# ") for line in text.splitlines()[:5])
    command = f"wheelmerge ci init --python 3.12 --variant {','.join(labels)} --import-name mypkg --force"
    assert f"`{command}`" in text
    # The command the comment gives writes the same file again.
    run([wheelmerge_bin, *command.split()[1:], project])
    assert path.read_text() == text
    (project / ".github" / "workflows" / REUSABLE.name).write_text(REUSABLE.read_text())
    path.write_text(re.sub(r"uses: wheelmerge/wheelmerge/(\.github/workflows/[^@]+)@\S+", r"uses: ./\1", text))
    run(["git", "init", "-q", project])
    assert_clean(linters.actionlint(cwd=project), "actionlint")
    assert_clean(linters.schema("vendor.github-workflows", path), "schema check")


@pytest.mark.parametrize("args, message", [
    (["--variant", "torch210_cu12,x86_64_v3"], "variant labels of different selectors for the workflow"),
    (["--variant", "torch210_cu12,torch210_cu12"], "a variant label given twice"),
    # What merge would refuse of the builds: ci init refuses to write their workflow.
    (["--variant", "torch210_cu12,torch211plus_cu13"], "torch labels with a floor and without one for the workflow"),
    (["--variant", "torch210plus_cu12,torch310plus_cu13"], "torch floors of different majors for the workflow"),
    (["--variant", "torch210_cu12", "--cuda", "12"], "both --cuda and --variant"),
    (["--variant", "torch2_cu12"], "invalid --variant"),
    (["--variant", "x86_64_v3", "--cibuildwheel"], "--cibuildwheel builds CUDA labels only"),
    (["--variant", "torch211plus_cu13", "--variants"], "--variants: no variant properties for a label"),
])
def test_labels_the_workflow_cannot_build_are_refused(wheelmerge_bin, project, args, message):
    result = init(wheelmerge_bin, project, *args, check=False)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr, result.stderr
    assert not (project / ".github").exists()


def test_cuda_labels_given_as_variants_are_cuda_majors(wheelmerge_bin, linters: Linters, project):
    init(wheelmerge_bin, project, "--variant", "cu13,cu12")
    call = linters.yaml(project / ".github" / "workflows" / "wheels.yml")["jobs"]["wheels"]["with"]
    assert call["cuda-majors"] == "[13, 12]" and "labels" not in call
