"""How far a pass got: the unread positions left once every rank of a pass
took ``k`` batches, a pure function of the pass's set-up (see :mod:`.unread`).

All ranks agree on it without talking: each knows the pass's unread
positions, the world size and ``k`` (the same on every rank when they save
after the same step), and ranks read their part front to back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from .partition import Deal, Remainder, rank_deal, sequence_length
from .unread import Unread

__all__ = ["Order", "Pass", "unread_after"]


class Order(Protocol):
    """What a loader takes as its order: one rank's reading sequence over an
    epoch, which the loader moves to each epoch, limits to the unread
    positions of a resumed pass, and describes in its state.

    ``fastdata.loading.ShardedSampler`` (map-style: indices, ranks in turn)
    and ``StreamFeed`` (streams: shards, ranks in contiguous runs) are the two.
    """

    rank: int
    world_size: int
    seed: int
    train: bool

    @property
    def length(self) -> int:
        """Samples in the whole epoch (all ranks)."""
        ...

    @property
    def interleave(self) -> bool:
        """Ranks take the positions in turn (True) or in contiguous runs."""
        ...

    @property
    def remainder(self) -> Remainder: ...

    @property
    def window(self) -> int:
        """The shuffle window the state must match (0: no windows)."""
        ...

    def set_epoch(self, epoch: int) -> None: ...

    def set_unread(self, unread: Unread | None) -> None:
        """Read only these positions of the epoch (None: all), until set again."""
        ...

    def __len__(self) -> int:
        """Samples this rank reads in the current epoch."""
        ...


@dataclass(frozen=True)
class Pass:
    """How a pass deals its unread positions: ``world_size`` ranks,
    interleaved (map-style) or contiguous (streams), ``remainder`` as in
    :func:`.partition.sequence_length`, batches of ``batch_size`` per rank."""

    world_size: int
    interleave: bool
    remainder: Remainder
    batch_size: int
    drop_last: bool

    def batches(self, unread: Unread) -> list[int]:
        """Batches each rank yields in a pass over ``unread``."""
        length = sequence_length(len(unread), self.world_size, self.remainder)
        sizes = [self.deal(r).count(length) for r in range(self.world_size)]
        b = self.batch_size
        return [s // b if self.drop_last else -(-s // b) for s in sizes]

    def deal(self, rank: int) -> Deal:
        """Which positions of the pass's sequence ``rank`` reads."""
        return rank_deal(rank, self.world_size, self.interleave)


def unread_after(unread: Unread, plan: Pass, batches: int, total: int) -> Unread:
    """What is left of ``unread`` once every rank of a pass dealt as ``plan``
    took ``batches`` batches (fewer on a rank that has no more): empty when
    every rank's pass is over, though a drop_last or padding left some unread.

    Positions past the unread ones (training pads to a multiple of the world
    size) repeat the epoch's first positions, as :class:`.partition.Share`
    reads them; reading one there counts it as read.
    """
    per_rank = plan.batches(unread)
    if batches <= 0:
        return unread
    if batches >= max(per_rank):
        return Unread(())
    m, w = len(unread), plan.world_size
    length = sequence_length(m, w, plan.remainder)
    taken = [min(min(batches, n) * plan.batch_size, plan.deal(r).count(length)) for r, n in enumerate(per_rank)]
    if plan.interleave:  # rank r's first c positions are r, r + w, ...: a prefix and a few stragglers
        least = min(taken)
        index_spans = [(0, least * w)] + [(r + j * w, r + j * w + 1) for r, c in enumerate(taken)
                                          for j in range(least, c)]
    else:
        index_spans = [(r * length // w, r * length // w + c) for r, c in enumerate(taken)]
    read: list[tuple[int, int]] = []
    for a, b in index_spans:
        read += unread.between(a, min(b, m))
        if b > m:  # padding: positions (index - m) mod total
            first, count = (max(a, m) - m) % total, b - max(a, m)
            if count >= total:
                read.append((0, total))
            elif first + count <= total:
                read.append((first, first + count))
            else:
                read += [(first, total), (0, first + count - total)]
    return unread.without(read)
