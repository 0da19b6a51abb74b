#!/usr/bin/env python3
"""A differential sweep of fuzz corpora: every input the release ``wheelmerge`` accepts must be
read alike by every mainstream consumer, and every wheel it merges must behave like its inputs.

    tests/fuzz/oracle_sweep.py DIR_OR_FILE... [--harness HARNESS] [--wheelmerge PATH]
                               [--jobs N] [--out DIR] [--json PATH]

Each file is an input of one of the merge harnesses (``--harness``, else the name of the
directory holding it: ``build-fuzz/corpus/fuzz_zip``, ``tests/fuzz/regressions/fuzz_merge``):

- ``fuzz_zip``: the bytes, written as ``pkg-1.0-cp311-cp311-linux_x86_64.whl``, through
  ``wheelmerge verify``;
- ``fuzz_merge``: split at the first ``kWheelSeparator`` (fuzz_common.hpp) into
  ``pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl`` and ``.cu13.whl``, each through ``verify``,
  then both through ``wheelmerge merge``;
- ``fuzz_merge_valid``: the text description read as ``fuzz_merge_valid.cpp`` reads it, the two
  wheels written as it writes them (deflated at level 9, the engine's header fields, WHEEL and
  METADATA generated unless given, RECORD with true hashes), each through ``verify``, then
  merged with its ``--variant-file`` globs and ``--driver-fallback``, in both orders;
- ``fuzz_requirement``: the text as the one ``Requires-Dist`` of a cu12 wheel (built as for
  ``fuzz_merge_valid``), merged with a cu13 wheel without requirements. Texts holding CR or LF
  are no header value and are left out (counted).

Checks: an input ``verify`` accepts (exit 0) is read alike by Python's ``zipfile``,
pypa/installer with RECORD validation, ``wheel unpack`` and ``unzip``
(``oracle.consumers_disagreement``); a merge that succeeds writes exactly one wheel, which
``verify`` accepts, which passes ``oracle.assert_output_behaves`` against its inputs, and
(``fuzz_merge_valid``) the other input order writes the same bytes; (``fuzz_requirement``)
``verify`` accepts the requirement only where packaging parses it and can evaluate its marker as
pip does when it installs a wheel, and refuses one packaging accepts only for a documented
reason (``DOCUMENTED_REQUIREMENT_REFUSALS``); a merge never succeeds on
an input ``verify`` refuses; ``wheelmerge`` ends with 0, 2 (usage), 3 (invalid input) or
4 (conflict), never a signal or another code. Refusals are fine and counted by exit code.

Prints a summary; exits 1 when any check fails, after copying each failing input into
``--out`` (default ``build-fuzz/sweep-failures/``) as ``HARNESS/NAME`` with ``NAME.txt`` saying
what failed, ready for minimisation.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import email.parser
import email.policy
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration" / "support"))
import oracle  # noqa: E402
import wheelgen as wg  # noqa: E402
from packaging.requirements import InvalidRequirement, Requirement  # noqa: E402
from packaging.tags import sys_tags  # noqa: E402
from packaging.utils import InvalidWheelFilename  # noqa: E402
from packaging.utils import parse_wheel_filename as parse_wheel_filename_packaging  # noqa: E402

SUPPORTED_TAGS = frozenset(sys_tags())

HARNESSES = ("fuzz_zip", "fuzz_merge", "fuzz_merge_valid", "fuzz_requirement")
# kWheelSeparator in fuzz_common.hpp.
SEPARATOR = b"\n@@WHEELMERGE-FUZZ-NEXT-WHEEL@@\n"
ZIP_NAME = b"pkg-1.0-cp311-cp311-linux_x86_64.whl"
MERGE_NAMES = (b"pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl", b"pkg-1.0-cp311-cp311-linux_x86_64.cu13.whl")
# Exit codes of wheelmerge (README): 0 ok, 2 usage, 3 invalid input, 4 merge conflict.
REFUSALS = (2, 3, 4)
# The requirements wheelmerge refuses although packaging accepts them, by the words of each
# refusal: those requirement.hpp documents, and METADATA holding a NUL byte, which wheelmerge
# does not read as text.
DOCUMENTED_REQUIREMENT_REFUSALS = ("\\N{...} escape", "surrogate", "nested deeper than", "bytes long, longer than",
                                   "METADATA is not UTF-8 text")
COMMAND_TIMEOUT_S = 300
LAUNCH_RETRY_S = 180


# ---------------------------------------------------------------------------------------------
# fuzz_merge_valid's description format and wheel construction, as fuzz_merge_valid.cpp has them

DEFAULT_STEM = b"pkg-1.0-cp311-cp311-linux_x86_64"
PEP440 = re.compile(
    rb"v?(?:(?:[0-9]+)!)?(?:[0-9]+(?:\.[0-9]+)*)"
    rb"(?:[-_\.]?(?:alpha|a|beta|b|preview|pre|c|rc)[-_\.]?(?:[0-9]+)?)?"
    rb"(?:(?:-(?:[0-9]+))|(?:[-_\.]?(?:post|rev|r)[-_\.]?(?:[0-9]+)?))?"
    rb"(?:[-_\.]?(?:dev)[-_\.]?(?:[0-9]+)?)?"
    rb"(?:\+(?:[a-z0-9]+(?:[-_\.][a-z0-9]+)*))?", re.IGNORECASE)
TAG = re.compile(rb"[A-Za-z0-9_]+")


@dataclasses.dataclass
class Member:
    path: bytes
    content: bytes
    executable: bool = False


@dataclasses.dataclass
class Description:
    stem: bytes = DEFAULT_STEM
    globs: list[bytes] = dataclasses.field(default_factory=list)
    fallback: bool = False
    members: list[Member] = dataclasses.field(default_factory=list)


def parse_description(text: bytes) -> Description:
    """``parse()`` of fuzz_merge_valid.cpp: directives up to the first ``>>> `` line, then members."""
    d = Description()
    pos = 0
    while pos < len(text) and text[pos:pos + 4] != b">>> ":
        eol = text.find(b"\n", pos)
        line = text[pos:] if eol < 0 else text[pos:eol]
        pos = len(text) if eol < 0 else eol + 1
        if line[:6] == b"name: ":
            stem = line[6:]
            if stem and len(stem) <= 200 and b"/" not in stem and b"\0" not in stem and stem not in (b".", b".."):
                d.stem = stem
        elif line[:6] == b"glob: ":
            d.globs.append(line[6:])
        elif line == b"fallback":
            d.fallback = True
    while pos < len(text):
        eol = text.find(b"\n", pos)
        header = text[pos + 4:] if eol < 0 else text[pos + 4:eol]
        start = len(text) if eol < 0 else eol + 1
        nxt = text.find(b"\n>>> ", start - 1 if start > 0 else 0)
        end = len(text) if nxt < 0 else max(nxt, start)
        executable = header[:3] == b"+x "
        if executable:
            header = header[3:]
        d.members.append(Member(header, text[start:end], executable))
        pos = len(text) if nxt < 0 else nxt + 1
    return d


def _label_major(label: bytes) -> bool:
    return 3 <= len(label) <= 5 and label[:2] == b"cu" and label[2:].isdigit() and label[2:3] != b"0"


@dataclasses.dataclass
class WheelName:
    name: bytes
    version: bytes
    build: bytes
    python: list[bytes]
    abi: list[bytes]
    platform: list[bytes]

    def expanded_tags(self) -> list[bytes]:
        return sorted({b"-".join((p, a, q)) for p in self.python for a in self.abi for q in self.platform})


def parse_wheel_filename(filename: bytes) -> WheelName | None:
    """``wm::parse_wheel_filename``: None where it refuses the name."""
    if len(filename) <= 4 or not filename.endswith(b".whl"):
        return None
    stem = filename[:-4]
    dot = stem.rfind(b".")
    if dot >= 0 and _label_major(stem[dot + 1:]):
        stem = stem[:dot]
    parts = stem.split(b"-")
    if len(parts) not in (5, 6):
        return None
    build = parts[2] if len(parts) == 6 else b""
    if len(parts) == 6 and not build[:1].isdigit():
        return None
    w = WheelName(parts[0], parts[1], build, parts[-3].split(b"."), parts[-2].split(b"."), parts[-1].split(b"."))
    if not w.name or not w.version or not PEP440.fullmatch(w.version):
        return None
    if not all(TAG.fullmatch(t) for tags in (w.python, w.abi, w.platform) for t in tags):
        return None
    if any(_label_major(t) for t in w.platform):
        return None
    return w


def normalize_name(name: bytes) -> bytes:
    """``wm::normalize_name``: ASCII lower case, runs of "-_." as one "_"."""
    return re.sub(rb"[-_.]+", b"_", name).lower()


def record_row(*fields: bytes) -> bytes:
    """``wm::format_record_row``: fields of any bytes, quoted when they hold a comma, a quote, CR
    or LF (``wheelgen.render_record``'s csv writer leaves a lone CR unquoted and takes text)."""
    def field(f: bytes) -> bytes:
        return b'"' + f.replace(b'"', b'""') + b'"' if re.search(rb'[,"\r\n]', f) else f
    return b",".join(field(f) for f in fields) + b"\n"


def zip_bytes(members: list[Member]) -> bytes:
    """What ``wm::ZipWriter::add_generated`` and ``finish`` write: raw deflate at level 9,
    1980-01-01 00:00, the UTF-8 flag for names with bytes >= 0x80, made by Unix, mode 0644 or
    0755 with S_IFREG, no extra fields (the inputs are far below the ZIP64 limits)."""
    out, central = bytearray(), bytearray()
    date, tm = (0 << 9) | (1 << 5) | 1, 0
    for m in members:
        z = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY)
        packed = z.compress(m.content) + z.flush()
        crc = zlib.crc32(m.content)
        flags = 0x0800 if any(c >= 0x80 for c in m.path) else 0
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, 8, tm, date, crc, len(packed), len(m.content),
                           len(m.path), 0) + m.path + packed
        mode = 0o100755 if m.executable else 0o100644
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 20, 20, flags, 8, tm, date, crc,
                               len(packed), len(m.content), len(m.path), 0, 0, 0, 0, mode << 16, offset) + m.path
    cd_offset = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), cd_offset, 0)
    return bytes(out)


def build_wheel(d: Description, label: bytes, directory: Path) -> Path:
    """``build()`` of fuzz_merge_valid.cpp: ``directory/{stem}.{label}.whl``."""
    filename = d.stem + b"." + label + b".whl"
    name = parse_wheel_filename(filename) or parse_wheel_filename(DEFAULT_STEM + b".whl")
    dist_info = normalize_name(name.name) + b"-" + name.version + b".dist-info"
    members, has_wheel, has_metadata = [], False, False
    for m in d.members:
        path = m.path.replace(b"$DI", dist_info)
        if path == dist_info + b"/RECORD":
            continue
        has_wheel |= path == dist_info + b"/WHEEL"
        has_metadata |= path == dist_info + b"/METADATA"
        members.append(Member(path, m.content, m.executable))
    if not has_wheel:
        wheel = b"Wheel-Version: 1.0\nGenerator: fuzz_merge_valid\nRoot-Is-Purelib: false\n"
        wheel += b"".join(b"Tag: " + t + b"\n" for t in name.expanded_tags())
        if name.build:
            wheel += b"Build: " + name.build + b"\n"
        members.append(Member(dist_info + b"/WHEEL", wheel))
    if not has_metadata:
        members.append(Member(dist_info + b"/METADATA",
                              b"Metadata-Version: 2.1\nName: " + name.name + b"\nVersion: " + name.version + b"\n"))
    record = b"".join(record_row(m.path, wg.record_hash(m.content).encode(), str(len(m.content)).encode())
                     for m in members)
    record += record_row(dist_info + b"/RECORD", b"", b"")
    members.append(Member(dist_info + b"/RECORD", record))
    path = Path(os.fsdecode(bytes(directory) + b"/" + filename))
    path.write_bytes(zip_bytes(members))
    return path


# ---------------------------------------------------------------------------------------------
# The sweep


@dataclasses.dataclass
class Failure:
    input: Path
    harness: str
    what: str


@dataclasses.dataclass
class Summary:
    harness: str
    inputs: int = 0
    wheels_verified: int = 0
    wheels_accepted: int = 0
    inputs_accepted: int = 0          # every wheel of the input accepted by verify
    refused: collections.Counter = dataclasses.field(default_factory=collections.Counter)  # verify exit codes
    merges: int = 0
    merge_refused: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    outputs: int = 0
    # fuzz_requirement: texts that are no single header value (CR or LF in them), and those
    # wheelmerge and packaging both accept, both refuse, or that only packaging accepts for a
    # documented reason.
    not_a_header_value: int = 0
    not_an_argument: int = 0  # fuzz_merge_valid: a --variant-file glob holding NUL
    requirement_verdicts: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    # Outputs whose tags this interpreter does not support: pip refuses them here, so they are
    # checked without `pip install` (consumers, installer, requirements).
    outputs_not_installable_here: int = 0
    oracle_runs: int = 0
    failures: list[Failure] = dataclasses.field(default_factory=list)
    seconds: float = 0.0

    def add(self, other: Summary) -> None:
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, (int, float)) and f.name != "seconds":
                setattr(self, f.name, mine + theirs)
            elif isinstance(mine, (collections.Counter, list)):
                mine += theirs

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["refused"] = {str(k): v for k, v in sorted(self.refused.items())}
        d["merge_refused"] = {str(k): v for k, v in sorted(self.merge_refused.items())}
        d["requirement_verdicts"] = dict(sorted(self.requirement_verdicts.items()))
        d["failures"] = [{"input": str(f.input), "harness": f.harness, "what": f.what} for f in self.failures]
        return d


def _run(command: list) -> subprocess.CompletedProcess:
    """Runs ``command``; while the binary cannot be started (it is being relinked: missing,
    not yet executable, busy), waits and tries again for up to LAUNCH_RETRY_S."""
    args = [os.fsencode(c) if isinstance(c, (str, Path)) else c for c in command]
    deadline = time.monotonic() + LAUNCH_RETRY_S
    while True:
        try:
            return subprocess.run(args, capture_output=True, timeout=COMMAND_TIMEOUT_S)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def _tail(r: subprocess.CompletedProcess, n: int = 600) -> str:
    """The command's messages, cut in the middle when long."""
    text = (r.stderr + r.stdout).decode("utf-8", "backslashreplace").strip()
    return text if len(text) <= n else text[:n // 2] + " [...] " + text[-n // 2:]


def _supported_here(wheel: Path) -> bool:
    """Whether pip would install ``wheel`` on this interpreter (one of its tags is supported)."""
    try:
        _, _, _, tags = parse_wheel_filename_packaging(wheel.name)
    except InvalidWheelFilename:
        return False
    return not tags.isdisjoint(SUPPORTED_TAGS)


class Sweeper:
    def __init__(self, wheelmerge: Path):
        self.wheelmerge = Path(wheelmerge)
        self._verdicts: dict[bytes, str | None] = {}  # consumers_disagreement by wheel digest
        self._lock = threading.Lock()

    def consumers(self, wheel: Path) -> str | None:
        """consumers_disagreement, once per distinct wheel content and file name."""
        key = hashlib.sha256(wheel.read_bytes() + b"\0" + os.fsencode(wheel.name)).digest()
        with self._lock:
            if key in self._verdicts:
                return self._verdicts[key]
        verdict = oracle.consumers_disagreement(wheel)
        with self._lock:
            self._verdicts[key] = verdict
        return verdict

    def verify(self, wheel: Path) -> tuple[int, str]:
        r = _run([self.wheelmerge, "verify", wheel])
        return r.returncode, _tail(r)

    def merge(self, inputs: list[Path], out: Path, options: list[bytes]) -> tuple[int, str, list[Path]]:
        out.mkdir(parents=True, exist_ok=True)
        r = _run([self.wheelmerge, "merge", *options, "-o", out, "--", *inputs])
        return r.returncode, _tail(r), sorted(out.iterdir())

    def requirement_verdict(self, wheel: Path, accepted: bool, summary: Summary) -> list[str]:
        """wheelmerge's verdict on the one Requires-Dist of ``wheel`` against packaging's, on
        the value Python's email parser reads from METADATA (as importlib.metadata does)."""
        with zipfile.ZipFile(wheel) as z:
            raw = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA")))
        try:
            values = email.parser.Parser(policy=email.policy.compat32).parsestr(raw.decode("utf-8"))
            values = values.get_all("Requires-Dist") or []
        except UnicodeDecodeError:
            values = None
        packaging_accepts = values is not None and len(values) == 1
        why_not = "" if packaging_accepts else "not one Requires-Dist value"
        if packaging_accepts:
            try:
                requirement = Requirement(values[0])
                # What pip does with a Requires-Dist, even with --no-deps: evaluate its marker
                # with `extra` set. Variables defined only in lock files (`extras`,
                # `dependency_groups`) raise there, and pip fails to install the wheel.
                if requirement.marker is not None:
                    requirement.marker.evaluate({"extra": ""})
            except InvalidRequirement as e:
                packaging_accepts, why_not = False, f"packaging refuses it: {e}"
            except Exception as e:  # noqa: BLE001
                packaging_accepts, why_not = False, f"its marker cannot be evaluated: {type(e).__name__}: {e}"
        if accepted and not packaging_accepts:
            summary.requirement_verdicts["only wheelmerge accepts"] += 1
            return [f"verify accepts Requires-Dist {values!r}, but {why_not}"]
        if accepted:
            summary.requirement_verdicts["both accept"] += 1
        elif not packaging_accepts:
            summary.requirement_verdicts["both refuse"] += 1
        else:
            _, why = self.verify(wheel)
            if not any(reason in why for reason in DOCUMENTED_REQUIREMENT_REFUSALS):
                summary.requirement_verdicts["only packaging accepts"] += 1
                return [f"verify refuses Requires-Dist {values[0]!r}, which packaging accepts: {why}"]
            summary.requirement_verdicts["only packaging accepts, as documented"] += 1
        return []

    def sweep_one(self, harness: str, data: bytes, summary: Summary) -> list[str]:
        """The problems found with one corpus input (empty when every check holds)."""
        problems: list[str] = []
        with tempfile.TemporaryDirectory(prefix="wm-sweep-") as tmp:
            work = Path(tmp)
            options: list[bytes] = []
            if harness == "fuzz_zip":
                wheels = [work / os.fsdecode(ZIP_NAME)]
                wheels[0].write_bytes(data)
            elif harness == "fuzz_merge":
                first, sep, second = data.partition(SEPARATOR)
                wheels = [work / os.fsdecode(n) for n in MERGE_NAMES]
                wheels[0].write_bytes(first)
                wheels[1].write_bytes(second if sep else b"")
            elif harness == "fuzz_requirement":
                if b"\r" in data or b"\n" in data:
                    summary.not_a_header_value += 1
                    return problems
                metadata = b"Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n"
                (work / "cu12").mkdir()
                (work / "cu13").mkdir()
                wheels = [build_wheel(Description(members=[Member(b"$DI/METADATA", metadata + b"Requires-Dist: " + data + b"\n")]),
                                      b"cu12", work / "cu12"),
                          build_wheel(Description(members=[Member(b"$DI/METADATA", metadata)]), b"cu13", work / "cu13")]
            else:
                first_text, sep, second_text = data.partition(SEPARATOR)
                first = parse_description(first_text)
                second = parse_description(second_text) if sep else first
                (work / "cu12").mkdir()
                (work / "cu13").mkdir()
                wheels = [build_wheel(first, b"cu12", work / "cu12"), build_wheel(second, b"cu13", work / "cu13")]
                options = [b"--variant-file=" + g for g in first.globs + second.globs]
                if first.fallback or second.fallback:
                    options.append(b"--driver-fallback")

            accepted = []
            for wheel in wheels:
                code, text = self.verify(wheel)
                summary.wheels_verified += 1
                if code == 0:
                    summary.wheels_accepted += 1
                    accepted.append(wheel)
                    summary.oracle_runs += 1
                    if (why := self.consumers(wheel)) is not None:
                        problems.append(f"verify accepts {wheel.name!r}, but the consumers disagree: {why}")
                else:
                    summary.refused[code] += 1
                    if code not in REFUSALS:
                        problems.append(f"verify {wheel.name!r} ended with {code}: {text}")
            if len(accepted) == len(wheels):
                summary.inputs_accepted += 1
            if harness == "fuzz_requirement":
                problems += self.requirement_verdict(wheels[0], wheels[0] in accepted, summary)
            if harness == "fuzz_zip":
                return problems
            if any(b"\0" in o for o in options):
                # The harness hands globs over in memory; no command line can carry a NUL.
                summary.not_an_argument += 1
                return problems

            summary.merges += 1
            code, text, written = self.merge(wheels, work / "out", options)
            if code != 0:
                summary.merge_refused[code] += 1
                if code not in REFUSALS:
                    problems.append(f"merge ended with {code}: {text}")
                if written:
                    problems.append(f"a failed merge left {[p.name for p in written]} behind")
                return problems
            if len(accepted) != len(wheels):
                problems.append("merge succeeded with an input that verify refuses")
            if len(written) != 1:
                return problems + [f"merge succeeded but wrote {[p.name for p in written]}"]
            output = written[0]
            summary.outputs += 1
            code, text = self.verify(output)
            if code != 0:
                problems.append(f"verify refuses the merged {output.name!r} (exit {code}): {text}")
            summary.oracle_runs += 1
            target = work / "installed"
            inputs_by_label = {"cu12": wheels[0], "cu13": wheels[1]}
            try:
                if _supported_here(output):
                    oracle.assert_output_behaves(output, inputs_by_label, target=target)
                else:
                    summary.outputs_not_installable_here += 1
                    oracle.assert_consumers_agree(output)
                    oracle.assert_requirements_behave(output, inputs_by_label)
            except AssertionError as e:
                problems.append(f"the merged {output.name!r} does not behave like its inputs: {e}")
            except Exception as e:  # noqa: BLE001 - the oracle itself failed on this output
                problems.append(f"the oracle failed on the merged {output.name!r}: {type(e).__name__}: {e}")
            if harness == "fuzz_merge_valid":
                code, text, again = self.merge(list(reversed(wheels)), work / "out-reversed", options)
                if code != 0 or len(again) != 1:
                    problems.append(f"the merge in the other order failed (exit {code}): {text}")
                elif again[0].name != output.name or again[0].read_bytes() != output.read_bytes():
                    problems.append("the merge in the other order wrote different bytes")
        return problems


def inputs_of(paths: list[Path]) -> list[Path]:
    files = []
    for p in paths:
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            files.append(p)
        else:
            raise SystemExit(f"oracle_sweep: {p}: no such file or directory")
    return files


def harness_of(path: Path, given: str | None) -> str:
    if given:
        return given
    for part in (path.parent.name, path.parent.parent.name):
        if part in HARNESSES:
            return part
    raise SystemExit(f"oracle_sweep: {path}: which harness's input is it? (--harness {'|'.join(HARNESSES)})")


def sweep(paths: list[Path], *, wheelmerge: Path, harness: str | None = None, jobs: int = 1,
          out: Path | None = None, progress: bool = False) -> dict[str, Summary]:
    """Sweeps every input under ``paths``; returns a summary per harness. Failing inputs are
    copied into ``out`` when given."""
    sweeper = Sweeper(wheelmerge)
    work = [(f, harness_of(f, harness)) for f in inputs_of(paths)]
    summaries = {h: Summary(h) for h in dict.fromkeys(h for _, h in work)}
    started = {h: None for h in summaries}
    done = 0

    def one(item: tuple[Path, str]) -> tuple[Path, str, list[str], Summary]:
        f, h = item
        if started[h] is None:
            started[h] = time.monotonic()
        counts = Summary(h)
        try:
            problems = sweeper.sweep_one(h, f.read_bytes(), counts)
        except subprocess.TimeoutExpired as e:
            problems = [f"timed out: {e}"]
        return f, h, problems, counts

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for f, h, problems, counts in pool.map(one, work):
            summaries[h].add(counts)
            summaries[h].seconds = time.monotonic() - started[h]
            summaries[h].inputs += 1
            done += 1
            if problems:
                failure = Failure(f, h, "\n".join(problems))
                summaries[h].failures.append(failure)
                if out is not None:
                    (out / h).mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(f, out / h / f.name)
                    (out / h / (f.name + ".txt")).write_text(failure.what + "\n")
            if progress and (done % 50 == 0 or problems):
                print(f"oracle_sweep: {done}/{len(work)}" + (f" FAIL {f}" if problems else ""),
                      file=sys.stderr, flush=True)
    return summaries


def report(summaries: dict[str, Summary]) -> str:
    lines = ["| harness | inputs | wheels verified | accepted by verify | inputs wholly accepted | "
             "refused (verify exit: count) | merges | merge refused (exit: count) | outputs written "
             "(not installable here) | oracle runs | failures | time (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summaries.values():
        fmt = lambda c: ", ".join(f"{k}: {v}" for k, v in sorted(c.items())) or "-"  # noqa: E731
        lines.append(f"| {s.harness} | {s.inputs} | {s.wheels_verified} | {s.wheels_accepted} | "
                     f"{s.inputs_accepted} | {fmt(s.refused)} | {s.merges if s.harness != 'fuzz_zip' else '-'} | "
                     f"{fmt(s.merge_refused)} | {s.outputs} ({s.outputs_not_installable_here}) | {s.oracle_runs} | {len(s.failures)} | "
                     f"{s.seconds:.0f} |")
    for s in summaries.values():
        if s.not_an_argument:
            lines.append(f"\n{s.harness}: {s.not_an_argument} inputs with a NUL in a --variant-file glob "
                         "verified but not merged (no command line carries a NUL)")
        if s.harness == "fuzz_requirement":
            verdicts = ", ".join(f"{k}: {v}" for k, v in sorted(s.requirement_verdicts.items())) or "-"
            lines.append(f"\nfuzz_requirement verdicts (wheelmerge verify against packaging): {verdicts}; "
                         f"{s.not_a_header_value} texts with CR or LF, no header value, left out")
    for s in summaries.values():
        for f in s.failures:
            lines.append(f"\nFAILED {f.harness} {f.input}:\n  " + f.what.replace("\n", "\n  "))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", type=Path, nargs="+", metavar="DIR_OR_FILE")
    parser.add_argument("--harness", choices=HARNESSES, help="the harness the inputs are for (default: the "
                        "name of the directory holding each)")
    parser.add_argument("--wheelmerge", type=Path,
                        default=Path(os.environ.get("WHEELMERGE") or ROOT / "build" / "wheelmerge"))
    parser.add_argument("--jobs", type=int, default=1, help="inputs swept at once (default 1)")
    parser.add_argument("--out", type=Path, default=ROOT / "build-fuzz" / "sweep-failures",
                        help="where failing inputs are copied (default build-fuzz/sweep-failures/)")
    parser.add_argument("--json", type=Path, help="also write the summary as JSON here")
    parser.add_argument("--progress", action="store_true", help="report progress on stderr")
    args = parser.parse_args()
    if not os.access(args.wheelmerge, os.X_OK):
        parser.error(f"no wheelmerge executable at {args.wheelmerge}")
    summaries = sweep(args.paths, wheelmerge=args.wheelmerge, harness=args.harness, jobs=args.jobs,
                      out=args.out, progress=args.progress)
    print(report(summaries))
    if args.json:
        args.json.write_text(json.dumps({h: s.as_dict() for h, s in summaries.items()}, indent=2) + "\n")
    failed = sum(len(s.failures) for s in summaries.values())
    if failed:
        print(f"\noracle_sweep: {failed} failing inputs, copied into {args.out}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
