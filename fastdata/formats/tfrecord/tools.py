"""TFRecord's hooks for the registry: detection, ``fastdata inspect`` /
``verify`` / ``index`` of a single file, and what DALI's tfrecord reader needs."""

from __future__ import annotations

import functools
import itertools
import mmap
import os
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError, FastDataError, FormatError
from ..hooks import Detected, FileCheck, Inspected, existing, truncated_file
from ..manifest import MANIFEST_NAME, Manifest
from .compression import detect as detect_compression
from .example_parse import is_sequence_example, parse_example, parse_sequence_example
from .features import IMAGE_KEY
from .framing import HEADER, OVERHEAD, check_header, iter_stream, masked_crc
from .index import build_index, default_index_path
from .reader import Reader

COMPRESSED_SUFFIXES = (".gz", ".zz", ".zlib")


def sniff(head: bytes) -> bool:
    """An uncompressed TFRecord file starts with a length whose masked CRC-32C
    follows it (a chance match has probability 2**-32)."""
    return len(head) >= HEADER and struct.unpack_from("<I", head, 8)[0] == masked_crc(head[:8])


def claim(path: Path) -> Detected | None:
    """A whole-file compressed TFRecord: a name that says TFRecord, and a
    GZIP/ZLIB header (or a ``.gz`` / ``.zlib`` name)."""
    if not path.is_file() or "tfrec" not in path.name.lower():
        return None
    kind = detect_compression(path)
    return Detected("tfrecord", path, data_file=path, compression=kind) if kind != "none" else None


def index_path(shard: Path) -> Path:
    return Path(default_index_path(shard))


def inspect(found: Detected, n: int) -> tuple[int, list[Inspected]]:
    """Record count and the first ``n`` records: every feature, and the image."""
    reader = Reader(found.shard_file)
    shown = []
    for i, record in zip(range(n), iter(reader)):
        fields: dict[str, Any] = {"position": i, "bytes": len(record)}
        image = None
        if is_sequence_example(record):
            context, lists = parse_sequence_example(record)
            fields["type"] = "SequenceExample"
            fields["context"] = {k: json_feature(v) for k, v in context.items()}
            fields["feature_lists"] = {k: f"{len(v)} steps" for k, v in lists.items()}
        else:
            features = parse_example(record)
            fields["type"] = "Example"
            fields["features"] = {k: json_feature(v) for k, v in sorted(features.items())}
            encoded = features.get(IMAGE_KEY)
            if isinstance(encoded, list) and encoded and isinstance(encoded[0], bytes):
                image = encoded[0]
        shown.append(Inspected(fields, image))
    count = len(reader)
    reader.close()
    return count, shown


def json_feature(value: Any) -> Any:
    """A parsed feature as ``inspect`` shows it: short lists whole, long ones summarised."""
    if isinstance(value, np.ndarray):
        items = value.ravel().tolist()
        return items if len(items) <= 8 else f"{value.dtype} x {len(items)}: {items[:8]} ..."
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        if len(value) == 1 and len(value[0]) <= 64:
            return value[0].decode("utf-8", "backslashreplace")
        return f"bytes x {len(value)} ({', '.join(str(len(v)) for v in value[:4])} bytes)"
    return value


def verify(found: Detected) -> FileCheck:
    """An existing index must equal a fresh scan; then the records are read
    front to back (a compressed file has no random access, and after a damaged
    record nothing can be trusted: TFRecord has no resynchronisation marker).
    A file that ends inside a record (truncated) is one problem that says
    which records it still holds, and those are read."""
    path = found.shard_file
    index = index_path(path)
    if not found.compression:
        kept, exc = _scan(path)
        if exc is not None and _cut_short(exc):
            return FileCheck(
                problems=((path, truncated_file(kept, path.stat().st_size, exc.offset)),),
                stream=functools.partial(_first, path, kept), image=record_image, truncated=True,
            )
    problems: tuple[tuple[Path, str], ...] = ()
    if index.is_file() and not found.compression:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                fresh = Path(build_index(path, Path(tmp) / "scan.idx"))
                if fresh.read_bytes() != index.read_bytes():
                    problems = ((index, "disagrees with a fresh scan of the file (stale or damaged index)"),)
            except FastDataError as exc:
                return FileCheck(problems=((path, str(exc)),))
    use = None if found.compression or not index.is_file() else index
    return FileCheck(problems=problems, stream=functools.partial(_records, path, use), image=record_image)


def _scan(path: Path) -> tuple[int, FormatError | None]:
    """How many records a walk of the headers finds before the end of an
    uncompressed file, and the error that stopped it early (None at the end)."""
    size = path.stat().st_size
    if not size:
        return 0, None
    count, pos = 0, 0
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        try:
            while pos < size:
                pos += OVERHEAD + check_header(buf, pos, size - pos, os.fspath(path), True)
                count += 1
        except FormatError as exc:
            return count, exc
    return count, None


def _cut_short(exc: FormatError) -> bool:
    """Whether a scan stopped because the file ends inside a record (truncated), not at damage."""
    return exc.reason.startswith("truncated record header") or "(truncated file or corrupt length)" in exc.reason


def _first(path: Path, count: int) -> Iterator[bytes]:
    """The first ``count`` records of an uncompressed file, read in order (both CRCs checked)."""
    with open(path, "rb") as f:
        yield from itertools.islice(iter_stream(f, os.fspath(path)), count)


def _records(path: Path, index: Path | None) -> Iterator[bytes]:
    yield from Reader(path, index=index)


def record_image(record: bytes) -> bytes | None:
    """The ``image/encoded`` bytes of an Example, None when it has none; FormatError when malformed."""
    encoded = parse_example(record).get(IMAGE_KEY)
    return encoded[0] if isinstance(encoded, list) and encoded else None


def build(found: Detected, out: Path) -> str:
    """Write the ``offset length`` index of an uncompressed file to ``out``."""
    if found.compression:
        raise ConfigError(
            f"{found.path} is {found.compression}-compressed; indexes only apply to uncompressed files "
            "(decompress it first, e.g. gunzip -k)"
        )
    build_index(found.shard_file, out)
    return "offset length, CRCs checked"


def dali_index_paths(directory: Path, manifest: Manifest) -> tuple[str, ...]:
    """One ``offset length`` index per shard; DALI reads uncompressed shards only."""
    hint = (
        "DALI needs one 'offset length' index per TFRecord shard; rebuild it with "
        "fastdata.formats.tfrecord.build_index(shard, index) or re-run the conversion"
    )
    out = []
    for shard in manifest.shards:
        if shard.file.endswith(COMPRESSED_SUFFIXES):
            raise FormatError(
                "DALI's TFRecord reader cannot read compressed shards",
                path=directory / shard.file,
                hint="re-convert without compression, or read it with fastdata.TFRecordDataset",
            )
        if not shard.index:
            raise FormatError(f"{MANIFEST_NAME} names no index for this shard", path=directory / shard.file, hint=hint)
        out.append(existing(manifest.path_of(directory, shard.index), "TFRecord index", hint, shard.digests.get(shard.index)))
    return tuple(out)
