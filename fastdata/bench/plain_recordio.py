"""The plain im2rec ``--pass-through`` loop: the floor a converter is compared with.

Each file's bytes after an MXNet IRHeader, framed as RecordIO (split at aligned
magic words, as dmlc does), plus the ``.idx``. No checksums, no checks, no fsync.
``fastdata bench`` calls :func:`write` in its own process; ``benchmarks/convert_scaling.py``
times it as a whole command, loading this file by its path so that the command's
start-up is the interpreter's alone: hence the standard library only.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from os import PathLike

MAGIC = 0xCED7230A
_MAGIC_BYTES = MAGIC.to_bytes(4, "little")
_IR = struct.Struct("<IfQQ")  # flag, label, id, id2: MXNet's IRHeader
_PART = struct.Struct("<II")  # magic, cflag << 29 | length


def write(files: Iterable[tuple[str, float]], rec: str | PathLike, idx: str | PathLike, first_key: int = 0) -> int:
    """Write ``(path, label)`` pairs to ``rec`` and ``idx``, keys counting from ``first_key``;
    returns how many records were written."""
    pos = count = 0
    with open(rec, "wb", buffering=1 << 20) as r, open(idx, "w", encoding="ascii") as x:
        for key, (path, label) in enumerate(files, first_key):
            with open(path, "rb") as f:
                data = _IR.pack(0, float(label), key, 0) + f.read()
            cuts = [c for c in _find_all(data) if c % 4 == 0]
            starts, ends = [0, *(c + 4 for c in cuts)], [*cuts, len(data)]
            x.write(f"{key}\t{pos}\n")
            for n, (a, b) in enumerate(zip(starts, ends)):
                flag = 0 if not cuts else 1 if n == 0 else 3 if n == len(cuts) else 2
                pad = b"\0" * (-(b - a) % 4)
                pos += r.write(_PART.pack(MAGIC, flag << 29 | (b - a)) + data[a:b] + pad)
            count += 1
    return count


def _find_all(data: bytes) -> list[int]:
    found, at = [], data.find(_MAGIC_BYTES)
    while at >= 0:
        found.append(at)
        at = data.find(_MAGIC_BYTES, at + 1)
    return found
