"""Write a ``.rec`` and its ``.idx`` the way dmlc-core's ``RecordIOWriter`` does."""

from __future__ import annotations

import operator
import os
from pathlib import Path

from ...errors import ConfigError
from .. import speedups as _speedups
from ..crc import crc32c
from . import framing
from . import index as _index


class Writer:
    """Append records to a new ``.rec`` and write its ``.idx``.

    Byte-compatible with MXNet's ``MXIndexedRecordIO`` in write mode: payloads
    that hold the magic word at a 4-byte-aligned offset are split into
    continuation parts there (the 4 bytes are dropped; readers restore them).
    Files are created (truncated) at construction; use it as a context
    manager or call :meth:`close`.

    Args:
        rec: the ``.rec`` to create.
        index: the ``.idx`` to create; default ``rec`` with the ``.idx`` suffix.
        checksums: also compute, while writing, the CRC32C of each payload
            (``crcs``) and of the whole ``.rec`` (``file_crc``).
    """

    def __init__(
        self, rec: str | os.PathLike[str], index: str | os.PathLike[str] | None = None, *, checksums: bool = False
    ) -> None:
        self.rec = os.fspath(rec)
        self.index = os.fspath(_index.default_index_path(rec) if index is None else index)
        if Path(self.rec).resolve() == Path(self.index).resolve():
            raise ValueError(f"the .rec and the .idx must be different files, got {self.rec} for both")
        self._rec = open(self.rec, "wb", buffering=1 << 20)  # noqa: SIM115 -- closed by close()/__exit__
        self._idx = open(self.index, "w", encoding="ascii", newline="\n", buffering=1 << 16)  # noqa: SIM115 -- as above
        self._pos = 0
        self._keys: set[int] = set()
        self._checksums = checksums
        self.crcs: list[int] = []
        self.file_crc = 0

    @property
    def count(self) -> int:
        """Records written so far."""
        return len(self._keys)

    def write(self, payload: bytes | bytearray | memoryview, key: int | None = None) -> int:
        """Append one record.

        Args:
            payload: the record's bytes (any length below 2**29, including 0).
            key: its ``.idx`` key; default the number of records written before it.

        Returns:
            The record's byte offset.

        Raises:
            ValueError: the payload is 2**29 bytes or more, the key is already
                used, or the writer is closed.
            TypeError: ``key`` is not an integer.
        """
        return self.write_parts(b"", payload, key)

    def write_parts(self, head: bytes, body: bytes | bytearray | memoryview, key: int | None = None) -> int:
        """Append one record whose payload is ``head + body``, without joining them.

        The bytes written are exactly those of ``write(head + body, key)``;
        this saves copying a large ``body`` (an image) behind a small
        ``head`` (its IRHeader, see :func:`.irheader.pack_header`).

        Args:
            head: the payload's first bytes; a multiple of 4 long (an IRHeader
                with its labels always is).
            body: the rest.
            key: as in :meth:`write`.

        Returns:
            The record's byte offset.

        Raises:
            ValueError: as :meth:`write`, or ``head`` is not a multiple of 4 long.
        """
        if self._rec.closed:
            raise ValueError(f"{self.rec}: writer is closed")
        if not isinstance(body, (bytes, bytearray)):
            body = bytes(body)
        key = len(self._keys) if key is None else operator.index(key)
        if key in self._keys:
            raise ConfigError(f"{self.rec}: key {key} is already used; .idx keys must be unique")
        chunks, whole = framing.frame_parts(head, body)
        offset = self._pos
        write = self._rec.write
        for chunk in chunks:
            self._pos += write(chunk)
        if self._checksums:
            self._account(head, body, chunks, whole)
        self._keys.add(key)
        self._idx.write(f"{key}\t{offset}\n")
        return offset

    def _account(self, head: bytes, body: bytes | bytearray, chunks: list, whole: bool) -> None:
        """Add the record to ``crcs`` and ``file_crc``.

        Compiled, the body's CRC is computed once and combined into both (the
        part header, the IRHeader and the padding are a few bytes); the
        portable path runs the CRC over the body twice, which is faster than
        combining in Python.
        """
        native = _speedups.native
        if native is not None and whole:
            combine = native.crc32c_combine
            body_crc, size = crc32c(body), len(body)
            self.crcs.append(combine(crc32c(head), body_crc, size) if head else body_crc)
            crc = combine(crc32c(chunks[0], self.file_crc), body_crc, size)
            self.file_crc = crc32c(chunks[2], crc) if chunks[2] else crc
            return
        self.crcs.append(crc32c(body, crc32c(head)) if head else crc32c(body))
        crc = self.file_crc
        for chunk in chunks:
            crc = crc32c(chunk, crc)
        self.file_crc = crc

    def close(self) -> None:
        """Flush and close both files (idempotent)."""
        for f in (self._rec, self._idx):
            if not f.closed:
                f.close()

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
