"""A TFRecord shard from pieces written apart (the registry's ``join``).

Each record carries its own length and CRCs and nothing about its position,
so the shard is the pieces end to end and its index their lines with the
offsets moved by what comes before: the bytes one :func:`.shards.write_shard`
over all the samples would have written.
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import checksums as _sums
from .._atomic import written
from ..concat import append_file, combined, shift_offsets
from ..sample import ShardInfo
from .index import default_index_path


def join_shard(path: str | os.PathLike[str], pieces: list[tuple[Path, ShardInfo]]) -> ShardInfo:
    """Join ``pieces`` (each ``(its .tfrecord, its ShardInfo)``, in order, none
    empty) into the shard ``path``; the pieces' files are consumed. Atomic like
    ``write_shard``: the index gets its final name first, the data last."""
    path = Path(path)
    index = Path(default_index_path(path))
    lines: list[str] = []
    parts: list[tuple[int, int]] = []
    base = records = 0
    with written(index, path) as (index_part, part):
        os.replace(pieces[0][0], part)
        with open(part, "r+b") as out:  # not "ab": copy_file_range refuses an O_APPEND target
            out.seek(0, os.SEEK_END)
            for k, (piece, info) in enumerate(pieces):
                if k:
                    append_file(out, piece)
                lines.append(shift_offsets(Path(default_index_path(piece)).read_text(encoding="ascii"), base, 0, None))
                parts.append((int(info.digests[piece.name].partition(":")[2], 16), info.bytes))
                base += info.bytes
                records += info.records
        index_text = "".join(lines).encode("ascii")
        index_part.write_bytes(index_text)
        digests = {path.name: _sums.crc_digest(combined(parts)), index.name: _sums.digest_of(index_text)}
    return ShardInfo(file=path.name, records=records, bytes=base, index=index.name, digests=digests)
