"""The licenses shipped with wheelmerge: LICENSE, THIRD_PARTY_NOTICES.md and the package metadata.

- LICENSE is the Apache License 2.0 (Debian's copy of the text, byte for byte), the license
  pyproject.toml declares (PEP 639 `license`), and pyproject's `license-files` are LICENSE and
  THIRD_PARTY_NOTICES.md.
- THIRD_PARTY_NOTICES.md has a section for every library of scripts/static/sources.lock, for ISA-L,
  for each header-only library and package CMakeLists.txt finds, and for the runtime the zig
  toolchain links; each section's version is the pinned one and its license text equals the
  license file of the pinned source (compared with white space normalised): the tarballs that
  scripts/static/fetch.sh fetches, python-isal's source distribution (scripts/isal.sh's pin), the
  ziglang wheel that scripts/static/zig.sh installs, and the copyright files of the Debian
  packages that scripts/setup.sh installs. The table at the top agrees with the sections, and
  every SPDX expression is one that packaging accepts.

The suites of the built wheels reuse `assert_licenses_in_wheel` and `assert_licenses_in_sdist`
(test_backend.py, test_own_wheel.py): the two files are in the wheel's `.dist-info/licenses/`
and the sdist's root, named by `License-File:` lines of Metadata-Version 2.4.

On a fresh machine this downloads the pinned tarballs (fetch.sh: Debian's archive through apt),
python-isal's sdist and the ziglang wheel (the package index); all are cached after that.
"""

from __future__ import annotations

import email.parser
import hashlib
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.licenses import canonicalize_license_expression

from conftest import ROOT, run, tool_python

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LICENSE = ROOT / "LICENSE"
NOTICES = ROOT / "THIRD_PARTY_NOTICES.md"
LICENSE_FILES = ["LICENSE", "THIRD_PARTY_NOTICES.md"]
LOCK = ROOT / "scripts" / "static" / "sources.lock"
APACHE = Path("/usr/share/common-licenses/Apache-2.0")

# The license file in each tarball of sources.lock, below the tarball's one top directory. A
# library added to the lock needs its line here and its section in THIRD_PARTY_NOTICES.md.
PINNED_LICENSE_FILES = {"zlib": "LICENSE", "libzip": "LICENSE", "openssl": "LICENSE.txt", "fmt": "LICENSE.rst",
                        "yaml-cpp": "LICENSE", "utf8proc": "LICENSE.md"}
# The section of each library found in CMakeLists.txt (find_package, pkg_check_modules,
# find_library): what the executables are built from.
CMAKE_DEPENDENCIES = {"LIBZIP": "libzip", "OpenSSL": "OpenSSL", "ZLIB": "zlib", "fmt": "fmt",
                      "nlohmann_json": "nlohmann-json", "CLI11": "CLI11", "yaml-cpp": "yaml-cpp",
                      "tomlplusplus": "toml++", "UTF8PROC_LIBRARY": "utf8proc"}
CMAKE_NOT_LINKED = {"PkgConfig", "Threads", "doctest"}  # a build tool, the C library's threads, the unit tests
# The Debian packages whose copyright file is a section's license text: section -> package.
DEBIAN_COPYRIGHT = {"nlohmann-json": "nlohmann-json3-dev", "CLI11": "libcli11-dev", "toml++": "libtomlplusplus-dev",
                    "bzip2 (libbz2)": "libbz2-1.0"}
APPENDIX: dict[str, str] = {}  # license texts a section refers to: title -> the file it is copied from
# The shared libraries auditwheel copies into the manylinux wheel (file name up to the first
# "-"), each with the notices section whose license covers it.
BUNDLED = {"libzip": "libzip", "libcrypto": "OpenSSL", "libfmt": "fmt", "libyaml": "yaml-cpp",
           "libtomlplusplus": "toml++", "libutf8proc": "utf8proc", "libbz2": "bzip2 (libbz2)"}
ZIG_TARGET = "x86_64-linux-musl"


def normalized(text: str) -> str:
    return " ".join(text.split())


# --- THIRD_PARTY_NOTICES.md, read -------------------------------------------------------------

@dataclass
class Section:
    part: str                          # the "## " heading it is under
    name: str                          # the "### NAME VERSION" heading, less the version
    version: str
    fields: dict[str, str] = field(default_factory=dict)  # "- Key: value" lines, joined
    texts: list[str] = field(default_factory=list)        # the fenced blocks, as written


def notices(text: str | None = None) -> dict[str, Section]:
    """The sections of THIRD_PARTY_NOTICES.md by name."""
    text = NOTICES.read_text() if text is None else text
    sections: dict[str, Section] = {}
    part, current, block, key = "", None, None, None
    for line in text.splitlines():
        if block is not None:
            if line == "```":
                current.texts.append("\n".join(block) + "\n")
                block = None
            else:
                block.append(line)
        elif line.startswith("```"):
            assert current is not None, f"a fenced block outside a section: {line!r}"
            block = []
        elif line.startswith("## "):
            part, current = line[3:], None
        elif line.startswith("### "):
            heading = line[4:]
            name, _, version = heading.rpartition(" ") if part.startswith("Part ") else (heading, "", "")
            assert name not in sections, f"two sections named {name}"
            current = sections[name] = Section(part, name, version)
        elif current is not None and (m := re.match(r"- ([A-Za-z ]+): (.*)", line)):
            key = m[1]
            current.fields[key] = m[2]
        elif current is not None and key and line.startswith("  ") and line.strip():
            current.fields[key] += " " + line.strip()
        else:
            key = None
    assert block is None, "an unclosed fenced block"
    return sections


def table(text: str | None = None) -> list[tuple[str, str, str, str]]:
    """The rows of the table at the top: (library, version, SPDX expression, part)."""
    text = NOTICES.read_text() if text is None else text
    rows = re.findall(r"^\| ([^|]+) \| ([^|]+) \| `([^`|]+)` \| (\d) \|$", text, re.M)
    return [tuple(cell.strip() for cell in row) for row in rows]


def lock() -> list[tuple[str, str, str, str]]:
    """sources.lock's lines: (name, debian-source=version, tarball, sha256)."""
    rows = []
    for line in LOCK.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, package, tarball, sha256 = line.split()
            rows.append((name, package, tarball, sha256))
    return rows


def upstream_version(debian_version: str) -> str:
    """1:1.2.13.dfsg-1 -> 1.2.13, 9.1.0+ds1-2 -> 9.1.0, 3.0.20-1~deb12u2 -> 3.0.20."""
    version = debian_version.split(":", 1)[-1].rsplit("-", 1)[0]
    return re.sub(r"([.+~](dfsg|ds)\d*)+$", "", version)


def section_of(name: str) -> Section:
    found = {s.name.lower(): s for s in notices().values()}
    assert name.lower() in found, f"THIRD_PARTY_NOTICES.md has no section for {name} (sections: {sorted(found)})"
    return found[name.lower()]


def first_text(section: Section) -> str:
    assert section.texts, f"section {section.name} has no license text"
    return section.texts[0]


# --- LICENSE and the metadata ------------------------------------------------------------------

def test_license_is_the_apache_license() -> None:
    assert LICENSE.read_bytes() == APACHE.read_bytes(), "LICENSE is not /usr/share/common-licenses/Apache-2.0"
    text = normalized(LICENSE.read_text())
    assert text.startswith("Apache License Version 2.0, January 2004") and "END OF TERMS AND CONDITIONS" in text


def test_pyproject_declares_the_license_and_its_files() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "wheelmerge-cuda"
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == LICENSE_FILES
    for name in project["license-files"]:
        assert (ROOT / name).is_file(), name
    assert not any(c.startswith("License ::") for c in project.get("classifiers", [])), \
        "PEP 639: a license expression and license classifiers are not both given"


def test_the_wheel_cache_key_covers_the_license_files() -> None:
    # test_backend.py builds wheelmerge's wheel once per hash of its sources: the files that go
    # into the wheel's .dist-info/licenses/ are among them.
    import test_backend
    assert set(LICENSE_FILES) <= set(test_backend.WHEEL_SOURCES)


# --- THIRD_PARTY_NOTICES.md against what the builds use ----------------------------------------

def test_every_section_is_in_the_table_and_has_its_fields() -> None:
    sections = [s for s in notices().values() if s.part.startswith("Part ")]
    rows = table()
    assert [(s.name, s.version) for s in sections] == [(name, version) for name, version, _, _ in rows]
    for section, (_, _, spdx, part) in zip(sections, rows):
        assert section.part.startswith(f"Part {part}:"), (section.name, section.part, part)
        assert section.fields.get("SPDX license") == f"`{spdx}`", section
        assert canonicalize_license_expression(spdx) == spdx, spdx
        assert section.fields.get("Source") and "verbatim below" in section.fields.get("License text", ""), section
        assert len(section.texts) == 1, f"{section.name}: {len(section.texts)} license texts"


def test_every_pinned_library_has_its_section_and_version() -> None:
    for name, package, tarball, _ in lock():
        section = section_of({"openssl": "OpenSSL"}.get(name, name))
        assert section.part.startswith("Part 1:"), section
        assert section.version == upstream_version(package.split("=", 1)[1]), (name, package, section.version)
        assert f"`{tarball}`" in section.fields["Source"], section.fields["Source"]
        assert name in PINNED_LICENSE_FILES, f"{name}: no license file named in PINNED_LICENSE_FILES"


def test_every_library_cmake_finds_has_a_section() -> None:
    cmake = (ROOT / "CMakeLists.txt").read_text()
    found = set(re.findall(r"^\s*find_package\((\S+)", cmake, re.M))
    found |= set(re.findall(r"^\s*pkg_check_modules\((\S+)", cmake, re.M))
    found |= set(re.findall(r"^\s*find_library\((\S+)", cmake, re.M))
    unknown = found - set(CMAKE_DEPENDENCIES) - CMAKE_NOT_LINKED
    assert not unknown, f"CMakeLists.txt finds {sorted(unknown)}: name their notices section in CMAKE_DEPENDENCIES"
    for dependency in found - CMAKE_NOT_LINKED:
        section_of(CMAKE_DEPENDENCIES[dependency])


@pytest.fixture(scope="module")
def pinned_sources() -> Path:
    """The directory scripts/static/fetch.sh fetches the pinned tarballs into (checked by sha256)."""
    return Path(run(["bash", ROOT / "scripts" / "static" / "fetch.sh"], timeout=1800).stdout.strip().splitlines()[-1])


def tar_member(tarball: Path, relative: str) -> str:
    with tarfile.open(tarball) as tar:
        tops = {m.name.split("/", 1)[0] for m in tar.getmembers()}
        assert len(tops) == 1, f"{tarball.name}: more than one top directory: {sorted(tops)}"
        name = f"{tops.pop()}/{relative}"
        member = tar.extractfile(name)
        assert member is not None, f"{tarball.name}: no {name}"
        return member.read().decode()


def test_pinned_libraries_license_texts_are_the_tarballs(pinned_sources: Path) -> None:
    for name, _, tarball, _ in lock():
        section = section_of({"openssl": "OpenSSL"}.get(name, name))
        text = tar_member(pinned_sources / tarball, PINNED_LICENSE_FILES[name])
        assert normalized(first_text(section)) == normalized(text), \
            f"{section.name}: the text differs from {PINNED_LICENSE_FILES[name]} of {tarball}"
        assert f"/{PINNED_LICENSE_FILES[name]}`" in section.fields["License text"], section.fields["License text"]


def isal_sdist() -> Path:
    """python-isal's source distribution as scripts/isal.sh pins it, downloaded if not cached."""
    script = (ROOT / "scripts" / "isal.sh").read_text()
    version = re.search(r"^version=(\S+)$", script, re.M)[1]
    sha256 = re.search(r"^sha256=([0-9a-f]{64})$", script, re.M)[1]
    cache = Path(os.environ.get("WHEELMERGE_CACHE") or Path.home() / ".cache" / "wheelmerge") / "isal"
    tarball = cache / f"isal-{version}.tar.gz"
    if not tarball.is_file() or hashlib.sha256(tarball.read_bytes()).hexdigest() != sha256:
        run([tool_python(), "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
             "--no-binary", ":all:", "--dest", cache, f"isal=={version}"], timeout=600)
    assert hashlib.sha256(tarball.read_bytes()).hexdigest() == sha256, f"{tarball}: not the sha256 of scripts/isal.sh"
    return tarball


def test_isal_license_text_is_the_sdist() -> None:
    tarball = isal_sdist()
    section = section_of("ISA-L")
    configure = tar_member(tarball, "src/isal/isa-l/configure.ac")
    assert re.search(r"AC_INIT\(\[libisal\],\s*\[" + re.escape(section.version) + r"\]", configure), section.version
    assert normalized(first_text(section)) == normalized(tar_member(tarball, "src/isal/isa-l/LICENSE"))
    assert f"`{tarball.name}`" in section.fields["Source"]


def dpkg_version(package: str) -> str:
    result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout, f"{package} is not installed (scripts/setup.sh installs it)"
    return result.stdout


def test_debian_packages_license_texts_are_their_copyright_files() -> None:
    for name, package in DEBIAN_COPYRIGHT.items():
        section = section_of(name)
        assert section.version == upstream_version(dpkg_version(package)), (name, package, dpkg_version(package))
        copyright_file = Path("/usr/share/doc") / package / "copyright"
        assert normalized(first_text(section)) == normalized(copyright_file.read_text()), f"{name}: {copyright_file}"
        assert f"`{copyright_file}`" in section.fields["License text"]
        assert f"`{package}` {dpkg_version(package)}" in section.fields["Source"], section.fields["Source"]
    for name, path in APPENDIX.items():
        assert normalized(first_text(notices()[name])) == normalized(Path(path).read_text()), name


@pytest.fixture(scope="module")
def zig_home() -> Path:
    """The pinned zig toolchain (scripts/static/zig.sh): its ziglang/ directory."""
    bin_dir = Path(run(["bash", ROOT / "scripts" / "static" / "zig.sh", ZIG_TARGET], timeout=1800).stdout.strip())
    return bin_dir.parent / "ziglang"


def test_zig_runtime_license_texts_are_the_toolchains(zig_home: Path) -> None:
    zig_version = re.search(r"^version=(\S+)$", (ROOT / "scripts" / "static" / "zig.sh").read_text(), re.M)[1]
    lib = zig_home / "lib"

    musl = section_of("musl")
    assert f'#define VERSION "{musl.version}"' in (lib / "libc/musl/src/internal/version.h").read_text()
    assert normalized(first_text(musl)) == normalized((lib / "libc/musl/COPYRIGHT").read_text())

    llvm = section_of("libc++, libc++abi, libunwind (LLVM)")
    libcpp = int(re.search(r"#\s*define _LIBCPP_VERSION (\d+)", (lib / "libcxx/include/__config").read_text())[1])
    assert llvm.version == f"{libcpp // 10000}.{libcpp // 100 % 100}.{libcpp % 100}", (llvm.version, libcpp)
    text = (lib / "libcxx/LICENSE.TXT").read_text()
    assert normalized(first_text(llvm)) == normalized(text)
    # What the section says of the other two files: the same text with the library's own name.
    for directory, library in (("libcxxabi", "libc++abi"), ("libunwind", "libunwind")):
        assert (lib / directory / "LICENSE.TXT").read_text() == text.replace(
            "The libc++ library is dual licensed", f"The {library} library is dual licensed"), directory

    runtime = section_of("zig's compiler_rt and C library functions")
    assert runtime.version == zig_version
    assert normalized(first_text(runtime)) == normalized((zig_home / "LICENSE").read_text())
    for section in (musl, llvm, runtime):
        assert f"`ziglang` {zig_version} wheel" in section.fields["Source"], section.fields["Source"]


# --- helpers for the suites of the built wheel and sdist ---------------------------------------

def _metadata(text: str) -> email.message.Message:
    return email.parser.Parser().parsestr(text, headersonly=True)


def _assert_license_metadata(metadata: email.message.Message, where: str) -> None:
    version = tuple(int(p) for p in metadata["Metadata-Version"].split("."))
    assert version >= (2, 4), f"{where}: Metadata-Version {metadata['Metadata-Version']}, License-File needs 2.4"
    assert metadata["Name"] == "wheelmerge-cuda", f"{where}: Name {metadata['Name']}"
    assert metadata["License-Expression"] == "Apache-2.0", f"{where}: License-Expression {metadata['License-Expression']}"
    assert metadata.get_all("License-File") == LICENSE_FILES, f"{where}: License-File {metadata.get_all('License-File')}"


def assert_licenses_in_wheel(wheel: Path) -> None:
    """`wheel` (a wheelmerge-cuda wheel) names LICENSE and THIRD_PARTY_NOTICES.md in its METADATA
    and holds them, as in this tree and listed in RECORD, in `.dist-info/licenses/`."""
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (dist_info,) = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
        _assert_license_metadata(_metadata(z.read(f"{dist_info}/METADATA").decode()), f"{wheel.name} METADATA")
        record = {line.split(",", 1)[0] for line in z.read(f"{dist_info}/RECORD").decode().splitlines()}
        for name in LICENSE_FILES:
            member = f"{dist_info}/licenses/{name}"
            assert member in names, f"{wheel.name}: no {member}"
            assert z.read(member) == (ROOT / name).read_bytes(), f"{wheel.name}: {member} differs from {name}"
            assert member in record, f"{wheel.name}: {member} is not in RECORD"


def assert_licenses_in_sdist(sdist: Path) -> None:
    """`sdist` (a wheelmerge-cuda source distribution) names LICENSE and THIRD_PARTY_NOTICES.md in
    its PKG-INFO and holds them, as in this tree, at its root."""
    with tarfile.open(sdist) as tar:
        (top,) = {m.name.split("/", 1)[0] for m in tar.getmembers()}
        _assert_license_metadata(_metadata(tar.extractfile(f"{top}/PKG-INFO").read().decode()), f"{sdist.name} PKG-INFO")
        for name in LICENSE_FILES:
            member = tar.extractfile(f"{top}/{name}")
            assert member is not None and member.read() == (ROOT / name).read_bytes(), f"{sdist.name}: {top}/{name}"


def assert_bundled_libraries_noticed(libraries: set[str]) -> None:
    """Every shared library auditwheel bundled (file names up to the first "-") has its notices
    section, and part 3 says what is bundled."""
    unknown = libraries - set(BUNDLED)
    assert not unknown, f"bundled without a notice: {sorted(unknown)} (add them to BUNDLED and THIRD_PARTY_NOTICES.md)"
    for library in libraries:
        section_of(BUNDLED[library])
    part3 = NOTICES.read_text().split("## Part 3:", 1)[1].split("\n## ", 1)[0]
    for library in libraries:
        assert BUNDLED[library].split(" ")[0].lower() in part3.lower() or library in part3, library


def test_the_helpers_see_a_wrong_wheel(tmp_path: Path) -> None:
    """assert_licenses_in_wheel passes on a wheel that holds the two files and fails on one whose
    notices are not this tree's, or whose METADATA does not name them."""
    import wheelgen

    def wheel(directory: str, notices: bytes, metadata: dict) -> Path:
        (tmp_path / directory).mkdir()
        licenses = {"licenses/LICENSE": LICENSE.read_bytes(), "licenses/THIRD_PARTY_NOTICES.md": notices}
        return wheelgen.build_wheel(tmp_path / directory / "wheelmerge_cuda-1.0-py3-none-any.whl",
                                    {"wheelmerge/__init__.py": b""}, name="wheelmerge-cuda", version="1.0",
                                    tags="py3-none-any", root_is_purelib=True, metadata_version="2.4",
                                    metadata=metadata, dist_info_files=licenses)

    named = {"License-Expression": "Apache-2.0", "License-File": LICENSE_FILES}
    assert_licenses_in_wheel(wheel("good", NOTICES.read_bytes(), named))
    with pytest.raises(AssertionError, match="differs from THIRD_PARTY_NOTICES.md"):
        assert_licenses_in_wheel(wheel("other-notices", b"# nothing\n", named))
    with pytest.raises(AssertionError, match="License-File"):
        assert_licenses_in_wheel(wheel("unnamed", NOTICES.read_bytes(), {"License-Expression": "Apache-2.0"}))
