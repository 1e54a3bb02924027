"""On-disk shard formats. Readers here return bytes and labels and know nothing of torch.

Each format is a subpackage (``recordio``, ``tfrecord``, ``lmdb``) with its own
byte-level ``spec.md``; :mod:`.registry` maps names to them.
"""

from .manifest import MANIFEST_NAME, Manifest
from .registry import FormatSpec, get, names
from .sample import Sample, SampleReader, ShardInfo

__all__ = ["MANIFEST_NAME", "FormatSpec", "Manifest", "Sample", "SampleReader", "ShardInfo", "get", "names"]
