"""What a DALI reader needs from a converted directory: shard paths, index files, labels.

The format registry is the only door: each format's ``FormatSpec.dali``
names its reader and finds (and checks) its index files. The shards are opened
the way every dataset opens a converted directory, which checks each shard's
size against the manifest, so a missing or truncated file fails here with its
name and the fix, not as an opaque error from inside a DALI thread. Imports no DALI.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from ..datasets.shards import converted
from ..errors import ManifestError
from ..formats import registry
from ..formats.manifest import MANIFEST_NAME, Manifest


@dataclasses.dataclass(frozen=True)
class DALISource:
    """The reader-level view of one dataset directory.

    Attributes:
        directory: the dataset directory.
        format: manifest format name (``"recordio"``, ``"tfrecord"``, ``"lmdb"``).
        reader: DALI reader name under ``fn.readers`` (``"mxnet"``, ``"tfrecord"``, ``"caffe"``).
        paths: shard files (LMDB: shard directories) in manifest order.
        index_paths: what the reader takes as ``index_path`` (RecordIO: the
            one index over all shards; TFRecord: one per shard); empty for
            a reader without indexes.
        features: ``(image, label)`` feature names for a reader that parses
            records into named features (TFRecord), else None.
        num_samples: records in the whole dataset.
        label_base: stored label of class 0; subtract it for 0-based labels.
        classes: class names.
    """

    directory: Path
    format: str
    reader: str
    paths: tuple[str, ...]
    index_paths: tuple[str, ...]
    features: tuple[str, str] | None
    num_samples: int
    label_base: int
    classes: tuple[str, ...]


def dali_source(path: str | os.PathLike[str]) -> DALISource:
    """Read ``path``'s manifest and locate the files DALI needs.

    Args:
        path: a converted dataset directory (or its ``manifest.json``).

    Raises:
        ManifestError: no manifest, no shards, or a format with no DALI reader.
        FormatError: a shard missing or not the size the manifest records, or
            an index file missing (or a shard DALI cannot read, such as a
            compressed TFRecord); the message names the file and the fix.
    """
    directory = Path(path)
    if directory.name == MANIFEST_NAME:
        directory = directory.parent
    manifest = Manifest.read(directory)
    hook = registry.get(manifest.format).dali if manifest.format in registry.names() else None
    if hook is None:
        readable = [n for n in registry.names() if registry.get(n).dali is not None]
        raise ManifestError(
            f"{directory / MANIFEST_NAME}: format {manifest.format!r} has no DALI reader; "
            f"fastdata.dali reads {', '.join(readable)}. Convert the images to one of those "
            "(fastdata convert --format recordio), or read this directory with fastdata's own datasets"
        )
    if not manifest.shards:
        raise ManifestError(f"{directory / MANIFEST_NAME}: the dataset has no shards; re-run the conversion")
    shards = converted(manifest.format, directory, [os.fspath(manifest.path_of(directory, s.file)) for s in manifest.shards], manifest, {})
    return DALISource(
        directory=directory,
        format=manifest.format,
        reader=hook.reader,
        paths=tuple(shards.paths),
        index_paths=hook.index_paths(directory, manifest),
        features=hook.features,
        num_samples=manifest.num_samples,
        label_base=manifest.label_base,
        classes=tuple(manifest.classes),
    )
