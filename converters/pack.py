"""Filling planned shards: each worker writes whole shards (or pieces of one), this process records them.

A shard is one task (:mod:`.work`): the worker reads its files, prepares the
images and calls the format's ``write_shard``; what comes back is a small
record (counts, normalisation reasons, skipped files, ShardInfo). This
process only hands out tasks and, after a shard's file has its final name,
writes its done record (``--resume`` skips shards that have one). Its work is
per shard, not per image, so it never limits how many workers stay busy.
A shard's bytes depend only on the plan, so the output is the same for any
``--workers``.

Whole shards alone leave workers idle at the end (7 shards on 2 workers: one
writes 4 while the other waits; on 16 cores, 9 of 16 wait all along). So
where the work left is less than a shard per worker, a shard of a format that
can ``join`` (records independent of their position: RecordIO, TFRecord) is
cut into pieces of about the work each worker has left (:func:`plan_tasks`);
the pieces are written apart, under ``OUT/.fastdata-state/pieces/``, and a
worker joins them (an in-kernel append, no re-read) into exactly the bytes
one writer would have written, while the others go on.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterator

from fastdata.errors import FastDataError
from fastdata.formats import registry

from . import state
from .normalize import EncodeOptions
from .forkpool import WorkerDied
from .parallel import worker_pool
from .plan import Plan, ShardPlan
from .work import ShardJob, init_worker, join_pieces, merge_records, write_shard_job

#: Smallest piece a shard is cut into: below it, a task's start and its share of the join cost more than the balance buys.
MIN_PIECE_BYTES = 4 << 20


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How this process runs its share of a plan (none of it changes the output).

    Attributes:
        workers: processes that write shards (1 = in this process).
        on_error: ``"skip"`` records unreadable images and goes on; ``"raise"`` stops at the first.
        test_delay: seconds slept per image: a test-only hook (hidden option
            ``--test-delay``) that makes a run slow enough to kill mid-way.
        verify_decode: decode every pass-through JPEG instead of checking its
            structure only (see :mod:`.jpeg_check`); it can only add skips.
        fsync: wait for the disk before a shard is recorded as done and
            before the manifest (``--fsync``); otherwise ``--resume`` checks
            each done shard's digests instead (see :mod:`.state`).
        min_piece_bytes: the smallest piece a shard is cut into for balance
            (see :func:`plan_tasks`; hidden option ``--test-min-piece`` lets
            tests cut tiny shards).
    """

    workers: int = 1
    on_error: str = "skip"
    test_delay: float = 0.0
    verify_decode: bool = False
    fsync: bool = False
    min_piece_bytes: int = MIN_PIECE_BYTES


@dataclasses.dataclass(frozen=True)
class Task:
    """Items ``start:stop`` of ``shard``: piece ``piece`` of ``pieces`` (1: the whole shard)."""

    shard: ShardPlan
    start: int
    stop: int
    piece: int = 0
    pieces: int = 1


def plan_tasks(shards: list[ShardPlan], workers: int, joinable: bool, min_piece_bytes: int = MIN_PIECE_BYTES) -> list[Task]:
    """The tasks that write ``shards``, in order: whole shards while there is
    more than a shard's worth of work per worker left, then each shard cut
    into pieces of about the work each worker has left (never below
    ``min_piece_bytes``, never more than ``workers`` pieces), so that the
    workers finish together. ``joinable`` False (or one worker): whole shards only."""
    sizes = [sum(item.size for item in shard.items) for shard in shards]
    left = sum(sizes)
    tasks: list[Task] = []
    for shard, size in zip(shards, sizes):
        share = left / max(workers, 1)
        left -= size
        count = 1
        if joinable and workers > 1 and size > share and len(shard.items) > 1:
            count = min(workers, len(shard.items), math.ceil(size / max(share, 1)), max(1, size // max(min_piece_bytes, 1)))
        bounds = _cut([item.size for item in shard.items], count)
        tasks += [Task(shard, a, b, k, len(bounds)) for k, (a, b) in enumerate(bounds)]
    return tasks


def _cut(sizes: list[int], count: int) -> list[tuple[int, int]]:
    """``count`` consecutive, non-empty ranges of ``sizes`` with about equal sums."""
    if count <= 1:
        return [(0, len(sizes))]
    total, bounds, start, acc = sum(sizes), [], 0, 0
    for i, size in enumerate(sizes):
        acc += size
        k = len(bounds) + 1
        if k < count and acc * count >= total * k and len(sizes) - (i + 1) >= count - k:
            bounds.append((start, i + 1))
            start = i + 1
    bounds.append((start, len(sizes)))
    return bounds


def write_shards(
    out: str,
    plan: Plan,
    shards: list[ShardPlan],
    run: RunOptions,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, dict]:
    """Write ``shards`` (each from scratch), record each as done, and return
    their records by shard key.

    ``progress(images, source_bytes)``, when given, is called as images are
    written (every few dozen images per worker).

    Raises:
        SkippedFile: with ``on_error="raise"``, the first image that cannot be converted.
        FastDataError: a worker process died.
    """
    if not shards:
        return {}
    workers = min(run.workers, sum(len(s.items) for s in shards))
    tasks = plan_tasks(shards, workers, registry.get(plan.options.format).join is not None, run.min_piece_bytes)
    workers = min(workers, len(tasks))  # LMDB's whole shards: no process without a task
    done: dict[str, dict] = {}
    if workers <= 1:
        for task in tasks:
            done[task.shard.key] = _record(out, plan, task.shard, write_shard_job(_job(out, plan, task, run), progress))
        return done
    if plan.options.restart_markers:  # imported once here rather than in every forked worker
        import fastdata.decode.native  # noqa: F401
    running: dict[int, Task | _Joining] = {}  # by the pool's token
    pieces: dict[str, list[dict | None]] = {}  # pieces written so far, by shard key, until the shard is joined
    try:
        position = {shard.key: n for n, shard in enumerate(shards)}
        with worker_pool(workers, init_worker, report=progress is not None, args=(shards,)) as pool:
            todo: Iterator[Task] = iter(tasks)
            while True:
                # a few tasks per worker queued: a plan may hold 100,000 shards
                for task in itertools.islice(todo, 2 * workers - len(running)):
                    job = _job(out, plan, task, run, position[task.shard.key])
                    running[pool.submit(write_shard_job, job)] = task
                if not running:
                    break
                finished = pool.completed(timeout=0.2 if progress else None)
                if progress is not None:
                    for images, nbytes in pool.reports():
                        progress(images, nbytes)
                for token, outcome in finished:
                    task = running.pop(token)
                    if isinstance(task, _Joining):
                        done[task.shard.key] = _record(out, plan, task.shard, merge_records(task.records, outcome.result()))
                        continue
                    record = outcome.result()
                    if task.pieces == 1:
                        done[task.shard.key] = _record(out, plan, task.shard, record)
                        continue
                    got = pieces.setdefault(task.shard.key, [None] * task.pieces)
                    got[task.piece] = record
                    if all(r is not None for r in got):
                        # joined by a worker: at the end, the last shards' joins run side by side
                        join = _join_args(out, plan, task.shard, got, run.fsync)
                        running[pool.submit(join_pieces, *join)] = _Joining(task.shard, got)
                        del pieces[task.shard.key]
    except BaseException as exc:
        unfinished = {t.shard.key: t.shard for t in running.values()}  # joins in flight included
        unfinished.update({s.key: s for s in shards if s.key in pieces})
        for shard in unfinished.values():  # what the killed workers left (a shard committed but not recorded is redone)
            state.clear_shard(out, plan, shard)
        if not isinstance(exc, WorkerDied):
            raise
        raise FastDataError(
            f"a worker process died while converting into {out} ({exc}); it may have run out of memory. "
            "Finished shards are kept: run the same command with --resume (and fewer --workers)"
        ) from None
    return done


def _job(out: str, plan: Plan, task: Task, run: RunOptions, position: int | None = None) -> ShardJob:
    """The job of ``task``; with ``position`` (the shard's place in what the
    workers got at start-up) it names its items instead of carrying them."""
    shard = task.shard
    if task.piece == 0:
        state.clear_shard(out, plan, shard)
    directory = plan.split_dir(out, shard.split) if task.pieces == 1 else state.piece_dir(out, shard, task.piece)
    directory.mkdir(parents=True, exist_ok=True)
    o = plan.options
    encode = EncodeOptions(resize=o.resize, quality=o.quality, reencode=o.reencode, verify_decode=run.verify_decode,
                           restart_markers=o.restart_markers)
    if position is None:
        items, ids, ref = shard.items[task.start:task.stop], shard.ids[task.start:task.stop], None
    else:
        items, ids, ref = None, None, (position, task.start, task.stop)
    return ShardJob(str(directory / shard.file), o.format, items, ids, plan.classes, encode, run.on_error,
                    run.test_delay, run.fsync, ref)


@dataclasses.dataclass(frozen=True)
class _Joining:
    """A shard whose pieces are all written, being joined by a worker; ``records`` are the pieces'."""

    shard: ShardPlan
    records: list[dict]


def _join_args(out: str, plan: Plan, shard: ShardPlan, records: list[dict], fsync: bool) -> tuple:
    """What :func:`.work.join_pieces` needs to join ``shard`` from its pieces."""
    directory = plan.split_dir(out, shard.split)
    directory.mkdir(parents=True, exist_ok=True)
    written = [(str(state.piece_dir(out, shard, k) / shard.file), r["info"]) for k, r in enumerate(records)]
    return plan.options.format, str(directory / shard.file), written, str(state.pieces_of(out, shard)), fsync


def _record(out: str, plan: Plan, shard: ShardPlan, record: dict) -> dict:
    if record["info"] is None:  # every image skipped: no empty shard (DALI's mxnet index cannot hold one)
        state.clear_shard(out, plan, shard)
    state.write_record(out, shard, record)
    return record
