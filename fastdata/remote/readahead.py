"""Read-ahead: while a process reads one remote shard, background threads
download the next ones it will read, so the downloads overlap the decoding
and each other instead of each costing a round trip in series.

The order comes from the reader: a stream plans the shards of its share
(:func:`plan`); a map-style dataset's worker sees only the shard it opens,
so there the manifest's order after that shard stands in (an eval epoch
reads in that order; a shuffled one needs every shard soon anyway).

The window: at most :data:`AHEAD` shards after the one being read, one
thread each, and no more bytes than half the cache may hold (the disk's free
space when the cache has no limit), so read-ahead never evicts a shard it
fetched before that shard is read; the first shard of the window is always
fetched. Threads are daemons (exiting never waits for a download; the
cache's ``.partial`` name and lock make an abandoned one harmless) and end
after a minute with nothing to do. A failed read-ahead is silent: the
foreground fetch of that shard reports the error.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Sequence

from ._forklock import ForkSafeLock
from .mirror import Mirror, mirror_of

AHEAD = 4
IDLE_SECONDS = 60.0


class _ReadAhead:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.order: list[str] = []
        self.sizes: list[int] = []
        self.budget: int | None = None
        self.position = -1  # the planned shard opened last
        self.taken: set[str] = set()  # handed to a thread since the last plan
        self.threads: list[threading.Thread] = []
        self.cond = threading.Condition()

    def plan(self, order: list[str], position: int = -1) -> None:
        mirror = mirror_of(os.path.dirname(order[0]))
        sizes = [_size(p) for p in order]
        with self.cond:
            self.order, self.sizes, self.budget = order, sizes, _budget(mirror)
            self.position, self.taken = position, set()
            self._spawn()

    def opened(self, path: str) -> bool:
        """Move the window past ``path``; False when ``path`` is not planned."""
        with self.cond:
            try:
                self.position = self.order.index(path)
            except ValueError:
                return False
            self._spawn()
            return True

    def window(self) -> list[str]:
        """The shards to have fetched now (call with ``cond`` held)."""
        out: list[str] = []
        total = 0
        for path, size in zip(self.order[self.position + 1:], self.sizes[self.position + 1:]):
            if len(out) == AHEAD or (out and self.budget is not None and total + size > self.budget):
                break
            out.append(path)
            total += size
        return out

    def _spawn(self) -> None:
        wanted = [p for p in self.window() if p not in self.taken]
        self.threads = [t for t in self.threads if t.is_alive()]
        for _ in range(min(len(wanted), AHEAD) - len(self.threads)):
            thread = threading.Thread(target=self._run, name="fastdata-read-ahead", daemon=True)
            self.threads.append(thread)
            thread.start()
        self.cond.notify_all()

    def _next(self) -> str | None:
        for path in self.window():
            if path not in self.taken:
                self.taken.add(path)
                return path
        return None

    def _run(self) -> None:
        while True:
            with self.cond:
                path = self._next()
                while path is None:
                    if not self.cond.wait(timeout=IDLE_SECONDS):
                        if threading.current_thread() in self.threads:
                            self.threads.remove(threading.current_thread())
                        return
                    path = self._next()
            mirror = mirror_of(os.path.dirname(path))
            try:
                if mirror is not None:
                    mirror.fetch(os.path.basename(path), ahead=True)
            except Exception:  # noqa: BLE001 - the foreground fetch of this shard raises it with context
                pass


def _size(path: str) -> int:
    mirror = mirror_of(os.path.dirname(path))
    info = mirror.shards.get(os.path.basename(path)) if mirror is not None else None
    return info.bytes if info is not None else 0


def _budget(mirror: Mirror | None) -> int | None:
    """Bytes the window may hold: half of what the cache may."""
    if mirror is None:
        return None
    cache = mirror.cache
    if cache.limit_bytes is not None:
        return cache.limit_bytes // 2
    try:
        return max(0, shutil.disk_usage(cache.root).free - cache.reserve_bytes) // 2
    except OSError:
        return None


_current: _ReadAhead | None = None
_lock = ForkSafeLock()


def _get() -> _ReadAhead:
    global _current
    with _lock:
        if _current is None or _current.pid != os.getpid():  # a forked child starts its own
            _current = _ReadAhead()
        return _current


def plan(paths: Sequence[str]) -> None:
    """The shard files this process reads next, in order (repeats allowed):
    start fetching the first remote ones. Local files are ignored."""
    remote = [p for p in dict.fromkeys(paths) if mirror_of(os.path.dirname(p)) is not None]
    if remote:
        _get().plan(remote)


def opened(path: str) -> None:
    """``path`` is being opened: fetch the shards planned after it, or,
    when none is planned, the ones after it in its manifest."""
    state = _get()
    if state.opened(path):
        return
    mirror = mirror_of(os.path.dirname(path))
    if mirror is None:
        return
    names = [s.file for s in mirror.manifest.shards]
    name = os.path.basename(path)
    if name in names:
        directory = os.path.dirname(path)
        state.plan([os.path.join(directory, n) for n in names], position=names.index(name))
