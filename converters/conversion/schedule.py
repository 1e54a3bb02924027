"""Handing a run's tasks to worker processes: whole shards first, then the
tail cut as workers come free (:mod:`.tail`), and a join for each cut shard
once all its pieces are written.

:class:`ShardScheduler` owns the bookkeeping of one parallel run: the tasks
in flight (by the pool's token), the pieces each cut shard has written so far,
and how fast this run's workers write. A finished shard (whole, or joined) is
handed to ``finish``; if the run stops (an error, Ctrl-C, a worker that
died) the files of every shard not finished are removed, so ``--resume``
writes them again.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from fastdata.errors import FastDataError

from ..output import state
from ..output.record import ShardRecord
from ..planning.layout import Plan, ShardPlan
from ..workers.parallel import worker_pool
from ..workers.pool import Outcome, Pool, WorkerDied
from .jobs import JobMaker
from .tail import Tail, Task
from .work import init_worker, join_pieces, write_shard_job

#: Called with each shard once its file has its final name: its record and its lines of ``sources.jsonl``.
Finish = Callable[[ShardPlan, ShardRecord, str], None]


@dataclasses.dataclass(frozen=True)
class _Written:
    """What a finished task sent back: its record and its lines of ``sources.jsonl``."""

    record: ShardRecord
    lines: str


@dataclasses.dataclass
class _CutShard:
    """A shard written in pieces: those finished so far (by piece number) and,
    once its last piece is handed out, how many it has."""

    shard: ShardPlan
    written: dict[int, _Written] = dataclasses.field(default_factory=dict)
    pieces: int | None = None

    def complete(self) -> bool:
        return len(self.written) == self.pieces

    def records(self) -> list[ShardRecord]:
        return [self.written[k].record for k in range(len(self.written))]

    def lines(self) -> str:
        return "".join(self.written[k].lines for k in range(len(self.written)))


@dataclasses.dataclass(frozen=True)
class _Joining:
    """A shard whose pieces are all written, being joined by a worker; ``records``
    and ``lines`` (of ``sources.jsonl``, joined) are the pieces'."""

    shard: ShardPlan
    records: list[ShardRecord]
    lines: str


class ShardScheduler:
    """One parallel run: ``whole`` shards (a few per worker queued at a time),
    then ``tail``'s tasks, each handed to a worker that is free."""

    def __init__(self, out: str, plan: Plan, shards: list[ShardPlan], *, whole: list[Task], tail: Tail,
                 jobs: JobMaker, finish: Finish, progress: Callable[[int, int], None] | None) -> None:
        self._out, self._plan, self._shards = out, plan, shards
        self._whole, self._tail, self._jobs = whole, tail, jobs
        self._finish, self._progress = finish, progress
        self._queued = 0  # of the whole shards
        self._running: dict[int, Task | _Joining] = {}  # by the pool's token
        self._cut: dict[str, _CutShard] = {}  # by shard key, until its join is handed out
        self._speed = _Speed()

    def run(self, workers: int, *, engine: str | None = None, ship: bool = False,
            source: tuple[str, str] | None = None) -> None:
        """Write every task on ``workers`` processes (or tasks of ``engine``, see
        :func:`.worker_pool`; with ``ship``, on nodes that hand the files back:
        :class:`..workers.shipping.ShippingPool`), reading ``source`` (see
        :func:`.work.use_source`).

        Raises:
            FastDataError: a worker process died (finished shards are kept).
        """
        if self._plan.options.restart_markers:  # imported once here rather than in every forked worker
            import fastdata.decode.native  # noqa: F401 -- loaded for the forked workers (above)
        try:
            pool = worker_pool(workers, init_worker, report=self._progress is not None, args=(self._shards, source),
                               engine=engine)
            if ship:
                from ..workers.shipping import ShippingPool

                pool = ShippingPool(pool)
            with pool:
                while self._hand_out(pool, workers):
                    self._collect(pool)
        except BaseException as exc:
            self._clear_unfinished()
            if not isinstance(exc, WorkerDied):
                raise
            raise FastDataError(
                f"a worker process died while converting into {self._out} ({exc}); it may have run out of memory. "
                "Finished shards are kept: run the same command with --resume (and fewer --workers)"
            ) from None

    def _hand_out(self, pool: Pool, workers: int) -> bool:
        """Submit what the workers can take now; False once nothing is left to wait for."""
        while self._queued < len(self._whole) and len(self._running) < 2 * workers:  # a plan may hold 100,000 shards
            self._submit(pool, self._whole[self._queued])
            self._queued += 1
        # the tail: cut when a worker is free for it, from what the others still have to do
        while self._queued == len(self._whole) and self._tail and pool.idle():
            loads = [self._speed.left(t, pool.started(k)) for k, t in self._running.items() if isinstance(t, Task)]
            self._submit(pool, self._tail.next_for(loads, pool.idle()))
        return bool(self._running)

    def _submit(self, pool: Pool, task: Task) -> None:
        self._running[pool.submit(write_shard_job, self._jobs.shard_job(task))] = task
        if task.pieces != 1:
            cut = self._cut.setdefault(task.shard.key, _CutShard(task.shard))
            if task.pieces > 1:  # its last piece: now their number is known
                cut.pieces = task.pieces

    def _collect(self, pool: Pool) -> None:
        """Wait for finished tasks (and pass the workers' progress on)."""
        finished = pool.completed(timeout=0.2 if self._progress else None)
        if self._progress is not None:
            for images, nbytes in pool.reports():
                self._progress(images, nbytes)
        for token, outcome in finished:
            self._finished(pool, self._running.pop(token), outcome)

    def _finished(self, pool: Pool, task: Task | _Joining, outcome: Outcome) -> None:
        if isinstance(task, _Joining):
            self._finish(task.shard, ShardRecord.joined(task.records, outcome.result()), task.lines)
            return
        written = _Written(*outcome.result())
        self._speed.add(task.size, outcome.seconds)
        if task.pieces == 1:
            self._finish(task.shard, written.record, written.lines)
            return
        cut = self._cut[task.shard.key]
        cut.written[task.piece] = written
        if cut.complete():  # joined by a worker: at the end, the last shards' joins run side by side
            del self._cut[task.shard.key]
            records = cut.records()
            self._running[pool.submit(join_pieces, self._jobs.join_job(task.shard, records))] = (
                _Joining(task.shard, records, cut.lines())
            )

    def _clear_unfinished(self) -> None:
        """Remove what the stopped workers left: every shard in flight (joins
        included) or with pieces written (a shard committed but not recorded is redone)."""
        unfinished = {t.shard.key: t.shard for t in self._running.values()}
        unfinished.update({key: cut.shard for key, cut in self._cut.items()})
        for shard in unfinished.values():
            state.clear_shard(self._out, self._plan, shard)


class _Speed:
    """Source bytes a worker writes per second, from this run's finished tasks."""

    def __init__(self) -> None:
        self.bytes = 0
        self.seconds = 0.0

    def add(self, nbytes: int, seconds: float) -> None:
        self.bytes += nbytes
        self.seconds += seconds

    def left(self, task: Task, started: float | None) -> float:
        """The bytes ``task`` still has to write, from how long it has run
        (all of them until a task has finished, or while it waits)."""
        if started is None or not self.seconds:
            return float(task.size)
        return max(0.0, task.size - (time.monotonic() - started) * self.bytes / self.seconds)
