"""The differential sweep of tests/fuzz/oracle_sweep.py over the inputs of the merge harnesses
and of fuzz_requirement: the deterministic seed corpus of tests/fuzz/make_corpus.py (without the
wmdemo wheels, which need a build) and every kept input of
tests/fuzz/regressions/{fuzz_zip,fuzz_merge,fuzz_merge_valid,fuzz_requirement}.

Every input the release wheelmerge accepts must be read alike by zipfile, installer (RECORD
validated), `wheel unpack` and unzip; every wheel it merges must be accepted by its own
`verify`, install with pip and carry requirements that behave like its inputs'; wheelmerge
ends only with its documented exit codes; a Requires-Dist is accepted only where packaging
parses it and pip can evaluate its marker. Refusals are fine. No fuzzer is needed: the inputs
are files, and the release binary ($WHEELMERGE, else build/wheelmerge) reads them.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import tool_python

ROOT = Path(__file__).resolve().parents[3]
FUZZ = ROOT / "tests" / "fuzz"
sys.path.insert(0, str(FUZZ))
import oracle_sweep  # noqa: E402

JOBS = 2
REGRESSION_INPUTS = sorted(p for h in oracle_sweep.HARNESSES for p in (FUZZ / "regressions" / h).glob("*")
                           if p.is_file() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def seed_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The deterministic seed corpus, one directory per harness."""
    out = tmp_path_factory.mktemp("seeds")
    r = subprocess.run([str(tool_python()), str(FUZZ / "make_corpus.py"), str(out)], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, f"make_corpus.py failed:\n{r.stdout}\n{r.stderr}"
    return out


def _swept(paths: list[Path], wheelmerge: Path, harness: str | None = None) -> oracle_sweep.Summary:
    summaries = oracle_sweep.sweep(paths, wheelmerge=wheelmerge, harness=harness, jobs=JOBS)
    report = oracle_sweep.report(summaries)
    failures = [f for s in summaries.values() for f in s.failures]
    assert not failures, f"{len(failures)} inputs fail the sweep:\n{report}"
    assert len(summaries) == 1, report
    return next(iter(summaries.values()))


def test_seed_zips(seed_corpus: Path, wheelmerge_bin: Path) -> None:
    """Every seed wheel verify accepts is read alike by the consumers; the bad ones are refused."""
    s = _swept([seed_corpus / "fuzz_zip"], wheelmerge_bin)
    assert s.inputs >= 100 and s.wheels_accepted >= 10, oracle_sweep.report({s.harness: s})
    assert set(s.refused) == {3}, oracle_sweep.report({s.harness: s})


def test_seed_pairs(seed_corpus: Path, wheelmerge_bin: Path) -> None:
    """fuzz_merge's seeds: accepted inputs read alike, merged outputs behave like their inputs."""
    s = _swept([seed_corpus / "fuzz_merge"], wheelmerge_bin)
    assert s.inputs >= 100 and s.outputs >= 5, oracle_sweep.report({s.harness: s})


def test_seed_descriptions(seed_corpus: Path, wheelmerge_bin: Path) -> None:
    """fuzz_merge_valid's seeds, built as the harness builds them: every wheel is valid by
    construction (so verify accepts all of them), and every merge that succeeds behaves."""
    s = _swept([seed_corpus / "fuzz_merge_valid"], wheelmerge_bin)
    assert s.inputs >= 10 and s.wheels_accepted == s.wheels_verified, oracle_sweep.report({s.harness: s})
    assert s.outputs >= 5, oracle_sweep.report({s.harness: s})


def test_seed_requirements(seed_corpus: Path, wheelmerge_bin: Path) -> None:
    """fuzz_requirement's seeds as a Requires-Dist: verify agrees with packaging (parsing, and
    evaluating the marker as pip does), and the merged requirement behaves like the input's."""
    s = _swept([seed_corpus / "fuzz_requirement"], wheelmerge_bin)
    assert s.requirement_verdicts["both accept"] >= 15 and s.requirement_verdicts["both refuse"] >= 5, \
        oracle_sweep.report({s.harness: s})
    assert s.outputs >= 15, oracle_sweep.report({s.harness: s})


@pytest.mark.parametrize("case", REGRESSION_INPUTS, ids=[f"{p.parent.name}/{p.name}" for p in REGRESSION_INPUTS])
def test_regression_input(case: Path, wheelmerge_bin: Path) -> None:
    """A kept fuzz input of a merge harness passes the sweep."""
    _swept([case], wheelmerge_bin, case.parent.name)


def test_description_port_matches_the_harness(tmp_path: Path) -> None:
    """The sweep's reading of fuzz_merge_valid's format: directives, members, $DI, +x, the
    default stem and the generated WHEEL, METADATA and RECORD."""
    text = (b"name: Pkg.Name-2.0-7-cp311-cp311-manylinux_2_28_x86_64\nglob: a/*.py\nfallback\nignored\n"
            b">>> +x $DI/../x\n>>> pkg/a.py\nline 1\n\n>>> pkg/b,\"q\".py\n>>> ")
    d = oracle_sweep.parse_description(text)
    assert d.stem == b"Pkg.Name-2.0-7-cp311-cp311-manylinux_2_28_x86_64"
    assert d.globs == [b"a/*.py"] and d.fallback
    assert [(m.path, m.content, m.executable) for m in d.members] == [
        (b"$DI/../x", b"", True), (b"pkg/a.py", b"line 1\n", False), (b'pkg/b,"q".py', b"", False), (b"", b"", False)]
    wheel = oracle_sweep.build_wheel(d, b"cu12", tmp_path)
    assert wheel.name == "Pkg.Name-2.0-7-cp311-cp311-manylinux_2_28_x86_64.cu12.whl"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        assert names[-3:] == ["pkg_name-2.0.dist-info/WHEEL", "pkg_name-2.0.dist-info/METADATA",
                              "pkg_name-2.0.dist-info/RECORD"]
        assert z.getinfo("pkg_name-2.0.dist-info/../x").external_attr >> 16 == 0o100755
        assert z.read("pkg_name-2.0.dist-info/WHEEL") == (
            b"Wheel-Version: 1.0\nGenerator: fuzz_merge_valid\nRoot-Is-Purelib: false\n"
            b"Tag: cp311-cp311-manylinux_2_28_x86_64\nBuild: 7\n")
        assert z.read("pkg_name-2.0.dist-info/METADATA") == b"Metadata-Version: 2.1\nName: Pkg.Name\nVersion: 2.0\n"
        record = z.read("pkg_name-2.0.dist-info/RECORD").decode()
        assert '"pkg/b,""q"".py",sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n' in record
        assert record.endswith("pkg_name-2.0.dist-info/RECORD,,\n")
    # A name the engine refuses: the default stem's dist-info, the file keeps its name.
    bad = oracle_sweep.build_wheel(oracle_sweep.parse_description(b"name: not a wheel\n>>> m\nx"), b"cu13", tmp_path)
    assert bad.name == "not a wheel.cu13.whl"
    with zipfile.ZipFile(bad) as z:
        assert "pkg-1.0.dist-info/RECORD" in z.namelist()
