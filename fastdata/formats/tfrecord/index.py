"""TFRecord index files: one text line ``offset length`` per record.

``length`` is the whole framed record (``8 + 4 + len(data) + 4``), exactly as
the ``tfrecord`` package's ``tfrecord2idx`` and DALI's ``tfrecord2idx`` write
it, so one index serves fastdata, DALI (``fn.readers.tfrecord``) and the
``tfrecord`` package. fastdata's convention: the index of ``x.tfrecord`` is
``x.tfrecord.idx`` unless a path is given.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from ...errors import ConfigError, FormatError
from ..checksums import read_bytes
from .compression import COMPRESSED_HINT, detect
from .framing import OVERHEAD, check_data, scan

INDEX_SUFFIX = ".idx"


def default_index_path(path: str | os.PathLike[str]) -> str:
    """Where fastdata looks for (and writes) the index of ``path``: ``path + ".idx"``."""
    return os.fspath(path) + INDEX_SUFFIX


def format_index(offsets: np.ndarray, sizes: np.ndarray) -> str:
    """The index text for records at ``offsets`` with framed ``sizes``."""
    return "".join(f"{o} {s}\n" for o, s in zip(offsets.tolist(), sizes.tolist()))


def read_index(index: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """Parse an index file into ``(offsets, sizes)``, two int64 arrays of equal length.

    Raises FormatError naming the file when a line is not two integers.
    """
    try:
        text = read_bytes(index)  # a FileBytes: read already, for its digest
        index = os.fspath(index)
    except FileNotFoundError:
        index = os.fspath(index)
        raise ConfigError(f"{index}: index file not found; build it with build_index(data_path, {index!r})") from None
    if not text.strip():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    lines = [line for line in text.splitlines() if line.strip()]
    tokens = text.split()
    table = None
    if len(tokens) == 2 * len(lines):
        try:
            table = np.array(tokens, dtype=np.int64).reshape(-1, 2)
        except ValueError:
            pass
    if table is None:
        bad = next((n for n, line in enumerate(lines, 1) if len(line.split()) != 2 or not _ints(line)), None)
        raise FormatError(
            f"not a TFRecord index: line {bad} should be two integers 'offset length'",
            path=index, hint="rebuild it with fastdata.formats.tfrecord.build_index",
        )
    return np.ascontiguousarray(table[:, 0]), np.ascontiguousarray(table[:, 1])


def _ints(line: bytes) -> bool:
    return all(part.lstrip(b"+-").isdigit() for part in line.split())


def check_index(offsets: np.ndarray, sizes: np.ndarray, file_size: int, path: str, index: str) -> None:
    """Raise FormatError unless the index tiles the data file exactly, record after record.

    A stale index (file rewritten or appended since) would otherwise silently
    drop or misread records.
    """
    hint = f"the index is stale or belongs to another file; rebuild it with build_index({path!r}, {index!r})"
    n = len(offsets)
    if n == 0:
        if file_size:
            raise FormatError(f"index is empty but the data file has {file_size} bytes", path=index, hint=hint)
        return
    if (sizes < OVERHEAD).any():
        i = int(np.argmax(sizes < OVERHEAD))
        raise FormatError(f"record {i}: length {sizes[i]} is shorter than a framed record ({OVERHEAD})", path=index, hint=hint)
    ends = offsets + sizes
    gaps = np.flatnonzero(offsets[1:] != ends[:-1])
    if offsets[0] != 0 or len(gaps):
        i = 0 if offsets[0] != 0 else int(gaps[0]) + 1
        expected = 0 if i == 0 else int(ends[i - 1])
        raise FormatError(
            f"record {i} starts at byte {offsets[i]} but should start at {expected}", path=index, hint=hint
        )
    if ends[-1] != file_size:
        raise FormatError(
            f"index covers {int(ends[-1])} bytes but {path} has {file_size}", path=index, hint=hint
        )


def write_index_file(index: str | os.PathLike[str], offsets: np.ndarray, sizes: np.ndarray) -> None:
    Path(index).write_text(format_index(offsets, sizes), encoding="ascii")


def build_index(path: str | os.PathLike[str], index: str | os.PathLike[str] | None = None, *, verify: bool = True) -> str:
    """Scan an uncompressed TFRecord file and write its index; returns the index path.

    Args:
        path: the TFRecord file (written by any tool).
        index: where to write; default ``path + ".idx"``.
        verify: check each record's length CRC *and* data CRC while scanning.

    The output is byte-for-byte what ``tfrecord.tools.tfrecord2idx.create_index``
    writes for a valid file; unlike it, a corrupt or truncated file raises
    FormatError instead of leaving a short index behind.
    """
    path = os.fspath(path)
    index = default_index_path(path) if index is None else os.fspath(index)
    kind = detect(path)
    if kind != "none":
        raise ConfigError(f"{path} is {kind.upper()}-compressed: {COMPRESSED_HINT}")
    size = os.path.getsize(path)
    if size == 0:
        offsets = sizes = np.zeros(0, np.int64)
    else:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            offsets, sizes = scan(mm, size, path, verify)
            if verify:
                for offset, framed in zip(offsets.tolist(), sizes.tolist()):
                    check_data(mm, offset, framed - OVERHEAD, path)
    write_index_file(index, offsets, sizes)
    return index
