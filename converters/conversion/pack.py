"""Filling planned shards: each worker writes whole shards (or pieces of one), this process records them.

A shard is one task (:mod:`.work`): the worker reads its files, prepares the
images and calls the format's ``write_shard``; what comes back is a small
record (:class:`.ShardRecord`: counts, normalisation reasons,
skipped files, ShardInfo). This
process only hands out tasks and, after a shard's file has its final name,
writes its done record (``--resume`` skips shards that have one). Its work is
per shard, not per image, so it never limits how many workers stay busy.
A shard's bytes depend only on the plan, so the output is the same for any
``--workers``.

Once the work left is less than a shard per worker, a shard of a format
that can ``join`` (records independent of their position: RecordIO,
TFRecord) is cut into pieces as workers come free (:mod:`.tail`); the
pieces are written apart, under ``OUT/.fastdata-state/pieces/``, and a
worker joins them (an in-kernel append, no re-read) into exactly the bytes
one writer would have written, while the others go on
(:class:`.schedule.ShardScheduler`; the jobs it sends are made by
:class:`.jobs.JobMaker`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from fastdata.formats import registry

from ..output import state
from ..output.record import ShardRecord
from ..planning.layout import Plan, ShardPlan
from .jobs import JobMaker
from .schedule import Finish, ShardScheduler
from .tail import MIN_PIECE_BYTES, Tail, Task, tail_start
from .work import use_source, write_shard_job


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How this process runs its share of a plan (none of it changes the output).

    Attributes:
        workers: processes that write shards (1 = in this process).
        on_error: ``"skip"`` records unreadable images and goes on; ``"raise"`` stops at the first.
        verify_decode: decode every pass-through JPEG instead of checking its
            structure only (see :mod:`.jpeg_check`); it can only add skips.
        fsync: wait for the disk before a shard is recorded as done and
            before the manifest (``--fsync``); otherwise ``--resume`` checks
            each done shard's digests instead (see :mod:`.state`).
        min_piece_bytes: the smallest piece a shard is cut into for balance
            (see :mod:`.tail`; hidden option ``--test-min-piece`` lets
            tests cut tiny shards).
        engine: ``"ray"`` or ``"spark"``: the workers are that engine's tasks
            (``--engine``, see :mod:`..workers.engines`); None: processes of this machine.
        ship: the engine's nodes do not see this machine's folders: its tasks
            write on their node and hand the files back (:mod:`..workers.shipping`).
        source: ``(listing folder, URL)``: the plan's files under the folder are
            the objects under the URL, read where the task runs (:func:`.work.use_source`).
    """

    workers: int = 1
    on_error: str = "skip"
    verify_decode: bool = False
    fsync: bool = False
    min_piece_bytes: int = MIN_PIECE_BYTES
    engine: str | None = None
    ship: bool = False
    source: tuple[str, str] | None = None


def write_shards(
    out: str,
    plan: Plan,
    shards: list[ShardPlan],
    run: RunOptions,
    progress: Callable[[int, int], None] | None = None,
    recorded: Finish | None = None,
    sources_root: str | None = None,
) -> dict[str, ShardRecord]:
    """Write ``shards`` (each from scratch), record each as done, and return
    their records by shard key.

    ``progress(images, source_bytes)``, when given, is called as images are
    written (every few dozen images per worker); ``recorded(shard, record, lines)``
    as each shard is recorded (while the workers go on with the others), with
    its lines of ``sources.jsonl`` (made by the workers from ``sources_root``,
    see :func:`.work.sources_lines`; given both or neither).

    Raises:
        SkippedFile: with ``on_error="raise"``, the first image that cannot be converted.
        FastDataError: a worker process died.
        ValueError: only one of ``recorded`` and ``sources_root`` is given.
    """
    if (recorded is None) != (sources_root is None):
        raise ValueError("write_shards: give recorded and sources_root both or neither")
    if not shards:
        return {}
    workers = min(run.workers, sum(len(s.items) for s in shards))
    joinable = registry.get(plan.options.format).join is not None
    cut = tail_start(shards, workers, joinable)
    if not joinable:  # LMDB's whole shards: no process without a task
        workers = min(workers, len(shards))
    done = _Done(out, plan, recorded)
    jobs = JobMaker(out, plan, shards, on_error=run.on_error, verify_decode=run.verify_decode, fsync=run.fsync,
                    sources_root=sources_root, by_position=workers > 1)
    whole = [Task(shard, 0, len(shard.items)) for shard in shards[:cut]]
    if workers <= 1 and not run.ship:  # tail_start gave no tail: every shard is whole
        use_source(run.source)
        try:
            for task in whole:
                done(task.shard, *write_shard_job(jobs.shard_job(task), progress))
        finally:
            use_source(None)
    else:
        ShardScheduler(out, plan, shards, whole=whole, tail=Tail(shards[cut:], run.min_piece_bytes), jobs=jobs,
                       finish=done, progress=progress).run(workers, engine=run.engine, ship=run.ship, source=run.source)
    return done.records


class _Done:
    """Records each finished shard as done (its done record; an all-skipped
    shard's files removed), tells ``recorded``, and keeps the records by shard key."""

    def __init__(self, out: str, plan: Plan, recorded: Finish | None) -> None:
        self._out, self._plan, self._recorded = out, plan, recorded
        self.records: dict[str, ShardRecord] = {}

    def __call__(self, shard: ShardPlan, record: ShardRecord, lines: str) -> None:
        if record.info is None:  # every image skipped: no empty shard (DALI's mxnet index cannot hold one)
            state.clear_shard(self._out, self._plan, shard)
        state.write_record(self._out, shard, record)
        if self._recorded is not None:
            self._recorded(shard, record, lines)
        self.records[shard.key] = record
