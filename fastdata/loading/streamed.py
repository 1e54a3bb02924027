"""A fastdata stream read in ``make_loader``'s order, so streams get the same
sharding, seeding, prefetch and mid-epoch resume as map-style datasets.

The order is :mod:`fastdata.order.partition`'s: this rank's share of the
epoch (padded to equal shares for training), its windows shuffled, dealt to
the DataLoader's workers one batch at a time round robin -- worker ``w``
builds batches ``w, w + num_workers, ...``, which is the order a DataLoader
takes them in. So batch ``i`` is the same for any ``num_workers``, and a
resumed epoch (:meth:`StreamFeed.set_unread`) reads what no rank read yet,
dealt to today's ranks, without reading what came before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch.utils.data

from ..datasets._shared import SharedSlots
from ..errors import ConfigError
from ..order.generators import Seeding
from ..order.partition import Deal, Remainder, Share
from ..order.ranks import Place
from ..order.unread import Unread

__all__ = ["StreamFeed", "is_stream"]

_EPOCH, _RESUMED = 0, 1


def is_stream(dataset: Any) -> bool:
    """Whether ``dataset`` is an iterable (stream) dataset."""
    return isinstance(dataset, torch.utils.data.IterableDataset)


class StreamFeed(torch.utils.data.IterableDataset):
    """What ``make_loader`` hands the DataLoader for a fastdata stream.

    The loader's order for a stream (:class:`~fastdata.order.progress.Order`,
    as :class:`~fastdata.loading.sampler.ShardedSampler` is for a map-style
    dataset); the epoch and whether it is resumed live in
    shared memory, so they reach persistent workers. The unread positions
    themselves do not: set them before the workers start (the loader stops
    persistent workers when it loads a state).
    """

    interleave = False  # ranks read contiguous runs

    def __init__(self, stream: Any, *, seed: int, place: Place, train: bool, batch_size: int,
                 seeding: Seeding) -> None:
        if not (callable(getattr(stream, "read", None)) and hasattr(stream, "shards")):
            raise ConfigError(
                f"make_loader reads fastdata's streams (open_dataset(path, streaming=True)); "
                f"{type(stream).__name__} is another IterableDataset, which splits itself across ranks and "
                "workers: use torch.utils.data.DataLoader(stream, batch_size=..., collate_fn=fastdata.fast_collate)"
            )
        self.stream, self.seed, self.train = stream, int(seed), bool(train)
        self.rank, self.world_size = place.rank, place.world_size
        self.batch_size, self.seeding = int(batch_size), seeding
        self._slots = SharedSlots(2)
        self.unread: Unread | None = None

    @property
    def length(self) -> int:
        """Samples in the whole dataset (all ranks)."""
        return len(self.stream.shards)

    @property
    def epoch(self) -> int:
        return self._slots[_EPOCH]

    def set_epoch(self, epoch: int) -> None:
        self._slots[_EPOCH] = int(epoch)

    @property
    def remainder(self) -> Remainder:
        return "pad" if self.train else "even"

    @property
    def window(self) -> int:
        """The stream's ``shuffle_buffer`` while training; 0 (no windows) otherwise."""
        return self.stream.shuffle_buffer if self.train else 0

    def set_unread(self, unread: Unread | None) -> None:
        """Read these positions of the epoch only (None: all of them), until set again."""
        self.unread = unread
        self._slots[_RESUMED] = unread is not None

    def share(self, whole: bool = True) -> Share:
        """This rank's share of the current epoch (``whole=False``: of what is unread)."""
        return Share(
            self.seed, self.epoch, self.rank, self.world_size, remainder=self.remainder,
            shuffle=self.train, window=self.window,
            unread=None if whole or not self._slots[_RESUMED] else self.unread,
        )

    def __len__(self) -> int:
        return self.share().size(self.length)

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        deal = Deal(worker, num_workers, unit=self.batch_size)
        return self.stream.read(self.share(whole=False), deal, seeding=self.seeding, reseed=True)

    def __repr__(self) -> str:
        return f"StreamFeed({self.stream!r}, seed={self.seed}, rank {self.rank}/{self.world_size}, train={self.train})"
