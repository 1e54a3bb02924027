"""Read any LMDB by key or by position, lazily opened in each process."""

from __future__ import annotations

import operator
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import lmdb as py_lmdb  # the PyPI package, not fastdata.formats.lmdb

from ...errors import FastDataError, FormatError
from . import _env
from .keys import KeyIndex

T = TypeVar("T")
_MISSING: Any = object()

# os.getpid() is a system call (glibc no longer caches it): too slow for a
# per-read check. Keep the pid in a cell that fork children refresh.
_PID = [os.getpid()]
os.register_at_fork(after_in_child=lambda: _PID.__setitem__(0, os.getpid()))


class MissingKeyError(FastDataError, KeyError):
    """A key that is not in the database. A ``KeyError`` too, so mapping-style code catches it."""

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else ""


class Reader:
    """Read-only view of one LMDB environment (any layout: Caffe datums, plain images...).

    ``len(r)`` entries; ``r[i]`` is the ``(key, value)`` pair at position ``i``
    in key order (negative ``i`` counts from the end); ``r.get(key)`` the value
    of one key; iterating walks every pair in key order with one cursor.

    Args:
        path: the environment directory (holding ``data.mdb``), ``.../data.mdb``
            itself, or a single-file (``subdir=False``) environment.
        verify: check the file's structure (py-lmdb's ``lmdb.verify``) before
            liblmdb maps it, once per file per process, so that a damaged file
            raises FormatError instead of crashing the process. Turn off only
            for files you trust; costs ~2-6 ms per 1,000 entries.

    The environment opens on first use in each process (a forked child drops
    the parent's handle and opens its own); readers of the same file in one
    process share a handle. Pickling keeps the path only. Opening settings
    and their reasons: see :func:`fastdata.formats.lmdb._env.acquire`.
    Reads are thread safe (each one runs its own read transaction). Read only
    finished databases: with ``lock=False`` a reader cannot see a concurrent writer.

    Raises:
        FormatError: the path is missing, is not an LMDB, is truncated or damaged
            (naming the file, the key and the fix); raised at construction for a
            missing path, otherwise on first use.
    """

    def __init__(self, path: str | os.PathLike[str], *, verify: bool = True) -> None:
        self.path = Path(path)
        self.verify = verify
        self._env_path, self._subdir = _env.resolve(self.path)
        self.data_file = _env.data_file(self._env_path, self._subdir)
        self._open_lock = threading.Lock()
        self._env: Any = None
        self._token: tuple[int, int] | None = None
        self._pid = -1
        self._keys: KeyIndex | None = None
        self._len: int | None = None
        self._file_size = 0

    # -- process-local handle --------------------------------------------------

    def _handle(self) -> Any:
        if self._pid == _PID[0] and self._env is not None:
            return self._env
        with self._open_lock:
            if self._env is None or self._pid != _PID[0]:
                self._env, self._token = _env.acquire(self._env_path, self._subdir, verify=self.verify)
                self._file_size = os.path.getsize(self.data_file)
                self._pid = _PID[0]
        return self._env

    def close(self) -> None:
        """Release this reader's handle (reopened on next use)."""
        with self._open_lock:
            if self._token is not None and self._pid == _PID[0]:
                _env.release(self._token)
            self._env, self._token, self._pid = None, None, -1

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # No lock here, not even our own: the garbage collector may run this
        # inside any allocation, e.g. one made while _env's lock is held.
        try:
            if self._token is not None and self._pid == _PID[0]:
                _env.release_later(self._token)
                self._token = None
        except Exception:  # noqa: BLE001 -- interpreter shutdown: modules may be gone already
            pass

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "verify": self.verify}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], verify=state["verify"])  # type: ignore[misc]  # unpickled: opened as new

    def __repr__(self) -> str:
        return f"{type(self).__name__}({os.fspath(self.path)!r}, verify={self.verify})"

    # -- access ----------------------------------------------------------------

    def __len__(self) -> int:
        if self._len is None:
            try:
                self._len = int(self._handle().stat()["entries"])
            except py_lmdb.Error as exc:
                raise _env.wrap(exc, self.data_file) from exc
        return self._len

    def key(self, i: int) -> bytes:
        """The key at position ``i`` in key order (negative counts from the end).

        Raises:
            IndexError: ``i`` out of range.
        """
        index = self._key_index()
        n = len(index)
        j = operator.index(i)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError(f"position {i} out of range for {n} entries in {self.data_file}")
        return index.key(j)

    def __getitem__(self, i: int) -> tuple[bytes, bytes]:
        key = self.key(i)
        return key, self.read(key, bytes)

    def get(self, key: bytes | str, default: Any = _MISSING) -> Any:
        """The value stored under ``key`` (str keys are UTF-8 encoded).

        Unlike ``dict.get`` this raises for a missing key unless ``default`` is given.

        Raises:
            MissingKeyError: no such key and no default (names key and file).
        """
        try:
            return self.read(_as_key(key), bytes)
        except MissingKeyError:
            if default is _MISSING:
                raise
            return default

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (bytes, str)):
            return False
        return self.get(key, None) is not None

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(key, value)`` in key order, from one read transaction."""
        env = self._handle()
        key = None
        try:
            with env.begin() as txn:
                for key, value in txn.cursor():
                    yield key, value
        except py_lmdb.Error as exc:
            raise _env.wrap(exc, self.data_file, key=key) from exc

    def read(self, key: bytes, parse: Callable[..., T], *args: Any) -> T:
        """Run ``parse(view, *args)`` on the value of ``key`` while it is still a zero-copy view of the map.

        ``parse`` must copy what it keeps: the view dies with the transaction.

        Raises:
            MissingKeyError: no such key.
            FormatError: LMDB reports damage, or the value claims more bytes than the file holds.
        """
        env = self._handle()
        try:
            with env.begin(buffers=True) as txn:
                view = txn.get(key)
                if view is None:
                    raise MissingKeyError(f"{self.data_file}: no key {key!r} in this LMDB")
                # A damaged node can claim an overflow value longer than the
                # file; touching it would fault, so check before reading.
                if len(view) > self._file_size:
                    raise FormatError(
                        f"the value claims {len(view)} bytes, more than the file's {self._file_size}",
                        path=self.data_file,
                        key=key,
                        hint=_env._REBUILD_HINT,
                    )
                return parse(view, *args)
        except py_lmdb.Error as exc:
            raise _env.wrap(exc, self.data_file, key=key) from exc

    def _key_index(self) -> KeyIndex:
        if self._keys is None:
            env = self._handle()
            try:
                with env.begin() as txn:
                    self._keys = KeyIndex.scan(txn)
            except py_lmdb.Error as exc:
                raise _env.wrap(exc, self.data_file, doing="listing the keys") from exc
            self._len = len(self._keys)
        return self._keys


def _as_key(key: bytes | str) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError(f"LMDB keys are bytes or str, got {type(key).__name__}")
