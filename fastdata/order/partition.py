"""Which records each reader reads in an epoch, in order: one scheme for
map-style sampling and for streams, a pure function of its inputs.

1. The epoch sequence. Records sit in blocks -- a stream's shards; for
   map-style sampling each record is its own block. Blocks are permuted by
   ``(seed, epoch)`` and laid end to end, starting at a ``(seed, epoch)``-drawn
   record of the first non-empty block (so with one large shard, rank
   boundaries still move between epochs; a one-record block has one start
   only). Unshuffled: file order.
2. Windows (streams, shuffled): the sequence is cut into windows of
   ``window`` positions, each permuted by ``(seed, epoch)``. This is the
   reading sequence: its positions are what ranks are dealt and what a
   resume counts (:mod:`.unread`), the same for any world size. A reader
   holds one window at most, and a position's record does not depend on what
   was read before, so a reader can start anywhere without replaying.
3. The rank's part. A pass reads the positions not yet read (``unread``:
   all of them, unless the epoch is resumed), laid end to end. ``remainder``
   fixes how many: ``"even"`` (each once, ranks' sizes differ by at most
   one), ``"pad"`` (rounded up to a multiple of ``world_size`` by repeating
   the epoch's first positions: at most ``world_size - 1`` records read
   twice, different ones each epoch) or ``"drop"`` (rounded down). They are
   dealt to the ranks -- as contiguous ranges (streams: long sequential
   reads) or, with ``interleave``, one each in turn (map-style: each rank's
   part spans the whole epoch).
4. The rank's part is dealt to ``num_workers`` readers the same way
   (:class:`Deal`): as contiguous parts, or round robin in units of
   ``unit`` records. With ``unit`` = the batch size, worker ``w`` builds
   batches ``w, w + num_workers, ...`` -- the ones a DataLoader takes from
   it -- so batches come in sequence order for any number of workers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ConfigError
from . import seeds
from .unread import Unread

__all__ = ["Deal", "Remainder", "Share", "epoch_order", "sequence_length"]

Remainder = Literal["even", "pad", "drop"]
_READ_AHEAD = 256  # records read in one sorted pass when nothing is shuffled


def epoch_order(length: int, seed: int, epoch: int, *, shuffle: bool = True) -> np.ndarray:
    """The order of ``length`` blocks in one epoch (int64, a permutation of ``range(length)``)."""
    if not shuffle:
        return np.arange(length, dtype=np.int64)
    return seeds.epoch_permutation(length, seed, epoch)


def sequence_length(total: int, world_size: int, remainder: Remainder) -> int:
    """Positions in an epoch sequence of ``total`` records dealt to ``world_size`` ranks."""
    if remainder == "even":
        return total
    if remainder == "pad":
        return -(-total // world_size) * world_size
    if remainder == "drop":
        return total // world_size * world_size
    raise ConfigError(f"remainder must be 'even', 'pad' or 'drop', got {remainder!r}")


@dataclass(frozen=True)
class Deal:
    """Which positions of a sequence one of ``num_workers`` takers gets.

    ``unit=None``: balanced contiguous parts (sizes differ by at most one);
    ``unit=n``: runs of ``n`` positions round robin. Positions before
    ``start`` are skipped (a resumed epoch).
    """

    worker: int = 0
    num_workers: int = 1
    unit: int | None = None
    start: int = 0

    def __post_init__(self) -> None:
        if self.num_workers < 1 or not 0 <= self.worker < self.num_workers:
            raise ConfigError(f"need 0 <= worker < num_workers, got worker={self.worker}, num_workers={self.num_workers}")
        if (self.unit is not None and self.unit < 1) or self.start < 0:
            raise ConfigError(f"need unit >= 1 and start >= 0, got unit={self.unit}, start={self.start}")

    def count(self, length: int) -> int:
        """``len(self.positions(length))``, without building it."""
        n, k, w = max(length - self.start, 0), self.num_workers, self.worker
        if self.unit is None:
            return (w + 1) * n // k - w * n // k
        u = self.unit
        return n // (u * k) * u + min(max(n % (u * k) - w * u, 0), u)

    def positions(self, length: int) -> np.ndarray:
        """This taker's positions in a sequence of ``length``, ascending (int64)."""
        start, k, w = min(self.start, length), self.num_workers, self.worker
        if self.unit is None:
            n = length - start
            return np.arange(start + w * n // k, start + (w + 1) * n // k, dtype=np.int64)
        firsts = np.arange(start + w * self.unit, length, k * self.unit, dtype=np.int64)
        taken = (firsts[:, None] + np.arange(self.unit, dtype=np.int64)).ravel()
        return taken[taken < length]

    def chunks(self, length: int, window: int, groups: np.ndarray | None = None) -> Iterator[np.ndarray]:
        """:meth:`positions` in the groups a reader reads at once: its
        positions within one window (or ``_READ_AHEAD`` of them unshuffled),
        or, given each position's group (:meth:`Share.reading`), within one group."""
        mine = self.positions(length)
        group = groups[mine] if groups is not None else mine // (window if window > 1 else _READ_AHEAD)
        cuts = np.flatnonzero(np.diff(group)) + 1
        yield from (chunk for chunk in np.split(mine, cuts) if len(chunk))


def rank_deal(rank: int, world_size: int, interleave: bool) -> Deal:
    """Which positions of a pass's sequence ``rank`` reads: one each in turn
    (``interleave``, map-style) or a contiguous range (streams)."""
    return Deal(rank, world_size, unit=1 if interleave else None)


@dataclass(frozen=True)
class Share:
    """One rank's part of one epoch, or of what is left of it (``unread``:
    positions of the reading sequence; None = all); see the module doc.
    :meth:`records` gives it for concrete block sizes."""

    seed: int
    epoch: int
    rank: int = 0
    world_size: int = 1
    remainder: Remainder = "even"
    shuffle: bool = True
    window: int = 0
    interleave: bool = False
    unread: Unread | None = None

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise ConfigError(f"need 0 <= rank < world_size, got rank={self.rank}, world_size={self.world_size}")
        sequence_length(0, self.world_size, self.remainder)  # checks the name

    def _ranks(self) -> Deal:
        return rank_deal(self.rank, self.world_size, self.interleave)

    def size(self, total: int) -> int:
        """Records in this share of an epoch of ``total`` records."""
        left = total if self.unread is None else len(self.unread)
        return self._ranks().count(sequence_length(left, self.world_size, self.remainder))

    def records(self, counts: Sequence[int] | np.ndarray | None = None, *, total: int | None = None) -> np.ndarray:
        """Global record numbers of this share, in reading order (int64).

        Args:
            counts: records per block, in file order (a stream's shard sizes).
            total: instead of ``counts``: ``total`` one-record blocks (map-style).
        """
        return self.reading(counts, total=total)[0]

    def reading(self, counts: Sequence[int] | np.ndarray | None = None, *,
                total: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`records`, and for each the group a reader reads at once
        (sorted, for sequential reads): its window of the reading sequence,
        or runs of ``_READ_AHEAD`` records when there are no windows."""
        if counts is None and total is None:
            raise ConfigError("pass counts (records per block) or total (one-record blocks), not neither")
        sizes = np.ones(total or 0, np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
        total = int(sizes.sum())
        left = total if self.unread is None else len(self.unread)
        index = self._ranks().positions(sequence_length(left, self.world_size, self.remainder))
        if len(index) == 0:
            return index, index
        # past the unread ones, padding repeats the epoch's first positions
        if self.unread is None:
            positions = index % total
        else:
            padded = index >= left
            positions = np.where(padded, (index - left) % total, self.unread.at(np.where(padded, 0, index)))
        windowed = self.shuffle and self.window > 1
        groups = positions // self.window if windowed else np.arange(len(positions)) // _READ_AHEAD
        if windowed:
            positions = _in_windows(positions, total, self.window, self.seed, self.epoch)
        order = epoch_order(len(sizes), self.seed, self.epoch, shuffle=self.shuffle)
        laid = sizes[order]
        ends = np.cumsum(laid)
        offset = seeds.rotation(self.seed, self.epoch, int(laid[laid > 0][0])) if self.shuffle else 0
        positions = (positions + offset) % total
        block = np.searchsorted(ends, positions, side="right")
        firsts = np.cumsum(sizes) - sizes  # global number of each block's first record
        return firsts[order[block]] + positions - (ends[block] - laid[block]), groups


def _in_windows(positions: np.ndarray, total: int, window: int, seed: int, epoch: int) -> np.ndarray:
    """The sequence position that each reading position holds: windows of
    ``window`` positions, each sorted by its draws (one draw per position up
    to the last window these positions touch, so a window's draws do not
    depend on which rank asks)."""
    touched = np.unique(positions // window)
    starts = touched * window
    lengths = np.minimum(starts + window, total) - starts
    firsts = np.cumsum(lengths) - lengths  # where each touched window starts among all their positions
    members = np.repeat(starts - firsts, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)
    draws = seeds.window_draws(int(members[-1]) + 1, seed, epoch)[members]
    shuffled = members[np.lexsort((draws, np.repeat(touched, lengths)))]
    where = np.searchsorted(touched, positions // window)
    return shuffled[firsts[where] + positions % window]
