"""A fastdata stream read in ``make_loader``'s order, so streams get the same
sharding, seeding, prefetch and mid-epoch resume as map-style datasets.

The order is :mod:`fastdata.order.partition`'s: this rank's share of the
epoch (padded to equal shares for training), its windows shuffled, dealt to
the DataLoader's workers one batch at a time round robin -- worker ``w``
builds batches ``w, w + num_workers, ...``, which is the order a DataLoader
takes them in. So batch ``i`` is the same for any ``num_workers``, and a
resumed epoch starts at any batch without reading what came before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch.utils.data

from ..datasets._shared import SharedSlots
from ..errors import ConfigError
from ..order.generators import Seeding
from ..order.partition import Deal, Share
from ..order.ranks import Place

__all__ = ["StreamFeed", "is_stream"]

_EPOCH, _START = 0, 1


def is_stream(dataset: Any) -> bool:
    """Whether ``dataset`` is an iterable (stream) dataset."""
    return isinstance(dataset, torch.utils.data.IterableDataset)


class StreamFeed(torch.utils.data.IterableDataset):
    """What ``make_loader`` hands the DataLoader for a fastdata stream.

    Offers the sampler's interface to :class:`~fastdata.loading.loader.Loader`
    (``set_epoch``, ``set_start``, ``seed``, ``rank``, ``world_size``,
    ``length``, ``train``); epoch and start live in shared memory, so they
    reach persistent workers.
    """

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

    @property
    def length(self) -> int:
        """Samples in the whole dataset (all ranks)."""
        return len(self.stream.shards)

    @property
    def epoch(self) -> int:
        return self._slots[_EPOCH]

    def set_epoch(self, epoch: int) -> None:
        self._slots[_EPOCH] = int(epoch)

    def set_start(self, start: int) -> None:
        """Skip the first ``start`` samples of this rank's share in the next iteration."""
        if start < 0:
            raise ConfigError(f"start must be >= 0, got {start}")
        self._slots[_START] = int(start)

    def share(self) -> Share:
        """This rank's share of the current epoch."""
        return Share(
            self.seed, self.epoch, self.rank, self.world_size, remainder="pad" if self.train else "even",
            shuffle=self.train, window=self.stream.shuffle_buffer if self.train else 0,
        )

    def __len__(self) -> int:
        return self.share().size(self.length)

    def __iter__(self) -> Iterator[Any]:
        info = torch.utils.data.get_worker_info()
        worker, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        deal = Deal(worker, num_workers, unit=self.batch_size, start=self._slots[_START])
        return self.stream.read(self.share(), deal, seeding=self.seeding, reseed=True)

    def __repr__(self) -> str:
        return f"StreamFeed({self.stream!r}, seed={self.seed}, rank {self.rank}/{self.world_size}, train={self.train})"
