"""Runs any map-style dataset under the random stream a sample key asks for.

The sampler yields :class:`fastdata.rng.SampleKey` ``(index, seed, epoch)``;
this adapter hands the dataset a plain ``int`` inside the stream
:class:`fastdata.order.KeyScope` chooses for the key, so every dataset --
fastdata's or anyone's -- sees the same stream through
:func:`fastdata.rng.generator`. See ``KeyScope`` for the ``"sample"`` and
``"worker"`` modes and the reseeding of a worker's global streams.
"""

from __future__ import annotations

from typing import Any

from torch.utils.data import Dataset

from ..datasets.stages import timing
from ..order.generators import KeyScope, Seeding
from .clock import StageClock

__all__ = ["KeyedDataset"]


class KeyedDataset(Dataset):
    """Wraps ``dataset`` so ``self[SampleKey(...)]`` runs under that key's stream.

    Plain integer keys pass straight through. Picklable if ``dataset`` is.
    """

    clock: StageClock | None = None  # set by the loader: its workers' stage times (Loader.stats)

    def __init__(self, dataset: Any, *, seeding: Seeding = "sample", rank: int = 0) -> None:
        self.dataset = dataset
        self.scope = KeyScope(seeding, rank=rank, reseed=True)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, key: Any) -> Any:
        with self.scope(key) as index:
            return self.dataset[index]

    def __getitems__(self, keys: list[Any]) -> list[Any]:
        # torch's DataLoader fetches a batch's samples through here: where a
        # worker's batch begins, and its samples' time (Loader.stats)
        clock = self.clock
        if clock is None:
            return [self[key] for key in keys]
        clock.batch_started()
        return self.timed(keys, clock)

    def timed(self, keys: list[Any], clock: StageClock) -> list[Any]:
        """The samples of ``keys``, their seconds on ``clock``: per stage when the
        dataset says its stages, else as one ``read+decode+transform``."""
        if getattr(self.dataset, "reports_stages", False):
            with timing(clock):
                return [self[key] for key in keys]
        with clock.span("read+decode+transform"):
            return [self[key] for key in keys]
