"""The per-format dataset classes (``RecordIODataset``, ``TFRecordStream``...).

Each is the generic class (:class:`~fastdata.datasets.shards.FormatDataset`
or :class:`~fastdata.datasets.iterable.FormatStream`) with its format fixed
and the format's reader options (its ``FormatSpec.options`` dataclass) as
keywords, written out so that ``help()``, type checkers and "go to
definition" all land here. The format registry names them
(``fastdata.formats.registry.public_names()``);
``tests/datasets/test_named_classes.py`` checks each class against it, name
for name, keyword for keyword, annotation and default for default. Importing
this module imports no format package.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..formats import registry
from .imaging import Transform
from .iterable import DEFAULT_SHUFFLE_BUFFER, FormatStream
from .shards import FormatDataset
from .sources import PathArg

__all__ = ["LMDBDataset", "RecordIODataset", "RecordIOStream", "TFRecordDataset", "TFRecordStream"]


class LMDBDataset(FormatDataset):
    """LMDB shards (fastdata's, Caffe's ``Datum`` or BasicSR's bare images):
    ``FormatDataset(path, format="lmdb", ...)``; no options of its own."""

    fixed_format = "lmdb"

    def __init__(self, path: PathArg, transform: Transform | None = None, target_transform: Transform | None = None,
                 *, classes: Sequence[str] | None = None, decode: bool = True, on_error: str = "raise") -> None:
        super().__init__(path, transform, target_transform, classes=classes, decode=decode, on_error=on_error)


class RecordIODataset(FormatDataset):
    """MXNet RecordIO shards (``.rec`` with the ``.idx`` beside each):
    ``FormatDataset(path, format="recordio", ...)``; no options of its own."""

    fixed_format = "recordio"

    def __init__(self, path: PathArg, transform: Transform | None = None, target_transform: Transform | None = None,
                 *, classes: Sequence[str] | None = None, decode: bool = True, on_error: str = "raise") -> None:
        super().__init__(path, transform, target_transform, classes=classes, decode=decode, on_error=on_error)


class TFRecordDataset(FormatDataset):
    """TFRecord shards of ``tf.train.Example`` (also GZIP/ZLIB-compressed):
    ``FormatDataset(path, format="tfrecord", ...)``.

    Args: as for :class:`~fastdata.datasets.shards.FormatDataset`, plus the
    format's options (``fastdata.formats.tfrecord.shards.TFRecordOptions``):
        image_key: the feature holding the encoded image.
        label_key: the int64 feature holding the class label.
        label_base: the stored label of class 0, subtracted so targets are
            0-based. Default: the manifest's for a converted directory; for
            other files 1 under ``"image/class/label"`` (TensorFlow's ImageNet
            scripts store 1..1000) and 0 under any other key. Pass 0 for
            files that store 0-based labels: a stored label below the base
            raises FormatError saying so.
    """

    fixed_format = "tfrecord"

    def __init__(self, path: PathArg, transform: Transform | None = None, target_transform: Transform | None = None,
                 *, classes: Sequence[str] | None = None, decode: bool = True, on_error: str = "raise",
                 image_key: str = "image/encoded", label_key: str = "image/class/label",
                 label_base: int | None = None) -> None:
        super().__init__(path, transform, target_transform, classes=classes, decode=decode, on_error=on_error,
                         image_key=image_key, label_key=label_key, label_base=label_base)


class RecordIOStream(FormatStream):
    """RecordIO shards streamed in order: ``FormatStream(path, format="recordio", ...)``."""

    fixed_format = "recordio"

    def __init__(self, path: PathArg, transform: Transform | None = None, target_transform: Transform | None = None,
                 *, classes: Sequence[str] | None = None, decode: bool = True, on_error: str = "raise",
                 seed: int = 0, shuffle: bool = True, shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
                 rank: int | None = None, world_size: int | None = None, drop_last: bool = False) -> None:
        super().__init__(path, transform, target_transform, classes=classes, decode=decode, on_error=on_error,
                         seed=seed, shuffle=shuffle, shuffle_buffer=shuffle_buffer, rank=rank,
                         world_size=world_size, drop_last=drop_last)


class TFRecordStream(FormatStream):
    """TFRecord shards streamed in order: ``FormatStream(path, format="tfrecord", ...)``;
    its options are those of :class:`TFRecordDataset`."""

    fixed_format = "tfrecord"

    def __init__(self, path: PathArg, transform: Transform | None = None, target_transform: Transform | None = None,
                 *, classes: Sequence[str] | None = None, decode: bool = True, on_error: str = "raise",
                 seed: int = 0, shuffle: bool = True, shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
                 rank: int | None = None, world_size: int | None = None, drop_last: bool = False,
                 image_key: str = "image/encoded", label_key: str = "image/class/label",
                 label_base: int | None = None) -> None:
        super().__init__(path, transform, target_transform, classes=classes, decode=decode, on_error=on_error,
                         seed=seed, shuffle=shuffle, shuffle_buffer=shuffle_buffer, rank=rank,
                         world_size=world_size, drop_last=drop_last,
                         image_key=image_key, label_key=label_key, label_base=label_base)


CLASSES: dict[str, type] = {cls.__name__: cls for cls in
                            (LMDBDataset, RecordIODataset, RecordIOStream, TFRecordDataset, TFRecordStream)}
"""The classes above by name: what the registry's class names resolve to."""

_GENERIC: dict[str, type] = {"dataset": FormatDataset, "stream": FormatStream}


def public_class(format_name: str, kind: str = "dataset") -> type:
    """The class ``open_dataset`` gives for ``format_name``: its per-format
    class of ``kind`` ("dataset" or "stream") when the registry names one,
    else the generic class.

    Raises:
        LookupError: the registry names a class this module does not define.
    """
    names = [n for n, found in registry.public_names().items() if found == (format_name, kind)]
    if not names:
        return _GENERIC[kind]
    cls = CLASSES.get(names[0])
    if cls is None:
        raise LookupError(f"the format registry names {names[0]} for {format_name!r} ({kind}), but "
                          f"fastdata/datasets/named.py defines no such class: write it there, as the others are")
    return cls
