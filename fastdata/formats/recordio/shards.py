"""Image samples in RecordIO shards: the registry's ``write_shard``,
``open_shard``, options and ``finalize`` (the one DALI index over all shards)."""

from __future__ import annotations

import dataclasses
import numbers
import os
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..._lazy import lazy_numpy
from ...errors import FormatError
from .. import checksums as _sums
from .. import speedups as _speedups
from .._atomic import written
from ..hooks import ReaderOptions
from ..sample import Label, Sample, ShardInfo
from .index import default_index_path
from .irheader import IR_FORMAT, IR_SIZE, IRHeader, pack_header, unpack
from .reader import Reader
from .writer import Writer

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_numpy(globals())  # imported on first use: see fastdata/_lazy.py

DALI_INDEX = "dali.idx"
DALI_INDEX_KEY = "dali_index"  # the manifest.extra entry naming it

_unpack_ir = IR_FORMAT.unpack_from
_crc = _sums.record_crc


def _header(sample: Sample) -> IRHeader:
    label = sample.label
    if isinstance(label, numbers.Real):
        return IRHeader(0, float(label), sample.id, 0)
    labels = np.asarray(label, dtype=np.float32).ravel()
    return IRHeader(labels.size, labels, sample.id, 0)


_pack_ir = IR_FORMAT.pack


def _head(sample: Sample) -> bytes:
    """The bytes before ``sample.image`` in its record: IRHeader and labels."""
    if type(sample.label) is int:  # a class index, the common case: packed directly (~1 us less)
        try:
            return _pack_ir(0, sample.label, sample.id, 0)
        except struct.error:
            pass  # pack_header raises the error that names the field
    return pack_header(_header(sample))


def write_shard(path: str | os.PathLike[str], samples: Iterable[Sample]) -> ShardInfo:
    """Write ``samples`` as one ``.rec`` plus ``.idx``, atomically.

    Each payload is ``pack(IRHeader(flag, label, sample.id, 0), sample.image)``
    (written as its two parts, without joining them)
    (flag 0 for a class index, the vector length for label vectors) and its
    ``.idx`` key is ``sample.id``, as im2rec does. The CRC32C of each
    payload goes to ``<shard>.rec.crc`` (:mod:`..checksums`), computed while
    writing like the CRC32C of each file. All files are written under
    ``.partial`` names and renamed once complete (the ``.rec`` last).

    Returns:
        ShardInfo with basenames, the record count, the ``.rec`` size and the digests.

    Raises:
        ValueError: duplicate sample ids, an empty label vector, or an image
            of 2**29 bytes or more. Nothing is left under the final names.
    """
    rec = Path(path)
    idx, crc = default_index_path(rec), _sums.sidecar_path(rec)
    with written(idx, crc, rec) as (tmp_idx, tmp_crc, tmp_rec):
        with Writer(tmp_rec, tmp_idx, checksums=True) as writer:
            for sample in samples:
                writer.write_parts(_head(sample), sample.image, key=sample.id)
        size = tmp_rec.stat().st_size
        digests = {
            rec.name: _sums.crc_digest(writer.file_crc),
            idx.name: _sums.file_digest(tmp_idx),  # ~20 bytes a record: read back
            crc.name: _sums.write(tmp_crc, writer.crcs, size),
        }
    return ShardInfo(file=rec.name, records=writer.count, bytes=size, index=idx.name, checksums=crc.name, digests=digests)


class ShardReader:
    """One RecordIO shard as ``(image_bytes, label)`` samples.

    Reads shards from :func:`write_shard` and foreign im2rec files alike.
    ``label`` is an ``int`` when the header has flag 0 and an integral label
    (a class index), else a float32 array: shape ``(1,)`` for a fractional
    scalar label, ``(flag,)`` for label vectors. Picklable (paths only);
    the file is opened lazily in each process.

    Args:
        rec: the ``.rec`` file.
        index: its ``.idx`` (see :class:`Reader` for the default).

    Raises:
        FormatError: from :meth:`sample`, for a damaged record or one too short
            for its IRHeader (names the file, offset and key).
    """

    def __init__(self, rec: str | os.PathLike[str], index: str | os.PathLike[str] | None = None) -> None:
        self.reader = Reader(rec, index)
        self._crcs: memoryview | None = None

    def use_checksums(self, crcs: memoryview | None) -> None:
        """Check every payload :meth:`sample` reads against ``crcs`` (one
        CRC32C per record, from the shard's checksum file); None stops it."""
        self._crcs = crcs

    def __getstate__(self) -> dict:
        return {"reader": self.reader, "_crcs": None}  # checksums are loaded again where needed

    @property
    def path(self) -> str:
        return self.reader.rec

    @property
    def records(self) -> Reader:
        """The raw record reader: the same object as ``reader``, the name every format's shard has."""
        return self.reader

    def __len__(self) -> int:
        return len(self.reader)

    def close(self) -> None:
        """Unmap the file (it reopens on next use)."""
        self.reader.close()

    def sample(self, i: int) -> tuple[bytes, Label]:
        """Image bytes and label of the ``i``-th record in file order."""
        payload = self.reader[i]
        if self._crcs is not None and _crc(payload) != self._crcs[i]:
            raise _sums.mismatch(self.reader.rec, i % len(self.reader), offset=self.reader.offset(i), key=self.reader.key(i))
        if len(payload) >= IR_SIZE:
            flag, label, _, _ = _unpack_ir(payload)
            if flag == 0:
                return payload[IR_SIZE:], int(label) if label.is_integer() else np.array([label], np.float32)
            start = IR_SIZE + 4 * flag
            if len(payload) >= start:
                return payload[start:], np.frombuffer(payload, "<f4", flag, IR_SIZE).astype(np.float32)
        self._too_short(i, payload)

    def header(self, i: int) -> IRHeader:
        """The full :class:`IRHeader` of the ``i``-th record (ids included)."""
        payload = self.reader[i]
        try:
            return unpack(payload)[0]
        except FormatError:
            self._too_short(i, payload)

    def _too_short(self, i: int, payload: bytes) -> NoReturn:
        flag = _unpack_ir(payload)[0] if len(payload) >= IR_SIZE else 0
        need = IR_SIZE + 4 * flag
        raise FormatError(
            f"record of {len(payload)} bytes is too short for its IRHeader and labels ({need} bytes)",
            path=self.reader.rec, offset=self.reader.offset(i), key=self.reader.key(i),
            hint="this is not an image RecordIO file (use fastdata.formats.recordio.Reader for raw records)",
        )

    def __repr__(self) -> str:
        return f"ShardReader({self.reader.rec!r}, {len(self)} records)"


ImageRecordReader = ShardReader  # its former name, kept importable


@dataclasses.dataclass(frozen=True)
class RecordIOOptions(ReaderOptions):
    """RecordIO datasets take no options beyond the common ones: the ``.idx``
    beside each ``.rec`` is used (see :class:`Reader`)."""


def open_shard(path: str | os.PathLike[str], *, index: str | os.PathLike[str] | None = None) -> ShardReader:
    """Open a ``.rec`` shard (fastdata's or im2rec's) as a SampleReader."""
    return ShardReader(path, index)


def write_dali_index(directory: str | os.PathLike[str], shards: list[ShardInfo], name: str = DALI_INDEX) -> Path:
    """Write one index over all shards for ``fn.readers.mxnet``.

    DALI takes a single ``index_path`` for all files in ``path``: it sorts the
    offsets and reads each as a position in the concatenation of the files in
    ``path`` order (verified against DALI 2.4 by the tests). So each shard's
    offsets are shifted by the total size of the shards before it. Keys are
    the records' own keys (DALI ignores them).

    Raises:
        FormatError: a shard with no records (DALI would then read the next
            shard's records from the wrong file) or whose size disagrees
            with the manifest.
    """
    directory = Path(directory)
    parts: list[bytes] = []
    base = 0
    for shard in shards:
        rec = directory / shard.file
        size = rec.stat().st_size
        if size != shard.bytes:
            raise FormatError(f"file is {size} bytes, the manifest says {shard.bytes}", path=rec)
        shifted = _shifted_lines(directory / shard.index, base, size) if shard.index else None
        if shifted is None:  # no .idx, or not one line per record in file order as write_shard writes it
            reader = Reader(rec, directory / shard.index if shard.index else None)
            keys, offsets = reader.keys().tolist(), (reader.offsets() + base).tolist()
            shifted = "".join(f"{k}\t{o}\n" for k, o in zip(keys, offsets)).encode("ascii")
            reader.close()
        if not shifted:
            raise FormatError(
                "empty shard: DALI's mxnet reader maps offsets to files assuming every file holds a record",
                path=rec, hint="drop empty shards from the dataset",
            )
        parts.append(shifted)
        base += size
    target = directory / name
    with written(target) as (tmp,):
        tmp.write_bytes(b"".join(parts))
    return target


def _shifted_lines(index: Path, base: int, size: int) -> bytes | None:
    """The lines of an ``.idx`` that :func:`write_shard` wrote, offsets moved by
    ``base``, read as text (a conversion's last step needs no numpy); None when
    the file is anything else (the reader then parses and orders it). The
    converter's main process runs this once per image of the dataset, so the
    compiled twin (``_speedups.shift_index``) does it where it is built."""
    try:
        data = index.read_bytes()
    except OSError:
        return None
    native = _speedups.native
    if native is not None:
        answer = native.shift_index(data, base, size)
        if answer is not NotImplemented:
            return answer
    if data and not data.endswith(b"\n"):
        return None
    out, last = [], -1
    for line in data.split(b"\n")[:-1]:
        key, tab, offset = line.partition(b"\t")
        if not (tab and key.isdigit() and offset.isdigit()):
            return None
        position = int(offset)
        if position <= last or position & 3 or position >= size:
            return None
        last = position
        out.append(f"{int(key)}\t{position + base}\n")
    return "".join(out).encode("ascii")


def finalize(directory: str | os.PathLike[str], manifest: Any) -> dict[str, Any]:
    """Registry hook: write ``dali.idx`` for a non-empty dataset; returns ``{"dali_index": "dali.idx"}``."""
    if not manifest.num_samples:
        return {}
    write_dali_index(directory, manifest.shards, DALI_INDEX)
    return {DALI_INDEX_KEY: DALI_INDEX}
