"""``fastdata index FILE...``: indexes for RecordIO and TFRecord files written elsewhere.

A ``.rec`` gets ``<name>.idx`` (``key<TAB>offset``): keys are the records'
``IRHeader.id`` when the file holds image records (as im2rec writes them),
else record positions (as ``MXRecordIO`` numbers them). A TFRecord gets
``<name>.tfrecord.idx`` (``offset length``, what DALI's ``readers.tfrecord``
and ``tfrecord2idx`` use). The format comes from the file's first bytes.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path
from typing import TextIO

from fastdata.errors import ConfigError, FastDataError

from .probe import RECORDIO_MAGIC, identify, image_kind


def run(files: list[str], *, force: bool = False, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Index each file; returns 0, or 2 when any file could not be indexed (each one is reported)."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    failed = 0
    for name in files:
        try:
            written, detail = index_file(name, force=force)
        except (FastDataError, OSError) as exc:
            failed += 1
            print(f"fastdata: error: {exc}", file=stderr)
            continue
        print(f"fastdata index: {name} -> {written} ({detail})", file=stdout)
    return 2 if failed else 0


def index_file(path: str | os.PathLike[str], *, force: bool = False) -> tuple[Path, str]:
    """Build the index of one file; returns its path and what was indexed.

    Raises:
        ConfigError: not a RecordIO/TFRecord file, compressed, or the index
            exists and ``force`` is False.
        FormatError: the file is damaged (nothing is written).
    """
    target = identify(path)
    if target.kind != "shard" or target.format == "lmdb":
        raise ConfigError(f"{path}: only .rec and .tfrecord files have index files (this is {target.kind} / {target.format})")
    if target.format == "recordio":
        from fastdata.formats.recordio import build_index
        from fastdata.formats.recordio.index import default_index_path

        rec = target.data_file
        out = default_index_path(rec)
        _refuse_existing(out, force)
        keys = "id" if _holds_images(rec) else "position"
        tmp = out.with_name(out.name + f".{os.getpid()}.partial")
        try:
            build_index(rec, tmp, keys=keys)
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
        return out, f"keys = {'IRHeader ids' if keys == 'id' else 'record positions'}"
    if target.compressed:
        raise ConfigError(
            f"{path} is {target.compressed}-compressed; indexes only apply to uncompressed files "
            "(decompress it first, e.g. gunzip -k)"
        )
    from fastdata.formats.tfrecord import build_index, default_index_path

    out = Path(default_index_path(target.data_file))
    _refuse_existing(out, force)
    tmp = out.with_name(out.name + f".{os.getpid()}.partial")
    try:
        build_index(target.data_file, tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out, "offset length, CRCs checked"


def _refuse_existing(index: Path, force: bool) -> None:
    if index.exists() and not force:
        raise ConfigError(f"{index} already exists; pass --force to rebuild it")


def _holds_images(rec: Path) -> bool:
    """Whether the first record is an image record (IRHeader, labels, then an image file).

    Reads the first record's framing directly: an existing ``.idx`` may be
    the stale one being replaced, so no Reader (which would trust it) is used.
    """
    with open(rec, "rb") as f:
        head = f.read(8)
        if len(head) < 8 or head[:4] != RECORDIO_MAGIC:
            return False
        lrecord = struct.unpack("<I", head[4:])[0]
        if lrecord >> 29 != 0:  # split record (holds the magic word): not worth guessing
            return False
        payload = f.read(min(lrecord & ((1 << 29) - 1), 1 << 16))
    if len(payload) < 24:
        return False
    flag = struct.unpack("<I", payload[:4])[0]
    start = 24 + 4 * flag
    return start < len(payload) and image_kind(payload[start:]) != "?"
