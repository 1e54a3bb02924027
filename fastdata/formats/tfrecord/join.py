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
from ..concat import join_data
from ..sample import ShardInfo
from .index import default_index_path


def join_shard(path: str | os.PathLike[str], pieces: list[tuple[Path, ShardInfo]]) -> ShardInfo:
    """Join ``pieces`` (each ``(its .tfrecord, its ShardInfo)``, in order, none
    empty) into the shard ``path``; the pieces' files are consumed. Atomic like
    ``write_shard``: the index gets its final name first, the data last."""
    path = Path(path)
    index = Path(default_index_path(path))
    with written(index, path) as (index_part, part):
        index_text, file_crc, size = join_data(part, pieces, default_index_path, 0, None)
        index_part.write_bytes(index_text)
        digests = {path.name: _sums.crc_digest(file_crc), index.name: _sums.digest_of(index_text)}
    records = sum(info.records for _, info in pieces)
    return ShardInfo(file=path.name, records=records, bytes=size, index=index.name, digests=digests)
