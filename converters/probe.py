"""What is at a path: a fastdata dataset directory, a split output, or one
RecordIO / TFRecord / LMDB file (fastdata's or a foreign tool's).

The format of a file is read from its first bytes, not from its name:
RecordIO starts with the magic word ``0a 23 d7 ce``; an uncompressed TFRecord
with a length whose masked CRC-32C checks out; a GZIP/ZLIB TFRecord with
those headers (only when the name says tfrecord); LMDB is a directory holding
``data.mdb`` (or that file itself).
"""

from __future__ import annotations

import dataclasses
import os
import struct
from pathlib import Path

from fastdata.errors import ConfigError, ManifestError
from fastdata.formats.manifest import MANIFEST_NAME, Manifest

RECORDIO_MAGIC = b"\x0a\x23\xd7\xce"
DATASET, SPLITS, SHARD = "dataset", "splits", "shard"


@dataclasses.dataclass
class Target:
    """A classified path.

    Attributes:
        kind: ``"dataset"`` (a directory with manifest.json), ``"splits"``
            (OUT/train + OUT/val) or ``"shard"`` (one file or LMDB).
        path: the path as given.
        format: ``recordio``/``tfrecord``/``lmdb`` for a shard, the manifest's for a dataset.
        manifest: the parsed manifest (datasets only).
        splits: split name -> dataset directory (``"splits"`` only).
        data_file: the file holding the records (a ``.rec`` behind a given ``.idx``, an LMDB's data.mdb).
        compressed: ``"gzip"``/``"zlib"`` for compressed TFRecord files.
    """

    kind: str
    path: Path
    format: str
    manifest: Manifest | None = None
    splits: dict[str, Path] = dataclasses.field(default_factory=dict)
    data_file: Path | None = None
    compressed: str | None = None


def identify(path: str | os.PathLike[str]) -> Target:
    """Classify ``path``.

    Raises:
        ConfigError: the path does not exist or is none of the known formats.
        ManifestError: a dataset directory whose manifest cannot be read.
    """
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or directory")
    if path.is_dir():
        if (path / MANIFEST_NAME).is_file():
            manifest = Manifest.read(path)
            return Target(DATASET, path, manifest.format, manifest=manifest)
        splits = {s: path / s for s in ("train", "val") if (path / s / MANIFEST_NAME).is_file()}
        if splits:
            return Target(SPLITS, path, Manifest.read(next(iter(splits.values()))).format, splits=splits)
        if (path / "data.mdb").is_file():
            return Target(SHARD, path, "lmdb", data_file=path / "data.mdb")
        if (path / ".fastdata-plan.json").exists():
            raise ManifestError(
                f"{path}: an unfinished conversion (no manifest yet); finish it with `fastdata convert ... --resume`"
            )
        raise ConfigError(
            f"{path}: not a fastdata dataset (no {MANIFEST_NAME}), not an LMDB (no data.mdb); "
            "give a dataset directory, a shard, or a .rec/.tfrecord file"
        )
    if path.name.endswith(".mdb"):
        return Target(SHARD, path, "lmdb", data_file=path)
    if path.suffix == ".idx" and path.with_suffix(".rec").is_file():
        return Target(SHARD, path.with_suffix(".rec"), "recordio", data_file=path.with_suffix(".rec"))
    with open(path, "rb") as f:
        head = f.read(12)
    if head[:4] == RECORDIO_MAGIC:
        return Target(SHARD, path, "recordio", data_file=path)
    if _is_tfrecord_header(head):
        return Target(SHARD, path, "tfrecord", data_file=path)
    if "tfrecord" in path.name.lower():
        from fastdata.formats.tfrecord import detect_compression

        kind = detect_compression(path)
        if kind != "none":
            return Target(SHARD, path, "tfrecord", data_file=path, compressed=kind)
    if not head:
        raise ConfigError(f"{path}: empty file; not a RecordIO, TFRecord or LMDB file")
    raise ConfigError(
        f"{path}: not a RecordIO file (no magic 0a23d7ce), not a TFRecord (first length's CRC does not "
        "match) and not an LMDB; which tool wrote it?"
    )


def _is_tfrecord_header(head: bytes) -> bool:
    if len(head) < 12:
        return False
    from fastdata.formats.tfrecord import masked_crc

    return struct.unpack("<I", head[8:12])[0] == masked_crc(head[:8])


def image_kind(data: bytes) -> str:
    """``"JPEG"``, ``"PNG"``, ... from the magic bytes, ``"?"`` when unknown."""
    if data[:3] == b"\xff\xd8\xff":
        return "JPEG"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    if data[:2] == b"BM":
        return "BMP"
    if data[:2] == b"P6" or data[:2] == b"P5":
        return "PPM"
    if data[:4] in (b"II*\x00", b"MM\x00*"):
        return "TIFF"
    return "?"


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from the image header (Pillow reads only the header), or None."""
    import io
    import warnings

    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Image.open(io.BytesIO(data)).size
    except Exception:  # noqa: BLE001 - not an image, or one Pillow cannot parse: the caller shows "?"
        return None


def dataset_shard_path(directory: Path, manifest: Manifest, i: int) -> Path:
    return directory / manifest.shards[i].file


def shard_open_args(directory: Path, manifest: Manifest, i: int) -> tuple[Path, str, dict]:
    """``(path, format, options)`` that open shard ``i`` of a dataset directory
    with the format's ``open_shard(path, **options)``."""
    info = manifest.shards[i]
    options: dict = {}
    if manifest.format == "recordio" and info.index:
        options["index"] = directory / info.index
    if manifest.format == "tfrecord":
        options["label_base"] = manifest.label_base
        if info.index:
            options["index"] = directory / info.index
    return directory / info.file, manifest.format, options


def open_dataset_shard(directory: Path, manifest: Manifest, i: int):
    """A SampleReader for shard ``i`` of a dataset directory."""
    from fastdata.formats import registry

    path, format_name, options = shard_open_args(directory, manifest, i)
    return registry.get(format_name).open_shard(path, **options)
