"""Opening LMDB environments: path resolution, error wrapping, one handle per file per process.

This package is ``fastdata.formats.lmdb``; the ``import lmdb`` below is an
absolute import and always means the PyPI binding (py-lmdb), never this package.

py-lmdb (3.x) refuses to open the same environment twice in one process, and
an environment inherited across ``fork()`` must not be used by the child. So
every read-only handle comes from :func:`acquire`, which shares one
``Environment`` per data file among all readers of a process and drops the
parent's handles the first time a forked child asks for one.

Finalisers never take the table's lock: a garbage-collection pass can run
one at any allocation, including one made by code that holds the lock (an
``acquire`` opening a file), and the thread would then wait on itself. A
finalised reader only appends its token to a lock-free queue
(:func:`release_later`); the next :func:`acquire` or :func:`release` (or
:func:`drain`) closes it under the lock.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lmdb as py_lmdb  # the PyPI package, not fastdata.formats.lmdb

from ...errors import FormatError

_structural_verify: Callable[..., Any] | None
try:  # py-lmdb >= 3: a pure-Python structural check that never hands the file to liblmdb
    from lmdb.verify import verify as _structural_verify
except ImportError:  # older py-lmdb: damaged files are caught only as far as liblmdb checks
    _structural_verify = None

DATA_NAME = "data.mdb"
LOCK_NAME = "lock.mdb"

_REBUILD_HINT = "the database is damaged or not an LMDB file; re-create it (fastdata convert) or copy it again"

# LMDB's on-disk format changed between 0.9 and 1.0; DALI and Caffe bundle 0.9,
# so new databases must be written in that format. py-lmdb >= 3 can write both.
WRITE_FORMAT_KWARGS: dict[str, Any] = {"lib_version": 0} if int(py_lmdb.__version__.split(".")[0]) >= 3 else {}


def resolve(path: str | os.PathLike[str]) -> tuple[Path, bool]:
    """Return ``(env_path, subdir)`` for a directory holding ``data.mdb`` or a data file.

    ``.../data.mdb`` is opened through its directory. Raises FormatError naming
    the path when there is nothing there or the directory holds no ``data.mdb``.
    """
    p = Path(path)
    if p.is_dir():
        if not (p / DATA_NAME).is_file():
            raise FormatError(
                f"not an LMDB environment: the directory has no {DATA_NAME}",
                path=p,
                hint="pass the directory that holds data.mdb, or the data file itself",
            )
        return p, True
    if p.is_file():
        if p.name == DATA_NAME:
            return p.parent, True
        return p, False  # a single-file environment (subdir=False); its lock file would be "<name>-lock"
    raise FormatError("no such file or directory", path=p, hint="check the path; an LMDB is a directory holding data.mdb")


def data_file(env_path: Path, subdir: bool) -> Path:
    return env_path / DATA_NAME if subdir else env_path


def wrap(exc: Exception, path: str | os.PathLike[str], *, key: object = None, doing: str = "reading") -> FormatError:
    """Turn an ``lmdb.Error`` into a FormatError that names the file (and key) and the fix."""
    if isinstance(exc, py_lmdb.MapFullError):
        hint = "the map is full; the writer grows it by itself, so this means the disk or address space ran out"
    elif isinstance(exc, (py_lmdb.ReadonlyError, PermissionError)):
        hint = "the file or its directory is not writable"
    else:
        hint = _REBUILD_HINT
    return FormatError(f"LMDB error while {doing}: {type(exc).__name__}: {exc}", path=path, key=key, hint=hint)


class _Handles:
    """The process's shared read-only environments, keyed by the data file's identity."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.envs: dict[tuple[int, int], list[Any]] = {}  # identity -> [env, refcount]
        # (dev, ino, size, mtime) of data files that passed verify(); kept across fork
        self.verified: set[tuple[int, int, int, int]] = set()
        # (pid, token) pairs queued by finalisers. deque.append is atomic and
        # takes no Python-level lock, so a finaliser may run it anywhere.
        self.pending: deque[tuple[int, tuple[int, int]]] = deque()


_HANDLES = _Handles()


def acquire(env_path: Path, subdir: bool, *, verify: bool = True) -> tuple[Any, tuple[int, int]]:
    """Open (or share) a read-only environment; return ``(env, token)`` for :func:`release`.

    Read-only settings, and why:
      * ``readonly=True, lock=False``: fastdata reads finished databases only,
        so no reader table is needed; it also works on read-only media and never
        creates ``lock.mdb`` beside the data.
      * ``readahead=False``: training reads records in random order; OS
        readahead would pull neighbouring pages nobody asked for and, on a
        database larger than RAM, evict useful ones. For a page-cached shard it
        makes no difference.
      * ``max_spare_txns=1``: each read begins and ends its own transaction
        (thread safe); one cached transaction makes that cheap.

    With ``verify`` (the default) the data file first passes py-lmdb's offline
    structural check (``lmdb.verify``, py-lmdb >= 3), once per file version
    per process: liblmdb trusts every page pointer, so a damaged file can make
    it read past the end of the map and kill the process with SIGBUS or
    SIGSEGV. The check reads the meta, branch and leaf pages and the overflow
    headers, not the values: measured 20-60 ms for a 10,000-entry shard or a
    240 MB shard of 2,300 images, ~2.6 s for 1M entries (loaded 2-core machine).
    A forked child inherits what its parent verified.
    """
    path = data_file(env_path, subdir)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise FormatError(f"cannot open: {exc.strerror}", path=path) from exc
    ident = (st.st_dev, st.st_ino)
    with _HANDLES.lock:
        if _HANDLES.pid != os.getpid():
            _forget_parent_handles()
        _drain_locked()
        entry = _HANDLES.envs.get(ident)
        version = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if verify and version not in _HANDLES.verified:
            check_structure(path)
            _HANDLES.verified.add(version)
        if entry is None:
            env = _open_readonly(env_path, subdir, path, st.st_size)
            entry = _HANDLES.envs[ident] = [env, 0]
        entry[1] += 1
        return entry[0], ident


def release(token: tuple[int, int]) -> None:
    """Drop one reference taken by :func:`acquire`; the last one closes the environment."""
    with _HANDLES.lock:
        if _HANDLES.pid != os.getpid():
            return  # a handle of the parent process: the child leaves it alone
        _drain_locked()
        _release_locked(token)


def release_later(token: tuple[int, int]) -> None:
    """:func:`release` for finalisers: queue the token without taking any lock.

    Safe in ``__del__`` at any point, even while this thread holds the table's
    lock; the environment closes at the next :func:`acquire`, :func:`release`
    or :func:`drain` in this process.
    """
    _HANDLES.pending.append((os.getpid(), token))


def drain() -> None:
    """Close the environments that finalised readers queued with :func:`release_later`."""
    with _HANDLES.lock:
        if _HANDLES.pid == os.getpid():
            _drain_locked()


def _drain_locked() -> None:
    # popleft until empty rather than iterating: a finaliser run by a GC pass
    # inside this loop may append meanwhile, and that is fine.
    pid = os.getpid()
    while True:
        try:
            owner, token = _HANDLES.pending.popleft()
        except IndexError:
            return
        if owner == pid:  # a token queued before fork() belongs to the parent
            _release_locked(token)


def _release_locked(token: tuple[int, int]) -> None:
    entry = _HANDLES.envs.get(token)
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _HANDLES.envs[token]
        entry[0].close()


def check_structure(path: Path) -> None:
    """Raise FormatError unless ``path`` (a data file) passes ``lmdb.verify``; no-op without py-lmdb >= 3."""
    if _structural_verify is None:
        return
    try:
        problems = _structural_verify(os.fspath(path), False)
    except Exception as exc:  # VerifyError: not even the meta pages parse
        raise FormatError(f"not a readable LMDB data file ({exc})", path=path, hint=_REBUILD_HINT) from exc
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise FormatError(f"damaged LMDB: {'; '.join(problems[:3])}{more}", path=path, hint=_REBUILD_HINT)


def _forget_parent_handles() -> None:
    # The parent's handles were inherited by fork(): closing them here only
    # unmaps the child's copy (lock=False, read-only), and unregisters them
    # from py-lmdb so that the child may open the same files again.
    for env, _ in _HANDLES.envs.values():
        try:
            env.close()
        except py_lmdb.Error:
            pass
    _HANDLES.envs.clear()
    _HANDLES.pending.clear()  # tokens of the parent's readers
    _HANDLES.pid = os.getpid()


def _open_readonly(env_path: Path, subdir: bool, path: Path, file_size: int) -> Any:
    try:
        env = py_lmdb.open(
            os.fspath(env_path),
            subdir=subdir,
            readonly=True,
            lock=False,
            readahead=False,
            max_spare_txns=1,
            create=False,
        )
    except py_lmdb.Error as exc:
        raise wrap(exc, path, doing="opening") from exc
    # A data file shorter than its meta page says would be read past its end
    # through the memory map, which kills the process with SIGBUS: refuse it here.
    needed = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    if file_size < needed:
        env.close()
        raise FormatError(
            f"truncated: the file has {file_size} bytes but its meta page describes {needed}",
            path=path,
            hint="the copy or conversion was interrupted; copy the file again or re-run the conversion",
        )
    return env
