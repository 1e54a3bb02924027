"""Room in the shard cache for downloads in flight, counted the same by every
process on the machine.

A download reserves its whole size when it makes room (before its first
byte) and releases it after its ``.partial`` is renamed to the final name.
Counting the reservations before listing the finished files means a
download that ends in between is counted twice (the safe side), never not
at all: CI once saw a cache of a 41,712-byte limit hold 47,555 bytes when a
download ended between the two counts.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import json
import os
import stat
from pathlib import Path

from .locks import LOCK_DIR, locked

PARTIAL = ".partial"
RESERVATIONS = "reserved"


class Reservation:
    """Room made in the cache for one download, visible to every process on
    the machine: a file under the cache's lock folder holding the size and
    the ``.partial`` path, ``flock``-ed by its downloader until released. A
    reservation whose lock is free belongs to a process that died; the next
    count removes it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def make(cls, folder: Path, partial: Path, size: int) -> Reservation:
        """Call with the eviction lock held: no count sees the file unlocked."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{os.getpid()}-{next(_numbers)}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps({"size": size, "partial": str(partial)}).encode())
        return cls(path, fd)

    def release(self) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self.fd)

    @staticmethod
    def live(folder: Path) -> dict[str, int]:
        """``.partial`` path -> bytes reserved, of the downloads still running."""
        found: dict[str, int] = {}
        for path in folder.glob("*") if folder.is_dir() else ():
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError), locked(path, blocking=False) as free:
                if free:  # its downloader died (or released it just now): nothing in flight
                    path.unlink(missing_ok=True)
                    continue
                doc = json.loads(path.read_text(encoding="utf-8"))
                found[str(doc["partial"])] = int(doc["size"])
        return found


_numbers = itertools.count()


def in_flight(root: Path) -> tuple[int, int]:
    """Bytes of the downloads in progress on this machine, and how many of
    them are not on the disk yet. A live reservation counts its download's
    whole size from the start; a ``.partial`` without one (a dead
    process's) counts what it holds. Another process renames its finished
    ``.partial`` at any moment: a file listed but gone by its ``stat`` is
    simply not counted."""
    reserved = Reservation.live(root / LOCK_DIR / RESERVATIONS)
    total = unwritten = sum(reserved.values())
    for path in root.glob(f"*/**/*{PARTIAL}"):
        try:
            st = path.stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        if str(path) in reserved:
            unwritten -= min(st.st_size, reserved[str(path)])
        else:
            total += st.st_size
    return total, unwritten
