"""Runs any map-style dataset under the random stream a sample key asks for.

The sampler yields :class:`fastdata.rng.SampleKey` ``(index, seed, epoch)``;
this adapter hands the dataset a plain ``int`` inside
``rng.use(<generator>)``, so every dataset -- fastdata's, which honour keys
themselves, or anyone's -- sees the same stream through
:func:`fastdata.rng.generator`. Two modes:

* ``"sample"``: ``rng.sample_generator(seed, epoch, index)``. Augmentation is
  a function of the sample alone: identical for any ``num_workers``, and
  exact after a mid-epoch resume. Costs one small generator per sample.
* ``"worker"``: one ``rng.worker_generator(seed, epoch, rank, worker_id)``
  per worker and epoch, made fresh when a new epoch's first key arrives (so
  persistent workers do not repeat last epoch's augmentation; in a worker
  process the global ``random``/NumPy/torch streams are reseeded too).
  Repeats only for the same ``num_workers``, and not across a resume.

In a worker process, the first key of a new epoch also reseeds the global
``random``/NumPy/torch streams from ``(seed, epoch, rank, worker_id)``, for
third-party transforms that draw from them (those depend on ``num_workers``).
"""

from __future__ import annotations

import os
from typing import Any, Literal

import numpy as np
from torch.utils.data import Dataset, get_worker_info

from .. import rng
from ..errors import ConfigError
from .seeding import seed_process

__all__ = ["KeyedDataset", "SeedingMode"]

SeedingMode = Literal["sample", "worker"]


class KeyedDataset(Dataset):
    """Wraps ``dataset`` so ``self[SampleKey(...)]`` runs under that key's stream.

    Plain integer keys pass straight through. Picklable if ``dataset`` is.
    """

    def __init__(self, dataset: Any, *, seeding: SeedingMode = "sample", rank: int = 0) -> None:
        if seeding not in ("sample", "worker"):
            raise ConfigError(f"seeding must be 'sample' or 'worker', got {seeding!r}")
        self.dataset, self.seeding, self.rank = dataset, seeding, int(rank)
        self._stream: tuple[int, int, int, np.random.Generator] | None = None  # (pid, seed, epoch, generator)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_stream"] = None  # each process starts its own stream
        return state

    def _epoch_stream(self, key: rng.SampleKey) -> np.random.Generator:
        """This worker's generator for the key's epoch, made (and globals reseeded) on a new epoch."""
        pid = os.getpid()
        s = self._stream
        if s is None or s[0] != pid or s[1] != key.seed or s[2] != key.epoch:
            info = get_worker_info()
            worker_id = info.id if info is not None else 0
            if info is not None:
                # Persistent workers run worker_init_fn only once: reseed the
                # global streams here for the epoch the keys now carry. Never
                # in the main process (num_workers=0), whose globals are the user's.
                seed_process(key.seed, key.epoch, self.rank, worker_id)
            s = (pid, key.seed, key.epoch, rng.worker_generator(key.seed, key.epoch, self.rank, worker_id))
            self._stream = s
        return s[3]

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, rng.SampleKey):
            return self.dataset[key]
        gen = self._epoch_stream(key)
        if self.seeding == "sample":
            gen = rng.sample_generator(key.seed, key.epoch, key.index)
        with rng.use(gen):
            return self.dataset[int(key.index)]
