"""The command line a new user meets: mistyped commands and options, missing inputs, the dist/
default, `build --cuda N=PATH`, one-variant builds, what a build leaves in TMPDIR, --help, the
"wheelmerge: error:" prefix and the GitHub Actions workflow commands (read back with a parser
that follows GitHub's documented escaping)."""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from conftest import clean_env
from build_support import PYTHON, Toolkits, copy_project, make_toolkit
from wheelgen import build_wheel, elf_shared_object

COMMANDS = ["merge", "inspect", "variants", "build", "verify", "ci init", "config", "toolkit"]
TAGS = "cp312-cp312-linux_x86_64"


def wm(binary: Path, *args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    tmpdir = cwd / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    full = clean_env({"NO_COLOR": "1", "TMPDIR": str(tmpdir)})
    for key in ("GITHUB_ACTIONS", "SOURCE_DATE_EPOCH", "CUDA_HOME", "CUDA_PATH"):
        full.pop(key, None)
    for key in [k for k in full if k.startswith("WHEELMERGE_CUDA_")]:
        del full[key]
    full.update(env or {})
    return subprocess.run([str(binary), *map(str, args)], check=False, capture_output=True, text=True, cwd=cwd,
                          env=full, timeout=300)


def describe(result: subprocess.CompletedProcess) -> str:
    return f"exit status {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


def two_builds(directory: Path) -> list[str]:
    """Two builds of one package whose extension module differs, as PATH=LABEL inputs."""
    inputs = []
    for label in ("cu12", "cu13"):
        (directory / label).mkdir(parents=True)
        module = elf_shared_object(soname=f"_build_{label}.so")
        wheel = build_wheel(directory / label / f"pkg-1.0-{TAGS}.whl",
                            {"pkg/__init__.py": b"", "pkg/_build.cpython-312-x86_64-linux-gnu.so": module},
                            tags=TAGS)
        inputs.append(f"{wheel}={label}")
    return inputs


def only_prefixed_lines(stderr: str) -> None:
    """The first line is an error, and every line is one of wheelmerge's (an error, a warning, or
    the indented lines of a log shown in one)."""
    lines = stderr.splitlines()
    assert lines and lines[0].startswith("wheelmerge: error: "), stderr
    assert all(line.startswith(("wheelmerge: error: ", "wheelmerge: warning: ", "    ")) for line in lines), stderr


# --- GitHub's workflow commands, as the runner reads them ---------------------------------------

def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return (text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",")
            .replace("%25", "%"))


def workflow_commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """(command, properties, message) of each line the runner takes as a command: after leading
    blanks, `::NAME[ KEY=VALUE,...]::MESSAGE`."""
    commands = []
    for line in output.split("\n"):
        line = line.strip()
        if not line.startswith("::"):
            continue
        end = line.find("::", 2)
        if end < 0:
            continue
        head, message = line[2:end], line[end + 2:]
        name, _, props = head.partition(" ")
        properties = {}
        for pair in filter(None, props.split(",")):
            key, _, value = pair.partition("=")
            properties[key] = unescape_property(value)
        commands.append((name, properties, unescape_data(message)))
    return commands


def test_workflow_command_parser_follows_githubs_escaping():
    assert workflow_commands("x\n  ::error file=a%2Cb%3Ac%25%0Ad,title=t::m%0A::x%25\n") == [
        ("error", {"file": "a,b:c%\nd", "title": "t"}, "m\n::x%")]


# --- (1) mistyped commands and options -----------------------------------------------------------

@pytest.mark.parametrize("args, expected", [
    (["mergee", "x"], 'unknown command "mergee" (did you mean "merge"?)'),
    (["verfy", "a.whl"], 'unknown command "verfy" (did you mean "verify"?)'),
    (["MERGE", "a.whl"], 'unknown command "MERGE" (did you mean "merge"?)'),
    (["Inspect", "a.whl"], 'unknown command "Inspect" (did you mean "inspect"?)'),
    (["merge", "--OUTPUT-DIR", "d", "a.whl"], 'unknown option --OUTPUT-DIR of wheelmerge merge (did you mean "--output-dir"?)'),
    (["frobnicate"], 'unknown command "frobnicate"; the commands are merge,'),
    (["--frob"], "unknown option --frob"),
    (["--jsn", "merge", "a.whl"], "unknown option --jsn"),
    (["merge", "--outptu-dir", "d", "a.whl"], 'unknown option --outptu-dir of wheelmerge merge (did you mean "--output-dir"?)'),
    (["build", "--varaint", "cu12"], 'unknown option --varaint of wheelmerge build (did you mean "--variant"?)'),
    (["ci", "init", "--pubish"], 'unknown option --pubish of wheelmerge ci init (did you mean "--publish"?)'),
    (["inspect", "-x", "a.whl"], "unknown option -x of wheelmerge inspect"),
    (["merge", "-v", "-qz", "a.whl"], "unknown option -z of wheelmerge merge"),
    (["build", "-v"], "unknown option -v of wheelmerge build"),  # -v prints nothing more in build: not taken
    (["inspect", "a.whl", "b.whl"], 'unexpected argument "b.whl" of wheelmerge inspect'),
])
def test_mistyped_commands_and_options_are_named(wheelmerge_bin, tmp_path, args, expected):
    """Before: `mergee x` was taken as input wheels ("no variant label"), `--frob` gave CLI11's
    "A subcommand is required" and unknown options their text without a suggestion."""
    result = wm(wheelmerge_bin, *args, cwd=tmp_path)
    assert result.returncode == 2, describe(result)
    only_prefixed_lines(result.stderr)
    assert expected in result.stderr, result.stderr
    assert "no variant label" not in result.stderr and "A subcommand is required" not in result.stderr


def test_double_dash_ends_the_options(wheelmerge_bin, tmp_path):
    """`merge -o out -- A B`: the inputs after `--` are inputs (the fuzz oracle's form), even one
    whose name starts with a dash."""
    inputs = two_builds(tmp_path / "in")
    result = wm(wheelmerge_bin, "merge", "-o", tmp_path / "out", "--", *inputs, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    assert [p.name for p in (tmp_path / "out").iterdir()] == [f"pkg-1.0-{TAGS}.whl"]
    result = wm(wheelmerge_bin, "merge", "-o", tmp_path / "out2", "--", inputs[0], "-x.whl", cwd=tmp_path)
    assert result.returncode == 2 and "-x.whl: cannot read the input" in result.stderr, describe(result)


def test_a_wheel_input_first_is_still_the_short_form_of_merge(wheelmerge_bin, tmp_path):
    inputs = two_builds(tmp_path / "in")
    result = wm(wheelmerge_bin, *inputs, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    assert [p.name for p in (tmp_path / "dist").iterdir()] == [f"pkg-1.0-{TAGS}.whl"]
    # An existing file without .whl is an input too (and then refused as a wheel name, not a command).
    odd = tmp_path / "notes"
    odd.write_text("x")
    result = wm(wheelmerge_bin, "notes", cwd=tmp_path)
    assert result.returncode != 0 and "unknown command" not in result.stderr, describe(result)
    only_prefixed_lines(result.stderr)


def test_parse_errors_carry_the_prefix_on_one_line(wheelmerge_bin, tmp_path):
    for args, expected in ((["merge"], "wheels is required (wheelmerge merge --help lists the options)"),
                           ([], "a command is required (wheelmerge --help lists the options)"),
                           (["ci"], "(wheelmerge ci --help lists the options)")):
        result = wm(wheelmerge_bin, *args, cwd=tmp_path)
        assert result.returncode == 2, describe(result)
        assert result.stderr.splitlines() == [result.stderr.splitlines()[0]], result.stderr
        only_prefixed_lines(result.stderr)
        assert expected in result.stderr, result.stderr


# --- (2) missing inputs first --------------------------------------------------------------------

@pytest.mark.parametrize("command", [["merge"], ["variants"], ["inspect"], ["verify"], []])
def test_missing_input_is_reported_before_labels(wheelmerge_bin, tmp_path, command):
    """Before: `merge missing.whl` said "no variant label" and `verify missing.whl` "not a wheel
    file name"; now each missing file is named with the system's reason, first."""
    names = ["missing.whl"] if command == ["inspect"] else ["missing.whl", "gone/other.whl=cu13"]
    result = wm(wheelmerge_bin, *command, *names, cwd=tmp_path)
    assert result.returncode == 2, describe(result)
    only_prefixed_lines(result.stderr)
    errors = result.stderr.splitlines()
    expected = ["missing.whl", "gone/other.whl=cu13" if command == ["verify"] else "gone/other.whl"][:len(names)]
    assert errors == [f"wheelmerge: error: {n}: cannot read the input: No such file or directory"
                      for n in expected], result.stderr
    assert not (tmp_path / "dist").exists()


def test_a_directory_as_input_is_named(wheelmerge_bin, tmp_path):
    (tmp_path / "d.whl").mkdir()
    result = wm(wheelmerge_bin, "verify", "d.whl", cwd=tmp_path)
    assert result.returncode == 2, describe(result)
    assert "d.whl: cannot read the input: Is a directory" in result.stderr


def test_bad_wheel_error_has_the_prefix(wheelmerge_bin, tmp_path):
    (tmp_path / f"pkg-1.0-{TAGS}.whl").write_bytes(b"not a zip archive")
    for command in (["inspect"], ["verify"], ["merge"]):
        result = wm(wheelmerge_bin, *command, f"pkg-1.0-{TAGS}.whl", cwd=tmp_path)
        assert result.returncode in (2, 3), describe(result)
        only_prefixed_lines(result.stderr)


# --- (4) one output directory default ------------------------------------------------------------

def test_merge_and_variants_write_into_dist_by_default(wheelmerge_bin, tmp_path):
    """Before: merge and variants wrote into the current directory, build into dist/."""
    inputs = two_builds(tmp_path / "in")
    result = wm(wheelmerge_bin, "merge", *inputs, cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    assert [p.name for p in (tmp_path / "dist").iterdir()] == [f"pkg-1.0-{TAGS}.whl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dist", "in", "tmpdir"]
    work = tmp_path / "v"
    work.mkdir()
    result = wm(wheelmerge_bin, "variants", *inputs, cwd=work)
    assert result.returncode == 0, describe(result)
    written = sorted(p.name for p in (work / "dist").iterdir())
    assert "pkg-1.0-variants.json" in written and len(written) == 3, written
    for command in ("merge", "variants", "build"):
        help_text = wm(wheelmerge_bin, command, "--help", cwd=tmp_path).stdout
        assert "created when missing (default: dist)" in help_text, help_text


# --- (3) and (5): build --cuda, one variant, TMPDIR ----------------------------------------------

def toolkits_in(tmp_path: Path) -> Toolkits:
    return Toolkits(cu12=make_toolkit(tmp_path / "toolkits" / "cuda-12.9", cuda_version=12090),
                    cu13=make_toolkit(tmp_path / "toolkits" / "cuda-13.0", cuda_version=13000))


def listing(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def test_cuda_with_a_path_names_a_toolkit_and_keeps_the_configured_builds(wheelmerge_bin, tmp_path):
    """Before: `--cuda 12=PATH` with `cuda = [12, 13]` configured built CUDA 12 alone and was
    refused ("expected at least 2, found 12"). Now the configured builds stay; CUDA 13's toolkit
    comes from WHEELMERGE_CUDA_13. `toolkit` reads --cuda the same way."""
    project = copy_project("envprobe", tmp_path)
    text = (project / "pyproject.toml").read_text().replace("[tool.wheelmerge]\n", "[tool.wheelmerge]\ncuda = [12, 13]\n")
    (project / "pyproject.toml").write_text(text)
    tk = toolkits_in(tmp_path)
    env = {"WHEELMERGE_CUDA_13": str(tk.cu13)}
    shown = wm(wheelmerge_bin, "toolkit", project, "--cuda", f"12={tk.cu12}", "--json", cwd=tmp_path, env=env)
    assert shown.returncode == 0, describe(shown)
    assert [(t["label"], t["found_by"]) for t in json.loads(shown.stdout)["toolkits"]] == [
        ("cu12", "--cuda 12=PATH"), ("cu13", "WHEELMERGE_CUDA_13")], shown.stdout
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    before = listing(tmpdir)
    result = wm(wheelmerge_bin, "build", project, "--cuda", f"12={tk.cu12}", "--no-isolation", "--python", PYTHON,
                "--json", cwd=tmp_path, env=env)
    assert result.returncode == 0, describe(result)
    summary = json.loads(result.stdout)
    assert [v["label"] for v in summary["variants"]] == ["cu12", "cu13"], summary
    assert "wheelmerge: warning:" not in result.stderr, result.stderr
    assert Path(summary["output"]).parent == tmp_path / "dist", summary
    # Nothing left in TMPDIR after success: before, wheelmerge-build-*/logs stayed.
    assert listing(tmpdir) == before == [], listing(tmpdir)
    assert summary["log_dir"] is None, summary


def test_one_variant_builds_a_one_build_wheel(wheelmerge_bin, tmp_path):
    """Before: "a build needs two or more CUDA majors". Now `--cuda 13` builds CUDA 13 alone and
    merges it as `merge` does one input (envprobe has no extension module, so its one-build
    wheel gets no loader, with merge's warning saying so)."""
    project = copy_project("envprobe", tmp_path)
    tk = toolkits_in(tmp_path)
    result = wm(wheelmerge_bin, "build", project, "--cuda", "13", "--cuda", f"13={tk.cu13}", "--no-isolation",
                "--python", PYTHON, "--json", "-o", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    summary = json.loads(result.stdout)
    assert [v["label"] for v in summary["variants"]] == ["cu13"], summary
    assert "wheelmerge: warning: " in result.stderr and "one build, with no extension module" in result.stderr, \
        result.stderr
    assert "names the toolkit" not in result.stderr, result.stderr
    merged = wm(wheelmerge_bin, "verify", summary["output"], cwd=tmp_path)
    assert merged.returncode == 0, describe(merged)
    with zipfile.ZipFile(summary["output"]) as z:
        assert "envprobe/_buildenv.py" in z.namelist(), z.namelist()


def test_usage_error_leaves_nothing_and_a_failed_build_keeps_its_logs(wheelmerge_bin, tmp_path):
    tk = toolkits_in(tmp_path)
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    project = copy_project("envprobe", tmp_path)
    result = wm(wheelmerge_bin, "build", project, "-C", "novalue", cwd=tmp_path)
    assert result.returncode == 2 and "invalid -C" in result.stderr, describe(result)
    assert listing(tmpdir) == [], listing(tmpdir)

    failing = copy_project("failing", tmp_path)
    result = wm(wheelmerge_bin, "build", failing, *tk.args(), "--no-isolation", "--python", PYTHON, cwd=tmp_path)
    assert result.returncode == 1, describe(result)
    assert result.stderr.startswith("[") or result.stderr.startswith("wheelmerge"), result.stderr
    kept = re.search(r"^the build logs are kept in (\S+)$", result.stderr, re.MULTILINE)
    assert kept, result.stderr
    logs = Path(kept.group(1))
    assert logs.parent.parent == tmpdir and sorted(p.name for p in logs.iterdir()) == ["cu12.log", "cu13.log"]
    assert listing(tmpdir) == [str(p.relative_to(tmpdir)) for p in (logs.parent, logs, logs / "cu12.log",
                                                                    logs / "cu13.log")]


# --- (6) help ------------------------------------------------------------------------------------

PARSER_TEXT = re.compile(r"\{false\}|\{true\}|Excludes|Needs:|REQUIRED|\(Env:")


def test_help_shows_no_parser_internals_and_says_what_each_flag_does(wheelmerge_bin, tmp_path):
    """Before: `--no-sm-arch{false}`, `-q,--quiet Excludes: --verbose`, and -v "print each variant
    file" in every command, where only merge and variants print more with it."""
    top = wm(wheelmerge_bin, "--help", cwd=tmp_path)
    assert top.returncode == 0, describe(top)
    for section in ("Examples:", "Environment:", "SOURCE_DATE_EPOCH", "NO_COLOR", "GITHUB_ACTIONS",
                    "WHEELMERGE_CUDA_N", "Exit status:", "https://github.com/wheelmerge/wheelmerge#readme"):
        assert section in top.stdout, f"{section!r} missing from --help:\n{top.stdout}"
    assert top.stdout.rstrip().endswith("https://github.com/wheelmerge/wheelmerge#readme"), top.stdout
    assert not PARSER_TEXT.search(top.stdout), top.stdout
    for command in COMMANDS:
        text = wm(wheelmerge_bin, *command.split(), "--help", cwd=tmp_path).stdout
        assert not PARSER_TEXT.search(text), f"{command} --help:\n{text}"
        assert "Examples:\n  wheelmerge " in text, f"{command} --help has no examples:\n{text}"
        has_verbose = "--verbose" in text
        assert has_verbose == (command in ("merge", "variants")), f"{command} --help:\n{text}"
    assert "--no-sm-arch" in wm(wheelmerge_bin, "variants", "--help", cwd=tmp_path).stdout


# --- (8) GitHub Actions ---------------------------------------------------------------------------

GITHUB = {"GITHUB_ACTIONS": "true"}


def test_github_annotations_name_the_file_and_survive_hostile_names(wheelmerge_bin, tmp_path):
    hostile = "a%0A,b:c\n::error::x.whl"
    result = wm(wheelmerge_bin, "merge", hostile, "other.whl=cu13", cwd=tmp_path, env=GITHUB)
    assert result.returncode == 2, describe(result)
    commands = workflow_commands(result.stderr)
    assert [(c[0], c[1]) for c in commands] == [("error", {"file": hostile, "title": "wheelmerge"}),
                                                 ("error", {"file": "other.whl", "title": "wheelmerge"})], commands
    assert commands[1][2] == "other.whl: cannot read the input: No such file or directory", commands
    # Without GITHUB_ACTIONS, no workflow commands at all.
    assert workflow_commands(wm(wheelmerge_bin, "merge", hostile, cwd=tmp_path).stderr) == []


def test_github_member_names_cannot_inject_commands_or_end_a_group(wheelmerge_bin, tmp_path):
    inputs = two_builds(tmp_path / "in")
    bad = tmp_path / "in" / "bad"
    bad.mkdir()
    member = "pkg/\n::endgroup::\n::error::x%0A.py"
    wheel = build_wheel(bad / f"pkg-1.0-{TAGS}.whl", {"pkg/__init__.py": b"", member: b"1\n"}, tags=TAGS)
    result = wm(wheelmerge_bin, "merge", inputs[0], f"{wheel}=cu13", cwd=tmp_path, env=GITHUB)
    assert result.returncode != 0, describe(result)
    commands = workflow_commands(result.stderr)
    names = [c[0] for c in commands]
    assert names[:2] == ["group", "endgroup"] and set(names[2:]) == {"error"}, commands
    assert all(c[1].get("title") == "wheelmerge" for c in commands[2:]), commands
    assert not any(c[2] == "x" or c[2].startswith("x%") for c in commands), commands


def test_github_groups_and_warnings(wheelmerge_bin, tmp_path):
    inputs = two_builds(tmp_path / "in")
    result = wm(wheelmerge_bin, "merge", *inputs, cwd=tmp_path, env={**GITHUB, "SOURCE_DATE_EPOCH": "soon"})
    assert result.returncode == 0, describe(result)
    commands = workflow_commands(result.stderr)
    assert commands == [("warning", {"title": "wheelmerge"},
                         "SOURCE_DATE_EPOCH=soon is not a number of seconds; using 1980-01-01"),
                        ("group", {}, "merge"), ("endgroup", {}, "")], commands
    assert "wheelmerge: warning: SOURCE_DATE_EPOCH=soon" in result.stderr
    assert result.stdout == ""  # stdout is --json's


def test_github_groups_each_variant_build_and_the_merge(wheelmerge_bin, tmp_path):
    project = copy_project("envprobe", tmp_path)
    tk = toolkits_in(tmp_path)
    result = wm(wheelmerge_bin, "build", project, *tk.args(), "--no-isolation", "--python", PYTHON, "--json",
                cwd=tmp_path, env=GITHUB)
    assert result.returncode == 0, describe(result)
    commands = workflow_commands(result.stderr)
    assert [(c[0], c[2]) for c in commands] == [("group", "build cu12"), ("endgroup", ""), ("group", "build cu13"),
                                                ("endgroup", ""), ("group", "merge"), ("endgroup", "")], commands
    json.loads(result.stdout)  # the summary alone on stdout


def test_cuda_path_beside_a_chosen_major_is_built_too(wheelmerge_bin, tmp_path):
    """`--cuda 12=PATH --cuda 13` (the demo's form): both majors are built."""
    project = copy_project("envprobe", tmp_path)
    tk = toolkits_in(tmp_path)
    result = wm(wheelmerge_bin, "build", project, "--cuda", f"12={tk.cu12}", "--cuda", "13", "--cuda", f"13={tk.cu13}",
                "--no-isolation", "--python", PYTHON, "-o", tmp_path / "out", "--json", cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    assert [v["label"] for v in json.loads(result.stdout)["variants"]] == ["cu12", "cu13"], result.stdout
    assert "wheelmerge: warning:" not in result.stderr, result.stderr


def test_cuda_path_of_a_major_no_build_uses_is_a_warning(wheelmerge_bin, tmp_path):
    project = copy_project("envprobe", tmp_path)
    tk = toolkits_in(tmp_path)
    result = wm(wheelmerge_bin, "build", project, "--variant", "cu13", "--cuda", f"13={tk.cu13}", "--cuda",
                f"12={tk.cu12}", "--no-isolation", "--python", PYTHON, "-o", tmp_path / "out", cwd=tmp_path)
    assert result.returncode == 0, describe(result)
    assert (f"wheelmerge: warning: --cuda 12={tk.cu12} names the toolkit of CUDA 12, which none of the builds (cu13) "
            "uses; --cuda 12 chooses it as a build") in result.stderr, result.stderr


def test_github_build_log_lines_shown_in_an_error_issue_no_commands(wheelmerge_bin, tmp_path):
    """A failed build's error shows the end of its log, indented; the runner trims lines, so a
    log line `::error::...` would be a command: in GitHub mode it is printed with a backslash."""
    project = copy_project("failing", tmp_path)
    setup = project / "setup.py"
    setup.write_text(setup.read_text().replace('print("failpkg: about to fail for CUDA 12", flush=True)',
                                               'print("::endgroup::\\n  ::error::injected", flush=True)'))
    tk = toolkits_in(tmp_path)
    result = wm(wheelmerge_bin, "build", project, *tk.args(), "--no-isolation", "--python", PYTHON, cwd=tmp_path,
                env=GITHUB)
    assert result.returncode == 1, describe(result)
    assert "\\::error::injected" in result.stderr, result.stderr
    commands = workflow_commands(result.stderr)
    assert [(c[0], c[2]) for c in commands[:4]] == [("group", "build cu12"), ("endgroup", ""), ("group", "build cu13"),
                                                    ("endgroup", "")], commands
    assert [(c[0], c[1]) for c in commands[4:]] == [("error", {"title": "wheelmerge"})], commands
    assert "::error::injected" in commands[4][2]  # inside the annotation's message, escaped as data
