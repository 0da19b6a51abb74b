"""`wheelmerge variants`: PEP 825 variant wheels of the bundled example's two real builds, their
index file, and the merged wheel as the fallback, checked by independent tools: variantlib (the
reference implementation of the format) parses and validates every variant.json and the index
file; uv, the one installer on the package index that installs variant wheels (behind its
`wheel-variants` preview), picks the variant for a forced driver version and falls back to the
merged wheel below every bound; pip, which knows nothing of variants, installs the merged wheel.
docs/variants.md describes the format chosen.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from conftest import (CUDA_BINDINGS, DemoWheels, Venv, WheelCache, clean_env, run, tool_python, wheelmerge,
                      without_label)
from wheelgen import record_file, record_row

LABELS = ("cu12", "cu13")
SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
DIST_INFO = "wmdemo-0.1.0.dist-info/"


@pytest.fixture(scope="module")
def outputs(wheelmerge_bin: Path, demo_wheels: DemoWheels, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("variants")
    result = wheelmerge(wheelmerge_bin, "variants", demo_wheels.cu12, demo_wheels.cu13, "--with-merged",
                        "-o", out, "--json")
    summary = json.loads(result.stdout)
    return {"dir": out, "summary": summary, "files": sorted(p.name for p in out.iterdir())}


def variant_wheel(outputs: dict, label: str) -> Path:
    return Path(outputs["summary"]["variant_wheels"][LABELS.index(label)])


def test_one_variant_wheel_per_build_the_index_and_the_merged_wheel(outputs, demo_wheels) -> None:
    stem = demo_wheels.cu13.name.replace("+cu13", "")[: -len(".whl")]  # wmdemo-0.1.0-cp311-cp311-linux_x86_64
    assert outputs["files"] == sorted([f"{stem}-cu12.whl", f"{stem}-cu13.whl", f"{stem}.whl",
                                       "wmdemo-0.1.0-variants.json"])
    assert outputs["summary"]["labels"] == list(LABELS)
    assert Path(outputs["summary"]["index"]).name == "wmdemo-0.1.0-variants.json"
    assert Path(outputs["summary"]["merged"]).name == f"{stem}.whl"


def test_variantlib_validates_every_variant_wheel_and_the_index(outputs) -> None:
    """variantlib's own parsers (VariantDistInfo for a wheel's variant.json, VariantsJson for the
    index file) accept what was written, and `variantlib analyze-wheel` accepts each wheel."""
    code = r"""
import json, sys, zipfile
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson
out = {}
for path, label in zip(sys.argv[2::2], sys.argv[3::2]):
    with zipfile.ZipFile(path) as z:
        info = VariantDistInfo(z.read("wmdemo-0.1.0.dist-info/variant.json"), label)
    out[label] = {v.label: [p.to_str() for p in v.properties] for v in info.variants.values()}
index = VariantsJson(json.load(open(sys.argv[1])))
out["index"] = {v.label: [p.to_str() for p in v.properties] for v in index.variants.values()}
out["namespaces"] = index.namespace_priorities
print(json.dumps(out))
"""
    args = [outputs["summary"]["index"]]
    for label in LABELS:
        args += [str(variant_wheel(outputs, label)), label]
    found = json.loads(run([tool_python(), "-c", code, *args]).stdout)
    for label in LABELS:
        expected = [f"nvidia :: cuda_version_lower_bound :: {label[2:]}"]
        assert found[label] == {label: expected}
        assert found["index"][label] == expected
    assert set(found["index"]) == set(LABELS)
    assert found["namespaces"] == ["nvidia"]
    for label in LABELS:
        analyzed = run([Path(tool_python()).parent / "variantlib", "analyze-wheel", "-i", variant_wheel(outputs, label)],
                       check=False)
        assert analyzed.returncode == 0, analyzed.stdout + analyzed.stderr


def test_variant_json_is_the_index_entry_of_its_label(outputs) -> None:
    index = json.loads(Path(outputs["summary"]["index"]).read_text())
    assert index["$schema"] == SCHEMA
    assert index["providers"]["nvidia"] == {
        "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
        "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"}
    for label in LABELS:
        with zipfile.ZipFile(variant_wheel(outputs, label)) as z:
            own = json.loads(z.read(DIST_INFO + "variant.json"))
        assert own == {**index, "variants": {label: index["variants"][label]}}


def payload(z: zipfile.ZipFile) -> dict[str, bytes]:
    return {i.filename: z.read(i) for i in z.infolist() if ".dist-info/" not in i.filename}


@pytest.mark.parametrize("label", LABELS)
def test_a_variant_wheel_holds_its_build_as_built(outputs, demo_wheels, label: str) -> None:
    """The build's own files, byte for byte and under their own names (no labelled names, no
    loader), its dist-info under the release's version, RECORD covering variant.json."""
    with zipfile.ZipFile(demo_wheels[label]) as given, zipfile.ZipFile(variant_wheel(outputs, label)) as z:
        assert payload(z) == payload(given)
        names = z.namelist()
        assert not any("_wheelmerge" in n for n in names)
        assert names[-1] == DIST_INFO + "RECORD"
        metadata = z.read(DIST_INFO + "METADATA").decode()
        assert "\nVersion: 0.1.0\n" in metadata
        major = int(label[2:])
        assert f"Requires-Dist: cuda-bindings<{major + 1},>={major}.0" in metadata or \
               f"Requires-Dist: cuda-bindings>={major}.0,<{major + 1}" in metadata, metadata
        rows = {row[0]: row[1:] for row in csv.reader(io.StringIO(z.read(DIST_INFO + "RECORD").decode()))}
        assert set(rows) == set(names)
        for name in names:
            if name == DIST_INFO + "RECORD":
                continue
            assert [name, *rows[name]] == record_row(name, z.read(name)), name


def uv_install(venv: Venv, *args: str | Path, driver: str | None) -> str:
    env = {"NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0"}
    if driver:
        env["NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION"] = driver
    result = run([tool_python(), "-m", "uv", "pip", "install", "--python", venv.python, "--preview-features",
                  "wheel-variants", "--no-index", *args], env=clean_env(env))
    return result.stdout + result.stderr


def installed_label(venv: Venv) -> str:
    """cu12 or cu13 for an installed variant wheel (its variant.json), "merged" for the merged
    wheel (its loader)."""
    code = r"""
import importlib.metadata as m, json
d = m.distribution("wmdemo")
files = {str(f) for f in d.files}
v = d.read_text("variant.json")
print(next(iter(json.loads(v)["variants"])) if v else ("merged" if "wmdemo/_wheelmerge.py" in files else "?"))
"""
    return venv.run("-c", code).stdout.strip()


@pytest.mark.parametrize("driver, expected", [("12.8", "cu12"), ("13.0", "cu13"), ("13.2", "cu13"),
                                              ("11.8", "merged")])
def test_uv_installs_the_variant_the_driver_allows(outputs, make_venv, driver: str, expected: str) -> None:
    venv = make_venv(f"uv-{driver}")
    uv_install(venv, "--find-links", outputs["dir"], "--no-deps", "wmdemo", driver=driver)
    assert installed_label(venv) == expected


def test_pip_ignores_the_variant_wheels_and_installs_the_merged_one(outputs, make_venv) -> None:
    venv = make_venv("pip-variants")
    venv.install("--no-deps", "wmdemo", find_links=[outputs["dir"]])
    assert installed_label(venv) == "merged"


@pytest.mark.parametrize("label", LABELS)
def test_each_variant_wheel_installed_alone_imports_its_build(outputs, make_venv, wheel_cache: WheelCache,
                                                             label: str) -> None:
    """With its own dependencies (the matching cuda-bindings, from the offline cache). uv installs
    a variant wheel only where its properties hold, even given by path: a CUDA 13 driver runs
    both builds."""
    venv = make_venv(f"alone-{label}")
    uv_install(venv, "--find-links", wheel_cache.path, variant_wheel(outputs, label), driver="13.0")
    facts = json.loads(venv.run("-c", "import json, wmdemo, importlib.metadata as m; print(json.dumps("
                                      "[wmdemo.build_major(), m.version('cuda-bindings')]))").stdout)
    assert facts == [int(label[2:]), CUDA_BINDINGS[label]]


def test_torch_labels_are_refused_and_nothing_is_written(wheelmerge_bin, demo_wheels, tmp_path: Path) -> None:
    """uv serves the nvidia and x86_64 namespaces itself, not PyTorch's: a torch build has no
    properties an installer reads (x86-64 levels: test_variants_cpu.py)."""
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "variants",
                        f"{without_label(demo_wheels.cu12, tmp_path / 'a')}=torch210_cu12",
                        f"{without_label(demo_wheels.cu13, tmp_path / 'b')}=torch211_cu13",
                        "-o", out, check=False)
    assert result.returncode == 2, result.stderr
    assert "no variant properties for this build's label" in result.stderr
    assert "torch builds have no variant provider installers serve" in result.stderr, result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_a_variant_wheel_given_as_input_is_refused(wheelmerge_bin, outputs, demo_wheels, tmp_path: Path) -> None:
    """An input that already carries variant.json (renamed so that its name parses) is refused
    rather than given a second one."""
    renamed = tmp_path / "wmdemo-0.1.0-cp311-cp311-linux_x86_64.cu12.whl"
    renamed.write_bytes(variant_wheel(outputs, "cu12").read_bytes())
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "variants", renamed, demo_wheels.cu13, "-o", out, check=False)
    assert result.returncode != 0
    assert "the input already has a dist-info file the output generates" in result.stderr, result.stderr
    assert not out.exists() or not any(out.iterdir())


def test_output_is_reproducible(wheelmerge_bin, demo_wheels, outputs, tmp_path: Path) -> None:
    again = tmp_path / "again"
    wheelmerge(wheelmerge_bin, "variants", demo_wheels.cu13, demo_wheels.cu12, "--with-merged", "-o", again)
    for name in outputs["files"]:
        assert (again / name).read_bytes() == (outputs["dir"] / name).read_bytes(), name


def test_verify_reads_variant_wheels_and_checks_their_metadata(wheelmerge_bin, outputs) -> None:
    wheels = [variant_wheel(outputs, label) for label in LABELS]
    result = wheelmerge(wheelmerge_bin, "verify", *wheels, "--json")
    reports = json.loads(result.stdout)["wheels"]
    assert [r["valid"] for r in reports] == [True, True], reports


def rewritten(source: Path, target: Path, member: str, data: bytes) -> Path:
    """`source` with `member` replaced by `data`, RECORD updated to match: a well-formed wheel."""
    with zipfile.ZipFile(source) as z:
        entries = [(i, z.read(i)) for i in z.infolist()]
    record_name = next(i.filename for i, _ in entries if i.filename.endswith(".dist-info/RECORD"))
    files = {i.filename: (data if i.filename == member else content) for i, content in entries}
    files[record_name] = record_file((record_row(n, c) for n, c in files.items() if n != record_name), record_name)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for info, _ in entries:
            out.writestr(info, files[info.filename])
    return target


def test_verify_refuses_variant_metadata_for_another_label(wheelmerge_bin, outputs, tmp_path: Path) -> None:
    source = variant_wheel(outputs, "cu12")
    with zipfile.ZipFile(source) as z:
        metadata = json.loads(z.read(DIST_INFO + "variant.json"))
    metadata["variants"] = {"cu13": metadata["variants"]["cu12"]}
    bad = rewritten(source, tmp_path / source.name, DIST_INFO + "variant.json", json.dumps(metadata).encode())
    result = wheelmerge(wheelmerge_bin, "verify", bad, check=False)
    assert result.returncode == 3, result.stderr
    assert f"{DIST_INFO}variant.json: invalid variant metadata" in result.stderr, result.stderr
    assert 'variants: expected the file name\'s label "cu12" alone, found ["cu13"]' in result.stderr, result.stderr


def test_verify_refuses_a_variant_wheel_without_variant_metadata(wheelmerge_bin, demo_wheels, tmp_path: Path) -> None:
    # The cu12 build's own file under a variant name: its dist-info is named for 0.1.0+cu12.
    with zipfile.ZipFile(demo_wheels.cu12) as z:
        dist_info = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD")).split("/")[0]
    assert dist_info == "wmdemo-0.1.0+cu12.dist-info"
    named = tmp_path / "wmdemo-0.1.0+cu12-cp311-cp311-linux_x86_64-cu12.whl"
    named.write_bytes(demo_wheels.cu12.read_bytes())
    result = wheelmerge(wheelmerge_bin, "verify", named, check=False)
    assert result.returncode == 3, result.stderr
    assert "variant.json: missing" in result.stderr, result.stderr


def test_a_variant_wheel_is_refused_as_a_merge_input(wheelmerge_bin, outputs, demo_wheels, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = wheelmerge(wheelmerge_bin, "merge", f"{variant_wheel(outputs, 'cu12')}=cu12", demo_wheels.cu13, "-o", out,
                        check=False)
    assert result.returncode == 3, result.stderr
    assert "a variant wheel (PEP 825) as input" in result.stderr, result.stderr
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("label", LABELS)
def test_inspect_shows_a_variant_wheels_label_and_properties(wheelmerge_bin, outputs, label: str) -> None:
    wheel = variant_wheel(outputs, label)
    report = json.loads(wheelmerge(wheelmerge_bin, "inspect", wheel, "--json").stdout)
    assert report["variant"] == {"label": label, "properties": [f"nvidia :: cuda_version_lower_bound :: {label[2:]}"]}
    assert report["merged"] is False
    text = wheelmerge(wheelmerge_bin, "inspect", wheel).stdout
    assert f"variant wheel {label}: nvidia :: cuda_version_lower_bound :: {label[2:]}\n" in text, text
    merged = json.loads(wheelmerge(wheelmerge_bin, "inspect", outputs["summary"]["merged"], "--json").stdout)
    assert merged["variant"] is None and merged["merged"] is True
