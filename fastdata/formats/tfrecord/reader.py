"""Random-access and sequential reading of one TFRecord file."""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError, FormatError
from . import compression as _compression
from .framing import (
    HEADER,
    OVERHEAD,
    check_header,
    data_crc_error,
    iter_stream,
    masked_crc,
    scan,
)
from .index import check_index, default_index_path, read_index

if TYPE_CHECKING:
    from typing_extensions import Self

_unpack_header = struct.Struct("<QI").unpack_from
_unpack_u32 = struct.Struct("<I").unpack_from
_pack_u64 = struct.Struct("<Q").pack

# The header CRC covers only the length, which the index already gives: look
# the expected value up instead of slicing and hashing 8 bytes per read.
_LENGTH_CRCS: dict[int, int] = {}


def _length_crc(length: int) -> int:
    """Masked CRC-32C of ``length`` as 8 little-endian bytes (memoised, bounded)."""
    crc = masked_crc(_pack_u64(length))
    if len(_LENGTH_CRCS) >= 1 << 16:
        _LENGTH_CRCS.clear()
    _LENGTH_CRCS[length] = crc
    return crc

# os.getpid() is a system call (glibc no longer caches it): too slow for a
# per-record check. Keep the pid in a cell that fork children refresh.
_PID = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _PID.__setitem__(0, os.getpid()))


class Reader:
    """The records of one TFRecord file, by position or in order.

    Args:
        path: the TFRecord file.
        index: its index file (``offset length`` lines). Default: use
            ``path + ".idx"`` when that file exists, else find the records by
            scanning the file's headers once per process (cost grows with the
            record count, not the data size).
        compression: ``None`` detects it (see :func:`compression.detect`);
            ``"none"``, ``"gzip"`` or ``"zlib"`` (TensorFlow's ``"GZIP"``/``"ZLIB"`` too) force it.
        verify: check both CRCs of every record read (default). ``False``
            skips them; lengths are still bounds-checked.

    ``len(r)`` and ``r[i]`` (``bytes`` of record ``i``; negative ``i`` counts
    from the end) need an uncompressed file; compressed files support
    ``len`` and iteration only (``len`` decompresses the whole file once per
    process) and ``r[i]`` raises ConfigError saying how to decompress.

    The file is memory-mapped lazily in each process (the pid is checked),
    and pickling keeps only the arguments, so a Reader can be handed to
    DataLoader workers under fork or spawn. Offsets are held as two int64
    arrays (16 bytes per record).

    Raises:
        ConfigError: missing file or index, bad ``compression``, random access
            into a compressed file.
        FormatError: a CRC mismatch, truncated record, impossible length or
            stale index, naming the file and byte offset.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        index: str | os.PathLike[str] | None = None,
        compression: str | None = None,
        verify: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self.index = None if index is None else os.fspath(index)
        self._index_arg = index  # a FileBytes carries the index's bytes, read already (not pickled)
        self.compression = _compression.normalize(compression)
        self.verify = bool(verify)
        if not os.path.isfile(self.path):
            raise ConfigError(f"{self.path}: no such TFRecord file")
        if self.index is not None and not os.path.isfile(self.index):
            raise ConfigError(
                f"{self.index}: index file not found; build it with "
                f"fastdata.formats.tfrecord.build_index({self.path!r}, {self.index!r}), or pass index=None to scan"
            )
        self._reset()

    # -- per-process state -------------------------------------------------
    def _reset(self) -> None:
        self._pid: int | None = None
        self._mm: mmap.mmap | bytes = b""  # b"": not mapped (yet, or compressed)
        self._kind = ""  # "none", "gzip" or "zlib" once _open has looked
        self._offsets: np.ndarray | None = None
        self._sizes: np.ndarray | None = None
        self._off_view: memoryview | None = None
        self._size_view: memoryview | None = None
        self._count: int | None = None

    def _open(self) -> None:
        """(Re)open in this process: detect compression, map the file, load or build offsets."""
        self.close()
        with open(self.path, "rb") as f:  # one open: sniffed and mapped through the same file
            kind = self.compression or _compression.sniff(f.read(HEADER), self.path)
            if kind == "none":
                size = os.fstat(f.fileno()).st_size
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self._kind = kind
        if kind == "none":
            if self._offsets is None:
                self._set_offsets(*self._load_offsets(size))
        elif self.index is not None:
            raise ConfigError(
                f"{self.path} is {kind.upper()}-compressed and cannot use the index {self.index}: "
                f"{_compression.COMPRESSED_HINT}"
            )
        self._pid = _PID[0]

    def _load_offsets(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        index = self.index
        if index is None and os.path.isfile(default_index_path(self.path)):
            index = default_index_path(self.path)
        if index is None:
            return scan(self._mm, size, self.path, self.verify)
        given = self._index_arg if index == self.index and self._index_arg is not None else index
        offsets, sizes = read_index(given)
        check_index(offsets, sizes, size, self.path, index)
        return offsets, sizes

    def _set_offsets(self, offsets: np.ndarray, sizes: np.ndarray) -> None:
        self._offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self._sizes = np.ascontiguousarray(sizes, dtype=np.int64)
        # memoryview indexing returns Python ints, several times faster than numpy scalars
        self._off_view = self._offsets.data
        self._size_view = self._sizes.data
        self._count = len(self._offsets)

    def close(self) -> None:
        """Unmap the file; the reader reopens it on next use."""
        if isinstance(self._mm, mmap.mmap) and self._pid == _PID[0]:
            self._mm.close()
        self._mm = b""
        self._pid = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getstate__(self) -> dict:
        return {"path": self.path, "index": self.index, "compression": self.compression, "verify": self.verify}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._index_arg = self.index
        self._reset()

    # -- public API ---------------------------------------------------------
    @property
    def offsets(self) -> np.ndarray:
        """Byte offset of each record (int64), uncompressed files only."""
        return self._require_random_access()[0]

    @property
    def sizes(self) -> np.ndarray:
        """Framed size of each record (int64, data length + 16), uncompressed files only."""
        return self._require_random_access()[1]

    def mapping(self) -> mmap.mmap | bytes:
        """The whole uncompressed file as this process maps it (read only), for a
        whole-file checksum that reads no byte the records do not (``fastdata verify``)."""
        self._require_random_access()
        return self._mm

    @property
    def compressed(self) -> bool:
        if self._pid != _PID[0]:
            self._open()
        return self._kind != "none"

    def __len__(self) -> int:
        if self._pid != _PID[0]:
            self._open()
        if self._count is None:  # compressed: count by decompressing once
            self._count = sum(1 for _ in self)
        return self._count

    def __getitem__(self, i: int) -> bytes:
        if self._pid != _PID[0]:
            self._open()
        try:
            # None until _open maps an uncompressed file: the TypeError is caught below
            offset = self._off_view[i]  # type: ignore[index]  # no is-None test on the hot path
            length = self._size_view[i] - OVERHEAD  # type: ignore[index]  # as above
        except TypeError:
            if self._off_view is None:
                self._require_random_access()
            raise TypeError(f"record indices must be integers, got {type(i).__name__}") from None
        except IndexError:
            raise IndexError(f"record {i} out of range: {self.path} has {self._count} records") from None
        mm = self._mm
        start = offset + HEADER
        if not self.verify:
            return mm[start : start + length]
        stored_length, stored = _unpack_header(mm, offset)
        crc = _LENGTH_CRCS.get(length)
        if crc is None:
            crc = _length_crc(length)
        if stored_length != length or crc != stored:
            self._raise_header(offset, length)
        data = mm[start : start + length]
        crc = masked_crc(data)
        (stored,) = _unpack_u32(mm, start + length)
        if crc != stored:
            raise data_crc_error(self.path, offset, stored, crc)
        return data

    def __iter__(self) -> Iterator[bytes]:
        if self._pid != _PID[0]:
            self._open()
        if self._kind == "none":
            for i in range(len(self)):
                yield self[i]
            return
        with _compression.open_stream(self.path, self._kind) as stream:
            count = 0
            for record in iter_stream(stream, self.path, self.verify):
                count += 1
                yield record
        self._count = count

    def __repr__(self) -> str:
        return f"Reader({self.path!r}, index={self.index!r}, compression={self.compression!r}, verify={self.verify})"

    # -- errors ---------------------------------------------------------------
    def _require_random_access(self) -> tuple[np.ndarray, np.ndarray]:
        """The offsets and sizes, or the error that says why a compressed file has none."""
        if self._pid != _PID[0]:
            self._open()
        if self._kind != "none":
            raise ConfigError(
                f"{self.path} is {self._kind.upper()}-compressed, so it has no random access: "
                f"{_compression.COMPRESSED_HINT}"
            )
        assert self._offsets is not None and self._sizes is not None  # _open read them: the file is uncompressed
        return self._offsets, self._sizes

    def _raise_header(self, offset: int, length: int) -> None:
        size = os.path.getsize(self.path)
        found = check_header(self._mm, offset, size - offset, self.path, True)  # raises on a bad CRC
        raise FormatError(
            f"record length {found} disagrees with the index, which says {length}",
            path=self.path, offset=offset,
            hint="the index is stale or belongs to another file; rebuild it with build_index",
        )
