"""How a shard is opened for ``verify`` when it is not whole or has a
checksum file beside it: a reader of the records a truncated shard still
holds (:func:`open_surviving`), and a reader that checks each record against
the shard's checksum file (:func:`open_checked`, :func:`open_listed`).

Each opener is picklable (a ``functools.partial`` of these functions), so
that ``--decode`` workers open the shard as this process did.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastdata.errors import FastDataError
from fastdata.formats import checksums, registry
from fastdata.formats.hooks import CheckedRecords, Detected

from ..probe import close_reader
from .digests import read_listed


def shorter(data_file: Path, expected: int) -> bool:
    """Whether ``data_file`` exists and is shorter than the manifest's ``expected`` size (truncated)."""
    try:
        return data_file.stat().st_size < expected
    except OSError:
        return False


def open_surviving(opener, fmt: str, path: Path, data_file: Path):
    """``opener()``, or for a truncated shard that will not open so, a reader
    of the records it still holds."""
    reader = None
    try:
        reader = opener()
        len(reader)  # a truncated shard's index may be refused only when first used
        return reader
    except (FastDataError, OSError):
        if reader is not None:
            close_reader(reader)
        reader = _surviving(fmt, path, data_file)
        if reader is None:
            raise
        return reader


def open_checked(opener, sidecar: Path, data_file: Path, shard: Path, truncated: bool = False):
    """``opener()`` whose reader checks each record against the shard's
    checksum file. For a ``truncated`` shard, a checksum file made for the
    whole file checks the records that are left."""
    reader = opener()
    use = getattr(reader, "use_checksums", None)
    truncated = truncated or getattr(reader, "truncated", False)  # found so by the reader itself
    if callable(use):
        size = data_file.stat().st_size
        if truncated:
            use(sidecar_sums(sidecar.read_bytes(), sidecar, len(reader), size, shard, truncated))
        else:
            use(checksums.load(sidecar, records=len(reader), data_bytes=size, data_file=shard))
    return reader


def open_listed(opener, sidecar: Path, digest: str | None, data_file: Path, shard: Path, truncated: bool = False):
    """:func:`open_checked` for a worker reading a dataset's shard: a checksum
    file that is missing or differs from the manifest's ``digest`` is not used,
    as :func:`.shard.open_shard` decided in the main process."""
    reader = opener()
    use = getattr(reader, "use_checksums", None)
    data, problem = read_listed(sidecar.parent, sidecar.name, digest)
    if callable(use) and data is not None and not problem:
        size = data_file.stat().st_size
        use(sidecar_sums(data, sidecar, len(reader), size, shard, truncated))
    return reader


def sidecar_sums(data: bytes, sidecar: Path, records: int, size: int, shard: Path, truncated: bool) -> memoryview:
    """The CRCs of a checksum file read already; for a ``truncated`` shard, one
    made for the whole file (its digest matched the manifest's) still checks
    the records that are left."""
    if truncated:
        made_for = checksums.described(data)
        if made_for is not None and records <= made_for[0] and size < made_for[1]:
            records, size = made_for
    return checksums.parse(data, path=sidecar, records=records, data_bytes=size, data_file=shard)


def _surviving(fmt: str, path: Path, data_file: Path) -> CheckedRecords | None:
    """A reader of the records a truncated shard still holds, from its
    format's ``verify`` hook (which reads a file without its index), or None
    when the format cannot find them."""
    spec = registry.get(fmt)
    if spec.verify is None:
        return None
    try:
        check = spec.verify(Detected(fmt, path, data_file=data_file))
        if check.records is not None:
            reader = check.records()
            len(reader)
            return reader
        if check.stream is not None:
            return _Streamed(check.stream, check.image)
    except (FastDataError, OSError):
        pass
    return None


class _Streamed:
    """The records a format's ``stream`` yields (up to the first damaged one)
    as a reader of ``(image, None)`` samples: a truncated TFRecord shard."""

    def __init__(self, stream: Callable[[], Any], image: Callable[[bytes], bytes | None] | None) -> None:
        self.records: list[bytes] = []
        self.image = image
        try:
            for record in stream():
                self.records.append(record)
        except FastDataError:
            pass  # the records after a damaged one cannot be found

    def __len__(self) -> int:
        return len(self.records)

    def sample(self, j: int) -> tuple[bytes | None, None]:
        record = self.records[j]
        return (self.image(record) if self.image is not None else None), None
