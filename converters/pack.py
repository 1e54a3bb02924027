"""Filling planned shards: each worker writes whole shards, this process records them.

A shard is one task (:mod:`.work`): the worker reads its files, prepares the
images and calls the format's ``write_shard``; what comes back is a small
record (counts, normalisation reasons, skipped files, ShardInfo). This
process only hands out shards and, after a shard's file has its final name,
writes its done record (``--resume`` skips shards that have one). Its work is
per shard, not per image, so it never limits how many workers stay busy.
A shard's bytes depend only on the plan, so the output is the same for any
``--workers``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool

from fastdata.errors import FastDataError

from . import state
from .normalize import EncodeOptions
from .parallel import worker_pool
from .plan import Plan, ShardPlan
from .work import ShardJob, init_worker, write_shard_job


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
    """

    workers: int = 1
    on_error: str = "skip"
    test_delay: float = 0.0
    verify_decode: bool = False
    fsync: bool = False


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
    jobs = (_job(out, plan, s, run) for s in shards)
    done: dict[str, dict] = {}
    workers = min(run.workers, len(shards))
    if workers <= 1:
        for shard, job in zip(shards, jobs):
            done[shard.key] = _record(out, plan, shard, write_shard_job(job, progress))
        return done
    if plan.options.restart_markers:  # imported once here rather than in every forked worker
        import fastdata.decode.native  # noqa: F401
    futures: dict[Future, ShardPlan] = {}
    try:
        with worker_pool(workers, init_worker, report=progress is not None) as pool:
            todo = iter(zip(shards, jobs))
            while True:
                # a few shards per worker in flight: wait() costs O(futures), and a plan may hold 100,000 shards
                for shard, job in itertools.islice(todo, 2 * workers - len(futures)):
                    futures[pool.submit(write_shard_job, job)] = shard
                if not futures:
                    break
                finished, _ = wait(futures, timeout=0.2 if progress else None, return_when=FIRST_COMPLETED)
                if progress is not None:
                    for images, nbytes in pool.reports():
                        progress(images, nbytes)
                for future in finished:
                    shard = futures.pop(future)
                    done[shard.key] = _record(out, plan, shard, future.result())
    except BaseException as exc:
        for shard in futures.values():  # what the killed workers left (a shard committed but not recorded is redone)
            state.clear_shard(out, plan, shard)
        if not isinstance(exc, BrokenProcessPool):
            raise
        raise FastDataError(
            f"a worker process died while converting into {out} ({exc}); it may have run out of memory. "
            "Finished shards are kept: run the same command with --resume (and fewer --workers)"
        ) from None
    return done


def _job(out: str, plan: Plan, shard: ShardPlan, run: RunOptions) -> ShardJob:
    state.clear_shard(out, plan, shard)
    directory = plan.split_dir(out, shard.split)
    directory.mkdir(parents=True, exist_ok=True)
    o = plan.options
    encode = EncodeOptions(resize=o.resize, quality=o.quality, reencode=o.reencode, verify_decode=run.verify_decode,
                           restart_markers=o.restart_markers)
    return ShardJob(str(directory / shard.file), o.format, shard.items, shard.ids, plan.classes, encode,
                    run.on_error, run.test_delay, run.fsync)


def _record(out: str, plan: Plan, shard: ShardPlan, record: dict) -> dict:
    if record["info"] is None:  # every image skipped: no empty shard (DALI's mxnet index cannot hold one)
        state.clear_shard(out, plan, shard)
    state.write_record(out, shard, record)
    return record
