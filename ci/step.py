#!/usr/bin/env python3
"""Runs one `run:` step of a workflow or action file the way GitHub's runner runs it, for
ci/rehearse.sh: the rehearsal executes the workflow's own text, not a copy of it.

    ci/step.py FILE NAME --job DIR [--cwd DIR] [--set KEY=VALUE]... [--job-env KEY=VALUE]...
               [--job-path DIR]...
    ci/step.py FILE NAME --show

A step is named by its marker, the first line of its script: `# rehearse: NAME`. Its script must
take everything through env (no ${{ }} in it); its `env:` keys are read from the file, and
--set must give exactly those keys (so that the rehearsal and the file cannot drift apart). The
file's top-level `env:` (literal values only) applies to the step, as on GitHub.

The job's state lives in DIR: variables a step appends to $GITHUB_ENV and directories it appends
to $GITHUB_PATH apply to the job's later steps (state.json); --job-env and --job-path add to
the job what the steps of other kinds did (actions/setup-python puts a Python on PATH) or what
the rehearsal does differently (PIP_FIND_LINKS); each step's outputs
($GITHUB_OUTPUT) are written to DIR/outputs/NAME.json and printed as KEY=VALUE lines on stdout.
The script runs as `shell: bash` runs it: bash --noprofile --norc -eo pipefail FILE, in --cwd
(default DIR), with RUNNER_TEMP=DIR/tmp and GITHUB_WORKSPACE=--cwd.

The reader is line-based, not a YAML parser: it knows the layout of wheelmerge's own files
(block scalars `run: |`, `env:` mappings of plain keys), and refuses anything else it meets.
tests/integration/ci/test_ci.py checks what it reads against a real YAML parser.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MARKER = "# rehearse: "
# Variables of the calling shell that must not reach a step (they would change what pip, Python
# or wheelmerge's loader do), as on a fresh runner.
LEAKY = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "WHEELMERGE_CUDA_MAJOR",
         "CUDA_HOME", "CUDA_PATH", "CUDACXX", "WHEELMERGE_BUILD_CUDA_MAJOR", "WHEELMERGE_BUILD_VARIANT",
         "WHEELMERGE_VARIANT", "CFLAGS", "CXXFLAGS", "GITHUB_ACTIONS",
         "GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY",
         "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_TARGET",
         "PIP_PREFIX", "PIP_USER", "PIP_CONSTRAINT", "PIP_REQUIRE_VIRTUALENV",
         "UV_INDEX", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "UV_NO_INDEX",
         "UV_OFFLINE", "WHEELMERGE_CUDA_11", "WHEELMERGE_CUDA_12", "WHEELMERGE_CUDA_13")


class StepError(Exception):
    pass


@dataclass
class Step:
    name: str
    script: str
    env_keys: list[str]
    workflow_env: dict[str, str]


def indentation(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def read_step(path: Path, name: str) -> Step:
    lines = path.read_text().splitlines()
    markers = [i for i, line in enumerate(lines) if line.strip() == MARKER + name]
    if len(markers) != 1:
        raise StepError(f"{path}: expected one step marked '{MARKER}{name}', found {len(markers)}")
    first = markers[0]
    block_indent = indentation(lines[first])
    run_line = first - 1
    if not re.fullmatch(r"\s*run: \|", lines[run_line]):
        raise StepError(f"{path}:{first + 1}: the marker must be the first line of a `run: |` block")
    key_indent = indentation(lines[run_line])

    # The script: the block scalar's lines, less the block's indentation.
    body = []
    for line in lines[first:]:
        if line.strip() and indentation(line) < block_indent:
            break
        body.append(line[block_indent:])
    while body and not body[-1].strip():
        body.pop()
    script = "\n".join(body) + "\n"
    if "${{" in script:
        raise StepError(f"{path}: step '{name}' has ${{{{ }}}} in its script; pass it through env")

    # The step's keys: from the `- ` line that opens the step down to `run:`.
    start = run_line
    while start > 0 and not re.match(rf"^ {{{key_indent - 2}}}- ", lines[start]):
        start -= 1
        if lines[start].strip() and indentation(lines[start]) < key_indent - 2:
            raise StepError(f"{path}: cannot find the start of step '{name}'")
    env_keys: list[str] = []
    i = start
    while i < run_line:
        line = lines[i]
        at_key = len(line) > key_indent and line[key_indent] != " " and not line[:key_indent - 2].strip()
        if at_key and line[key_indent:].rstrip() == "env:":
            i += 1
            while i < run_line and (not lines[i].strip() or indentation(lines[i]) > key_indent):
                entry = lines[i].strip()
                if entry and not entry.startswith("#"):
                    match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*):( .*)?", entry)
                    if not match:
                        raise StepError(f"{path}:{i + 1}: cannot read this env entry of step '{name}'")
                    env_keys.append(match[1])
                i += 1
            continue
        if at_key and line[key_indent:].startswith("shell:") and line.split(":", 1)[1].strip() != "bash":
            raise StepError(f"{path}:{i + 1}: step '{name}' must run with shell: bash")
        i += 1

    # The file's top-level env, literal values only.
    workflow_env: dict[str, str] = {}
    for i, line in enumerate(lines):
        if line.rstrip() == "env:":
            for entry in lines[i + 1:]:
                if entry.strip() and indentation(entry) == 0:
                    break
                if not entry.strip() or entry.strip().startswith("#"):
                    continue
                match = re.fullmatch(r"  ([A-Za-z_][A-Za-z0-9_]*): (.+)", entry)
                if not match or "${{" in match[2]:
                    raise StepError(f"{path}: cannot read the top-level env entry {entry.strip()!r}")
                workflow_env[match[1]] = unquote(match[2])
    return Step(name, script, env_keys, workflow_env)


def parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise StepError(f"{what} {pair!r}: expected KEY=VALUE")
        result[key] = value
    return result


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines and KEY<<DELIMITER blocks, as the runner reads $GITHUB_ENV and $GITHUB_OUTPUT."""
    result: dict[str, str] = {}
    if not path.exists():
        return result
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delimiter = line.split("<<", 1)
            value = []
            while i < len(lines) and lines[i] != delimiter:
                value.append(lines[i])
                i += 1
            if i == len(lines):
                raise StepError(f"{path}: no closing {delimiter!r} for {key}")
            i += 1
            result[key] = "\n".join(value)
        elif "=" in line:
            key, value = line.split("=", 1)
            result[key] = value
        else:
            raise StepError(f"{path}: cannot read line {line!r}")
    return result


def run(step: Step, job: Path, cwd: Path, given: dict[str, str], job_env: dict[str, str],
        job_path: list[str]) -> int:
    missing = [k for k in step.env_keys if k not in given]
    extra = [k for k in given if k not in step.env_keys]
    if missing or extra:
        raise StepError(f"step '{step.name}': its env is {step.env_keys}; the rehearsal "
                        f"{'lacks ' + str(missing) if missing else ''}"
                        f"{' and ' if missing and extra else ''}"
                        f"{'gives unknown ' + str(extra) if extra else ''}")
    job.mkdir(parents=True, exist_ok=True)
    (job / "tmp").mkdir(exist_ok=True)
    (job / "outputs").mkdir(exist_ok=True)
    state_file = job / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {"env": {}, "path": []}
    state["env"].update(job_env)
    state["path"] = [*reversed(job_path), *state["path"]]

    files = {name: job / f"{step.name}.{name.lower()}" for name in
             ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
    for file in files.values():
        file.write_text("")
    script = job / f"{step.name}.sh"
    script.write_text(step.script)

    env = {k: v for k, v in os.environ.items() if k not in LEAKY}
    env.update(step.workflow_env)
    env.update(state["env"])
    env["PATH"] = os.pathsep.join([*state["path"], env.get("PATH", "")])
    env.update(given)
    env.update({k: str(v) for k, v in files.items()})
    env.update(RUNNER_TEMP=str(job / "tmp"), GITHUB_WORKSPACE=str(cwd))

    print(f"rehearse: run step '{step.name}' (in {cwd})", file=sys.stderr, flush=True)
    status = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                            cwd=cwd, env=env, stdout=sys.stderr).returncode

    state["env"].update(read_env_file(files["GITHUB_ENV"]))
    added = [line for line in files["GITHUB_PATH"].read_text().splitlines() if line.strip()]
    state["path"] = [*reversed(added), *state["path"]]
    state_file.write_text(json.dumps(state, indent=1))
    outputs = read_env_file(files["GITHUB_OUTPUT"])
    (job / "outputs" / f"{step.name}.json").write_text(json.dumps(outputs, indent=1))
    for key, value in outputs.items():
        print(f"{key}={value}")
    if status != 0:
        print(f"rehearse: step '{step.name}' failed with exit status {status}", file=sys.stderr)
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("name")
    parser.add_argument("--job", type=Path, help="the job's state directory")
    parser.add_argument("--cwd", type=Path, help="where the step runs (default: --job)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a value of the step's env")
    parser.add_argument("--job-env", action="append", default=[], metavar="KEY=VALUE",
                        help="a variable of the rehearsal's job, beyond what the file sets")
    parser.add_argument("--job-path", action="append", default=[], metavar="DIR",
                        help="a directory put first on the job's PATH")
    parser.add_argument("--show", action="store_true", help="print the step as read, as JSON")
    args = parser.parse_args()
    try:
        step = read_step(args.file, args.name)
        if args.show:
            print(json.dumps(step.__dict__, indent=1))
            return 0
        if args.job is None:
            parser.error("--job is required to run a step")
        job = args.job.resolve()
        cwd = (args.cwd or job).resolve()
        return run(step, job, cwd, parse_pairs(args.set, "--set"), parse_pairs(args.job_env, "--job-env"),
                   [str(Path(p).resolve()) for p in args.job_path])
    except StepError as error:
        print(f"step.py: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
