"""Write wheels byte by byte, so that tests can break any single field.

Two layers:

* ``write_zip(entries, ...)`` is a hand-written zip writer. Every structure it emits (local
  header, data descriptor, central directory record, ZIP64 end record and locator, end record)
  is a named-field struct whose computed values any caller can override, per entry or per
  archive. Bytes can be inserted before any entry, before the central directory, before the
  first entry and after the end record.
* ``wheel_bytes(files, name, version, tags, ...)`` / ``build_wheel(path, ...)`` lay out a valid
  wheel (payload, ``{name}-{version}.dist-info/`` with METADATA, WHEEL and RECORD, RECORD last)
  and hand it to ``write_zip``. Keyword arguments break the wheel level (METADATA/WHEEL fields,
  RECORD rows, extra files, per-member zip overrides) without a second code path.

``write_zip_to`` writes the same bytes to a file as it goes, and a member given as a ``Stream``
(its compressed bytes written by a function, CRC, sizes and sha256 known up front) never sits in
memory: ``build_wheel`` writes wheels with members over 4 GiB that way (ZIP64 where a size or
an offset needs it). ``record_hash``, ``record_digest``, ``record_row`` and ``record_file`` are
the RECORD helpers of the suites, the fuzz corpus and the benchmarks.

Everything is deterministic: the same arguments give the same bytes.

Example::

    build_wheel(tmp / "pkg-1.0-cp311-cp311-linux_x86_64.cu12.whl",
                {"pkg/__init__.py": b""},
                entry={"pkg/__init__.py": {"local": {"crc": 0}}})   # local CRC disagrees
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import functools
import hashlib
import io
import re
import stat
import struct
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Mapping

STORED = 0
DEFLATED = 8
BZIP2 = 12
LZMA = 14

FLAG_ENCRYPTED = 0x0001
FLAG_DATA_DESCRIPTOR = 0x0008
FLAG_UTF8 = 0x0800

MADE_BY_UNIX = 3 << 8
U32 = 0xFFFFFFFF
U16 = 0xFFFF

ZIP64_EXTRA_ID = 0x0001

# 1980-01-01 00:00:00, the earliest DOS timestamp.
DOS_DATE_1980 = (0 << 9) | (1 << 5) | 1
DOS_TIME_MIDNIGHT = 0


class _Struct:
    """A little-endian record with named fields: defaults come from the writer, overrides
    from the test. ``pack`` refuses unknown override names so that typos fail loudly."""

    def __init__(self, name: str, fields: Iterable[tuple[str, str]]):
        self.name = name
        self.fields = tuple(f for f, _ in fields)
        self.fmt = "<" + "".join(c for _, c in fields)
        self.size = struct.calcsize(self.fmt)

    def pack(self, values: Mapping[str, int], overrides: Mapping[str, Any] | None = None) -> bytes:
        """``overrides`` values are ints, or functions of the computed value."""
        merged = dict(values)
        for key, value in (overrides or {}).items():
            if key not in self.fields:
                raise KeyError(f"{self.name} has no field {key!r} (fields: {', '.join(self.fields)})")
            merged[key] = value(merged[key]) if callable(value) else value
        return struct.pack(self.fmt, *(merged[f] for f in self.fields))

    def unpack_from(self, buffer: Any, offset: int = 0) -> dict[str, int]:
        """The fields at ``offset`` of ``buffer`` (bytes, mmap), by name."""
        return dict(zip(self.fields, struct.unpack_from(self.fmt, buffer, offset)))


LOCAL_HEADER = _Struct("local header", [
    ("signature", "I"), ("version_needed", "H"), ("flags", "H"), ("method", "H"),
    ("mtime", "H"), ("mdate", "H"), ("crc", "I"), ("csize", "I"), ("usize", "I"),
    ("name_len", "H"), ("extra_len", "H"),
])
CENTRAL_HEADER = _Struct("central directory header", [
    ("signature", "I"), ("version_made", "H"), ("version_needed", "H"), ("flags", "H"),
    ("method", "H"), ("mtime", "H"), ("mdate", "H"), ("crc", "I"), ("csize", "I"),
    ("usize", "I"), ("name_len", "H"), ("extra_len", "H"), ("comment_len", "H"),
    ("disk_start", "H"), ("internal_attr", "H"), ("external_attr", "I"), ("offset", "I"),
])
EOCD = _Struct("end of central directory record", [
    ("signature", "I"), ("disk", "H"), ("cd_disk", "H"), ("disk_entries", "H"),
    ("total_entries", "H"), ("cd_size", "I"), ("cd_offset", "I"), ("comment_len", "H"),
])
ZIP64_EOCD = _Struct("zip64 end of central directory record", [
    ("signature", "I"), ("record_size", "Q"), ("version_made", "H"), ("version_needed", "H"),
    ("disk", "I"), ("cd_disk", "I"), ("disk_entries", "Q"), ("total_entries", "Q"),
    ("cd_size", "Q"), ("cd_offset", "Q"),
])
ZIP64_LOCATOR = _Struct("zip64 end of central directory locator", [
    ("signature", "I"), ("eocd_disk", "I"), ("eocd_offset", "Q"), ("total_disks", "I"),
])

SIG_LOCAL = 0x04034B50
SIG_CENTRAL = 0x02014B50
SIG_EOCD = 0x06054B50
SIG_ZIP64_EOCD = 0x06064B50
SIG_ZIP64_LOCATOR = 0x07064B50
SIG_DESCRIPTOR = 0x08074B50


def extra_block(header_id: int, payload: bytes, size: int | None = None) -> bytes:
    """One extra-field block; ``size`` overrides the declared payload length."""
    return struct.pack("<HH", header_id, len(payload) if size is None else size) + payload


def zip64_extra(*values: int) -> bytes:
    """A ZIP64 extended-information extra block holding the given 64-bit values in order."""
    return extra_block(ZIP64_EXTRA_ID, b"".join(struct.pack("<Q", v) for v in values))


def zip64_extra_set(index: int, value: int | Callable[[int], int]) -> Callable[[bytes], bytes]:
    """An ``"extra"`` override that changes the ``index``-th 64-bit value of a ZIP64 extra that
    starts the computed extra field (e.g. index 0: uncompressed size)."""
    def edit(extra: bytes) -> bytes:
        at = 4 + 8 * index
        old = struct.unpack_from("<Q", extra, at)[0]
        new = value(old) if callable(value) else value
        return extra[:at] + struct.pack("<Q", new) + extra[at + 8:]
    return edit


def deflate_raw(data: bytes, level: int = 6) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


@functools.lru_cache(maxsize=None)
def deflated_zeros(size: int, level: int) -> tuple[bytes, int, str, int]:
    """``size`` zero bytes (whole MiB) deflated a MiB at a time, never all held:
    (raw deflate bytes, CRC-32, RECORD hash, size). Cached: a bomb costs one pass."""
    chunk = bytes(1 << 20)
    c = zlib.compressobj(level, zlib.DEFLATED, -15)
    out, crc, h = [], 0, hashlib.sha256()
    for _ in range(size // len(chunk)):
        out.append(c.compress(chunk))
        crc = zlib.crc32(chunk, crc)
        h.update(chunk)
    out.append(c.flush())
    return b"".join(out), crc, record_digest(h.digest()), size


def compress(data: bytes, method: int) -> bytes:
    if method == STORED:
        return data
    if method == DEFLATED:
        return deflate_raw(data)
    if method == BZIP2:
        import bz2
        return bz2.compress(data)
    if method == LZMA:
        import lzma
        # The zip LZMA layout: 2-byte LZMA SDK version, 2-byte properties size, properties,
        # then a raw LZMA1 stream (what Python's zipfile writes).
        props = lzma._encode_filter_properties({"id": lzma.FILTER_LZMA1})  # type: ignore[attr-defined]
        c = lzma.LZMACompressor(lzma.FORMAT_RAW, filters=[
            lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)])  # type: ignore[attr-defined]
        return struct.pack("<BBH", 9, 4, len(props)) + props + c.compress(data) + c.flush()
    raise ValueError(f"no compressor for method {method}; pass Entry(compressed=...)")


@dataclasses.dataclass
class Stream:
    """A member's stored bytes, written by ``write`` (into the archive's file object) instead of
    held in memory, with what the headers and RECORD need known up front: ``crc`` and ``usize``
    of the uncompressed bytes, ``csize`` (what ``write`` writes), ``sha256`` (digest of the
    uncompressed bytes) and ``method`` (how ``write`` compresses them)."""

    method: int
    crc: int
    usize: int
    csize: int
    sha256: bytes
    write: Callable[[BinaryIO], Any]


@dataclasses.dataclass
class Entry:
    """One zip member. Computed header values can be overridden field by field:

    * ``local`` / ``central``: overrides for ``LOCAL_HEADER`` / ``CENTRAL_HEADER`` fields, plus
      ``"name"`` and ``"extra"`` (bytes; lengths follow unless ``name_len``/``extra_len`` are
      overridden too) and, for central, ``"comment"``. A value may be a function of the
      computed one, e.g. ``{"crc": lambda v: v ^ 1}``.
    * ``descriptor``: overrides for the data descriptor (``crc``, ``csize``, ``usize``).
    * ``compressed``: the stored payload bytes instead of ``compress(data, method)``; CRC and
      sizes are still computed from ``data``/``compressed`` unless overridden.
    * ``stream``: a ``Stream`` writes the stored bytes instead, and gives CRC and sizes
      (``data`` and ``compressed`` unused; ``method`` should be the stream's).
    """

    name: str | bytes
    data: bytes = b""
    method: int = DEFLATED
    compressed: bytes | None = None
    flags: int = 0  # added to the computed flags (UTF-8 bit, descriptor bit)
    mode: int = 0o644
    external_attr: int | None = None  # default (S_IFREG | mode) << 16
    version_made: int | None = MADE_BY_UNIX | 20  # None: Unix, and the version needed
    mtime: int = DOS_TIME_MIDNIGHT
    mdate: int = DOS_DATE_1980
    zip64: bool = False  # force a ZIP64 extra (sizes) even when the values fit 32 bits
    # The central record's ZIP64 extra: both sizes whenever the local one has them (as Python's
    # zipfile writes), or (False) only the values that do not fit 32 bits.
    zip64_both_sizes: bool = True
    data_descriptor: bool = False
    descriptor_signature: bool = True
    local: dict = dataclasses.field(default_factory=dict)
    central: dict = dataclasses.field(default_factory=dict)
    descriptor: dict = dataclasses.field(default_factory=dict)
    in_local: bool = True  # False: no local header/data written (central record only)
    in_central: bool = True  # False: local header/data written, no central record
    before: bytes = b""  # bytes written just before this entry's local header
    stream: Stream | None = None

    @property
    def name_bytes(self) -> bytes:
        return self.name if isinstance(self.name, bytes) else self.name.encode("utf-8")


# ``Entry`` settings for the version and ZIP64 fields WHEEL_RULES.md "Writing" rule 8 asks of
# wheelmerge's output: ZIP64 values in a central record only where they overflow, version made
# by (Unix) the version needed.
AS_WHEELMERGE_WRITES = {"version_made": None, "zip64_both_sizes": False}


@dataclasses.dataclass
class ZipLayout:
    """Where ``write_zip`` put things (offsets into the returned bytes)."""

    local_offsets: list[int]
    central_offset: int
    central_size: int
    eocd_offset: int
    zip64_eocd_offset: int | None


def _split_overrides(overrides: Mapping[str, Any], special: Iterable[str]) -> tuple[dict, dict]:
    special = set(special)
    extra = {k: v for k, v in overrides.items() if k in special}
    fields = {k: v for k, v in overrides.items() if k not in special}
    return extra, fields


def _resolve(special: Mapping[str, Any], key: str, default: Any) -> Any:
    """An override for a byte-string part: a value, or a function of the computed one."""
    if key not in special:
        return default
    value = special[key]
    return value(default) if callable(value) else value


def _as_bytes(value: str | bytes) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


def write_zip(entries: Iterable[Entry], **kwargs: Any) -> bytes:
    """Serialise ``entries`` as a zip archive: the bytes ``write_zip_to`` writes."""
    buffer = io.BytesIO()
    write_zip_to(buffer, entries, **kwargs)
    return buffer.getvalue()


class _Counted:
    """A file object's ``write`` that counts what has been written."""

    def __init__(self, f: BinaryIO):
        self.f = f
        self.pos = 0

    def write(self, data: bytes) -> int:
        self.pos += len(data)
        return self.f.write(data)


def write_zip_to(
    f: BinaryIO,
    entries: Iterable[Entry],
    *,
    prefix: bytes = b"",
    before_central: bytes = b"",
    suffix: bytes = b"",
    comment: bytes = b"",
    eocd: Mapping[str, int] | None = None,
    zip64_end: bool | None = None,
    zip64_eocd: Mapping[str, int] | None = None,
    zip64_locator: Mapping[str, int] | None = None,
    offsets_relative_to_prefix: bool = False,
    layout: list | None = None,
) -> None:
    """Write ``entries`` as a zip archive to the binary file object ``f``, as it goes (offsets
    count from where ``f`` stood; only the central directory is held until the end).

    ``prefix`` goes before the first local header; offsets count it unless
    ``offsets_relative_to_prefix`` (then they are what they would be without the prefix, as
    when junk is prepended to a finished archive). ``before_central`` goes between the last
    entry and the central directory, ``suffix`` after the end record (and its comment).
    ``zip64_end``: write the ZIP64 end record and locator (None: only when needed).
    If ``layout`` is a list, a ``ZipLayout`` is appended to it.

    ZIP64: a local header gets a ZIP64 extra with both sizes when a size does not fit 32 bits
    (or ``Entry.zip64``); a central record, in the order usize, csize, offset, both sizes then
    (or with ``Entry.zip64_both_sizes=False`` only the sizes that overflow) and the offset when
    it overflows; version needed is 45 for an entry with any ZIP64 field.
    """
    out = _Counted(f)
    out.write(prefix)
    base = len(prefix) if offsets_relative_to_prefix else 0
    central = bytearray()
    local_offsets: list[int] = []

    rendered = []
    for e in entries:
        name = e.name_bytes
        if e.stream is not None:
            raw = None
            crc, usize, csize = e.stream.crc, e.stream.usize, e.stream.csize
        else:
            raw = e.compressed if e.compressed is not None else compress(e.data, e.method)
            crc = zlib.crc32(e.data) & U32
            usize, csize = len(e.data), len(raw)
        flags = e.flags
        if any(b >= 0x80 for b in name):
            flags |= FLAG_UTF8
        if e.data_descriptor:
            flags |= FLAG_DATA_DESCRIPTOR
        big = e.zip64 or usize >= U32 or csize >= U32

        # Local header.
        out.write(e.before)
        offset = out.pos - base
        local_offsets.append(out.pos)
        c_values = [usize, csize, offset]
        if e.zip64_both_sizes:
            over = [big, big, offset >= U32]
        else:
            over = [usize >= U32, csize >= U32, offset >= U32]
        needed = 45 if big or any(over) else 20
        if e.data_descriptor:
            l_crc, l_csize, l_usize = 0, 0, 0
        else:
            l_crc, l_csize, l_usize = crc, csize, usize
        l_extra = zip64_extra(l_usize, l_csize) if big else b""
        if big:
            l_csize = l_usize = U32
        special, fields = _split_overrides(e.local, ("name", "extra"))
        l_name = _as_bytes(_resolve(special, "name", name))
        l_extra = _resolve(special, "extra", l_extra)
        local = LOCAL_HEADER.pack(dict(
            signature=SIG_LOCAL, version_needed=needed, flags=flags, method=e.method,
            mtime=e.mtime, mdate=e.mdate, crc=l_crc, csize=l_csize, usize=l_usize,
            name_len=len(l_name), extra_len=len(l_extra)), fields)
        if e.in_local:
            out.write(local + l_name + l_extra)
            if raw is not None:
                out.write(raw)
            else:
                start = out.pos
                e.stream.write(out)  # type: ignore[union-attr]
                written = out.pos - start
                assert written == csize, f"{e.name!r}: the stream wrote {written} bytes, declared {csize}"
            if e.data_descriptor:
                d = dict(crc=crc, csize=csize, usize=usize)
                for k, v in e.descriptor.items():
                    d[k] = v(d[k]) if callable(v) else v
                fmt = "<IQQ" if big else "<III"
                if e.descriptor_signature:
                    out.write(struct.pack("<I", SIG_DESCRIPTOR))
                out.write(struct.pack(fmt, d["crc"], d["csize"], d["usize"]))

        # Central directory record.
        c_extra = zip64_extra(*(v for v, o in zip(c_values, over) if o)) if any(over) else b""
        c_usize, c_csize, c_offset = (U32 if o else v for v, o in zip(c_values, over))
        special, fields = _split_overrides(e.central, ("name", "extra", "comment"))
        c_name = _as_bytes(_resolve(special, "name", name))
        c_extra = _resolve(special, "extra", c_extra)
        c_comment = _resolve(special, "comment", b"")
        ext = e.external_attr if e.external_attr is not None else (stat.S_IFREG | e.mode) << 16
        made = e.version_made if e.version_made is not None else MADE_BY_UNIX | needed
        rec = CENTRAL_HEADER.pack(dict(
            signature=SIG_CENTRAL, version_made=made, version_needed=needed,
            flags=flags, method=e.method, mtime=e.mtime, mdate=e.mdate, crc=crc,
            csize=c_csize, usize=c_usize, name_len=len(c_name), extra_len=len(c_extra),
            comment_len=len(c_comment), disk_start=0, internal_attr=0, external_attr=ext,
            offset=c_offset), fields)
        if e.in_central:
            rendered.append(rec + c_name + c_extra + c_comment)

    out.write(before_central)
    cd_offset = out.pos - base
    for rec in rendered:
        central += rec
    out.write(central)
    cd_size = len(central)
    count = len(rendered)

    need64 = count >= U16 or cd_offset >= U32 or cd_size >= U32
    z64_offset = None
    if zip64_end or (zip64_end is None and need64):
        z64_offset = out.pos
        out.write(ZIP64_EOCD.pack(dict(
            signature=SIG_ZIP64_EOCD, record_size=44, version_made=MADE_BY_UNIX | 45,
            version_needed=45, disk=0, cd_disk=0, disk_entries=count, total_entries=count,
            cd_size=cd_size, cd_offset=cd_offset), zip64_eocd))
        out.write(ZIP64_LOCATOR.pack(dict(
            signature=SIG_ZIP64_LOCATOR, eocd_disk=0, eocd_offset=z64_offset - base,
            total_disks=1), zip64_locator))
    eocd_offset = out.pos
    out.write(EOCD.pack(dict(
        signature=SIG_EOCD, disk=0, cd_disk=0,
        disk_entries=min(count, U16), total_entries=min(count, U16),
        cd_size=min(cd_size, U32), cd_offset=min(cd_offset, U32),
        comment_len=len(comment)), eocd))
    out.write(comment)
    out.write(suffix)
    if layout is not None:
        layout.append(ZipLayout(local_offsets, cd_offset + base, cd_size, eocd_offset, z64_offset))


def eocd_record(**fields: int) -> bytes:
    """A stand-alone end record (for tests that append a second one); fields as in ``EOCD``."""
    values = dict(signature=SIG_EOCD, disk=0, cd_disk=0, disk_entries=0, total_entries=0,
                  cd_size=0, cd_offset=0, comment_len=0)
    return EOCD.pack(values, fields)


# --------------------------------------------------------------------------------------------
# Wheels


def record_digest(digest: bytes, algorithm: str = "sha256") -> str:
    """A RECORD hash field from a digest: ``sha256=`` and the digest in urlsafe base64 without
    padding (for digests computed a piece at a time)."""
    return f"{algorithm}=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def record_hash(data: bytes, algorithm: str = "sha256") -> str:
    """The RECORD hash field of ``data``."""
    return record_digest(hashlib.new(algorithm, data).digest(), algorithm)


def record_row(path: str, data: bytes) -> list[str]:
    """``[path, sha256 hash, size]``, a RECORD row for ``data`` stored at ``path``."""
    return [path, record_hash(data), str(len(data))]


def escape_name(name: str) -> str:
    """The distribution name as it appears in file and directory names."""
    return re.sub(r"[-_.]+", "_", name).lower()


def expand_tags(tags: str) -> list[str]:
    """``py2.py3-none-any`` -> ``["py2-none-any", "py3-none-any"]`` (filename order)."""
    python, abi, platform = tags.split("-")
    return [f"{p}-{a}-{pl}" for p in python.split(".") for a in abi.split(".")
            for pl in platform.split(".")]


def wheel_filename(name: str, version: str, tags: str, build: str | None = None,
                   label: str | None = None) -> str:
    parts = [escape_name(name), version] + ([build] if build else []) + [tags]
    return "-".join(parts) + (f".{label}" if label else "") + ".whl"


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


OMIT = _Omit()
"""Pass as ``metadata=``/``wheel=``/``record=`` (or as a field value) to leave the thing out."""


def _render_fields(fields: list[tuple[str, str]]) -> bytes:
    """``Key: value`` lines, UTF-8; lone surrogates (``"\\udcff"``) become raw bytes."""
    return "".join(f"{k}: {v}\n" for k, v in fields).encode("utf-8", "surrogateescape")


def _apply_field_overrides(fields: list[tuple[str, str]], overrides: Mapping[str, Any]) -> list:
    """Each override replaces every line with that key (in place of the first one), or is
    appended; a list gives several lines, OMIT removes the key."""
    fields = list(fields)
    for key, value in overrides.items():
        values = [] if value is OMIT else (list(value) if isinstance(value, (list, tuple)) else [value])
        idx = next((i for i, (k, _) in enumerate(fields) if k == key), len(fields))
        fields = [(k, v) for k, v in fields if k != key]
        idx = min(idx, len(fields))
        fields[idx:idx] = [(key, v) for v in values]
    return fields


def render_record(rows: Iterable[Iterable[str]]) -> bytes:
    """RECORD's bytes: the rows as CSV (quoted where needed), a line each."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for row in rows:
        w.writerow(list(row))
    return buf.getvalue().encode("utf-8")


def record_file(rows: Iterable[Iterable[str]], record_path: str) -> bytes:
    """A whole RECORD: ``rows`` (see ``record_row``), then RECORD's own row, no hash and no size."""
    return render_record([*rows, [record_path, "", ""]])


def wheel_entries(
    files: Mapping[str | bytes, bytes | Stream],
    name: str = "pkg",
    version: str = "1.0",
    tags: str = "cp311-cp311-linux_x86_64",
    build: str | None = None,
    *,
    root_is_purelib: str | bool = False,
    metadata_version: str = "2.1",
    dist_info: str | None = None,
    metadata: Mapping[str, Any] | bytes | _Omit | None = None,
    wheel: Mapping[str, Any] | bytes | _Omit | None = None,
    dist_info_files: Mapping[str, bytes] | None = None,
    record: Callable[[list[list[str]]], Any] | bytes | _Omit | None = None,
    unrecorded: Mapping[str | bytes, bytes] | None = None,
    method: int = DEFLATED,
    entry: Mapping[str | bytes, Mapping[str, Any]] | None = None,
    entries: Callable[[list[Entry]], list[Entry] | None] | None = None,
    entry_defaults: Mapping[str, Any] | None = None,
) -> list[Entry]:
    """The members of a wheel, valid unless an argument breaks it, for ``write_zip``.

    * ``files``: payload, archive path -> bytes or a ``Stream`` (in this order). ``bytes`` paths
      are written as-is and get no RECORD row unless they decode as UTF-8.
    * ``metadata`` / ``wheel``: dict of header overrides (see ``_apply_field_overrides``),
      full file bytes, or ``OMIT``.
    * ``dist_info_files``: further files in the dist-info directory (recorded).
    * ``record``: a function given the rows (``[path, hash, size]``, RECORD's own row last) that
      edits them in place or returns new rows (or bytes: the whole file), the bytes of the whole
      file, or ``OMIT``.
    * ``unrecorded``: extra members written after RECORD, without rows.
    * ``entry``: per-member ``Entry`` keyword overrides, keyed by archive path;
      ``entry_defaults``: ``Entry`` keywords for every member (``method``, a stream's method
      and ``entry`` go over them), e.g. ``AS_WHEELMERGE_WRITES``.
    * ``entries``: a function given the final ``Entry`` list (edits in place or returns a new
      one), for duplicates, reordering, insertions.
    """
    dist_info = dist_info or f"{escape_name(name)}-{version}.dist-info"

    members: list[tuple[str | bytes, bytes | Stream]] = list(files.items())

    if metadata is not OMIT:
        if isinstance(metadata, bytes):
            md = metadata
        else:
            md = _render_fields(_apply_field_overrides(
                [("Metadata-Version", metadata_version), ("Name", name), ("Version", version),
                 ("Summary", "wheelmerge test wheel")], metadata or {}))
        members.append((f"{dist_info}/METADATA", md))

    if wheel is not OMIT:
        if isinstance(wheel, bytes):
            wh = wheel
        else:
            rip = root_is_purelib if isinstance(root_is_purelib, str) else str(root_is_purelib).lower()
            fields = [("Wheel-Version", "1.0"), ("Generator", "wheelgen (wheelmerge tests)"),
                      ("Root-Is-Purelib", rip)]
            fields += [("Tag", t) for t in expand_tags(tags)]
            if build:
                fields.append(("Build", build))
            wh = _render_fields(_apply_field_overrides(fields, wheel or {}))
        members.append((f"{dist_info}/WHEEL", wh))

    for path, data in (dist_info_files or {}).items():
        members.append((f"{dist_info}/{path}", data))

    record_path = f"{dist_info}/RECORD"
    if record is not OMIT:
        if isinstance(record, bytes):
            rec = record
        else:
            rows: list[list[str]] = []
            for path, data in members:
                if isinstance(path, bytes):
                    try:
                        path = path.decode("utf-8")
                    except UnicodeDecodeError:
                        continue
                if isinstance(data, Stream):
                    rows.append([path, record_digest(data.sha256), str(data.usize)])
                else:
                    rows.append(record_row(path, data))
            rows.append([record_path, "", ""])
            result = record(rows) if record is not None else None
            if result is None:
                rec = render_record(rows)
            elif isinstance(result, bytes):
                rec = result
            elif isinstance(result, list):
                rec = render_record(result)
            else:
                raise TypeError(f"record hook returned {type(result).__name__}; "
                                "return None (edited in place), a list of rows or bytes")
        members.append((record_path, rec))

    members += list((unrecorded or {}).items())

    overrides = dict(entry or {})
    entry_list = []
    for path, data in members:
        kw = dict(entry_defaults or {})
        if isinstance(data, Stream):
            kw.update(name=path, stream=data, method=data.method)
        else:
            kw.update(name=path, data=data, method=method)
        kw.update(overrides.pop(path, {}))
        entry_list.append(Entry(**kw))
    if overrides:
        raise KeyError(f"entry overrides for members not in the wheel: {sorted(map(str, overrides))}")
    if entries is not None:
        result = entries(entry_list)
        if result is not None:
            entry_list = result
    return entry_list


def wheel_bytes(files: Mapping[str | bytes, bytes | Stream], name: str = "pkg", version: str = "1.0",
                tags: str = "cp311-cp311-linux_x86_64", build: str | None = None, *,
                zip: Mapping[str, Any] | None = None,  # noqa: A002 - keyword mirrors write_zip
                post: Callable[[bytes], bytes] | None = None, **kwargs: Any) -> bytes:
    """The bytes of a wheel: ``wheel_entries(files, name, version, tags, build, **kwargs)``
    through ``write_zip`` (``zip``: its keyword arguments); ``post``: a function of the
    finished bytes."""
    out = write_zip(wheel_entries(files, name, version, tags, build, **kwargs), **(zip or {}))
    return post(out) if post else out


def build_wheel(path: str | Path, files: Mapping[str | bytes, bytes | Stream], name: str = "pkg",
                version: str = "1.0", tags: str = "cp311-cp311-linux_x86_64",
                build: str | None = None, *,
                zip: Mapping[str, Any] | None = None,  # noqa: A002 - keyword mirrors write_zip
                post: Callable[[bytes], bytes] | None = None, **kwargs: Any) -> Path:
    """Write the wheel ``wheel_bytes(...)`` gives to ``path`` and return it; written as it goes
    (``Stream`` members included, nothing of the archive held) unless ``post`` needs the bytes."""
    path = Path(path)
    if post is not None:
        path.write_bytes(wheel_bytes(files, name, version, tags, build, zip=zip, post=post, **kwargs))
        return path
    with open(path, "wb") as f:
        write_zip_to(f, wheel_entries(files, name, version, tags, build, **kwargs), **(zip or {}))
    return path


# --------------------------------------------------------------------------------------------
# Extra fields other than ZIP64, and ELF shared objects


UNICODE_PATH_EXTRA_ID = 0x7075  # Info-ZIP Unicode Path Extra Field
UNICODE_COMMENT_EXTRA_ID = 0x6375  # Info-ZIP Unicode Comment Extra Field


def unicode_path_extra(header_name: str | bytes, unicode_name: str | bytes,
                       crc: int | None = None, version: int = 1) -> bytes:
    """An Info-ZIP Unicode Path extra block: ``unicode_name`` (UTF-8) stands for the header
    name, which it covers with the CRC-32 of ``header_name`` (``crc`` overrides it)."""
    header = _as_bytes(header_name)
    value = zlib.crc32(header) & U32 if crc is None else crc
    return extra_block(UNICODE_PATH_EXTRA_ID, struct.pack("<BI", version, value) + _as_bytes(unicode_name))


def unicode_comment_extra(comment: str | bytes, unicode_comment: str | bytes,
                          crc: int | None = None) -> bytes:
    """An Info-ZIP Unicode Comment extra block for an entry whose comment is ``comment``."""
    value = zlib.crc32(_as_bytes(comment)) & U32 if crc is None else crc
    return extra_block(UNICODE_COMMENT_EXTRA_ID, struct.pack("<BI", 1, value) + _as_bytes(unicode_comment))


ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
ELF_PROGRAM_HEADER = struct.Struct("<IIQQQQQQ")
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME = 0, 1, 5, 10, 14
PT_LOAD, PT_DYNAMIC = 1, 2


def elf_shared_object(soname: str | None = None, needed: Iterable[str] = (), *,
                      payload: bytes = b"", strings: bytes | None = None,
                      needed_offsets: Iterable[int] | None = None,
                      machine: int = 62) -> bytes:
    """A minimal 64-bit little-endian ELF shared object (ET_DYN) with one PT_LOAD segment that
    maps the whole file at address 0 and a PT_DYNAMIC segment holding DT_SONAME, DT_NEEDED,
    DT_STRTAB and DT_STRSZ. Not loadable code, but every field a loader or a scanner reads to
    order libraries is there. ``payload`` is appended (it makes builds differ).

    ``strings`` replaces the dynamic string table (it must start with a NUL byte) and
    ``needed_offsets`` gives DT_NEEDED values into it directly, instead of ``needed``."""
    table = bytearray(b"\0")
    offsets: dict[str, int] = {}

    def add(s: str) -> int:
        if s not in offsets:
            offsets[s] = len(table)
            table.extend(s.encode("utf-8") + b"\0")
        return offsets[s]

    tags: list[tuple[int, int]] = []
    if strings is not None:
        table = bytearray(strings)
    if soname is not None:
        tags.append((DT_SONAME, add(soname)))
    if needed_offsets is not None:
        tags += [(DT_NEEDED, o) for o in needed_offsets]
    else:
        tags += [(DT_NEEDED, add(n)) for n in needed]
    header_size = ELF_HEADER.size + 2 * ELF_PROGRAM_HEADER.size
    dynamic_size = (len(tags) + 3) * 16
    strtab_offset = header_size + dynamic_size
    tags += [(DT_STRTAB, strtab_offset), (DT_STRSZ, len(table)), (DT_NULL, 0)]
    dynamic = b"".join(struct.pack("<qQ", t, v) for t, v in tags)
    total = strtab_offset + len(table) + len(payload)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = ELF_HEADER.pack(ident, 3, machine, 1, 0, ELF_HEADER.size, 0, 0, ELF_HEADER.size,
                             ELF_PROGRAM_HEADER.size, 2, 64, 0, 0)
    load = ELF_PROGRAM_HEADER.pack(PT_LOAD, 4, 0, 0, 0, total, total, 0x1000)
    dyn = ELF_PROGRAM_HEADER.pack(PT_DYNAMIC, 6, header_size, header_size, header_size,
                                  dynamic_size, dynamic_size, 8)
    return header + load + dyn + dynamic + bytes(table) + payload


def fatbin(entries: list[tuple[int, int, int, int, int]]) -> bytes:
    """A CUDA fat binary as nvcc 13 lays it out: a 16-byte header, then per entry a header of
    `header` bytes (kind at 0, its size at 4, payload size at 8, architecture at 28, flags at
    40) and `payload` bytes (gpu_code.hpp)."""
    body = b""
    for kind, arch, flags, payload, header in entries:
        head = struct.pack("<HHIQIIIIIIQ", kind, 0x0101, header, payload, payload, 0, 0, arch, 0, 0, flags)
        body += head + bytes(header - len(head)) + b"\xab" * payload
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body
