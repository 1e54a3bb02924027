"""RecordIO framing: the 8-byte part header, magic-word escaping and the
validated walk over one record's parts (see ``spec.md``)."""

from __future__ import annotations

import struct

from ...errors import ConfigError, FormatError

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


def cut_points(data: bytes | bytearray) -> list[int]:
    """Offsets of the 4-byte-aligned magic words inside ``data``.

    dmlc-core's writer ends a part at each of them and drops the 4 bytes; an
    unaligned magic word is ordinary data.
    """
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
            raise FormatError(
                f"truncated record: {limit - pos} bytes left where an 8-byte part header should be",
                path=path, offset=pos, key=key, hint=_REBUILD_HINT,
            )
        magic, lrecord = HEADER.unpack_from(buf, pos)
        if magic != MAGIC:
            raise FormatError(
                f"bad magic word {magic:08x} (expected {MAGIC:08x}): not the start of a RecordIO record",
                path=path, offset=pos, key=key,
                hint="the file is corrupt, or the .idx does not belong to this .rec "
                "(rebuild it with fastdata.formats.recordio.build_index)",
            )
        cflag, length = lrecord >> LENGTH_BITS, lrecord & LENGTH_MASK
        expected = (WHOLE, FIRST) if not spans else (MIDDLE, LAST)
        if cflag not in expected:
            raise FormatError(
                f"continuation flag {cflag} where {' or '.join(map(str, expected))} must follow "
                f"(part {len(spans)} of the record)",
                path=path, offset=pos, key=key, hint=_REBUILD_HINT,
            )
        start = pos + HEADER_SIZE
        end = start + padded(length)
        if end > limit:
            raise FormatError(
                f"record part of {length} bytes runs past the end of the file ({limit} bytes)",
                path=path, offset=pos, key=key, hint=_REBUILD_HINT,
            )
        spans.append((start, start + length))
        if cflag in (WHOLE, LAST):
            if buf[start + length : end] != PADDING[end - start - length]:
                raise FormatError(
                    f"non-zero padding after a {length}-byte record part: its length field is damaged",
                    path=path, offset=pos, key=key, hint=_REBUILD_HINT,
                )
            return spans, end
        if length & 3:
            raise FormatError(
                f"continuation part of {length} bytes: dmlc-core only splits at 4-byte-aligned offsets",
                path=path, offset=pos, key=key, hint=_REBUILD_HINT,
            )
        pos = end


def join(buf, spans: list[tuple[int, int]]) -> bytes:
    """A record's payload from its part spans, with the dropped magic words restored."""
    if len(spans) == 1:
        start, stop = spans[0]
        return bytes(buf[start:stop])
    return MAGIC_BYTES.join(bytes(buf[start:stop]) for start, stop in spans)
