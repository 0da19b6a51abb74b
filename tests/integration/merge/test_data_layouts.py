"""Packages and private libraries on both sides of a wheel's .data directory: the root and
`.data/platlib` (or `purelib`) install into one site-packages, so a package under `.data/platlib`
whose private library sits at the root (or the other way round) must find it where pip puts it.
Real compiled extensions and libraries, merged, installed by pip and imported per build."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
import loader_fixtures as lf  # noqa: E402
import oracle  # noqa: E402
import wheelgen as wg  # noqa: E402
from conftest import run  # noqa: E402

PY = f"cp{sys.version_info.major}{sys.version_info.minor}"
TAGS = f"{PY}-{PY}-linux_{platform.machine()}"
DATA = "pkg-1.0.data"
INIT = b'"""A package installed from .data."""\n\nfrom ._core import build_major, runtime_value\n'
PROBE = ("import json, pkg; print(json.dumps({'selected': pkg._wheelmerge.selected(), "
         "'major': pkg.build_major(), 'runtime': pkg.runtime_value()}))")

# Where each file of a build goes: the package under .data/platlib, libwmrt (which the
# extension needs) at the root, libwmdep (which libwmrt needs) under .data/platlib too.
LAYOUTS = {
    "package-in-platlib-libraries-at-root-and-platlib": {
        "_core.so": f"{DATA}/platlib/pkg/_core{lf.EXT_SUFFIX}",
        "libwmrt.so": "pkg.libs/libwmrt.so.1",
        "libwmdep.so": f"{DATA}/platlib/pkg.libs/libwmdep.so.1",
        "__init__": f"{DATA}/platlib/pkg/__init__.py",
    },
    "package-at-root-libraries-in-purelib": {
        "_core.so": f"pkg/_core{lf.EXT_SUFFIX}",
        "libwmrt.so": f"{DATA}/purelib/pkg.libs/libwmrt.so.1",
        "libwmdep.so": f"{DATA}/purelib/pkg.libs/libwmdep.so.1",
        "__init__": "pkg/__init__.py",
    },
}


@pytest.fixture(scope="module")
def native(tmp_path_factory) -> Path:
    return lf.build_native(tmp_path_factory.mktemp("native"))


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_private_libraries_are_found_where_they_install(layout, native, wheelmerge_bin, make_venv, tmp_path):
    where = LAYOUTS[layout]
    inputs = {}
    for label in lf.LABELS:
        files = {where["__init__"]: INIT}
        for built in ("_core.so", "libwmrt.so", "libwmdep.so"):
            # Trailing bytes no loader reads make every file differ per build, so each is a
            # variant the loader preloads (an identical libwmrt would be found by no one: the
            # test libraries carry no RPATH).
            files[where[built]] = (native / label / built).read_bytes() + label.encode()
        path = tmp_path / "in" / wg.wheel_filename("pkg", "1.0", TAGS, label=label)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(wg.wheel_bytes(files, tags=TAGS))
        inputs[label] = path
    out = tmp_path / "out"
    run([wheelmerge_bin, "merge", *inputs.values(), "-o", out])
    merged = next(out.glob("*.whl"))
    run([wheelmerge_bin, "verify", merged])
    target = oracle.assert_output_behaves(merged, inputs, target=tmp_path / "target")
    venv = make_venv(f"data-{layout}")
    for label in lf.LABELS:
        major = int(label[2:])
        r = venv.run("-c", PROBE, env={"PYTHONPATH": str(target), "WHEELMERGE_CUDA_MAJOR": str(major)})
        facts = json.loads(r.stdout.strip().splitlines()[-1])
        # libwmrt's value is libwmdep's (major * 100) plus one: both libraries of this build.
        assert facts == {"selected": label, "major": major, "runtime": major * 100 + 1}, facts
