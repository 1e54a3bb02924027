"""``make_loader``'s grouped settings: the worker processes and the GPU prefetch."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import torch

from ..errors import ConfigError
from .prefetch import CUDAPrefetcher, per_channel

__all__ = [
    "DATALOADER_KEYWORDS", "IMAGENET_MEAN", "IMAGENET_STD", "Prefetch", "Workers", "unit_channels",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
"""ImageNet's per-channel RGB mean and std in 0-1 units (torchvision's): the
library's one definition, used by ``Prefetch`` users and ``fastdata.dali``."""

_CONTEXTS = (None, "fork", "spawn", "forkserver")
_KINDS = ("auto", "processes", "threads")


def cpus_per_rank() -> int:
    """The CPUs this process may use, shared among the ranks on this machine (``LOCAL_WORLD_SIZE``)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    per_node = os.environ.get("LOCAL_WORLD_SIZE", "1")
    return max(1, cpus // (int(per_node) if per_node.isdigit() and int(per_node) > 0 else 1))


def _default_count() -> int:
    return min(8, cpus_per_rank())


def unit_channels(owner: str, name: str, values: Sequence[float] | None, note: str = "") -> tuple[float, ...] | None:
    """``values`` per channel (see :func:`per_channel`), refused when they look
    like 0-255 units: every mean/std fastdata takes is in 0-1 units.

    Args:
        owner: what took them, for the message (``"Prefetch"``).
        name: ``"mean"`` or ``"std"``.
        note: said after the unit, e.g. that the unit changed.
    """
    out = per_channel(name, values)
    if out is not None and max(abs(v) for v in out) > 1.0:
        raise ConfigError(
            f"{owner}({name}={out}) looks like 0-255 units; {owner} takes 0-1 units{note} "
            f"(divide by 255: ImageNet is mean={IMAGENET_MEAN}, std={IMAGENET_STD})"
        )
    return out


@dataclass(frozen=True)
class Workers:
    """The loader's workers (``make_loader(..., workers=Workers(...))``;
    ``workers=4`` is short for ``Workers(num=4)``).

    Args:
        num: workers; ``None`` = CPUs per local rank, at most 8; 0 loads in
            the main process.
        kind: ``"auto"`` (the default), ``"processes"`` (torch's DataLoader
            worker processes) or ``"threads"``: threads of this process build
            whole batches (:class:`~fastdata.loading.threaded.ThreadedBatches`).
            Threads skip the per-batch shared memory and pickling of processes
            and are faster when the transforms release the GIL, as fastdata's
            decode-aware ones do with the compiled crop decoder
            (``fastdata.decode.native_status()``); Python-heavy transforms
            want processes. ``"auto"`` picks threads exactly then (a
            map-style dataset whose ``transform`` is made only of fastdata
            transforms, decode-aware, on the compiled decoder, with
            ``seeding="sample"`` and no ``context``), else processes; the
            loader's ``repr`` says which and why. Threads take map-style
            datasets and ``seeding="sample"``, and never reseed the global
            ``random``/NumPy/torch streams.
        persistent: keep workers alive between epochs (when ``num > 0``).
        prefetch_factor: batches each worker loads ahead (torch's default 2).
        context: ``"fork"``, ``"spawn"``, ``"forkserver"`` or None (torch's
            default); processes only.
        pin_memory: batches in pinned host memory; ``"auto"`` = when CUDA is
            available and the prefetch (if any) goes to a CUDA device.
    """

    num: int | None = None
    persistent: bool = True
    prefetch_factor: int | None = None
    context: str | None = None
    pin_memory: bool | Literal["auto"] = "auto"
    kind: Literal["auto", "processes", "threads"] = "auto"

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ConfigError(f"Workers(kind=...) must be one of {_KINDS}, got {self.kind!r}")
        if self.kind == "threads" and self.context is not None:
            raise ConfigError(f"Workers(kind='threads') starts no processes: drop context={self.context!r}")
        if self.num is not None and self.num < 0:
            raise ConfigError(f"Workers(num=...) must be >= 0 or None, got {self.num}")
        if self.context not in _CONTEXTS:
            raise ConfigError(f"Workers(context=...) must be one of {_CONTEXTS}, got {self.context!r}")
        if self.prefetch_factor is not None and self.prefetch_factor < 1:
            raise ConfigError(f"Workers(prefetch_factor=...) must be >= 1, got {self.prefetch_factor}")

    @classmethod
    def of(cls, value: Workers | int | None = None, **dataloader_keywords: Any) -> Workers:
        """``value`` as Workers (an int is a worker count, None the defaults),
        with torch DataLoader's spellings that are not None set on it:
        ``num_workers=2`` is ``num=2``, ``multiprocessing_context="spawn"`` is
        ``context="spawn"``... (:data:`DATALOADER_KEYWORDS`).

        Raises:
            ConfigError: a keyword that ``value`` also sets differently.
            TypeError: a keyword that is not one of DataLoader's worker settings.
        """
        unknown = sorted(set(dataloader_keywords) - set(DATALOADER_KEYWORDS))
        if unknown:
            raise TypeError(
                f"make_loader() got an unexpected keyword argument {unknown[0]!r} (it takes torch DataLoader's "
                f"{', '.join(DATALOADER_KEYWORDS)} besides its own)"
            )
        if isinstance(value, Workers):
            base = value
        elif value is None or isinstance(value, int):
            base = cls(num=value)
        else:
            raise ConfigError(f"workers must be an int or fastdata.Workers(...), got {type(value).__name__}")
        given = {k: v for k, v in dataloader_keywords.items() if v is not None}
        return _with_keywords(base, value, given) if given else base

    @property
    def threads(self) -> bool:
        """Whether the workers are threads (and there are some); ``"auto"``
        is decided by :meth:`resolve`."""
        return self.kind == "threads" and self.count() > 0

    def resolve(self, dataset: Any, seeding: str, *, planning_only: bool = False) -> tuple[Workers, str]:
        """These settings with ``kind="auto"`` decided for ``dataset``, and
        one line saying what the workers are and why (the loader's ``repr``).
        ``planning_only``: the workers only read bytes and draw crops (a GPU
        decode), Python work that holds the GIL, so "auto" means processes."""
        n = self.count()
        if n == 0:
            return self, "0 (samples load in the main process)"
        if self.kind != "auto":
            return self, f"{n} {self.kind} (kind={self.kind!r})"
        if planning_only:
            return replace(self, kind="processes"), (
                f"{n} processes (auto: the GPU decodes; workers parse headers and draw crops, which holds the GIL)"
            )
        from .autokind import choose_kind

        kind, why = choose_kind(dataset, seeding=seeding, context=self.context)
        return replace(self, kind=kind), f"{n} {kind} (auto: {why})"

    def count(self) -> int:
        """The number of workers."""
        return _default_count() if self.num is None else int(self.num)

    def pinned(self, prefetch: Prefetch | None) -> bool:
        """Whether batches go to pinned memory (resolves ``"auto"``)."""
        if self.pin_memory != "auto":
            return bool(self.pin_memory)
        return torch.cuda.is_available() and (prefetch is None or prefetch.target().type == "cuda")

    def dataloader_options(self) -> dict[str, Any]:
        """The worker keywords of ``torch.utils.data.DataLoader`` (no workers
        of its own when they are threads)."""
        n = 0 if self.threads else self.count()
        return {
            "num_workers": n,
            "persistent_workers": self.persistent and n > 0,
            "prefetch_factor": self.prefetch_factor if n > 0 else None,
            "multiprocessing_context": self.context if n > 0 else None,
        }


# torch DataLoader keyword -> the Workers field it sets (make_loader takes both spellings)
DATALOADER_KEYWORDS = {
    "num_workers": "num",
    "pin_memory": "pin_memory",
    "persistent_workers": "persistent",
    "prefetch_factor": "prefetch_factor",
    "multiprocessing_context": "context",
}


def _with_keywords(base: Workers, value: Workers | int | None, given: dict[str, Any]) -> Workers:
    if isinstance(value, int) and "num_workers" in given and given["num_workers"] != value:
        raise ConfigError(f"workers={value} and num_workers={given['num_workers']} disagree: pass one of them")
    if isinstance(value, Workers):
        for key, v in given.items():
            field = DATALOADER_KEYWORDS[key]
            if getattr(value, field) != getattr(Workers(), field) and getattr(value, field) != v:
                raise ConfigError(
                    f"{key}={v!r} and workers=Workers({field}={getattr(value, field)!r}) disagree: pass one of them"
                )
    context = given.get("multiprocessing_context")
    if context is not None and not isinstance(context, str):  # a multiprocessing context object
        given["multiprocessing_context"] = context.get_start_method()
    return replace(base, **{DATALOADER_KEYWORDS[k]: v for k, v in given.items()})


@dataclass(frozen=True)
class Prefetch:
    """Copy batches to ``device`` and normalise them there (:class:`CUDAPrefetcher`).

    Output images are ``(x / 255 - mean) / std`` per channel, x the uint8
    pixel: ``mean``/``std`` are in 0-1 units, torchvision's
    ``(0.485, 0.456, 0.406)``/``(0.229, 0.224, 0.225)`` (the DALI module uses
    the same units). Omit both for ``x / 255``.

    Args:
        device: ``"cuda"``, a device, ``"cpu"``, or None (CUDA if available, else the CPU).
        mean, std: one value per channel, or one for all.
        dtype: ``torch.float32``, ``torch.float16`` or ``torch.bfloat16``.
        memory_format: layout of the collated batch and of the output
            (``torch.channels_last`` makes the collate copy a plain memcpy).
    """

    device: str | torch.device | None = None
    mean: Sequence[float] | None = None
    std: Sequence[float] | None = None
    dtype: torch.dtype = torch.float32
    memory_format: torch.memory_format = torch.contiguous_format

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", unit_channels("Prefetch", "mean", self.mean))
        object.__setattr__(self, "std", unit_channels("Prefetch", "std", self.std))

    def target(self) -> torch.device:
        """The device batches go to."""
        if self.device is not None:
            return torch.device(self.device)
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def wrap(self, loader: Any) -> CUDAPrefetcher:
        """A :class:`CUDAPrefetcher` over ``loader`` with these settings."""
        return CUDAPrefetcher(
            loader, device=self.target(), mean=self.mean, std=self.std, dtype=self.dtype,
            memory_format=self.memory_format,
        )
