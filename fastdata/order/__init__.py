"""Who reads which samples, in which order, under which random stream.

One package for the ideas every loader shares: :mod:`.ranks` (the one rank
resolver), :mod:`.partition` (one partition scheme for map-style sampling and
streams), :mod:`.seeds` (every seed, derived from ``(seed, epoch, rank,
index)``) and :mod:`.generators` (the streams a process and a sample run
under, and the one place a per-sample key is honoured). It imports neither
the datasets nor the loaders; both import it.
"""

from .generators import KeyScope, SampleKey, Seeding
from .partition import Deal, Remainder, Share, epoch_order
from .ranks import Distributed, Place, resolve_place

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
