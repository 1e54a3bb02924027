"""On-disk shard formats. Readers here return bytes and labels and know nothing of torch.

Each format is a subpackage (``recordio``, ``tfrecord``, ``lmdb``) with its own
byte-level ``spec.md``; :mod:`.registry` maps names to them and is the only
door: code outside this package asks it (:func:`get`, :func:`detect`) and
never imports a format's package.
"""

from .hooks import Detected
from .manifest import MANIFEST_NAME, Manifest
from .registry import FormatSpec, detect, get, names
from .sample import Sample, SampleReader, ShardInfo

__all__ = [
    "MANIFEST_NAME",
    "Detected",
    "FormatSpec",
    "Manifest",
    "Sample",
    "SampleReader",
    "ShardInfo",
    "detect",
    "get",
    "names",
]
