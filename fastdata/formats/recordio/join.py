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
from ..concat import append_file, combined, shift_offsets
from ..sample import ShardInfo
from .index import default_index_path


def join_shard(path: str | os.PathLike[str], pieces: list[tuple[Path, ShardInfo]]) -> ShardInfo:
    """Join ``pieces`` (each ``(its .rec, its ShardInfo)``, in order, none empty)
    into the shard ``path``; the pieces' files are consumed. Atomic like
    ``write_shard``: the ``.rec`` gets its final name last."""
    rec = Path(path)
    idx, crc = default_index_path(rec), _sums.sidecar_path(rec)
    lines: list[str] = []
    crcs: list[int] = []
    parts: list[tuple[int, int]] = []
    base = 0
    with written(idx, crc, rec) as (tmp_idx, tmp_crc, tmp_rec):
        os.replace(pieces[0][0], tmp_rec)  # the first piece's bytes stay where they are
        with open(tmp_rec, "r+b") as out:  # not "ab": copy_file_range refuses an O_APPEND target
            out.seek(0, os.SEEK_END)
            for k, (piece, info) in enumerate(pieces):
                if k:
                    append_file(out, piece)
                text = default_index_path(piece).read_text(encoding="ascii")
                lines.append(shift_offsets(text, base, 1, "\t"))
                crcs.extend(_sums.load(_sums.sidecar_path(piece), records=info.records, data_bytes=info.bytes, data_file=piece))
                parts.append((int(info.digests[piece.name].partition(":")[2], 16), info.bytes))
                base += info.bytes
        index_text = "".join(lines).encode("ascii")
        tmp_idx.write_bytes(index_text)
        digests = {
            rec.name: _sums.crc_digest(combined(parts)),
            idx.name: _sums.digest_of(index_text),
            crc.name: _sums.write(tmp_crc, crcs, base),
        }
    return ShardInfo(file=rec.name, records=len(crcs), bytes=base, index=idx.name, checksums=crc.name, digests=digests)
