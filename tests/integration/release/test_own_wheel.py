"""wheelmerge's own wheel as published: manylinux, and installable where none of its libraries are.

scripts/build-wheel.sh repairs the wheel of this source tree (test_backend.py's fixture: `pip
wheel` of the repository) with auditwheel from the package index: the shared libraries the
executable links (libzip, yaml-cpp, fmt, toml++, libutf8proc, libbz2, libcrypto) are copied into
`wheelmerge_cuda.libs/` and the tag becomes the oldest manylinux policy its glibc and libstdc++
symbols allow (manylinux_2_34 when built on Debian 12). `auditwheel show` must agree with the
tag. Then, in a clean Debian 12 root (scripts/clean-root.sh: debootstrap's minbase with python3,
nothing else), pip installs it into a venv, and it merges the bundled example's two builds into
the same bytes as the executable of this build tree; the wheel as `pip wheel` made it, installed
the same way, cannot even start there. Each library it carries has its section in
THIRD_PARTY_NOTICES.md, and the repaired wheel keeps the license files (test_licenses.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import DemoWheels, ROOT, clean_env, run, tool_python, wheelmerge
from test_backend import wheelmerge_wheel  # noqa: F401  (the fixture)
from test_licenses import assert_bundled_libraries_noticed, assert_licenses_in_wheel


@pytest.fixture(scope="module")
def manylinux_wheel(wheelmerge_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("manylinux")
    result = run(["bash", ROOT / "scripts" / "build-wheel.sh", out],
                 env=clean_env({"WHEELMERGE_WHEEL": str(wheelmerge_wheel)}))
    return Path(result.stdout.strip().splitlines()[-1])


def test_auditwheel_tags_it_manylinux_and_show_agrees(manylinux_wheel: Path) -> None:
    found = re.fullmatch(r"wheelmerge_cuda-[0-9.]+-py3-none-(manylinux_2_(\d+)_x86_64)\.whl", manylinux_wheel.name)
    assert found, manylinux_wheel.name
    shown = " ".join(run([tool_python(), "-m", "auditwheel", "show", manylinux_wheel]).stdout.split())
    assert f'is consistent with the following platform tag: "{found[1]}"' in shown, shown
    with zipfile.ZipFile(manylinux_wheel) as z:
        libraries = {n.split("/", 1)[1].split("-", 1)[0] for n in z.namelist()
                     if n.startswith("wheelmerge_cuda.libs/") and not n.endswith("/")}
    assert {"libzip", "libyaml", "libfmt"} <= libraries, libraries
    # What it carries has its license in THIRD_PARTY_NOTICES.md, which the repair kept.
    assert_bundled_libraries_noticed(libraries)
    assert_licenses_in_wheel(manylinux_wheel)


@pytest.fixture(scope="module")
def clean_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert os.geteuid() == 0, "installing into a clean root needs chroot, so root"
    tarball = Path(run(["bash", ROOT / "scripts" / "clean-root.sh"], timeout=1800).stdout.strip().splitlines()[-1])
    root = tmp_path_factory.mktemp("clean-root")
    with tarfile.open(tarball) as tar:
        tar.extractall(root, filter="fully_trusted")
    return root


def in_root(root: Path, script: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`script` run in the clean root, with /proc mounted as on any system (the dynamic loader
    reads /proc/self/exe to expand $ORIGIN), in a mount namespace of its own that goes with it."""
    mount_then_chroot = 'mount -t proc proc "$1/proc" && exec chroot "$1" /bin/sh -ec "$2"'
    return run(["unshare", "--mount", "--fork", "sh", "-c", mount_then_chroot, "sh", root, script], check=check,
               env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"})


def test_the_clean_root_has_none_of_the_libraries(clean_root: Path) -> None:
    listed = in_root(clean_root, "ls /usr/lib/x86_64-linux-gnu/").stdout.split()
    assert not [n for n in listed if re.match(r"lib(zip|yaml-cpp|fmt|tomlplusplus)\.", n)]
    assert in_root(clean_root, "python3 -c 'import sys; print(sys.version_info[:2])'").stdout.strip() == "(3, 11)"


def test_it_installs_and_merges_in_the_clean_root(clean_root: Path, manylinux_wheel: Path, demo_wheels: DemoWheels,
                                                 wheelmerge_bin: Path, tmp_path: Path) -> None:
    inputs = clean_root / "tmp" / "in"
    inputs.mkdir(parents=True)
    for wheel in (manylinux_wheel, demo_wheels.cu12, demo_wheels.cu13):
        shutil.copy2(wheel, inputs / wheel.name)
    result = in_root(clean_root, f"""
        python3 -m venv /opt/wm
        /opt/wm/bin/pip install --no-index --disable-pip-version-check -q /tmp/in/{manylinux_wheel.name}
        /opt/wm/bin/wheelmerge --version
        /opt/wm/bin/wheelmerge merge /tmp/in/{demo_wheels.cu12.name} /tmp/in/{demo_wheels.cu13.name} -o /tmp/out \
            --json >/tmp/merge.json
        /opt/wm/bin/wheelmerge verify --json /tmp/out/*.whl >/tmp/verify.json
    """)
    assert result.stdout.strip() == run([wheelmerge_bin, "--version"]).stdout.strip()
    merged = clean_root / "tmp" / "out" / Path(json.loads((clean_root / "tmp" / "merge.json").read_text())["output"]).name
    verified = json.loads((clean_root / "tmp" / "verify.json").read_text())["wheels"][0]
    assert verified["valid"] and verified["loaders"] == ["wmdemo/_wheelmerge.py"]
    # The same bytes as this build tree's executable writes from the same inputs.
    here = wheelmerge(wheelmerge_bin, "merge", demo_wheels.cu12, demo_wheels.cu13, "-o", tmp_path / "here", "--json")
    assert merged.read_bytes() == Path(json.loads(here.stdout)["output"]).read_bytes()


def test_the_wheel_as_built_does_not_start_there(clean_root: Path, wheelmerge_wheel: Path) -> None:  # noqa: F811
    inputs = clean_root / "tmp" / "unrepaired"
    inputs.mkdir(parents=True)
    shutil.copy2(wheelmerge_wheel, inputs / wheelmerge_wheel.name)
    result = in_root(clean_root, f"""
        python3 -m venv /opt/unrepaired
        /opt/unrepaired/bin/pip install --no-index --disable-pip-version-check -q /tmp/unrepaired/{wheelmerge_wheel.name}
        /opt/unrepaired/bin/wheelmerge --version
    """, check=False)
    assert result.returncode != 0
    assert "error while loading shared libraries" in result.stderr, result.stderr
