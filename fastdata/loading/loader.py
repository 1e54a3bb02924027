"""``make_loader``: a torch DataLoader with fastdata's sampler, seeding,
collate and prefetcher, that advances its epoch and resumes mid-epoch."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import torch
from torch.utils.data import DataLoader

from ..errors import ConfigError
from .collate import FastCollate
from .distributed import Distributed, resolve_shard
from .keyed import KeyedDataset, SeedingMode
from .prefetch import CUDAPrefetcher
from .sampler import ShardedSampler
from .seeding import WorkerSeeder
from .state import LoaderState

__all__ = ["Loader", "make_loader"]


class Loader:
    """Iterable of ``(images, targets)`` batches built by :func:`make_loader`.

    Each ``iter()`` starts the next epoch by itself (the first is epoch 0, or
    what :meth:`set_epoch`/:meth:`load_state_dict` chose); an abandoned pass
    counts as an epoch. ``len()`` is this rank's batches per full epoch.
    """

    def __init__(self, dataloader: DataLoader, sampler: ShardedSampler, seeder: WorkerSeeder,
                 prefetcher: CUDAPrefetcher | None, *, dataset: Any, seeding: SeedingMode) -> None:
        self.dataloader, self.sampler, self.prefetcher = dataloader, sampler, prefetcher
        self.dataset, self.seeding, self._seeder = dataset, seeding, seeder
        self._epoch, self._consumed, self._running = 0, 0, False
        self._token: object | None = None
        self._active: Iterator[Any] | None = None

    @property
    def epoch(self) -> int:
        """The epoch of the pass in progress, or of the next one."""
        return self._epoch

    @property
    def batch_size(self) -> int:
        return int(self.dataloader.batch_size)  # type: ignore[arg-type]

    @property
    def rank(self) -> int:
        return self.sampler.rank

    @property
    def world_size(self) -> int:
        return self.sampler.world_size

    @property
    def seed(self) -> int:
        return self.sampler.seed

    def __len__(self) -> int:
        return len(self.dataloader)

    def set_epoch(self, epoch: int) -> None:
        """Make the next pass epoch ``epoch``, from its start."""
        self._epoch, self._consumed, self._running, self._token = int(epoch), 0, False, None

    def __iter__(self) -> Iterator[Any]:
        if self._running:  # the previous pass was abandoned: move on
            self._epoch, self._consumed = self._epoch + 1, 0
        epoch, skip = self._epoch, self._consumed
        self._running, token = True, object()
        self._token = token
        self.sampler.set_epoch(epoch)
        self.sampler.set_start(skip * self.batch_size)
        self._seeder.epoch = epoch  # read when this epoch's workers start
        self._active = self._count(iter(self.prefetcher if self.prefetcher is not None else self.dataloader), token)
        return self._active

    def _count(self, batches: Iterator[Any], token: object) -> Iterator[Any]:
        for batch in batches:
            if self._token is token:
                self._consumed += 1
            yield batch
        if self._token is token:
            self._epoch, self._consumed, self._running, self._token = self._epoch + 1, 0, False, None

    def _state(self, epoch: int, batches: int) -> LoaderState:
        s = self.sampler
        return LoaderState(
            epoch=epoch, batches=batches, seed=s.seed, rank=s.rank, world_size=s.world_size,
            batch_size=self.batch_size, dataset_length=s.length, train=s.train,
            drop_last=bool(self.dataloader.drop_last), seeding=self.seeding,
        )

    def state_dict(self) -> dict[str, Any]:
        """Position and settings: epoch, batches of it already handed out, seed, world size...

        Saved after the loop ends it points at the start of the next epoch.
        Exact resume needs ``seeding="sample"`` (the default).
        """
        return self._state(self._epoch, self._consumed).to_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue where ``state`` was taken: the next pass yields the rest of
        that epoch, in the same order with the same augmentation.

        Raises:
            ConfigError: a malformed state, or settings (world size, batch
                size, dataset length, train, drop_last, seeding) that differ.
        """
        saved = LoaderState.from_dict(state)
        saved.check_compatible(self._state(0, 0))
        if not 0 <= saved.batches <= len(self):
            raise ConfigError(f"loader state says {saved.batches} batches consumed of an epoch of {len(self)}")
        self.sampler.seed = self._seeder.seed = int(saved.seed)
        self.set_epoch(saved.epoch)
        self._consumed = int(saved.batches)

    def close(self) -> None:
        """End the current pass, release the prefetcher's stream and stop persistent workers.

        The position stays (``state_dict()`` still says where the pass
        stopped); iterating again starts the next epoch, as after any
        abandoned pass.
        """
        if self._active is not None:
            self._active.close()  # type: ignore[attr-defined]
            self._active = None
        if self.prefetcher is not None:
            self.prefetcher.close()
        workers = getattr(self.dataloader, "_iterator", None)
        if workers is not None and hasattr(workers, "_shutdown_workers"):
            workers._shutdown_workers()
            self.dataloader._iterator = None

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _default_workers() -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    per_node = os.environ.get("LOCAL_WORLD_SIZE", "1")
    return max(1, min(8, cpus // (int(per_node) if per_node.isdigit() and int(per_node) > 0 else 1)))


def make_loader(
    dataset: Any,
    batch_size: int,
    *,
    train: bool = True,
    num_workers: int | None = None,
    seed: int = 0,
    distributed: Distributed = "auto",
    seeding: SeedingMode = "sample",
    pin_memory: bool | Literal["auto"] = "auto",
    persistent_workers: bool | None = None,
    prefetch_factor: int | None = None,
    drop_last: bool | None = None,
    prefetch_to: str | torch.device | None = None,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    scale: float = 255.0,
    dtype: torch.dtype = torch.float32,
    memory_format: torch.memory_format = torch.contiguous_format,
    multiprocessing_context: str | None = None,
) -> Loader:
    """A resumable, seeded, rank-sharded loader of uint8 ``(images, targets)`` batches.

    Args:
        dataset: map-style dataset returning ``(image, target)`` (see ``fast_collate``).
        batch_size: samples per batch on this rank.
        train: shuffle and pad to equal shards (True) or read every sample once, in order.
        num_workers: worker processes; ``None`` = CPUs per local rank, at most 8.
        seed: fixes the order (with epoch, rank, world size) and the augmentation.
        distributed: ``"auto"``, True, False or ``(rank, world_size)``; see
            :func:`fastdata.loading.distributed.resolve_shard` (refuses training
            setups where ranks would read the same data).
        seeding: ``"sample"`` (augmentation per sample, the same for any
            ``num_workers`` and across a resume) or ``"worker"`` (per worker and epoch).
        pin_memory: ``"auto"`` = when CUDA is available and ``prefetch_to`` is not the CPU.
        persistent_workers: ``None`` = True when ``num_workers > 0``.
        prefetch_factor: batches each worker loads ahead (torch's default 2).
        drop_last: ``None`` = True for training, False for evaluation. In
            evaluation ranks may get one batch more than others (every sample
            is read exactly once): gather results after the loop, not per batch.
        prefetch_to: ``None`` (yield uint8 CPU batches), ``"cuda"``, a device, or
            ``"cpu"``: wrap in :class:`CUDAPrefetcher` with ``mean``, ``std``,
            ``scale`` (units: see there), ``dtype``.
        memory_format: layout of the collated batch (and the prefetcher's output).
        multiprocessing_context: ``"fork"``, ``"spawn"``, ``"forkserver"`` or None.

    Raises:
        ConfigError: bad arguments, or a distributed setup that would repeat data.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if isinstance(dataset, torch.utils.data.IterableDataset):
        raise ConfigError(
            f"make_loader takes a map-style dataset; {type(dataset).__name__} is a stream that splits itself "
            "across ranks and workers: use torch.utils.data.DataLoader(stream, batch_size=..., num_workers=..., "
            "collate_fn=fastdata.fast_collate) and call stream.set_epoch(epoch) before each epoch"
        )
    if prefetch_to is None and (mean is not None or std is not None):
        raise ConfigError("mean/std are applied by the prefetcher: pass prefetch_to='cuda' (or 'cpu')")
    rank, world_size = resolve_shard(distributed, train=train)
    workers = _default_workers() if num_workers is None else int(num_workers)
    target = None if prefetch_to is None else torch.device(prefetch_to)
    if pin_memory == "auto":
        pin_memory = torch.cuda.is_available() and (target is None or target.type == "cuda")
    sampler = ShardedSampler(len(dataset), seed=seed, rank=rank, world_size=world_size, train=train, keys=True)
    seeder = WorkerSeeder(seed, rank=rank)
    generator = torch.Generator()
    generator.manual_seed(int(seed) & 0x7FFFFFFFFFFFFFFF)  # torch's base seeds; keeps the global RNG untouched
    dataloader = DataLoader(
        KeyedDataset(dataset, seeding=seeding, rank=rank),
        batch_size=batch_size,
        sampler=sampler,
        num_workers=workers,
        collate_fn=FastCollate(memory_format=memory_format, pin_memory=bool(pin_memory) and workers == 0),
        pin_memory=bool(pin_memory),
        drop_last=train if drop_last is None else bool(drop_last),
        worker_init_fn=seeder if workers > 0 else None,
        persistent_workers=(workers > 0) if persistent_workers is None else bool(persistent_workers) and workers > 0,
        prefetch_factor=prefetch_factor if workers > 0 else None,
        multiprocessing_context=multiprocessing_context if workers > 0 else None,
        generator=generator,
    )
    prefetcher = None
    if target is not None:
        prefetcher = CUDAPrefetcher(dataloader, device=target, mean=mean, std=std, scale=scale, dtype=dtype,
                                    memory_format=memory_format)
    if len(dataloader) == 0:
        raise ConfigError(
            f"{len(dataset)} samples over {world_size} rank(s) give this rank {len(sampler)}, not one full "
            f"batch of {batch_size}: pass drop_last=False or a smaller batch_size"
        )
    return Loader(dataloader, sampler, seeder, prefetcher, dataset=dataset, seeding=seeding)
