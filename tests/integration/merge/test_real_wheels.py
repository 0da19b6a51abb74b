"""Real wheels from the Python package index, made by many different tools, must pass
`wheelmerge verify`: strict checks may refuse broken archives, never a wheel that every
installer accepts, unless its tags make a claim its files contradict (taichi 1.7.4's
manylinux_2_27 tag, whose extension needs glibc 2.34: refused, with readelf agreeing).

The corpus is pinned in `real_wheels.py` and cached outside the repository
(`scripts/fetch-real-wheels.sh` fills the cache; otherwise the first run of this suite
downloads about 1.5 GB). Each cached wheel is checked against its pinned sha256 once a
session; a wheel that cannot be fetched fails its tests, naming the wheel and the address.

Per wheel:

* `wheelmerge verify --json` exits 0, and its report agrees with Python's `zipfile` on the
  number of files (members other than directory entries) and with RECORD's rows;
* every consumer reads it the same way (`oracle.consumers_disagreement`: Python's `zipfile`,
  `installer` installing it with RECORD validation, `wheel unpack` and `unzip` see the same
  names and bytes), so the strictness is measured against what is really accepted (an
  agreement is kept under a key of the wheel's sha256, the consumers' versions and oracle.py,
  which are all it depends on, and found by later runs of that key);
* the wheel is sound by independent readers: Python's `zipfile` (unique names; every member
  read back through its CRC-32 by the consumers' check, whose installer view also runs
  `WheelFile.validate_record()`: every RECORD hash and size) and `packaging` (the file name
  parses to the pinned name and version); its WHEEL `Generator:` line and `.data/` keys are the
  ones the corpus lists.
"""

from __future__ import annotations

import csv
import importlib.metadata
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest
from build_cache import cached, key_of
from conftest import run
from installer.sources import WheelFile
from oracle import TOOL_PYTHON, UNZIP, consumers_disagreement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version
from real_wheels import WHEELS, FetchError, RealWheel, fetch_all

# What the corpus must keep covering: WHEEL `Generator:` prefixes and `.data/` keys.
PRODUCERS = ("setuptools", "meson", "maturin", "scikit-build-core", "skbuild", "hatchling",
             "flit", "poetry-core", "pdm-backend", "pyqtbuild", "bazel-wheelmaker", "bdist_wheel")
DATA_KEYS = ("scripts", "headers", "data", "platlib")


@pytest.fixture(scope="session")
def real_wheel_files() -> dict[str, Path | FetchError]:
    """Every pinned wheel, from the cache (checked against its sha256) or downloaded into it,
    once a session: file name -> path, or the error that names the wheel and its address."""
    return fetch_all(WHEELS)


def wheel_path(files: dict[str, Path | FetchError], wheel: RealWheel) -> Path:
    found = files[wheel.filename]
    if isinstance(found, FetchError):
        pytest.fail(str(found), pytrace=False)
    return found


def dist_info(names: list[str]) -> str:
    tops = {n.split("/", 1)[0] for n in names if "/" in n}
    found = sorted(t for t in tops if t.endswith(".dist-info"))
    assert len(found) == 1, f"expected one .dist-info directory, found {found}"
    return found[0]


def record_rows(z: zipfile.ZipFile, info_dir: str) -> list[list[str]]:
    text = z.read(f"{info_dir}/RECORD").decode("utf-8")
    return [row for row in csv.reader(io.StringIO(text)) if row]


def test_corpus_covers_the_producers():
    assert len(WHEELS) >= 30
    assert len({w.filename for w in WHEELS}) == len(WHEELS)
    generators = {w.generator for w in WHEELS}
    missing = [p for p in PRODUCERS if not any(g.startswith(p) for g in generators)]
    assert not missing, f"no wheel of the corpus was made by {missing}"
    assert set(DATA_KEYS) <= {key for w in WHEELS for key in w.data}
    names = {w.name for w in WHEELS}
    assert {"cupy-cuda12x", "cupy-cuda13x", "cuda-bindings", "torch"} <= names
    assert {w.version for w in WHEELS if w.name == "cuda-bindings"} >= {"12.9.4", "13.0.3"}


@pytest.mark.parametrize("wheel", WHEELS, ids=lambda w: w.id)
def test_verify_accepts(wheelmerge_bin, real_wheel_files, wheel: RealWheel, tmp_path):
    path = wheel_path(real_wheel_files, wheel)
    result = run([wheelmerge_bin, "verify", "--json", path], check=False)
    if wheel.refused:  # a false claim of its tags, as readelf reads the member
        member, message = wheel.refused
        assert result.returncode == 3, result.stderr
        assert f"{wheel.filename}: {member}: {message}" in result.stderr, result.stderr
        with zipfile.ZipFile(path) as z:
            (tmp_path / "member").write_bytes(z.read(member))
        needs = run(["readelf", "-V", tmp_path / "member"]).stdout
        assert message.split("found ")[1].split(" of ")[0] in needs, needs
        return
    assert result.returncode == 0, (
        f"wheelmerge verify refused {wheel.filename} ({wheel.tool}), exit status "
        f"{result.returncode}:\n{result.stderr}")
    reports = json.loads(result.stdout)["wheels"]
    assert len(reports) == 1
    report = reports[0]
    assert Path(report["file"]).name == wheel.filename
    assert report["valid"] is True
    assert report["merged"] is False and report["loaders"] == []
    assert isinstance(report["warnings"], list)
    with zipfile.ZipFile(path) as z:
        files = [i.filename for i in z.infolist() if not i.is_dir()]
        rows = record_rows(z, dist_info(files))
    # RECORD.jws / RECORD.p7s (wheel 0.24's signing) are not in RECORD: verify counts, checks and
    # merges the files RECORD covers, and names each signature in a warning.
    signatures = [f for f in files if f.rsplit("/", 1)[-1] in ("RECORD.jws", "RECORD.p7s")]
    for signature in signatures:
        assert any(f"{signature}: a signature of RECORD" in w for w in report["warnings"]), report["warnings"]
    assert report["files"] == len(files) - len(signatures), f"zipfile counts {len(files)} files"
    assert report["files"] == len(rows), f"RECORD has {len(rows)} rows"


@pytest.mark.parametrize("wheel", WHEELS, ids=lambda w: w.id)
def test_corpus_wheel_is_sound(real_wheel_files, wheel: RealWheel):
    path = wheel_path(real_wheel_files, wheel)
    name, version, _, _ = parse_wheel_filename(wheel.filename)
    assert name == canonicalize_name(wheel.name) and version == Version(wheel.version)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        assert len(set(names)) == len(names), "duplicate member names"
        info_dir = dist_info(names)
        metadata = z.read(f"{info_dir}/WHEEL").decode("utf-8").splitlines()
        generators = [line.partition(":")[2].strip() for line in metadata
                      if line.startswith("Generator:")]
        assert generators == [wheel.generator]
        data_keys = {n.split("/")[1] for n in names
                     if n.split("/")[0].endswith(".data") and n.count("/") >= 2}
        assert sorted(data_keys) == list(wheel.data)
    # Every member against RECORD's hash and size (installer's validate_record) is read by
    # test_consumers_agree, whose installer view validates before it installs.
    with WheelFile.open(path) as source:
        assert canonicalize_name(source.distribution) == name


@pytest.fixture(scope="session")
def consumer_versions() -> str:
    """What the consumers' verdict depends on besides the wheel and oracle.py: their versions."""
    # Versions, not paths: a fresh clone elsewhere has the same key.
    assert Path(TOOL_PYTHON).parent.parent.resolve() == Path(sys.prefix).resolve(), \
        f"the consumers' Python ({TOOL_PYTHON}) is this environment's, whose versions are read here"
    unzip = run([UNZIP, "-v"]).stdout.splitlines()[0]
    return "\n".join([f"python {sys.version}", f"installer {importlib.metadata.version('installer')}",
                      f"wheel {importlib.metadata.version('wheel')}", unzip])


@pytest.mark.parametrize("wheel", WHEELS, ids=lambda w: w.id)
def test_consumers_agree(real_wheel_files, consumer_versions: str, wheel: RealWheel):
    """What wheelmerge accepts, every consumer must read alike: the real wheels too.

    wheelmerge takes no part in this verdict: it is a function of the wheel's bytes (pinned by
    its sha256), the consumers' versions and oracle.py alone, and costs five inflates of the
    whole corpus (1.5 GB, the torch wheel alone about a minute). So an agreement is kept as the
    suites keep builds (build_cache: under a key of all of those) and found, not computed again,
    by a later run of the same key; a disagreement is never kept, and any change of a consumer,
    the oracle or the wheel computes it anew."""
    path = wheel_path(real_wheel_files, wheel)

    def agree(entry: Path) -> None:
        disagreement = consumers_disagreement(path)
        assert disagreement is None, disagreement
        (entry / "agreed").write_text(f"{wheel.filename} sha256={wheel.sha256}\n{consumer_versions}\n")

    key = key_of(["tests/integration/support/oracle.py"], wheel.sha256, consumer_versions)
    entry = cached(f"consumers-agree/{wheel.id}", key, agree)
    assert (entry / "agreed").read_text().startswith(f"{wheel.filename} sha256={wheel.sha256}\n")
