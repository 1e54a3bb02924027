"""Write an LMDB in batches, growing its map as it fills."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lmdb as py_lmdb  # the PyPI package, not fastdata.formats.lmdb

from ...errors import ConfigError, FormatError
from .._atomic import is_durable
from . import _env

DEFAULT_MAP_SIZE = 64 << 20
# A batch is also committed once it holds this many value bytes, so that a
# batch of large images does not pile up in memory (LMDB keeps a write
# transaction's dirty pages in RAM, and the writer keeps the batch to replay it).
COMMIT_BYTES = 64 << 20


class Writer:
    """Add ``key -> value`` entries to an LMDB environment directory (created if needed).

    Args:
        path: the environment directory; ``data.mdb`` and ``lock.mdb`` go inside.
        map_size: initial map size in bytes (default 64 MiB). When LMDB reports
            ``MapFullError`` the writer aborts the open batch, doubles the map
            and replays the batch, as often as needed.
        commit_every: commit after this many entries (and after 64 MiB of values).

    Keys must be new: writing a key that exists raises ConfigError rather than
    silently replacing it. Keys written in increasing order are appended
    (``MDB_APPEND``: faster, and leaves full pages). Use as a context manager:
    a clean exit commits and closes; an exception drops the uncommitted batch
    (earlier batches stay committed) and closes. Not picklable; use one writer
    per database and do not read the database while it is being written.

    The file holds no timestamps or process ids: the same ``map_size`` and the
    same writes in the same order give a byte-identical ``data.mdb``.
    """

    def __init__(self, path: str | os.PathLike[str], *, map_size: int | None = None, commit_every: int = 1000) -> None:
        if map_size is not None and map_size <= 0:
            raise ConfigError(f"map_size must be a positive number of bytes, got {map_size}")
        if commit_every < 1:
            raise ConfigError(f"commit_every must be >= 1, got {commit_every}")
        self.path = Path(path)
        self.commit_every = commit_every
        self.written = 0
        self._map_size = map_size or DEFAULT_MAP_SIZE
        self._pending: list[tuple[bytes, bytes]] = []
        self._pending_bytes = 0
        self._txn: Any = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FormatError(f"cannot create the LMDB directory: {exc.strerror}", path=self.path) from exc
        try:
            # writemap stays off: with it the file is grown to map_size at once;
            # meminit stays on: unused page space is zeroed, not heap leftovers.
            # sync follows the commit setting (off while the converter writes shards).
            self._env: py_lmdb.Environment | None = py_lmdb.open(
                os.fspath(self.path),
                map_size=self._map_size,
                subdir=True,
                readonly=False,
                meminit=True,
                writemap=False,
                sync=is_durable(),
                **_env.WRITE_FORMAT_KWARGS,
            )
            with self._env.begin() as txn:
                cursor = txn.cursor()
                self._last_key: bytes | None = cursor.key() if cursor.last() else None
        except py_lmdb.Error as exc:
            raise _env.wrap(exc, self.path / _env.DATA_NAME, doing="opening for writing") from exc
        self._committed_last_key = self._last_key

    @property
    def map_size(self) -> int:
        """The current map size in bytes (it grows as the database fills)."""
        return self._map_size

    def write(self, key: bytes | str, value: bytes) -> None:
        """Add one entry (str keys are UTF-8 encoded); committed in batches.

        Raises:
            ConfigError: empty, too long (> the LMDB key limit, 511 bytes) or duplicate key.
            FormatError: an LMDB or disk error, naming the file and key.
        """
        if self._env is None:
            raise ConfigError(f"{self.path}: the writer is closed")
        key = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if not key or len(key) > self._env.max_key_size():
            raise ConfigError(f"LMDB keys must be 1 to {self._env.max_key_size()} bytes, got {len(key)} ({key[:40]!r})")
        value = bytes(value)
        if self._txn is None:
            self._txn = self._env.begin(write=True)
        self._pending.append((key, value))
        self._pending_bytes += len(value)
        try:
            while True:
                try:
                    stored = self._put(key, value)
                    break
                except py_lmdb.MapFullError:
                    self._grow_and_replay(upto=len(self._pending) - 1)
        except py_lmdb.Error as exc:
            raise _env.wrap(exc, self.path / _env.DATA_NAME, key=key, doing="writing") from exc
        if not stored:
            self._pending.pop()
            self._pending_bytes -= len(value)
            raise ConfigError(f"{self.path}: key {key!r} is already in the database; keys must be unique")
        if self._last_key is None or key > self._last_key:
            self._last_key = key
        self.written += 1
        if len(self._pending) >= self.commit_every or self._pending_bytes >= COMMIT_BYTES:
            self.commit()

    def commit(self) -> None:
        """Commit the open batch now (growing the map if the commit needs room)."""
        if self._txn is None:
            return
        try:
            while True:
                try:
                    self._txn.commit()
                    break
                except py_lmdb.MapFullError:
                    self._txn = None  # a failed commit has aborted the transaction
                    self._grow_and_replay(upto=len(self._pending))
        except py_lmdb.Error as exc:
            raise _env.wrap(exc, self.path / _env.DATA_NAME, doing="committing") from exc
        self._txn = None
        self._committed_last_key = self._last_key
        self._pending.clear()
        self._pending_bytes = 0

    def close(self) -> None:
        """Commit what is pending and close the environment (idempotent)."""
        if self._env is None:
            return
        try:
            self.commit()
        finally:
            self._env.close()
            self._env = None

    def abort(self) -> None:
        """Drop the uncommitted batch and close; committed batches stay."""
        if self._env is None:
            return
        if self._txn is not None:
            self._txn.abort()
            self._txn = None
        self._pending.clear()
        self._env.close()
        self._env = None

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def __reduce__(self) -> Any:
        raise TypeError("an LMDB Writer holds an open write transaction and cannot be pickled; create it in the process that writes")

    def _put(self, key: bytes, value: bytes) -> bool:
        append = self._last_key is None or key > self._last_key
        return self._txn.put(key, value, overwrite=False, append=append)

    def _grow_and_replay(self, *, upto: int) -> None:
        """Abort the batch, double the map, and write the first ``upto`` pending entries again."""
        assert self._env is not None  # for the type checker: only a write of an open writer gets here
        while True:
            if self._txn is not None:
                self._txn.abort()
                self._txn = None
            self._map_size *= 2
            self._env.set_mapsize(self._map_size)
            self._last_key = self._committed_last_key
            self._txn = self._env.begin(write=True)
            try:
                for key, value in self._pending[:upto]:
                    self._put(key, value)
                    self._last_key = key if self._last_key is None else max(key, self._last_key)
                return
            except py_lmdb.MapFullError:
                continue
