"""Which samples each rank reads in each epoch, as a torch ``Sampler``: the
scheme of :mod:`fastdata.order.partition` with one record per block.

Train (``train=True``): the epoch's permutation is padded by wrapping around
to a multiple of ``world_size`` and dealt out round-robin, so every
rank gets ``ceil(n / world_size)`` samples and the same number of batches --
no DDP hang on an uneven last batch. At most ``world_size - 1`` samples are
read twice per epoch (the first ones of the permutation, so different ones
each epoch); none is dropped. Eval (``train=False``): every sample exactly
once across ranks, no padding, so ranks' lengths may differ by one sample
(and their batch counts by one): gather metrics after the loop, do not run a
collective per batch.

A resumed epoch (:meth:`ShardedSampler.set_unread`) deals what no rank has
read yet the same way, to however many ranks there are now.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from torch.utils.data import Sampler

from ..errors import ConfigError
from ..order.generators import SampleKey
from ..order.partition import Remainder, Share
from ..order.unread import Unread

__all__ = ["ShardedSampler"]


class ShardedSampler(Sampler):
    """Shuffled, rank-sharded, epoch-aware sampler (DistributedSampler's job, resumable).

    Args:
        length: dataset size (> 0).
        seed: base seed; the order depends on ``(seed, epoch)`` only.
        rank, world_size: this process's place (``0 <= rank < world_size``).
        train: pad to equal shares and shuffle (True) or read each sample
            once, in order (False); see the module doc.
        shuffle: override the shuffling ``train`` implies.
        keys: yield :class:`fastdata.rng.SampleKey` ``(index, seed, epoch)``
            for per-sample seeded augmentation (the dataset must accept them,
            e.g. through ``make_loader``'s adapter), or plain ints.

    Call :meth:`set_epoch` before each epoch; :meth:`set_unread` limits
    iterations to what an interrupted epoch left (elastic resume);
    :meth:`set_start` skips the first samples of the next iteration only.
    """

    interleave = True  # ranks take the epoch's positions in turn
    window = 0  # one record per block, no windows

    def __init__(
        self,
        length: int,
        *,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        train: bool = True,
        shuffle: bool | None = None,
        keys: bool = True,
        epoch: int = 0,
    ) -> None:
        if length <= 0:
            raise ConfigError(f"cannot sample from an empty dataset (length {length})")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ConfigError(f"need 0 <= rank < world_size, got rank={rank}, world_size={world_size}")
        self.length, self.seed, self.rank, self.world_size = int(length), int(seed), int(rank), int(world_size)
        self.train, self.shuffle, self.keys = bool(train), shuffle, bool(keys)
        self.epoch = int(epoch)
        self._start = 0
        self.unread: Unread | None = None

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch the next iteration yields."""
        self.epoch = int(epoch)

    @property
    def remainder(self) -> Remainder:
        return "pad" if self.train else "even"

    def set_unread(self, unread: Unread | None) -> None:
        """Iterate over these positions of the epoch only (None: all of them), until set again."""
        self.unread = unread

    def set_start(self, start: int) -> None:
        """Skip the first ``start`` samples of this rank's share, in the next iteration only."""
        if start < 0:
            raise ConfigError(f"start must be >= 0, got {start}")
        self._start = int(start)

    def share(self) -> Share:
        """This rank's share of the current epoch."""
        return self.share_of(self.epoch)

    def share_of(self, epoch: int, unread: Unread | None = None) -> Share:
        """This rank's share of ``epoch`` (of its ``unread`` positions; None: all)."""
        return Share(
            self.seed, epoch, self.rank, self.world_size, remainder=self.remainder,
            shuffle=self.train if self.shuffle is None else self.shuffle, interleave=self.interleave, unread=unread,
        )

    def indices(self) -> np.ndarray:
        """This rank's full share for the current epoch."""
        return self.share().records(total=self.length)

    def __len__(self) -> int:
        """Samples in this rank's full share (a resumed epoch yields fewer)."""
        return self.share().size(self.length)

    def __iter__(self) -> Iterator[SampleKey | int]:
        start, self._start = self._start, 0
        chosen = self.share_of(self.epoch, self.unread).records(total=self.length)[start:].tolist()
        if self.keys:
            seed, epoch = self.seed, self.epoch
            return (SampleKey(i, seed, epoch) for i in chosen)  # lazily: a million keys cost ~0.5 s
        return iter(chosen)
