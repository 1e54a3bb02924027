"""Per-record checksums kept beside a shard, and the digests a manifest records.

A shard's *checksum sidecar* (``<shard>.crc``) holds one CRC32C per record,
in record order: of the record's payload for RecordIO, of key and value for
LMDB (:func:`record_crc`). fastdata's writers compute it while writing; for
shards other tools wrote, ``fastdata index --checksums`` computes it once.
Readers check every record they return against it, so a flipped byte in a
payload (which RecordIO and LMDB cannot notice themselves) is a FormatError
naming the file and record instead of a changed image. TFRecord needs no
sidecar: each record carries its own CRC32C, checked on every read.

Layout (little-endian)::

    magic "FDCRC32C" | u32 version (1) | u32 0 | u64 records | u64 data file size
    records x u32 CRC32C
    u32 CRC32C of everything before it

A digest names its function: ``"crc32c:1a2b3c4d"`` (what fastdata writes:
about 11 GB/s, computed while writing) or ``"sha256:..."``.
"""

from __future__ import annotations

import array
import os
import struct
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import FormatError
from . import speedups as _speedups
from ._atomic import sha256_file
from .crc import crc32c

if TYPE_CHECKING:  # numpy is not imported at run time: a small conversion does not pay its import
    import mmap

    import numpy as np

SUFFIX = ".crc"
MAGIC = b"FDCRC32C"
VERSION = 1
_HEAD = struct.Struct("<8sIIQQ")
_TAIL = struct.Struct("<I")
REBUILD = "fastdata index --checksums"


class FileBytes(os.PathLike):
    """A file's path with its bytes, already read (``fastdata verify`` reads a
    listed file once for its digest): an index reader given one as its path
    parses these bytes instead of opening the file again."""

    def __init__(self, path: str | os.PathLike[str], data: bytes) -> None:
        self.path, self.data = os.fspath(path), data

    def __fspath__(self) -> str:
        return self.path


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file at ``path``: those it carries when it is a :class:`FileBytes`."""
    if isinstance(path, FileBytes):
        return path.data
    with open(path, "rb") as f:
        return f.read()


def sidecar_path(shard: str | os.PathLike[str]) -> Path:
    """Where the checksums of ``shard`` (a file, or an LMDB directory) live: ``<shard>.crc``."""
    return Path(os.fspath(shard).rstrip("/\\") + SUFFIX)


def record_crc(data: bytes | memoryview, key: bytes = b"") -> int:
    """The CRC32C a sidecar holds for a record: of ``key`` then ``data``."""
    return crc32c(data, crc32c(key)) if key else crc32c(data)


# -- combining CRCs ------------------------------------------------------------
# zlib's crc32_combine method (Mark Adler) with the Castagnoli polynomial: the
# CRC of A + B is crc(A) times x^(8 len(B)) modulo the polynomial, plus crc(B).
# CRCs are bit-reflected, so x^0 is the top bit. The compiled twin is
# fastdata/formats/_native/speedups.c; this one is the reference and fallback.

_POLY = 0x82F63B78  # Castagnoli, reflected


def _multmodp(a: int, b: int) -> int:
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _x2n_table() -> list[int]:
    p, table = 1 << 30, []  # x^1
    for _ in range(32):
        table.append(p)
        p = _multmodp(p, p)
    return table


_X2N = _x2n_table()  # x^(2^n) mod the polynomial


def _combine_py(crc1: int, crc2: int, len2: int) -> int:
    p, k = 1 << 31, 3  # x^0; x^(8 len2) = x^(len2 * 2^3)
    while len2:
        if len2 & 1:
            p = _multmodp(_X2N[k & 31], p)
        len2 >>= 1
        k += 1
    return _multmodp(p, crc1) ^ crc2


def combine(crc1: int, crc2: int, len2: int) -> int:
    """The CRC32C of ``A + B`` from ``crc1 = crc32c(A)``, ``crc2 = crc32c(B)`` and ``len2 = len(B)``.

    Well under a microsecond compiled; tens of microseconds in Python, where
    running the CRC over ``B`` again is faster for small ``B``.

    Raises:
        ValueError: a CRC outside 0..2**32-1 or a negative length.
    """
    native = _speedups.native
    if native is not None:
        return native.crc32c_combine(crc1, crc2, len2)
    if not (0 <= crc1 <= 0xFFFFFFFF and 0 <= crc2 <= 0xFFFFFFFF):
        raise ValueError(f"crc32c_combine: CRCs must be in 0..2**32-1, got {crc1} and {crc2}")
    if len2 < 0:
        raise ValueError(f"crc32c_combine: len2 must be a length (0 or more bytes), got {len2}")
    return _combine_py(crc1, crc2, len2)


def encode(crcs: Sequence[int] | np.ndarray, data_bytes: int) -> bytes:
    """The sidecar's bytes for ``crcs`` of a data file of ``data_bytes`` bytes."""
    if hasattr(crcs, "astype"):  # a numpy array
        values = crcs.astype("<u4").tobytes()
    else:
        table = array.array("I", crcs)  # C unsigned int: 32 bits wherever CPython runs
        if sys.byteorder != "little":
            table.byteswap()
        values = table.tobytes()
    body = _HEAD.pack(MAGIC, VERSION, 0, len(crcs), data_bytes) + values
    return body + _TAIL.pack(crc32c(body))


def write(path: str | os.PathLike[str], crcs: Sequence[int] | np.ndarray, data_bytes: int) -> str:
    """Write a sidecar (not atomically: callers write under a partial name); returns its digest."""
    data = encode(crcs, data_bytes)
    with open(path, "wb") as f:
        f.write(data)
    return digest_of(data)


def load(path: str | os.PathLike[str], *, records: int, data_bytes: int, data_file: str | os.PathLike[str]) -> memoryview:
    """The CRCs of a sidecar, as a memoryview of ints (fast to index).

    Raises:
        FormatError: naming the sidecar: unreadable, damaged (its own CRC),
            or made for another file (record count or data size differ).
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise FormatError(f"cannot read the record checksums ({exc.strerror or exc})", path=path,
                          hint=f"restore it, or compute it again with `{REBUILD} {os.fspath(data_file)}`") from None
    return parse(data, path=path, records=records, data_bytes=data_bytes, data_file=data_file)


def parse(data: bytes, *, path: str | os.PathLike[str], records: int, data_bytes: int,
          data_file: str | os.PathLike[str]) -> memoryview:
    """:func:`load` of a sidecar's bytes already read (``fastdata verify`` reads
    them once, for their digest and for the CRCs); raises as :func:`load` does."""
    path = os.fspath(path)
    head = _HEAD.size
    if len(data) < head + _TAIL.size or data[:8] != MAGIC:
        raise _bad(path, data_file, "is not a fastdata checksum file (no FDCRC32C header)")
    _magic, version, _, count, size = _HEAD.unpack_from(data)
    if version != VERSION:
        raise _bad(path, data_file, f"has version {version}; this fastdata reads version {VERSION}")
    if len(data) != head + 4 * count + _TAIL.size or _TAIL.unpack_from(data, len(data) - 4)[0] != crc32c(data[:-4]):
        raise _bad(path, data_file, "is damaged (its own CRC32C does not match)")
    if count != records or size != data_bytes:
        raise _bad(
            path, data_file,
            f"describes {count} records in {size} bytes, but {os.fspath(data_file)} holds {records} records "
            f"in {data_bytes} bytes: the shard changed after its checksums were computed",
        )
    return memoryview(data)[head : head + 4 * count].cast("I")


def described(data: bytes) -> tuple[int, int] | None:
    """``(records, data file size)`` a sidecar's header says it was made for; None when it has no header."""
    if len(data) < _HEAD.size or data[:8] != MAGIC:
        return None
    return _HEAD.unpack_from(data)[3:5]


def _bad(path: str, data_file: str | os.PathLike[str], what: str) -> FormatError:
    return FormatError(
        f"record checksums {what}", path=path,
        hint=f"restore the shard and its checksums, re-convert, or for a shard fastdata did not write "
        f"recompute them with `{REBUILD} {os.fspath(data_file)}`",
    )


def mismatch(path: str | os.PathLike[str], record: int, *, offset: int | None = None, key: object = None) -> FormatError:
    """The error for a record whose bytes no longer match their checksum."""
    return FormatError(
        f"record {record}: CRC32C mismatch: the stored bytes changed since they were written (damaged shard)",
        path=path, offset=offset, key=key, hint=f"{MISMATCH_FIX}; {VERIFY_LISTS}",
    )


MISMATCH_FIX = "restore the shard from a good copy or re-convert"
VERIFY_LISTS = "`fastdata verify` lists every damaged record"  # said by readers; verify itself leaves it out


# -- whole-file digests -------------------------------------------------------

def digest_of(data: bytes | memoryview) -> str:
    return crc_digest(crc32c(data))


def crc_digest(value: int) -> str:
    return f"crc32c:{value:08x}"


def file_digest(path: str | os.PathLike[str], kind: str = "crc32c", chunk: int = 1 << 22) -> str:
    """``"crc32c:..."`` (or ``"sha256:..."``) of the file at ``path``, read in chunks."""
    if kind == "sha256":
        return f"sha256:{sha256_file(path, chunk)}"
    value = 0
    with open(path, "rb") as f:
        while block := f.read(chunk):
            value = crc32c(block, value)
    return crc_digest(value)


def matches(path: str | os.PathLike[str], digest: str) -> bool:
    """Whether the file at ``path`` has ``digest`` (``"crc32c:..."``, ``"sha256:..."`` or a bare sha256 hex)."""
    kind, _, value = digest.partition(":")
    if not value:
        kind, value = "sha256", digest
    if kind not in ("crc32c", "sha256"):
        return False
    return file_digest(path, kind) == f"{kind}:{value}"


def buffer_matches(data: bytes | memoryview | mmap.mmap, digest: str) -> bool:
    """:func:`matches` for bytes already in memory or mapped (a reader's mmap of
    the whole file), so that checking a digest reads the file no second time."""
    kind, _, value = digest.partition(":")
    if not value:
        kind, value = "sha256", digest
    if kind == "crc32c":
        return crc_digest(crc32c(data)) == f"crc32c:{value}"
    if kind == "sha256":
        import hashlib

        return hashlib.sha256(data).hexdigest() == value
    return False
