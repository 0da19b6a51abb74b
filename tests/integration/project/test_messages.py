"""Every error and warning wheelmerge prints reads as English: `FILE: MEMBER: WHAT: expected X,
found Y` with X and Y noun phrases ("a RECORD row", "no such member", "\"1.0\""), or, where nothing
is expected, `WHAT: REASON` (docs/interfaces.md).

Two passes over the message templates:

* the sources (message_sites.py): each wm::Problem construction and each helper call that makes
  one, with the literals of its what, expected and found, the reasons functions hand back for a
  found, and the warnings, checked against the rules below;
* the messages themselves: a broad corpus of refused runs (the hostile and bad-input corpora of
  test_bad_inputs.py, test_hostile.py and test_hostile_variants.py, usage errors, configuration,
  toolkit and `ci init` errors, tampered merged wheels) run through the binary, every line of
  stderr checked, and the share of the source's templates the corpus printed measured.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import message_sites
import pytest
import test_bad_inputs as bad_inputs
import test_hostile as hostile
import test_linkage as linkage
import wheelgen as wg
from conftest import clean_env, loader_manifest
from loader_fixtures import render_loader
from test_hostile_variants import CASES as VARIANT_CASES
from test_hostile_variants import GOOD_TEXT as VARIANT_GOOD_TEXT
from test_hostile_variants import KERNELS, SM_ARCH_CLAIMS, variant_wheel
from test_hostile_variants import feature as variant_feature

# Words that make a phrase a sentence (a verb with the phrase's subject left out, or a pronoun
# standing for one): "found looked at", "found it ends early", "found also x".
VERB_FIRST = {"looked", "got", "has", "have", "had", "is", "are", "was", "were", "contains", "holds", "ends",
              "starts", "it", "names", "gives", "also", "lacks", "does", "did"}
# A finite verb before any relative clause or aside: the phrase says something rather than names
# something ("the manifest block has no end", but "a name that does not end in .whl").
SENTENCE = re.compile(r"^(?:(?!\b(?:which|that|where|whose|when|who|than|as)\b)[^,(:;])*?"
                      r"\b(?:is|are|was|were|has|have|holds|does|do|did|starts|ends|contains|goes|lacks)\b")
SUBJECTLESS_COUNT = re.compile(r"^(?:\{\}|\d+) [\w-]*separated parts?\b")
DOUBLED = re.compile(r"\b([A-Za-z]+) \1\b")  # case counts: "--name NAME" is no doubled word
# What no printed line may hold: controls, C1 and bidirectional controls (printed escaped), a
# phrase run into the template's own words.
UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
RUN_TOGETHER = re.compile(r"\bfound (?:found|looked|got|it|also|has|is|are)\b|\bexpected expected\b"
                          r"|\b(?:found|expected) 1 (?:[\w-]+ )?[\w-]+(?<!s)s\b(?! \()")
LINE = re.compile(r"^wheelmerge: (?:error|warning): \S")

# The share of the source's templates the corpus must print; the report says what it is and
# which are left, and why none of those can be reached from here.
MIN_COVERAGE = 0.76  # 184 of 240 (77%) when this was written


def phrase_problems(text: str, field_name: str) -> list[str]:
    """Why `text`, a template or a printed value of `field_name`, does not read as a noun phrase."""
    out = []
    unquoted = re.sub(r'"[^"]*"|\'[^\']*\'', '""', text)
    first = unquoted.split(" ", 1)[0].lower()
    if first in VERB_FIRST and field_name in ("expected", "found"):
        out.append(f"starts with {first!r}")
    if SUBJECTLESS_COUNT.match(unquoted):
        out.append("a count of parts with no subject")
    if text.lower().startswith(f"{field_name} "):
        out.append(f"repeats {field_name!r}")
    if DOUBLED.search(unquoted.replace("{}", "")):
        out.append(f"doubled word {DOUBLED.search(unquoted).group(0)!r}")
    if field_name == "found" and SENTENCE.match(unquoted):
        out.append("a sentence, not a noun phrase")
    return out


# --------------------------------------------------------------------------------------------
# The sources


SITES = message_sites.sites()


def test_the_sources_hold_the_message_templates() -> None:
    """The extraction finds the templates (a broken pattern would make every check below pass)."""
    whats = {t for s in SITES for t in s.templates("what")}
    for known in ("hash does not match RECORD", "no CUDA {} toolkit found", "not a wheel file name",
                  "unsafe member name", "invalid --name", "variant labels of different selectors"):
        assert known in whats, f"{known!r} not among the extracted templates"
    assert len([s for s in SITES if s.templates("what")]) > 200, len(SITES)


def test_each_template_reads_as_english() -> None:
    bad = []
    for s in SITES:
        reason = s.fields.get("expected") == [""]  # a found with nothing expected: said as it is
        for name in ("expected", "found", "why", "what", "warning"):
            for t in s.templates(name):
                checked = "reason" if name == "why" or (name == "found" and reason) else name
                for why in phrase_problems(t, checked) if t else []:
                    bad.append(f"{s.where}: {name} {t!r}: {why}")
    assert not bad, "\n".join(bad)


def test_the_rules_catch_what_they_are_for() -> None:
    """Each rule refuses the shapes it was written against."""
    assert phrase_problems("looked at: {}; WHEELMERGE_CUDA_{} unset", "found")
    assert phrase_problems("{} dash-separated parts where the pattern has 5 to 7", "found")
    assert phrase_problems("it ends early", "found")
    assert phrase_problems("also {}", "found")
    assert phrase_problems("the manifest block has no end", "found")
    assert phrase_problems("found {}", "found")
    assert phrase_problems("a a name", "expected")
    assert not phrase_problems("a name that does not end in .whl", "found")
    assert not phrase_problems("the version \"one\", which is not a PEP 440 version", "found")
    assert not phrase_problems("no such member", "found")
    assert not phrase_problems("the manifest block has no end", "reason")
    assert RUN_TOGETHER.search("expected 5, found 1 dash-separated parts")
    assert not RUN_TOGETHER.search("found 1 byte")


# --------------------------------------------------------------------------------------------
# The corpus


@dataclass
class Corpus:
    runs: list[tuple[str, list[str], str]] = field(default_factory=list)  # (case, args, stderr)
    json_problems: list[dict] = field(default_factory=list)

    def lines(self) -> list[tuple[str, str]]:
        return [(case, line) for case, _, stderr in self.runs for line in stderr.splitlines()]


def _run(binary: Path, args: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    """`wheelmerge ARGS`; quiet where the command prints progress (its errors and warnings stay)."""
    quiet = ["-q"] if args and str(args[0]) in ("merge", "verify", "variants", "ci") else []
    return subprocess.run([str(binary), *map(str, args), *quiet], cwd=cwd, check=False, capture_output=True,
                          text=True, errors="surrogateescape", env=clean_env(env), timeout=120)


def _merged_wheel(binary: Path, tmp: Path) -> Path:
    """A merged wheel of two valid builds (a variant extension module: a loader)."""
    inputs = []
    for label in hostile.LABELS:
        p = tmp / wg.wheel_filename("pkg", "1.0", hostile.TAGS, label=label)
        p.write_bytes(hostile.GOOD(label))
        inputs.append(p)
    out = tmp / "merged"
    r = _run(binary, ["merge", *inputs, "-o", out], tmp)
    assert r.returncode == 0, r.stderr
    return next(out.glob("*.whl"))


def _rebuilt(merged: Path, path: Path, edit) -> Path:
    """`merged`'s payload, edited by `edit(files)`, as a valid wheel (fresh RECORD) at `path`."""
    with zipfile.ZipFile(merged) as z:
        files = {n: z.read(n) for n in z.namelist() if ".dist-info/" not in n}
    edit(files)
    return wg.build_wheel(path, files, tags=hostile.TAGS)


def _tampered_merged_wheels(binary: Path, tmp: Path) -> list[tuple[str, Path]]:
    merged = _merged_wheel(binary, tmp)
    loader, rules, init = "pkg/_wheelmerge.py", "pkg/_wheelmerge_rules.py", "pkg/__init__.py"
    with zipfile.ZipFile(merged) as z:
        names = z.namelist()
    variant = next(n for n in names if n.endswith(".so") and ".cu12." in n)
    assert {loader, rules, init} <= set(names), names

    def sub(name, old, new):
        def edit(files):
            files[name] = files[name].replace(old, new, 1)
        return edit

    def drop(name):
        return lambda files: files.pop(name)

    def add(name, data):
        return lambda files: files.__setitem__(name, data)

    def claim_gpu_code(files):  # the loader wheelmerge writes for a manifest that claims code
        manifest = loader_manifest(files[loader].decode())
        manifest["gpu_code"]["cu12"] = {variant.removeprefix("pkg/"): ["sm_80"]}
        (tmp / "claimed").mkdir(exist_ok=True)
        files[loader] = render_loader(manifest, tmp / "claimed").read_bytes()

    edits = {
        "loader_code_changed": sub(loader, b"import ", b"import  "),
        "loader_manifest_broken": sub(loader, b"# end of the wheelmerge manifest", b"# the end"),
        "loader_crlf": sub(loader, b"\n", b"\r\n"),
        "init_without_import": lambda files: files.__setitem__(
            init, b"\n".join(line for line in files[init].split(b"\n") if b"_wheelmerge" not in line)),
        "rules_missing": drop(rules),
        "rules_changed": sub(rules, b"def ", b"def  "),
        "variant_missing": drop(variant),
        "variant_unlisted": add("pkg/extra.cu12.bin", b"x"),
        "loader_shadowed": add("pkg/_wheelmerge.abi3.so", b"x"),
        "loader_gpu_code_claimed": claim_gpu_code,
    }
    out = []
    for case, edit in edits.items():
        d = tmp / "tampered" / case
        d.mkdir(parents=True)
        out.append((case, _rebuilt(merged, d / merged.name, edit)))
    return out


def _projects(tmp: Path) -> list[tuple[str, Path]]:
    """Projects whose configuration `wheelmerge config` refuses."""
    project = '[project]\nname = "pkg"\nversion = "1.0"\n'
    tables = {
        "toml_invalid": "[tool.wheelmerge\n",
        "unknown_key": "[tool.wheelmerge]\ncolour = 1\n",
        "cuda_and_variants": "[tool.wheelmerge]\ncuda = [12, 13]\nvariants = [\"cu12\", \"cu13\"]\n",
        "cuda_twice": "[tool.wheelmerge]\ncuda = [12, 12]\n",
        "cuda_not_int": "[tool.wheelmerge]\ncuda = [\"12\"]\n",
        "variants_bad_label": "[tool.wheelmerge]\nvariants = [\"gpu12\", \"cu13\"]\n",
        "variants_twice": "[tool.wheelmerge]\nvariants = [\"cu12\", \"cu12\"]\n",
        "variants_mixed": "[tool.wheelmerge]\nvariants = [\"cu12\", \"x86_64_v3\"]\n",
        "env_name": "[tool.wheelmerge.env]\n\"A=B\" = \"x\"\n",
        "env_nul": "[tool.wheelmerge.env]\nA = \"x\\u0000y\"\n",
        "env_not_table": "[tool.wheelmerge]\nenv = 1\n",
        "fallback_not_bool": "[tool.wheelmerge]\ndriver-fallback = \"yes\"\n",
        "runtime_not_bool": "[tool.wheelmerge]\nruntime-requirements = 1\n",
        "backend_not_string": "[tool.wheelmerge]\nbackend = 1\n",
        "variant_files_not_array": "[tool.wheelmerge]\nvariant-files = \"pkg/*.py\"\n",
        "label_table_not_table": "[tool.wheelmerge]\ncu12 = 1\n",
        "label_table_unknown_key": "[tool.wheelmerge.cu12]\ncolour = 1\n",
        "build_requires_invalid": "[tool.wheelmerge.cu12]\nbuild-requires = [\"torch==\"]\n",
        "not_a_table": "[tool]\nwheelmerge = 1\n",
    }
    yamls = {
        "yaml_twice": "variant-files: [pkg/a.py]\nvariant-files: [pkg/b.py]\n",
        "yaml_invalid": "variant-files: [pkg/a.py\n",
        "yaml_key_not_string": "? [a, b]\n: 1\n",
        "yaml_and_toml": "cuda: [12, 13]\n",
        "yaml_not_a_sequence": "variant-files: 1\n",
        "yaml_too_large": "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{k}: &{k} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
            for p, k in zip("abcdef", "bcdefg")) + "variant-files: *g\n",
    }
    out = []
    for case, text in tables.items():
        d = tmp / "projects" / case
        d.mkdir(parents=True)
        (d / "pyproject.toml").write_text(project + text)
        out.append((case, d))
    for case, text in yamls.items():
        d = tmp / "projects" / case
        d.mkdir(parents=True)
        (d / "pyproject.toml").write_text(project + ("[tool.wheelmerge]\ncuda = [12, 13]\n"
                                                     if case == "yaml_and_toml" else ""))
        (d / "wheelmerge.yaml").write_text(text)
        out.append((case, d))
    empty = tmp / "projects" / "no_pyproject"
    empty.mkdir(parents=True)
    out.append(("no_pyproject", empty))
    return out


def _merges(tmp: Path) -> dict[str, tuple[list, Path]]:
    """Merges of two builds each refused for what the two differ in or hold."""
    W, Per, core = hostile.W, hostile.Per, hostile.core
    win = "cp311-cp311-win_amd64"

    def meta(requires: dict) -> dict:
        return {"metadata": Per(**{label: {"Requires-Dist": r} for label, r in requires.items()})}

    torch = {"torch_url": (meta({"cu12": ["torch @ https://example.com/torch.whl"],
                                 "cu13": ["torch @ https://example.com/torch.whl"]}),
                           ("torch29_cu12", "torch210_cu12")),
             "torch_excluded": (meta({"cu12": ["torch==2.8.*"], "cu13": ["torch==2.10.*"]}),
                                ("torch29_cu12", "torch210_cu12")),
             "torch_unevaluable": (meta({"cu12": ["torch===2.9"], "cu13": ["torch==2.10.*"]}),
                                   ("torch29_cu12", "torch210_cu12")),
             "torch_more_than_versions": (meta({"cu12": ["torch==2.9.*"], "cu13": ["torch[x]==2.10.*"]}),
                                          ("torch29_cu12", "torch210_cu12")),
             "torch_two_majors": (meta({"cu12": ["torch==2.9.*"], "cu13": ["torch==3.0.*"]}),
                                  ("torch29_cu12", "torch30_cu12"))}
    cases: dict[str, tuple] = {
        "extra_compared_otherwise": (W(**meta({"cu12": ['a; extra != "x"'], "cu13": ['b; extra != "x"']})), None),
        "extra_with_and_without": (W(**meta({"cu12": ['a; extra == "x" or python_version > "3"'],
                                             "cu13": ['b; extra == "x" or python_version > "3"']})), None),
        "extra_invalid_name": (W(**meta({"cu12": ['a; extra == "x y"'], "cu13": ['b; extra == "x y"']})), None),
        "extra_name_taken": (W(metadata=Per(cu12={"Requires-Dist": ['a; extra == "x"'],
                                                  "Provides-Extra": ["x", "x-cu12", "x-cu13"]},
                                            cu13={"Requires-Dist": ['b; extra == "x"'],
                                                  "Provides-Extra": ["x", "x-cu12", "x-cu13"]})), None),
        "description_differs": (W(metadata=Per(cu12={"Description": "one"}, cu13={"Description": "two"})), None),
        "body_differs": (W(metadata=Per(**{label: b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n\n" + label.encode()
                                           for label in hostile.LABELS})), None),
        "data_file_under_a_file": (W(add={f"{hostile.DATA}/purelib/pkg/util.py/x.py": b"x = 1\n"}), None),
        "dist_info_file_differs": (W(dist_info_files={"notes.txt": Per(cu12=b"one", cu13=b"two")}), None),
        "library_without_package": (W(files=lambda label: {"_top.so": core(label)}), None),
        "shared_file_named_like_a_variant": (W(add={"pkg/notes.cu12.txt": b"x"}), None),
        "elf_past_the_limits": (W(add={"pkg/_many.so": Per(
            cu12=wg.elf_shared_object("libmany.so", [f"lib{i}.so" for i in range(5000)]),
            cu13=wg.elf_shared_object("libmany.so", [f"lib{i}.so" for i in range(5001)]))}), None),
        **{case: (W(**kw), labels) for case, (kw, labels) in torch.items()},
    }
    out = {}
    for case, (make, labels) in cases.items():
        d = tmp / "merges" / case
        d.mkdir(parents=True)
        args = ["merge"]
        for label, given in zip(hostile.LABELS, labels or hostile.LABELS):
            p = d / (wg.wheel_filename("pkg", "1.0", hostile.TAGS, label=label) if labels is None
                     else f"{label}/" + wg.wheel_filename("pkg", "1.0", hostile.TAGS))
            p.parent.mkdir(exist_ok=True)
            p.write_bytes(make(label))
            args.append(p if labels is None else f"{p}={given}")
        out[case] = ([*args, "-o", d / "out"], d)
    # Build tags that differ, and per-build DLLs on Windows.
    d = tmp / "merges" / "build_tags"
    d.mkdir(parents=True)
    args = ["merge"]
    for label, build in zip(hostile.LABELS, ("1", "2")):
        p = d / wg.wheel_filename("pkg", "1.0", hostile.TAGS, build=build, label=label)
        p.write_bytes(wg.wheel_bytes(hostile.base_files(label), tags=hostile.TAGS, build=build))
        args.append(p)
    out["build_tags"] = ([*args, "-o", d / "out"], d)
    d = tmp / "merges" / "windows_dll"
    d.mkdir(parents=True)
    args = ["merge"]
    for label in hostile.LABELS:
        p = d / wg.wheel_filename("pkg", "1.0", win, label=label)
        p.write_bytes(W(add={"pkg/helper.dll": Per(cu12=b"MZ12", cu13=b"MZ13"),
                             "pkg/_core.pyd": Per(cu12=b"MZ-a", cu13=b"MZ-b")},
                        drop=(hostile.CORE,), tags=win)(label))
        args.append(p)
    out["windows_dll"] = ([*args, "-o", d / "out"], d)
    # --name over distributions named for their CUDA major (cupy_cuda12x).
    for case, names in {"name_suffix_contradicts_label": ("pkg_cuda13x", "pkg_cuda12x"),
                        "name_differs_without_suffix": ("pkg_cuda12x", "other_cuda13x")}.items():
        d = tmp / "merges" / case
        d.mkdir(parents=True)
        args = ["merge", "--name", "pkg"]
        for label, name in zip(hostile.LABELS, names):
            p = d / wg.wheel_filename(name, "1.0", hostile.TAGS)
            p.write_bytes(wg.wheel_bytes(hostile.base_files(label), name=name, tags=hostile.TAGS))
            args.append(f"{p}={label}")
        out[case] = ([*args, "-o", d / "out"], d)
    # A variant wheel as an input.
    d = tmp / "merges" / "variant_wheel_input"
    vw = variant_wheel(d, VARIANT_GOOD_TEXT)
    other = d / wg.wheel_filename("vpkg", "1.0", "py3-none-any", label="cu13")
    other.write_bytes(wg.wheel_bytes({"vpkg/__init__.py": b""}, name="vpkg", tags="py3-none-any", root_is_purelib=True))
    out["variant_wheel_input"] = (["merge", f"{vw}=cu12", other, "-o", d / "out"], d)
    return out


@pytest.fixture(scope="module")
def corpus(wheelmerge_bin: Path, tmp_path_factory) -> Corpus:
    tmp = tmp_path_factory.mktemp("messages")
    c = Corpus()

    def record(case: str, args: list, cwd: Path = tmp, env: dict | None = None, refused: bool = True) -> None:
        r = _run(wheelmerge_bin, args, cwd, env)
        assert not refused or r.returncode != 0, f"{case}: {args} was not refused:\n{r.stderr}"
        c.runs.append((case, [str(a) for a in args], r.stderr))

    # The bad-input corpus: each case merged, and the bad input verified alone.
    for i, case in enumerate(bad_inputs.NEGATIVE):
        d = tmp / "bad" / str(i)
        bad, good = bad_inputs.write_inputs(case, d)
        record(case.id, bad_inputs.command(case, bad, good, d / "out"))
        record(case.id + " (verify)", ["verify", bad], refused=False)  # some are valid alone
    # The hostile corpus: refused and accepted merges (warnings), and verify of each cu12 input.
    for i, case in enumerate(hostile.CASES):
        d = tmp / "hostile" / str(i)
        p12, p13 = hostile.write_inputs(case, d)
        r = _run(wheelmerge_bin, ["merge", p12, p13, "-o", d / "out"], d)
        c.runs.append((case.id, ["merge"], r.stderr))
        if case.verify:
            record(case.id + " (verify)", ["verify", p12], refused=case.exit != 0)
    # Variant wheels and indexes whose variant metadata installers read otherwise.
    for i, (case, (text, _, _)) in enumerate(VARIANT_CASES.items()):
        d = tmp / "variants" / str(i)
        wheel = variant_wheel(d, text)
        record(case, ["verify", wheel])
        record(case + " (index)", ["verify", d / "vpkg-1.0-variants.json"])
    for i, (case, (values, message)) in enumerate(SM_ARCH_CLAIMS.items()):
        if message:
            wheel = variant_wheel(tmp / "sm_arch" / str(i), variant_feature("sm_arch", values), KERNELS)
            record(case, ["verify", wheel])
    # Merged wheels whose loader, package or files were changed after the merge.
    for case, wheel in _tampered_merged_wheels(wheelmerge_bin, tmp):
        record(case, ["verify", wheel])
    # Builds whose files need a newer glibc than their tags say (test_linkage.py's extension).
    threads = tmp / "linkage" / "threads.so"
    threads.parent.mkdir()
    threads.with_suffix(".c").write_text(linkage.THREADS)
    subprocess.run(["gcc", "-shared", "-fPIC", "-pthread", "-o", threads, threads.with_suffix(".c")], check=True)
    for tags in ("cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-musllinux_1_2_x86_64"):
        record(f"glibc_{tags}", ["verify", linkage.wheel(tmp / "linkage" / tags, threads.read_bytes(), tags, "cu12")])
    # The command line.
    good = {label: tmp / wg.wheel_filename("pkg", "1.0", hostile.TAGS, label=label) for label in hostile.LABELS}
    for label, p in good.items():
        p.write_bytes(hostile.GOOD(label))
    plain = tmp / wg.wheel_filename("pkg", "1.0", hostile.TAGS)
    plain.write_bytes(hostile.GOOD("cu12"))
    cpu = tmp / "cpu"
    cpu.mkdir()
    cpu_wheel = cpu / wg.wheel_filename("pkg", "1.0", hostile.TAGS)
    cpu_wheel.write_bytes(hostile.GOOD("cu13"))
    with_variant_json = []
    for label in hostile.LABELS:
        p = tmp / "with_variant_json" / wg.wheel_filename("pkg", "1.0", hostile.TAGS, label=label)
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(hostile.W(dist_info_files={"variant.json": b"{}"})(label))
        with_variant_json.append(p)
    usage = {
        "no_label": ["merge", plain, good["cu13"], "-o", tmp / "o"],
        "invalid_label": ["merge", f"{plain}=gpu12", good["cu13"], "-o", tmp / "o"],
        "same_label": ["merge", f"{plain}=cu13", good["cu13"], "-o", tmp / "o"],
        "labels_disagree": ["merge", f"{good['cu12']}=cu13", good["cu13"], "-o", tmp / "o"],
        "selectors_differ": ["merge", good["cu12"], f"{cpu_wheel}=x86_64_v3", "-o", tmp / "o"],
        "bad_name": ["merge", good["cu12"], good["cu13"], "--name", "not a name!", "-o", tmp / "o"],
        "missing_input": ["verify", tmp / "nowhere-1.0-py3-none-any.whl"],
        "not_a_wheel_name": ["verify", tmp / "cpu"],
        "variants_cpu_label": ["variants", good["cu12"], f"{cpu_wheel}=x86_64_v3", "-o", tmp / "v"],
        # The command line itself.
        "unknown_command": ["mergee", "x"],
        "unknown_option": ["merge", "--frob", good["cu12"]],
        "unknown_top_option": ["--frob"],
        "unexpected_argument": ["inspect", good["cu12"], good["cu13"]],
        "no_command": [],
        "no_wheels": ["merge"],
    }
    (tmp / "not-a-manifest.json").write_text('{"format": 1}')
    usage.update({
        "loader_not_a_manifest": ["loader", tmp / "not-a-manifest.json", "-o", tmp],
        "loader_no_manifest": ["loader", tmp / "no-manifest.json", "-o", tmp],
    })
    for case, args in usage.items():
        record(case, args)
    # Configuration.
    for case, project in _projects(tmp):
        record(case, ["config", project])
    # Toolkits: none of CUDA 11 anywhere, a named root that is none, a named root of another major.
    toolkit_project = tmp / "projects" / "toolkit"
    toolkit_project.mkdir(parents=True)
    (toolkit_project / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
    nowhere = {"PATH": "/usr/bin:/bin", "CUDA_HOME": str(tmp / "no-cuda"), "CUDA_PATH": ""}
    fake = tmp / "cuda-fake"
    (fake / "include").mkdir(parents=True)
    (fake / "include" / "cuda.h").write_text("#define CUDA_VERSION 13000\n")
    record("toolkit_none", ["toolkit", toolkit_project, "--cuda", "11"], env=nowhere)
    record("build_variants_torch", ["build", toolkit_project, "--variants", "--variant", "torch210_cu12",
                                    "--variant", "torch211_cu13"], env=nowhere)
    record("toolkit_not_a_root", ["toolkit", toolkit_project, "--cuda", "12", "--cuda", f"12={tmp / 'no-cuda'}"], env=nowhere)
    record("toolkit_other_major", ["toolkit", toolkit_project, "--cuda", "12", "--cuda", f"12={fake}"], env=nowhere)
    record("toolkit_env", ["toolkit", toolkit_project, "--cuda", "12"],
           env={**nowhere, "WHEELMERGE_CUDA_12": str(fake)})
    lonely = tmp / "lonely-python" / "python3"  # a Python with no uv beside it, and none on PATH
    lonely.parent.mkdir()
    lonely.symlink_to(sys.executable)
    record("build_installer_uv_missing", ["build", toolkit_project, "--cuda", "13", "--cuda", f"13={fake}",
                                          "--installer", "uv", "--python", lonely, "-o", tmp / "o"], env=nowhere)
    (tmp / "a-file").write_text("")
    record("build_tmpdir_a_file", ["build", toolkit_project, "--cuda", "13", "--cuda", f"13={fake}",
                                   "-o", tmp / "o"], env={**nowhere, "TMPDIR": str(tmp / "a-file")})
    record("build_no_merge_variants", ["build", toolkit_project, "--cuda", "13", "--cuda", f"13={fake}",
                                       "--no-merge", "--variants", "-o", tmp / "o"], env=nowhere)
    # ci plan: the reusable workflow's inputs.
    plan_args = {
        "ci_plan_python": ["--python-versions", "[3.10]"],
        "ci_plan_json": ["--cuda-versions", "{12: 1}"],
        "ci_plan_list": ["--python-versions", "3.12"],
        "ci_plan_major": ["--cuda-majors", "[true]"],
        "ci_plan_label": ["--labels", '["torch2_cu12"]'],
        "ci_plan_label_major": ["--labels", '["cu100"]'],
        "ci_plan_version": ["--cuda-majors", "[11]"],
        "ci_plan_index": ["--labels", '["torch210_cu12"]', "--torch-index-urls", '{"12": "http://x"}'],
        "ci_plan_image": ["--container", "true", "--container-image", "nvidia/cuda:latest"],
        "ci_plan_builder": ["--builder", "maturin"],
        "ci_plan_container": ["--container", "yes"],
        "ci_plan_cibuildwheel": ["--labels", '["x86_64_v3"]', "--builder", "cibuildwheel"],
        "ci_plan_floor_and_exact": ["--labels", '["torch210_cu12", "torch211plus_cu13"]',
                                    "--torch-index-urls", '{"12": "https://x.org/a", "13": "https://x.org/b"}'],
        "ci_plan_many": ["--python-versions", json.dumps(["3.12"] * 65)],
    }
    for case, args in plan_args.items():
        record(case, ["ci", "plan", *args])
    # ci init.
    ci_args = {
        "ci_python": ["--python", "2.7"],
        "ci_python_twice": ["--python", "3.12,3.12"],
        "ci_python_none": ["--python", ""],
        "ci_cuda": ["--cuda", "0"],
        "ci_cuda_twice": ["--cuda", "12,12"],
        "ci_ref": ["--ref", "a b"],
        "ci_import": ["--import-name", "1a"],
        "ci_label_kinds": ["--variant", "torch210_cu12,x86_64_v3"],
        "ci_label_twice": ["--variant", "torch210_cu12,torch210_cu12"],
        "ci_label_invalid": ["--variant", "torch2_cu12"],
        "ci_cuda_and_label": ["--variant", "torch210_cu12", "--cuda", "12"],
        "ci_label_cibuildwheel": ["--variant", "x86_64_v3", "--cibuildwheel"],
        "ci_label_variants": ["--variant", "torch211plus_cu13", "--variants"],
        "ci_label_floor_and_exact": ["--variant", "torch210_cu12,torch211plus_cu13"],
        "ci_label_floor_majors": ["--variant", "torch210plus_cu12,torch310plus_cu13"],
    }
    for case, args in ci_args.items():
        d = tmp / "ci" / case
        d.mkdir(parents=True)
        (d / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
        record(case, ["ci", "init", d, *args])
    d = tmp / "ci" / "glob"
    d.mkdir(parents=True)
    (d / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n\n[tool.wheelmerge]\n'
                                      'variant-files = ["pkg/a b.py"]\n')
    record("ci_glob", ["ci", "init", d])
    d = tmp / "ci" / "name"
    d.mkdir(parents=True)
    (d / "pyproject.toml").write_text('[project]\nname = "pkg name"\nversion = "1.0"\n')
    record("ci_name", ["ci", "init", d])
    # Merges the corpora above leave out: builds of another build tag, torch requirements,
    # extras, dist-info files, libraries no package loads, Windows DLLs, ELF files past the limits.
    for case, (args, cwd) in _merges(tmp).items():
        record(case, args, cwd)
    # RECORD and WHEEL texts no reader takes.
    for case, kw in {
        "record_more_rows": {"record": b"".join(b"pkg/%d.py,,\n" % i for i in range(50))},
        "record_empty_row": {"record": b"pkg/__init__.py,,\n\npkg/x,,\n"},
        "record_unterminated_quote": {"record": b'"pkg/__init__.py,,\n'},
        "record_stray_quote": {"record": b'pkg/__in"it__.py,,\n'},
        "wheel_continuation_first": {"wheel": b" x\nWheel-Version: 1.0\n"},
    }.items():
        p = tmp / "single" / case / wg.wheel_filename("pkg", "1.0", hostile.TAGS, label="cu12")
        p.parent.mkdir(parents=True)
        p.write_bytes(wg.wheel_bytes(hostile.base_files("cu12"), tags=hostile.TAGS, **kw))
        record(case, ["verify", p])
    # Variants indexes: none there, one past the size wheelmerge reads.
    record("index_missing", ["verify", tmp / "none-1.0-variants.json"])
    big = tmp / "big" / "pkg-1.0-variants.json"
    big.parent.mkdir()
    big.write_text("{" + " " * (2 << 20) + "}")
    record("index_too_large", ["verify", big])
    # Options of the commands (cli/main.cpp).
    project = tmp / "projects" / "toolkit"
    for case, args in {
        "build_info_shape": ["merge", good["cu12"], good["cu13"], "-o", tmp / "o", "--build-info", "x"],
        "build_info_label": ["merge", good["cu12"], good["cu13"], "-o", tmp / "o", "--build-info", "gpu1:a=b"],
        "build_info_no_input": ["merge", good["cu12"], good["cu13"], "-o", tmp / "o", "--build-info", "cu11:a=b"],
        "build_info_key": ["merge", good["cu12"], good["cu13"], "-o", tmp / "o", "--build-info", "cu12:1a=b"],
        "build_variant": ["build", project, "--variant", "gpu1", "-o", tmp / "o"],
        "build_cuda": ["build", project, "--cuda", "x", "-o", tmp / "o"],
        "build_config_setting": ["build", project, "-C", "novalue", "--cuda", "12", "--cuda", "13", "-o", tmp / "o"],
        "build_one_major": ["build", project, "--cuda", "12", "-o", tmp / "o"],
        "toolkit_cuda": ["toolkit", project, "--cuda", "x"],
        "utf8_argument": ["merge", good["cu12"], good["cu13"], "-o", "\udcff"],
        "output_is_a_file": ["merge", good["cu12"], good["cu13"], "-o", good["cu12"]],
        "output_replaces_input": ["merge", f"{plain}=cu12", good["cu13"], "-o", plain.parent],
        "variants_input_with_variant_json": ["variants", *with_variant_json, "-o", tmp / "v"],
        "variants_torch": ["variants", f"{plain}=torch210_cu12", f"{cpu_wheel}=torch211_cu13", "-o", tmp / "v"],
        "torch_floor_and_exact": ["merge", f"{plain}=torch210_cu12", f"{cpu_wheel}=torch211plus_cu13", "-o", tmp / "m"],
    }.items():
        record(case, args)
    # Projects `build` refuses before building anything.
    for case, (text, extra) in {
        "backend_without_inner": (('[build-system]\nrequires = ["wheelmerge"]\n'
                                   'build-backend = "wheelmerge.backend"\n'), []),
        "build_requires_without_isolation": ('[tool.wheelmerge.cu12]\nbuild-requires = ["numpy"]\n',
                                             ["--no-isolation"]),
    }.items():
        d = tmp / "projects" / case
        d.mkdir(parents=True)
        (d / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n' + text)
        record(case, ["build", d, "--cuda", f"12={fake}", "--cuda", f"13={fake}", *extra, "-o", tmp / "o"],
               env=nowhere)
    d = tmp / "ci" / "twice"
    d.mkdir(parents=True)
    (d / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
    _run(wheelmerge_bin, ["ci", "init", d], tmp)
    record("ci_exists", ["ci", "init", d])
    d = tmp / "ci" / "github_is_a_file"
    d.mkdir(parents=True)
    (d / "pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "1.0"\n')
    (d / ".github").write_text("")
    record("ci_directory", ["ci", "init", d])
    d = tmp / "ci" / "no_name"
    d.mkdir(parents=True)
    (d / "pyproject.toml").write_text('[project]\nversion = "1.0"\ndynamic = ["name"]\n')
    record("ci_no_import_name", ["ci", "init", d])
    # The same refusals as JSON: the fields, under their keys.
    for args in (usage["invalid_label"], ["config", tmp / "projects" / "unknown_key"], usage["missing_input"]):
        r = _run(wheelmerge_bin, [*args, "--json"], tmp)
        assert r.returncode != 0, r.stdout
        data = json.loads(r.stdout)
        for problems in [data["error"]["problems"]] if "error" in data else [w["problems"] for w in data["wheels"]]:
            c.json_problems.extend(problems)
    return c


def test_every_line_is_an_error_or_warning_in_english(corpus: Corpus) -> None:
    bad = []
    for case, line in corpus.lines():
        if line.startswith((" ", "\t")):  # a log's lines, indented under their error
            continue
        if line.startswith("wheelmerge: ") and not line.startswith("wheelmerge: error: ") \
                and not line.startswith("wheelmerge: warning: ") and not LINE.match(line):
            continue  # progress (merging, wrote): not a message of this kind
        why = []
        if not LINE.match(line):
            why.append("not 'wheelmerge: error: ' or 'wheelmerge: warning: '")
        if UNPRINTABLE.search(line):
            why.append("an unprintable character")
        if m := RUN_TOGETHER.search(line):
            why.append(f"{m.group(0)!r}")
        if m := DOUBLED.search(re.sub(r'"[^"]*"', '""', line)):
            why.append(f"doubled word {m.group(0)!r}")
        tail = re.search(r"(?:: |, )expected (.*?), found (.*)$", line)
        if tail:
            for problem in phrase_problems(tail.group(2), "found"):
                why.append(f"found: {problem}")
        if why:
            bad.append(f"{case}: {line[:300]}\n    {'; '.join(why)}")
    assert not bad, f"{len(bad)} lines:\n" + "\n".join(bad[:60])


def test_json_problems_keep_their_keys(corpus: Corpus) -> None:
    assert len(corpus.json_problems) >= 3, corpus.json_problems
    for p in corpus.json_problems:
        assert {"file", "member", "what", "expected", "found"} <= set(p), p


def test_the_corpus_prints_most_templates(corpus: Corpus) -> None:
    """The corpus reaches at least MIN_COVERAGE of the templates (a `what` with a literal);
    $WHEELMERGE_MESSAGE_REPORT names a file that gets the figure and the templates not reached."""
    lines = [re.sub(r"^wheelmerge: (?:error|warning): ", "", line) for _, line in corpus.lines()]
    text = "\n".join(lines)
    templates = {}
    for s in SITES:
        whats = [t for t in s.templates("what") if t.replace("{}", "").strip(": ")]
        if whats:
            templates[s.where] = whats
    reached, missed = [], []
    for where, whats in templates.items():
        if any(message_sites.what_pattern(t).search(line) for t in whats for line in lines if t.split("{}")[0] in line):
            reached.append(where)
        else:
            missed.append(f"{where}: {whats[0]!r}")
    share = len(reached) / len(templates)
    report = (f"{len(reached)} of {len(templates)} templates printed ({share:.0%}); "
              f"{len(corpus.runs)} runs, {len(lines)} lines\nnot reached:\n" + "\n".join(sorted(missed))
              + "\n\nthe messages, by case:\n" + "\n".join(f"{case}: {line}" for case, line in corpus.lines()))
    if os.environ.get("WHEELMERGE_MESSAGE_REPORT"):
        Path(os.environ["WHEELMERGE_MESSAGE_REPORT"]).write_text(report + "\n")
    assert text, "the corpus printed nothing"
    assert share >= MIN_COVERAGE, report
