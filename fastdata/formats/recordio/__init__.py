"""MXNet RecordIO (``.rec`` + ``.idx``), read and written natively (no mxnet).

- :class:`Reader` / :class:`Writer`: raw records, byte-compatible with
  dmlc-core (multi-part records for payloads holding the magic word).
- :class:`IRHeader`, :func:`pack`, :func:`unpack`: MXNet's image-record header.
- :func:`build_index`: the ``.idx`` of a ``.rec`` that has none.
- :func:`read_lst`, :func:`write_lst`: im2rec's list files.
- :func:`write_shard`, :func:`open_shard`, :data:`FORMAT`: image samples for
  the format registry; ``finalize`` writes ``dali.idx``, the single index
  DALI's ``fn.readers.mxnet`` needs for a multi-shard dataset.

The byte layout is in ``spec.md`` beside this file.
"""

from ..registry import FormatSpec
from ._framing import MAGIC
from .index import build_index, parse_index, write_index
from .irheader import IRHeader, pack, unpack
from .lst import read_lst, write_lst
from .reader import Reader
from .shard import DALI_INDEX, ImageRecordReader, finalize, open_shard, write_dali_index, write_shard
from .writer import Writer

FORMAT = FormatSpec(
    name="recordio",
    suffix=".rec",
    write_shard=write_shard,
    open_shard=open_shard,
    label_base=0,
    finalize=finalize,
)

__all__ = [
    "DALI_INDEX",
    "FORMAT",
    "MAGIC",
    "IRHeader",
    "ImageRecordReader",
    "Reader",
    "Writer",
    "build_index",
    "finalize",
    "open_shard",
    "pack",
    "parse_index",
    "read_lst",
    "unpack",
    "write_dali_index",
    "write_index",
    "write_lst",
    "write_shard",
]
