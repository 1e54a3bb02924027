"""RecordIO framing: the 8-byte part header, magic-word escaping and the
validated walk over one record's parts (see ``spec.md``)."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..._lazy import lazy_numpy
from ...errors import ConfigError, FormatError
from .. import speedups as _speedups

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_numpy(globals())  # imported on first use: see fastdata/_lazy.py

MAGIC = 0xCED7230A
MAGIC_BYTES = MAGIC.to_bytes(4, "little")  # b"\x0a\x23\xd7\xce"
HEADER = struct.Struct("<II")  # magic, lrecord
HEADER_SIZE = HEADER.size
LENGTH_BITS = 29
LENGTH_MASK = (1 << LENGTH_BITS) - 1
MAX_RECORD = 1 << LENGTH_BITS  # dmlc-core refuses records of this size or more

PADDING = (b"", b"\0", b"\0\0", b"\0\0\0")  # indexed by the padding length

# cflag values
WHOLE, FIRST, MIDDLE, LAST = 0, 1, 2, 3

_REBUILD_HINT = "the .rec is corrupt or truncated; re-create it, or re-convert the source data"


def padded(n: int) -> int:
    """``n`` rounded up to a multiple of 4 (every part is padded to that)."""
    return (n + 3) & ~3


def cut_points(data: bytes | bytearray | memoryview) -> list[int]:
    """Offsets of the 4-byte-aligned magic words inside ``data``.

    dmlc-core's writer ends a part at each of them and drops the 4 bytes; an
    unaligned magic word is ordinary data. Compiled where built
    (:mod:`..speedups`); else compared as aligned words by numpy, which is
    several times faster than ``bytes.find`` on JPEG data.
    """
    native = _speedups.native
    if native is not None:
        return native.magic_cuts(data)
    if len(data) < _NUMPY_FROM:
        return _cut_points_find(data)
    words = np.frombuffer(data, "<u4", len(data) >> 2)
    return (np.flatnonzero(words == MAGIC) << 2).tolist()


_NUMPY_FROM = 256  # below this, numpy's per-call cost exceeds bytes.find's


def _cut_points_find(data: bytes | bytearray | memoryview) -> list[int]:
    """:func:`cut_points` by ``bytes.find``: the reference the others are tested against."""
    if isinstance(data, memoryview):
        data = data.tobytes()
    cuts = []
    pos = data.find(MAGIC_BYTES)
    while pos >= 0:
        if pos & 3:
            pos = data.find(MAGIC_BYTES, pos + 1)
        else:
            cuts.append(pos)
            pos = data.find(MAGIC_BYTES, pos + 4)
    return cuts


def frame(data: bytes | bytearray) -> list[bytes | bytearray | memoryview]:
    """The byte chunks that store ``data`` as one (possibly multi-part) record."""
    size = len(data)
    if size >= MAX_RECORD:
        raise ConfigError(f"a RecordIO record must be shorter than 2**29 bytes, got {size}")
    cuts = cut_points(data)
    if not cuts:
        return [HEADER.pack(MAGIC, size), data, PADDING[padded(size) - size]]
    return _split(data, cuts)


def _split(data: bytes | bytearray, cuts: list[int]) -> list[bytes | bytearray | memoryview]:
    size = len(data)
    view = memoryview(data)
    chunks: list[bytes | bytearray | memoryview] = []
    start = 0
    for n, cut in enumerate(cuts):
        # parts between aligned cuts have lengths that are multiples of 4: no padding
        chunks += [HEADER.pack(MAGIC, ((FIRST if n == 0 else MIDDLE) << LENGTH_BITS) | (cut - start)), view[start:cut]]
        start = cut + 4
    tail = size - start
    chunks += [HEADER.pack(MAGIC, (LAST << LENGTH_BITS) | tail), view[start:], PADDING[padded(tail) - tail]]
    return chunks


def frame_parts(head: bytes, body: bytes | bytearray | memoryview) -> tuple[list, bool]:
    """The chunks that store ``head + body`` as one record, without joining them.

    ``head`` (an IRHeader and its labels: always a multiple of 4 bytes) is
    searched for magic words as well as ``body``; since it ends on a 4-byte
    boundary, no aligned word spans the two. In the common case (no magic
    word) the chunks are ``[part header + head, body, padding]``; otherwise
    the joined payload is framed like :func:`frame` does.

    Returns:
        ``(chunks, whole)``: ``whole`` is True for that common single-part
        case, where ``chunks[1] is body``.

    Raises:
        ConfigError: the record would be 2**29 bytes or more.
        ValueError: ``head`` is not a multiple of 4 bytes long.
    """
    lead = len(head)
    if lead & 3:
        raise ValueError(f"frame_parts: the head must be a multiple of 4 bytes long, got {lead}")
    size = lead + len(body)
    if size >= MAX_RECORD:
        raise ConfigError(f"a RecordIO record must be shorter than 2**29 bytes, got {size}")
    if (lead and cut_points(head)) or cut_points(body):
        return _split(head + body, cut_points(head + body)), False  # rare: not worth a copy-free path
    return [HEADER.pack(MAGIC, size) + head, body, PADDING[padded(size) - size]], True


def walk(buf, offset: int, limit: int, path: str, key: object = None) -> tuple[list[tuple[int, int]], int]:
    """Validate the record starting at ``offset`` and locate its parts.

    Args:
        buf: the file's bytes (an mmap or bytes).
        offset: position of the record's first magic word.
        limit: end of the file (nothing may extend past it).
        path, key: named in errors.

    Returns:
        ``(spans, end)``: the ``(start, stop)`` of each part's payload and the
        padded end of the record (where the next record starts).

    Raises:
        FormatError: bad magic, bad cflag sequence, a length running past
            ``limit``, or a misaligned continuation part.
    """
    spans: list[tuple[int, int]] = []
    pos = offset
    while True:
        if pos + HEADER_SIZE > limit:
            raise _damaged(f"truncated record: {limit - pos} bytes left where an 8-byte part header should be",
                           path, pos, key)
        magic, lrecord = HEADER.unpack_from(buf, pos)
        if magic != MAGIC:
            raise _bad_magic(magic, path, pos, key)
        cflag, length = lrecord >> LENGTH_BITS, lrecord & LENGTH_MASK
        expected = (WHOLE, FIRST) if not spans else (MIDDLE, LAST)
        if cflag not in expected:
            raise _damaged(f"continuation flag {cflag} where {' or '.join(map(str, expected))} must follow "
                           f"(part {len(spans)} of the record)", path, pos, key)
        start = pos + HEADER_SIZE
        end = start + padded(length)
        if end > limit:
            raise _damaged(f"record part of {length} bytes runs past the end of the file ({limit} bytes)",
                           path, pos, key)
        spans.append((start, start + length))
        if cflag in (WHOLE, LAST):
            if buf[start + length : end] != PADDING[end - start - length]:
                raise _damaged(f"non-zero padding after a {length}-byte record part: its length field is damaged",
                               path, pos, key)
            return spans, end
        if length & 3:
            raise _damaged(f"continuation part of {length} bytes: dmlc-core only splits at 4-byte-aligned offsets",
                           path, pos, key)
        pos = end


def _damaged(problem: str, path: str, offset: int, key: object) -> FormatError:
    """The error :func:`walk` raises for a damaged record part at ``offset``: rebuild the file."""
    return FormatError(problem, path=path, offset=offset, key=key, hint=_REBUILD_HINT)


def _bad_magic(magic: int, path: str, offset: int, key: object) -> FormatError:
    """No record starts at ``offset``: the .rec is damaged there, or the .idx is another file's."""
    return FormatError(
        f"bad magic word {magic:08x} (expected {MAGIC:08x}): not the start of a RecordIO record",
        path=path, offset=offset, key=key,
        hint=f"the .rec is damaged here (restore it or re-convert), or its .idx belongs to another .rec "
        f"(rebuild the index: `fastdata index --force {path}`)",
    )


def join(buf, spans: list[tuple[int, int]]) -> bytes:
    """A record's payload from its part spans, with the dropped magic words restored."""
    if len(spans) == 1:
        start, stop = spans[0]
        return bytes(buf[start:stop])
    return MAGIC_BYTES.join(bytes(buf[start:stop]) for start, stop in spans)
