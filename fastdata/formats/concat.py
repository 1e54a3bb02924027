"""What the formats need to join a shard written in pieces: the CRC32C of a
concatenation from the pieces' CRCs (:func:`.checksums.combine`), appending
one file to another inside the kernel, and shifting the offsets of an index
by a piece's position.

A converter may cut one shard into pieces that several workers write at the
same time (see ``converters/conversion/pack.py``); a format whose records do not depend
on their position (RecordIO, TFRecord) joins them into exactly the bytes one
writer would have produced. Nothing here reads a piece's data back.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from .checksums import combine as crc32c_combine
from .sample import ShardInfo


def join_data(
    target: Path, pieces: list[tuple[Path, ShardInfo]], index_of: Callable[[Path], str | os.PathLike[str]],
    field: int, sep: str | None,
) -> tuple[bytes, int, int]:
    """The data of ``pieces`` (each ``(its data file, its ShardInfo)``, in order) end to
    end in ``target``: the first piece's file becomes it, the others are appended and
    stay for the caller to remove. Returns the pieces' index lines (from
    ``index_of(piece)``, offsets in column ``field`` moved by what comes before, see
    :func:`shift_offsets`), the CRC32C of the whole data and its size."""
    lines: list[str] = []
    parts: list[tuple[int, int]] = []
    base = 0
    os.replace(pieces[0][0], target)  # the first piece's bytes stay where they are
    with open(target, "r+b") as out:  # not "ab": copy_file_range refuses an O_APPEND target
        out.seek(0, os.SEEK_END)
        for k, (piece, info) in enumerate(pieces):
            if k:
                append_file(out, piece)
            lines.append(shift_offsets(Path(index_of(piece)).read_text(encoding="ascii"), base, field, sep))
            parts.append((int(info.digests[piece.name].partition(":")[2], 16), info.bytes))
            base += info.bytes
    return "".join(lines).encode("ascii"), combined(parts), base


def append_file(target, source: str | os.PathLike[str]) -> int:
    """Append the whole file ``source`` to the open binary file ``target``, at its
    current position (its end: open it "r+b" and seek there, since
    copy_file_range refuses an O_APPEND file); returns the bytes appended.

    ``os.copy_file_range`` copies inside the kernel (page cache to page
    cache, or a reflink where the filesystem shares blocks); where it is
    missing or refused (another filesystem, an old kernel) a plain copy.
    """
    target.flush()
    size = os.path.getsize(source)
    copied = 0
    with open(source, "rb") as src:
        copy = getattr(os, "copy_file_range", None)
        if copy is not None:
            try:
                while copied < size and (n := copy(src.fileno(), target.fileno(), size - copied)):
                    copied += n
            except OSError:
                pass  # EXDEV, ENOSYS, EINVAL: the rest is copied below
        if copied < size:
            src.seek(copied)
            target.seek(0, os.SEEK_END)  # copy_file_range moved the descriptor, not the buffered file
            shutil.copyfileobj(src, target, 1 << 20)
            target.flush()
    target.seek(0, os.SEEK_END)
    return size


def shift_offsets(text: str, base: int, field: int, sep: str | None) -> str:
    """An index's text with the integer in column ``field`` of every line increased by ``base``.

    ``sep`` splits the columns (None: any whitespace, joined back with one
    space). Lines keep their order and their other columns byte for byte.
    """
    if not base:
        return text
    joiner = sep if sep is not None else " "
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cols = line.split(sep)
        cols[field] = str(int(cols[field]) + base)
        out.append(joiner.join(cols) + "\n")
    return "".join(out)


def combined(crcs_and_sizes: list[tuple[int, int]], combine: Callable[[int, int, int], int] = crc32c_combine) -> int:
    """The CRC32C of the concatenation of parts given as ``(crc, size)``."""
    total = 0
    for crc, size in crcs_and_sizes:
        total = combine(total, crc, size)
    return total
