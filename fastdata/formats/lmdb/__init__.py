"""LMDB shards in Caffe's ``Datum`` layout, the one DALI's ``fn.readers.caffe`` reads.

Layers, bottom up (byte layout, key scheme and DALI's requirements: ``spec.md``):

* :func:`encode_datum` / :func:`decode_datum` / :func:`datum_to_image`: the
  ``caffe.Datum`` protobuf, hand-encoded (no ``protobuf`` dependency).
* :class:`Writer` / :class:`Reader`: any LMDB, key -> value, batched writes
  with automatic map growth; lazy, fork-safe, picklable reads by key or position.
* :func:`write_shard` / :func:`open_shard`: image samples, one LMDB directory
  (``shard-00000.lmdb/data.mdb``) per shard; :data:`FORMAT` registers them
  (the registry's other hooks are in ``tools.py``).

Naming note: this package is ``fastdata.formats.lmdb``. Its modules import the
PyPI binding with the absolute ``import lmdb as py_lmdb``; user code that does
``import lmdb`` still gets py-lmdb, since Python 3 has no implicit relative imports.
"""

from __future__ import annotations

from ..hooks import NO_FRAMING, DALIReader
from ..registry import FormatSpec
from . import tools
from ._env import DATA_NAME
from .datum import Datum, datum_to_image, decode_datum, encode_datum
from .reader import MissingKeyError, Reader
from .shards import (
    KEY_DIGITS,
    NO_LABEL,
    LMDBOptions,
    ShardReader,
    open_shard,
    shard_key,
    write_shard,
)
from .writer import Writer

FORMAT = FormatSpec(
    name="lmdb",
    title="an LMDB",
    recognised_by=f"a directory holding {DATA_NAME}, or LMDB's meta page",
    suffixes=(".lmdb",),
    data_name=DATA_NAME,
    write_shard=write_shard,
    open_shard=open_shard,
    options=LMDBOptions,
    sniff=tools.sniff,
    claim=tools.claim,
    framing=NO_FRAMING,  # values live in B-tree pages; lmdb.verify checks their structure
    label_vectors=False,  # caffe.Datum holds one int32 label
    dali=DALIReader(reader="caffe", index_paths=tools.dali_index_paths),
    record_checksums=tools.record_checksums,
    inspect=tools.inspect,
    verify=tools.verify,
    index=None,  # keys are the index
    label_base=0,
)

__all__ = [
    "FORMAT",
    "KEY_DIGITS",
    "NO_LABEL",
    "Datum",
    "LMDBOptions",
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
