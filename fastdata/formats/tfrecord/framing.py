"""TFRecord framing: ``uint64 length | masked crc32c(length) | data | masked crc32c(data)``.

Everything here works on byte buffers and file objects; the mmap, index and
process bookkeeping live in :mod:`.reader`.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ...errors import FormatError
from ..crc import crc32c

HEADER = 12  # uint64 length + uint32 masked CRC of those 8 bytes
FOOTER = 4  # uint32 masked CRC of the data
OVERHEAD = HEADER + FOOTER
MASK_DELTA = 0xA282EAD8

_header = struct.Struct("<QI")
_u32 = struct.Struct("<I")
_u64 = struct.Struct("<Q")

_HINT_CORRUPT = (
    "the file is corrupt or truncated; re-copy or re-convert it, or open it with "
    "verify=False to skip checksums (not recommended)"
)


def masked_crc(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of ``data``, masked the way TFRecord stores it (rotate right 15, add a constant)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + MASK_DELTA) & 0xFFFFFFFF


def frame(data: bytes | bytearray | memoryview) -> bytes:
    """One framed record: header, ``data``, footer."""
    length = _u64.pack(len(data))
    return b"".join((length, _u32.pack(masked_crc(length)), data, _u32.pack(masked_crc(data))))


def check_header(buf, offset: int, remaining: int, path: str, verify: bool) -> int:
    """Return the data length of the record whose header starts at ``offset`` in ``buf``.

    ``remaining`` is the number of bytes from ``offset`` to the end of the file.
    Raises FormatError (naming ``path`` and ``offset``) on a truncated header,
    a length-CRC mismatch (when ``verify``) or a length that runs past the end.
    """
    if remaining < HEADER:
        raise FormatError(
            f"truncated record header: {remaining} bytes left, a header needs {HEADER}",
            path=path, offset=offset, hint=_HINT_CORRUPT,
        )
    length, stored = _header.unpack_from(buf, offset)
    if verify and masked_crc(buf[offset : offset + 8]) != stored:
        raise FormatError(
            f"length CRC mismatch (length field reads {length}); not a TFRecord file, "
            "or the length bytes are corrupt",
            path=path, offset=offset, hint=_HINT_CORRUPT,
        )
    if length > remaining - OVERHEAD:
        raise FormatError(
            f"record claims {length} data bytes but only {max(remaining - OVERHEAD, 0)} remain "
            "(truncated file or corrupt length)",
            path=path, offset=offset, hint=_HINT_CORRUPT,
        )
    return length


def check_data(buf, offset: int, length: int, path: str) -> None:
    """Raise FormatError unless the data CRC of the record at ``offset`` matches."""
    start = offset + HEADER
    actual = masked_crc(buf[start : start + length])
    (stored,) = _u32.unpack_from(buf, start + length)
    if actual != stored:
        raise data_crc_error(path, offset, stored, actual)


def data_crc_error(path: str, offset: int, stored: int, actual: int) -> FormatError:
    return FormatError(
        f"data CRC mismatch (stored {stored:#010x}, computed {actual:#010x})",
        path=path, offset=offset, hint=_HINT_CORRUPT,
    )


def scan(buf, size: int, path: str, verify: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Walk the headers of an uncompressed TFRecord buffer of ``size`` bytes.

    Returns ``(offsets, sizes)``, two int64 arrays where ``sizes`` counts the
    whole framed record (``16 + data length``), as in an index file. Only the
    length CRCs are checked here; data CRCs are checked when records are read.
    """
    offsets: list[int] = []
    pos = 0
    while pos < size:
        length = check_header(buf, pos, size - pos, path, verify)
        offsets.append(pos)
        pos += OVERHEAD + length
    starts = np.array(offsets, dtype=np.int64)
    ends = np.append(starts[1:], np.int64(size))
    return starts, ends - starts


def iter_stream(stream: BinaryIO | io.BufferedIOBase, path: str, verify: bool = True) -> Iterator[bytes]:
    """Yield the data of each record read sequentially from ``stream`` (e.g. a gzip file).

    Offsets in errors are positions in the *decompressed* stream.
    """
    pos = 0
    while True:
        head = _read_exact(stream, HEADER, path)
        if not head:
            return
        if len(head) < HEADER:
            raise FormatError(
                f"truncated record header: {len(head)} bytes left, a header needs {HEADER} "
                "(decompressed stream)", path=path, offset=pos, hint=_HINT_CORRUPT,
            )
        length, stored = _header.unpack(head)
        if verify and masked_crc(head[:8]) != stored:
            raise FormatError(
                f"length CRC mismatch in the decompressed stream (length field reads {length})",
                path=path, offset=pos, hint=_HINT_CORRUPT,
            )
        # Read in bounded chunks so a corrupt huge length fails at end of stream
        # instead of allocating the claimed size up front.
        body = _read_exact(stream, length + FOOTER, path)
        if len(body) < length + FOOTER:
            raise FormatError(
                f"record claims {length} data bytes but the decompressed stream ends after "
                f"{max(len(body) - FOOTER, 0)}", path=path, offset=pos, hint=_HINT_CORRUPT,
            )
        data = body[:length]
        if verify:
            actual = masked_crc(data)
            (stored,) = _u32.unpack_from(body, length)
            if actual != stored:
                raise data_crc_error(path, pos, stored, actual)
        yield data
        pos += OVERHEAD + length


_CHUNK = 16 << 20


def _read_exact(stream: BinaryIO | io.BufferedIOBase, n: int, path: str) -> bytes:
    """Read up to ``n`` bytes, fewer only at end of stream; chunked for huge ``n``."""
    try:
        if n <= _CHUNK:
            out = stream.read(n)
            while len(out) < n:
                more = stream.read(n - len(out))
                if not more:
                    break
                out += more
            return out
        parts = []
        got = 0
        while got < n:
            part = stream.read(min(_CHUNK, n - got))
            if not part:
                break
            parts.append(part)
            got += len(part)
        return b"".join(parts)
    except (OSError, EOFError, ValueError, zlib.error) as exc:  # gzip/zlib raise these on corrupt streams
        raise FormatError(f"cannot decompress: {exc}", path=path, hint=_HINT_CORRUPT) from exc
