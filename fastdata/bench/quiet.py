"""Third-party warnings a bench run is known to cause: held back and counted, not printed per pass.

DALI logs "DALI iterator does not support resetting while epoch is not
finished" each time a DALI variant's timed pass starts: its untimed warm-up
batch (see ``suite.steady``) left an epoch open, and DALI goes on with it,
which is what the bench wants. One line per pass (32 in a default run) would
bury the progress lines, so they are counted and summed up in one line.
"""

from __future__ import annotations

import collections
import contextlib
import logging
from collections.abc import Iterator

# message prefix (whitespace collapsed) -> (who logs it, what it says, why the bench causes it)
EXPECTED = {
    "DALI iterator does not support resetting while epoch is not finished": (
        "DALI", "iterator reset before the end of an epoch",
        "each DALI variant's untimed warm-up batch leaves an epoch open and its timed pass finishes it",
    ),
}


class HeldBack(logging.Filter):
    """A logging filter that swallows the :data:`EXPECTED` records and counts them."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = " ".join(record.getMessage().split())  # DALI's has a run of spaces in it
        for prefix in EXPECTED:
            if message.startswith(prefix):
                self.counts[prefix] += 1
                return False
        return True

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def summary(self) -> list[str]:
        """One line per kind held back, e.g. ``bench: 32 DALI warnings held back (...)``."""
        lines = []
        for prefix, n in self.counts.items():
            source, what, why = EXPECTED[prefix]
            lines.append(f"bench: {n} {source} warnings held back ({what}: expected, {why})")
        return lines


@contextlib.contextmanager
def held_back_warnings() -> Iterator[HeldBack]:
    """Hold back the expected warnings logged in the body (DALI logs through the root logger)."""
    held = HeldBack()
    root = logging.getLogger()
    root.addFilter(held)
    try:
        yield held
    finally:
        root.removeFilter(held)
