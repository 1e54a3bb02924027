"""``make_loader(..., decode=...)``: choose the CPU or the GPU decode, and for
the GPU one build the worker side (planning dataset, byte collate) and the
main-process stage."""

from __future__ import annotations

import copy
import logging
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch.utils.data import Subset

from ..errors import ConfigError, MissingDependencyError
from ..loading.keyed import KeyedDataset
from ..loading.streamed import is_stream
from ..order.generators import SampleKey
from .backends import CPUDecoder, Decoder, cuda_device, gpu_backend
from .batch import EncodedCollate, PlannedDataset
from .plan import Planner
from .stage import GPUBatches

__all__ = ["GPUDecode", "GPURoute", "gpu_route"]

_log = logging.getLogger("fastdata.gpu")
_MODES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class GPUDecode:
    """Options of the GPU decode (``make_loader(decode=GPUDecode(...))``;
    ``decode="cuda"`` is ``GPUDecode()``).

    Args:
        mode: ``"cuda"`` (the GPU decode; on a machine without CUDA the same
            batch code runs on the CPU after a warning) or ``"auto"`` (the GPU
            decode when a CUDA device, a GPU decoder and a supported transform
            are there, else the CPU path).
        backend: ``"auto"`` (torchvision's nvJPEG, then nvImageCodec),
            ``"torchvision"``, ``"nvimgcodec"``, ``"cpu"`` or a decoder object
            (see :mod:`fastdata.gpu.backends`).
        budget: elements of gathered source pixels per resampling step
            (bounds the memory a batch of very large photos takes).
    """

    mode: Literal["cuda", "auto"] = "cuda"
    backend: str | Decoder = "auto"
    budget: int = 1 << 28

    def __post_init__(self) -> None:
        if self.mode not in ("cuda", "auto"):
            raise ConfigError(f"GPUDecode(mode=...) must be 'cuda' or 'auto', got {self.mode!r}")
        if self.budget < 1:
            raise ConfigError(f"GPUDecode(budget=...) must be >= 1, got {self.budget}")

    @classmethod
    def of(cls, value: str | GPUDecode) -> GPUDecode | None:
        """``make_loader``'s ``decode`` argument as settings; None for ``"cpu"``."""
        if isinstance(value, GPUDecode):
            return value
        if value not in _MODES:
            raise ConfigError(f"decode must be one of {_MODES} or fastdata.gpu.GPUDecode(...), got {value!r}")
        return None if value == "cpu" else cls(mode=value)  # type: ignore[arg-type]


def transform_of(dataset: Any) -> Any:
    """The transform of a fastdata dataset (through ``Subset``s)."""
    while isinstance(dataset, Subset):
        dataset = dataset.dataset
    if not hasattr(dataset, "transform") or not getattr(dataset, "decode", False) or getattr(dataset, "loader", None):
        raise ConfigError(
            f"decode='cuda' reads fastdata datasets that hand encoded images to their transform "
            f"(ImageFolder, open_dataset(...)), not {type(dataset).__name__}; use decode='cpu'"
        )
    return dataset.transform


def with_transform(dataset: Any, transform: Any) -> Any:
    """A shallow copy of ``dataset`` (and of the ``Subset``s around it) with ``transform``."""
    if isinstance(dataset, Subset):
        return Subset(with_transform(dataset.dataset, transform), dataset.indices)
    clone = copy.copy(dataset)
    clone.transform = transform
    return clone


class _CPUPath:
    """The CPU path for one sample key, in the main process (a rejected sample)."""

    def __init__(self, dataset: Any, seeding: str, rank: int) -> None:
        self.keyed = KeyedDataset(dataset, seeding=seeding, rank=rank)  # type: ignore[arg-type]

    def __call__(self, row: tuple[int, int, int]) -> tuple[Any, Any]:
        index, seed, epoch = row
        return self.keyed[SampleKey(index, seed, epoch) if seed >= 0 else index]


@dataclass
class GPURoute:
    """What ``make_loader`` uses in place of its CPU-path pieces."""

    data: PlannedDataset
    collate: EncodedCollate
    decoder: Decoder
    device: torch.device
    settings: GPUDecode
    fallback: _CPUPath
    chosen: str = ""

    def stage(self, dataloader: Any, prefetch: Any) -> GPUBatches:
        """The main-process stage over ``dataloader``, output as ``prefetch`` says (None: uint8)."""
        options: dict[str, Any] = {}
        if prefetch is not None:
            options = {"mean": prefetch.mean, "std": prefetch.std, "dtype": prefetch.dtype,
                       "memory_format": prefetch.memory_format}
        return GPUBatches(dataloader, device=self.device, decoder=self.decoder, fallback=self.fallback,
                          budget=self.settings.budget, chosen=self.chosen, **options)


def gpu_route(decode: str | GPUDecode, dataset: Any, *, prefetch: Any, collate_fn: Any, seeding: str,
              rank: int) -> GPURoute | None:
    """The GPU decode's pieces for ``make_loader``, or None for the CPU path.

    Raises:
        ConfigError: ``decode="cuda"`` with a stream, a ``collate_fn``, a
            dataset or transform it cannot run.
        MissingDependencyError: ``decode="cuda"`` with CUDA but no GPU decoder.
    """
    settings = GPUDecode.of(decode)
    if settings is None:
        return None
    device = prefetch.target() if prefetch is not None else torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if settings.mode == "auto":
        try:
            return _build(settings, dataset, device, prefetch, collate_fn, seeding, rank) if device.type == "cuda" else None
        except (ConfigError, MissingDependencyError) as exc:
            _log.info("decode='auto': decoding on the CPU (%s)", exc)
            return None
    if device.type != "cuda":
        where = "Prefetch(device=...) is the CPU" if torch.cuda.is_available() else "no CUDA device here"
        warnings.warn(
            f"decode='cuda': {where}, so the same batch code runs on the CPU (slow; use decode='cpu')",
            RuntimeWarning, stacklevel=3,
        )
    return _build(settings, dataset, device, prefetch, collate_fn, seeding, rank)


def _build(settings: GPUDecode, dataset: Any, device: torch.device, prefetch: Any, collate_fn: Any, seeding: str,
           rank: int) -> GPURoute:
    if is_stream(dataset):
        raise ConfigError("decode='cuda' reads map-style datasets: open the dataset without streaming=True")
    if collate_fn is not None:
        raise ConfigError("decode='cuda' collates encoded bytes itself: drop collate_fn (or use decode='cpu')")
    if device.type == "cuda":
        # the index now ("cuda" = the current device, set by then under torchrun); "auto" proves its decoder
        # with one tiny decode, which initialises CUDA here (the workers never use it)
        device = cuda_device(device)
        decoder, chosen = gpu_backend(settings.backend, device)
    elif isinstance(settings.backend, str):
        decoder, chosen = CPUDecoder(), "no CUDA: fastdata's CPU decoder stands in"
    else:
        decoder, chosen = settings.backend, "the decoder object passed"
    planner = Planner(transform_of(dataset), decoder.accepts)
    data = PlannedDataset(with_transform(dataset, planner), seeding=seeding, rank=rank)  # type: ignore[arg-type]
    return GPURoute(data, EncodedCollate(planner.size), decoder, device, settings, _CPUPath(dataset, seeding, rank),
                    chosen)
