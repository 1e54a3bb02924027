"""Whole-file GZIP/ZLIB compression of TFRecord files (TensorFlow's ``compression_type``).

Compression wraps the file, not each record, so compressed files can only be
read from the start; :func:`detect` decides which kind a file is.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import zlib
from typing import BinaryIO

from ...errors import ConfigError
from .framing import HEADER, masked_crc

KINDS = ("none", "gzip", "zlib")
COMPRESSED_HINT = (
    "compression wraps the whole file, so a record can only be reached by decompressing from "
    "the start and offsets/indexes do not apply. Read it sequentially (iterate over the Reader), "
    "or decompress it once with fastdata.formats.tfrecord.decompress(src, dst) (or `gunzip -k`) "
    "and use the uncompressed copy for random access"
)
_ALIASES = {"": "none", "none": "none", "gzip": "gzip", "gz": "gzip", "zlib": "zlib"}


def normalize(compression: str | None) -> str | None:
    """``None`` (auto-detect) or one of :data:`KINDS`; TensorFlow's ``"GZIP"``/``"ZLIB"`` are accepted."""
    if compression is None:
        return None
    if not isinstance(compression, str) or compression.lower() not in _ALIASES:
        raise ConfigError(
            f"compression must be None (auto-detect), 'none', 'gzip' or 'zlib', got {compression!r}"
        )
    return _ALIASES[compression.lower()]


def detect(path: str | os.PathLike[str], compression: str | None = None) -> str:
    """The compression of ``path``: the given kind, else guessed from its first bytes and suffix.

    An uncompressed file is recognised by a valid length CRC in its first
    header, which a compressed file matches with chance 2**-32; otherwise the
    gzip magic (``1f 8b``) or a ``.gz`` suffix means gzip, and a valid zlib
    header or a ``.zz``/``.zlib`` suffix means zlib.
    """
    kind = normalize(compression)
    if kind is not None:
        return kind
    with open(path, "rb") as f:
        return sniff(f.read(HEADER), path)


def sniff(head: bytes, path: str | os.PathLike[str]) -> str:
    """:func:`detect`'s guess from the file's first ``HEADER`` bytes, already read
    (a reader that maps the file reads them through the same open file)."""
    if len(head) == HEADER and masked_crc(head[:8]) == struct.unpack_from("<I", head, 8)[0]:
        return "none"
    name = os.fspath(path).lower()
    if head[:2] == b"\x1f\x8b" or name.endswith(".gz"):
        return "gzip"
    if name.endswith((".zz", ".zlib")) or _is_zlib_header(head):
        return "zlib"
    return "none"


def _is_zlib_header(head: bytes) -> bool:
    # RFC 1950: deflate method 8, window <= 32K, (CMF*256 + FLG) % 31 == 0.
    return len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0


def open_stream(path: str | os.PathLike[str], kind: str) -> io.BufferedIOBase:
    """A readable binary stream of the decompressed contents of ``path``."""
    if kind == "gzip":
        return gzip.open(path, "rb")
    raw = open(path, "rb")  # noqa: SIM115 -- the caller closes the returned stream
    if kind == "zlib":
        return io.BufferedReader(_ZlibReader(raw), buffer_size=1 << 16)
    return raw


class _ZlibReader(io.RawIOBase):
    """Raw stream decompressing a zlib-wrapped file (TensorFlow's ZLIB option)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._z = zlib.decompressobj()
        self._pending = b""
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while self._pos >= len(self._pending):
            if self._z.unconsumed_tail:  # output was capped: finish the input we already have
                data = self._z.unconsumed_tail
            elif self._z.eof:
                return 0
            else:
                data = self._raw.read(1 << 16)
                if not data:
                    raise EOFError("zlib stream ends before its end-of-stream marker")
            self._pending, self._pos = self._z.decompress(data, 1 << 20), 0
        n = min(len(buffer), len(self._pending) - self._pos)
        buffer[:n] = self._pending[self._pos : self._pos + n]
        self._pos += n
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()
