"""The random streams a process and a sample run under.

* per process: :func:`generator` is this process's augmentation generator
  (installed by :func:`seed_process` in a seeded DataLoader worker; otherwise
  derived from ``torch.initial_seed()``).
* per sample: a :class:`SampleKey` ``(index, seed, epoch)`` asks for the
  sample to run under its own stream. :class:`KeyScope` is the one place
  that honours a key -- for fastdata's map-style datasets, for streams, and
  for any dataset ``make_loader`` wraps.
"""

from __future__ import annotations

import contextlib
import os
import random
import threading
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple

import numpy as np

from ..errors import ConfigError
from . import seeds

__all__ = [
    "KeyScope", "SampleKey", "Seeding", "generator", "sample_scope", "seed_process", "seed_streams", "set_generator", "use",
]

Seeding = Literal["sample", "worker"]

class _State(threading.local):
    """The generator in force, per thread: loader threads
    (``Workers(kind="threads")``) each run samples under their own key's
    stream at the same time. ``pid`` tells a forked child to make its own."""

    pid: int | None = None
    gen: np.random.Generator | None = None


_state = _State()


class SampleKey(NamedTuple):
    """An index a sampler yields to request per-sample seeded augmentation."""

    index: int  # type: ignore[assignment]  # the public field's name shadows tuple.index, as a NamedTuple allows
    seed: int
    epoch: int


def set_generator(gen: np.random.Generator | None) -> None:
    """Install ``gen`` as this process's generator (None: a fresh one on first use)."""
    _state.pid, _state.gen = os.getpid(), gen


def generator() -> np.random.Generator:
    """This process's augmentation generator (a fresh one after fork)."""
    gen = _state.gen
    if _state.pid != os.getpid() or gen is None:
        import torch

        gen = seeds.unseeded_generator(torch.initial_seed())
        set_generator(gen)
    return gen


@contextlib.contextmanager
def use(gen: np.random.Generator | None) -> Iterator[np.random.Generator | None]:
    """Make ``gen`` the process generator inside the block (None: a fresh one on first use)."""
    previous = (_state.pid, _state.gen)
    set_generator(gen)
    try:
        yield gen
    finally:
        _state.pid, _state.gen = previous


def using(gen: np.random.Generator | None) -> contextlib.AbstractContextManager[Any]:
    """:func:`use` ``gen`` inside the block; None keeps the generator in force."""
    return use(gen) if gen is not None else contextlib.nullcontext()


def seed_streams(py: int, np_seed: int, torch_seed: int, gen: np.random.Generator) -> None:
    """Seed ``random``, NumPy's legacy global state (32 bits), torch (63 bits;
    also every CUDA device, lazily) and install ``gen`` as fastdata's generator."""
    import torch

    random.seed(py)
    np.random.seed(np_seed)
    torch.manual_seed(torch_seed)
    set_generator(gen)


def seed_process(seed: int, epoch: int, rank: int, worker: int) -> None:
    """Seed this process's ``random``, NumPy, torch and fastdata streams from the four numbers."""
    seed_streams(*seeds.process_seeds(seed, epoch, rank, worker), seeds.worker_generator(seed, epoch, rank, worker))


def _worker_id() -> int | None:
    from torch.utils.data import get_worker_info

    info = get_worker_info()
    return None if info is None else info.id


class KeyScope:
    """Runs a sample under the stream its key asks for; ``with scope(key) as index:``.

    A plain ``int`` key leaves the process generator in force. For a
    :class:`SampleKey`:

    * ``seeding="sample"``: ``sample_generator(seed, epoch, index)``: the
      augmentation depends on the sample alone (any ``num_workers``, exact
      after a resume).
    * ``seeding="worker"``: one ``worker_generator(seed, epoch, rank, worker)``
      per worker and epoch, made when a new epoch's first key arrives.
      Repeats only for the same ``num_workers``, and not across a resume.

    With ``reseed`` (set by ``make_loader``), the first key of a new epoch
    in a DataLoader worker also reseeds the worker's ``random``/NumPy/torch
    streams from ``(seed, epoch, rank, worker)``, for third-party transforms
    that draw from them; persistent workers, whose ``worker_init_fn`` ran
    once, so do not repeat last epoch's draws. The main process's globals are
    the user's and are never reseeded.
    """

    def __init__(self, seeding: Seeding = "sample", *, rank: int = 0, reseed: bool = False) -> None:
        if seeding not in ("sample", "worker"):
            raise ConfigError(f"seeding must be 'sample' or 'worker', got {seeding!r}")
        self.seeding, self.rank, self.reseed = seeding, int(rank), bool(reseed)
        self._epoch: tuple[int, int, int, np.random.Generator] | None = None  # (pid, seed, epoch, generator)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_epoch"] = None  # each process starts its own stream
        return state

    def __repr__(self) -> str:
        return f"KeyScope({self.seeding!r}, rank={self.rank}, reseed={self.reseed})"

    def _epoch_generator(self, key: SampleKey) -> np.random.Generator:
        pid, current = os.getpid(), self._epoch
        if current is None or current[:3] != (pid, key.seed, key.epoch):
            worker = _worker_id()
            if self.reseed and worker is not None:
                seed_process(key.seed, key.epoch, self.rank, worker)
            gen = seeds.worker_generator(key.seed, key.epoch, self.rank, worker or 0)
            current = self._epoch = (pid, key.seed, key.epoch, gen)
        return current[3]

    def enter_epoch(self, key: SampleKey) -> None:
        """What ``with self(key)`` does first in a worker process: at a new
        epoch's first key, reseed the worker's global streams (with ``reseed``).
        Call it outside any :func:`use` block, which would undo it on exit."""
        if self.reseed:
            self._epoch_generator(key)

    def sample_stream(self, key: SampleKey, streams: seeds.SampleStreams) -> int:
        """What ``with self(key)`` does for ``seeding="sample"`` after
        :meth:`enter_epoch`, but setting ``streams``' reusable generator to the
        key's stream instead of making one (the caller has installed
        ``streams.generator`` with :func:`use` and lets no one keep it);
        returns the int index."""
        streams.at(key.seed, key.epoch, key.index)
        return int(key.index)

    @contextlib.contextmanager
    def __call__(self, key: int | SampleKey) -> Iterator[int]:
        if not isinstance(key, SampleKey):
            yield int(key)
            return
        gen = self._epoch_generator(key) if self.reseed or self.seeding == "worker" else None
        if self.seeding == "sample":
            gen = seeds.sample_generator(key.seed, key.epoch, key.index)
        with use(gen):
            yield int(key.index)


sample_scope = KeyScope()
"""What a dataset's ``__getitem__`` wraps its work in (per-sample seeding); yields the int index."""
