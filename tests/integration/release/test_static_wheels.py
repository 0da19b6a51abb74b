"""wheelmerge's binary wheels (scripts/static/wheels.sh): one self-contained executable per
platform, built with the pinned zig from the package index against libraries built from pinned
sources, in `py3-none-PLATFORM` wheels like ruff's and uv's.

What each test proves:
- the Linux executables are fully static (no program interpreter, no DT_NEEDED: readelf) and
  `auditwheel show` agrees with the wheels' manylinux tags; pip reads each tag of the compressed
  tag set, and uv picks the one wheel for glibc (2.17 to 2.31 and its own) and musl systems;
- the x86_64 executable merges the bundled example in an empty root (nothing but itself and the
  wheels: no libc, no /usr, no /proc) into the same bytes as this build tree's executable;
- the aarch64 executable does the same under qemu-aarch64 (this machine has no aarch64 libc);
- the PEP 517 backend works from the static wheel in pip's and uv's build environments;
- the wheel installs with the pip of a clean Debian 11 root (glibc 2.31, Python 3.9, pip 20.3)
  and merges there into the same bytes;
- the macOS executables are Mach-O files for their architecture and minimum OS (nothing here can
  run them);
- every wheel carries LICENSE and the third-party notices in `.dist-info/licenses/`.

Which targets (conftest.static_targets): the test command builds and checks the native one,
x86_64 Linux, every time, and the others only where their executables are built already (a cold
build of each costs minutes of two cores: docs/testing.md). The release workflow checks all four
on the very wheels it uploads: WHEELMERGE_STATIC_DIST names the directory of scripts/static/wheels.sh's
output, and WHEELMERGE_STATIC_TARGETS=all (or a comma-separated list of zig targets) chooses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT, STATIC_TAGS as TAGS, DemoWheels, clean_env, run, static_targets, tool_python
from test_backend import uv  # noqa: F401  (the fixture)
from test_licenses import assert_licenses_in_sdist, assert_licenses_in_wheel
from test_own_wheel import in_root

STATIC = ROOT / "scripts" / "static"
LINUX = {"x86_64": "x86_64-linux-musl", "aarch64": "aarch64-linux-musl"}
MACOS = {"x86_64": "x86_64-macos.10.15", "arm64": "aarch64-macos.11.0"}
CHOSEN = static_targets()
LINUX_CHOSEN = sorted(arch for arch, target in LINUX.items() if target in CHOSEN)
MACOS_CHOSEN = sorted(arch for arch, target in MACOS.items() if target in CHOSEN)


@dataclass(frozen=True)
class Built:
    wheels: dict[str, Path]  # by zig target
    sdist: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The chosen targets' wheels and the sdist: those of WHEELMERGE_STATIC_DIST (a release's
    dist/), else made by the script a release runs (the static builds are cached by source key
    under ~/.cache/wheelmerge/static; a cold build takes several minutes a target)."""
    given = os.environ.get("WHEELMERGE_STATIC_DIST")
    if given:
        paths = sorted(Path(given).resolve().iterdir())
    else:
        out = tmp_path_factory.mktemp("dist")
        paths = [Path(p) for p in run(["bash", STATIC / "wheels.sh", out, *CHOSEN], timeout=5400).stdout.split()]
    wheels = {}
    for target in CHOSEN:
        found = [p for p in paths if p.name.endswith(f"-{TAGS[target]}.whl")]
        assert len(found) == 1, f"expected one wheel tagged {TAGS[target]} among {[p.name for p in paths]}"
        wheels[target] = found[0]
    sdists = [p for p in paths if p.name.endswith(".tar.gz")]
    assert len(sdists) == 1, f"expected one sdist among {[p.name for p in paths]}"
    return Built(wheels, sdists[0])


def executable_of(wheel: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as z:
        path = dest / "wheelmerge"
        path.write_bytes(z.read("wheelmerge/_bin/wheelmerge"))
        mode = z.getinfo("wheelmerge/_bin/wheelmerge").external_attr >> 16
    assert mode & 0o111, f"{wheel.name}: the executable is not marked executable ({oct(mode)})"
    path.chmod(0o755)
    return path


def test_the_wheels_are_named_for_their_platforms(built: Built) -> None:
    for target, wheel in built.wheels.items():
        assert wheel.name.startswith("wheelmerge") and wheel.name.endswith(f"-py3-none-{TAGS[target]}.whl")
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            wheel_file = next(n for n in names if n.endswith(".dist-info/WHEEL"))
            tags = [line.split(": ", 1)[1] for line in z.read(wheel_file).decode().splitlines()
                    if line.startswith("Tag: ")]
        assert tags == [f"py3-none-{t}" for t in TAGS[target].split(".")], tags
        assert [n for n in names if "/_bin/" in n] == ["wheelmerge/_bin/wheelmerge"], names


@pytest.mark.parametrize("arch", LINUX_CHOSEN)
def test_the_linux_executables_are_static(built: Built, arch: str, tmp_path: Path) -> None:
    exe = executable_of(built.wheels[LINUX[arch]], tmp_path)
    header = run(["readelf", "-h", exe]).stdout
    assert {"x86_64": "Advanced Micro Devices X86-64", "aarch64": "AArch64"}[arch] in header
    program_headers = run(["readelf", "-lW", exe]).stdout
    assert "INTERP" not in program_headers, program_headers
    dynamic = run(["readelf", "-dW", exe]).stdout
    assert "NEEDED" not in dynamic, dynamic


@pytest.mark.parametrize("arch", LINUX_CHOSEN)
def test_auditwheel_show_agrees_with_the_tags(built: Built, arch: str) -> None:
    wheel = built.wheels[LINUX[arch]]
    shown = " ".join(run([tool_python(), "-m", "auditwheel", "show", wheel]).stdout.split())
    # auditwheel finds no libc in a static executable, so it takes it for glibc and names the
    # oldest policy: any manylinux_2_N with N <= 17 means the manylinux_2_17 tag is allowed.
    policy = re.search(r'is consistent with the following platform tag: "manylinux_2_(\d+)_(\w+)"', shown)
    assert policy and int(policy[1]) <= 17 and policy[2] == arch, shown
    assert "The wheel requires no external shared libraries!" in shown, shown
    assert "references no external versioned symbols" in shown, shown


def install_target(built: Built, tmp_path: Path, command: list[str | Path]) -> str:
    """Installs wheelmerge-cuda with `command` (a pip or uv install, to which a find-links
    directory holding every built wheel, `--target` and the requirement are added); returns the
    installed wheel's WHEEL file."""
    links = tmp_path / "links"
    links.mkdir()
    for wheel in built.wheels.values():
        shutil.copy2(wheel, links / wheel.name)
    target = tmp_path / "target"
    run([*command, "--no-index", "--find-links", links, "--target", target, "wheelmerge-cuda"],
        env=clean_env({"PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"}))
    return next(target.glob("*.dist-info/WHEEL")).read_text()


@pytest.mark.parametrize("platform", [f"{tag}_{arch}" for arch in LINUX_CHOSEN
                                      for tag in ("manylinux2014", "manylinux_2_17", "musllinux_1_1")])
def test_pip_reads_every_tag_of_the_compressed_set(built: Built, platform: str, tmp_path: Path) -> None:
    """pip's --platform is one exact tag: each of the file name's tags is found."""
    arch = "aarch64" if platform.endswith("aarch64") else "x86_64"
    installed = install_target(built, tmp_path, [tool_python(), "-m", "pip", "install", "--only-binary", ":all:",
                                                 "--platform", platform, "--python-version", "3.9"])
    assert f"Tag: py3-none-manylinux_2_17_{arch}" in installed and f"musllinux_1_1_{arch}" in installed


@pytest.mark.parametrize("platform", [p for p in ("x86_64-manylinux_2_17", "x86_64-manylinux_2_31",
                                                   "x86_64-unknown-linux-gnu", "x86_64-unknown-linux-musl",
                                                   "aarch64-manylinux_2_28", "aarch64-unknown-linux-musl")
                                      if p.split("-", 1)[0] in LINUX_CHOSEN])
def test_uv_picks_the_one_wheel_for_glibc_and_musl_systems(built: Built, platform: str, uv: Path,  # noqa: F811
                                                           tmp_path: Path) -> None:
    """uv's --python-platform stands for a whole system (every tag it accepts, newest glibc or
    musl first): the one Linux wheel of the architecture is chosen on glibc and musl alike."""
    arch = platform.split("-", 1)[0]
    installed = install_target(built, tmp_path, [uv, "pip", "install", "--python", tool_python(),
                                                 "--python-platform", platform, "--python-version", "3.9"])
    assert f"Tag: py3-none-manylinux_2_17_{arch}" in installed and f"musllinux_1_1_{arch}" in installed


def merge_in(root: Path, exe: Path, demo_wheels: DemoWheels) -> bytes:
    """Merges the example's two builds with `exe` copied into the empty `root`, chrooted there
    (a mount namespace of its own: no /proc); returns the merged wheel's bytes."""
    (root / "in").mkdir(parents=True)
    (root / "out").mkdir()
    shutil.copy2(exe, root / "wheelmerge")
    for wheel in (demo_wheels.cu12, demo_wheels.cu13):
        shutil.copy2(wheel, root / "in" / wheel.name)
    argv = ["/wheelmerge", "merge", f"/in/{demo_wheels.cu12.name}", f"/in/{demo_wheels.cu13.name}", "-o", "/out",
            "--json"]
    result = run(["unshare", "--mount", "--fork", "chroot", root, *argv],
                 env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SOURCE_DATE_EPOCH": "315532800"})
    return (root / "out" / Path(json.loads(result.stdout)["output"]).name).read_bytes()


def native_merge(wheelmerge_bin: Path, demo_wheels: DemoWheels, out: Path) -> bytes:
    result = run([wheelmerge_bin, "merge", demo_wheels.cu12, demo_wheels.cu13, "-o", out, "--json"],
                 env=clean_env({"SOURCE_DATE_EPOCH": "315532800"}))
    return Path(json.loads(result.stdout)["output"]).read_bytes()


def test_x86_64_merges_in_an_empty_root_like_the_native_build(built: Built, demo_wheels: DemoWheels,
                                                               wheelmerge_bin: Path, tmp_path: Path) -> None:
    assert os.geteuid() == 0, "chroot needs root"
    exe = executable_of(built.wheels["x86_64-linux-musl"], tmp_path / "exe")
    root = tmp_path / "root"
    merged = merge_in(root, exe, demo_wheels)
    assert sorted(p.name for p in root.iterdir()) == ["in", "out", "wheelmerge"]  # nothing else was there
    assert merged == native_merge(wheelmerge_bin, demo_wheels, tmp_path / "native")


@pytest.mark.parametrize("arch", [a for a in LINUX_CHOSEN if a != "x86_64"])
def test_aarch64_merges_under_qemu_like_the_native_build(built: Built, demo_wheels: DemoWheels, arch: str,
                                                          wheelmerge_bin: Path, tmp_path: Path) -> None:
    """Under qemu-user (scripts/setup.sh installs it). This machine has no aarch64 libc or
    loader at all, so only a static executable can start here."""
    assert shutil.which("qemu-aarch64"), "qemu-user is missing: scripts/setup.sh installs it"
    exe = executable_of(built.wheels[LINUX[arch]], tmp_path / "exe")
    assert not Path("/lib/ld-linux-aarch64.so.1").exists()
    result = run(["qemu-aarch64", exe, "merge", demo_wheels.cu12, demo_wheels.cu13, "-o", tmp_path / "out", "--json"],
                 env=clean_env({"SOURCE_DATE_EPOCH": "315532800"}))
    merged = Path(json.loads(result.stdout)["output"]).read_bytes()
    assert merged == native_merge(wheelmerge_bin, demo_wheels, tmp_path / "native")
    version = run(["qemu-aarch64", exe, "--version"]).stdout
    assert version == run([wheelmerge_bin, "--version"]).stdout


@pytest.fixture(scope="module")
def bullseye_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert os.geteuid() == 0, "installing into a clean root needs chroot, so root"
    tarball = Path(run(["bash", ROOT / "scripts" / "clean-root.sh", "bullseye"], timeout=1800).stdout.split()[-1])
    root = tmp_path_factory.mktemp("bullseye")
    with tarfile.open(tarball) as tar:
        tar.extractall(root, filter="fully_trusted")
    return root


def test_pip_of_debian_11_installs_it_and_it_merges_the_same(built: Built, bullseye_root: Path,
                                                             demo_wheels: DemoWheels, wheelmerge_bin: Path,
                                                             tmp_path: Path) -> None:
    libc = in_root(bullseye_root, "ldd --version | head -1").stdout
    assert "2.31" in libc, libc
    assert not list((bullseye_root / "usr" / "bin").glob("*gcc*")), "the root has a compiler"
    wheel = built.wheels["x86_64-linux-musl"]
    inputs = bullseye_root / "tmp" / "in"
    inputs.mkdir(parents=True)
    for path in (wheel, demo_wheels.cu12, demo_wheels.cu13):
        shutil.copy2(path, inputs / path.name)
    result = in_root(bullseye_root, f"""
        export SOURCE_DATE_EPOCH=315532800
        python3 -m venv /opt/wm
        /opt/wm/bin/pip --version
        /opt/wm/bin/pip install --no-index --disable-pip-version-check -q /tmp/in/{wheel.name}
        /opt/wm/bin/wheelmerge merge /tmp/in/{demo_wheels.cu12.name} /tmp/in/{demo_wheels.cu13.name} -o /tmp/out \
            --json >/tmp/merge.json
        /opt/wm/bin/python -m wheelmerge verify /tmp/out/*.whl
    """)
    assert result.stdout.startswith("pip 20.3"), result.stdout
    merged = bullseye_root / "tmp" / "out" / Path(json.loads((bullseye_root / "tmp" / "merge.json").read_text())["output"]).name
    assert merged.read_bytes() == native_merge(wheelmerge_bin, demo_wheels, tmp_path / "native")


@dataclass(frozen=True)
class MachO:
    cputype: int
    filetype: int
    minos: int | None  # the minimum macOS, 0xXXYYZZ
    dylibs: list[str]  # LC_LOAD_DYLIB
    signed: bool  # LC_CODE_SIGNATURE: arm64 macOS runs no unsigned executable (an ad-hoc signature does)


def macho(data: bytes) -> MachO:
    """The header and load commands of a thin 64-bit little-endian Mach-O file."""
    magic, cputype, _sub, filetype, ncmds, _size, _flags = struct.unpack_from("<IiiIIII", data, 0)
    assert magic == 0xFEEDFACF, f"not a 64-bit little-endian Mach-O file: {magic:#x}"
    offset, minos, dylibs, signed = 32, None, [], False
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, offset)
        if cmd == 0x32:  # LC_BUILD_VERSION: platform, minos, sdk, ntools
            platform, minos = struct.unpack_from("<II", data, offset + 8)
            assert platform == 1, f"LC_BUILD_VERSION platform {platform}, not macOS"
        elif cmd == 0x24:  # LC_VERSION_MIN_MACOSX: version, sdk
            (minos,) = struct.unpack_from("<I", data, offset + 8)
        elif cmd == 0xC:  # LC_LOAD_DYLIB: the name's offset in the command
            (name_at,) = struct.unpack_from("<I", data, offset + 8)
            dylibs.append(data[offset + name_at:offset + cmdsize].split(b"\0", 1)[0].decode())
        elif cmd == 0x1D:
            signed = True
        offset += cmdsize
    return MachO(cputype, filetype, minos, dylibs, signed)


@pytest.mark.parametrize("arch", MACOS_CHOSEN)
def test_the_macos_executables_are_mach_o_for_their_cpu(built: Built, arch: str) -> None:
    with zipfile.ZipFile(built.wheels[MACOS[arch]]) as z:
        found = macho(z.read("wheelmerge/_bin/wheelmerge"))
    assert found.cputype == {"x86_64": 0x01000007, "arm64": 0x0100000C}[arch]
    assert found.filetype == 2  # MH_EXECUTE
    assert found.minos == {"x86_64": 0x000A0F00, "arm64": 0x000B0000}[arch], hex(found.minos or 0)
    assert found.dylibs == ["/usr/lib/libSystem.B.dylib"], found.dylibs  # libc++ is linked in
    assert found.signed or arch == "x86_64"


def test_every_wheel_and_the_sdist_carry_the_licenses(built: Built) -> None:
    for wheel in built.wheels.values():
        assert_licenses_in_wheel(wheel)
    assert_licenses_in_sdist(built.sdist)


@pytest.mark.parametrize("how", ["pip-wheel", "uv-build"])
def test_the_backend_runs_from_the_static_wheel(built: Built, how: str, tmp_path: Path) -> None:
    """test_backend's check that settings reach the inner backend, with the build environment's
    wheelmerge-cuda taken from the static x86_64 wheel (WHEELMERGE_WHEEL puts it in the
    frontends' --find-links; PIP_ONLY_BINARY and UV_NO_BUILD_PACKAGE forbid building it), so
    nothing of wheelmerge is compiled; the inner backend (recpkg) is pure Python."""
    result = run([tool_python(), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", tmp_path / "inner",
                  f"{ROOT}/tests/integration/building/test_backend.py::test_inner_settings_reach_the_inner_backend[{how}]"],
                 env=clean_env({"WHEELMERGE_WHEEL": str(built.wheels["x86_64-linux-musl"]), "PIP_ONLY_BINARY": "wheelmerge-cuda",
                                "UV_NO_BUILD_PACKAGE": "wheelmerge-cuda"}), cwd=ROOT / "tests" / "integration", check=False, timeout=1800)
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-4000:] + result.stderr[-2000:]
