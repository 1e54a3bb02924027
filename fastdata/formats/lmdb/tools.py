"""LMDB's hooks for the registry: detection, ``fastdata inspect`` / ``verify``
of a single environment, and what DALI's caffe reader needs (no index)."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from ..checksums import record_crc
from ..hooks import Detected, FileCheck, Inspected, json_label
from ..manifest import Manifest
from ._env import DATA_NAME
from .shards import open_shard

_META_MAGIC = 0xBEEFC0DE.to_bytes(4, "little")
_META_AT = 16  # after the first page's header (64-bit page number, pad, flags, lower/upper)


def sniff(head: bytes) -> bool:
    """An LMDB data file starts with a meta page carrying LMDB's magic number."""
    return head[_META_AT : _META_AT + 4] == _META_MAGIC


def claim(path: Path) -> Detected | None:
    """An environment directory (it holds ``data.mdb``) or a ``.mdb`` data file."""
    if path.is_dir() and (path / DATA_NAME).is_file():
        return Detected("lmdb", path, data_file=path / DATA_NAME)
    if path.is_file() and path.name.endswith(".mdb"):
        return Detected("lmdb", path, data_file=path)
    return None


def inspect(found: Detected, n: int) -> tuple[int, list[Inspected]]:
    """Entry count and the first ``n`` entries: key, label, image."""
    reader = open_shard(found.path)
    shown = []
    for i in range(min(n, len(reader))):
        data, label = reader.sample(i)
        key = reader.key(i).decode("utf-8", "backslashreplace")
        fields: dict[str, Any] = {"position": i, "key": key, "label": json_label(label), "bytes": len(data)}
        shown.append(Inspected(fields, data))
    count = len(reader)
    reader.close()
    return count, shown


def verify(found: Detected) -> FileCheck:
    """Every entry is read (``open_shard`` checks the file's structure first)."""
    return FileCheck(records=functools.partial(open_shard, found.path))


def record_checksums(found: Detected) -> tuple[list[int], int]:
    """The CRC32C of every entry's key and value, in key order, and ``data.mdb``'s size."""
    reader = open_shard(found.path).reader
    try:
        out = []
        for i in range(len(reader)):
            key = reader.key(i)
            out.append(reader.read(key, record_crc, key))
        return out, os.path.getsize(reader.data_file)
    finally:
        reader.close()


def dali_index_paths(directory: Path, manifest: Manifest) -> tuple[str, ...]:
    """DALI's caffe reader takes the environment directories alone."""
    return ()
