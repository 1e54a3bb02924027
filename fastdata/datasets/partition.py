"""Which records each (rank, worker) streams in an epoch: pure functions.

The epoch's order is the shards permuted by ``(seed, epoch)`` and laid end to
end, rotated by a ``(seed, epoch)``-drawn offset. That sequence is cut into
``world_size`` contiguous rank ranges, and each rank range into ``num_workers``
worker ranges, at record granularity, so every record is read exactly once
per epoch even with fewer shards than readers, and each reader still reads
long sequential runs. Range sizes differ by at most one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError

Segment = tuple[int, int, int]  # (shard, first record, stop record)


def epoch_generator(seed: int, epoch: int) -> np.random.Generator:
    """The generator every rank uses for one epoch's shard order (same on all ranks)."""
    words = [int(seed) & 0xFFFFFFFFFFFFFFFF, int(epoch) & 0xFFFFFFFFFFFFFFFF, 0x5AD0]
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(words)))


def shard_order(num_shards: int, total: int, *, seed: int, epoch: int, shuffle: bool) -> tuple[np.ndarray, int]:
    """``(shard permutation, rotation offset)`` of one epoch."""
    if not shuffle:
        return np.arange(num_shards), 0
    gen = epoch_generator(seed, epoch)
    return gen.permutation(num_shards), int(gen.integers(total)) if total else 0


def rank_bounds(total: int, rank: int, world_size: int, *, drop_last: bool) -> tuple[int, int]:
    """``[start, stop)`` of ``rank`` in the epoch sequence of ``total`` records.

    ``drop_last`` gives every rank ``total // world_size`` records (ranks then
    take equal steps under DDP; the few left over change every epoch).
    """
    if world_size < 1 or not 0 <= rank < world_size:
        raise ConfigError(f"rank {rank} is not in range for world_size {world_size}")
    if drop_last:
        per = total // world_size
        return rank * per, (rank + 1) * per
    return rank * total // world_size, (rank + 1) * total // world_size


def plan(
    counts: Sequence[int],
    *,
    seed: int,
    epoch: int,
    rank: int = 0,
    world_size: int = 1,
    worker: int = 0,
    num_workers: int = 1,
    shuffle: bool = True,
    drop_last: bool = False,
) -> list[Segment]:
    """The ``(shard, start, stop)`` record ranges one worker of one rank reads, in order."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if num_workers < 1 or not 0 <= worker < num_workers:
        raise ConfigError(f"worker {worker} is not in range for num_workers {num_workers}")
    order, offset = shard_order(len(counts), total, seed=seed, epoch=epoch, shuffle=shuffle)
    lo, hi = rank_bounds(total, rank, world_size, drop_last=drop_last)
    size = hi - lo
    lo, hi = lo + worker * size // num_workers, lo + (worker + 1) * size // num_workers
    if hi <= lo:
        return []
    lo, hi = lo + offset, hi + offset
    pieces = [(lo, min(hi, total))] + ([(0, hi - total)] if hi > total else [])
    if lo >= total:
        pieces = [(lo - total, hi - total)]
    ends = np.cumsum(counts[order])
    segments: list[Segment] = []
    for a, b in pieces:
        k = int(np.searchsorted(ends, a, side="right"))
        while a < b:
            begin = int(ends[k] - counts[order[k]])
            stop = min(b, int(ends[k]))
            if stop > a:
                segments.append((int(order[k]), a - begin, stop - begin))
            a = stop
            k += 1
    return segments
