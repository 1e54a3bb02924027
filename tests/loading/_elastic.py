"""Jobs of simulated ranks for the elastic-resume tests: one loader per rank
in this process, each taking the same number of batches, then one state
that every rank must agree on."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch

from fastdata import make_loader, open_dataset

from ._data import IndexImages, StreamPixels, indices

SHUFFLE_BUFFER = 16  # several windows per epoch at the tests' sizes


@dataclass
class Reads:
    """What a chain of jobs read: each sample's count and its pixels the first time."""

    counts: Counter = field(default_factory=Counter)
    pixels: dict[int, np.ndarray] = field(default_factory=dict)

    def add(self, images: torch.Tensor) -> None:
        for i, image in zip(indices(images), images):
            self.counts[i] += 1
            self.pixels.setdefault(i, _comparable(image))


def _comparable(image: torch.Tensor) -> np.ndarray:
    # rows 0-1: the index and the augmentation; row 2 (IndexImages' global
    # random/NumPy/torch draws, the main process's here) is not the sample's
    return image[:, :2].numpy().copy()


def dataset(kind: str, n: int, records) -> object:
    if kind == "map":
        return IndexImages(n)
    return open_dataset(records, streaming=True, transform=StreamPixels(), shuffle_buffer=SHUFFLE_BUFFER)


def job(kind: str, n: int, records, world: int, batch: int, *, seed: int, train: bool, state: dict | None,
        stop: int | None, reads: Reads, workers=0) -> dict:
    """Run one job of ``world`` ranks from ``state``: every rank takes ``stop``
    batches (None: to the end of the pass); returns the state all ranks agree on."""
    loaders = [make_loader(dataset(kind, n, records), batch, rank=r, world_size=world, seed=seed, train=train,
                           workers=workers) for r in range(world)]
    states = []
    for loader in loaders:
        with loader:
            if state is not None:
                loader.load_state_dict(state)
            batches = iter(loader)
            taken = 0
            while stop is None or taken < stop:
                try:
                    images, _ = next(batches)
                except StopIteration:
                    break
                reads.add(images)
                taken += 1
            states.append(loader.state_dict())
    assert all(s == states[0] for s in states), states  # the state is global
    return states[0]


def reference(kind: str, n: int, records, *, seed: int, train: bool) -> Reads:
    """An uninterrupted single-rank epoch 0 that reads every sample once."""
    reads = Reads()
    job(kind, n, records, 1, 1, seed=seed, train=train, state=None, stop=None, reads=reads)
    assert sorted(reads.counts) == list(range(n)) and set(reads.counts.values()) == {1}
    return reads


def chain(kind: str, n: int, records, setups: list[tuple[int, int]], *, seed: int, train: bool,
          draw: random.Random, **job_options) -> tuple[Reads, dict]:
    """Jobs in turn, each interrupted at a random batch but the last, which ends the epoch."""
    reads, state = Reads(), None
    for step, (world, batch) in enumerate(setups):
        last = step == len(setups) - 1
        left = n - (state["read"] if state else 0)
        stop = None if last else draw.randint(0, max(left // (world * batch) - 1, 0))
        state = job(kind, n, records, world, batch, seed=seed, train=train, state=state, stop=stop, reads=reads,
                    **job_options)
        if not last:
            assert state["epoch"] == 0, (setups, step, state)
    assert (state["epoch"], state["read"]) == (1, 0)
    return reads, state


def check_epoch(reads: Reads, expected: Reads, n: int, *, train: bool, last: tuple[int, int]) -> None:
    """Each sample read once (training: the last job's padding and drop_last
    as documented), each with the pixels of the uninterrupted run."""
    world, batch = last
    assert set(reads.counts) <= set(range(n))
    if train:
        twice = [i for i, c in reads.counts.items() if c == 2]
        assert max(reads.counts.values()) <= 2 and len(twice) <= world - 1, twice  # padding
        assert n - len(reads.counts) <= world * (batch - 1)  # each last rank drops < one batch
    else:
        assert sorted(reads.counts) == list(range(n)) and set(reads.counts.values()) == {1}
    for i, image in reads.pixels.items():
        assert np.array_equal(image, expected.pixels[i]), i
