"""NVIDIA DALI pipelines over fastdata's converted shard directories.

``build_pipeline`` returns a DALI pipeline (training or evaluation preset) for a
RecordIO, TFRecord or LMDB directory; ``DALILoader`` iterates it as
``(images, labels)`` torch tensors. Settings come grouped: ``Crop`` (output
size and crop geometry), ``Normalize`` (mean/std in 0-1 units, as
``fastdata.Prefetch``; output dtype) and ``Reading`` (shuffling, prefetch
depth). Which DALI reader reads a format, the format registry says. DALI
itself is imported only when a pipeline is built, so this package imports
without it; building one without DALI raises MissingDependencyError
(``pip install 'fastdata[dali]'``).

DALI's readers cannot check the per-record checksums fastdata writes beside
RecordIO and LMDB shards (``<shard>.crc``, :mod:`fastdata.formats.checksums`):
a damaged payload reaches its decoder unnoticed. Check a copied dataset with ``fastdata verify DIR``, or
read it with fastdata's datasets, which check every record.
"""

from __future__ import annotations

from .iterator import DALILoader
from .pipelines import build_pipeline
from .settings import IMAGENET_MEAN, IMAGENET_STD, Crop, Normalize, Reading
from .sources import DALISource, dali_source

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "Crop",
    "DALILoader",
    "DALISource",
    "Normalize",
    "Reading",
    "build_pipeline",
    "dali_source",
]
