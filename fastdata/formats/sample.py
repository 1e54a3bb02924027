"""What a shard holds, independent of the format: an encoded image and its label."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias

if TYPE_CHECKING:  # numpy is not imported at run time here: a label vector is one, a class index is not
    import numpy as np

Label: TypeAlias = "int | float | Sequence[float] | np.ndarray"


@dataclasses.dataclass(frozen=True)
class Sample:
    """One image sample as a writer stores it.

    Attributes:
        image: the encoded image file's bytes (JPEG, PNG, ...), stored as is.
        label: class index (int, 0-based) or a label vector (floats).
        id: the sample's global id (position in the dataset); RecordIO stores
            it as ``IRHeader.id`` and the ``.idx`` key, LMDB derives its key from it.
        filename: path relative to the source root, or "".
        height, width: image size in pixels, 0 when unknown.
        class_text: the class name, or "".
    """

    image: bytes
    label: Label
    id: int = 0
    filename: str = ""
    height: int = 0
    width: int = 0
    class_text: str = ""


@dataclasses.dataclass(frozen=True)
class ShardInfo:
    """What the manifest records of one finished shard.

    ``file`` is relative to the dataset directory; ``index`` is the shard's
    index file (``.idx``) or None; ``bytes`` is the shard's data size;
    ``checksums`` its per-record checksum file (:mod:`fastdata.formats.checksums`)
    or None. ``digests`` maps each of the shard's files (the data file,
    ``data.mdb`` for LMDB, the index, the checksums) to its digest,
    ``"crc32c:..."``, computed while writing. ``sha256`` is the hex digest of
    the data file that older manifests (version 1) recorded instead (None now).
    """

    file: str
    records: int
    bytes: int
    sha256: str | None = None
    index: str | None = None
    checksums: str | None = None
    digests: dict[str, str] = dataclasses.field(default_factory=dict)

    def data_digest(self, data_name: str | None) -> str | None:
        """The digest of the data file (``file``, or ``file/data_name``), or None when none is recorded."""
        found = self.digests.get(f"{self.file}/{data_name}" if data_name else self.file)
        return found or (f"sha256:{self.sha256}" if self.sha256 else None)


class SampleReader(Protocol):
    """Uniform view of one shard as ``(image_bytes, label)`` pairs. Torch-free,
    picklable (paths and settings only), opened lazily per process."""

    def __len__(self) -> int: ...

    def sample(self, i: int) -> tuple[bytes, Label]: ...
