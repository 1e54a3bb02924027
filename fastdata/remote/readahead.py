"""Read-ahead for streams: while a worker reads one remote shard, a background
thread downloads the next one it will read, so the download overlaps the
decoding instead of stalling it. One daemon thread per process (so exiting
never waits for a download; the cache's ``.partial`` name and lock make an
abandoned download harmless), one shard ahead. A failed read-ahead is
silent: the foreground fetch of that shard reports the error.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Sequence

from ._forklock import ForkSafeLock
from .mirror import mirror_of


class _ReadAhead:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.order: list[str] = []
        self.wanted: deque[str] = deque()
        self.cond = threading.Condition()
        self.thread: threading.Thread | None = None

    def want(self, path: str) -> None:
        with self.cond:
            if path in self.wanted:
                return
            self.wanted.append(path)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, name="fastdata-read-ahead", daemon=True)
                self.thread.start()
            self.cond.notify()

    def _run(self) -> None:
        while True:
            with self.cond:
                if not self.wanted and not self.cond.wait(timeout=60):
                    self.thread = None
                    return
                if not self.wanted:
                    continue
                path = self.wanted.popleft()
            mirror = mirror_of(os.path.dirname(path))
            try:
                if mirror is not None:
                    mirror.fetch(os.path.basename(path))
            except Exception:  # noqa: BLE001 - the foreground fetch of this shard raises it with context
                pass


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
    start fetching the first remote one. Local files are ignored."""
    remote = [p for p in dict.fromkeys(paths) if mirror_of(os.path.dirname(p)) is not None]
    state = _get()
    state.order = remote
    if remote:
        state.want(remote[0])


def opened(path: str) -> None:
    """``path`` is being opened: fetch the shard planned after it."""
    state = _get()
    try:
        position = state.order.index(path)
    except ValueError:
        return
    if position + 1 < len(state.order):
        state.want(state.order[position + 1])
