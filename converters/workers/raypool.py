"""A :class:`.pool.Pool` whose workers are Ray tasks (``fastdata convert --engine ray``).

Each shard job is one Ray task, scheduled on whichever node of the cluster
has a CPU free; the plan's shard table travels once, through Ray's object
store, and each worker process runs the pool's ``init`` once for it
(:func:`.attempts.run_task`). Ray retries a task whose worker process died or
whose node left (:data:`RETRIES` times); each attempt writes under a folder of
its own (:mod:`.attempts`), so a retry never meets a half-written file of the
first. A task that still cannot finish raises :class:`.pool.WorkerDied`, and
``fastdata convert`` stops without a manifest, as it does when a local worker dies.

The output folder must be one every node sees at the same path (a shared
filesystem), as with ``--num-nodes``, unless the nodes hand their shards
back (a URL SRC or OUT on several machines: :mod:`.shipping`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .attempts import job_folder, remove_attempts, run_task
from .pool import Outcome, TaskBook, WorkerDied

#: How many times Ray runs a task again after its worker process or node died.
RETRIES = 3

_REMOTE: dict[str, Any] = {}


def _ray_task(cwd: str, init: Callable[..., None], box: list, fn: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
    import ray

    ref = box[0]  # in a list, so that Ray hands the reference over instead of the table, fetched once per process
    return run_task(cwd, init, ref.hex(), lambda: ray.get(ref), fn, args)


def _remote() -> Any:
    if "task" not in _REMOTE:
        import ray

        _REMOTE["task"] = ray.remote(num_cpus=1, max_retries=RETRIES)(_ray_task)
    return _REMOTE["task"]


class RayPool(TaskBook):
    """Shard jobs as Ray tasks on the cluster this process is connected to
    (see :func:`.engines.connect`); at most ``workers`` at a time.

    ``report`` is accepted for the protocol's sake: Ray tasks have no progress
    channel, so :meth:`reports` gives nothing and progress moves a shard at a time.
    """

    def __init__(self, workers: int, init: Callable[..., None], *, report: bool = False, args: tuple = ()) -> None:
        import ray

        super().__init__(workers)  # tasks by their ObjectRef
        self._ray = ray
        self._init = init
        self._box = [ray.put(args)]
        self._cwd = os.getcwd()
        self._folders: set[str] = set()

    def submit(self, fn: Callable[..., Any], *args: Any) -> int:
        folder = job_folder(args)
        if folder is not None:
            self._folders.add(folder)
        return self._track(_remote().remote(self._cwd, self._init, self._box, fn, args))

    def completed(self, timeout: float | None = None) -> list[tuple[int, Outcome]]:
        ray = self._ray
        if not self._running:
            return []
        ready, _ = ray.wait(list(self._running), num_returns=1, timeout=timeout)
        if ready:  # and whatever else finished meanwhile
            ready, _ = ray.wait(list(self._running), num_returns=len(self._running), timeout=0)
        done = []
        for ref in ready:
            token, seconds = self._finish(ref)
            try:
                ok, value = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:  # the task wrapper itself failed (it cannot import fastdata?)
                done.append((token, Outcome(error=exc, seconds=seconds)))
                continue
            except ray.exceptions.RayError as exc:  # worker or node gone, RETRIES times
                raise WorkerDied(f"a Ray task failed after {RETRIES} retries: {exc}") from None
            done.append((token, Outcome.of_task(ok, value, seconds)))
        return done

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is not None:
            for ref in list(self._running):
                try:
                    self._ray.cancel(ref, force=True)
                except Exception:  # noqa: BLE001 - finished or gone meanwhile
                    pass
            # a cancelled task dies at once; wait for it, so its attempt folder is not recreated after the sweep
            self._ray.wait(list(self._running), num_returns=len(self._running), timeout=10)
        self._running.clear()
        remove_attempts(self._folders)
