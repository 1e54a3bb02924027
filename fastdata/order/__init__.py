"""Who reads which samples, in which order, under which random stream.

One package for the ideas every loader shares: :mod:`.ranks` (the one rank
resolver), :mod:`.partition` (one partition scheme for map-style sampling and
streams), :mod:`.seeds` (every seed, derived from ``(seed, epoch, rank,
index)``) and :mod:`.generators` (the streams a process and a sample run
under, and the one place a per-sample key is honoured). It imports neither
the datasets nor the loaders; both import it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .generators import KeyScope, SampleKey, Seeding
    from .partition import Deal, Remainder, Share, epoch_order
    from .ranks import Distributed, Place, resolve_place

# Loaded on first use (PEP 562), so that `fastdata.order.conversion` imports without numpy.
_HOME = {
    "KeyScope": "generators", "SampleKey": "generators", "Seeding": "generators",
    "Deal": "partition", "Remainder": "partition", "Share": "partition", "epoch_order": "partition",
    "Distributed": "ranks", "Place": "ranks", "resolve_place": "ranks",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value

__all__ = [
    "Deal",
    "Distributed",
    "KeyScope",
    "Place",
    "Remainder",
    "SampleKey",
    "Seeding",
    "Share",
    "epoch_order",
    "resolve_place",
]
