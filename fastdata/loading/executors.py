"""How a loader turns sample keys into batches: the executor ``make_loader`` picks.

An executor answers three questions (:class:`Executor`): what the workers
index with sample keys (``feed``), how they collate (``collate``, and
``batches`` for loader threads that build a whole batch at once), and what
runs in the main process between the workers and the training step
(``stage``). ``make_loader`` asks them and builds nothing else by hand.

The CPU executor is here. Others register themselves under the ``decode``
mode they serve (:func:`register_executor`); :mod:`fastdata.gpu` serves
``"cuda"`` and ``"auto"`` and is imported by name on first use, so this
package does not depend on it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch.utils.data import Dataset

from ..errors import ConfigError
from ..order.generators import Seeding
from .batched import BatchedPlans
from .collate import FastCollate
from .decode_choice import DecodeChoice, GPUDecode
from .keyed import KeyedDataset

__all__ = ["CPUExecutor", "DecodeRequest", "Executor", "Stage", "choose_executor", "register_executor"]


@dataclass(frozen=True)
class DecodeRequest:
    """What an executor is built from: ``make_loader``'s arguments that concern it."""

    dataset: Any
    prefetch: Any  # fastdata.loading.Prefetch or None
    collate_fn: Callable[[list[Any]], Any] | None
    seeding: Seeding
    rank: int


class Stage(Protocol):
    """What runs in the main process after the workers: the CUDA prefetcher,
    or the GPU decode's batches. The loader iterates it once a pass and closes it."""

    #: It decodes the images (the GPU's batches): the loader's repr shows it as ``decode=``.
    decodes: bool

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Executor(Protocol):
    """The pieces of a loader that depend on where samples are decoded."""

    #: The workers only read bytes and draw plans (Python that holds the GIL): kind="auto" means processes.
    planning_only: bool

    def feed(self, keyed: KeyedDataset) -> Dataset: ...

    def collate(self, *, memory_format: torch.memory_format, pin: bool) -> Callable[[list[Any]], Any]: ...

    def batches(self, feed: Dataset, collate: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any] | None:
        """For loader threads: a function of a batch's keys that builds the batch
        itself, or None for ``collate([feed[key] for key in keys])``."""
        ...

    def stage(self, batches: Iterable[Any], prefetch: Any) -> Stage | None: ...


class CPUExecutor:
    """Workers decode and augment (``decode="cpu"``): per sample in worker
    processes, or a batch of plans per call on loader threads (:mod:`.batched`)."""

    planning_only = False

    def __init__(self, collate_fn: Callable[[list[Any]], Any] | None = None) -> None:
        self.collate_fn = collate_fn

    def feed(self, keyed: KeyedDataset) -> Dataset:
        return keyed

    def collate(self, *, memory_format: torch.memory_format, pin: bool) -> Callable[[list[Any]], Any]:
        return self.collate_fn if self.collate_fn is not None else FastCollate(memory_format=memory_format, pin_memory=pin)

    def batches(self, feed: Dataset, collate: Callable[[list[Any]], Any]) -> Callable[[list[Any]], Any] | None:
        return BatchedPlans.of(feed, collate)

    def stage(self, batches: Iterable[Any], prefetch: Any) -> Stage | None:
        return prefetch.wrap(batches) if prefetch is not None else None


ExecutorFactory = Callable[[GPUDecode, DecodeRequest], "Executor | None"]

_FACTORIES: dict[str, ExecutorFactory] = {}
_PROVIDERS = {"cuda": "fastdata.gpu", "auto": "fastdata.gpu"}  # imported on first use; they register


def register_executor(mode: str, factory: ExecutorFactory) -> None:
    """Serve ``make_loader(decode=mode)`` with ``factory(settings, request)``,
    which returns an executor, or None to leave the samples to the CPU."""
    _FACTORIES[mode] = factory


def choose_executor(decode: DecodeChoice, request: DecodeRequest) -> Executor:
    """The executor for ``make_loader(decode=...)``.

    Raises:
        ConfigError: an unknown ``decode``; what the chosen executor refuses.
    """
    settings = GPUDecode.of(decode)
    if settings is None:
        return CPUExecutor(request.collate_fn)
    if settings.mode not in _FACTORIES and settings.mode in _PROVIDERS:
        importlib.import_module(_PROVIDERS[settings.mode])
    factory = _FACTORIES.get(settings.mode)
    if factory is None:
        raise ConfigError(f"decode={settings.mode!r}: no executor is registered for it")
    chosen = factory(settings, request)
    return chosen if chosen is not None else CPUExecutor(request.collate_fn)
