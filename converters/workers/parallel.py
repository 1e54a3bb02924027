"""Worker processes: a pool that writes shards (:func:`worker_pool`: forked
by :mod:`.forkpool`, or spawned by ``ProcessPoolExecutor`` while another
thread runs) and an order-preserving parallel map with a bounded window
(:func:`ordered_map`, used by ``verify --decode``).

The map's results come back in submission order whatever the worker count, which is
what makes the converter's output independent of ``--workers``. At most
``window`` tasks are in flight, so fast workers cannot pile images up in the
parent's memory. Workers ignore SIGINT (the parent handles Ctrl-C and stops
them) and, on Linux, die with their parent (``PR_SET_PDEATHSIG``), so a
``kill -9`` of the converter leaves no orphan still working.
"""

from __future__ import annotations

import collections
import os
import signal
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from .pool import Outcome, Pool, TaskBook, WorkerDied

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

# multiprocessing and concurrent.futures are imported when a pool starts: ~20 ms
# that a one-worker conversion (and every other command) does not pay.

# fork when this process runs no other thread (a spawned worker re-imports Python,
# Pillow and the converters: 0.1-0.3 s each, more than a whole pass-through shard);
# spawn otherwise: another thread (tqdm's monitor, DALI, torch) may hold a lock that a
# fork would copy while held. Never forkserver: its workers are the server's children,
# and the server outlives a kill -9 of the converter, so PR_SET_PDEATHSIG would not fire.
START_METHOD = "spawn"


def start_method() -> str:
    """``"fork"`` on Linux while this is the only Python thread, else :data:`START_METHOD`."""
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    return START_METHOD

T = TypeVar("T")
R = TypeVar("R")


def available_cpus() -> int:
    """CPUs this process may run on (the affinity mask, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _die_with_parent() -> None:
    """Best effort: a worker that cannot ask for it still works, it may only outlive a kill -9."""
    if not sys.platform.startswith("linux"):
        return
    try:  # the compiled helper: importing ctypes instead costs each worker ~9 ms
        from fastdata.formats._speedups import set_parent_death_signal
    except ImportError:  # not built
        pass
    else:
        try:
            set_parent_death_signal(signal.SIGKILL)
        except OSError:
            pass
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


def _worker_init(init: Callable[..., None], args: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    if os.getppid() == 1:  # orphaned already: the parent died before prctl took effect
        os._exit(1)
    init(*args)


def _done(result: R) -> Future:
    from concurrent.futures import Future

    future: Future = Future()
    future.set_result(result)
    return future


def ordered_map(
    fn: Callable[[T], R],
    tasks: Iterable[T],
    *,
    workers: int,
    init: Callable[..., None],
    init_args: tuple[Any, ...] = (),
    window: int | None = None,
    local: Callable[[T], R | None] | None = None,
) -> Generator[R, None, None]:
    """Yield ``fn(task)`` for each task, in order.

    ``workers <= 1`` runs everything in this process (after ``init(*init_args)``).
    Otherwise ``local(task)``, when given, runs here first (after
    ``init(*init_args)`` here too): a result that is not None is used as it is
    and the task never crosses to a worker (cheaper than shipping its bytes
    back through a pipe); None sends the task to ``fn`` in a worker.
    ``workers`` processes, started at the first task that needs one, each
    run ``init`` once; they are shut down when the generator finishes,
    raises or is closed. An exception
    raised by ``fn`` is re-raised here, in order; a worker that dies (killed
    by the OS, out of memory) raises ``BrokenProcessPool`` instead of hanging.
    """
    if workers <= 1:
        init(*init_args)
        for task in tasks:
            yield fn(task)
        return
    window = window or 3 * workers
    pending: collections.deque = collections.deque()
    executor: ProcessPoolExecutor | None = None
    if local is not None:
        init(*init_args)
    try:
        for task in tasks:
            result = local(task) if local is not None else None
            if result is not None:
                pending.append(_done(result))
            else:
                if executor is None:  # at the first task that needs one (never, when local does all)
                    executor = _start_pool(workers, init, init_args)
                pending.append(executor.submit(fn, task))
            if len(pending) >= window:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)


def _start_pool(workers: int, init: Callable[..., None], init_args: tuple[Any, ...]) -> ProcessPoolExecutor:
    """The pool :func:`ordered_map` ships tasks to: ``workers`` processes that run ``init`` once.

    It may start while the caller has an output file open. A forked child
    inherits that writer but cannot harm it: it never touches it, the
    parent's frames keep it reachable (no finaliser flushes it), the child
    leaves by os._exit and dies with the parent.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context(start_method()),
        initializer=_worker_init,
        initargs=(init, init_args),
    )


class SpawnPool(TaskBook):
    """A :class:`.pool.Pool` of spawned processes (``ProcessPoolExecutor``):
    workers that ignore SIGINT and die with this process, tasks named by
    tokens, an optional progress channel (:meth:`reports`). Leaving the ``with`` block by an exception (Ctrl-C
    included) kills the workers at once instead of waiting for their tasks,
    which may each be a whole shard: whatever they leave under partial names
    is discarded by ``--resume``."""

    def __init__(self, workers: int, init: Callable[..., None], *, report: bool = False, args: tuple = ()) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        super().__init__(workers)
        context = multiprocessing.get_context(start_method())
        self._queue = context.SimpleQueue() if report else None
        self._executor = ProcessPoolExecutor(
            workers, mp_context=context, initializer=_worker_init, initargs=(init, (self._queue, *args))
        )

    def submit(self, fn: Callable[..., R], *args: Any) -> int:
        """Queue ``fn(*args)``; returns its token."""
        return self._track(self._executor.submit(fn, *args))

    def completed(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
        """The tasks that finished, as ``(token, outcome)``,
        waiting up to ``timeout`` seconds for the first.

        Raises:
            WorkerDied: a worker process died.
        """
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        if not self._running:
            return []
        finished, _ = wait(self._running, timeout=timeout, return_when=FIRST_COMPLETED)
        done = []
        for future in finished:
            error = future.exception()
            if isinstance(error, BrokenProcessPool):
                raise WorkerDied(str(error)) from None
            token, seconds = self._finish(future)
            done.append((token, Outcome(error=error, seconds=seconds) if error else Outcome(future.result(), seconds=seconds)))
        return done

    def reports(self) -> Iterator[Any]:
        """What the workers put on the progress channel since the last call."""
        queue = self._queue
        while queue is not None and not queue.empty():
            yield queue.get()

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:
            processes = list((getattr(self._executor, "_processes", None) or {}).values())
            for process in processes:
                process.kill()
            for process in processes:  # gone before the caller clears their partial files (a late open() wins else)
                process.join(5)
            self._executor.shutdown(wait=False, cancel_futures=True)
        else:
            self._executor.shutdown(wait=True)
        if self._queue is not None:
            self._queue.close()


def worker_pool(workers: int, init: Callable[..., None], *, report: bool = False, args: tuple = (),
                engine: str | None = None) -> Pool:
    """A pool of ``workers`` processes that each run ``init(channel, *args)`` once
    (``channel``: the progress channel when ``report``, else None): a
    :class:`.forkpool.ForkPool` while this process may fork (see
    :func:`start_method`), else a :class:`SpawnPool`; with ``engine`` (``"ray"``,
    ``"spark"``), that engine's tasks (:func:`.engines.engine_pool`).
    Forked workers inherit ``args`` as they are; spawned ones get a pickled copy each."""
    if engine is not None:
        from .engines import engine_pool

        return engine_pool(engine, workers, init, report=report, args=args)
    if start_method() == "fork":
        from .forkpool import ForkPool

        return ForkPool(workers, init, report=report, args=args, worker_init=_worker_init)
    return SpawnPool(workers, init, report=report, args=args)
