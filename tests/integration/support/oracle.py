"""A differential oracle for wheels, independent of wheelmerge's code.

* ``input_views(path)``: how each mainstream consumer reads a wheel: Python's ``zipfile``,
  pypa/installer (RECORD validated, then installed into a scheme per directory), ``python -m
  wheel unpack`` and Info-ZIP ``unzip`` (listing and extraction). Each view maps the archive
  names it sees to their bytes, or records why the consumer failed.
* ``assert_consumers_agree(path)``: every consumer succeeds and sees the same member names with
  the same bytes. A wheel that two consumers read differently must never be accepted.
* ``assert_output_behaves(output, inputs_by_label)``: a merged wheel is read alike by every
  consumer, pip installs it, its requirements parse, and for every marker environment of a grid
  the requirements pip would install, with and without each label's extra, are exactly those
  of the matching input (or those every input shares).
"""

from __future__ import annotations

import collections
import dataclasses
import email.parser
import email.policy
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Iterable, Mapping

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[3]
TOOL_PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() \
    else sys.executable
UNZIP = shutil.which("unzip") or "/usr/bin/unzip"
CONSUMER_TIMEOUT_S = 120

CONSUMERS = ("zipfile", "installer", "wheel-unpack", "unzip")

# The marker environments the requirements are evaluated under.
PYTHON_VERSIONS = ("3.9", "3.10", "3.11", "3.12", "3.13")
PLATFORMS = {"linux": ("posix", "Linux"), "win32": ("nt", "Windows"), "darwin": ("posix", "Darwin")}
MACHINES = ("x86_64", "aarch64")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PIP_TARGET", "PIP_PREFIX",
                        "PIP_USER", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS")}
    env.update(PYTHONNOUSERSITE="1", PYTHONDONTWRITEBYTECODE="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_INPUT="1", LC_ALL="C.UTF-8")
    return env


@dataclasses.dataclass
class View:
    """What one consumer made of a wheel: ``files`` (archive name -> bytes) or ``error``."""

    consumer: str
    files: dict[str, bytes] | None = None
    error: str | None = None
    # Archive names whose bytes the consumer legitimately rewrites (installer: RECORD, scripts).
    rewritten: frozenset[str] = frozenset()

    @property
    def ok(self) -> bool:
        return self.error is None


def _walk(base: Path) -> tuple[dict[str, bytes], list[str]]:
    """Regular files under ``base`` (relative '/'-paths -> bytes) and anything else found."""
    files: dict[str, bytes] = {}
    odd: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(base).as_posix()
            mode = full.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue
            if stat.S_ISREG(mode):
                files[rel] = full.read_bytes()
            else:
                odd.append(f"{rel!r} (mode {oct(mode)})")
    return files, odd


def _zipfile_view(path: Path) -> View:
    try:
        with zipfile.ZipFile(path) as z:
            names = [i.filename for i in z.infolist()]
            dups = sorted({n for n in names if names.count(n) > 1})
            if dups:
                return View("zipfile", error=f"duplicate names {dups!r}")
            files = {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
            dirs_with_data = [i.filename for i in z.infolist() if i.is_dir() and i.file_size]
            if dirs_with_data:
                return View("zipfile", error=f"directory entries with data {dirs_with_data!r}")
        return View("zipfile", files=files)
    except Exception as e:  # noqa: BLE001 - any failure is the consumer refusing
        return View("zipfile", error=f"{type(e).__name__}: {e}")


def _dist_info(names: Iterable[str]) -> str | None:
    tops = {n.split("/", 1)[0] for n in names if "/" in n}
    found = sorted(t for t in tops if t.endswith(".dist-info"))
    return found[0] if len(found) == 1 else None


def _installer_view(path: Path, work: Path) -> View:
    """Installs with pypa/installer (after ``validate_record``) into one directory per scheme,
    then maps every installed file back to the archive name that installer put there."""
    try:
        from installer import install
        from installer.destinations import SchemeDictionaryDestination
        from installer.sources import WheelFile
        from installer.utils import parse_metadata_file
    except ImportError as e:  # pragma: no cover - the tools venv has installer
        return View("installer", error=f"installer not importable: {e}")
    schemes = ("purelib", "platlib", "headers", "scripts", "data")
    dest_dirs = {s: work / s for s in schemes}
    try:
        with WheelFile.open(path) as source:
            source.validate_record(validate_contents=True)
            names = [i.filename for i in source._zipfile.infolist() if not i.filename.endswith("/")]
            dist_info = source.dist_info_dir
            data_dir = source.data_dir
            wheel_text = source.read_dist_info("WHEEL")
            root_scheme = "purelib" if parse_metadata_file(wheel_text).get(
                "Root-Is-Purelib", "").strip().lower() == "true" else "platlib"
            destination = SchemeDictionaryDestination(
                {s: str(d) for s, d in dest_dirs.items()}, interpreter=TOOL_PYTHON,
                script_kind="posix", hash_algorithm="sha256", bytecode_optimization_levels=())
            install(source, destination, additional_metadata={})
    except Exception as e:  # noqa: BLE001
        return View("installer", error=f"{type(e).__name__}: {e}")

    # Where installer puts each archive member (its own rule: "{data}/{scheme}/rest" goes to
    # that scheme, everything else to the root scheme).
    target_of: dict[str, tuple[str, str]] = {}
    for name in names:
        if name.startswith(data_dir + "/"):
            rest = name[len(data_dir) + 1:]
            scheme, _, rel = rest.partition("/")
            target_of[name] = (scheme, rel)
        else:
            target_of[name] = (root_scheme, name)
    by_target: dict[tuple[str, str], list[str]] = {}
    for name, target in target_of.items():
        by_target.setdefault(target, []).append(name)
    # Schemes that share a directory in a real environment (purelib and platlib do on most
    # systems, and data's bin/ is the scripts directory on POSIX): compare as one tree.
    real: dict[tuple[str, str], list[str]] = {}
    for (scheme, rel), members in by_target.items():
        if scheme in ("purelib", "platlib"):
            key = ("lib", rel)
        elif scheme == "data" and rel.startswith("bin/"):
            key = ("scripts", rel[4:])
        else:
            key = (scheme, rel)
        real.setdefault(key, []).extend(members)
    clashes = sorted(sorted(m) for m in real.values() if len(m) > 1)
    if clashes:
        return View("installer", error=f"members installed to the same path: {clashes!r}")
    folded: dict[tuple[str, str], list[str]] = {}
    for (scheme, rel), members in real.items():
        folded.setdefault((scheme, rel.casefold()), []).extend(members)
    clashes = sorted(sorted(m) for m in folded.values() if len(m) > 1)
    if clashes:
        return View("installer", error=f"members installed to paths equal up to case: {clashes!r}")

    files: dict[str, bytes] = {}
    rewritten = {f"{dist_info}/RECORD"}
    for name, (scheme, rel) in target_of.items():
        full = dest_dirs.get(scheme, work / "unknown-scheme") / rel
        try:
            data = full.read_bytes()
        except OSError as e:
            return View("installer", error=f"{name!r} not installed at {full}: {e}")
        files[name] = data
        if scheme == "scripts":
            rewritten.add(name)  # installer rewrites '#!python' shebangs
    installed, odd = _walk(work)
    if odd:
        return View("installer", error=f"non-regular files installed: {odd}")
    return View("installer", files=files, rewritten=frozenset(rewritten))


def _wheel_unpack_view(path: Path, work: Path) -> View:
    r = subprocess.run([TOOL_PYTHON, "-m", "wheel", "unpack", "-d", str(work), str(path)],
                       capture_output=True, text=True, env=_env(), timeout=CONSUMER_TIMEOUT_S)
    if r.returncode != 0:
        return View("wheel-unpack", error=f"exit {r.returncode}: {(r.stdout + r.stderr).strip()[-2000:]}")
    roots = [p for p in work.iterdir()]
    if len(roots) != 1:
        return View("wheel-unpack", error=f"unpacked into {len(roots)} directories")
    files, odd = _walk(roots[0])
    if odd:
        return View("wheel-unpack", error=f"non-regular files unpacked: {odd}")
    return View("wheel-unpack", files=files)


def _unzip_view(path: Path, work: Path) -> View:
    listing = subprocess.run([UNZIP, "-Z1", str(path)], capture_output=True, env=_env(),
                             timeout=CONSUMER_TIMEOUT_S)
    if listing.returncode != 0:
        return View("unzip", error=f"unzip -Z1: exit {listing.returncode}: "
                                   f"{listing.stderr.decode('utf-8', 'backslashreplace')[-2000:]}")
    listed = [os.fsdecode(line) for line in listing.stdout.split(b"\n") if line]
    dups = sorted(n for n, count in collections.Counter(listed).items() if count > 1)
    if dups:
        return View("unzip", error=f"unzip -Z1 lists duplicate names {dups!r}")
    r = subprocess.run([UNZIP, "-qq", "-n", str(path), "-d", str(work)], capture_output=True,
                       env=_env(), stdin=subprocess.DEVNULL, timeout=CONSUMER_TIMEOUT_S)
    if r.returncode != 0:
        return View("unzip", error=f"unzip: exit {r.returncode}: "
                                   f"{(r.stdout + r.stderr).decode('utf-8', 'backslashreplace')[-2000:]}")
    files, odd = _walk(work)
    if odd:
        return View("unzip", error=f"non-regular files extracted: {odd}")
    listed_files = {n for n in listed if not n.endswith("/")}
    if listed_files != set(files):
        return View("unzip", error=f"listing and extraction differ: listed only "
                                   f"{sorted(listed_files - set(files))!r}, extracted only "
                                   f"{sorted(set(files) - listed_files)!r}")
    return View("unzip", files=files)


def input_views(path: str | Path) -> dict[str, View]:
    """How each consumer reads the wheel at ``path``: consumer name -> ``View``."""
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="oracle-") as tmp:
        base = Path(tmp)
        views = {"zipfile": _zipfile_view(path)}
        for name, fn in (("installer", _installer_view), ("wheel-unpack", _wheel_unpack_view),
                         ("unzip", _unzip_view)):
            work = base / name
            work.mkdir()
            try:
                views[name] = fn(path, work)
            except Exception as e:  # noqa: BLE001
                views[name] = View(name, error=f"{type(e).__name__}: {e}")
    return views


def _show(names: Iterable[str], limit: int = 8) -> str:
    names = sorted(names)
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(ascii(n) for n in names[:limit]) + more


def consumers_disagreement(path: str | Path) -> str | None:
    """Why the consumers do not read ``path`` alike, or None when they do."""
    views = input_views(path)
    failed = [f"{v.consumer} failed: {v.error}" for v in views.values() if not v.ok]
    if failed:
        return f"{Path(path).name}: " + "; ".join(failed)
    reference = views["zipfile"]
    problems = []
    for view in views.values():
        if view is reference:
            continue
        only_ref = set(reference.files) - set(view.files)
        only_view = set(view.files) - set(reference.files)
        if only_ref or only_view:
            problems.append(f"zipfile and {view.consumer} see different names: only zipfile "
                            f"[{_show(only_ref)}], only {view.consumer} [{_show(only_view)}]")
            continue
        differ = [n for n in reference.files
                  if n not in view.rewritten and reference.files[n] != view.files[n]]
        if differ:
            problems.append(f"zipfile and {view.consumer} read different bytes for [{_show(differ)}]")
    return f"{Path(path).name}: " + "; ".join(problems) if problems else None


def assert_consumers_agree(path: str | Path) -> None:
    """Every consumer reads ``path`` and all see the same member names and bytes."""
    problem = consumers_disagreement(path)
    assert problem is None, f"consumers disagree on {problem}"


# --------------------------------------------------------------------------------------------
# Requirements


def _metadata(path: Path) -> email.message.Message:
    with zipfile.ZipFile(path) as z:
        dist_info = _dist_info(z.namelist())
        assert dist_info, f"{path.name}: no single .dist-info directory"
        data = z.read(f"{dist_info}/METADATA")
    # Read as text, as pip and importlib.metadata do: the bytes parser would hand back non-ASCII
    # values as email.header.Header objects.
    return email.parser.Parser(policy=email.policy.compat32).parsestr(data.decode("utf-8"))


def requirements_of(path: str | Path) -> list[Requirement]:
    """Every ``Requires-Dist`` of a wheel, parsed (AssertionError naming one that does not)."""
    reqs = []
    for line in _metadata(Path(path)).get_all("Requires-Dist") or []:
        try:
            reqs.append(Requirement(line))
        except InvalidRequirement as e:
            raise AssertionError(f"{Path(path).name}: Requires-Dist {line!r} does not parse: {e}") from e
    return reqs


def provided_extras(path: str | Path) -> set[str]:
    return {canonicalize_name(e) for e in _metadata(Path(path)).get_all("Provides-Extra") or []}


def _key(r: Requirement) -> tuple:
    """A requirement without its marker, normalised (what pip would be asked to install)."""
    return (canonicalize_name(r.name), str(r.specifier), r.url or "", tuple(sorted(r.extras)))


def _identity(r: Requirement) -> tuple:
    return _key(r) + (str(r.marker) if r.marker else "",)


def marker_environments() -> list[dict[str, str]]:
    base = default_environment()
    envs = []
    for version in PYTHON_VERSIONS:
        for platform, (os_name, system) in PLATFORMS.items():
            for machine in MACHINES:
                env = dict(base)
                env.update(python_version=version, python_full_version=f"{version}.0",
                           sys_platform=platform, os_name=os_name, platform_system=system,
                           platform_machine=machine, implementation_name="cpython",
                           platform_python_implementation="CPython",
                           implementation_version=f"{version}.0")
                envs.append(env)
    return envs


def effective(reqs: Iterable[Requirement], env: Mapping[str, str], extras: Iterable[str]) -> set[tuple]:
    """What pip installs for ``reqs`` when asked for ``extras``: each marker is evaluated with
    ``extra`` set to "" and to each requested extra."""
    wanted = ["", *extras]
    out = set()
    for r in reqs:
        if r.marker is None or any(r.marker.evaluate({**env, "extra": e}) for e in wanted):
            out.add(_key(r))
    return out


def _fmt(keys: set[tuple]) -> str:
    def one(k):
        name, spec, url, extras = k
        return name + (f"[{','.join(extras)}]" if extras else "") + (f" @ {url}" if url else spec)
    return "{" + ", ".join(sorted(one(k) for k in keys)) + "}"


def assert_requirements_behave(output: str | Path, inputs_by_label: Mapping[str, str | Path]) -> None:
    """For every marker environment: without a label's extra the output installs exactly what
    every input shares; with extra L exactly what input L installs; with an extra of the
    inputs' own, the same again with that extra."""
    out_reqs = requirements_of(output)
    inputs = {label: requirements_of(p) for label, p in inputs_by_label.items()}
    shared_ids = set.intersection(*({_identity(r) for r in reqs} for reqs in inputs.values()))
    shared = [r for r in next(iter(inputs.values())) if _identity(r) in shared_ids]
    own_extras = set.intersection(*(provided_extras(p) for p in inputs_by_label.values()))
    out_extras = provided_extras(output)
    missing = own_extras - out_extras
    assert not missing, f"{Path(output).name}: Provides-Extra lost {sorted(missing)}"
    # An extra X of the inputs whose requirements differ per build becomes one extra per build,
    # X-LABEL (docs/interfaces.md, "Merged METADATA"): input L asked for X is the output asked
    # for L and X-LABEL.
    split = {x for x in own_extras if all(canonicalize_name(f"{x}-{label}") in out_extras for label in inputs)}
    for label, reqs in inputs.items():
        differing = [r for r in reqs if _identity(r) not in shared_ids]
        if any(r.marker is None or "extra" not in str(r.marker) for r in differing):
            assert canonicalize_name(label) in out_extras, \
                f"{Path(output).name}: requirements differ per build but no Provides-Extra: {label}"
    for env in marker_environments():
        where = (f"python_version={env['python_version']}, sys_platform={env['sys_platform']}, "
                 f"platform_machine={env['platform_machine']}")
        for extra_set in [()] + [(e,) for e in sorted(own_extras)]:
            got = effective(out_reqs, env, extra_set)
            want = effective(shared, env, extra_set)
            assert got == want, (
                f"{Path(output).name}: with extras {list(extra_set)} at {where} the output installs "
                f"{_fmt(got)}, but what every input shares is {_fmt(want)}")
            for label, reqs in inputs.items():
                asked = (label, *(canonicalize_name(f"{x}-{label}") if x in split else x for x in extra_set))
                got = effective(out_reqs, env, asked)
                want = effective(reqs, env, extra_set)
                assert got == want, (
                    f"{Path(output).name}: with extras {list(asked)} at {where} the output "
                    f"installs {_fmt(got)}, but input {label} installs {_fmt(want)}")


# --------------------------------------------------------------------------------------------
# Outputs


def pip_install_target(wheel: str | Path, target: str | Path) -> None:
    r = subprocess.run([TOOL_PYTHON, "-m", "pip", "install", "--no-deps", "--no-index", "--no-compile",
                        "--target", str(target), str(wheel)], capture_output=True, text=True,
                       env=_env(), timeout=CONSUMER_TIMEOUT_S)
    assert r.returncode == 0, f"pip install --target of {Path(wheel).name} failed:\n{r.stdout}{r.stderr}"


def assert_output_behaves(output: str | Path, inputs_by_label: Mapping[str, str | Path], *,
                          target: str | Path | None = None, requirements: bool = True) -> Path:
    """A merged wheel: the consumers agree on it, ``pip install --no-deps --target`` succeeds,
    every Requires-Dist parses and (with ``requirements``) the requirements behave like the
    inputs' under the marker grid. Returns the directory pip installed into (``target``, or a
    fresh temporary directory the caller owns)."""
    output = Path(output)
    assert_consumers_agree(output)
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="oracle-target-"))
    target = Path(target)
    pip_install_target(output, target)
    if requirements:
        assert_requirements_behave(output, inputs_by_label)
    else:
        requirements_of(output)
    return target


def dist_info_of(path: str | Path) -> str | None:
    with zipfile.ZipFile(path) as z:
        return _dist_info(z.namelist())


__all__ = ["View", "input_views", "consumers_disagreement", "assert_consumers_agree",
           "requirements_of", "effective", "marker_environments", "assert_requirements_behave",
           "assert_output_behaves", "pip_install_target", "dist_info_of"]
