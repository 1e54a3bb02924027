# The signatures type checkers and IDEs see for fastdata.datasets.named, whose
# classes are made at run time from the format registry. Each is the generic
# class with the format fixed and the format's options (its FormatSpec.options)
# as keywords; tests/datasets/test_named_classes.py checks every class, keyword,
# annotation and default here against the registry and the classes made.

from collections.abc import Sequence

from .imaging import Transform
from .iterable import FormatStream
from .shards import FormatDataset
from .sources import PathArg

__all__ = ["LMDBDataset", "RecordIODataset", "RecordIOStream", "TFRecordDataset", "TFRecordStream"]

def public_class(format_name: str, kind: str = "dataset") -> type: ...
def per_format(name: str) -> type: ...

class LMDBDataset(FormatDataset):
    """LMDB shards (fastdata's, Caffe's ``Datum`` or BasicSR's bare images):
    ``FormatDataset(path, format="lmdb", ...)``; no options of its own."""

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
    ) -> None: ...

class RecordIODataset(FormatDataset):
    """MXNet RecordIO shards (``.rec`` with the ``.idx`` beside each):
    ``FormatDataset(path, format="recordio", ...)``; no options of its own."""

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
    ) -> None: ...

class RecordIOStream(FormatStream):
    """RecordIO shards streamed in order: ``FormatStream(path, format="recordio", ...)``."""

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
        shuffle_buffer: int = 512,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
    ) -> None: ...

class TFRecordDataset(FormatDataset):
    """TFRecord shards of ``tf.train.Example`` (also GZIP/ZLIB-compressed):
    ``FormatDataset(path, format="tfrecord", ...)``; its options are
    ``fastdata.formats.tfrecord.shards.TFRecordOptions``."""

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
        image_key: str = "image/encoded",
        label_key: str = "image/class/label",
        label_base: int | None = None,
    ) -> None: ...

class TFRecordStream(FormatStream):
    """TFRecord shards streamed in order: ``FormatStream(path, format="tfrecord", ...)``;
    its options are those of :class:`TFRecordDataset`."""

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
        shuffle_buffer: int = 512,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
        image_key: str = "image/encoded",
        label_key: str = "image/class/label",
        label_base: int | None = None,
    ) -> None: ...
