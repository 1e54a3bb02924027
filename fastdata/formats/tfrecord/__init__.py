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
"""

from ..registry import FormatSpec
from .compression import detect as detect_compression
from .example_encode import encode_example
from .example_parse import is_sequence_example, parse_example, parse_sequence_example
from .framing import frame, masked_crc
from .index import build_index, default_index_path, read_index
from .reader import Reader
from .shards import (
    IMAGE_KEY,
    LABEL_BASE,
    LABEL_KEY,
    TFRecordShard,
    encode_sample,
    image_format,
    open_shard,
    write_shard,
)
from .writer import Writer, decompress

FORMAT = FormatSpec(
    name="tfrecord",
    suffix=".tfrecord",
    write_shard=write_shard,
    open_shard=open_shard,
    label_base=LABEL_BASE,
)

__all__ = [
    "FORMAT",
    "IMAGE_KEY",
    "LABEL_BASE",
    "LABEL_KEY",
    "Reader",
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
