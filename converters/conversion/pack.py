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
one writer would have written, while the others go on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

from fastdata.errors import FastDataError
from fastdata.formats import registry

from ..output import state
from ..output.record import ShardRecord
from ..planning.plan import Plan, ShardPlan
from ..workers.parallel import worker_pool
from ..workers.pool import WorkerDied
from .normalize import EncodeOptions
from .tail import MIN_PIECE_BYTES, Tail, Task, tail_start
from .work import ShardJob, init_worker, join_pieces, write_shard_job


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
            (see :mod:`.tail`; hidden option ``--test-min-piece`` lets
            tests cut tiny shards).
        engine: ``"ray"`` or ``"spark"``: the workers are that engine's tasks
            (``--engine``, see :mod:`..workers.engines`); None: processes of this machine.
    """

    workers: int = 1
    on_error: str = "skip"
    test_delay: float = 0.0
    verify_decode: bool = False
    fsync: bool = False
    min_piece_bytes: int = MIN_PIECE_BYTES
    engine: str | None = None


def write_shards(
    out: str,
    plan: Plan,
    shards: list[ShardPlan],
    run: RunOptions,
    progress: Callable[[int, int], None] | None = None,
    recorded: Callable[[ShardPlan, ShardRecord, str], None] | None = None,
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
    whole = [Task(shard, 0, len(shard.items)) for shard in shards[:cut]]
    tail = Tail(shards[cut:], run.min_piece_bytes)
    done: dict[str, ShardRecord] = {}
    made: set[Path] = set()
    present = state.present_names(out, plan, shards)

    def done_with(shard: ShardPlan, record: ShardRecord, lines: str) -> ShardRecord:
        _record(out, plan, shard, record)
        if recorded is not None:
            recorded(shard, record, lines)
        return record

    if workers <= 1:
        for task in whole:
            job = _job(out, plan, task, run, made=made, present=present, sources_root=sources_root)
            record, lines = write_shard_job(job, progress)
            done[task.shard.key] = done_with(task.shard, record, lines)
        return done
    if plan.options.restart_markers:  # imported once here rather than in every forked worker
        import fastdata.decode.native  # noqa: F401
    running: dict[int, Task | _Joining] = {}  # by the pool's token
    # the pieces written so far (their records and lines of sources.jsonl), by shard key, until it is joined
    pieces: dict[str, dict[int, tuple[ShardRecord, str]]] = {}
    count: dict[str, int] = {}  # how many pieces a shard has, once its last is handed out
    speed = _Speed()
    try:
        position = {shard.key: n for n, shard in enumerate(shards)}
        with worker_pool(workers, init_worker, report=progress is not None, args=(shards,), engine=run.engine) as pool:
            def submit(task: Task) -> None:
                job = _job(out, plan, task, run, position[task.shard.key], made, present, sources_root)
                running[pool.submit(write_shard_job, job)] = task
                if task.pieces > 1:
                    count[task.shard.key] = task.pieces

            queued = 0
            while True:
                # whole shards: a few per worker queued (a plan may hold 100,000 shards)
                while queued < len(whole) and len(running) < 2 * workers:
                    submit(whole[queued])
                    queued += 1
                # the tail: cut when a worker is free for it, from what the others still have to do
                while queued == len(whole) and tail and pool.idle():
                    loads = [speed.left(t, pool.started(k)) for k, t in running.items() if isinstance(t, Task)]
                    submit(tail.next_for(loads, pool.idle()))
                if not running:
                    break
                finished = pool.completed(timeout=0.2 if progress else None)
                if progress is not None:
                    for images, nbytes in pool.reports():
                        progress(images, nbytes)
                for token, outcome in finished:
                    task = running.pop(token)
                    if isinstance(task, _Joining):
                        record = ShardRecord.joined(task.records, outcome.result())
                        done[task.shard.key] = done_with(task.shard, record, task.lines)
                        continue
                    record, text = outcome.result()
                    speed.add(task.size, outcome.seconds)
                    if task.pieces == 1:
                        done[task.shard.key] = done_with(task.shard, record, text)
                        continue
                    got = pieces.setdefault(task.shard.key, {})
                    got[task.piece] = record, text
                    if len(got) == count.get(task.shard.key):
                        # joined by a worker: at the end, the last shards' joins run side by side
                        records, texts = zip(*(got[k] for k in range(len(got))))
                        join = _join_args(out, plan, task.shard, list(records), run.fsync)
                        running[pool.submit(join_pieces, *join)] = _Joining(task.shard, list(records), "".join(texts))
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


def _job(out: str, plan: Plan, task: Task, run: RunOptions, position: int | None = None,
         made: set[Path] | None = None, present: set[str] | None = None, sources_root: str | None = None) -> ShardJob:
    """The job of ``task``; with ``position`` (the shard's place in what the
    workers got at start-up) it names its items instead of carrying them.
    ``made``: the split folders made already (one ``mkdir`` each, not one a shard);
    ``present``: :func:`.state.present_names` before the first job;
    ``sources_root``: as :attr:`.work.ShardJob.sources_root`."""
    shard = task.shard
    if task.piece == 0:
        state.clear_shard(out, plan, shard, present)
    directory = plan.split_dir(out, shard.split) if task.pieces == 1 else state.piece_dir(out, shard, task.piece)
    if made is None or directory not in made:
        directory.mkdir(parents=True, exist_ok=True)
        if made is not None and task.pieces == 1:  # a piece's folder is removed once it is joined
            made.add(directory)
    o = plan.options
    encode = EncodeOptions(resize=o.resize, quality=o.quality, reencode=o.reencode, verify_decode=run.verify_decode,
                           restart_markers=o.restart_markers)
    if position is None:
        items, ids, ref = shard.items[task.start:task.stop], shard.ids[task.start:task.stop], None
    else:
        items, ids, ref = None, None, (position, task.start, task.stop)
    return ShardJob(str(directory / shard.file), o.format, items, ids, plan.classes, encode, run.on_error,
                    run.test_delay, run.fsync, ref, sources_root)


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


@dataclasses.dataclass(frozen=True)
class _Joining:
    """A shard whose pieces are all written, being joined by a worker; ``records``
    and ``lines`` (of ``sources.jsonl``, joined) are the pieces'."""

    shard: ShardPlan
    records: list[ShardRecord]
    lines: str


def _join_args(out: str, plan: Plan, shard: ShardPlan, records: list[ShardRecord], fsync: bool) -> tuple:
    """What :func:`.work.join_pieces` needs to join ``shard`` from its pieces."""
    directory = plan.split_dir(out, shard.split)
    directory.mkdir(parents=True, exist_ok=True)
    written = [(str(state.piece_dir(out, shard, k) / shard.file), r.info) for k, r in enumerate(records)]
    return plan.options.format, str(directory / shard.file), written, str(state.pieces_of(out, shard)), fsync


def _record(out: str, plan: Plan, shard: ShardPlan, record: ShardRecord) -> ShardRecord:
    if record.info is None:  # every image skipped: no empty shard (DALI's mxnet index cannot hold one)
        state.clear_shard(out, plan, shard)
    state.write_record(out, shard, record)
    return record
