"""``make_loader``: a resumable, seeded, rank-sharded :class:`Loader` over a
map-style dataset or a fastdata stream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset

from ..errors import ConfigError
from ..order import seeds
from ..order.generators import Seeding
from ..order.ranks import Distributed, Place, from_distributed, resolve_place
from .decode_choice import DecodeChoice
from .executors import DecodeRequest, Executor, choose_executor
from .keyed import KeyedDataset
from .loader import Loader
from .sampler import ShardedSampler
from .seeding import WorkerSeeder
from .settings import Prefetch, Workers
from .streamed import StreamFeed, is_stream
from .threaded import ThreadedBatches

__all__ = ["make_loader"]


def _place(dataset: Any, rank: int | None, world_size: int | None, distributed: Distributed | None,
           train: bool) -> Place:
    if distributed is not None:
        if rank is not None or world_size is not None:
            raise ConfigError("pass rank=/world_size= or the older distributed=, not both")
        return from_distributed(distributed, train=train)
    if rank is None and world_size is None and is_stream(dataset) and hasattr(dataset, "place"):
        dataset.place.check_unchanged(type(dataset).__name__)  # found before init_process_group?
        return dataset.place  # the stream's own, resolved the same way when it was created
    return resolve_place(rank, world_size, train=train)


def _check_threads(dataset: Any, seeding: Seeding) -> None:
    if is_stream(dataset):
        raise ConfigError(
            "Workers(kind='threads') reads map-style datasets: open the dataset without streaming=True, "
            "or use worker processes (kind='processes') for a stream"
        )
    if seeding != "sample":
        raise ConfigError(
            "Workers(kind='threads') needs seeding='sample' (threads share one process, so there is no "
            "per-worker stream); pass seeding='sample' or use worker processes"
        )


def make_loader(
    dataset: Any,
    batch_size: int,
    *,
    train: bool = True,
    seed: int | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    workers: Workers | int | None = None,
    prefetch: Prefetch | None = None,
    collate_fn: Callable[[list[Any]], Any] | None = None,
    seeding: Seeding = "sample",
    drop_last: bool | None = None,
    distributed: Distributed | None = None,
    decode: DecodeChoice = "cpu",
    **dataloader_keywords: Any,
) -> Loader:
    """A resumable, seeded, rank-sharded loader of ``(images, targets)`` batches.

    Args:
        dataset: a map-style dataset returning ``(image, target)`` (see
            ``fast_collate``), or a fastdata stream
            (``open_dataset(path, streaming=True)``), which is then read in this
            loader's order (its seed, rank and shuffling; the stream keeps its
            records, transforms and ``shuffle_buffer``). A sample a stream
            drops under ``on_error="skip"`` shifts the rest of its worker's
            batches, which are then no longer those of any other run.
        batch_size: samples per batch on this rank.
        train: shuffle and pad to equal shares (True) or read every sample once, in order.
        seed: fixes the order (with epoch, rank, world size) and the
            augmentation; ``None`` = a stream's own seed, else 0.
        rank, world_size: this process's place; both unset = the process
            group's (a stream's own place when it was given one), else one
            rank. Refuses training set-ups whose ranks would read the same
            data (see :func:`fastdata.order.resolve_place`).
        workers: :class:`Workers` (count, threads or processes or "auto",
            persistence, prefetch factor, start method, pinning), or an int
            worker count.
        prefetch: :class:`Prefetch` to copy and normalise batches on a device
            (mean/std in 0-1 units); None yields uint8 CPU batches.
        collate_fn: replaces :class:`FastCollate` (raw bytes, detection
            targets...); with ``prefetch`` it must still return ``(uint8 images, targets)``.
        seeding: ``"sample"`` (augmentation per sample, the same for any
            ``num_workers`` and across a resume) or ``"worker"`` (per worker and epoch).
        drop_last: ``None`` = True for training, False for evaluation. In
            evaluation ranks may get one batch more than others (every sample
            is read exactly once): gather results after the loop, not per batch.
        distributed: the older spelling of the place: ``"auto"``, True,
            False or ``(rank, world_size)``; see :func:`fastdata.order.ranks.from_distributed`.
        decode: ``"cpu"`` (workers decode and augment), ``"cuda"`` (workers
            read bytes and draw the crops; the GPU decodes, crops and
            normalises each batch: :mod:`fastdata.gpu`), ``"auto"`` (with
            CUDA, the hybrid: a share of each batch, set online by the
            stage's timers, is cropped by the workers' compiled decoder and
            the rest decoded on the GPU; without CUDA, ``"cpu"``) or
            :class:`fastdata.gpu.GPUDecode` settings (``cpu_share=`` fixes the share). With
            a GPU decode, ``kind="auto"`` workers are processes: they only
            parse headers and draw crops, which holds the GIL.
        **dataloader_keywords: torch DataLoader's ``num_workers``,
            ``pin_memory``, ``persistent_workers``, ``prefetch_factor``,
            ``multiprocessing_context``, taken as they are for code moving
            from a DataLoader: they set the same-named :class:`Workers`
            fields on ``workers`` (:meth:`Workers.of`).

    Raises:
        ConfigError: bad arguments, a distributed set-up that would repeat
            data, or fewer samples on this rank than one batch.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if seeding not in ("sample", "worker"):
        raise ConfigError(f"seeding must be 'sample' or 'worker', got {seeding!r}")
    settings = Workers.of(workers, **dataloader_keywords)
    place = _place(dataset, rank, world_size, distributed, train)
    executor = choose_executor(decode, DecodeRequest(dataset, prefetch, collate_fn, seeding, place.rank))
    settings, described = settings.resolve(dataset, seeding, planning_only=executor.planning_only)
    if seed is None:
        seed = int(getattr(dataset, "seed", 0)) if is_stream(dataset) else 0
    if settings.threads:
        _check_threads(dataset, seeding)
    order, feed, sampler = _order_and_feed(dataset, executor, place, seed=seed, train=train, batch_size=batch_size,
                                           seeding=seeding)
    seeder = WorkerSeeder(seed, rank=place.rank)
    drop = train if drop_last is None else bool(drop_last)
    batches = _batches(executor, feed, sampler, settings, prefetch, batch_size=batch_size, drop_last=drop,
                       seeder=seeder, seed=seed)
    if len(batches) == 0:
        raise ConfigError(
            f"{order.length} samples over {place.world_size} rank(s) give this rank {len(order)}, not one full "
            f"batch of {batch_size}: pass drop_last=False or a smaller batch_size"
        )
    stage = executor.stage(batches, prefetch)  # the prefetcher, or the GPU decode's GPUBatches
    return Loader(batches, order, seeder, stage, dataset=dataset, seeding=seeding, workers=described)


def _order_and_feed(dataset: Any, executor: Executor, place: Place, *, seed: int, train: bool, batch_size: int,
                    seeding: Seeding) -> tuple[ShardedSampler | StreamFeed, Dataset, ShardedSampler | None]:
    """The sample order, what the workers read, and the sampler that hands them keys (None for a
    stream, which is its own order and feed)."""
    if is_stream(dataset):
        order = StreamFeed(dataset, seed=seed, place=place, train=train, batch_size=batch_size, seeding=seeding)
        return order, order, None
    sampler = ShardedSampler(len(dataset), seed=seed, rank=place.rank, world_size=place.world_size, train=train,
                             keys=True)
    return sampler, executor.feed(KeyedDataset(dataset, seeding=seeding, rank=place.rank)), sampler


def _batches(executor: Executor, feed: Any, sampler: ShardedSampler | None, settings: Workers,
             prefetch: Prefetch | None, *, batch_size: int, drop_last: bool, seeder: WorkerSeeder,
             seed: int) -> DataLoader | ThreadedBatches:
    """The workers: loader threads, or torch's DataLoader (processes or the main process)."""
    count, pinned = settings.count(), settings.pinned(prefetch)
    layout = prefetch.memory_format if prefetch is not None else torch.contiguous_format
    collate = executor.collate(memory_format=layout, pin=pinned and (count == 0 or settings.threads))
    if settings.threads:
        assert sampler is not None  # for the type checker: _check_threads refused a stream, which has none
        return ThreadedBatches(
            feed, batch_size=batch_size, sampler=sampler, collate_fn=collate, drop_last=drop_last, threads=count,
            prefetch_factor=settings.prefetch_factor or 2, persistent=settings.persistent, pin=pinned,
            batcher=executor.batches(feed, collate),
        )
    generator = torch.Generator()
    generator.manual_seed(seeds.global_seeds(seed)[2])  # torch's base seeds; the global RNG stays untouched
    return DataLoader(
        feed,
        batch_size=batch_size,
        sampler=sampler,
        collate_fn=collate,
        pin_memory=pinned,
        drop_last=drop_last,
        worker_init_fn=seeder if count > 0 else None,
        generator=generator,
        **settings.dataloader_options(),
    )
