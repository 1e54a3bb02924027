"""Image samples in LMDB shards: one shard = one LMDB directory of Caffe datums.

Key of a sample: ``b"%09d" % sample.id`` (nine digits, zero-padded), so keys
sort in sample order and position -> key is arithmetic. Value: a
``caffe.Datum`` with ``encoded=True``, ``data`` = the image file's bytes,
``label`` = the int class, ``height``/``width`` when known. Nothing else is in
the database (DALI's ``readers.caffe`` parses every entry as a Datum): the
dataset's metadata lives in ``manifest.json`` beside the shards.
"""

from __future__ import annotations

import dataclasses
import operator
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...errors import ConfigError, FormatError
from .. import checksums as _sums
from .._atomic import written
from ..hooks import ReaderOptions
from ..images import image_kind
from ..sample import Sample, ShardInfo
from . import _env
from .datum import datum_to_image, decode_datum, encode_datum
from .fastpath import image_and_label
from .reader import Reader
from .writer import Writer

KEY_DIGITS = 9
NO_LABEL = -1  # the label of a value that is a bare image file (no Datum, so no label)

# Image files stored as bare values (BasicSR and similar). None of them can
# start a caffe.Datum: a Datum's first byte is the tag of field 1-7.
_BARE_IMAGES = frozenset(("JPEG", "PNG", "GIF", "BMP", "WEBP"))


def shard_key(sample_id: int) -> bytes:
    """The key of sample ``sample_id``: nine zero-padded decimal digits.

    Raises:
        ConfigError: ``sample_id`` is negative or has more than nine digits.
    """
    if not 0 <= sample_id < 10**KEY_DIGITS:
        raise ConfigError(f"LMDB shard keys hold sample ids 0 to {10**KEY_DIGITS - 1}, got {sample_id}")
    return b"%09d" % sample_id


def write_shard(path: str | os.PathLike[str], samples: Iterable[Sample], *, map_size: int | None = None) -> ShardInfo:
    """Write ``samples`` as one LMDB shard directory, atomically.

    The database is built under ``<path>.partial`` and renamed to ``path``
    when complete; ``lock.mdb`` is removed first (readers open with
    ``lock=False``, DALI with ``MDB_NOLOCK``), so the shard is ``data.mdb``
    alone. The same samples give a byte-identical ``data.mdb``. The CRC32C
    of each entry's key and value goes to ``<path>.crc`` beside the directory
    (:mod:`..checksums`), computed while writing; ``data.mdb``'s own digest is
    read back (LMDB writes its pages itself).

    Args:
        path: the final shard directory, e.g. ``out/shard-00000.lmdb``.
        samples: with strictly increasing ``id`` (they become the sorted keys)
            and int labels (caffe.Datum holds one int32 label).
        map_size: initial LMDB map size (default 64 MiB; it doubles as needed).

    Returns:
        ShardInfo(file=directory name, records, bytes=size of data.mdb, index=None, the checksums' name, digests).

    Raises:
        ConfigError: ids not increasing or out of range, or a label that is not an int.
    """
    final = Path(path)
    sidecar = _sums.sidecar_path(final)
    crcs: list[int] = []
    last_id = -1
    with written(sidecar, final) as (sidecar_part, partial):
        with Writer(partial, map_size=map_size) as writer:
            for sample in samples:
                if sample.id <= last_id:
                    raise ConfigError(
                        f"{final}: sample ids must increase within a shard (they become its sorted keys); "
                        f"got {sample.id} after {last_id}"
                    )
                last_id = sample.id
                value = encode_datum(
                    sample.image, _int_label(sample), encoded=True, height=sample.height, width=sample.width
                )
                key = shard_key(sample.id)
                writer.write(key, value)
                crcs.append(_sums.record_crc(value, key))
        (partial / _env.LOCK_NAME).unlink(missing_ok=True)
        data = partial / _env.DATA_NAME
        size = data.stat().st_size
        digests = {
            f"{final.name}/{_env.DATA_NAME}": _sums.file_digest(data),
            sidecar.name: _sums.write(sidecar_part, crcs, size),
        }
    return ShardInfo(file=final.name, records=len(crcs), bytes=size, checksums=sidecar.name, digests=digests)


@dataclasses.dataclass(frozen=True)
class LMDBOptions(ReaderOptions):
    """LMDB datasets take no options beyond the common ones: every value's
    layout (Datum, raw Datum, bare image) is recognised by its first bytes."""


def open_shard(path: str | os.PathLike[str], *, verify: bool = True, **options: Any) -> ShardReader:
    """Open one LMDB (a fastdata shard, a Caffe or a BasicSR-style LMDB) as a sample reader.

    ``verify``: see :class:`Reader`. Any other option raises ConfigError.
    """
    if options:
        raise ConfigError(f"open_shard for lmdb takes only verify=, got {sorted(options)}")
    return ShardReader(path, verify=verify)


class ShardReader:
    """``(image_bytes, label)`` by position in key order, whatever the value layout.

    Each value is recognised by its first bytes:

    * a bare image file (JPEG, PNG, GIF, BMP; BasicSR's layout): returned as
      is, with label ``NO_LABEL`` (-1), since such an LMDB stores no labels;
    * a ``caffe.Datum`` with ``encoded=True``: its ``data`` and ``label``;
    * a raw ``caffe.Datum`` (BGR pixels, channel-major): converted to RGB and
      returned as a binary PPM (``P6``) file, so that the image decoders get
      file bytes as for every other format. PPM is lossless, Pillow and OpenCV
      read it natively, and writing it costs one copy of the pixels (PNG would
      cost a compression). :func:`datum_to_image` gives the array directly.

    A Datum without the ``encoded`` field, without a shape and with image file
    bytes in ``data`` is treated as encoded (as DALI does). A pickled value is
    refused with FormatError: it is never unpickled.

    Raises (from :meth:`sample`):
        FormatError: a value that is neither an image file nor a valid Datum,
            or a raw Datum whose size disagrees with its shape; names file and key.
        IndexError: ``i`` out of range.
    """

    def __init__(self, path: str | os.PathLike[str], *, verify: bool = True) -> None:
        self.reader = Reader(path, verify=verify)
        self._crcs: memoryview | None = None

    def use_checksums(self, crcs: memoryview | None) -> None:
        """Check every entry :meth:`sample` reads against ``crcs`` (one CRC32C
        of key and value per entry, from the shard's checksum file); None stops it."""
        self._crcs = crcs

    def __getstate__(self) -> dict:
        return {"reader": self.reader, "_crcs": None}  # checksums are loaded again where needed

    @property
    def path(self) -> Path:
        return self.reader.path

    def __len__(self) -> int:
        return len(self.reader)

    def key(self, i: int) -> bytes:
        return self.reader.key(i)

    def sample(self, i: int) -> tuple[bytes, int]:
        """The image file bytes and int label of the entry at position ``i``."""
        reader = self.reader
        key = reader.key(i)
        if self._crcs is None:
            return reader.read(key, self._parse, key)
        return reader.read(key, self._parse_checked, key, i)

    def close(self) -> None:
        self.reader.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({os.fspath(self.path)!r})"

    def _parse_checked(self, value: memoryview, key: bytes, i: int) -> tuple[bytes, int]:
        if _sums.record_crc(value, key) != self._crcs[i]:  # type: ignore[index]  # called only once _crcs is read
            raise _sums.mismatch(self.reader.data_file, i % len(self), key=key)
        return self._parse(value, key)

    def _parse(self, value: memoryview, key: bytes) -> tuple[bytes, int]:
        found = image_and_label(value)  # fastdata's own layout, without building a Datum
        if found is not None:
            return found
        return self._parse_general(value, key)

    def _parse_general(self, value: memoryview, key: bytes) -> tuple[bytes, int]:
        """Any value layout (see the class docstring); the reference the fast path must agree with."""
        if _is_image(value):
            return bytes(value), NO_LABEL
        if value[:1] == b"\x80" and 2 <= value[1] <= 5:  # pickle protocol 2-5 header, never a Datum's first tag
            raise FormatError(
                "the value is a Python pickle (tensorpack / Efficient-PyTorch style LMDB); fastdata never "
                "unpickles data files, because loading a pickle runs arbitrary code",
                path=self.reader.data_file,
                key=key,
                hint="convert the source images with `fastdata convert`, or read trusted values yourself with Reader",
            )
        datum = decode_datum(value, path=self.reader.data_file, key=key)
        if datum.encoded or (datum.channels == datum.height == datum.width == 0 and _is_image(datum.data)):
            return datum.data, datum.label
        rgb = datum_to_image(datum, path=self.reader.data_file, key=key)
        h, w = rgb.shape[:2]
        return b"P6\n%d %d\n255\n" % (w, h) + rgb.tobytes(), datum.label


def _is_image(value: bytes | memoryview) -> bool:
    return image_kind(value) in _BARE_IMAGES


def _int_label(sample: Sample) -> int:
    try:
        return operator.index(sample.label)  # type: ignore[arg-type]  # a label vector raises TypeError, below
    except TypeError:
        raise ConfigError(
            f"sample {sample.id} ({sample.filename or 'no filename'}): caffe.Datum stores one int label, "
            f"got {sample.label!r}; use the recordio or tfrecord format for float or multi-value labels"
        ) from None
