"""Map-style datasets over converted shards and over files other tools wrote.

Each class takes a converted dataset directory (``manifest.json``: classes and
record counts come from it, so opening is instant), one foreign shard, a glob
or a list of shards (each is opened once to count its records). Samples are
``(image, target)``; see :mod:`fastdata.datasets.imaging` for what ``image`` is
and :mod:`fastdata.datasets.policy` for ``on_error``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..errors import FormatError
from ..remote import hooks as remote_hooks
from .base import ShardDataset, ShardLabels
from .imaging import Transform
from .shardset import ShardSet
from .sources import PathArg, lst_classes, resolve

TF_IMAGE_KEY = "image/encoded"
TF_LABEL_KEY = "image/class/label"
TF_TEXT_KEY = "image/class/text"


TARGETS_EXTRA = "targets"
"""``manifest.extra`` key naming a ``.npy`` of every sample's 0-based target
(int64, in sample order) that a converter may write beside the shards; with
it, ``dataset.targets`` costs one small read instead of a pass over records."""


def converted(format_name: str, path: PathArg, paths: list[str], manifest: Any, options: dict[str, Any]) -> ShardSet:
    """The ShardSet of a converted directory: counts and targets file from its manifest.

    Every converted directory a dataset or stream opens passes here, so this
    is where each shard's size is checked against the manifest (one ``stat``
    each): a truncated shard fails now, not in a worker when its last record is read.
    """
    if not remote_hooks.is_localized(path):  # a remote dataset's shards are checked as they are fetched
        manifest.check_shard_sizes(path)
    targets = manifest.extra.get(TARGETS_EXTRA)
    sources = manifest.sources_file(path)  # type: ignore[arg-type]
    return ShardSet(
        format_name,
        paths,
        options,
        [s.records for s in manifest.shards],
        targets_file=os.path.join(os.fspath(path), targets) if targets else None,  # type: ignore[arg-type]
        sources_file=os.fspath(sources) if sources is not None else None,
    )


def recordio_shards(path: PathArg) -> tuple[ShardSet, list[str] | None]:
    path = remote_hooks.local_root(path)
    paths, manifest = resolve(path, "recordio")
    if manifest is not None:
        return converted("recordio", path, paths, manifest, {}), manifest.classes
    classes = lst_classes(paths[0]) if len(paths) == 1 else None
    return ShardSet("recordio", paths, {}), classes


def tfrecord_shards(
    path: PathArg, *, image_key: str, label_key: str, label_base: int | None
) -> tuple[ShardSet, list[str] | None]:
    path = remote_hooks.local_root(path)
    paths, manifest = resolve(path, "tfrecord")
    options: dict[str, Any] = {"image_key": image_key, "label_key": label_key}
    if manifest is not None:
        options["label_base"] = manifest.label_base if label_base is None else label_base
        return converted("tfrecord", path, paths, manifest, options), manifest.classes
    # Foreign files: None lets the reader apply TensorFlow's ImageNet rule
    # (1-based under "image/class/label", 0-based under any other key).
    options["label_base"] = label_base
    return ShardSet("tfrecord", paths, options), None


def tfrecord_class_names(shards: ShardSet) -> list[str] | None:
    """Class names from each record's ``image/class/text`` (one pass over the
    files), or None when a class has no text or two texts."""
    from ..formats.tfrecord import parse_example

    names: dict[int, str] = {}
    for k in range(len(shards.paths)):
        reader = shards.reader(k)
        records = getattr(reader, "reader", None)
        base = getattr(reader, "label_base", None)
        label_key = getattr(reader, "label_key", None)
        if records is None or base is None or label_key is None:
            return None
        for i in range(int(shards.counts[k])):
            try:
                example = parse_example(records[i])
            except FormatError:
                return None
            label, text = example.get(label_key), example.get(TF_TEXT_KEY)
            if label is None or text is None or len(label) != 1 or len(text) != 1:
                return None
            name = bytes(text[0]).decode("utf-8", "replace")
            if names.setdefault(int(label[0]) - base, name) != name:
                return None
    if sorted(names) != list(range(len(names))):
        return None
    return [names[i] for i in range(len(names))]


class TFClassNames(ShardLabels):
    """``classes`` of foreign TFRecord files from ``image/class/text`` when
    every class has exactly one text, else ``str(label)``."""

    _names_tried = False

    @property
    def classes(self) -> list[str]:
        if self._classes is None and not self._names_tried:
            self._names_tried = True
            self._classes = tfrecord_class_names(self.shards)
        return ShardLabels.classes.fget(self)  # type: ignore[attr-defined]


def lmdb_shards(path: PathArg) -> tuple[ShardSet, list[str] | None]:
    path = remote_hooks.local_root(path)
    paths, manifest = resolve(path, "lmdb", dir_is_shard=True)
    if manifest is not None:
        return converted("lmdb", path, paths, manifest, {}), manifest.classes
    return ShardSet("lmdb", paths, {}), None


class RecordIODataset(ShardDataset):
    """MXNet RecordIO shards (fastdata's or im2rec's ``.rec``, ``.idx`` optional).

    Args:
        path: converted directory, a ``.rec`` file, a glob or a list of them.
        transform: applied to the PIL RGB image (or to ``EncodedImage`` when
            it is decode-aware).
        target_transform: applied to the target.
        classes: class names for foreign files. Default: the manifest's; for
            an im2rec ``.rec`` with its ``.lst`` beside, the top directory of
            each class's paths; else ``str(label)``.
        decode: False returns ``(stored image bytes, target)`` untransformed.
        on_error: ``"raise"``, ``"skip"`` or ``"warn"``.

    Targets are ints for class labels (MXNet stores float32) and float32
    vectors for im2rec's label vectors (``flag > 0``).
    """

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
    ) -> None:
        shards, found = recordio_shards(path)
        super().__init__(
            shards,
            classes=classes if classes is not None else found,
            transform=transform,
            target_transform=target_transform,
            decode=decode,
            on_error=on_error,
        )


class TFRecordDataset(TFClassNames, ShardDataset):
    """TFRecord files of ``tf.train.Example`` (fastdata's or TensorFlow's).

    Args:
        path: converted directory, a TFRecord file, a glob (e.g.
            ``"train-*-of-01024"``) or a list of them.
        transform, target_transform, decode, on_error: as for
            :class:`RecordIODataset`.
        classes: class names. Default: the manifest's; for other files the
            records' ``image/class/text`` (one pass, on first use), else
            ``str(label)``.
        image_key: the feature holding the encoded image.
        label_key: the int64 feature holding the class label.
        label_base: the stored label of class 0, subtracted so targets are
            0-based. Default: the manifest's for a converted directory; for
            other files 1 under ``"image/class/label"`` (TensorFlow's ImageNet
            scripts store 1..1000) and 0 under any other key. Pass 0 for files
            that store 0-based labels: a stored label below the base raises
            FormatError saying so.
    """

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        image_key: str = TF_IMAGE_KEY,
        label_key: str = TF_LABEL_KEY,
        label_base: int | None = None,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
    ) -> None:
        shards, found = tfrecord_shards(path, image_key=image_key, label_key=label_key, label_base=label_base)
        super().__init__(
            shards,
            classes=classes if classes is not None else found,
            transform=transform,
            target_transform=target_transform,
            decode=decode,
            on_error=on_error,
        )


class LMDBDataset(ShardDataset):
    """LMDB environments: fastdata's, Caffe's ``caffe.Datum`` (encoded or raw
    pixels) and plain ``key -> image bytes`` stores, samples in key order.

    Raw-pixel datums come back as binary PPM bytes (RGB) under ``decode=False``;
    plain image stores have no labels, so their targets are -1.

    Args:
        path: converted directory, an LMDB directory (with ``data.mdb``) or a
            list of them.
        transform, target_transform, classes, decode, on_error: as for
            :class:`RecordIODataset`.
    """

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
    ) -> None:
        shards, found = lmdb_shards(path)
        super().__init__(
            shards,
            classes=classes if classes is not None else found,
            transform=transform,
            target_transform=target_transform,
            decode=decode,
            on_error=on_error,
        )
