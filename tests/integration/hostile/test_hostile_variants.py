"""Hostile variant metadata: each document below sits in a variant wheel's variant.json (and as
the index file beside it), `wheelmerge verify` refuses the wheel as invalid input (exit 3)
naming the member, what was expected and what was found, and the real consumers show why: uv
(`--preview-features wheel-variants`, the wheel by path and the index by --find-links) or
variantlib (VariantDistInfo, VariantsJson) refuses it, installs nothing from it, or reads it
otherwise than a reader keeping the first of a duplicated key would. The well-formed document
passes all three. docs/variants.md ("Reading variant metadata") has the rules and their sources.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import clean_env, run, tool_python, wheelmerge
from wheelgen import build_wheel, fatbin

SCHEMA = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
REQUIRES = "nvidia-variant-provider>=0.0.1,<1.0.0"
PLUGIN_API = "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
GOOD = {
    "$schema": SCHEMA,
    "default-priorities": {"namespace": ["nvidia"]},
    "providers": {"nvidia": {"requires": [REQUIRES], "plugin-api": PLUGIN_API}},
    "variants": {"cu12": {"nvidia": {"cuda_version_lower_bound": ["12"]}}},
}
GOOD_TEXT = json.dumps(GOOD)


def edited(edit) -> str:
    doc = copy.deepcopy(GOOD)
    edit(doc)
    return json.dumps(doc)


def replaced(old: str, new: str) -> str:
    assert old in GOOD_TEXT
    return GOOD_TEXT.replace(old, new, 1)


def provider(entry: dict) -> str:
    return edited(lambda d: d["providers"].update(nvidia=entry))


def feature(name: str, values: list) -> str:
    return edited(lambda d: d["variants"]["cu12"]["nvidia"].update({name: values}))


# id -> (document, what `wheelmerge verify` says, which consumer shows the document unusable:
# "uv" (uv refuses or installs nothing), "variantlib" (refuses), "both", or "last" (both keep
# the last of a duplicated key, so the document means what its last copy says).
CASES = {
    "duplicate top-level variants": (
        replaced('"variants": {', '"variants": {"cu12": {"nvidia": {"cuda_version_lower_bound": ["99"]}}}, "variants": {'),
        'the document: expected each key once, found "variants" twice', "uv"),
    "duplicate default-priorities": (
        replaced('"default-priorities"', '"default-priorities": {"namespace": ["x"]}, "default-priorities"'),
        'found "default-priorities" twice', "uv"),
    "duplicate label": (
        replaced('"variants": {', '"variants": {"cu12": {"nvidia": {"cuda_version_lower_bound": ["99"]}}, '),
        'variants: expected each key once, found "cu12" twice', "last"),
    "duplicate feature": (
        replaced('"cuda_version_lower_bound": ["12"]',
                 '"cuda_version_lower_bound": ["99"], "cuda_version_lower_bound": ["12"]'),
        'variants.cu12.nvidia: expected each key once, found "cuda_version_lower_bound" twice', "last"),
    "unknown top-level key": (
        edited(lambda d: d.update(extra=1)), 'found the key "extra"', "uv"),
    "unknown default-priorities key": (
        edited(lambda d: d["default-priorities"].update(feature={})), 'found the key "feature"', "both"),
    "unknown provider key": (
        provider({"requires": [REQUIRES], "plugin-api": PLUGIN_API, "enable-if": "sys_platform == 'linux'"}),
        'found the key "enable-if"', "both"),
    "empty provider": (
        provider({}), "providers.nvidia: expected exactly one of requires, static-properties and builtin", "both"),
    "plugin-api without requires": (
        provider({"plugin-api": PLUGIN_API}), "expected exactly one of requires", "both"),
    "plugin-api not an object path": (
        provider({"requires": [REQUIRES], "plugin-api": "not a path!"}),
        'providers.nvidia.plugin-api: expected a Python object path (module.sub:attr), found "not a path!"', "both"),
    "plugin-api with spaces": (
        provider({"requires": [REQUIRES], "plugin-api": "nvidia_variant_provider.plugin : NvidiaVariantPlugin"}),
        "providers.nvidia.plugin-api: expected a Python object path", "uv"),
    "requires a string": (
        provider({"requires": REQUIRES, "plugin-api": PLUGIN_API}),
        "providers.nvidia.requires: expected a non-empty list of PEP 508 requirements", "both"),
    "requires empty": (
        provider({"requires": [], "plugin-api": PLUGIN_API}), "providers.nvidia.requires: expected", "both"),
    "requires not PEP 508": (
        provider({"requires": ["not a req !!"], "plugin-api": PLUGIN_API}),
        'providers.nvidia.requires: expected PEP 508 requirements, found "not a req !!"', "uv"),
    "optional a string": (
        provider({"requires": [REQUIRES], "plugin-api": PLUGIN_API, "optional": "yes"}),
        'providers.nvidia.optional: expected true or false, found "yes"', "both"),
    "namespace priorities a string": (
        edited(lambda d: d.update({"default-priorities": {"namespace": "nvidia"}})),
        'default-priorities.namespace: expected a non-empty list of unique names (a-z, 0-9 and _), found "nvidia"',
        "both"),
    "namespace priorities twice": (
        edited(lambda d: d.update({"default-priorities": {"namespace": ["nvidia", "nvidia"]}})),
        'found "nvidia" twice', "uv"),
    "default-priorities null": (
        edited(lambda d: d.update({"default-priorities": None})), "default-priorities: expected an object", "both"),
    "schema a number": (
        edited(lambda d: d.update({"$schema": 1})), "$schema: expected a schema installers know", "uv"),
    "no schema": (
        edited(lambda d: d.pop("$schema")), "$schema: expected a member", "uv"),
    "no providers": (
        edited(lambda d: d.pop("providers")), "providers: expected a member", "both"),
    "feature name": (
        feature("Bad-Feature", ["1"]), 'expected a feature of a-z, 0-9, _, found "Bad-Feature"', "both"),
    "value characters": (
        feature("sm_arch", ["9.0+x"]), 'found the item "9.0+x"', "both"),
    "value a number": (
        feature("sm_arch", [90]), "found the item 90", "both"),
    "values empty": (
        feature("sm_arch", []), "variants.cu12.nvidia.sm_arch: expected a non-empty list", "uv"),
    "values twice": (
        feature("sm_arch", ["9.0", "9.0"]), 'found "9.0" twice', "both"),
    "namespace without features": (
        edited(lambda d: d["variants"]["cu12"].update(nvidia={})),
        "variants.cu12.nvidia: expected a non-empty object of features, found {}", "variantlib"),
    "namespace name": (
        edited(lambda d: (d.update({"default-priorities": {"namespace": ["NV"]}}),
                          d["providers"].update(NV=d["providers"].pop("nvidia")),
                          d["variants"]["cu12"].update(NV=d["variants"]["cu12"].pop("nvidia")))),
        "default-priorities.namespace: expected", "both"),
    "byte order mark": (
        "\ufeff" + GOOD_TEXT, "byte order mark", "both"),
}

VARIANTLIB = r"""
import json, sys
from variantlib.variant_dist_info import VariantDistInfo
from variantlib.variants_json import VariantsJson
text = open(sys.argv[1], encoding="utf-8").read()
label = sys.argv[2] if len(sys.argv) > 2 else "cu12"
out = {}
try:
    info = VariantDistInfo(text, label)
    out["wheel"] = {label: sorted(p.to_str() for p in d.properties) for label, d in info.variants.items()}
except Exception as e:
    out["wheel"] = "refused: " + str(e)
try:
    VariantsJson(json.loads(text))
    out["index"] = "read"
except Exception as e:
    out["index"] = "refused: " + str(e)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def uv_venv(make_venv):
    return make_venv("hostile-variants")


def variant_wheel(directory: Path, text: str, files: dict[str, bytes] | None = None, label: str = "cu12") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vpkg-1.0-variants.json").write_text(text, encoding="utf-8")
    return build_wheel(directory / f"vpkg-1.0-py3-none-any-{label}.whl", {"vpkg/__init__.py": b"", **(files or {})},
                       name="vpkg", tags="py3-none-any", root_is_purelib=True,
                       dist_info_files={"variant.json": text.encode("utf-8")})


# GPU code for the sm_arch claims: SASS sm_75 and sm_86, PTX compute_80 (a fat binary laid out as
# nvcc lays it out): 7.5 .. 7.9 and all of 8.x run it.
KERNELS = {"vpkg/k.fatbin": fatbin([(2, 75, 0x11, 24, 64), (2, 86, 0x11, 8, 64), (1, 80, 0x8011, 17, 80)])}
# id -> (sm_arch values, what verify says; empty: accepted).
SM_ARCH_CLAIMS = {
    "sm_arch the code backs": (["75_real", "79_real", "80_virtual", "86_real"], ""),
    "sm_arch of a major without code": (["75_real", "90_real"], "nvidia :: sm_arch 90_real promises GPUs 9.0 and later"),
    "sm_arch below the code's minor": (["70_real"], "nvidia :: sm_arch 70_real promises GPUs 7.0 and later of major 7"),
    "sm_arch not the provider's form": (["8.0"], "nvidia :: sm_arch value of no form the provider matches"),
}


def variantlib_reads(path: Path, label: str = "cu12") -> dict:
    return json.loads(run([tool_python(), "-c", VARIANTLIB, path, label]).stdout)


def uv_installs(venv, *args: str | Path) -> tuple[bool, str]:
    """Whether uv would install vpkg (a dry run, the driver forced to CUDA 13.0), and its words."""
    env = clean_env({"NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "13.0", "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": "9.0"})
    result = run([tool_python(), "-m", "uv", "pip", "install", "--dry-run", "--no-cache", "--python", venv.python,
                  "--preview-features", "wheel-variants", "--no-index", "--no-deps", *args], env=env, check=False)
    return result.returncode == 0, result.stdout + result.stderr


def test_the_well_formed_document_passes_every_reader(wheelmerge_bin, uv_venv, tmp_path: Path) -> None:
    wheel = variant_wheel(tmp_path, GOOD_TEXT)
    assert wheelmerge(wheelmerge_bin, "verify", wheel, check=False).returncode == 0
    index = wheelmerge(wheelmerge_bin, "verify", tmp_path / "vpkg-1.0-variants.json", check=False)
    assert index.returncode == 0 and "vpkg-1.0-variants.json: valid variants index" in index.stderr, index.stderr
    assert variantlib_reads(tmp_path / "vpkg-1.0-variants.json") == {
        "wheel": {"cu12": ["nvidia :: cuda_version_lower_bound :: 12"]}, "index": "read"}
    for args in ([wheel], ["--find-links", tmp_path, "vpkg"]):
        installs, said = uv_installs(uv_venv, *args)
        assert installs, said


@pytest.mark.parametrize("case", CASES)
def test_hostile_document_is_refused_as_a_consumer_refuses_it(wheelmerge_bin, uv_venv, tmp_path: Path,
                                                               case: str) -> None:
    text, message, consumer = CASES[case]
    wheel = variant_wheel(tmp_path, text)
    result = wheelmerge(wheelmerge_bin, "verify", wheel, check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "vpkg-1.0-py3-none-any-cu12.whl: vpkg-1.0.dist-info/variant.json: " in result.stderr, result.stderr
    assert message in result.stderr, result.stderr
    # The index beside the wheels, which installers read first, is refused alike.
    index = wheelmerge(wheelmerge_bin, "verify", tmp_path / "vpkg-1.0-variants.json", check=False)
    assert index.returncode == 3, index.stdout + index.stderr
    assert "vpkg-1.0-variants.json: not a variants index installers read alike" in index.stderr, index.stderr

    read = variantlib_reads(tmp_path / "vpkg-1.0-variants.json")
    by_path, said_by_path = uv_installs(uv_venv, wheel)
    by_index, said_by_index = uv_installs(uv_venv, "--find-links", tmp_path, "vpkg")
    if consumer in ("uv", "both"):
        assert not by_path, said_by_path
        assert not by_index, said_by_index
    if consumer in ("variantlib", "both"):
        assert read["wheel"].startswith("refused: "), read
        assert read["index"].startswith("refused: "), read
    if consumer == "last":
        # Both read the document, each keeping the last copy of the key: the first copy's
        # cuda_version_lower_bound 99 is silently dropped.
        assert read == {"wheel": {"cu12": ["nvidia :: cuda_version_lower_bound :: 12"]}, "index": "read"}, read
        assert by_path and by_index, said_by_path + said_by_index
        first = json.loads(text, object_pairs_hook=lambda pairs: dict(pairs[:1]) if len({k for k, _ in pairs}) < len(pairs)
                           else dict(pairs))
        assert "99" in json.dumps(first)


@pytest.mark.parametrize("case", SM_ARCH_CLAIMS)
def test_sm_arch_claims_are_backed_by_the_gpu_code(wheelmerge_bin, tmp_path: Path, case: str) -> None:
    """An installer puts a variant wheel on every GPU its sm_arch values match: verify accepts
    the values the wheel's fat binaries run on and refuses any other, naming it."""
    values, message = SM_ARCH_CLAIMS[case]
    wheel = variant_wheel(tmp_path, feature("sm_arch", values), KERNELS)
    report = json.loads(run([wheelmerge_bin, "inspect", "--gpu-code", "--json", wheel], check=False).stdout or "{}")
    result = run([wheelmerge_bin, "verify", wheel], check=False)
    if not message:
        assert result.returncode == 0, result.stderr
        assert report["sm_arch"] == {"": ["80_virtual", "75_real"]}, report
        return
    assert result.returncode == 3, result.stderr
    assert "vpkg-1.0.dist-info/variant.json: " + message in result.stderr, result.stderr


# A label of wheelmerge's own kinds means its property alone: installers choose a variant wheel by
# its properties, never by its label, so a v3 build that also claims v1, v2 and v4 is installed on
# a v2 CPU (and dies of SIGILL), a cu12 build claiming CUDA 13 where only 13 is.
# id -> (label, namespace, feature, claimed values, what verify says).
LABEL_CLAIMS = {
    "level build claiming every level": ("x86_64_v3", "x86_64", "level", ["v1", "v2", "v3", "v4"],
                                         'variants.x86_64_v3.x86_64.level: expected ["v3"] for the label x86_64_v3 alone'),
    "level build claiming another level": ("x86_64_v3", "x86_64", "level", ["v2"],
                                           'variants.x86_64_v3.x86_64.level: expected ["v3"] for the label x86_64_v3 alone'),
    "cuda build claiming another major": ("cu12", "nvidia", "cuda_version_lower_bound", ["13"],
                                          'variants.cu12.nvidia.cuda_version_lower_bound: expected ["12"]'),
}


@pytest.mark.parametrize("case", LABEL_CLAIMS)
def test_a_label_claiming_other_properties_is_refused(wheelmerge_bin, tmp_path: Path, case: str) -> None:
    label, name_space, feature_name, values, message = LABEL_CLAIMS[case]
    providers = {"x86_64": {"requires": ["x86-64-variant-provider"]}, "nvidia": GOOD["providers"]["nvidia"]}
    doc = {"$schema": SCHEMA, "default-priorities": {"namespace": [name_space]},
           "providers": {name_space: providers[name_space]},
           "variants": {label: {name_space: {feature_name: values}}}}
    wheel = variant_wheel(tmp_path, json.dumps(doc), label=label)
    # What an installer reads: variantlib takes every claimed value as the wheel's own.
    read = variantlib_reads(tmp_path / "vpkg-1.0-variants.json", label)
    assert read["wheel"] == {label: sorted(f"{name_space} :: {feature_name} :: {v}" for v in values)}, read
    result = wheelmerge(wheelmerge_bin, "verify", wheel, check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"vpkg-1.0-py3-none-any-{label}.whl: vpkg-1.0.dist-info/variant.json: " in result.stderr, result.stderr
    assert message in result.stderr, result.stderr
    # The same document with the label's own value alone is accepted.
    own = {"x86_64_v3": ["v3"], "cu12": ["12"]}[label]
    doc["variants"][label][name_space][feature_name] = own
    good = variant_wheel(tmp_path / "good", json.dumps(doc), label=label)
    accepted = wheelmerge(wheelmerge_bin, "verify", good, check=False)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
