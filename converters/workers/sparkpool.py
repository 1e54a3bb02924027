"""A :class:`.pool.Pool` whose workers are Spark tasks (``fastdata convert --engine spark``).

Each shard job is a one-task Spark job, started from a driver thread of its
own (Spark runs the jobs of several threads at once, one task per free
executor core); the plan's shard table is broadcast once and each Python
worker runs the pool's ``init`` once for it (:func:`.attempts.run_task`).
Spark retries a failed task (``spark.task.maxFailures``; in local mode give
it as ``local[N,F]``) and may run a slow one twice (speculation); each
attempt writes under a folder of its own (:mod:`.attempts`), so neither
leaves a duplicate or half-written file. A job that still fails raises
:class:`.pool.WorkerDied`, and ``fastdata convert`` stops without a manifest.

The output folder must be one every executor sees at the same path.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from typing import Any

from .attempts import job_folder, remove_attempts, run_task
from .pool import Outcome, TaskBook, WorkerDied


def _spark_task(cwd: str, init: Callable[..., None], key: str, table: Any, fn: Callable[..., Any],
                args: tuple) -> tuple[bool, Any]:
    return run_task(cwd, init, key, lambda: table.value, fn, args)


class SparkPool(TaskBook):
    """Shard jobs as Spark tasks of the active ``SparkSession`` (see
    :func:`.engines.connect`); at most ``workers`` at a time.

    ``report`` is accepted for the protocol's sake: :meth:`reports` gives nothing.
    """

    def __init__(self, workers: int, init: Callable[..., None], *, report: bool = False, args: tuple = ()) -> None:
        from concurrent.futures import ThreadPoolExecutor

        from pyspark.sql import SparkSession

        super().__init__(workers)
        session = SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()
        self._sc = session.sparkContext
        self._group = f"fastdata-{uuid.uuid4().hex}"
        self._init = init
        self._table = self._sc.broadcast(args)
        self._cwd = os.getcwd()
        self._threads = ThreadPoolExecutor(workers, thread_name_prefix="fastdata-spark")
        self._folders: set[str] = set()

    def _run(self, fn: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
        self._sc.setJobGroup(self._group, "fastdata convert: one shard", interruptOnCancel=True)
        cwd, init, key, table = self._cwd, self._init, self._group, self._table
        rdd = self._sc.parallelize([0], 1)
        return rdd.map(lambda _: _spark_task(cwd, init, key, table, fn, args)).collect()[0]

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        folder = job_folder(args)
        if folder is not None:
            self._folders.add(folder)
        return self._track(self._threads.submit(self._run, fn, args))

    def completed(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
        from concurrent.futures import FIRST_COMPLETED, wait

        if not self._running:
            return []
        finished, _ = wait(self._running, timeout=timeout, return_when=FIRST_COMPLETED)
        done = []
        for future in finished:
            token, seconds = self._finish(future)
            error = future.exception()
            if error is not None:  # the job failed spark.task.maxFailures times: a worker or executor died
                raise WorkerDied(f"a Spark task failed on every attempt: {_python_error(error)}")
            ok, value = future.result()
            done.append((token, Outcome.of_task(ok, value, seconds)))
        return done

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:
            self._sc.cancelJobGroup(self._group)
        self._threads.shutdown(wait=True, cancel_futures=kind is not None)
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
