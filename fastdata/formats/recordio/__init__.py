"""MXNet RecordIO (``.rec`` + ``.idx``), read and written natively (no mxnet).

- :class:`Reader` / :class:`Writer`: raw records, byte-compatible with
  dmlc-core (multi-part records for payloads holding the magic word).
- :class:`IRHeader`, :func:`pack`, :func:`unpack`: MXNet's image-record header.
- :func:`build_index`: the ``.idx`` of a ``.rec`` that has none.
- :func:`read_lst`, :func:`write_lst`: im2rec's list files.
- :func:`write_shard`, :func:`open_shard` (a :class:`ShardReader`),
  :data:`FORMAT`: image samples for the format registry; ``finalize`` writes
  ``dali.idx``, the single index DALI's ``fn.readers.mxnet`` needs for a
  multi-shard dataset. The registry's other hooks are in ``tools.py``.

The byte layout is in ``spec.md`` beside this file.
"""

from ..hooks import DALIReader, IndexHook
from ..registry import FormatSpec
from . import tools
from .framing import MAGIC
from .index import build_index, default_index_path, parse_index, write_index
from .irheader import IRHeader, pack, unpack
from .join import join_shard
from .lst import class_names, read_lst, write_lst
from .reader import Reader
from .shards import (
    DALI_INDEX,
    ImageRecordReader,
    RecordIOOptions,
    ShardReader,
    finalize,
    open_shard,
    write_dali_index,
    write_shard,
)
from .writer import Writer

FORMAT = FormatSpec(
    name="recordio",
    title="a RecordIO file",
    recognised_by="magic 0a23d7ce, or a .rec name",
    suffixes=(".rec",),
    data_name=None,
    write_shard=write_shard,
    open_shard=open_shard,
    options=RecordIOOptions,
    sniff=tools.sniff,
    claim=tools.claim,
    framing=(range(8),),  # magic word and lrecord (continuation flag + length)
    label_vectors=True,
    dali=DALIReader(reader="mxnet", index_paths=tools.dali_index_paths),
    record_checksums=tools.record_checksums,
    inspect=tools.inspect,
    verify=tools.verify,
    index=IndexHook(path=default_index_path, build=tools.build),
    label_base=0,
    finalize=finalize,
    check_finalized=tools.check_finalized,
    class_names=class_names,
    join=join_shard,
)

__all__ = [
    "DALI_INDEX",
    "FORMAT",
    "MAGIC",
    "IRHeader",
    "ImageRecordReader",
    "Reader",
    "RecordIOOptions",
    "ShardReader",
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
