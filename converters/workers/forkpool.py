"""Worker processes forked from this one, each fed over a pipe of its own.

What the converter's pool needs from ``concurrent.futures`` is small: hand
a task to an idle worker, hear back its result, its progress reports or its
death, and kill every worker at once when the run stops. Importing
``multiprocessing`` and ``concurrent.futures`` for it cost about 20 ms of
every multi-worker conversion's start-up, and their worker side a manager
thread, a feeder thread and a shared queue per pool; here each worker is an
``os.fork`` child reading length-prefixed pickles from its task pipe and
writing them to its result pipe, and the parent waits on the result pipes
with ``poll``. A worker that dies (the OS killed it, it ran out of
memory) closes its result pipe: the parent sees the end of the file and
raises :class:`WorkerDied` instead of waiting for ever.

Only for the fork start method: :func:`.parallel.worker_pool` chooses it
while this process runs no other thread, and a ``ProcessPoolExecutor`` with
spawned workers otherwise.
"""

from __future__ import annotations

import collections
import gc
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable, Iterator
from typing import Any

from fastdata.errors import FastDataError

from .pool import Outcome, WorkerDied

_LENGTH = struct.Struct("<Q")
# what a worker writes back: a task's result, its error, or a progress report
_OK, _ERROR, _REPORT = 0, 1, 2


def _send(fd: int, message: Any) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int) -> Any:
    """One message from ``fd``, blocking; None at the end of the file."""
    head = _read_exactly(fd, _LENGTH.size)
    if head is None:
        return None
    body = _read_exactly(fd, _LENGTH.unpack(head)[0])
    if body is None:
        return None
    return pickle.loads(body)


def _read_exactly(fd: int, n: int) -> bytes | None:
    parts, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


class _Channel:
    """The progress channel a worker's ``init`` gets: ``put(item)`` sends it to the parent."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def put(self, item: Any) -> None:
        _send(self._fd, (_REPORT, None, item))


def _serve(tasks: int, results: int, init: Callable[..., None], args: tuple, report: bool) -> None:
    """A worker's life: ``init``, then run each task read from ``tasks`` until the parent closes it."""
    init(_Channel(results) if report else None, *args)
    while (message := _receive(tasks)) is not None:
        token, fn, fn_args = message
        try:
            answer = (_OK, token, fn(*fn_args))
        except BaseException as exc:  # noqa: BLE001 - every error goes back to the parent, which raises it
            answer = (_ERROR, token, exc)
        try:
            _send(results, answer)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # a result or error that cannot cross
            _send(results, (_ERROR, token, FastDataError(f"a worker's answer could not be sent back ({exc!r}): {answer[2]!r}")))


class _Worker:
    __slots__ = ("buffer", "pid", "results", "tasks", "token")

    def __init__(self, pid: int, tasks: int, results: int) -> None:
        self.pid, self.tasks, self.results = pid, tasks, results
        self.buffer = bytearray()
        self.token: int | None = None  # the task it is running


class ForkPool:
    """A :class:`.pool.Pool` of ``workers`` forked processes that each run ``init(channel, *args)`` once,
    ``channel`` being the progress channel when ``report`` (else None), then the
    tasks given to :meth:`submit`, one at a time, in the order given.

    ``worker_init(init, args)`` runs first in each worker (signal and parent-death
    settings: see :mod:`.parallel`)."""

    def __init__(self, workers: int, init: Callable[..., None], *, report: bool = False, args: tuple = (),
                 worker_init: Callable[[Callable[..., None], tuple], None] | None = None) -> None:
        self._workers: list[_Worker] = []
        self._idle: collections.deque[_Worker] = collections.deque()
        self._queue: collections.deque[tuple[int, Callable[..., Any], tuple]] = collections.deque()
        self._reports: list[Any] = []
        self._started: dict[int, float] = {}  # tokens being run: when a worker got them (time.monotonic)
        self._next = 0
        start = worker_init or (lambda fn, fn_args: fn(*fn_args))
        # objects that exist now are never collected in a worker: its collector would otherwise
        # write to every page of them and copy the parent's whole heap, one page fault at a time
        gc.freeze()
        try:
            for _ in range(workers):
                self._workers.append(self._fork(start, init, args, report, self._workers))
        except BaseException:
            self.kill()
            raise
        finally:
            gc.unfreeze()
        self._idle.extend(self._workers)
        self._by_fd = {w.results: w for w in self._workers}
        self._poll = select.poll()  # not select(): no limit on descriptor numbers
        for worker in self._workers:
            self._poll.register(worker.results, select.POLLIN)

    @staticmethod
    def _fork(start: Callable, init: Callable[..., None], args: tuple, report: bool, siblings: list[_Worker]) -> _Worker:
        task_r, task_w = os.pipe()
        result_r, result_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker: never returns into the parent's frames
            code = 1
            try:
                # the parent's ends of the other workers' pipes: held here, a sibling would
                # never see its task pipe end, nor the parent a sibling's death
                for fd in [task_w, result_r, *(f for w in siblings for f in (w.tasks, w.results))]:
                    os.close(fd)
                start(_serve, (task_r, result_w, init, args, report))
                code = 0
            except BaseException:  # noqa: BLE001 - said on stderr; the parent reports the exit
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)  # no atexit handlers, no flush of buffers inherited from the parent
        os.close(task_r)
        os.close(result_w)
        return _Worker(pid, task_w, result_r)

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        """Queue ``fn(*args)``; returns its token (what :meth:`completed` names it by)."""
        token = self._next
        self._next += 1
        self._queue.append((token, fn, args))
        self._dispatch()
        return token

    def idle(self) -> int:
        """Workers with nothing to do (none while tasks wait in the queue)."""
        return 0 if self._queue else len(self._idle)

    def started(self, token: int) -> float | None:
        """When a worker got the task (``time.monotonic``); None while it waits or once it is done."""
        return self._started.get(token)

    def _dispatch(self) -> None:
        while self._idle and self._queue:
            worker = self._idle.popleft()
            token, fn, args = self._queue.popleft()
            worker.token = token
            self._started[token] = time.monotonic()
            try:
                _send(worker.tasks, (token, fn, args))
            except BrokenPipeError:
                raise WorkerDied(f"worker process {worker.pid} ended before it got a task ({_status(worker.pid)})") from None

    def completed(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
        """The tasks that finished since the last call, as ``(token, outcome)``,
        waiting up to ``timeout`` seconds (None: until one does) for the first.

        Raises:
            WorkerDied: a worker ended without answering.
        """
        if all(w.token is None for w in self._workers):
            return []
        done: list[tuple[int, Outcome]] = []
        for fd, _ in self._poll.poll(None if timeout is None else timeout * 1000):
            worker = self._by_fd[fd]
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise WorkerDied(f"worker process {worker.pid} ended while it was writing ({_status(worker.pid)})")
            worker.buffer += chunk
            for kind, token, value in self._messages(worker):
                if kind == _REPORT:
                    self._reports.append(value)
                    continue
                worker.token = None
                self._idle.append(worker)
                assert token is not None  # for the type checker: an answer names its task (a report has no task)
                seconds = time.monotonic() - self._started.pop(token)
                done.append((token, Outcome(value, seconds=seconds) if kind == _OK else Outcome(error=value, seconds=seconds)))
        self._dispatch()
        return done

    @staticmethod
    def _messages(worker: _Worker) -> Iterator[tuple[int, int | None, Any]]:
        buffer = worker.buffer
        while len(buffer) >= _LENGTH.size:
            end = _LENGTH.size + _LENGTH.unpack_from(buffer)[0]
            if len(buffer) < end:
                break
            message = pickle.loads(buffer[_LENGTH.size:end])
            del buffer[:end]
            yield message

    def reports(self) -> Iterator[Any]:
        """What the workers put on the progress channel, as :meth:`completed` read it."""
        reports, self._reports = self._reports, []
        yield from reports

    def kill(self) -> None:
        """Stop every worker now (their tasks are abandoned) and wait for them to be gone."""
        for worker in self._workers:
            try:
                os.kill(worker.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._close()

    def shutdown(self) -> None:
        """Let the workers finish and leave (they exit when their task pipe closes)."""
        self._close()

    def _close(self) -> None:
        """Close every pipe, then reap the workers."""
        for worker in self._workers:
            for fd in (worker.tasks, worker.results):
                try:
                    os.close(fd)
                except OSError:
                    pass
        for worker in self._workers:
            try:
                os.waitpid(worker.pid, 0)
            except ChildProcessError:
                pass
        self._workers = []

    def __enter__(self) -> ForkPool:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:
            self.kill()
        else:
            self.shutdown()


def _status(pid: int) -> str:
    """How a worker ended, for the error message (it is reaped here)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "exit status unknown"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"killed by signal {sig}{' (SIGKILL: out of memory?)' if sig == signal.SIGKILL else ''}"
    return f"exit status {os.WEXITSTATUS(status)}"
