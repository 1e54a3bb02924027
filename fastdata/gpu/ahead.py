"""An iterator run on a thread of its own, a few items ahead of its consumer.

The GPU stage's host work (waiting for the workers' next batch, the decoder
call, which blocks inside nvJPEG, and launching the resample) runs here, so
the training loop's thread only takes finished batches: batch k+1 is
decoded while batch k is resampled and the model runs on batch k-1.
"""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

__all__ = ["Ahead"]

_ITEM, _END, _ERROR = range(3)
_LIVE: weakref.WeakSet[Ahead] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    # A script that ends with a pass half read would otherwise exit while the
    # thread is inside a torch op: "terminate called without an active exception".
    for ahead in list(_LIVE):
        ahead.close(timeout=10.0)


class Ahead:
    """Iterate ``source`` on a daemon thread, at most ``depth`` items ahead.

    An exception in ``source`` is raised by the consumer's ``next`` (the same
    object, its traceback kept). :meth:`close` stops the thread after the
    item in hand and closes ``source``.
    """

    def __init__(self, source: Iterator[Any], depth: int = 2, name: str = "fastdata-ahead") -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        self._queue: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(source,), name=name, daemon=True)
        self._thread.start()
        _LIVE.add(self)

    def _run(self, source: Iterator[Any]) -> None:
        try:
            for item in source:
                if not self._put((_ITEM, item)):
                    return
            self._put((_END, None))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            self._put((_ERROR, exc))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    def _put(self, entry: tuple[int, Any]) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Ahead:
        return self

    def __next__(self) -> Any:
        while True:
            try:
                kind, value = self._queue.get(timeout=1.0)
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise RuntimeError("fastdata: the batch thread ended without a batch or an error") from None
                continue
            if kind == _ITEM:
                return value
            if kind == _END:
                raise StopIteration
            raise value

    def close(self, timeout: float | None = None) -> None:
        """Stop the thread (after the item it is making) and wait for it, at
        most ``timeout`` seconds (None: until it stops)."""
        self._stop.set()
        end = None if timeout is None else time.monotonic() + timeout
        while self._thread.is_alive() and (end is None or time.monotonic() < end):
            try:
                while True:
                    self._queue.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)
