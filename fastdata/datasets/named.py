"""The per-format dataset classes, written out so that IDEs and type checkers
(``mypy``, ``pyright``; the package ships ``py.typed``) see their signatures.

Each is the generic class (:class:`~fastdata.datasets.shards.FormatDataset`
or :class:`~fastdata.datasets.iterable.FormatStream`) with its format fixed
and the format's reader options (its ``FormatSpec.options``) as keywords. The
format registry names them (``fastdata.formats.registry.public_names()``);
``tests/datasets/test_named_classes.py`` checks that both agree, name
for name, keyword for keyword, default for default. Importing this module
imports no format package: the options' defaults are spelled here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from .imaging import Transform
from .iterable import DEFAULT_SHUFFLE_BUFFER, FormatStream
from .shards import FormatDataset
from .sources import PathArg

__all__ = ["LMDBDataset", "RecordIODataset", "RecordIOStream", "TFRecordDataset", "TFRecordStream"]

# TFRecord's feature keys: fastdata.formats.tfrecord.features.IMAGE_KEY / LABEL_KEY
_IMAGE_KEY = "image/encoded"
_LABEL_KEY = "image/class/label"


class RecordIODataset(FormatDataset):
    """MXNet RecordIO shards (``.rec`` with the ``.idx`` beside each; fastdata's
    or im2rec's): ``FormatDataset(path, format="recordio", ...)``.

    Args: as for :class:`~fastdata.datasets.shards.FormatDataset`; RecordIO
    takes no options of its own.
    """

    fixed_format: ClassVar[str | None] = "recordio"

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
        super().__init__(path, transform, target_transform, classes=classes, decode=decode, on_error=on_error)


class LMDBDataset(FormatDataset):
    """LMDB shards (fastdata's, Caffe's ``Datum`` or BasicSR's bare images; the
    layout of each value is recognised by its first bytes):
    ``FormatDataset(path, format="lmdb", ...)``.

    Args: as for :class:`~fastdata.datasets.shards.FormatDataset`; LMDB
    takes no options of its own.
    """

    fixed_format: ClassVar[str | None] = "lmdb"

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
        super().__init__(path, transform, target_transform, classes=classes, decode=decode, on_error=on_error)


class TFRecordDataset(FormatDataset):
    """TFRecord shards of ``tf.train.Example`` (fastdata's or TensorFlow's, also
    GZIP/ZLIB-compressed): ``FormatDataset(path, format="tfrecord", ...)``.

    Args:
        path, transform, target_transform, classes, decode, on_error: as for
            :class:`~fastdata.datasets.shards.FormatDataset`.
        image_key: the feature holding the encoded image.
        label_key: the int64 feature holding the class label.
        label_base: the stored label of class 0, subtracted so targets are
            0-based. Default: the manifest's for a converted directory; for
            other files 1 under ``"image/class/label"`` (TensorFlow's ImageNet
            scripts store 1..1000) and 0 under any other key.
    """

    fixed_format: ClassVar[str | None] = "tfrecord"

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
        image_key: str = _IMAGE_KEY,
        label_key: str = _LABEL_KEY,
        label_base: int | None = None,
    ) -> None:
        super().__init__(
            path, transform, target_transform, classes=classes, decode=decode, on_error=on_error,
            image_key=image_key, label_key=label_key, label_base=label_base,
        )


class RecordIOStream(FormatStream):
    """RecordIO shards streamed in order: ``FormatStream(path, format="recordio", ...)``.

    Args: as for :class:`~fastdata.datasets.iterable.FormatStream`.
    """

    fixed_format: ClassVar[str | None] = "recordio"
    __signature__ = None  # FormatStream's spelled-out signature is not this class's: inspect reads __init__

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
        seed: int = 0,
        shuffle: bool = True,
        shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
    ) -> None:
        super().__init__(
            path, transform, target_transform, seed=seed, shuffle=shuffle, shuffle_buffer=shuffle_buffer,
            rank=rank, world_size=world_size, drop_last=drop_last, classes=classes, decode=decode, on_error=on_error,
        )


class TFRecordStream(FormatStream):
    """TFRecord shards streamed in order: ``FormatStream(path, format="tfrecord", ...)``.

    Args: as for :class:`~fastdata.datasets.iterable.FormatStream`, plus
    TFRecord's ``image_key``, ``label_key`` and ``label_base`` (see
    :class:`TFRecordDataset`).
    """

    fixed_format: ClassVar[str | None] = "tfrecord"
    __signature__ = None  # FormatStream's spelled-out signature is not this class's: inspect reads __init__

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
        seed: int = 0,
        shuffle: bool = True,
        shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
        image_key: str = _IMAGE_KEY,
        label_key: str = _LABEL_KEY,
        label_base: int | None = None,
    ) -> None:
        super().__init__(
            path, transform, target_transform, seed=seed, shuffle=shuffle, shuffle_buffer=shuffle_buffer,
            rank=rank, world_size=world_size, drop_last=drop_last, classes=classes, decode=decode, on_error=on_error,
            image_key=image_key, label_key=label_key, label_base=label_base,
        )
