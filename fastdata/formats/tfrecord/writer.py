"""Write TFRecord files (uncompressed) and, optionally, their index."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from ..crc import crc32c
from .framing import OVERHEAD, frame
from .index import default_index_path, write_index_file

if TYPE_CHECKING:
    from typing_extensions import Self


class Writer:
    """Append framed records to a new TFRecord file.

    Args:
        path: the file to create (truncated if it exists).
        index: also write an index (``offset length`` lines) here when the
            writer closes; ``True`` means ``path + ".idx"``; ``None`` (default) writes none.

    Use as a context manager. If the ``with`` block raises, the data file is
    closed as it stands and no index is written. Records are written as
    given; use :func:`encode_example` to make an Example. For an atomic,
    indexed image shard use :func:`write_shard`.
    """

    def __init__(self, path: str | os.PathLike[str], index: str | os.PathLike[str] | bool | None = None) -> None:
        self.path = os.fspath(path)
        if index is True:
            index = default_index_path(self.path)
        self.index = os.fspath(index) if index else None
        self._file: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115 -- closed by close()/__exit__
        self._sizes: list[int] = []
        self.bytes_written = 0
        self.file_crc = 0  # CRC32C of everything written so far

    def write(self, record: bytes | bytearray | memoryview) -> None:
        """Append one record (its serialized bytes)."""
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"Writer.write takes the record's bytes, got {type(record).__name__}; "
                "serialize features with encode_example(...) first"
            )
        if self._file is None:
            raise ValueError(f"{self.path}: write to a closed Writer")
        framed = frame(record)
        self._file.write(framed)
        self.file_crc = crc32c(framed, self.file_crc)
        size = len(record) + OVERHEAD
        self._sizes.append(size)
        self.bytes_written += size

    def __len__(self) -> int:
        return len(self._sizes)

    def close(self) -> None:
        """Flush and close the file, then write the index (if one was asked for)."""
        if self._file is None:
            return
        self._file.close()
        self._file = None
        if self.index is not None:
            sizes = np.array(self._sizes, dtype=np.int64)
            offsets = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64) if len(sizes) else sizes
            write_index_file(self.index, offsets, sizes)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        elif self._file is not None:
            self._file.close()
            self._file = None


def decompress(
    src: str | os.PathLike[str],
    dst: str | os.PathLike[str],
    index: str | os.PathLike[str] | bool | None = True,
    *,
    verify: bool = True,
) -> int:
    """Copy a (GZIP/ZLIB-compressed) TFRecord file to an uncompressed one, for random access.

    Records are checked (``verify``) and rewritten unchanged; ``index``
    defaults to ``dst + ".idx"``. Returns the number of records.
    """
    from .reader import Reader

    with Writer(dst, index=index) as writer:
        for record in Reader(src, verify=verify):
            writer.write(record)
    return len(writer)
