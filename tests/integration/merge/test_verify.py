"""`wheelmerge verify`: the strict checks on their own, and for merged wheels the loaders
against the files present. Broken merged wheels are made by rewriting a real merged wheel with
a correct RECORD, so only the loader check can catch them."""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path

import pytest

from conftest import run, tool_python
from wheelgen import record_file, record_row


def rewrite(source: Path, target: Path, *, drop: str = "", replace: dict[str, bytes] | None = None,
            add: dict[str, bytes] | None = None) -> Path:
    """A copy of a wheel with members dropped, replaced or added, and a RECORD that matches."""
    replace = replace or {}
    members: dict[str, bytes] = {}
    with zipfile.ZipFile(source) as z:
        record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        for name in z.namelist():
            if name not in (drop, record):
                members[name] = replace.get(name, z.read(name))
    members.update(add or {})
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr(record, record_file((record_row(n, d) for n, d in members.items()), record))
    return target


@pytest.fixture(scope="module")
def merged(wheelmerge_bin, demo_wheels, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("verify")
    run([wheelmerge_bin, "merge", demo_wheels["cu12"], demo_wheels["cu13"], "-o", out])
    return next(out.glob("*.whl"))


def verify(wheelmerge_bin, *wheels: Path):
    return run([wheelmerge_bin, "verify", "--json", *wheels], check=False)


def test_valid_wheels_pass(wheelmerge_bin, demo_wheels, merged):
    result = verify(wheelmerge_bin, merged, demo_wheels["cu12"])
    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)["wheels"]
    assert [r["merged"] for r in reports] == [True, False]
    assert reports[0]["loaders"] == ["wmdemo/_wheelmerge.py"]


def test_missing_variant_file(wheelmerge_bin, merged, tmp_path):
    broken = rewrite(merged, tmp_path / merged.name, drop="wmdemo/kernels/scale.cu12.cubin")
    result = verify(wheelmerge_bin, broken)
    assert result.returncode == 3
    assert "wmdemo/_wheelmerge.py: manifest files of cu12 names a file the wheel lacks" in result.stderr
    assert "wmdemo/kernels/scale.cu12.cubin" in result.stderr


def test_init_without_loader_import(wheelmerge_bin, merged, tmp_path):
    with zipfile.ZipFile(merged) as z:
        init = z.read("wmdemo/__init__.py").replace(b"from . import _wheelmerge as _wheelmerge", b"pass  #")
    broken = rewrite(merged, tmp_path / merged.name, replace={"wmdemo/__init__.py": init})
    result = verify(wheelmerge_bin, broken)
    assert result.returncode == 3
    assert "wmdemo/__init__.py: package does not import its loader" in result.stderr


def test_labelled_file_no_manifest_lists(wheelmerge_bin, merged, tmp_path):
    broken = rewrite(merged, tmp_path / merged.name, add={"wmdemo/extra.cu13.cpython-311-x86_64-linux-gnu.so": b"\x7fELF"})
    result = verify(wheelmerge_bin, broken)
    assert result.returncode == 3
    assert "wmdemo/extra.cu13.cpython-311-x86_64-linux-gnu.so: variant file no loader lists" in result.stderr


def test_a_bad_and_a_good_wheel(wheelmerge_bin, merged, tmp_path):
    broken = rewrite(merged, tmp_path / merged.name, drop="wmdemo/kernels/scale.cu12.cubin")
    result = verify(wheelmerge_bin, merged, broken)
    assert result.returncode == 3
    reports = json.loads(result.stdout)["wheels"]
    assert reports[0]["valid"] is True
    assert reports[1]["valid"] is False
    assert reports[1]["problems"][0]["member"] == "wmdemo/_wheelmerge.py"


def test_wheel_tags_differing_from_the_file_name_warn(wheelmerge_bin, demo_wheels, tmp_path):
    """Installers go by the file name's tags; CuPy's wheels say linux_x86_64 in WHEEL under a
    manylinux2014 file name. Accepted, with a warning naming both."""
    source = demo_wheels["cu12"]
    with zipfile.ZipFile(source) as z:
        wheel_member = next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
        text = z.read(wheel_member).decode()
    tag_lines = [line for line in text.splitlines() if line.startswith("Tag: ")]
    assert tag_lines, text
    other = "\n".join(line for line in text.splitlines() if line and not line.startswith("Tag: "))
    other += "\nTag: cp311-cp311-linux_aarch64\n"
    target = rewrite(source, tmp_path / source.name, replace={wheel_member: other.encode()})
    result = verify(wheelmerge_bin, target)
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "Tag lines" in line]
    assert warning, result.stderr
    assert "cp311-cp311-linux_aarch64" in warning[0] and tag_lines[0][5:] in warning[0], warning


def _with_manifest(merged: Path, target: Path, change) -> Path:
    """A copy of the merged wheel whose loader's text is `change(text)`."""
    loader = "wmdemo/_wheelmerge.py"
    with zipfile.ZipFile(merged) as z:
        source = z.read(loader).decode()
    text = change(source)
    assert text != source
    return rewrite(merged, target / merged.name, replace={loader: text.encode()})


def _constant(name: str, value: str):
    """A change giving the manifest constant NAME (with its annotation) the Python VALUE."""
    def change(source: str) -> str:
        start = source.index(f"\n{name}") + 1
        end = re.compile(r"^[_#]", re.M).search(source, start + 1).start()
        head = source[start:source.index(" = ", start) + 3]
        return source[:start] + head + value + "\n" + source[end:]
    return change


@pytest.mark.parametrize("change", [
    _constant("_SOURCES", '("yes",)'),
    _constant("_VARIANTS", "(12, 13)"),
    _constant("_FILES", '{"cu12": {"a": 7}, "cu13": {}}'),
    _constant("_PRELOAD", '{"cu99": ("x.so",)}'),
    _constant("_MODULES", "[]"),
    _constant("_FILES", '{"cu12": {"a": "../../../etc/passwd"}, "cu13": {}}'),
    # What Python reads differs from what a reader of the block alone would see.
    lambda source: source.replace("# end of the wheelmerge manifest\n",
                                  "# end of the wheelmerge manifest\n_PRELOAD = {\"cu12\": (\"/tmp/x.so\",)}\n"),
    lambda source: source.replace("\n", "\r\n"),
    lambda source: source.replace("\n", "\r"),
    lambda source: "\ufeff" + source,
    lambda source: source.replace("def _usual(", "def _unused(", 1),
], ids=["sources-unknown", "labels-not-strings", "paths-not-strings", "unknown-build", "modules-not-object",
        "path-outside-the-wheel", "assigned-again-after-the-block", "crlf", "cr", "bom", "code-changed"])
def test_malformed_manifest_is_invalid_input(wheelmerge_bin, merged, tmp_path, change):
    """verify and inspect refuse a malformed manifest as invalid input (exit 3) naming the
    loader, never as an internal error."""
    broken = _with_manifest(merged, tmp_path, change)
    for command in (["verify"], ["inspect"]):
        result = run([wheelmerge_bin, *command, broken], check=False)
        assert result.returncode == 3, (command, result.stderr)
        assert "wmdemo/_wheelmerge.py" in result.stderr, result.stderr
        assert "internal error" not in result.stderr, result.stderr


def test_python_reads_what_verify_refuses(merged):
    """The consumer verify must agree with is the interpreter: in a loader whose manifest
    constant is assigned again after the block, Python binds the second value (a preload from
    /tmp), and it reads CR-only line endings as lines too, so the block's text alone would
    mislead; both are refused above."""
    with zipfile.ZipFile(merged) as z:
        source = z.read("wmdemo/_wheelmerge.py").decode()
    second = source.replace("# end of the wheelmerge manifest\n",
                            "# end of the wheelmerge manifest\n_PRELOAD = {\"cu12\": (\"/tmp/x.so\",)}\n")
    preloads = []
    for node in ast.parse(second).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == "_PRELOAD" for t in targets):
            preloads.append(ast.literal_eval(node.value))
    assert len(preloads) == 2 and preloads[-1] == {"cu12": ("/tmp/x.so",)}, preloads
    cr = ast.parse(source.replace("\n", "\r"))
    assert [n.lineno for n in cr.body] == [n.lineno for n in ast.parse(source).body]


def test_record_signatures_are_accepted_unchecked_and_left_out_of_the_merge(wheelmerge_bin, demo_wheels, tmp_path):
    """RECORD.jws / RECORD.p7s (deprecated, never listed in RECORD): installer and `wheel unpack`
    accept such a wheel, so verify does, with a warning naming each; the merged wheel has a new
    RECORD, so it carries neither, and verifies."""
    signed = tmp_path / demo_wheels.cu12.name
    with zipfile.ZipFile(demo_wheels.cu12) as z, zipfile.ZipFile(signed, "w", zipfile.ZIP_DEFLATED) as out:
        for info in z.infolist():
            out.writestr(info, z.read(info))
        dist_info = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD")).rsplit("/", 1)[0]
        out.writestr(f"{dist_info}/RECORD.jws", b'{"signatures": []}')
        out.writestr(f"{dist_info}/RECORD.p7s", b"PKCS#7 bytes")
    def signatures_in(wheel: Path) -> list[str]:
        with zipfile.ZipFile(wheel) as z:
            return [n for n in z.namelist() if n.endswith((".jws", ".p7s"))]

    python = tool_python()
    run([python, "-m", "wheel", "unpack", "-d", tmp_path / "unpacked", signed])
    run([python, "-m", "installer", "--destdir", tmp_path / "installed", signed])

    result = verify(wheelmerge_bin, signed)
    assert result.returncode == 0, result.stderr
    for name in ("RECORD.jws", "RECORD.p7s"):
        assert f"{dist_info}/{name}: a signature of RECORD, not checked" in result.stderr, result.stderr

    out = tmp_path / "out"
    merged = run([wheelmerge_bin, "merge", signed, demo_wheels.cu13, "-o", out])
    assert "a merged or variant wheel leaves it out" in merged.stderr, merged.stderr
    wheel = next(out.glob("*.whl"))
    assert signatures_in(wheel) == []
    assert verify(wheelmerge_bin, wheel).returncode == 0

    # variants: neither variant wheel carries them either, and each warning is said once, though
    # the cu12 build is read into its variant wheel and into the merged wheel.
    variants_out = tmp_path / "variants"
    written = run([wheelmerge_bin, "variants", signed, demo_wheels.cu13, "--with-merged", "-o", variants_out])
    for name in ("RECORD.jws", "RECORD.p7s"):
        assert written.stderr.count(f"{dist_info}/{name}: a signature of RECORD") == 1, written.stderr
    for wheel in variants_out.glob("*.whl"):
        assert signatures_in(wheel) == [], wheel.name


def _unchecked_pyc(tmp_path: Path, source: str) -> tuple[str, bytes]:
    """Bytecode of SOURCE for the tools' Python, hash-based and unchecked (used whatever the
    .py beside it holds), and its cache tag."""
    src = tmp_path / "shadow_src.py"
    src.write_text(source)
    out = tmp_path / "shadow.pyc"
    tag = run([tool_python(), "-c", "import sys, py_compile; py_compile.compile(sys.argv[1], sys.argv[2], doraise=True,"
               " invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH); print(sys.implementation.cache_tag)",
               src, out]).stdout.strip()
    return tag, out.read_bytes()


@pytest.mark.parametrize("kind", ["package", "extension", "abi3 extension", "cached bytecode", "sourceless bytecode",
                                  "rules package", "rules cached bytecode", "purelib extension"])
def test_what_python_could_import_instead_of_the_loader_is_refused(wheelmerge_bin, merged, tmp_path, kind):
    """Before: a merged wheel that also carried a `_wheelmerge/` package, a `_wheelmerge`
    extension module or cached bytecode of the loader or its rules was "valid merged wheel",
    and Python, installed without compiling (pip --no-compile, uv), ran that instead of the
    checked loader. The interpreter's own path finder, on the unpacked wheel, shows that it
    would; verify refuses each, naming the member."""
    tag, pyc = _unchecked_pyc(tmp_path, "SHADOW = True\n")
    with zipfile.ZipFile(merged) as z:
        version_dir = next(n.split("/", 1)[0] for n in z.namelist() if n.endswith(".dist-info/RECORD"))
    data_dir = version_dir.replace(".dist-info", ".data")
    member, stem = {
        "package": ("wmdemo/_wheelmerge/__init__.py", "_wheelmerge"),
        "extension": ("wmdemo/_wheelmerge.cpython-311-x86_64-linux-gnu.so", "_wheelmerge"),
        "abi3 extension": ("wmdemo/_wheelmerge.abi3.so", "_wheelmerge"),
        "cached bytecode": (f"wmdemo/__pycache__/_wheelmerge.{tag}.pyc", "_wheelmerge"),
        "sourceless bytecode": ("wmdemo/_wheelmerge.pyc", "_wheelmerge"),
        "rules package": ("wmdemo/_wheelmerge_rules/__init__.py", "_wheelmerge_rules"),
        "rules cached bytecode": (f"wmdemo/__pycache__/_wheelmerge_rules.{tag}.pyc", "_wheelmerge_rules"),
        "purelib extension": (f"{data_dir}/purelib/wmdemo/_wheelmerge.so", "_wheelmerge"),
    }[kind]
    content = pyc if member.endswith(".pyc") else b"SHADOW = True\n" if member.endswith(".py") else b"shadow"
    broken = rewrite(merged, tmp_path / merged.name, add={member: content})
    result = verify(wheelmerge_bin, broken)
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"{member}: a file Python could import as {stem}" in result.stderr, result.stderr

    # What the interpreter finds in the unpacked package (as an installer leaves it, nothing
    # compiled): its own path finder, and for bytecode the module it runs.
    site = tmp_path / "site"
    with zipfile.ZipFile(broken) as z:
        z.extractall(site)
    if member.startswith(data_dir):
        (site / "wmdemo" / "_wheelmerge.so").write_bytes(content)
    probe = run([tool_python(), "-c", """
import importlib, importlib.util, sys
sys.path.insert(0, sys.argv[1])
spec = importlib.util.find_spec(sys.argv[2])
shadowed = getattr(importlib.import_module(sys.argv[2]), "SHADOW", False) if sys.argv[3] == "import" else None
print(spec.origin, shadowed)
""", site / "wmdemo", stem, "find" if kind == "sourceless bytecode" or "extension" in kind else "import"]).stdout.split()
    origin, shadowed = probe[0], probe[1]
    if kind == "sourceless bytecode":
        assert origin.endswith(f"/{stem}.py"), probe  # beside its source it is not run: refused all the same
    elif "cached bytecode" in kind:
        assert origin.endswith(f"/{stem}.py") and shadowed == "True", probe  # the source is named, the bytecode runs
    elif "package" in kind:
        assert origin.endswith(f"/{stem}/__init__.py") and shadowed == "True", probe
    else:
        assert origin.endswith(".so"), probe  # an extension is tried before the source


@pytest.mark.parametrize("where", ["docstring", "string", "branch", "after an exit"])
def test_an_import_line_that_never_runs_is_refused(wheelmerge_bin, merged, tmp_path, where):
    """Before: the import line anywhere at the start of a line passed, in the docstring too.
    Python's own parser (ast) shows that in each of these files no top-level statement imports
    the loader; verify refuses each."""
    line = "from . import _wheelmerge as _wheelmerge  # wheelmerge: selects this package's build\n"
    with zipfile.ZipFile(merged) as z:
        init = z.read("wmdemo/__init__.py").decode()
    assert line in init
    rest = init.replace(line, "", 1)
    init = {"docstring": f'"""Doc.\n{line}"""\n{rest}',
            "string": f"'''Doc'''\n_TEXT = '''\n{line}'''\n{rest}",
            "branch": f"import typing\nif typing.TYPE_CHECKING:\n    {line}{rest}",
            "after an exit": f"import sys\nif sys.version_info < (3,):\n    raise ImportError\n{line}{rest}"}[where]
    tree = ast.parse(init)
    top = [n for n in tree.body if isinstance(n, ast.ImportFrom) and any(a.name == "_wheelmerge" for a in n.names)]
    assert (top != []) == (where == "after an exit"), where  # there Python runs it, after a check verify cannot judge
    broken = rewrite(merged, tmp_path / merged.name, replace={"wmdemo/__init__.py": init.encode()})
    result = verify(wheelmerge_bin, broken)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "wmdemo/__init__.py: package does not import its loader" in result.stderr, result.stderr
