"""Position -> key for an LMDB, kept compact.

LMDB has no "n-th entry" lookup, so random access by position needs the key
list. One cursor walk over the keys (the values stay untouched; about ten
million keys a second) builds it. When the keys are fixed-width decimal
numbers that count up by one, as fastdata's own shards write them, the list
collapses into arithmetic and nothing per key is kept. Otherwise the keys sit
in one bytes buffer plus an offsets array: about ``len(key) + 4`` bytes per
key instead of a Python list of bytes objects (~40 bytes of overhead each).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

_BLOCK = 1 << 16
_MAX_DIGITS = 18  # int64 holds any 18-digit decimal


class KeyIndex:
    """Keys of one database in key order; ``index.key(i)`` is the i-th key (0 <= i < len)."""

    def __init__(self, count: int, *, first: int = 0, width: int = 0, buffer: bytes = b"", offsets: np.ndarray | None = None):
        self._count = count
        self._first = first
        self._width = width  # > 0: arithmetic keys
        self._buffer = buffer
        self._offsets = offsets

    @classmethod
    def scan(cls, txn: Any) -> KeyIndex:
        """Walk the keys of ``txn``'s main database once (an ``lmdb.Transaction``)."""
        walk = txn.cursor().iternext(keys=True, values=False)
        chunks: list[bytes] = []
        lengths: list[np.ndarray] = []
        while block := list(itertools.islice(walk, _BLOCK)):
            chunks.append(b"".join(block))
            lengths.append(np.fromiter(map(len, block), dtype=np.int64, count=len(block)))
        if not chunks:
            return cls(0)
        buffer = b"".join(chunks)
        lens = np.concatenate(lengths)
        count = len(lens)
        arithmetic = _consecutive_decimals(buffer, lens)
        if arithmetic is not None:
            return cls(count, first=arithmetic[0], width=arithmetic[1])
        offsets = np.zeros(count + 1, dtype=np.int32 if len(buffer) < 2**31 else np.int64)
        np.cumsum(lens, out=offsets[1:])
        return cls(count, buffer=buffer, offsets=offsets)

    @property
    def arithmetic(self) -> bool:
        """True when keys are computed (``b"%0{width}d" % (first + i)``), not stored."""
        return self._width > 0

    @property
    def nbytes(self) -> int:
        """Memory the index holds for its keys."""
        return len(self._buffer) + (self._offsets.nbytes if self._offsets is not None else 0)

    def __len__(self) -> int:
        return self._count

    def key(self, i: int) -> bytes:
        """The i-th key; ``i`` must already be in ``range(len(self))``."""
        if self._width:
            return b"%0*d" % (self._width, self._first + i)
        offsets = self._offsets
        return self._buffer[offsets[i] : offsets[i + 1]]  # type: ignore[index]  # set unless _width (above)


def _consecutive_decimals(buffer: bytes, lens: np.ndarray) -> tuple[int, int] | None:
    """``(first, width)`` when every key is a ``width``-digit number, each one more than the last."""
    width = int(lens[0])
    if not 0 < width <= _MAX_DIGITS or not (lens == width).all():
        return None
    digits = np.frombuffer(buffer, dtype=np.uint8).reshape(len(lens), width)
    if not ((digits >= ord("0")) & (digits <= ord("9"))).all():
        return None
    values = np.zeros(len(lens), dtype=np.int64)
    for column in range(width):  # column by column keeps the temporaries at one int64 per key
        values *= 10
        values += digits[:, column] - ord("0")
    if len(values) > 1 and not (np.diff(values) == 1).all():
        return None
    return int(values[0]), width
