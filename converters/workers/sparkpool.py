"""A :class:`.pool.Pool` whose workers are Spark tasks (``fastdata convert --engine spark``).

One Spark job of ``workers`` tasks, each a long-lived worker: it connects
back to the driver (a ``multiprocessing`` connection with a random key, on
``spark.driver.host``), runs the pool's ``init`` once (:func:`.attempts.run_task`;
the plan's shard table is broadcast once) and then the shard jobs the
driver sends it, one after another, until told to stop. A Spark job per
shard cost about 0.15 s of scheduling each (measured on 2 cores, where that
is CPU taken from the work); the jobs sent over the connection cost a
round trip.

Faults: a worker that dies (its connection drops) has its shard job put
back in the queue, and Spark retries its task (``spark.task.maxFailures``;
in local mode ``local[N,F]``), which connects again; a speculative copy of
a task is one more worker. Each attempt of a shard writes under a folder of
its own (:mod:`.attempts`), so neither leaves a duplicate or half-written
file. A Spark job that fails (a task failed on every attempt) raises
:class:`.pool.WorkerDied`, and ``fastdata convert`` stops without a manifest.

The output folder must be one every executor sees at the same path.
"""

from __future__ import annotations

import os
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from .attempts import job_folder, remove_attempts, run_task
from .pool import Outcome, TaskBook, WorkerDied


def _spark_task(cwd: str, init: Callable[..., None], key: str, table: Any, fn: Callable[..., Any],
                args: tuple) -> tuple[bool, Any]:
    """One shard job inside a worker task (the tests replace it to inject faults)."""
    return run_task(cwd, init, key, lambda: table.value, fn, args)


def _serve(address: Any, secret: bytes, run: Callable[[Callable[..., Any], tuple], tuple[bool, Any]]) -> int:
    """A worker task's loop: run each ``(fn, args)`` the driver sends until it
    sends None; returns how many it ran."""
    from multiprocessing.connection import Client

    ran = 0
    with Client(address, authkey=secret) as conn:
        while (item := conn.recv()) is not None:
            start = time.monotonic()
            ok, value = run(*item)
            seconds = time.monotonic() - start
            try:
                conn.send((ok, value, seconds))
            except Exception as exc:  # noqa: BLE001 - a value or error pickle cannot carry: say what it was
                conn.send((False, RuntimeError(f"a shard job's {'result' if ok else 'error'} could not be sent back "
                                               f"to the driver: {type(exc).__name__}: {exc}; it was {value!r:.300}"),
                           seconds))
            ran += 1
    return ran


class SparkPool(TaskBook):
    """Shard jobs run by ``workers`` worker tasks of the active ``SparkSession``
    (see :func:`.engines.connect`).

    ``report`` is accepted for the protocol's sake: :meth:`reports` gives nothing.
    """

    def __init__(self, workers: int, init: Callable[..., None], *, report: bool = False, args: tuple = ()) -> None:
        from multiprocessing.connection import Listener

        from pyspark.sql import SparkSession

        super().__init__(workers)
        session = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        self._sc = session.sparkContext
        self._group = f"fastdata-{uuid.uuid4().hex}"
        self._init = init
        self._table = self._sc.broadcast(args)
        self._cwd = os.getcwd()
        self._folders: set[str] = set()
        self._handles: dict[int, object] = {}
        self._jobs: queue.Queue = queue.Queue()  # (token, fn, args); None: stop
        self._done: queue.Queue = queue.Queue()  # (token, ok, value, seconds); (None, error): the Spark job failed
        self._secret = os.urandom(32)
        self._listener = Listener((self._sc.getConf().get("spark.driver.host", "127.0.0.1"), 0), authkey=self._secret)
        self._stopping = self._closed = False
        threading.Thread(target=self._accept, name="fastdata-spark-accept", daemon=True).start()
        self._spark_job = threading.Thread(target=self._run_workers, name="fastdata-spark-job", daemon=True)
        self._spark_job.start()

    def _run_workers(self) -> None:
        address, secret, hook = self._listener.address, self._secret, _spark_task
        cwd, init, key, table = self._cwd, self._init, self._group, self._table

        def worker(_k: int, _rows: Any) -> list[int]:
            return [_serve(address, secret, lambda fn, args: hook(cwd, init, key, table, fn, args))]

        self._sc.setJobGroup(self._group, "fastdata convert: shard writers", interruptOnCancel=True)
        try:
            self._sc.parallelize(range(self._workers), self._workers).mapPartitionsWithIndex(worker).collect()
        except Exception as exc:  # noqa: BLE001 - handed to the thread that waits for outcomes
            if not self._stopping:
                self._done.put((None, exc))

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn = self._listener.accept()
            except Exception:  # noqa: BLE001 - a caller without the key (refused), or the wake-up of __exit__
                continue
            if self._closed:
                conn.close()
                return
            threading.Thread(target=self._feed, args=(conn,), name="fastdata-spark-feed", daemon=True).start()

    def _close_listener(self) -> None:
        """Stop accepting: closing a socket does not wake a thread blocked in
        ``accept`` on Linux, so connect once (refused: no key) first."""
        import socket

        self._closed = True
        try:
            socket.create_connection(self._listener.address, timeout=5).close()
        except OSError:
            pass
        self._listener.close()

    def _feed(self, conn: Any) -> None:
        """Send one worker its jobs; a job whose worker dies goes back in the queue."""
        with conn:
            while True:
                item = self._jobs.get()
                if item is None:
                    self._jobs.put(None)  # for the other workers
                    conn.send(None)
                    return
                token, fn, args = item
                try:
                    conn.send((fn, args))
                    ok, value, seconds = conn.recv()
                except (EOFError, OSError):  # the worker died: Spark retries its task, which connects again
                    self._jobs.put(item)
                    return
                self._done.put((token, ok, value, seconds))

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        folder = job_folder(args)
        if folder is not None:
            self._folders.add(folder)
        handle = object()
        token = self._track(handle)
        self._handles[token] = handle
        self._jobs.put((token, fn, args))
        return token

    def completed(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
        if not self._running:
            return []
        try:
            answers = [self._done.get(timeout=timeout)]
        except queue.Empty:
            return []
        while not self._done.empty():
            answers.append(self._done.get_nowait())
        done = []
        for token, *rest in answers:
            if token is None:  # a task failed spark.task.maxFailures times: a worker or executor died
                raise WorkerDied(f"a Spark task failed on every attempt: {_python_error(rest[0])}")
            ok, value, seconds = rest
            self._finish(self._handles.pop(token))
            done.append((token, Outcome.of_task(ok, value, seconds)))
        return done

    def __exit__(self, kind: object, *exc: object) -> None:
        self._stopping = kind is not None
        self._jobs.put(None)
        if kind is not None:
            self._sc.cancelJobGroup(self._group)
        self._spark_job.join()
        self._close_listener()
        self._running.clear()
        self._table.unpersist()
        remove_attempts(self._folders)


def _python_error(error: BaseException) -> str:
    """The Python error at the end of the traceback a Spark job failure carries
    (its text is the Python traceback, then the JVM's stack)."""
    lines = []
    for line in str(error).splitlines():
        if line.startswith("\tat ") or line.lstrip().startswith("at org."):
            break
        if line.strip():
            lines.append(line.strip())
    found = [line for line in lines if not line.startswith(("File ", "^", "SQLSTATE"))]
    return (found[-1] if found else type(error).__name__)[:500]
