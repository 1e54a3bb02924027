"""Random access to the records of one ``.rec`` file through mmap."""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..._lazy import lazy_numpy
from ...errors import FormatError
from . import framing
from . import index as _index
from .framing import HEADER, LENGTH_BITS, MAGIC
from .framing import PADDING as _PADDING

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_numpy(globals())  # imported on first use: see fastdata/_lazy.py

_getpid = os.getpid
_unpack_header = HEADER.unpack_from


class Reader:
    """The records of one MXNet RecordIO file, by position or by ``.idx`` key.

    Positions count records in file order (an im2rec ``.idx`` lists keys in
    shuffled order; it is sorted by offset). Multi-part records come back
    joined, with the magic words the writer dropped put back.

    The index costs 16 bytes per record (two int64 arrays) plus 8 more per
    record once :meth:`get` is used with keys that are not consecutive. The
    file is memory-mapped lazily in each process (a pid check reopens it
    after ``fork``); pickling keeps only the paths.

    Args:
        rec: the ``.rec`` file.
        index: its ``.idx``. Default: ``rec`` with the ``.idx`` suffix if that
            exists, else the ``.rec`` is scanned front to back (keys are then
            the positions).

    Raises:
        FileNotFoundError: ``rec`` (or an explicit ``index``) does not exist.
        FormatError: malformed ``.idx``, an offset that is no record start,
            or (when scanning) a corrupt record. Reads raise it too, naming
            the file, byte offset and key, for any record whose framing is
            damaged or disagrees with the index.
    """

    def __init__(self, rec: str | os.PathLike[str], index: str | os.PathLike[str] | None = None) -> None:
        self.rec = os.fspath(rec)
        self.index = None if index is None else os.fspath(index)
        self._index_arg = index  # a FileBytes carries the index's bytes, read already (not pickled)
        if not os.path.isfile(self.rec):
            raise FileNotFoundError(f"{self.rec}: no such RecordIO file")
        if self.index is not None and not os.path.isfile(self.index):
            raise FileNotFoundError(
                f"{self.index}: no such .idx file (pass index=None to use the .rec's own .idx "
                "or scan the .rec, or write one with build_index)"
            )
        self._reset()
        self._load()

    def _reset(self) -> None:
        self._bounds: np.ndarray | None = None  # None: the index is not read yet (in this object)
        self._keys: np.ndarray = np.empty(0, np.int64)  # the others are read with it
        self._offs: memoryview = memoryview(b"")  # python-int view of _bounds for the hot path
        self._n = 0
        self._size = 0
        self._source: str | None = None
        self._mm: mmap.mmap | bytes = b""
        self._pid = -1
        self._key_base: int | None = None
        self._key_sorter: np.ndarray | None = None

    # -- pickling: paths only; the index and the mapping are rebuilt on first use
    def __getstate__(self) -> dict:
        return {"rec": self.rec, "index": self.index}

    def __setstate__(self, state: dict) -> None:
        self.rec, self.index = state["rec"], state["index"]
        self._index_arg = self.index
        self._reset()

    def _map(self) -> None:
        """(Re)open the memory map in this process."""
        with open(self.rec, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if self._bounds is not None and size != self._size:
                raise FormatError(
                    f"file is {size} bytes now but was {self._size} when its index was read",
                    path=self.rec, hint="the .rec changed underneath the reader; open it again",
                )
            self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        self._size = size
        self._pid = _getpid()

    def _load(self) -> np.ndarray:
        """Map the file in this process and read the index once; the record bounds."""
        if self._pid != _getpid():
            self._map()
        if self._bounds is not None:
            return self._bounds
        index = self.index
        if index is None and (default := _index.default_index_path(self.rec)).is_file():
            index = os.fspath(default)
        if index is not None:
            given = self._index_arg if index == self.index and self._index_arg is not None else index
            keys, offsets = _index.parse_index(given)
            keys, bounds = _index.file_order(keys, offsets, self._size, self.rec, index)
        else:
            starts = _index.scan(self._mm, self._size, self.rec)
            keys = np.arange(starts.size, dtype=np.int64)
            bounds = np.append(starts, np.int64(self._size))
        self._source = index
        self._keys, self._bounds = keys, bounds
        self._offs = bounds.data
        self._n = keys.size
        if self._n and int(keys[-1]) - int(keys[0]) == self._n - 1 and (np.diff(keys) == 1).all():
            self._key_base = int(keys[0])
        return bounds

    def __len__(self) -> int:
        if self._bounds is None:
            self._load()
        return self._n

    def __getitem__(self, i: int) -> bytes:
        """Payload of the ``i``-th record in file order (negative ``i`` counts from the end).

        Raises:
            IndexError: ``i`` out of range.
            FormatError: the record is damaged or does not end where the next begins.
        """
        if self._pid != _getpid():
            self._load()
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"record {i} out of range for {self.rec} ({self._n} records)")
        offs = self._offs
        start = offs[i]
        mm = self._mm
        magic, lrecord = _unpack_header(mm, start)
        end = start + 8 + lrecord
        stop = offs[i + 1]
        # fast path: a whole record (cflag 0) whose zero padding ends where the next record starts
        if (
            magic == MAGIC
            and lrecord >> LENGTH_BITS == 0
            and (end + 3) & ~3 == stop
            and (end == stop or mm[end:stop] == _PADDING[stop - end])
        ):
            return mm[start + 8 : end]
        return self._read_slow(i)

    def _read_slow(self, i: int) -> bytes:
        start, stop = self._offs[i], self._offs[i + 1]
        key = int(self._keys[i])
        spans, end = framing.walk(self._mm, start, self._size, self.rec, key=key)
        if end != stop:
            raise FormatError(
                f"record ends at byte {end} but the next record starts at {stop}",
                path=self.rec, offset=start, key=key,
                hint="the .rec is damaged (a length field) or its index skips a record: restore or re-convert "
                "the .rec; `fastdata verify` on the file compares the index with a fresh scan",
            )
        return framing.join(self._mm, spans)

    def __iter__(self) -> Iterator[bytes]:
        for i in range(len(self)):
            yield self[i]

    def key(self, i: int) -> int:
        """The ``.idx`` key of the ``i``-th record in file order."""
        if self._bounds is None:
            self._load()
        return int(self._keys[i])

    def keys(self) -> np.ndarray:
        """All keys in file order (int64, read-only view)."""
        if self._bounds is None:
            self._load()
        view = self._keys.view()
        view.flags.writeable = False
        return view

    def position(self, key: int) -> int:
        """The file-order position of ``key``.

        Raises:
            KeyError: no record has that key.
            FormatError: the key is listed more than once in the ``.idx``.
        """
        if self._bounds is None:
            self._load()
        key = int(key)
        if self._key_base is not None:
            pos = key - self._key_base
            if 0 <= pos < self._n:
                return pos
            raise KeyError(f"{self.rec}: no record with key {key}")
        sorter = self._key_sorter
        if sorter is None:
            sorter = np.argsort(self._keys, kind="stable")
            ordered = self._keys[sorter]
            dup = np.flatnonzero(ordered[1:] == ordered[:-1])
            if dup.size:
                twice = int(ordered[dup[0]])
                raise FormatError(
                    f"key {twice} is listed more than once in {self._source}, so lookup by key is ambiguous",
                    path=self.rec, key=twice, hint=f"rebuild the index: `fastdata index --force {self.rec}`",
                )
            self._key_sorter = sorter
        j = int(np.searchsorted(self._keys, key, sorter=sorter))
        if j < self._n:
            pos = int(sorter[j])
            if self._keys[pos] == key:
                return pos
        raise KeyError(f"{self.rec}: no record with key {key}")

    def get(self, key: int) -> bytes:
        """Payload of the record with ``.idx`` key ``key`` (KeyError if none)."""
        return self[self.position(key)]

    def offset(self, i: int) -> int:
        """Byte offset of the ``i``-th record's first magic word."""
        bounds = self._bounds if self._bounds is not None else self._load()
        if not -self._n <= i < self._n:
            raise IndexError(f"record {i} out of range for {self.rec} ({self._n} records)")
        return int(bounds[i % self._n])

    def offsets(self) -> np.ndarray:
        """Start offsets of all records in file order (int64, read-only view)."""
        bounds = self._bounds if self._bounds is not None else self._load()
        view = bounds[:-1]
        view.flags.writeable = False
        return view

    def mapping(self) -> mmap.mmap | bytes:
        """The whole ``.rec`` as this process maps it (read only), for a whole-file
        checksum that reads no byte the records do not (``fastdata verify``)."""
        if self._pid != _getpid():
            self._load()
        return self._mm

    def close(self) -> None:
        """Release the memory map (it reopens on the next read)."""
        if isinstance(self._mm, mmap.mmap):
            self._mm.close()
        self._mm = b""
        self._pid = -1  # the next read maps the file again

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Reader({self.rec!r}, {len(self)} records, index={self._source!r})"

