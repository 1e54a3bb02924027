"""The local cache of remote shards: atomic, shared by processes, bounded.

* Atomic: a file is downloaded under ``NAME.partial``, checked (size and
  SHA-256 against the manifest) and only then renamed to ``NAME``; a file
  with its final name is always complete and checked.
* Shared: a per-file ``flock`` makes a second worker or rank on the machine
  wait for the download in progress instead of starting its own.
* Bounded: before a download, least-recently-used files (by mtime, touched
  on every use) are deleted until the new one fits under ``limit_bytes``
  and leaves ``reserve_bytes`` free on the disk. A reader that still has an
  evicted file open keeps reading it (POSIX keeps the inode until closed).

Every download is logged as one JSON line in ``fetch-log.jsonl`` at the
cache root (time, pid, URL without secrets, bytes, seconds).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import FormatError, ManifestError, RemoteError
from ..formats import checksums
from ..formats.names import inside
from . import outcome
from .locks import LOCK_DIR, lock_path, locked
from .retry import ObjectMissing, is_disk_full
from .room import PARTIAL, RESERVATIONS, Reservation, in_flight
from .store import Store
from .urls import scrub_url

LOG_NAME = "fetch-log.jsonl"
DEFAULT_RESERVE = 512 * 1024 * 1024



@dataclasses.dataclass(frozen=True)
class Expected:
    """What a downloaded file must be: ``size`` bytes (None: the server's
    size) and, when known, this digest (``"crc32c:..."``, ``"sha256:..."``
    or a bare SHA-256 hex digest, as manifests record them)."""

    size: int | None = None
    sha256: str | None = None


class NoRoomAhead(RemoteError):
    """A read-ahead found no room in the cache now (not an error to report)."""


class ShardCache:
    """Files of remote datasets under ``root`` (one sub-directory per dataset).

    Args:
        root: the cache directory.
        limit_bytes: most bytes of cached files (None: bounded by the disk only).
        reserve_bytes: free space always left on the cache's disk.
        evictable: ``evictable(dataset_dir) -> names`` of the files there that
            may be deleted and fetched again (shards and their indexes).
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        limit_bytes: int | None,
        evictable: Callable[[Path], list[str]],
        *,
        reserve_bytes: int = DEFAULT_RESERVE,
    ) -> None:
        self.root = Path(root)
        self.limit_bytes = limit_bytes
        self.reserve_bytes = reserve_bytes
        self.evictable = evictable

    def fetch(self, directory: Path, name: str, store: Store, expected: Expected, *, ahead: bool = False) -> Path:
        """``directory/name``, downloaded from ``store`` first if it is not there.

        A failure is shared: the processes waiting for the same file raise
        it when they get the lock (see :mod:`fastdata.remote.outcome`), within
        the store's retry budget of the first attempt, instead of spending a
        budget each.

        ``ahead``: a read-ahead, which gives up at once (NoRoomAhead) when
        the cache has no room for the file now.

        Raises:
            FormatError: the file fails its size or digest check twice (the
                message names the URL).
            ObjectMissing: the server has no such object.
            ManifestError: ``name`` would resolve outside ``directory``.
            RemoteError: retries exhausted, credentials refused, or the cache is full.
        """
        final = inside(directory, name)
        if final.exists():
            _touch(final)
            return final
        asked = time.monotonic()
        lock = lock_path(directory, name)
        with locked(lock):
            if final.exists():  # another process fetched it while we waited
                _touch(final)
                return final
            earlier = outcome.recent(lock, store.policy.total_seconds, asked)
            if earlier is not None:
                raise earlier
            try:
                self._download(final, name, store, expected, ahead)
            except NoRoomAhead:
                raise  # not a failure: the foreground fetch makes room when it needs the file
            except (FormatError, RemoteError) as exc:
                outcome.remember(lock, exc)
                raise
            outcome.forget(lock)
            return final

    def _download(self, final: Path, name: str, store: Store, expected: Expected, ahead: bool) -> None:
        size = expected.size if expected.size is not None else store.size(name)
        if size is None:
            raise ObjectMissing(scrub_url(store.url_of(name)))
        partial = final.with_name(final.name + PARTIAL)
        reservation = self.make_room(size, store.url_of(name), partial, wait_seconds=store.policy.total_seconds, ahead=ahead)
        try:
            self._download_checked(final, partial, name, store, Expected(size, expected.sha256))
        finally:
            if reservation is not None:
                reservation.release()  # after the rename: the file is never uncounted

    def _download_checked(self, final: Path, partial: Path, name: str, store: Store, expected: Expected) -> None:
        """Download into ``partial``, check it against ``expected`` (its size known) and rename it ``final``."""
        size = expected.size
        final.parent.mkdir(parents=True, exist_ok=True)
        problem = ""
        for _ in range(2):  # a mismatch is fetched once more before it is reported
            started = time.monotonic()
            partial.unlink(missing_ok=True)  # never write through a link left in its place
            try:
                store.download(name, str(partial))
            except BaseException as exc:
                partial.unlink(missing_ok=True)
                if is_disk_full(exc):
                    raise self.full_error(size, store.url_of(name), f"the disk refused the write ({exc.strerror})") from None
                raise
            problem = _check(partial, expected)
            self.log(store.url_of(name), name, partial, time.monotonic() - started, problem)
            if not problem:
                os.replace(partial, final)
                return
            partial.unlink(missing_ok=True)
        raise FormatError(
            f"{problem} after two downloads",
            path=scrub_url(store.url_of(name)),
            hint="the object on the server is damaged or was replaced after conversion; re-upload the dataset",
        )

    # -- eviction ---------------------------------------------------------------------

    def usage(self) -> list[tuple[float, int, Path, str]]:
        """``(mtime, size, dataset directory, name)`` of every evictable file, oldest first."""
        found = []
        for directory in (d for d in self.root.iterdir() if d.is_dir()):
            for name in self.evictable(directory):
                try:
                    st = inside(directory, name).stat()
                except (OSError, ManifestError):  # gone meanwhile, or not the cache's to delete
                    continue
                found.append((st.st_mtime, st.st_size, directory, name))
        return sorted(found)

    def make_room(self, size: int, url: str, partial: Path | None = None, *, wait_seconds: float = 0.0,
                  ahead: bool = False) -> Reservation | None:
        """Delete least-recently-used files until ``size`` more bytes fit. With
        ``partial``, the room made is reserved for the download into it until
        the returned reservation is released (after its rename): downloads of
        any process on this machine run at once, each making room while the
        others grow.

        Room held by downloads in flight and by shards being opened comes
        free in moments: for up to ``wait_seconds`` this waits for it
        (without the eviction lock) instead of calling the cache full. A
        read-ahead (``ahead``) never waits: it is not needed yet.

        Raises:
            NoRoomAhead: ``ahead`` and no room now.
            RemoteError: the file cannot fit even in an empty cache, or the
                room held by others did not come free in ``wait_seconds``.
        """
        if self.limit_bytes is not None and size > self.limit_bytes:
            raise self.full_error(size, url, f"it is larger than the cache limit of {self.limit_bytes} bytes")
        deadline, delay = time.monotonic() + wait_seconds, 0.01
        while True:
            with locked(self.root / LOCK_DIR / "evict.lock"):
                used, free, held = self._evict_for(size)
                if (self.limit_bytes is None or used + size <= self.limit_bytes) and size <= free:
                    return Reservation.make(self.root / LOCK_DIR / RESERVATIONS, partial, size) if partial else None
            if ahead:
                raise NoRoomAhead(f"no room for {scrub_url(url)} yet")
            if not held or time.monotonic() + delay > deadline:
                raise self.full_error(size, url, f"{used} bytes are in use by other files ({held} of them by downloads "
                                      f"in progress or shards being opened) and {max(free, 0)} are free on the disk")
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def _evict_for(self, size: int) -> tuple[int, int, int]:
        """Delete least-recently-used files that nobody is fetching or opening
        until ``size`` more bytes fit (call with the eviction lock held); the
        bytes then in use, free on the disk, and held by others (downloads in
        flight, files locked)."""
        # downloads in flight before finished files: one that ends in between
        # is seen in both (then counted once), never in neither
        flight = in_flight(self.root)
        files = self.usage()
        flying, unwritten = flight.counted(_keys(files))
        used, held = sum(f[1] for f in files) + flying, flying
        free = shutil.disk_usage(self.root).free - self.reserve_bytes - unwritten
        for _, file_size, directory, name in files:
            if (self.limit_bytes is None or used + size <= self.limit_bytes) and size <= free:
                break
            with locked(lock_path(directory, name), blocking=False) as mine:
                if mine:  # nobody is fetching it or opening it right now (see Mirror.opened)
                    (directory / name).unlink(missing_ok=True)
                    used -= file_size
                    free += file_size
                else:
                    held += file_size
        return used, free, held

    def full_error(self, size: int | None, url: str, why: str) -> RemoteError:
        limit = f"limit {self.limit_bytes} bytes" if self.limit_bytes is not None else "no limit"
        needs = f"{size} bytes" if size is not None else "room"
        return RemoteError(
            f"shard cache {self.root} is full: {scrub_url(url)} needs {needs} but {why} ({limit}, "
            f"{self.reserve_bytes} bytes kept free). Fix: pass a larger cache_bytes, free space on that disk, "
            "or point cache_dir at a bigger disk"
        )

    def log(self, url: str, name: str, path: Path, seconds: float, problem: str) -> None:
        entry = {
            "time": round(time.time(), 3), "host": socket.gethostname(), "pid": os.getpid(), "url": scrub_url(url),
            "file": name, "bytes": path.stat().st_size if path.exists() else 0, "seconds": round(seconds, 4),
        }
        if problem:
            entry["problem"] = problem
        line = (json.dumps(entry) + "\n").encode()
        fd = os.open(self.root / LOG_NAME, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)  # one O_APPEND write: lines from several processes do not interleave
        finally:
            os.close(fd)




def _check(path: Path, expected: Expected) -> str:
    size = path.stat().st_size
    if expected.size is not None and size != expected.size:
        return f"downloaded {size} bytes but expected {expected.size}"
    if expected.sha256 and not checksums.matches(path, expected.sha256):
        kind = expected.sha256.partition(":")[0] if ":" in expected.sha256 else "sha256"
        return f"{'CRC32C' if kind == 'crc32c' else 'SHA-256'} differs from the manifest's"
    return ""


def _keys(files: list[tuple[float, int, Path, str]]) -> set[str]:
    """:func:`~fastdata.remote.room.file_key` of each listed file, resolving each directory once."""
    real: dict[Path, str] = {}
    for _, _, directory, _ in files:
        if directory not in real:
            real[directory] = os.path.realpath(directory)
    return {os.path.join(real[directory], name) for _, _, directory, name in files}


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)


def read_log(root: str | os.PathLike[str]) -> list[dict]:
    """The entries of ``root``'s fetch log (one dict per download attempt)."""
    path = Path(root) / LOG_NAME
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
