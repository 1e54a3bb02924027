"""TFRecord: TensorFlow's record format, read and written without TensorFlow.

Framing, CRC checks, index files, ``tf.train.Example`` encoding/parsing and
image shards in TensorFlow's ImageNet layout; the bytes are described in
``spec.md`` beside this file.

Conventions:
    * The index of ``x.tfrecord`` is ``x.tfrecord.idx`` (text ``offset length``
      lines, the same as ``tfrecord2idx`` writes and DALI reads). Readers use it
      when present and otherwise scan the file's headers.
    * Both CRCs of every record are verified on read unless ``verify=False``.
    * Image shards store class ``c`` as ``c + 1`` (``FORMAT.label_base == 1``).
    * The registry's hooks (detection, inspect, verify, index, DALI) are in ``tools.py``.
"""

from ..hooks import DALIReader, IndexHook
from ..registry import FormatSpec
from . import tools
from .compression import detect as detect_compression
from .example_encode import encode_example
from .example_parse import is_sequence_example, parse_example, parse_sequence_example
from .features import IMAGE_KEY, LABEL_BASE, LABEL_KEY, TEXT_KEY
from .framing import frame, masked_crc
from .index import build_index, default_index_path, read_index
from .join import join_shard
from .reader import Reader
from .shards import (
    ShardReader,
    TFRecordOptions,
    TFRecordShard,
    class_names,
    encode_sample,
    image_format,
    open_shard,
    write_shard,
)
from .writer import Writer, decompress

FORMAT = FormatSpec(
    name="tfrecord",
    title="a TFRecord file",
    recognised_by="a first length whose masked CRC-32C follows it, or a .tfrecord name",
    suffixes=(".tfrecord", ".tfrecords", ".tfrec", ".tfrecord.gz", ".tfrecord.zlib"),
    data_name=None,
    write_shard=write_shard,
    open_shard=open_shard,
    options=TFRecordOptions,
    sniff=tools.sniff,
    claim=tools.claim,
    framing=(range(12),),  # length and its CRC (the data CRC's place depends on the length)
    label_vectors=True,
    dali=DALIReader(reader="tfrecord", index_paths=tools.dali_index_paths, features=(IMAGE_KEY, LABEL_KEY)),
    inspect=tools.inspect,
    verify=tools.verify,
    index=IndexHook(path=tools.index_path, build=tools.build),
    label_base=LABEL_BASE,
    class_names=class_names,
    join=join_shard,
)

__all__ = [
    "FORMAT",
    "IMAGE_KEY",
    "LABEL_BASE",
    "LABEL_KEY",
    "TEXT_KEY",
    "Reader",
    "ShardReader",
    "TFRecordOptions",
    "TFRecordShard",
    "Writer",
    "build_index",
    "decompress",
    "default_index_path",
    "detect_compression",
    "encode_example",
    "encode_sample",
    "frame",
    "image_format",
    "is_sequence_example",
    "masked_crc",
    "open_shard",
    "parse_example",
    "parse_sequence_example",
    "read_index",
    "write_shard",
]
