"""The cache's file locks (``flock``: per open file, so threads of one
process exclude each other as processes do, and a dead process's locks go
with it).

* ``LOCK_DIR/NAME.lock`` of each cached file: held exclusively while the file
  is fetched or evicted, shared while a reader opens it (see
  :meth:`fastdata.remote.mirror.Mirror.opened`), so eviction passes it by.
* ``LOCK_DIR/evict.lock`` at the cache root: one process at a time counts
  the cache and makes room.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

LOCK_DIR = ".fastdata-locks"


@contextlib.contextmanager
def locked(path: Path, *, blocking: bool = True, shared: bool = False) -> Iterator[bool]:
    """Hold an exclusive (or ``shared``) ``flock`` on ``path`` (created); yields
    False when ``blocking`` is False and another holder prevents it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def lock_path(directory: Path, name: str) -> Path:
    return directory / LOCK_DIR / (name.replace("/", "%") + ".lock")
