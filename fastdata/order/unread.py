"""What is left of an epoch: the positions of its reading sequence not yet read.

Positions are those of :mod:`.partition`'s epoch sequence (after the window
shuffle, so a stream's rank reads a contiguous run of them), which depends on
``(seed, epoch)`` and the dataset only -- not on the world size, batch size or
workers. So what one job read is a set any other job can continue from. A
pass deals its unread positions to its ranks (:class:`~.partition.Share`);
since ranks read their part front to back, what they have read is a prefix of
each part and the rest stays a short list of spans: at most about one span
per rank of each job in a chain of resumes (:mod:`.progress` works them out).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

__all__ = ["Unread"]

_SPAN = re.compile(r"(\d+)-(\d+)")


@dataclass(frozen=True)
class Unread:
    """Sorted, disjoint, non-empty ``[start, stop)`` spans of reading positions."""

    spans: tuple[tuple[int, int], ...]

    @classmethod
    def whole(cls, total: int) -> Unread:
        return cls(((0, int(total)),) if total > 0 else ())

    @classmethod
    def of(cls, spans: Iterable[tuple[int, int]]) -> Unread:
        """Spans in any order, overlapping or empty ones included, merged."""
        merged: list[list[int]] = []
        for a, b in sorted((int(a), int(b)) for a, b in spans if b > a):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        return cls(tuple((a, b) for a, b in merged))

    def __len__(self) -> int:
        return sum(b - a for a, b in self.spans)

    def text(self) -> str:
        """``"0-5,9-23"``: what a state dict holds (plain data, any length)."""
        return ",".join(f"{a}-{b}" for a, b in self.spans)

    @classmethod
    def parse(cls, text: str, total: int) -> Unread:
        """:meth:`text`'s inverse for an epoch of ``total`` positions; ConfigError if malformed."""
        parts = text.split(",") if text else []
        found = [_SPAN.fullmatch(p.strip()) for p in parts]
        spans = [(int(m[1]), int(m[2])) for m in found if m]
        if len(spans) != len(parts) or any(not a < b <= total for a, b in spans) or \
                any(b1 >= a2 for (_, b1), (a2, _) in itertools.pairwise(spans)):
            raise ConfigError(
                f"loader state's unread={text[:60]!r} is not sorted 'start-stop' spans within 0-{total}; "
                "pass the dict Loader.state_dict() returned"
            )
        return cls(tuple(spans))

    def at(self, index: np.ndarray) -> np.ndarray:
        """The ``index``-th unread positions (``0 <= index < len(self)``), int64."""
        starts = np.array([a for a, _ in self.spans], np.int64)
        before = np.cumsum([0] + [b - a for a, b in self.spans[:-1]]).astype(np.int64)
        span = np.searchsorted(before, index, side="right") - 1
        return starts[span] + index - before[span]

    def between(self, first: int, stop: int) -> list[tuple[int, int]]:
        """The unread positions numbered ``first`` to ``stop`` (exclusive), as spans."""
        out, before = [], 0
        for a, b in self.spans:
            lo, hi = max(first - before, 0), min(stop - before, b - a)
            if lo < hi:
                out.append((a + lo, a + hi))
            before += b - a
        return out

    def without(self, taken: Iterable[tuple[int, int]]) -> Unread:
        """These spans less ``taken`` (any spans)."""
        cuts = Unread.of(taken).spans
        out: list[tuple[int, int]] = []
        for a, b in self.spans:
            for c, d in cuts:
                if d <= a or c >= b:
                    continue
                if c > a:
                    out.append((a, c))
                a = max(a, d)
                if a >= b:
                    break
            if a < b:
                out.append((a, b))
        return Unread(tuple(out))
