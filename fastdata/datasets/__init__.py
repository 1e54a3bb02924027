"""torch Datasets over fastdata's shards, other tools' files and image folders.

Map-style (drop-in for ``torchvision.datasets.ImageFolder``): :class:`ImageFolder`
and :class:`FormatDataset` over the shards of any registered format.
Streaming (``IterableDataset``, exactly once per epoch across ranks and
workers): :class:`FormatStream`. The per-format names (:class:`RecordIODataset`,
:class:`TFRecordDataset`, :class:`LMDBDataset`, :class:`RecordIOStream`,
:class:`TFRecordStream`) are the generic classes with the format fixed,
written out in :mod:`fastdata.datasets.named`; the format registry lists
them. :func:`open_dataset` picks the class for a path.

Names resolve lazily (PEP 562): importing this package imports no format.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..formats import registry

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time names resolve lazily below
    # "X as X": a re-export (PEP 484), not an unused import
    from .folder import IMG_EXTENSIONS as IMG_EXTENSIONS
    from .folder import ImageFolder as ImageFolder
    from .folder import find_classes as find_classes
    from .iterable import FormatStream as FormatStream
    from .named import LMDBDataset as LMDBDataset
    from .named import RecordIODataset as RecordIODataset
    from .named import RecordIOStream as RecordIOStream
    from .named import TFRecordDataset as TFRecordDataset
    from .named import TFRecordStream as TFRecordStream
    from .open import open_dataset as open_dataset
    from .shards import FormatDataset as FormatDataset

# public name -> module that defines it; the per-format names come from the registry
_LAZY = {
    "FormatDataset": "fastdata.datasets.shards",
    "FormatStream": "fastdata.datasets.iterable",
    "IMG_EXTENSIONS": "fastdata.datasets.folder",
    "ImageFolder": "fastdata.datasets.folder",
    "find_classes": "fastdata.datasets.folder",
    "open_dataset": "fastdata.datasets.open",
}
_LAZY.update(dict.fromkeys(registry.public_names(), "fastdata.datasets.named"))

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastdata.datasets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
