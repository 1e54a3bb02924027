"""What every worker pool of the converters offers (:class:`Pool`), and the error a dead worker raises.

Two pools implement it: :class:`.forkpool.ForkPool` (forked workers, each fed
over a pipe of its own) and :class:`.parallel.SpawnPool` (spawned by
``ProcessPoolExecutor`` while another thread runs, when forking is unsafe);
:func:`.parallel.worker_pool` picks one. Their users, the shard writers of
``fastdata convert`` and the scan's stat workers, are written against this
protocol only, so they run the same on either.

Kept free of ``multiprocessing`` and ``concurrent.futures``: a one-worker
conversion imports this module and must not pay for them.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from typing import Self  # Python 3.11's; the annotations are never evaluated

from fastdata.errors import FastDataError


class WorkerDied(FastDataError):
    """A worker process ended without answering (killed by the OS, out of memory, a crash)."""


class Outcome:
    """What a task came to: :meth:`result` returns its value or raises its error;
    ``seconds`` is how long it ran (from when a worker got it)."""

    __slots__ = ("error", "seconds", "value")

    def __init__(self, value: Any = None, error: BaseException | None = None, seconds: float = 0.0) -> None:
        self.value, self.error, self.seconds = value, error, seconds

    @classmethod
    def of_task(cls, ok: bool, value: Any, seconds: float) -> Outcome:
        """The outcome of what :func:`.attempts.run_task` answered: ``(True, value)``
        or ``(False, error)``."""
        return cls(value, seconds=seconds) if ok else cls(error=value, seconds=seconds)

    def result(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.value


class TaskBook:
    """The bookkeeping the executor pools (:class:`.parallel.SpawnPool`, the Ray
    and Spark pools) share: each task's token, counted from 0, the handle it runs
    under (a future, a Ray reference) and when it was submitted, which stands in
    for when a worker got it (none of those executors says)."""

    def __init__(self, workers: int) -> None:
        self._workers = workers
        self._running: dict[Any, int] = {}  # handle -> token
        self._submitted: dict[int, float] = {}
        self._tokens = itertools.count()

    def _track(self, handle: Any) -> int:
        """Record a task just submitted under ``handle``; returns its token."""
        token = next(self._tokens)
        self._running[handle] = token
        self._submitted[token] = time.monotonic()
        return token

    def _finish(self, handle: Any) -> tuple[int, float]:
        """Forget a finished task; returns its token and its seconds since submitted."""
        token = self._running.pop(handle)
        return token, time.monotonic() - self._submitted.pop(token)

    def idle(self) -> int:
        """Workers without a task (as far as this process can tell)."""
        return max(0, self._workers - len(self._running))

    def started(self, token: int) -> float | None:
        return self._submitted.get(token)

    def reports(self) -> Iterator[Any]:
        """Nothing, for a pool without a progress channel."""
        return iter(())

    def __enter__(self) -> Self:
        return self


class Pool(Protocol):
    """Worker processes that each ran an ``init`` once and then run the tasks
    given to :meth:`submit`, named by the token it returns.

    Used as a context manager: leaving the ``with`` block normally lets the
    workers finish and leave; leaving it by an exception (Ctrl-C included)
    kills them at once, abandoning their tasks.
    """

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        """Queue ``fn(*args)``; returns its token."""
        ...

    def idle(self) -> int:
        """Workers with nothing to do, as far as this process can tell."""
        ...

    def started(self, token: int) -> float | None:
        """When a worker got the task (``time.monotonic``; a pool that cannot tell
        gives when it was submitted), or None while it waits or once it is done."""
        ...

    def completed(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
        """The tasks that finished since the last call, as ``(token, outcome)``,
        waiting up to ``timeout`` seconds (None: until one does) for the first.

        Raises:
            WorkerDied: a worker process died.
        """
        ...

    def reports(self) -> Iterator[Any]:
        """What the workers put on their progress channel since the last call."""
        ...

    def __enter__(self) -> Pool: ...

    def __exit__(self, kind: object, *exc: object) -> None: ...
