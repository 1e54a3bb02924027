"""What a DALI reader needs from a converted directory: shard paths, index files, labels.

Reads ``manifest.json`` and checks that every file DALI will open exists, so a
missing index fails here with the file's name and the fix, not as an opaque
error from inside a DALI thread. Knows nothing of DALI or torch.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ..errors import FormatError, ManifestError
from ..formats.manifest import MANIFEST_NAME, Manifest
from ..formats.tfrecord import IMAGE_KEY as TFRECORD_IMAGE_KEY
from ..formats.tfrecord import LABEL_KEY as TFRECORD_LABEL_KEY

# manifest format name -> DALI reader (fn.readers.<name>)
READERS = {"recordio": "mxnet", "tfrecord": "tfrecord", "lmdb": "caffe"}

# manifest.extra key under which the recordio writer records its one DALI index
DALI_INDEX_KEY = "dali_index"


@dataclasses.dataclass(frozen=True)
class DALISource:
    """The reader-level view of one dataset directory.

    Attributes:
        directory: the dataset directory.
        format: manifest format name (``"recordio"``, ``"tfrecord"``, ``"lmdb"``).
        reader: DALI reader name (``"mxnet"``, ``"tfrecord"``, ``"caffe"``).
        paths: shard files (LMDB: shard directories) in manifest order.
        index_paths: RecordIO: the one index over all shards; TFRecord: one per
            shard; LMDB: empty.
        num_samples: records in the whole dataset.
        label_base: stored label of class 0; subtract it for 0-based labels.
        classes: class names.
    """

    directory: Path
    format: str
    reader: str
    paths: tuple[str, ...]
    index_paths: tuple[str, ...]
    num_samples: int
    label_base: int
    classes: tuple[str, ...]


def dali_source(path: str | os.PathLike[str]) -> DALISource:
    """Read ``path``'s manifest and locate the files DALI needs.

    Args:
        path: a converted dataset directory (or its ``manifest.json``).

    Raises:
        ManifestError: no manifest, or a format DALI has no reader for.
        FormatError: a shard or index file is missing, or a TFRecord shard is
            compressed (DALI reads uncompressed TFRecord only); the message
            names the file and the fix.
    """
    directory = Path(path)
    if directory.name == MANIFEST_NAME:
        directory = directory.parent
    manifest = Manifest.read(directory)
    reader = READERS.get(manifest.format)
    if reader is None:
        raise ManifestError(
            f"{directory / MANIFEST_NAME}: format {manifest.format!r} has no DALI reader; "
            f"fastdata.dali reads {', '.join(sorted(READERS))}. Convert the images to one of those "
            "(fastdata convert --format recordio), or read this directory with fastdata's own datasets"
        )
    if not manifest.shards:
        raise ManifestError(f"{directory / MANIFEST_NAME}: the dataset has no shards; re-run the conversion")
    paths = tuple(_existing(directory / s.file, "shard") for s in manifest.shards)
    if manifest.format == "recordio":
        index_paths = (_recordio_index(directory, manifest),)
    elif manifest.format == "tfrecord":
        index_paths = tuple(_tfrecord_index(directory, s.file, s.index) for s in manifest.shards)
    else:
        index_paths = ()
    return DALISource(
        directory=directory,
        format=manifest.format,
        reader=reader,
        paths=paths,
        index_paths=index_paths,
        num_samples=manifest.num_samples,
        label_base=manifest.label_base,
        classes=tuple(manifest.classes),
    )


def _existing(path: Path, what: str, hint: str | None = None) -> str:
    if not path.exists():
        raise FormatError(
            f"{what} listed in {MANIFEST_NAME} does not exist",
            path=path,
            hint=hint or "the directory is incomplete: copy it again or re-run the conversion",
        )
    return os.fspath(path)


def _recordio_index(directory: Path, manifest: Manifest) -> str:
    # DALI's mxnet reader takes exactly one index, whose offsets count from the
    # start of the concatenated .rec files; the per-shard .idx files do not do.
    name = manifest.extra.get(DALI_INDEX_KEY)
    if not name:
        raise FormatError(
            f"{MANIFEST_NAME} names no DALI index (extra.{DALI_INDEX_KEY})",
            path=directory,
            hint="DALI needs one index over all .rec shards, written at conversion time: re-run the conversion",
        )
    hint = (
        "DALI needs this one index over all .rec shards: rebuild it with "
        f"fastdata.formats.recordio.write_dali_index(directory, Manifest.read(directory).shards, {name!r})"
    )
    return _existing(directory / name, "DALI index", hint)


def _tfrecord_index(directory: Path, shard: str, index: str | None) -> str:
    if shard.endswith((".gz", ".zz", ".zlib")):
        raise FormatError(
            "DALI's TFRecord reader cannot read compressed shards",
            path=directory / shard,
            hint="re-convert without compression, or read it with fastdata.TFRecordDataset",
        )
    hint = (
        "DALI needs one 'offset length' index per TFRecord shard; rebuild it with "
        "fastdata.formats.tfrecord.index.build_index(shard, index) or re-run the conversion"
    )
    if not index:
        raise FormatError(f"{MANIFEST_NAME} names no index for this shard", path=directory / shard, hint=hint)
    return _existing(directory / index, "TFRecord index", hint)
