"""Which part of a sample a fastdata dataset is in: ``read`` (the stored
bytes) or ``decode+transform``, told to whoever times this thread.

A loader installs its clock around the samples of a batch (:func:`timing`);
everything else pays one thread-local lookup per stage. The datasets only
name the stages: the clock and its shared-memory sums are the loader's
(``fastdata/loading/clock.py``), so this package does not depend on it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["stage", "timing"]

_local = threading.local()
_NONE = contextlib.nullcontext()


def stage(name: str) -> Any:
    """``with stage("read"):`` -- the block's seconds go to ``name`` on this
    thread's clock, if one is installed (a no-op otherwise)."""
    clock = getattr(_local, "clock", None)
    return _NONE if clock is None else clock.span(name)


@contextlib.contextmanager
def timing(clock: Any) -> Iterator[None]:
    """Install ``clock`` (an object with ``span(name)``) for this thread inside the block."""
    previous = getattr(_local, "clock", None)
    _local.clock = clock
    try:
        yield
    finally:
        _local.clock = previous
