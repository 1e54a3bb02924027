"""``open_dataset``: the right dataset class for whatever is at a path."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..formats import MANIFEST_NAME, Manifest
from ..remote import hooks as remote_hooks
from .sources import PathArg

_RECORDIO_MAGIC = b"\x0a\x23\xd7\xce"
_RECORDIO_SUFFIXES = (".rec",)
_TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords", ".tfrec", ".tfrecord.gz", ".tfrecord.zlib")
_GZIP_MAGIC = b"\x1f\x8b"


def open_dataset(path: PathArg, *, streaming: bool = False, **kwargs: Any) -> Any:
    """Open ``path`` with the dataset class that reads it.

    Recognises, in this order: a converted directory (its ``manifest.json``
    names the format), an LMDB directory (``data.mdb``), a class-per-folder
    image tree (:class:`ImageFolder`), then files by suffix (``.rec``,
    ``.tfrecord``/``.tfrecords``/``.tfrec``) or, failing that, by their first
    bytes (RecordIO magic, TFRecord length CRC). A list or glob is judged by
    its first file.

    Args:
        path: directory, file, glob or list of shard files.
        streaming: return the iterable variant (RecordIO and TFRecord only).
        **kwargs: passed to the class (``transform``, ``decode``, ``on_error``...).

    Raises:
        ConfigError: nothing recognisable at ``path``, or ``streaming`` for a
            format without a stream.
        ManifestError: an unreadable ``manifest.json``.
    """
    from .folder import ImageFolder
    from .iterable import RecordIOStream, TFRecordStream
    from .shards import LMDBDataset, RecordIODataset, TFRecordDataset

    path = remote_hooks.local_root(path)  # a URL: the local directory its shards are cached in
    kind = detect(path)
    if streaming:
        streams = {"recordio": RecordIOStream, "tfrecord": TFRecordStream}
        if kind not in streams:
            raise ConfigError(f"{_show(path)}: streaming is available for RecordIO and TFRecord, not {kind}")
        return streams[kind](path, **kwargs)
    classes = {"recordio": RecordIODataset, "tfrecord": TFRecordDataset, "lmdb": LMDBDataset, "folder": ImageFolder}
    return classes[kind](path, **kwargs)


def detect(path: PathArg) -> str:
    """``"recordio"``, ``"tfrecord"``, ``"lmdb"`` or ``"folder"`` for ``path``."""
    first = _first_path(path)
    if first.is_dir():
        if (first / MANIFEST_NAME).exists():
            return Manifest.read(first).format
        if (first / "data.mdb").exists():
            return "lmdb"
        if any(child.is_dir() for child in first.iterdir()):
            return "folder"
        raise ConfigError(
            f"{first}: neither a converted dataset (no {MANIFEST_NAME}), an LMDB (no data.mdb) "
            "nor an image folder (no class sub-directories)"
        )
    name = first.name.lower()
    if name.endswith(_RECORDIO_SUFFIXES):
        return "recordio"
    if name.endswith(_TFRECORD_SUFFIXES):
        return "tfrecord"
    return _sniff(first)


def _first_path(path: PathArg) -> Path:
    from .sources import resolve

    if isinstance(path, (str, os.PathLike)) and os.path.exists(os.fspath(path)):
        return Path(os.fspath(path))
    paths, _ = resolve(path, "", dir_is_shard=True)  # a glob or a list: judge by its first file
    return Path(paths[0])


def _sniff(path: Path) -> str:
    with open(path, "rb") as f:
        head = f.read(12)
    if head[:4] == _RECORDIO_MAGIC:
        return "recordio"
    if head[:2] == _GZIP_MAGIC or _is_tfrecord_header(head):
        return "tfrecord"
    raise ConfigError(
        f"{path}: not a RecordIO or TFRecord file (unknown suffix and first bytes {head[:8].hex()}); "
        "open it with the dataset class for its format"
    )


def _is_tfrecord_header(head: bytes) -> bool:
    if len(head) < 12:
        return False
    import crc32c

    crc = crc32c.crc32c(head[:8])
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return struct.unpack_from("<I", head, 8)[0] == masked


def _show(path: PathArg) -> str:
    return os.fspath(path) if isinstance(path, (str, os.PathLike)) else f"{len(path)} paths"
