"""`wheelmerge ci init` writes values from a project's configuration and its command line into
a GitHub Actions workflow. GitHub evaluates `${{ ... }}` in any string of a workflow, a line
break or a quote could end a YAML value early, and a space would split one glob into two: each
such value is refused (exit 2, nothing written); each value of the grammars wheelmerge accepts
is written so that a YAML parser (ruamel.yaml, as GitHub's is a YAML 1.2 parser) reads back
exactly what was configured, with no expression but the workflow's own, and actionlint stays
clean. The reusable workflow and the composite action take every value into their scripts
through env, never through `${{ }}` inside `run:` (checked below on the files themselves)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import ROOT, run
from test_ci import REUSABLE, Linters, assert_clean, linters  # noqa: F401  (fixture)

EXPRESSION = re.compile(r"\$\{\{.*?\}\}", re.S)

HOSTILE_NAMES = ["pkg${{ secrets.PYPI_TOKEN }}", "pkg\nname", "pkg name", "pkg'x", 'pkg"x', "pkg:x", "-pkg",
                 "pkg$(id)", "pk\u00e9g", "p" * 10_000 + "!"]
HOSTILE_GLOBS = ["pkg/*.so ${{ github.token }}", "pkg/a b.py", "pkg/a\tb.py", "pkg/a\nb.py", "pkg/'x'", 'pkg/"x"',
                 "pkg/$(id)", "pkg/`id`", "pkg/{a,b}.py", "pkg/a\\b", "", "pkg/\u00e9.py", "x" * 2000, "-x", "--output-dir=/"]
HOSTILE_PYTHONS = ['3.12"', "3.12'", "3.1 2", "${{ github.token }}", "3.12\n- 3.13", "3", "3.x", "2.7", "3.012",
                   "\uff13.12", "3.12,3.12"]
HOSTILE_REFS = ["main${{ github.token }}", "v1 ; rm -rf /", "../x", "-x", "a..b", "a:b", "a\nb", "x.lock", "/x", "x/",
                "a" * 300]
HOSTILE_IMPORTS = ["a.b-c", "a..b", ".a", "a.", "1a", "${{x}}", "a b", "a\nb", "\u00e9"]


def _project(tmp_path: Path, name: str = "mypkg", variant_files: list[str] | None = None) -> Path:
    project = tmp_path / "project"
    project.mkdir(parents=True)
    config = f"[project]\nname = {json.dumps(name)}\nversion = \"1.0\"\n"
    if variant_files is not None:
        config += f"\n[tool.wheelmerge]\nvariant-files = {json.dumps(variant_files)}\n"
    (project / "pyproject.toml").write_text(config)
    return project


def _refused(result, project: Path) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("wheelmerge: error: "), result.stderr
    assert "internal error" not in result.stderr, result.stderr
    assert not (project / ".github").exists()


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_project_names_that_are_no_pep508_name_are_refused(wheelmerge_bin, tmp_path: Path, name: str) -> None:
    project = _project(tmp_path, name)
    result = run([wheelmerge_bin, "ci", "init", project], check=False)
    _refused(result, project)
    assert "pyproject.toml" in result.stderr and "[project] name" in result.stderr, result.stderr


@pytest.mark.parametrize("glob", HOSTILE_GLOBS, ids=range(len(HOSTILE_GLOBS)))
def test_variant_file_globs_the_workflow_cannot_carry_are_refused(wheelmerge_bin, tmp_path: Path, glob: str) -> None:
    project = _project(tmp_path, variant_files=["pkg/ok.py", glob])
    result = run([wheelmerge_bin, "ci", "init", project], check=False)
    _refused(result, project)


@pytest.mark.parametrize("option,value", [("--python", v) for v in HOSTILE_PYTHONS] +
                         [("--ref", v) for v in HOSTILE_REFS] + [("--import-name", v) for v in HOSTILE_IMPORTS],
                         ids=lambda v: str(len(v)) if len(v) > 40 else repr(v))
def test_option_values_outside_their_grammar_are_refused(wheelmerge_bin, tmp_path: Path, option: str,
                                                          value: str) -> None:
    project = _project(tmp_path)
    result = run([wheelmerge_bin, "ci", "init", project, option, value], check=False)
    _refused(result, project)


def _expressions(text: str) -> set[str]:
    return set(EXPRESSION.findall(text))


def test_accepted_values_mean_exactly_what_was_configured(wheelmerge_bin, linters: Linters, tmp_path: Path) -> None:
    """Values at the edges of each grammar: written, read back by a YAML parser as configured,
    no expression but those of the workflow written for the plainest project, actionlint clean."""
    globs = ["pkg/*.cu*.so", "pkg/[ab]?.py", "pkg/_info#1.py", "#x.py", "pkg/a,b.py", "pkg/x:y&z!|%.py", "yes", "*"]
    project = _project(tmp_path, "My.Pkg-2_x", globs)
    on = _project(tmp_path / "on", "on")  # a YAML 1.1 boolean, unless quoted
    run([wheelmerge_bin, "ci", "init", on])
    import yaml  # PyYAML reads YAML 1.1, where a plain `on` is True
    assert yaml.safe_load((on / ".github" / "workflows" / "wheels.yml").read_text())["jobs"]["wheels"]["with"][
        "import-name"] == "on"
    run([wheelmerge_bin, "ci", "init", project, "--python", "3.9,3.13t", "--ref", "refs/tags/v1.2.0-rc.1",
         "--variants", "--publish"])
    workflow = project / ".github" / "workflows" / "wheels.yml"
    text = workflow.read_text()
    called = linters.yaml(workflow)["jobs"]["wheels"]
    assert called["uses"].endswith("@refs/tags/v1.2.0-rc.1")
    inputs = called["with"]
    assert inputs["import-name"] == "my_pkg_2_x"
    assert json.loads(inputs["python-versions"]) == ["3.9", "3.13t"]
    assert inputs["variant-files"].split(" ") == globs

    plain = _project(tmp_path / "plain")
    run([wheelmerge_bin, "ci", "init", plain, "--variants", "--publish"])
    assert _expressions(text) == _expressions((plain / ".github" / "workflows" / "wheels.yml").read_text())

    (project / ".github" / "workflows" / REUSABLE.name).write_text(REUSABLE.read_text())
    workflow.write_text(re.sub(r"uses: wheelmerge/wheelmerge/(\.github/workflows/[^@]+)@\S+", r"uses: ./\1", text))
    run(["git", "init", "-q", project])
    assert_clean(linters.actionlint(cwd=project), "actionlint")


def _run_scripts(node, where: str):
    """Every `run:` script under a parsed workflow or action, with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "run" and isinstance(value, str):
                yield f"{where}.run", value
            else:
                yield from _run_scripts(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _run_scripts(item, f"{where}[{i}]")


@pytest.mark.parametrize("path", sorted((ROOT / ".github" / "workflows").glob("*.yml"))
                         + [ROOT / "ci" / "action.yml", *sorted((ROOT / "ci").glob("*/action.yml"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_script_interpolates_a_value(linters: Linters, path: Path) -> None:
    """Values reach scripts through env ("$VAR"), where the shell sees them as data; an
    expression inside `run:` is pasted into the script before the shell reads it."""
    scripts = list(_run_scripts(linters.yaml(path), path.name))
    assert scripts, path
    for where, script in scripts:
        assert not EXPRESSION.search(script), f"{where} interpolates {EXPRESSION.search(script).group(0)}"
