"""A RecordIO shard from pieces written apart (the registry's ``join``).

Records do not depend on where they sit (each starts 4-byte aligned and is
padded to 4 bytes), so the ``.rec`` is the pieces' ``.rec`` files end to end,
the ``.idx`` their lines with offsets moved by what comes before, and the
``.crc`` sidecar their CRCs in order: the bytes one :func:`.shards.write_shard`
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
    """Join ``pieces`` (each ``(its .rec, its ShardInfo)``, in order, none empty)
    into the shard ``path``; the pieces' files are consumed. Atomic like
    ``write_shard``: the ``.rec`` gets its final name last."""
    rec = Path(path)
    idx, crc = default_index_path(rec), _sums.sidecar_path(rec)
    with written(idx, crc, rec) as (tmp_idx, tmp_crc, tmp_rec):
        index_text, file_crc, size = join_data(tmp_rec, pieces, default_index_path, 1, "\t")
        crcs = [c for piece, info in pieces
                for c in _sums.load(_sums.sidecar_path(piece), records=info.records, data_bytes=info.bytes, data_file=piece)]
        tmp_idx.write_bytes(index_text)
        digests = {
            rec.name: _sums.crc_digest(file_crc),
            idx.name: _sums.digest_of(index_text),
            crc.name: _sums.write(tmp_crc, crcs, size),
        }
    return ShardInfo(file=rec.name, records=len(crcs), bytes=size, index=idx.name, checksums=crc.name, digests=digests)
