"""NVIDIA DALI pipelines over fastdata's converted shard directories.

``build_pipeline`` returns a DALI pipeline (training or evaluation preset) for a
RecordIO, TFRecord or LMDB directory; ``DALILoader`` iterates it as
``(images, labels)`` torch tensors. DALI itself is imported only when a
pipeline is built, so this package imports without it; building one without
DALI raises MissingDependencyError (``pip install 'fastdata[dali]'``).
"""

from __future__ import annotations

from .iterator import DALILoader
from .pipelines import IMAGENET_MEAN, IMAGENET_STD, build_pipeline
from .sources import DALISource, dali_source

__all__ = ["DALILoader", "DALISource", "IMAGENET_MEAN", "IMAGENET_STD", "build_pipeline", "dali_source"]
