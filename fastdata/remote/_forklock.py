"""A module-level lock that a forked child gets unlocked."""

from __future__ import annotations

import os
import threading


class ForkSafeLock:
    """``with lock:`` as with a ``threading.Lock``; a fork made while another
    thread (a read-ahead download) held it would leave the child's copy locked
    forever, so the child starts with a fresh one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._renew)

    def _renew(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
