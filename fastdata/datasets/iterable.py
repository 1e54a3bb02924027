"""Streaming (iterable) datasets: shards read front to back, split across
distributed ranks and DataLoader workers so each record is read once per epoch.

The order is a pure function of ``(seed, epoch)`` (see
:mod:`fastdata.datasets.partition`), shuffled further by a bounded buffer
driven by ``rng.worker_generator(seed, epoch, rank, worker)``; each sample's
transforms run under ``rng.sample_generator(seed, epoch, index)``, so an
augmentation depends on the sample, not on which worker read it. Nothing
reseeds a global generator.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch.utils.data

from .. import rng
from ..errors import ConfigError
from ._shared import SharedSlots
from .base import ShardLabels
from .imaging import Transform, build_item, normalize_label
from .partition import plan, rank_bounds
from .policy import DATA_ERRORS, SkipCounter, check_policy
from .shards import TF_IMAGE_KEY, TF_LABEL_KEY, TFClassNames, recordio_shards, tfrecord_shards
from .shardset import ShardSet
from .sources import PathArg

DEFAULT_SHUFFLE_BUFFER = 512

Record = tuple[int, int, int, Any, Any]  # (global index, shard, local index, bytes, label)


def resolve_world(rank: int | None, world_size: int | None) -> tuple[int, int]:
    """``(rank, world_size)``: as given, else from torch.distributed, else ``(0, 1)``.

    Raises:
        ConfigError: only one of the two given, or a launcher started several
            processes (``WORLD_SIZE > 1``) but no process group exists yet, so
            every rank would read the same samples.
    """
    if rank is not None and world_size is not None:
        if world_size < 1 or not 0 <= rank < world_size:
            raise ConfigError(f"rank {rank} is not in range for world_size {world_size}")
        return int(rank), int(world_size)
    if rank is not None or world_size is not None:
        raise ConfigError("pass both rank and world_size, or neither (then torch.distributed decides)")
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    launched = os.environ.get("WORLD_SIZE", "1")
    if launched.isdigit() and int(launched) > 1:
        raise ConfigError(
            f"WORLD_SIZE={launched} but torch.distributed is not initialized, so every rank would stream "
            "the same samples; call torch.distributed.init_process_group() before creating the dataset, "
            "or pass rank= and world_size="
        )
    return 0, 1


def shuffled(records: Iterator[Record], size: int, gen: np.random.Generator) -> Iterator[Record]:
    """Yield ``records`` through a buffer of at most ``size`` items, in random order."""
    buffer: list[Record] = []
    for record in records:
        if len(buffer) < size:
            buffer.append(record)
            continue
        j = int(gen.integers(size))
        buffer[j], record = record, buffer[j]
        yield record
    order = gen.permutation(len(buffer))
    for j in order:
        yield buffer[j]
    buffer.clear()


class ShardStream(ShardLabels, torch.utils.data.IterableDataset):
    """Base of the streaming datasets (not public API); see the module docstring.

    ``len(stream)`` is this rank's sample count per epoch (all its workers
    together). Call :meth:`set_epoch` before each epoch, as with
    ``DistributedSampler``; the value reaches persistent workers too.
    Under ``on_error="skip"/"warn"`` a corrupt sample is dropped (and counted
    in ``skipped``), so an epoch then yields fewer than ``len`` samples.
    """

    def __init__(
        self,
        shards: ShardSet,
        *,
        classes: Sequence[str] | None,
        transform: Transform | None,
        target_transform: Transform | None,
        decode: bool,
        on_error: str,
        seed: int,
        shuffle: bool,
        shuffle_buffer: int,
        rank: int | None,
        world_size: int | None,
        drop_last: bool,
    ) -> None:
        super().__init__()
        if shuffle_buffer < 0:
            raise ConfigError(f"shuffle_buffer must be >= 0, got {shuffle_buffer}")
        self.shards = shards
        self.transform = transform
        self.target_transform = target_transform
        self.decode = bool(decode)
        self.on_error = check_policy(on_error)
        self.seed = int(seed)
        self.shuffle = bool(shuffle)
        self.shuffle_buffer = int(shuffle_buffer)
        self.drop_last = bool(drop_last)
        self.rank, self.world_size = resolve_world(rank, world_size)
        self._explicit_world = rank is not None
        self._epoch = SharedSlots(1)
        self._skips = SkipCounter(on_error)
        self._classes = list(classes) if classes is not None else None
        self._targets = None

    @property
    def skipped(self) -> int:
        """Samples dropped under ``on_error="skip"/"warn"``, over this process and its workers."""
        return self._skips.total

    @property
    def epoch(self) -> int:
        return self._epoch[0]

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order the next iteration streams."""
        self._epoch[0] = int(epoch)

    @property
    def num_samples(self) -> int:
        """Samples in the whole dataset (all ranks)."""
        return len(self.shards)

    def __len__(self) -> int:
        lo, hi = rank_bounds(len(self.shards), self.rank, self.world_size, drop_last=self.drop_last)
        return hi - lo

    def plan(self, epoch: int, worker: int = 0, num_workers: int = 1) -> list[tuple[int, int, int]]:
        """The ``(shard, start, stop)`` ranges one worker of this rank reads in ``epoch``."""
        return plan(
            self.shards.counts,
            seed=self.seed,
            epoch=epoch,
            rank=self.rank,
            world_size=self.world_size,
            worker=worker,
            num_workers=num_workers,
            shuffle=self.shuffle,
            drop_last=self.drop_last,
        )

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        if info is None:
            self._check_world()
        epoch = self.epoch
        records = self._records(self.plan(epoch, worker, num_workers))
        if self.shuffle and self.shuffle_buffer > 1:
            gen = rng.worker_generator(self.seed, epoch, self.rank, worker)
            records = shuffled(records, self.shuffle_buffer, gen)
        # a per-sample generator costs ~50 us: only make one when a transform runs
        seeded = self.decode and (self.transform is not None or self.target_transform is not None)
        for index, shard, local, data, label in records:
            try:
                with rng.use(rng.sample_generator(self.seed, epoch, index)) if seeded else nullcontext():
                    item = build_item(
                        data,
                        normalize_label(label),
                        self.shards.name(shard, local),
                        decode=self.decode,
                        transform=self.transform,
                        target_transform=self.target_transform,
                    )
            except DATA_ERRORS as exc:
                if self.on_error == "raise":
                    raise
                self._skips.record(exc, "dropped from this epoch")
                continue
            yield item  # outside the rng scope: the consumer must not draw from this sample's generator

    def _records(self, segments: list[tuple[int, int, int]]) -> Iterator[Record]:
        starts = self.shards.starts
        for shard, begin, stop in segments:
            base = int(starts[shard])
            for local in range(begin, stop):
                try:
                    data, label = self.shards.read(shard, local)
                except DATA_ERRORS as exc:
                    if self.on_error == "raise":
                        raise
                    self._skips.record(exc, "dropped from this epoch")
                    continue
                yield base + local, shard, local, data, label

    def _check_world(self) -> None:
        if self._explicit_world:
            return
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() != self.world_size:
            raise ConfigError(
                f"this stream was created for world_size {self.world_size} but torch.distributed now has "
                f"{dist.get_world_size()} ranks; create the dataset after init_process_group()"
            )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.num_samples} samples in {len(self.shards.paths)} shards, "
            f"rank {self.rank}/{self.world_size}, epoch {self.epoch})"
        )


class RecordIOStream(ShardStream):
    """RecordIO shards streamed in order (see :class:`ShardStream`).

    Args:
        path: as for :class:`~fastdata.datasets.shards.RecordIODataset`.
        transform, target_transform, classes, decode, on_error: as there.
        seed: the same on every rank; fixes shard order, buffer shuffle and
            per-sample augmentation streams. Default 0.
        shuffle: False streams shards in order with no buffer (evaluation).
        shuffle_buffer: samples held (as encoded bytes) for shuffling; memory
            is about ``shuffle_buffer`` x the mean record size per worker.
        rank, world_size: this process's place; default from torch.distributed.
        drop_last: give every rank ``N // world_size`` samples.
    """

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
        seed: int = 0,
        shuffle: bool = True,
        shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
    ) -> None:
        shards, found = recordio_shards(path)
        super().__init__(
            shards,
            classes=classes if classes is not None else found,
            transform=transform,
            target_transform=target_transform,
            decode=decode,
            on_error=on_error,
            seed=seed,
            shuffle=shuffle,
            shuffle_buffer=shuffle_buffer,
            rank=rank,
            world_size=world_size,
            drop_last=drop_last,
        )


class TFRecordStream(TFClassNames, ShardStream):
    """TFRecord files streamed in order (see :class:`ShardStream` and
    :class:`RecordIOStream`; ``image_key``, ``label_key`` and ``label_base`` as
    for :class:`~fastdata.datasets.shards.TFRecordDataset`)."""

    def __init__(
        self,
        path: PathArg,
        transform: Transform | None = None,
        target_transform: Transform | None = None,
        *,
        image_key: str = TF_IMAGE_KEY,
        label_key: str = TF_LABEL_KEY,
        label_base: int | None = None,
        classes: Sequence[str] | None = None,
        decode: bool = True,
        on_error: str = "raise",
        seed: int = 0,
        shuffle: bool = True,
        shuffle_buffer: int = DEFAULT_SHUFFLE_BUFFER,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
    ) -> None:
        shards, found = tfrecord_shards(path, image_key=image_key, label_key=label_key, label_base=label_base)
        super().__init__(
            shards,
            classes=classes if classes is not None else found,
            transform=transform,
            target_transform=target_transform,
            decode=decode,
            on_error=on_error,
            seed=seed,
            shuffle=shuffle,
            shuffle_buffer=shuffle_buffer,
            rank=rank,
            world_size=world_size,
            drop_last=drop_last,
        )
