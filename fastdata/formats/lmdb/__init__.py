"""LMDB shards in Caffe's ``Datum`` layout, the one DALI's ``fn.readers.caffe`` reads.

Layers, bottom up (byte layout, key scheme and DALI's requirements: ``spec.md``):

* :func:`encode_datum` / :func:`decode_datum` / :func:`datum_to_image`: the
  ``caffe.Datum`` protobuf, hand-encoded (no ``protobuf`` dependency).
* :class:`Writer` / :class:`Reader`: any LMDB, key -> value, batched writes
  with automatic map growth; lazy, fork-safe, picklable reads by key or position.
* :func:`write_shard` / :func:`open_shard`: image samples, one LMDB directory
  (``shard-00000.lmdb/data.mdb``) per shard; :data:`FORMAT` registers them.

Naming note: this package is ``fastdata.formats.lmdb``. Its modules import the
PyPI binding with the absolute ``import lmdb as py_lmdb``; user code that does
``import lmdb`` still gets py-lmdb, since Python 3 has no implicit relative imports.
"""

from __future__ import annotations

from ..registry import FormatSpec
from .datum import Datum, datum_to_image, decode_datum, encode_datum
from .reader import MissingKeyError, Reader
from .shards import (
    KEY_DIGITS,
    NO_LABEL,
    ShardReader,
    open_shard,
    shard_key,
    write_shard,
)
from .writer import Writer

FORMAT = FormatSpec(name="lmdb", suffix=".lmdb", write_shard=write_shard, open_shard=open_shard, label_base=0)

__all__ = [
    "FORMAT",
    "KEY_DIGITS",
    "NO_LABEL",
    "Datum",
    "MissingKeyError",
    "Reader",
    "ShardReader",
    "Writer",
    "datum_to_image",
    "decode_datum",
    "encode_datum",
    "open_shard",
    "shard_key",
    "write_shard",
]
