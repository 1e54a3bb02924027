"""torch Datasets over fastdata's shards, other tools' files and image folders.

Map-style (drop-in for ``torchvision.datasets.ImageFolder``): :class:`ImageFolder`,
:class:`RecordIODataset`, :class:`TFRecordDataset`, :class:`LMDBDataset`.
Streaming (``IterableDataset``, exactly once per epoch across ranks and
workers): :class:`RecordIOStream`, :class:`TFRecordStream`.
:func:`open_dataset` picks the class for a path.
"""

from .folder import IMG_EXTENSIONS, ImageFolder, find_classes
from .iterable import RecordIOStream, TFRecordStream
from .open import open_dataset
from .shards import LMDBDataset, RecordIODataset, TFRecordDataset

__all__ = [
    "IMG_EXTENSIONS",
    "ImageFolder",
    "LMDBDataset",
    "RecordIODataset",
    "RecordIOStream",
    "TFRecordDataset",
    "TFRecordStream",
    "find_classes",
    "open_dataset",
]
