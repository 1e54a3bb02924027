"""Room in the shard cache for downloads in flight, counted the same by every
process on the machine.

A download reserves its whole size when it makes room (before its first
byte) and releases it after its ``.partial`` is renamed to the final name.
The reservations are read before the finished files are listed, so a
download that ends in between is seen in both, never in neither (CI once
saw a cache of a 41,712-byte limit hold 47,555 bytes when a download ended
between the two counts, read the other way round). Seen in both, it is
counted once: :meth:`InFlight.counted` drops a reservation whose file the
listing holds. Counted twice, it made its own group's next download evict
it (CI: a shard gone right after its fetch returned).
"""

from __future__ import annotations

import dataclasses
import fcntl
import itertools
import json
import os
import stat
from pathlib import Path

from .locks import LOCK_DIR

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
        os.write(fd, json.dumps({"size": size, "partial": file_key(partial)}).encode())
        return cls(path, fd)

    def release(self) -> None:
        self.path.unlink(missing_ok=True)
        os.close(self.fd)

    @staticmethod
    def live(folder: Path) -> dict[str, int]:
        """``.partial`` key (:func:`file_key`) -> bytes reserved, of the downloads still running."""
        found: dict[str, int] = {}
        for path in folder.glob("*") if folder.is_dir() else ():
            try:
                fd = os.open(path, os.O_RDONLY)  # not O_CREAT: one released meanwhile stays gone
            except OSError:
                continue
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:  # its downloader holds it: in flight
                    doc = json.loads(os.read(fd, 65536))
                    found[str(doc["partial"])] = int(doc["size"])
                    continue
                path.unlink(missing_ok=True)  # its downloader died (or released it just now)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            finally:
                os.close(fd)
        return found


_numbers = itertools.count()


def file_key(path: Path | str) -> str:
    """One spelling of a cache file's path, whichever way its directory was
    named (relative, through a link): reservations and listings compare by it."""
    head, tail = os.path.split(os.fspath(path))
    return os.path.join(os.path.realpath(head), tail)


@dataclasses.dataclass(frozen=True)
class InFlight:
    """The downloads in progress on this machine when :func:`in_flight` looked."""

    reserved: dict[str, tuple[int, int]]  # .partial key -> (bytes reserved, bytes of them not on the disk yet)
    orphans: int  # bytes of .partial files without a live reservation (a dead process's)

    def counted(self, finished: set[str]) -> tuple[int, int]:
        """Bytes in flight, and how many of them are not on the disk yet,
        leaving out the downloads whose final file (by :func:`file_key`) is
        in ``finished``, a listing made after this: they ended in between
        and the listing counts them."""
        live = [v for k, v in self.reserved.items() if k[: -len(PARTIAL)] not in finished]
        return sum(v[0] for v in live) + self.orphans, sum(v[1] for v in live)


def in_flight(root: Path) -> InFlight:
    """The downloads in progress under ``root``. A live reservation counts its
    download's whole size from the start; a ``.partial`` without one (a dead
    process's) counts what it holds. Another process renames its finished
    ``.partial`` at any moment: a file listed but gone by its ``stat`` is
    simply not counted."""
    reserved = Reservation.live(root / LOCK_DIR / RESERVATIONS)
    on_disk: dict[str, int] = {}
    orphans = 0
    for path in root.glob(f"*/**/*{PARTIAL}"):
        try:
            st = path.stat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        key = file_key(path)
        if key in reserved:
            on_disk[key] = st.st_size
        else:
            orphans += st.st_size
    return InFlight({k: (size, size - min(on_disk.get(k, 0), size)) for k, size in reserved.items()}, orphans)
