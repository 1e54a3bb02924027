"""fastdata's own random streams for augmentation: never the global NumPy state.

Two ways a transform gets randomness, both pure functions of seeds:

* per process: :func:`generator` returns this process's generator. In a
  DataLoader worker it is reseeded by :func:`fastdata.seed_worker` from
  ``(seed, epoch, rank, worker_id)``; without that it derives from
  ``torch.initial_seed()``, which PyTorch already makes distinct per worker.
* per sample: a sampler that yields :class:`SampleKey` instead of ``int``
  makes the dataset run that sample's transforms under
  :func:`sample_generator` ``(seed, epoch, index)``, so augmentation depends
  on the sample alone and not on which worker happened to load it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

_state: dict[str, object] = {"pid": None, "gen": None}


class SampleKey(NamedTuple):
    """An index a sampler yields to request per-sample seeded augmentation."""

    index: int
    seed: int
    epoch: int


_M64 = (1 << 64) - 1


def _mix(*words: int) -> int:
    """Chained splitmix64: a cheap, well-mixed 64-bit key from several integers.

    (SeedSequence mixes as well but costs ~10 us a call, which is paid per
    sample on the per-sample seeding path.)
    """
    x = 0x6A09E667F3BCC909
    for w in words:
        x = (x ^ (w & _M64)) + 0x9E3779B97F4A7C15 & _M64
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _M64
        x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _M64
        x ^= x >> 31
    return x


def sample_generator(seed: int, epoch: int, index: int) -> np.random.Generator:
    """The generator for one sample in one epoch; same inputs, same stream.

    Philox is counter-based: the key comes from (seed, epoch) and the sample
    index sits in the counter's high words, so streams of different samples
    never overlap.
    """
    return np.random.Generator(np.random.Philox(counter=[0, 0, index & _M64, 0x5A3D], key=_mix(seed, epoch)))


def worker_generator(seed: int, epoch: int, rank: int, worker_id: int) -> np.random.Generator:
    """The generator for one worker of one rank in one epoch."""
    return np.random.Generator(np.random.Philox(key=_mix(seed, epoch, rank, worker_id, 0x77E1)))


def set_generator(gen: np.random.Generator) -> None:
    """Install ``gen`` as this process's generator (what seed_worker calls)."""
    _state["pid"] = os.getpid()
    _state["gen"] = gen


def generator() -> np.random.Generator:
    """This process's augmentation generator (a fresh one after fork)."""
    if _state["pid"] != os.getpid() or _state["gen"] is None:
        import torch

        set_generator(np.random.Generator(np.random.Philox(key=_mix(torch.initial_seed(), 0x1D))))
    return _state["gen"]  # type: ignore[return-value]


@contextlib.contextmanager
def use(gen: np.random.Generator) -> Iterator[np.random.Generator]:
    """Make ``gen`` the process generator inside the block."""
    previous = (_state["pid"], _state["gen"])
    set_generator(gen)
    try:
        yield gen
    finally:
        _state["pid"], _state["gen"] = previous


@contextlib.contextmanager
def sample_scope(key: int | SampleKey) -> Iterator[int]:
    """What a dataset's ``__getitem__`` wraps its work in; yields the int index.

    For a :class:`SampleKey` the block runs under that sample's generator;
    for a plain index the process generator stays in force.
    """
    if isinstance(key, SampleKey):
        with use(sample_generator(key.seed, key.epoch, key.index)):
            yield int(key.index)
    else:
        yield int(key)
