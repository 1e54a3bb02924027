"""The ``.idx`` file: ``key<TAB>offset`` lines, parsed into int64 arrays.

im2rec writes the lines in its (shuffled) list order, so readers sort by
offset to get file order. A 1.28M-line index parses in about 0.1 s: the
common, strictly formatted case is checked and converted with whole-array
numpy operations; anything else (spaces, CRLF, blank lines, negative keys)
takes a line-by-line path that also names the first malformed line.
"""

from __future__ import annotations

import mmap
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from ..._lazy import lazy_numpy
from ...errors import FormatError
from ..checksums import read_bytes
from . import framing
from .framing import HEADER_SIZE

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_numpy(globals())  # imported on first use: see fastdata/_lazy.py

_MAX_FAST_DIGITS = 18  # int64 holds any 18-digit decimal
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_IR_ID = 8  # IRHeader.id sits at bytes 8..16 of an image record's payload


def default_index_path(rec: str | os.PathLike[str]) -> Path:
    """``train.rec`` -> ``train.idx`` (where MXNet and im2rec put it)."""
    return Path(rec).with_suffix(".idx")


def parse_index(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """Read an ``.idx`` file.

    Returns:
        ``(keys, offsets)``: int64 arrays in the file's line order.

    Raises:
        FormatError: a line that is not two integers (names the line and its
            byte offset in the ``.idx``).
    """
    data = read_bytes(path)  # a FileBytes: read already, for its digest
    path = os.fspath(path)
    parsed = _parse_strict(data)
    if parsed is None:
        parsed = _parse_lines(data, path)
    return parsed


def _parse_strict(data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """Whole-array parse of ``digits\\tdigits\\n`` lines; None if the text is not exactly that."""
    if not data:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if not data.endswith(b"\n") or data.translate(None, b"0123456789\t\n"):
        return None
    arr = np.frombuffer(data, np.uint8)
    tabs = np.flatnonzero(arr == 9)
    newlines = np.flatnonzero(arr == 10)
    if len(tabs) != len(newlines):
        return None
    line_starts = np.empty_like(newlines)
    line_starts[0] = 0
    line_starts[1:] = newlines[:-1] + 1
    key_len = tabs - line_starts
    offset_len = newlines - tabs - 1
    # both fields non-empty, in order, short enough for int64: one tab inside every line
    if min(key_len.min(), offset_len.min()) < 1 or max(key_len.max(), offset_len.max()) > _MAX_FAST_DIGITS:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            values = np.fromstring(data, dtype=np.int64, sep=" ")  # any whitespace separates
        except (AttributeError, TypeError, ValueError):  # a numpy without text-mode fromstring
            values = np.array(data.split(), dtype=np.int64)
    if values.size != 2 * len(newlines):
        return None
    return values[0::2].copy(), values[1::2].copy()


def _parse_lines(data: bytes, path: str) -> tuple[np.ndarray, np.ndarray]:
    keys: list[int] = []
    offsets: list[int] = []
    pos = 0
    for number, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()
        if fields:
            try:
                if len(fields) != 2:
                    raise ValueError
                key, offset = int(fields[0]), int(fields[1])
                if not (_INT64_MIN <= key <= _INT64_MAX and _INT64_MIN <= offset <= _INT64_MAX):
                    raise ValueError
            except ValueError:
                raise FormatError(
                    f"line {number} is {line[:80]!r}, expected 'key<TAB>offset' (two 64-bit integers)",
                    path=path, offset=pos, hint=f"rebuild the index: `fastdata index --force {Path(os.fspath(path)).with_suffix('.rec')}`",
                ) from None
            keys.append(key)
            offsets.append(offset)
        pos += len(line) + 1
    return np.array(keys, dtype=np.int64), np.array(offsets, dtype=np.int64)


def file_order(
    keys: np.ndarray, offsets: np.ndarray, size: int, rec: str, index: str
) -> tuple[np.ndarray, np.ndarray]:
    """Validate an index against its ``.rec`` and sort it into file order.

    Returns:
        ``(keys, bounds)``: keys in file order (int64, n) and record start
        offsets in file order followed by the file size (int64, n + 1), so
        record ``i`` spans ``bounds[i]:bounds[i + 1]``.

    Raises:
        FormatError: an empty index of a non-empty ``.rec``; an offset that
            is negative, unaligned, past the end of the ``.rec`` (named then:
            it is truncated), or listed twice; a key listed twice.
    """
    if not offsets.size and size:
        raise FormatError(
            f"{index} lists no records but the .rec holds {size} bytes",
            path=index, hint=f"the index is empty or damaged: rebuild it with `fastdata index --force {rec}`",
        )
    if offsets.size and not (offsets[1:] >= offsets[:-1]).all():
        order = np.argsort(offsets, kind="stable")
        keys, offsets = keys[order], offsets[order]
    if offsets.size and int(offsets[-1]) > size - HEADER_SIZE:
        raise FormatError(
            f"the .rec is {size} bytes but {index} lists a record at byte {int(offsets[-1])}",
            path=rec, offset=int(offsets[-1]), key=int(keys[-1]),
            hint="the .rec is truncated (or the index belongs to another file): restore the .rec or re-convert it",
        )
    bad = np.flatnonzero((offsets < 0) | (offsets & 3 != 0))
    if bad.size:
        j = int(bad[0])
        raise FormatError(
            f"{index} lists offset {int(offsets[j])}, which is not a 4-byte-aligned record start "
            f"inside the {size}-byte .rec",
            path=index, offset=int(offsets[j]), key=int(keys[j]),
            hint=f"the index is damaged or belongs to another file; rebuild it with `fastdata index --force {rec}`",
        )
    dup = np.flatnonzero(offsets[1:] == offsets[:-1])
    if dup.size:
        j = int(dup[0])
        raise FormatError(
            f"{index} lists offset {int(offsets[j])} twice (keys {int(keys[j])} and {int(keys[j + 1])})",
            path=index, offset=int(offsets[j]), key=int(keys[j + 1]),
            hint=f"rebuild the index with `fastdata index --force {rec}`",
        )
    if keys.size > 1 and not (keys[1:] > keys[:-1]).all():  # im2rec's keys may be shuffled, never repeated
        ordered = np.sort(keys)
        same = np.flatnonzero(ordered[1:] == ordered[:-1])
        if same.size:
            raise FormatError(
                f"{index} lists key {int(ordered[same[0]])} twice",
                path=index, key=int(ordered[same[0]]),
                hint=f"the index is damaged: rebuild it with `fastdata index --force {rec}`",
            )
    bounds = np.empty(offsets.size + 1, np.int64)
    bounds[:-1] = offsets
    bounds[-1] = size
    return keys, bounds


def scan(buf, size: int, path: str) -> np.ndarray:
    """Record start offsets (int64) of a whole ``.rec``, read front to back.

    Raises:
        FormatError: at the first corrupt or truncated record (no resynchronising).
    """
    starts = []
    pos = 0
    while pos < size:
        starts.append(pos)
        pos = framing.walk(buf, pos, size, path, key=len(starts) - 1)[1]
    return np.array(starts, dtype=np.int64)


def write_index(path: str | os.PathLike[str], keys, offsets) -> None:
    """Write ``key<TAB>offset`` lines (the layout MXNet and DALI read)."""
    lines = [f"{k}\t{o}\n" for k, o in zip(np.asarray(keys).tolist(), np.asarray(offsets).tolist())]
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write("".join(lines))


def build_index(
    rec: str | os.PathLike[str], index: str | os.PathLike[str] | None = None, *, keys: str = "position"
) -> Path:
    """Scan a ``.rec`` and write its ``.idx``.

    Args:
        rec: the RecordIO file.
        index: where to write; default ``rec`` with the ``.idx`` suffix.
        keys: ``"position"`` (default) keys each record by its position in
            the file, as :class:`Writer` does without explicit keys and as
            ``MXRecordIO`` reads; ``"id"`` uses each image record's
            ``IRHeader.id``, as im2rec and :func:`write_shard` do.

    Returns:
        The index path.

    Raises:
        FormatError: the ``.rec`` is corrupt, or (``keys="id"``) a record is
            too short to hold an IRHeader.
        ValueError: unknown ``keys``.
    """
    if keys not in ("position", "id"):
        raise ValueError(f"keys must be 'position' or 'id', got {keys!r}")
    rec = os.fspath(rec)
    index = default_index_path(rec) if index is None else Path(index)
    size = os.path.getsize(rec)
    with open(rec, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    try:
        starts = scan(buf, size, rec)
        if keys == "position":
            names = np.arange(starts.size, dtype=np.int64)
        else:
            names = np.array([_record_id(buf, int(s), size, rec, n) for n, s in enumerate(starts)], dtype=np.uint64)
    finally:
        if isinstance(buf, mmap.mmap):
            buf.close()
    write_index(index, names, starts)
    return index


def _record_id(buf, start: int, size: int, rec: str, position: int) -> int:
    spans, _ = framing.walk(buf, start, size, rec, key=position)
    if len(spans) == 1:
        first, stop = spans[0]
        head = bytes(buf[first : min(stop, first + _IR_ID + 8)])
    else:
        head = framing.join(buf, spans)[: _IR_ID + 8]
    if len(head) < _IR_ID + 8:
        raise FormatError(
            "record too short to hold an IRHeader, so it has no id to key it by",
            path=rec, offset=start, key=position, hint="use build_index(..., keys='position')",
        )
    return int.from_bytes(head[_IR_ID:], "little")
