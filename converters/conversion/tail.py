"""Cutting the last shards of a conversion as workers come free, so that they finish together.

Whole shards alone leave workers idle at the end (7 shards on 2 workers: one
writes 4 while the other waits; on 16 cores, 9 of 16 wait all along). So
once the work left is less than a shard per worker (the *tail*, from
:func:`tail_start`), a shard of a format that can ``join`` is written in
pieces. The cut is made when a worker is free to take the next task, not
planned ahead: what the others still have to do is then known (their task's
bytes, how long they have been at it, the bytes per second of this run's
finished tasks), so the free worker takes what is left of the shard at hand,
or only the piece that brings it level with the finish all can reach
together (:func:`level`). A plan made ahead cut on a guess of which worker
would be free first; when a busy machine turned the guess round, one worker
wrote both pieces of a shard in turn and then copied one onto the other.
Only the pieces after a shard's first are copied when it is joined, and
a cut is made where a worker's share ends (about one per worker), so the
joins copy less than cutting every tail shard into one piece per worker.
"""

from __future__ import annotations

import dataclasses

from ..planning.layout import ShardPlan
from ..planning.scan import ITEM_SIZE

#: Smallest piece a shard is cut into: below it, a task's start and its share of the join cost more than the balance buys.
MIN_PIECE_BYTES = 4 << 20


@dataclasses.dataclass(frozen=True)
class Task:
    """Items ``start:stop`` of ``shard``: piece ``piece`` of ``pieces`` (1: the
    whole shard; 0: more pieces follow, their number is not known yet)."""

    shard: ShardPlan
    start: int
    stop: int
    piece: int = 0
    pieces: int = 1

    @property
    def size(self) -> int:
        """The source bytes of its items: what the balance counts a task's cost by."""
        return sum(map(ITEM_SIZE, self.shard.items[self.start:self.stop]))


def tail_start(shards: list[ShardPlan], workers: int, joinable: bool) -> int:
    """How many shards are written whole before the tail: the tail starts at
    the first shard (of more than one image) bigger than its share of the
    work left, ``left / workers``. ``joinable`` False or one worker: no tail."""
    if not joinable or workers <= 1:
        return len(shards)
    sizes = [sum(map(ITEM_SIZE, shard.items)) for shard in shards]
    left = sum(sizes)
    for g, (shard, size) in enumerate(zip(shards, sizes)):
        if size * workers > left and len(shard.items) > 1:
            return g
        left -= size
    return len(shards)


def level(loads: list[float], work: float) -> float:
    """The finish, in bytes, of workers that have ``loads`` bytes still to
    write when they share ``work`` more so as to finish together (a worker
    already past that finish takes none)."""
    loads = sorted(loads)
    busy = len(loads)
    while busy > 1 and loads[busy - 1] * busy > sum(loads[:busy]) + work:
        busy -= 1
    return (sum(loads[:busy]) + work) / busy


class Tail:
    """The tail's shards, handed out in order as :meth:`take` is called."""

    def __init__(self, shards: list[ShardPlan], min_piece_bytes: int = MIN_PIECE_BYTES) -> None:
        self._shards = shards
        self._sizes = [list(map(ITEM_SIZE, shard.items)) for shard in shards]
        self._min = min_piece_bytes
        self._g = self._start = self._piece = 0
        self.left = sum(map(sum, self._sizes))
        """Source bytes not handed out yet."""

    def __bool__(self) -> bool:
        return self._g < len(self._shards)

    def next_for(self, loads: list[float], idle: int = 1) -> Task:
        """The task for a worker that is free now, when the busy ones still have
        ``loads`` bytes to write and ``idle`` workers (this one included) have none:
        its share of what is left, so that all finish together."""
        return self.take(level([*loads, *[0.0] * idle], self.left))

    def take(self, want: float) -> Task:
        """The next task: what is left of the shard at hand, or a piece of
        about ``want`` bytes from it (never below the smallest piece, nor
        leaving less than that)."""
        shard, sizes = self._shards[self._g], self._sizes[self._g]
        rest = sum(sizes[self._start:])
        want = max(want, self._min)
        stop = len(sizes) if want >= rest - self._min else _nearest(sizes, self._start, want)
        last = stop == len(sizes)
        task = Task(shard, self._start, stop, self._piece, self._piece + 1 if last else 0)
        self.left -= sum(sizes[self._start:stop])
        if last:
            self._g, self._start, self._piece = self._g + 1, 0, 0
        else:
            self._start, self._piece = stop, self._piece + 1
        return task


def _nearest(sizes: list[int], start: int, want: float) -> int:
    """The end of the items from ``start`` whose bytes come nearest ``want``:
    at least one item, never all that are left."""
    acc, i = sizes[start], start + 1
    while i < len(sizes) - 1 and acc + sizes[i] / 2 < want:
        acc += sizes[i]
        i += 1
    return i
