"""Image-classification shards in TensorFlow's ImageNet layout (``tf.train.Example`` keys
``image/encoded``, ``image/class/label``, ...: :mod:`.features`), readable by TensorFlow,
DALI and the ``tfrecord`` package.

Labels follow TensorFlow's ImageNet convention: a class index ``c`` is stored as
``c + 1`` (0 is "background"/unused), so :data:`LABEL_BASE` is 1 and readers
subtract it. A label *vector* is stored as a float_list as given, never shifted.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError, FormatError
from .. import checksums as _sums
from .._atomic import written
from ..hooks import ReaderOptions
from ..images import image_kind
from ..manifest import Manifest
from ..sample import Label, Sample, ShardInfo
from .example_encode import encode_example
from .example_find import feature_value, find_features
from .example_parse import (
    BYTES,
    FLOAT,
    INT64,
    int64_list,
    parse_example,
)
from .fastpath import image_and_label
from .features import FILENAME_KEY, FORMAT_KEY, HEIGHT_KEY, IMAGE_KEY, LABEL_BASE, LABEL_KEY, TEXT_KEY, WIDTH_KEY
from .index import default_index_path
from .reader import Reader
from .writer import Writer

_FORMAT_NAMES = ("JPEG", "PNG", "GIF", "BMP", "TIFF", "WEBP")  # what image/format may say


def image_format(image: bytes) -> bytes:
    """``b"JPEG"``, ``b"PNG"``, ``b"GIF"``, ``b"BMP"``, ``b"TIFF"``, ``b"WEBP"`` from the magic bytes, else ``b""``."""
    kind = image_kind(image)
    return kind.encode() if kind in _FORMAT_NAMES else b""


def encode_sample(sample: Sample) -> bytes:
    """One :class:`Sample` as a serialized ``tf.train.Example`` (ImageNet keys).

    An int label ``c`` is stored as int64 ``c + 1``; a label vector (list,
    tuple or array) as a float_list, unshifted. Height/width 0 mean unknown.
    """
    label = sample.label
    if isinstance(label, (bool, np.bool_)) or not isinstance(label, (int, np.integer, float, np.floating, list, tuple, np.ndarray)):
        raise ConfigError(f"sample {sample.id}: label must be an int class index or a vector of floats, got {label!r}")
    if isinstance(label, (int, np.integer)):
        stored: object = [int(label) + LABEL_BASE]
        kind = "int64"
    else:
        stored = np.asarray(label, dtype=np.float32).ravel()
        kind = "float"
    return encode_example(
        {
            IMAGE_KEY: bytes(sample.image),
            FORMAT_KEY: image_format(sample.image),
            LABEL_KEY: stored,
            TEXT_KEY: sample.class_text,
            FILENAME_KEY: sample.filename,
            HEIGHT_KEY: int(sample.height),
            WIDTH_KEY: int(sample.width),
        },
        kinds={LABEL_KEY: kind},
    )


def write_shard(path: str | os.PathLike[str], samples: Iterable[Sample]) -> ShardInfo:
    """Write ``samples`` as one TFRecord shard plus its index ``<shard>.idx``.

    Both files are written under ``.partial`` names and renamed when complete
    (index first), so a shard with its final name always has its index. On
    any error the partial files are removed. Returns the :class:`ShardInfo`
    (``file`` and ``index`` are basenames; ``bytes`` and ``digests`` describe the files).
    No checksum sidecar: every TFRecord record carries the CRC32C of its
    bytes, checked on every read.
    """
    path = Path(path)
    index = Path(default_index_path(path))
    with written(index, path) as (index_part, part):
        with Writer(part, index=index_part) as writer:
            for sample in samples:
                writer.write(encode_sample(sample))
        digests = {path.name: _sums.crc_digest(writer.file_crc), index.name: _sums.file_digest(index_part)}
    return ShardInfo(file=path.name, records=len(writer), bytes=writer.bytes_written, index=index.name, digests=digests)


class ShardReader:
    """A TFRecord file seen as ``(image_bytes, label)`` samples (a :class:`SampleReader`).

    See :func:`open_shard` for the arguments. ``sample(i)`` needs an
    uncompressed file; iteration works on compressed files too.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        image_key: str = IMAGE_KEY,
        label_key: str = LABEL_KEY,
        label_base: int | None = None,
        index: str | os.PathLike[str] | None = None,
        compression: str | None = None,
        verify: bool = True,
    ) -> None:
        self.reader = Reader(path, index=index, compression=compression, verify=verify)
        self.image_key = image_key
        self.label_key = label_key
        self.label_base = (LABEL_BASE if label_key == LABEL_KEY else 0) if label_base is None else int(label_base)
        self._keys = (image_key.encode(), label_key.encode())
        # fastdata's own layout can be read without the general parser (see fastpath.py)
        self._fast = image_key == IMAGE_KEY and label_key == LABEL_KEY

    @property
    def path(self) -> str:
        return self.reader.path

    def __len__(self) -> int:
        return len(self.reader)

    def close(self) -> None:
        """Unmap the file (it reopens on next use)."""
        self.reader.close()

    def sample(self, i: int) -> tuple[bytes, Label]:
        """Record ``i`` as ``(image_bytes, label)`` with a 0-based label (see :func:`open_shard`)."""
        record = self.reader[i]
        if self._fast:
            found = image_and_label(record)
            if found is not None and found[1] >= self.label_base:
                return found[0], found[1] - self.label_base
        return self._decode(record, i)

    def __iter__(self) -> Iterator[tuple[bytes, Label]]:
        for i, record in enumerate(self.reader):
            yield self._decode(record, i)

    def _decode(self, record: bytes, i: int) -> tuple[bytes, Label]:
        image_key, label_key = self._keys
        try:
            found = find_features(record, self._keys)
        except FormatError as exc:
            raise self._error(i, f"record {i}: {exc.reason}", None) from None
        image = found.get(image_key)
        if image is None or image[0] != BYTES or len(image[1]) != 1:
            raise self._error(i, f"record {i}: {self.image_key!r} should hold one bytes value", record, self.image_key)
        label = found.get(label_key)
        if label is None:
            raise self._error(i, f"record {i}: no label feature {self.label_key!r}", record, self.label_key)
        kind, chunks = label
        if kind == FLOAT:
            return image[1][0], feature_value(kind, chunks)
        if kind != INT64:
            raise self._error(i, f"record {i}: label {self.label_key!r} should be int64 or float, not {kind}", None, self.label_key)
        try:
            values = int64_list(chunks)
        except FormatError as exc:
            raise self._error(i, f"record {i}: {exc.reason}", None, self.label_key) from None
        base = self.label_base
        if len(values) > 1:  # a label vector (multi-label ids, a bbox...): the class base does not apply
            return image[1][0], np.array(values, np.int64)
        if not values or values[0] < base:
            raise self._error(
                i, f"record {i}: stored label {values} is empty or below label_base={base}", None, self.label_key,
                hint="if this file stores 0-based labels, open it with label_base=0",
            )
        return image[1][0], values[0] - base

    def _error(self, i: int, message: str, record: bytes | None, key: str | None = None, hint: str | None = None) -> FormatError:
        offset = None if self.reader.compressed else int(self.reader.offsets[i])
        if record is not None and hint is None:
            try:
                present = sorted(parse_example(record))
                hint = f"the record has {present}; choose image_key/label_key accordingly"
            except FormatError as exc:
                hint = exc.reason
        return FormatError(message, path=self.path, offset=offset, key=key, hint=hint)

    def __repr__(self) -> str:
        return f"ShardReader({self.path!r}, image_key={self.image_key!r}, label_key={self.label_key!r}, label_base={self.label_base})"


def open_shard(
    path: str | os.PathLike[str],
    *,
    image_key: str = IMAGE_KEY,
    label_key: str = LABEL_KEY,
    label_base: int | None = None,
    index: str | os.PathLike[str] | None = None,
    **opts,
) -> ShardReader:
    """Open a TFRecord file of image Examples as a :class:`SampleReader`.

    Args:
        path: the TFRecord file (fastdata's or any ImageNet-style file).
        image_key: the bytes feature holding the encoded image.
        label_key: the int64 (class) or float (vector) label feature.
        label_base: what the file stores for class 0; it is subtracted from
            int64 labels so ``sample`` returns 0-based labels. ``None``
            (default) means 1 when ``label_key`` is ``"image/class/label"``
            (TensorFlow's ImageNet scripts and fastdata's writer store
            ``class + 1`` there) and 0 for any other key. Float labels are
            returned unchanged.
        index: index file; default ``path + ".idx"`` if present, else a scan.
        **opts: ``compression`` and ``verify``, passed to :class:`Reader`.

    ``sample(i)`` returns ``(image_bytes, label)``: label is an ``int`` for a
    single int64 value, an ``np.int64`` array for several, an ``np.float32``
    array for a float list. Several int64 values are a label vector and are
    not shifted; a single stored label below ``label_base`` raises
    FormatError (the hint says to pass ``label_base=0``).
    """
    return ShardReader(path, image_key=image_key, label_key=label_key, label_base=label_base, index=index, **opts)


TFRecordShard = ShardReader  # its former name, kept importable


@dataclasses.dataclass(frozen=True)
class TFRecordOptions(ReaderOptions):
    """The keywords TFRecord datasets take.

    Attributes:
        image_key: the feature holding the encoded image.
        label_key: the int64 feature holding the class label.
        label_base: the stored label of class 0, subtracted so targets are
            0-based. Default: the manifest's for a converted directory; for
            other files 1 under ``"image/class/label"`` (TensorFlow's ImageNet
            scripts store 1..1000) and 0 under any other key. Pass 0 for files
            that store 0-based labels: a stored label below the base raises
            FormatError saying so.
    """

    image_key: str = IMAGE_KEY
    label_key: str = LABEL_KEY
    label_base: int | None = None

    def open_options(self, manifest: Manifest | None) -> dict[str, Any]:
        base = self.label_base
        if base is None and manifest is not None:
            base = manifest.label_base
        # None for foreign files: the reader applies TensorFlow's ImageNet rule
        return {"image_key": self.image_key, "label_key": self.label_key, "label_base": base}


def class_names(readers: Sequence[ShardReader]) -> list[str] | None:
    """Class names of foreign files from each record's ``image/class/text``
    (one pass over the files), or None when a class has no text or two texts."""
    names: dict[int, str] = {}
    for reader in readers:
        for i in range(len(reader)):
            try:
                example = parse_example(reader.reader[i])
            except FormatError:
                return None
            label, text = example.get(reader.label_key), example.get(TEXT_KEY)
            if label is None or text is None or len(label) != 1 or len(text) != 1:
                return None
            name = bytes(text[0]).decode("utf-8", "replace")
            if names.setdefault(int(label[0]) - reader.label_base, name) != name:
                return None
    if sorted(names) != list(range(len(names))):
        return None
    return [names[i] for i in range(len(names))]
