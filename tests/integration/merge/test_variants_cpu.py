"""`wheelmerge variants` over x86-64 level builds: one variant wheel per level with the property
`x86_64 :: level :: vN`, the index file, and the merged wheel as the fallback, checked by
independent tools: variantlib parses and validates every variant.json and the index file; uv
(`--preview-features wheel-variants`, whose built-in x86-64 provider reads the interpreter's
/proc/cpuinfo flags) installs the highest build this CPU runs, and a lower one when /proc/cpuinfo
is made to show an older CPU (a bind mount in a private mount namespace); pip installs the merged
wheel, whose loader selects by CPUID. The builds are real extensions, each executing an
instruction of its level when imported (test_loader_selectors.py's), so a wrong choice dies of
SIGILL. docs/variants.md describes the format.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import pytest

from conftest import Venv, clean_env, run, tool_python
from test_loader_selectors import LEVEL_INSTRUCTIONS, MARCH, build_inputs, cpuinfo_level, ld_so_level

LEVELS = {"x86_64_v1": 1, "x86_64_v3": 3, "x86_64_v4": 4}
PACKAGE = "wmlvl"
DIST_INFO = f"{PACKAGE}-1.0.dist-info/"
PROVIDER = {"requires": ["x86-64-variant-provider"]}
# The /proc/cpuinfo flags each level adds (x86-64 psABI; pni is SSE3, abm LZCNT), as
# test_loader_selectors.cpuinfo_level reads them.
LEVEL_FLAGS = {2: "cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3",
               3: "avx avx2 bmi1 bmi2 f16c fma abm movbe xsave",
               4: "avx512f avx512bw avx512cd avx512dq avx512vl"}
# Imports the installed build: its extension executes its level's instruction first.
PROBE = f"""
import importlib.metadata as m, json
import {PACKAGE}._core as core
d = m.distribution("{PACKAGE}")
v = d.read_text("variant.json")
files = {{str(f) for f in d.files}}
print(json.dumps({{"build": core.build(),
                  "variant": next(iter(json.loads(v)["variants"])) if v else None,
                  "merged": "{PACKAGE}/_wheelmerge.py" in files}}))
"""


def expected_build(cpu_level: int) -> str:
    """The highest build at or below a CPU level (every x86-64 CPU runs x86_64_v1)."""
    return max((label for label, level in LEVELS.items() if level <= cpu_level), key=LEVELS.get)


@pytest.fixture(scope="module")
def host_level() -> int:
    """This CPU's level, as glibc's dynamic loader and /proc/cpuinfo's flags both say."""
    by_glibc, by_flags = ld_so_level(), cpuinfo_level()
    assert by_glibc == by_flags, f"ld.so says x86-64-v{by_glibc}, /proc/cpuinfo x86-64-v{by_flags}"
    return by_glibc


@pytest.fixture(scope="module")
def outputs(wheelmerge_bin: Path, tmp_path_factory) -> dict:
    builds = {label: (level, LEVEL_INSTRUCTIONS[level], [f"-march={MARCH[level]}"])
              for label, level in LEVELS.items()}
    inputs = build_inputs(tmp_path_factory.mktemp("cpu-builds"), PACKAGE, builds)
    out = tmp_path_factory.mktemp("cpu-variants")
    result = run([wheelmerge_bin, "variants", *inputs, "--with-merged", "-o", out, "--json"])
    return {"dir": out, "summary": json.loads(result.stdout), "stderr": result.stderr,
            "files": sorted(p.name for p in out.iterdir())}


def variant_wheel(outputs: dict, label: str) -> Path:
    return Path(outputs["summary"]["variant_wheels"][list(LEVELS).index(label)])


def test_one_variant_wheel_per_level_the_index_and_the_merged_wheel(outputs) -> None:
    stem = f"{PACKAGE}-1.0-cp311-cp311-linux_x86_64"
    assert outputs["files"] == sorted([*(f"{stem}-{label}.whl" for label in LEVELS), f"{stem}.whl",
                                       f"{PACKAGE}-1.0-variants.json"])
    assert outputs["summary"]["labels"] == list(LEVELS)
    assert Path(outputs["summary"]["merged"]).name == f"{stem}.whl"
    assert "sm_arch" not in outputs["stderr"], outputs["stderr"]  # nothing about GPUs for a CPU build


def test_each_level_is_its_own_value_under_the_x86_64_provider(outputs) -> None:
    """A build is marked with its own level alone: uv takes a build when the CPU has any of its
    values, so v1 .. v3 on the v3 build would give it to a v2 CPU."""
    index = json.loads(Path(outputs["summary"]["index"]).read_text())
    assert index["default-priorities"] == {"namespace": ["x86_64"]}
    assert index["providers"] == {"x86_64": PROVIDER}
    assert index["variants"] == {label: {"x86_64": {"level": [f"v{level}"]}} for label, level in LEVELS.items()}
    for label in LEVELS:
        with zipfile.ZipFile(variant_wheel(outputs, label)) as z:
            own = json.loads(z.read(DIST_INFO + "variant.json"))
        assert own == {**index, "variants": {label: index["variants"][label]}}


def test_variantlib_validates_every_variant_wheel_and_the_index(outputs) -> None:
    """variantlib's parsers read the properties as written, and the provider's plugin API it
    derives from the requirement is `x86_64_variant_provider`, the one uv serves itself."""
    code = r"""
import json, sys, zipfile
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson
out = {}
for path, label in zip(sys.argv[2::2], sys.argv[3::2]):
    with zipfile.ZipFile(path) as z:
        info = VariantDistInfo(z.read(sys.argv[1] + "variant.json"), label)
    out[label] = {v.label: [p.to_str() for p in v.properties] for v in info.variants.values()}
index = VariantsJson(json.load(open(sys.argv[-1])))
out["index"] = {v.label: [p.to_str() for p in v.properties] for v in index.variants.values()}
out["namespaces"] = index.namespace_priorities
provider = index.providers["x86_64"]
out["provider"] = [provider.requires, provider.object_reference, provider.optional]
print(json.dumps(out))
"""
    args = [DIST_INFO]
    for label in LEVELS:
        args += [str(variant_wheel(outputs, label)), label]
    found = json.loads(run([tool_python(), "-c", code, *args, outputs["summary"]["index"]]).stdout)
    for label, level in LEVELS.items():
        assert found[label] == {label: [f"x86_64 :: level :: v{level}"]}
        assert found["index"][label] == [f"x86_64 :: level :: v{level}"]
    assert found["namespaces"] == ["x86_64"]
    assert found["provider"] == [["x86-64-variant-provider"], "x86_64_variant_provider", False]
    for label in LEVELS:
        analyzed = run([Path(tool_python()).parent / "variantlib", "analyze-wheel", "-i", variant_wheel(outputs, label)],
                       check=False)
        assert analyzed.returncode == 0, analyzed.stdout + analyzed.stderr


def cpuinfo_up_to(level: int) -> str:
    """/proc/cpuinfo with the flags of the levels above LEVEL removed from every processor."""
    above = {flag for n, flags in LEVEL_FLAGS.items() if n > level for flag in flags.split()}

    def cut(match: re.Match) -> str:
        return match[1] + " ".join(f for f in match[2].split() if f not in above)

    return re.sub(r"^(flags\s*:\s*)(.*)$", cut, Path("/proc/cpuinfo").read_text(), flags=re.M)


def uv_install(venv: Venv, outputs: dict, tmp_path: Path, cpuinfo: str | None = None) -> None:
    """uv installs wmlvl from the output directory into VENV, with a cache of its own (uv caches
    what it read of the interpreter, CPU flags included); with CPUINFO, in a private mount
    namespace whose /proc/cpuinfo is that text."""
    command = [tool_python(), "-m", "uv", "pip", "install", "--python", venv.python, "--preview-features",
               "wheel-variants", "--no-index", "--cache-dir", tmp_path / "uv-cache", "--find-links", outputs["dir"],
               PACKAGE]
    if cpuinfo is not None:
        fake = tmp_path / "cpuinfo"
        fake.write_text(cpuinfo)
        unshare = shutil.which("unshare")
        assert unshare, "unshare (util-linux) is needed by this suite"
        namespace = ["--mount"] if os.geteuid() == 0 else ["--user", "--map-root-user", "--mount"]
        command = [unshare, *namespace, "sh", "-c", 'mount --bind "$0" /proc/cpuinfo && exec "$@"', fake, *command]
    run(command, env=clean_env())


def installed(venv: Venv) -> dict:
    return json.loads(venv.run("-c", PROBE).stdout)


def test_uv_installs_the_highest_level_this_cpu_runs(outputs, make_venv, host_level, tmp_path: Path) -> None:
    venv = make_venv("uv-host")
    uv_install(venv, outputs, tmp_path)
    label = expected_build(host_level)
    assert installed(venv) == {"build": LEVELS[label], "variant": label, "merged": False}


@pytest.mark.parametrize("shown", [1, 2, 3])
def test_uv_installs_a_lower_level_for_an_older_cpu(outputs, make_venv, host_level, tmp_path: Path,
                                                     shown: int) -> None:
    """/proc/cpuinfo showing this CPU without the flags above level SHOWN: uv takes the highest
    build of that level (of this CPU's, where it is lower)."""
    cpuinfo = cpuinfo_up_to(shown)
    seen = min(shown, host_level)
    venv = make_venv(f"uv-v{shown}")
    uv_install(venv, outputs, tmp_path, cpuinfo)
    label = expected_build(seen)
    assert installed(venv) == {"build": LEVELS[label], "variant": label, "merged": False}


def test_pip_installs_the_merged_wheel_whose_loader_selects_by_cpuid(outputs, make_venv, host_level) -> None:
    venv = make_venv("pip-cpu")
    venv.install("--no-deps", PACKAGE, find_links=[outputs["dir"]])
    assert installed(venv) == {"build": LEVELS[expected_build(host_level)], "variant": None, "merged": True}
    selected = venv.run("-c", f"from {PACKAGE} import _wheelmerge; print(_wheelmerge.selected())").stdout.strip()
    assert selected == expected_build(host_level)


def test_verify_and_inspect_show_the_label_and_its_level(wheelmerge_bin, outputs) -> None:
    wheels = [variant_wheel(outputs, label) for label in LEVELS]
    reports = json.loads(run([wheelmerge_bin, "verify", *wheels, "--json"]).stdout)["wheels"]
    assert [r["valid"] for r in reports] == [True] * len(LEVELS), reports
    for label, level in LEVELS.items():
        wheel = variant_wheel(outputs, label)
        report = json.loads(run([wheelmerge_bin, "inspect", wheel, "--json"]).stdout)
        assert report["variant"] == {"label": label, "properties": [f"x86_64 :: level :: v{level}"]}
        assert report["merged"] is False
        text = run([wheelmerge_bin, "inspect", wheel]).stdout
        assert f"variant wheel {label}: x86_64 :: level :: v{level}\n" in text, text
